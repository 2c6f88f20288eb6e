/*
 * soul.c - soul files: YAML, or Markdown whose YAML frontmatter sits
 * between "---" lines and whose body is the system prompt.  The text
 * is read into JSON (yj.c), then every key is checked into struct
 * soul.  Each key is spelt once, in the table keys[] below: what the
 * loader reads, in what order, and what soul_defaults fills in.
 * Errors name file:line:column (a file that cannot be read, or holds
 * nothing, is named alone); unknown keys become warnings the program
 * prints.  Every program reads a soul file here and only here.  After
 * soul_load every field holds a value: caps are never unbounded.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"

#define DEF_INTERVAL	(30 * 60)	/* schedule.interval */

struct sv {
	const struct yj *y;
	const char *file;
	struct soul *s;
	char	*err;
};

static const char *chambers[] = { "schedule", "idle" };

const char *
soul_chamber_name(enum chamber c)
{
	return c < CH_NCHAMBERS ? chambers[c] : "?";
}

int
soul_chamber_parse(const char *s, enum chamber *out)
{
	int i;

	for (i = 0; i < CH_NCHAMBERS; i++)
		if (strcmp(s, chambers[i]) == 0) {
			*out = (enum chamber)i;
			return 0;
		}
	return -1;
}

/* "08:00-23:00", end exclusive; wraps midnight when end <= start. */
static int
hours_parse(const char *s, struct hours *h)
{
	int sh, sm, eh, em, n = 0;

	if (sscanf(s, "%2d:%2d-%2d:%2d%n", &sh, &sm, &eh, &em, &n) != 4 ||
	    s[n] != '\0' || sh < 0 || sh > 23 || sm < 0 || sm > 59 ||
	    eh < 0 || eh > 24 || em < 0 || em > 59 || (eh == 24 && em != 0))
		return -1;
	h->set = 1;
	h->start = sh * 60 + sm;
	h->end = eh * 60 + em;
	return 0;
}

int
soul_hours_in(const struct hours *h, int minute)
{
	if (!h->set || h->start == h->end)
		return 1;
	if (h->start < h->end)
		return minute >= h->start && minute < h->end;
	return minute >= h->start || minute < h->end;
}

static void
warn(struct sv *v, int line, int col, const char *fmt, const char *a,
    const char *b)
{
	struct soul *s = v->s;
	char msg[HEART_ERRLEN], full[HEART_ERRLEN + 300];

	snprintf(msg, sizeof msg, fmt, a, b);
	snprintf(full, sizeof full, "%s:%d:%d: %s", v->file, line, col, msg);
	s->warn = realloc(s->warn, (s->nwarn + 1) * sizeof *s->warn);
	if (s->warn == NULL)
		abort();
	s->warn[s->nwarn++] = xstrdup(full);
}

/* Fail with "file:line:col: path: what" at obj[key]: at the key
 * itself when atkey is set, else at its value. */
static int
bad_at(struct sv *v, const json_t *obj, const char *key, const char *path,
    const char *what, int atkey)
{
	const struct yj_pos *p = yj_key(v->y, obj, key);
	int line = 1, col = 1;

	if (p != NULL) {
		line = atkey ? p->kline : p->vline;
		col = atkey ? p->kcol : p->vcol;
	}
	errf(v->err, "%s:%d:%d: %s: %s", v->file, line, col, path, what);
	return -1;
}

/* The same at the value, as most checks point. */
static int
bad(struct sv *v, const json_t *obj, const char *key, const char *path,
    const char *what)
{
	return bad_at(v, obj, key, path, what, 0);
}

static int
get_str(struct sv *v, const json_t *obj, const char *key, const char *path,
    char **dst)
{
	json_t *j = json_object_get(obj, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return bad(v, obj, key, path, "must be a string");
	free(*dst);
	*dst = xstrdup(json_string_value(j));
	return 0;
}

static int
get_int(struct sv *v, const json_t *obj, const char *key, const char *path,
    long long lo, long long *dst)
{
	json_t *j = json_object_get(obj, key);
	char m[100];

	if (j == NULL || json_is_null(j))
		return 0;
	/* a YAML integer past 64 bits reaches us as a float */
	if (json_is_real(j) && fabs(json_real_value(j)) >= 0x1p63) {
		snprintf(m, sizeof m, json_real_value(j) > 0 ? "too large "
		    "(at most %lld)" : "too small (at least %lld)",
		    json_real_value(j) > 0 ? LLONG_MAX : lo);
		return bad(v, obj, key, path, m);
	}
	if (!json_is_integer(j))
		return bad(v, obj, key, path, "must be a whole number");
	if (json_integer_value(j) < lo) {
		snprintf(m, sizeof m, "must be at least %lld", lo);
		return bad(v, obj, key, path, m);
	}
	*dst = json_integer_value(j);
	return 0;
}

static int
get_dur(struct sv *v, const json_t *obj, const char *key, const char *path,
    long long *dst)
{
	static const char zero[] = "must be longer than 0s (daily_cap: 0 "
	    "turns a chamber off)";
	json_t *j = json_object_get(obj, key);
	const char *str = json_string_value(j);
	char m[200], d[32];
	long long x = 0;
	double r;

	if (j == NULL || json_is_null(j))
		return 0;
	if (json_is_number(j)) {
		/* whole seconds (a YAML integer past 64 bits is a float) */
		r = json_number_value(j);
		if (r <= 0)
			return bad(v, obj, key, path, zero);
		if (r < 0x1p63 && r != floor(r))
			return bad(v, obj, key, path, "must be whole seconds, "
			    "or a duration such as 30m");
		if (r > (double)dur_max()) {
			snprintf(m, sizeof m, "too large (at most %s)",
			    dur_format(dur_max(), d, sizeof d));
			return bad(v, obj, key, path, m);
		}
		*dst = (long long)r;
		return 0;
	}
	if (str == NULL)
		return bad(v, obj, key, path, "must be a duration (write e.g. "
		    "10s, 30m, 2h, 1d or 1h30m)");
	if (dur_parse(str, &x) == 0) {
		if (x == 0)
			return bad(v, obj, key, path, zero);
		*dst = x;
		return 0;
	}
	if (errno == ERANGE)
		snprintf(m, sizeof m, "'%.40s' is too large (at most %s)", str,
		    dur_format(dur_max(), d, sizeof d));
	else
		snprintf(m, sizeof m, "bad duration '%.40s' (write e.g. 10s, "
		    "30m, 2h, 1d or 1h30m)", str);
	return bad(v, obj, key, path, m);
}

static int
get_hours(struct sv *v, const json_t *obj, const char *key,
    const char *path, struct hours *dst)
{
	json_t *j = json_object_get(obj, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_string(j) || hours_parse(json_string_value(j), dst))
		return bad(v, obj, key, path, "must be hours like "
		    "\"08:00-23:00\" (may wrap midnight)");
	return 0;
}

static int
is_strlist(const json_t *j, int nonempty)
{
	size_t i;
	json_t *e;

	if (!json_is_array(j) || (nonempty && json_array_size(j) == 0))
		return 0;
	json_array_foreach(j, i, e)
		if (!json_is_string(e))
			return 0;
	return 1;
}

static int
need_map(struct sv *v, const json_t *obj, const char *key, const char *path,
    json_t **out)
{
	json_t *j = json_object_get(obj, key);

	*out = NULL;
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_object(j))
		return bad(v, obj, key, path, "must be a mapping of keys");
	*out = j;
	return 0;
}

static int
get_weight(struct sv *v, const json_t *obj, const char *key,
    const char *path, double *dst)
{
	json_t *j = json_object_get(obj, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_number(j) || json_number_value(j) < 0 ||
	    json_number_value(j) > 1)
		return bad(v, obj, key, path, "must be a number from 0 to 1");
	*dst = json_number_value(j);
	return 0;
}

/* window: a whole number of days, or a duration of whole days */
static int
get_days(struct sv *v, const json_t *obj, const char *key, const char *path,
    long long *dst)
{
	json_t *j = json_object_get(obj, key);
	long long d = -1;

	if (j == NULL || json_is_null(j))
		return 0;
	if (json_is_integer(j))
		d = json_integer_value(j);
	else if (json_is_string(j) && dur_parse(json_string_value(j),
	    &d) == 0 && d % 86400 == 0)
		d /= 86400;
	else
		d = -1;
	if (d < 1 || d > 365)
		return bad(v, obj, key, path, "must be whole days, 1 to 365 "
		    "(write e.g. 14 or 14d)");
	*dst = d;
	return 0;
}

/* The mappings of a soul whose keys the table below holds. */
enum map {
	M_TOP = 1 << 0,		/* the soul itself: struct soul */
	M_HEART = 1 << 1,	/* heart: struct soul */
	M_SCHED = 1 << 2,	/* heart.schedule: struct chamber_conf */
	M_IDLE = 1 << 3,	/* heart.idle: struct chamber_conf */
	M_ADAPT = 1 << 4,	/* heart.schedule.adaptive: adapt_conf */
	M_LEVELS = 1 << 5,	/* its levels: struct adapt_conf */
	M_PULSE = 1 << 6,	/* heart.pulse: struct soul */
	M_BRK = 1 << 7,		/* heart.breaker: struct soul */
	M_HIST = 1 << 8,	/* heart.history: struct soul */
	M_GHOST = 1 << 9,	/* heart.ghost: struct soul */
	M_LLM = 1 << 10,	/* llm: struct soul_llm */
	M_TRIAGE = 1 << 11,	/* llm.triage: struct soul_llm */
	M_TOOL = 1 << 12,	/* an item of tools (its own code) */
	M_SERVER = 1 << 13	/* a server of mcp_servers (its own code) */
};
#define M_CH	(M_SCHED | M_IDLE)
#define M_EP	(M_LLM | M_TRIAGE)

/* Each map's path in messages, in the order of its bit. */
static const char *const mappath[] = { "", "heart", "heart.schedule",
    "heart.idle", "heart.schedule.adaptive",
    "heart.schedule.adaptive.levels", "heart.pulse", "heart.breaker",
    "heart.history", "heart.ghost", "llm", "llm.triage" };

enum kind {
	K_STR,		/* a string: char * */
	K_INT,		/* a whole number, at least lo: long long */
	K_DUR,		/* a duration, longer than 0s: long long, s */
	K_HOURS,	/* "08:00-23:00": struct hours */
	K_DAYS,		/* whole days, 1 to 365: long long */
	K_WEIGHT,	/* a number from 0 to 1: double */
	K_FN,		/* fn checks it and reads it, in its turn */
	K_OWN,		/* read after the walk, by its map's own code */
	K_NONE		/* the other chamber's: warned about, never read */
};

typedef int keyfn(struct sv *, const json_t *, const char *, void *);

/*
 * A key of a soul: in, the maps it is a key of (M_*); name; kind, how
 * it is read and checked; off, where it goes in its map's struct; lo,
 * a K_INT's least value; def, the number soul_defaults fills in where
 * it is unset (< 0), 0: none; sdef, the same for a string; fn, the
 * reader of a K_FN key, called with the map, the key's path and the
 * map's struct.  A map's keys are read in the table's order: which of
 * several faults a soul reports is the first met in that order.
 */
struct key {
	unsigned in;
	const char *name;
	enum kind kind;
	size_t	 off;
	long long lo;
	long long def;
	const char *sdef;
	keyfn	*fn;
};

static keyfn get_budget, get_gate, load_adaptive, no_adaptive, no_interval;

#define SO(f)	offsetof(struct soul, f)
#define CO(f)	offsetof(struct chamber_conf, f)
#define AO(f)	offsetof(struct adapt_conf, f)
#define EO(f)	offsetof(struct soul_llm, f)
/* The rows by kind: STR(maps, name, offset, default string),
 * INT(maps, name, offset, least, default), DUR(maps, name, offset,
 * default), OF(kind, maps, name, offset), FN(maps, name, fn). */
#define STR(in, name, off, sdef) { in, name, K_STR, off, 0, 0, sdef, NULL }
#define INT(in, name, off, lo, def) { in, name, K_INT, off, lo, def, NULL, \
	NULL }
#define DUR(in, name, off, def)	{ in, name, K_DUR, off, 0, def, NULL, NULL }
#define OF(kind, in, name, off)	{ in, name, kind, off, 0, 0, NULL, NULL }
#define FN(in, name, fn)	{ in, name, K_FN, 0, 0, 0, NULL, fn }

static const struct key keys[] = {
	STR(M_TOP, "name", SO(name), NULL),
	STR(M_TOP, "system", SO(system), NULL),
	OF(K_OWN, M_TOP, "heart", 0),
	OF(K_OWN, M_TOP, "llm", 0),
	OF(K_OWN, M_TOP, "tools", 0),
	OF(K_OWN, M_TOP, "mcp_servers", 0),

	STR(M_HEART, "timezone", SO(timezone), NULL),
	INT(M_HEART, "daily_cap", SO(daily_cap), 0, 0),
	FN(M_HEART, "daily_budget", get_budget),
	OF(K_OWN, M_HEART, "pulse", 0),
	OF(K_OWN, M_HEART, "schedule", 0),
	OF(K_OWN, M_HEART, "idle", 0),
	OF(K_OWN, M_HEART, "breaker", 0),
	OF(K_OWN, M_HEART, "ghost", 0),
	OF(K_OWN, M_HEART, "history", 0),

	DUR(M_SCHED, "interval", CO(every), DEF_INTERVAL),
	DUR(M_IDLE, "after", CO(every), 2 * 3600),
	STR(M_CH, "prompt", CO(prompt), NULL),
	INT(M_SCHED, "daily_cap", CO(daily_cap), 0, DEF_SCHEDULE_CAP),
	INT(M_IDLE, "daily_cap", CO(daily_cap), 0, DEF_IDLE_CAP),
	OF(K_HOURS, M_CH, "active_hours", CO(active)),
	STR(M_CH, "checklist", CO(checklist), NULL),
	DUR(M_CH, "gate_timeout", CO(gate_timeout), GATE_TIMEOUT),
	FN(M_CH, "gate", get_gate),
	INT(M_SCHED, "seed_tool_cap", CO(seed_tool_cap), 0, 5),
	FN(M_SCHED, "adaptive", load_adaptive),
	FN(M_IDLE, "adaptive", no_adaptive),
	FN(M_IDLE, "interval", no_interval),
	OF(K_NONE, M_SCHED, "after", 0),
	OF(K_NONE, M_IDLE, "seed_tool_cap", 0),

	DUR(M_ADAPT, "min", AO(min), 0),
	DUR(M_ADAPT, "max", AO(max), 0),
	OF(K_DAYS, M_ADAPT, "window", AO(window)),
	OF(K_OWN, M_ADAPT, "levels", 0),
	OF(K_WEIGHT, M_LEVELS, "low", AO(weight[0])),
	OF(K_WEIGHT, M_LEVELS, "medium", AO(weight[1])),
	OF(K_WEIGHT, M_LEVELS, "high", AO(weight[2])),

	DUR(M_PULSE, "interval", SO(pulse_interval), 10),
	INT(M_PULSE, "misses", SO(pulse_misses), 1, 3),
	INT(M_BRK, "threshold", SO(brk_threshold), 1, DEF_BRK_THRESHOLD),
	DUR(M_BRK, "cooldown", SO(brk_cooldown), DEF_BRK_COOLDOWN),
	DUR(M_BRK, "max_cooldown", SO(brk_max_cooldown),
	    DEF_BRK_MAX_COOLDOWN),
	INT(M_HIST, "keep", SO(history_keep), 0, 8),
	STR(M_GHOST, "token", SO(ghost_token), "[IDLE]"),
	STR(M_GHOST, "mode", SO(ghost_mode), "token"),
	INT(M_GHOST, "ack_max_chars", SO(ghost_ack_max), 0, 300),
	OF(K_OWN, M_GHOST, "also", 0),

	/* llm.triage's unset keys are llm's: soul_defaults leaves them */
	STR(M_EP, "provider", EO(provider), NULL),
	STR(M_EP, "base_url", EO(base_url), NULL),
	STR(M_EP, "model", EO(model), NULL),
	STR(M_EP, "api_key_env", EO(api_key_env), NULL),
	DUR(M_EP, "timeout", EO(timeout), 60),
	INT(M_EP, "max_tokens", EO(max_tokens), 1, 1024),
	INT(M_EP, "context_budget", EO(context_budget), HEART_BUDGET_MIN,
	    HEART_BUDGET),
	OF(K_OWN, M_EP, "command", 0),
	OF(K_OWN, M_LLM, "triage", 0),
	OF(K_OWN, M_EP, "price", 0),
	OF(K_OWN, M_EP, "cache", 0),

	OF(K_OWN, M_TOOL, "name", 0),
	OF(K_OWN, M_TOOL, "description", 0),
	OF(K_OWN, M_TOOL, "parameters", 0),
	OF(K_OWN, M_TOOL, "command", 0),
	OF(K_OWN, M_TOOL, "timeout", 0),
	OF(K_OWN, M_SERVER, "command", 0),
	OF(K_OWN, M_SERVER, "args", 0),
	OF(K_OWN, M_SERVER, "env", 0),
	OF(K_OWN, M_SERVER, "pass_env", 0),
	OF(K_OWN, M_SERVER, "tools", 0),
	OF(K_OWN, M_SERVER, "timeout", 0),
	OF(K_OWN, M_SERVER, "type", 0)
};
#define NKEYS	(sizeof keys / sizeof keys[0])
#undef STR
#undef INT
#undef DUR
#undef OF
#undef FN

static const char *
map_path(unsigned map)
{
	size_t i;

	for (i = 0; (1u << i) != map; i++)
		;
	return mappath[i];
}

/* The struct the keys of map go in; NULL for llm.triage when none. */
static void *
map_base(struct soul *s, unsigned map)
{
	switch (map) {
	case M_SCHED:
		return &s->ch[CH_SCHEDULE];
	case M_IDLE:
		return &s->ch[CH_IDLE];
	case M_ADAPT:
	case M_LEVELS:
		return &s->adapt;
	case M_LLM:
		return &s->llm;
	case M_TRIAGE:
		return s->triage;
	default:
		return s;
	}
}

/* path.key into buf; at the top (path ""), the key alone. */
static const char *
key_path(char *buf, size_t n, const char *path, const char *key)
{
	snprintf(buf, n, "%s%s%s", path, *path ? "." : "", key);
	return buf;
}

static int
known(unsigned map, const char *key)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if ((keys[i].in & map) && strcmp(keys[i].name, key) == 0)
			return 1;
	return 0;
}

/* Warn about the keys of obj (at path) that are not keys of map. */
static void
unknown_keys(struct sv *v, const json_t *obj, unsigned map,
    const char *path)
{
	const char *key;
	const struct yj_pos *p;
	json_t *val;

	json_object_foreach((json_t *)obj, key, val) {
		if (known(map, key))
			continue;
		p = yj_key(v->y, obj, key);
		warn(v, p ? p->kline : 1, p ? p->kcol : 1,
		    "unknown key '%.64s' in %s (ignored)", key, path);
	}
}

/*
 * A key of the other chamber only (K_NONE, in the chamber where it is
 * misplaced) written in this one: said on standard error, as an
 * unknown key is, and never read (it has no effect; heart-soul(5)).
 */
static int
other_chamber(struct sv *v, const json_t *m, const struct key *k)
{
	const struct yj_pos *p;
	char msg[400];

	if (json_object_get(m, k->name) == NULL)
		return 0;
	snprintf(msg, sizeof msg, "key '%s' in %s has no effect: it is %s's "
	    "(ignored)", k->name, map_path(k->in), map_path(M_CH & ~k->in));
	p = yj_key(v->y, m, k->name);
	warn(v, p ? p->kline : 1, p ? p->kcol : 1, "%s%s", msg, "");
	return 0;
}

static int
get_key(struct sv *v, const json_t *m, const struct key *k,
    const char *path, void *base)
{
	void *dst = (char *)base + k->off;

	switch (k->kind) {
	case K_STR:
		return get_str(v, m, k->name, path, dst);
	case K_INT:
		return get_int(v, m, k->name, path, k->lo, dst);
	case K_DUR:
		return get_dur(v, m, k->name, path, dst);
	case K_HOURS:
		return get_hours(v, m, k->name, path, dst);
	case K_DAYS:
		return get_days(v, m, k->name, path, dst);
	case K_WEIGHT:
		return get_weight(v, m, k->name, path, dst);
	case K_FN:
		return k->fn(v, m, path, base);
	case K_NONE:
		return other_chamber(v, m, k);
	default:
		return 0;
	}
}

/* Read the keys of map from m into its struct, in the table's order. */
static int
walk(struct sv *v, const json_t *m, unsigned map)
{
	void *base = map_base(v->s, map);
	char path[128];
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if ((keys[i].in & map) && get_key(v, m, &keys[i],
		    key_path(path, sizeof path, map_path(map), keys[i].name),
		    base) == -1)
			return -1;
	return 0;
}

/* The map of heart named by map: read, then its unknown keys warned
 * about; *out is it, or NULL when the soul leaves it out. */
static int
load_map(struct sv *v, const json_t *heart, unsigned map, json_t **out)
{
	const char *path = map_path(map);

	if (need_map(v, heart, strrchr(path, '.') + 1, path, out) == -1)
		return -1;
	if (*out == NULL)
		return 0;
	if (walk(v, *out, map) == -1)
		return -1;
	unknown_keys(v, *out, map, path);
	return 0;
}

/*
 * schedule.adaptive: true (the defaults), false, or a mapping of min,
 * max, window and levels.  The bounds must hold schedule.interval.
 */
static int
load_adaptive(struct sv *v, const json_t *sched, const char *path,
    void *base)
{
	struct adapt_conf *a = &v->s->adapt;
	long long iv = ((struct chamber_conf *)base)->every;
	json_t *j = json_object_get(sched, "adaptive"), *lv;
	char m[160], d[32], p[128];

	if (j == NULL || json_is_null(j) || json_is_false(j))
		return 0;
	if (!json_is_true(j) && !json_is_object(j))
		return bad(v, sched, "adaptive", path, "must be true, false "
		    "or a mapping of min, max, window and levels");
	if (iv < 0)
		iv = DEF_INTERVAL;
	a->on = 1;
	a->min = iv / 2 > 0 ? iv / 2 : 1;
	a->max = iv * 8;
	a->window = 14;
	a->weight[0] = 1;
	a->weight[1] = 0.5;
	a->weight[2] = 0.25;
	if (json_is_true(j))
		return 0;
	if (walk(v, j, M_ADAPT) == -1 || need_map(v, j, "levels",
	    map_path(M_LEVELS), &lv) == -1)
		return -1;
	dur_format(iv, d, sizeof d);
	if (a->min > iv) {
		snprintf(m, sizeof m, "must not be longer than "
		    "schedule.interval (%s)", d);
		return bad(v, j, "min", key_path(p, sizeof p, path, "min"), m);
	}
	if (a->max < iv) {
		snprintf(m, sizeof m, "must not be shorter than "
		    "schedule.interval (%s)", d);
		return bad(v, j, "max", key_path(p, sizeof p, path, "max"), m);
	}
	if (lv != NULL && walk(v, lv, M_LEVELS) == -1)
		return -1;
	if (lv != NULL)
		unknown_keys(v, lv, M_LEVELS, map_path(M_LEVELS));
	unknown_keys(v, j, M_ADAPT, path);
	return 0;
}

static int
no_adaptive(struct sv *v, const json_t *m, const char *path, void *base)
{
	(void)base;
	if (json_object_get(m, "adaptive") != NULL)
		return bad_at(v, m, "adaptive", path, "only the schedule "
		    "chamber adapts its interval", 1);
	return 0;
}

static int
no_interval(struct sv *v, const json_t *m, const char *path, void *base)
{
	(void)base;
	if (json_object_get(m, "interval") != NULL)
		return bad(v, m, "interval", path, "the idle chamber fires "
		    "'after' a quiet stretch; write after: instead");
	return 0;
}

static int
get_gate(struct sv *v, const json_t *m, const char *path, void *base)
{
	struct chamber_conf *cc = base;
	json_t *gate = json_object_get(m, "gate");

	if (gate == NULL)
		return 0;
	if (!is_strlist(gate, 1))
		return bad(v, m, "gate", path, "must be a list of strings: "
		    "the program and its arguments");
	cc->gate = json_incref(gate);
	return 0;
}

static int
load_ghost(struct sv *v, const json_t *heart)
{
	struct soul *s = v->s;
	const char *path = map_path(M_GHOST);
	json_t *m, *also;
	char p[64];

	if (load_map(v, heart, M_GHOST, &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (s->ghost_token != NULL && s->ghost_token[0] == '\0')
		return bad(v, m, "token", key_path(p, sizeof p, path, "token"),
		    "must not be empty");
	if (s->ghost_mode != NULL && strcmp(s->ghost_mode, "token") != 0 &&
	    strcmp(s->ghost_mode, "tool") != 0)
		return bad(v, m, "mode", key_path(p, sizeof p, path, "mode"),
		    "must be 'token' or 'tool'");
	if ((also = json_object_get(m, "also")) == NULL)
		return 0;
	if (!json_is_string(also) && !is_strlist(also, 0))
		return bad(v, m, "also", key_path(p, sizeof p, path, "also"),
		    "must be a string or a list of strings");
	json_decref(s->ghost_also);
	s->ghost_also = json_is_string(also) ? json_pack("[O]", also) :
	    json_incref(also);
	return 0;
}

/* heart.daily_budget: dollars a day, as nanodollars. */
static int
get_budget(struct sv *v, const json_t *heart, const char *path, void *base)
{
	struct soul *s = base;
	json_t *j = json_object_get(heart, "daily_budget");

	if (j == NULL || json_is_null(j))
		return 0;
	if ((s->daily_budget = price_nano(j)) < 0)
		return bad(v, heart, "daily_budget", path, "must be a number "
		    "of dollars, 0 or more, such as 1.50");
	return 0;
}

/* A key of heart that is a mapping and no key of heart: a chamber
 * mistyped, or one heart does not have. */
static int
no_chamber(struct sv *v, const json_t *heart)
{
	const char *key;
	json_t *val;
	char m[200];

	json_object_foreach((json_t *)heart, key, val)
		if (!known(M_HEART, key) && json_is_object(val)) {
			snprintf(m, sizeof m, "unknown chamber '%.40s' (the "
			    "chambers are pulse, schedule and idle)", key);
			return bad_at(v, heart, key, "heart", m, 1);
		}
	return 0;
}

static int
load_heart(struct sv *v, const json_t *root)
{
	static const unsigned maps[] = { M_SCHED, M_IDLE, M_PULSE, M_BRK,
	    M_HIST };
	json_t *heart, *m;
	char msg[200], p[64];
	size_t i;

	if (need_map(v, root, "heart", "heart", &heart) == -1)
		return -1;
	if (heart == NULL)
		return 0;
	if (no_chamber(v, heart) == -1 || walk(v, heart, M_HEART) == -1)
		return -1;
	if (v->s->timezone != NULL && !clock_tz_valid(v->s->timezone)) {
		snprintf(msg, sizeof msg, "unknown timezone '%.60s' (use an "
		    "IANA name such as Europe/Paris)", v->s->timezone);
		return bad(v, heart, "timezone", key_path(p, sizeof p,
		    "heart", "timezone"), msg);
	}
	for (i = 0; i < sizeof maps / sizeof maps[0]; i++)
		if (load_map(v, heart, maps[i], &m) == -1)
			return -1;
	if (load_ghost(v, heart) == -1)
		return -1;
	unknown_keys(v, heart, M_HEART, "heart");
	return 0;
}

/* llm.price (price.c reads it) and llm.cache of one endpoint. */
static int
load_money(struct sv *v, const json_t *m, const char *path,
    struct soul_llm *e)
{
	static const char *const caches[] = { "off", "5m", "1h", NULL };
	char err[HEART_ERRLEN], p2[64];
	char *cache = NULL;
	int i;

	if (price_parse(json_object_get(m, "price"), &e->price, err) == -1)
		return bad(v, m, "price", key_path(p2, sizeof p2, path,
		    "price"), err);
	key_path(p2, sizeof p2, path, "cache");
	if (get_str(v, m, "cache", p2, &cache) == -1)
		return -1;
	if (cache == NULL)
		return 0;
	for (i = 0; caches[i] != NULL && strcmp(cache, caches[i]); i++)
		;
	free(cache);
	if (caches[i] == NULL)
		return bad(v, m, "cache", p2, "must be off, 5m or 1h "
		    "(Anthropic's prompt cache and how long it keeps)");
	e->cache = i;	/* LLM_CACHE_OFF, _5M, _1H in that order */
	return 0;
}

/*
 * The keys of one endpoint, llm or llm.triage (map), from the map m
 * into its struct: one parser for both.
 */
static int
load_endpoint(struct sv *v, json_t *m, unsigned map)
{
	struct soul_llm *e = map_base(v->s, map);
	const char *path = map_path(map);
	char p2[64];
	json_t *cmd;

#define P(k) key_path(p2, sizeof p2, path, k)
	if (walk(v, m, map) == -1)
		return -1;
	if (e->context_budget > HEART_BUDGET_MAX)
		return bad(v, m, "context_budget", P("context_budget"),
		    "must be at most 1000000 (tokens)");
	if (e->provider != NULL && strcmp(e->provider, "openai") &&
	    strcmp(e->provider, "anthropic") &&
	    strcmp(e->provider, "command"))
		return bad(v, m, "provider", P("provider"),
		    "must be openai, anthropic or command");
	if ((cmd = json_object_get(m, "command")) != NULL) {
		if (!is_strlist(cmd, 1))
			return bad(v, m, "command", P("command"), "must be "
			    "a list of strings: the program and its "
			    "arguments");
		e->command = json_incref(cmd);
	}
#undef P
	return load_money(v, m, path, e);
}

static void
endpoint_init(struct soul_llm *e)
{
	memset(e, 0, sizeof *e);
	e->timeout = e->max_tokens = e->context_budget = e->cache = -1;
}

static void
endpoint_free(struct soul_llm *e)
{
	free(e->provider);
	free(e->base_url);
	free(e->model);
	free(e->api_key_env);
	json_decref(e->command);
}

static int
load_llm(struct sv *v, const json_t *root)
{
	struct soul *s = v->s;
	json_t *m, *t;

	if (need_map(v, root, "llm", "llm", &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (load_endpoint(v, m, M_LLM) == -1)
		return -1;
	if (need_map(v, m, "triage", map_path(M_TRIAGE), &t) == -1)
		return -1;
	if (t != NULL) {
		s->triage = xcalloc(1, sizeof *s->triage);
		endpoint_init(s->triage);
		if (load_endpoint(v, t, M_TRIAGE) == -1)
			return -1;
		unknown_keys(v, t, M_TRIAGE, map_path(M_TRIAGE));
	}
	unknown_keys(v, m, M_LLM, map_path(M_LLM));
	return 0;
}

/* A tool's name as the model APIs take it: 1 to 64 of A-Z a-z 0-9 _ - */
int
soul_tool_name_ok(const char *n)
{
	size_t i;

	for (i = 0; n[i] != '\0'; i++)
		if (i >= 64 || !strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", n[i]))
			return 0;
	return i > 0;
}

static int
load_tool(struct sv *v, json_t *t, const char *path)
{
	json_t *n = json_object_get(t, "name");
	json_t *p = json_object_get(t, "parameters");
	long long to = 30;

	if (!json_is_string(n) || !soul_tool_name_ok(json_string_value(n)))
		return bad(v, t, n ? "name" : "command", path, "a tool needs "
		    "a name of letters, digits, _ and - (at most 64)");
	if (!is_strlist(json_object_get(t, "command"), 1))
		return bad(v, t, json_object_get(t, "command") ? "command" :
		    "name", path, "a tool needs a command: a list of "
		    "strings, the program and its arguments");
	if (p != NULL && !json_is_object(p))
		return bad(v, t, "parameters", path, "parameters must be a "
		    "JSON-schema object");
	if (json_object_get(t, "description") != NULL &&
	    !json_is_string(json_object_get(t, "description")))
		return bad(v, t, "description", path, "must be a string");
	if (strcmp(json_string_value(n), "heartbeat") == 0 &&
	    v->s->ghost_mode != NULL && strcmp(v->s->ghost_mode, "tool") == 0)
		return bad(v, t, "name", path, "heartbeat is heart's own tool "
		    "in ghost.mode tool; give this one another name");
	if (get_dur(v, t, "timeout", path, &to) == -1)
		return -1;
	json_object_set_new(t, "timeout", json_integer(to));
	if (p == NULL)
		json_object_set_new(t, "parameters", json_pack("{s:s,s:{}}",
		    "type", "object", "properties"));
	unknown_keys(v, t, M_TOOL, path);
	return 0;
}

static int
load_tools(struct sv *v, const json_t *root)
{
	const struct yj_pos *pos;
	json_t *tools, *t;
	char path[64];
	size_t i;

	if ((tools = json_object_get(root, "tools")) == NULL ||
	    json_is_null(tools))
		return 0;
	if (!json_is_array(tools))
		return bad(v, root, "tools", "tools", "must be a list");
	json_array_foreach(tools, i, t) {
		snprintf(path, sizeof path, "tools[%zu]", i);
		if (!json_is_object(t)) {
			pos = yj_item(v->y, tools, i);
			errf(v->err, "%s:%d:%d: %s: must be a mapping",
			    v->file, pos ? pos->vline : 1,
			    pos ? pos->vcol : 1, path);
			return -1;
		}
		if (load_tool(v, t, path) == -1)
			return -1;
	}
	v->s->tools = json_incref(tools);
	return 0;
}

/* a variable's name, as pass_env and env give them */
static int
var_name_ok(const char *n)
{
	size_t i;

	for (i = 0; n[i] != '\0'; i++)
		if (!(n[i] == '_' || (n[i] >= 'A' && n[i] <= 'Z') ||
		    (n[i] >= 'a' && n[i] <= 'z') || (i > 0 && n[i] >= '0' &&
		    n[i] <= '9')))
			return 0;
	return i > 0;
}

/* A server's name: a tool's name it prefixes with MCP_SEP must stay a
 * name the model APIs take, and split at its first MCP_SEP. */
static int
server_name_ok(const char *n)
{
	return soul_tool_name_ok(n) && strlen(n) <= MCP_NAMEMAX &&
	    strstr(n, MCP_SEP) == NULL && n[strlen(n) - 1] != '_';
}

/* pass_env: a list of variable names; env: a mapping name -> string */
static int
load_server_env(struct sv *v, json_t *m, const char *path)
{
	json_t *pe = json_object_get(m, "pass_env"), *env, *e;
	const char *key;
	char p[160];
	size_t i;

	if (pe != NULL && !json_is_null(pe) && !is_strlist(pe, 0))
		return bad(v, m, "pass_env", path, "must be a list of "
		    "variable names");
	json_array_foreach(pe, i, e)
		if (!var_name_ok(json_string_value(e)))
			return bad(v, m, "pass_env", path, "must be a list of "
			    "variable names (letters, digits and _), never "
			    "their values");
	snprintf(p, sizeof p, "%.100s.env", path);
	if (need_map(v, m, "env", p, &env) == -1)
		return -1;
	json_object_foreach(env, key, e)
		if (!var_name_ok(key) || !json_is_string(e))
			return bad(v, env, key, p, "must map variable names "
			    "to strings (quote numbers; a secret goes in "
			    "pass_env, by name)");
	if (pe == NULL || json_is_null(pe))
		json_object_set_new(m, "pass_env", json_array());
	if (env == NULL)
		json_object_set_new(m, "env", json_object());
	return 0;
}

/* tools: the allowlist; each NAME becomes SERVER__NAME for the model */
static int
load_server_tools(struct sv *v, json_t *m, const char *name,
    const char *path)
{
	json_t *t = json_object_get(m, "tools"), *e;
	const struct yj_pos *pos;
	char full[128];
	size_t i;

	if (t == NULL || json_is_null(t)) {
		pos = yj_key(v->y, m, "command");
		warn(v, pos ? pos->kline : 1, pos ? pos->kcol : 1, "%s: no "
		    "tools listed: none is offered and the server is never "
		    "started (list them in tools:; heart-wake --list-tools "
		    "shows them)%s", path, "");
		json_object_set_new(m, "tools", json_array());
		return 0;
	}
	if (!is_strlist(t, 0))
		return bad(v, m, "tools", path, "must be a list of the "
		    "server's tool names");
	json_array_foreach(t, i, e) {
		snprintf(full, sizeof full, "%s%s%s", name, MCP_SEP,
		    json_string_value(e));
		if (!soul_tool_name_ok(json_string_value(e)) ||
		    !soul_tool_name_ok(full))
			return bad(v, m, "tools", path, "a tool offered is "
			    "named SERVER__TOOL: letters, digits, _ and -, "
			    "at most 64 in all");
	}
	return 0;
}

static int
load_server(struct sv *v, const char *name, json_t *m, const char *path)
{
	json_t *type = json_object_get(m, "type");
	long long to = 30;

	if (type != NULL && !(json_is_string(type) &&
	    strcmp(json_string_value(type), "stdio") == 0))
		return bad(v, m, "type", path, "only stdio servers are "
		    "supported: a command heart-wake starts");
	if (json_object_get(m, "url") != NULL)
		return bad_at(v, m, "url", path, "only stdio servers are "
		    "supported: give a command, not a url", 1);
	if (!json_is_string(json_object_get(m, "command")) ||
	    *json_string_value(json_object_get(m, "command")) == '\0')
		return bad(v, m, json_object_get(m, "command") ? "command" :
		    "tools", path, "a server needs a command: the program "
		    "to start (its arguments in args)");
	if (json_object_get(m, "args") != NULL &&
	    !is_strlist(json_object_get(m, "args"), 0))
		return bad(v, m, "args", path, "must be a list of strings");
	if (json_object_get(m, "args") == NULL)
		json_object_set_new(m, "args", json_array());
	if (load_server_env(v, m, path) == -1 ||
	    load_server_tools(v, m, name, path) == -1 ||
	    get_dur(v, m, "timeout", path, &to) == -1)
		return -1;
	json_object_set_new(m, "timeout", json_integer(to));
	unknown_keys(v, m, M_SERVER, path);
	return 0;
}

/*
 * mcp_servers: name -> server, as the common mcpServers files write
 * them (command, args, env), and heart's own keys (tools, timeout,
 * pass_env); a soul tool must not take a name a server's tools take.
 */
static int
load_mcp(struct sv *v, const json_t *root)
{
	json_t *m, *srv, *t;
	const char *name, *tn;
	char path[160];
	size_t i;

	if (need_map(v, root, "mcp_servers", "mcp_servers", &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (json_object_size(m) > MCP_SERVERMAX)
		return bad(v, root, "mcp_servers", "mcp_servers", "at most 16 "
		    "servers");
	json_object_foreach(m, name, srv) {
		snprintf(path, sizeof path, "mcp_servers.%.64s", name);
		if (!server_name_ok(name))
			return bad_at(v, m, name, path, "a server's name is "
			    "letters, digits, - and _ (not __, not ending in "
			    "_), at most 32", 1);
		if (!json_is_object(srv))
			return bad(v, m, name, path, "must be a mapping");
		if (load_server(v, name, srv, path) == -1)
			return -1;
		json_array_foreach(v->s->tools, i, t) {
			tn = json_string_value(json_object_get(t, "name"));
			if (strncmp(tn, name, strlen(name)) == 0 &&
			    strncmp(tn + strlen(name), MCP_SEP,
			    strlen(MCP_SEP)) == 0)
				return bad_at(v, m, name, path, "the soul's "
				    "tool names NAME__... are this server's: "
				    "rename the tool or the server", 1);
		}
	}
	v->s->mcp = json_incref(m);
	return 0;
}

static int
load_top(struct sv *v, const json_t *root)
{
	struct soul *s = v->s;
	json_t *heart = json_object_get(root, "heart");
	char m[200], p[64];

	if (walk(v, root, M_TOP) == -1)
		return -1;
	if (s->name != NULL && !id_valid(s->name)) {
		snprintf(m, sizeof m, "bad agent id '%.70s' (use 1 to 64 of "
		    "A-Z a-z 0-9 _ . -, not starting with a dot)", s->name);
		return bad(v, root, "name", "name", m);
	}
	if (load_heart(v, root) == -1 || load_llm(v, root) == -1 ||
	    load_tools(v, root) == -1 || load_mcp(v, root) == -1)
		return -1;
	/* a budget counts dollars: without a price there are none */
	key_path(p, sizeof p, map_path(M_HEART), "daily_budget");
	if (s->daily_budget >= 0 && !s->llm.price.set)
		return bad_at(v, heart, "daily_budget", p, "needs llm.price: "
		    "heart counts dollars from the model's price per million "
		    "tokens (heart-soul(5)); without one a budget would "
		    "never be reached", 1);
	if (s->daily_budget >= 0 && s->triage != NULL &&
	    !soul_price(s, 1)->set)
		return bad_at(v, heart, "daily_budget", p, "needs "
		    "llm.triage.price too: the triage model is not llm's, "
		    "so llm.price is not its price", 1);
	unknown_keys(v, root, M_TOP, "the soul");
	return 0;
}

/* A soul is UTF-8 text: else file:line:column of the first stray byte. */
static int
utf8_text(const char *path, const char *buf, size_t n, char *err)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0, c;
	int line = 1, col = 1;

	for (; i < n; i += c, col++) {
		if ((c = utf8_len(p + i, n - i)) == 0) {
			errf(err, "%s:%d:%d: byte 0x%02x is not UTF-8 (a soul "
			    "is UTF-8 text: convert it, e.g. with iconv -t "
			    "UTF-8)", path, line, col, p[i]);
			return -1;
		}
		if (p[i] == '\n') {
			line++;
			col = 0;
		}
	}
	return 0;
}

/* Why path cannot be read (errno): a link to nowhere is named so. */
static void
unread(const char *path, char *err)
{
	char to[256];
	ssize_t n;
	int e = errno;

	if (e == ENOENT && (n = readlink(path, to, sizeof to - 1)) > 0) {
		to[n] = '\0';
		errf(err, "%s: a symbolic link to %s, which is not there",
		    path, to);
	} else
		errf(err, "%s: %s", path, e == EFBIG ? "larger than 1 MiB" :
		    strerror(e));
}

static int
read_file(const char *path, char **bufo, size_t *leno, char *err)
{
	char *buf;
	size_t n;

	if (file_read(path, HEART_SOULMAX, &buf, &n) == -1) {
		unread(path, err);
		return -1;
	}
	if (memchr(buf, '\0', n) != NULL) {
		errf(err, "%s: contains a NUL byte; not a text file", path);
		free(buf);
		return -1;
	}
	if (utf8_text(path, buf, n, err) == -1) {
		free(buf);
		return -1;
	}
	*bufo = buf;
	*leno = n;
	return 0;
}

static int
is_markdown(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot && (!strcmp(dot, ".md") || !strcmp(dot, ".markdown"));
}

/*
 * Split Markdown into frontmatter (*yo, *ylen, starting on line 2) and
 * body.  Without a leading "---" line the whole file is the body.
 */
static int
split_markdown(char *buf, char **yo, size_t *ylen, char **body, char *err,
    const char *file)
{
	char *p, *nl;

	*yo = NULL;
	*ylen = 0;
	*body = buf;
	if (strncmp(buf, "---\n", 4) != 0 && strncmp(buf, "---\r\n", 5))
		return 0;
	*yo = strchr(buf, '\n') + 1;
	for (p = *yo; *p != '\0'; p = strchr(p, '\n') + 1) {
		if ((!strncmp(p, "---", 3) || !strncmp(p, "...", 3)) &&
		    (p[3] == '\n' || p[3] == '\r' || p[3] == '\0')) {
			*ylen = (size_t)(p - *yo);
			/* the closing line may be the last, without \n */
			nl = strchr(p, '\n');
			*body = nl != NULL ? nl + 1 : p + strlen(p);
			return 0;
		}
		if (strchr(p, '\n') == NULL)
			break;
	}
	errf(err, "%s:1:1: frontmatter opened with --- is never closed",
	    file);
	return -1;
}

static char *
trimmed(const char *s)
{
	size_t len;

	while (*s == '\n' || *s == '\r' || *s == ' ' || *s == '\t')
		s++;
	len = strlen(s);
	while (len > 0 && strchr("\n\r \t", s[len - 1]))
		len--;
	return len ? strndup(s, len) : NULL;
}

static int
name_from_path(struct soul *s, char *err)
{
	const char *base = strrchr(s->path, '/');
	char *dot;

	base = base ? base + 1 : s->path;
	s->name = xstrdup(base);
	if ((dot = strrchr(s->name, '.')) != NULL && dot != s->name)
		*dot = '\0';
	if (!id_valid(s->name)) {
		errf(err, "%s:1:1: bad agent id '%.70s' from the file name "
		    "(set name: to 1 to 64 of A-Z a-z 0-9 _ . -)", s->path,
		    s->name);
		return -1;
	}
	return 0;
}

struct soul *
soul_new(const char *path)
{
	struct soul *s = xcalloc(1, sizeof *s);
	int c;

	s->path = xstrdup(path ? path : "-");
	s->daily_cap = s->pulse_interval = s->pulse_misses = -1;
	s->daily_budget = -1;
	s->brk_threshold = s->brk_cooldown = s->brk_max_cooldown = -1;
	s->ghost_ack_max = s->history_keep = -1;
	endpoint_init(&s->llm);
	for (c = 0; c < CH_NCHAMBERS; c++) {
		s->ch[c].every = s->ch[c].daily_cap = -1;
		s->ch[c].seed_tool_cap = -1;
		s->ch[c].gate_timeout = -1;
	}
	return s;
}

/* The directory of the soul file: tools and checklists are found there. */
void
soul_dir(const struct soul *s, char *buf, size_t n)
{
	const char *slash = strrchr(s->path, '/');

	if (slash == NULL)
		snprintf(buf, n, ".");
	else if (slash == s->path)
		snprintf(buf, n, "/");
	else
		snprintf(buf, n, "%.*s", (int)(slash - s->path), s->path);
}

/* The default of key k into base where the soul left it unset. */
static void
key_default(const struct key *k, void *base)
{
	char **str = (char **)((char *)base + k->off);
	long long *num = (long long *)((char *)base + k->off);

	if (k->kind == K_STR && k->sdef != NULL && *str == NULL)
		*str = xstrdup(k->sdef);
	else if ((k->kind == K_INT || k->kind == K_DUR) && k->def != 0 &&
	    *num < 0)
		*num = k->def;
}

/* Fill every unset field with its documented default. */
void
soul_defaults(struct soul *s)
{
	struct chamber_conf *idle = &s->ch[CH_IDLE];
	unsigned map;
	size_t i;

	/* not llm.triage's (llm's hold), nor a tool's or a server's */
	for (i = 0; i < NKEYS; i++)
		for (map = M_TOP; map < M_TRIAGE; map <<= 1)
			if (keys[i].in & map)
				key_default(&keys[i], map_base(s, map));
	if (idle->seed_tool_cap < 0)
		idle->seed_tool_cap = s->ch[CH_SCHEDULE].seed_tool_cap;
	if (s->brk_max_cooldown < s->brk_cooldown)
		s->brk_max_cooldown = s->brk_cooldown;
	if (s->ghost_also == NULL)
		s->ghost_also = json_pack("[s]", "HEARTBEAT_OK");
	if (s->timezone == NULL)
		s->timezone = xstrdup(clock_tz_local());
}

static int
parse_soul(struct soul *s, char *buf, size_t len, char *err)
{
	struct yj y;
	struct sv v = { &y, s->path, s, err };
	char *yaml = buf, *body = NULL, *sys = NULL;
	size_t ylen = len;
	int lineoff = 0, r;

	if (is_markdown(s->path)) {
		if (split_markdown(buf, &yaml, &ylen, &body, err,
		    s->path) == -1)
			return -1;
		lineoff = 1;
	}
	if (yaml == NULL) {
		yaml = "";
		ylen = 0;
	}
	if (yj_load(yaml, ylen, lineoff, s->path, &y, err) == -1)
		return -1;
	if (!json_is_object(y.root)) {
		errf(err, "%s:%d:1: a soul must be a mapping of keys",
		    s->path, 1 + lineoff);
		yj_free(&y);
		return -1;
	}
	/* utf8_text has checked the body too */
	sys = body != NULL ? trimmed(body) : NULL;
	if (y.nodoc && sys == NULL) {	/* nothing in it */
		errf(err, "%s: empty: a soul holds its keys (heart: {} for "
		    "every default); see heart-soul(5)", s->path);
		yj_free(&y);
		return -1;
	}
	if ((r = load_top(&v, y.root)) == 0 && sys != NULL) {
		free(s->system);
		s->system = sys;
	} else
		free(sys);
	s->doc = json_incref(y.root);
	yj_free(&y);
	return r;
}

/* Load, check and complete the soul at path. */
int
soul_load(const char *path, struct soul **out, char *err)
{
	struct soul *s;
	size_t len;
	char *buf;

	*out = NULL;
	if (read_file(path, &buf, &len, err) == -1)
		return -1;
	s = soul_new(path);
	if (parse_soul(s, buf, len, err) == -1 ||
	    (s->name == NULL && name_from_path(s, err) == -1)) {
		free(buf);
		soul_free(s);
		return -1;
	}
	free(buf);
	soul_defaults(s);
	*out = s;
	return 0;
}

void
soul_free(struct soul *s)
{
	size_t i;
	int c;

	if (s == NULL)
		return;
	for (c = 0; c < CH_NCHAMBERS; c++) {
		free(s->ch[c].prompt);
		free(s->ch[c].checklist);
		json_decref(s->ch[c].gate);
	}
	for (i = 0; i < s->nwarn; i++)
		free(s->warn[i]);
	free(s->warn);
	free(s->path);
	free(s->name);
	free(s->system);
	free(s->timezone);
	free(s->ghost_token);
	free(s->ghost_mode);
	endpoint_free(&s->llm);
	if (s->triage != NULL)
		endpoint_free(s->triage);
	free(s->triage);
	json_decref(s->ghost_also);
	json_decref(s->tools);
	json_decref(s->mcp);
	json_decref(s->doc);
	free(s);
}

static json_t *
hours_json(const struct hours *h)
{
	char buf[48];

	if (!h->set)
		return json_null();
	snprintf(buf, sizeof buf, "%02d:%02d-%02d:%02d", h->start / 60,
	    h->start % 60, h->end / 60, h->end % 60);
	return json_string(buf);
}

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *
adapt_conf_json(const struct adapt_conf *a)
{
	if (!a->on)
		return json_null();
	return json_pack("{s:I,s:I,s:I,s:{s:f,s:f,s:f}}", "min",
	    (json_int_t)a->min, "max", (json_int_t)a->max, "window",
	    (json_int_t)a->window, "levels", "low", a->weight[0], "medium",
	    a->weight[1], "high", a->weight[2]);
}

static json_t *
gate_json(const struct chamber_conf *cc)
{
	if (cc->gate == NULL)
		return json_null();
	return json_pack("{s:O,s:I}", "command", cc->gate, "timeout",
	    (json_int_t)cc->gate_timeout);
}

/* A key of llm.triage (t) that is left out or says what llm's (l) does. */
static int
as_llm(const char *t, const char *l)
{
	return t == NULL || (l != NULL && strcmp(t, l) == 0);
}

/* llm.triage asks llm's provider, so llm's URL, key, command and model
 * are its own where it leaves them out (heart-soul(5)). */
int
soul_triage_same_provider(const struct soul *s)
{
	return s->triage != NULL && as_llm(s->triage->provider,
	    s->llm.provider);
}

/*
 * The price of the main model (triage 0) or of llm.triage (1): its
 * own, else llm's when it asks llm's model (heart-soul(5)); set 0 when
 * there is none.
 */
const struct price *
soul_price(const struct soul *s, int triage)
{
	static const struct price none;
	const struct soul_llm *t = s->triage;

	if (!triage)
		return &s->llm.price;
	if (t == NULL)
		return &none;
	if (t->price.set)
		return &t->price;
	if (soul_triage_same_provider(s) && as_llm(t->model, s->llm.model))
		return &s->llm.price;
	return &none;
}

static json_t *
price_conf_json(const struct price *p)
{
	if (!p->set)
		return json_null();
	return json_pack("{s:f,s:f,s:f,s:f}", "input", p->input,
	    "cached_input", p->cached_input, "cache_write", p->cache_write,
	    "output", p->output);
}

static json_t *
cache_json(int cache)
{
	return cache < 0 ? json_null() : json_string(cache == LLM_CACHE_1H ?
	    "1h" : cache == LLM_CACHE_5M ? "5m" : "off");
}

/* The string and number keys of map from its struct base, in the
 * table's order; an unset one (NULL, < 0) is null. */
static json_t *
map_json(unsigned map, const void *base)
{
	json_t *j = json_object();
	const struct key *k;
	const char *at;
	long long n;

	for (k = keys; k < keys + NKEYS; k++) {
		if (!(k->in & map))
			continue;
		at = (const char *)base + k->off;
		if (k->kind == K_STR)
			json_object_set_new(j, k->name,
			    str_or_null(*(char *const *)at));
		else if (k->kind == K_INT || k->kind == K_DUR) {
			n = *(const long long *)at;
			json_object_set_new(j, k->name, n < 0 ? json_null() :
			    json_integer(n));
		}
	}
	return j;
}

/* llm.triage as written: its unset keys are null (llm's hold) */
static json_t *
endpoint_json(const struct soul_llm *e)
{
	json_t *j = map_json(M_TRIAGE, e);

	json_object_set(j, "command", e->command ? e->command : json_null());
	json_object_set_new(j, "price", price_conf_json(&e->price));
	json_object_set_new(j, "cache", cache_json(e->cache));
	return j;
}

/* The effective soul, defaults filled in, durations in seconds. */
json_t *
soul_json(const struct soul *s)
{
	const struct chamber_conf *sc = &s->ch[CH_SCHEDULE];
	const struct chamber_conf *ic = &s->ch[CH_IDLE];
	json_t *j;

	j = json_pack("{s:s,s:o,s:s,s:o,s:o,"
	    "s:{s:I,s:o,s:I,s:I,s:o,s:o},s:{s:I,s:o,s:I,s:o,s:o},"
	    "s:o,s:{s:s,s:O,s:s,s:I},s:I,s:o,s:O}",
	    "name", s->name, "system", str_or_null(s->system),
	    "timezone", s->timezone, "daily_cap", s->daily_cap < 0 ?
	    json_null() : json_integer(s->daily_cap),
	    "pulse", map_json(M_PULSE, s),
	    "schedule", "interval", (json_int_t)sc->every,
	    "prompt", str_or_null(sc->prompt),
	    "daily_cap", (json_int_t)sc->daily_cap,
	    "seed_tool_cap", (json_int_t)sc->seed_tool_cap,
	    "active_hours", hours_json(&sc->active),
	    "checklist", str_or_null(sc->checklist),
	    "idle", "after", (json_int_t)ic->every,
	    "prompt", str_or_null(ic->prompt),
	    "daily_cap", (json_int_t)ic->daily_cap,
	    "active_hours", hours_json(&ic->active),
	    "checklist", str_or_null(ic->checklist),
	    "breaker", map_json(M_BRK, s),
	    "ghost", "token", s->ghost_token, "also", s->ghost_also,
	    "mode", s->ghost_mode, "ack_max_chars",
	    (json_int_t)s->ghost_ack_max,
	    "history_keep", (json_int_t)s->history_keep,
	    "llm", map_json(M_LLM, &s->llm),
	    "tools", s->tools ? s->tools : json_null());
	json_object_set_new(json_object_get(j, "schedule"), "adaptive",
	    adapt_conf_json(&s->adapt));
	json_object_set(j, "mcp_servers", s->mcp ? s->mcp : json_null());
	json_object_set_new(json_object_get(j, "schedule"), "gate",
	    gate_json(sc));
	json_object_set_new(json_object_get(j, "idle"), "gate",
	    gate_json(ic));
	json_object_set_new(json_object_get(j, "llm"), "triage",
	    s->triage ? endpoint_json(s->triage) : json_null());
	json_object_set_new(j, "daily_budget", price_json(s->daily_budget));
	json_object_set_new(json_object_get(j, "llm"), "price",
	    price_conf_json(&s->llm.price));
	json_object_set_new(json_object_get(j, "llm"), "cache",
	    cache_json(s->llm.cache < 0 ? LLM_CACHE_OFF : s->llm.cache));
	return j;
}
