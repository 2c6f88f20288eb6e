/*
 * soulkey.c - the key table: every key of a soul spelt once, in keys[]
 * below, with the mappings it is a key of, how it is read and checked,
 * where it goes in struct soul and its default: what soul_walk reads,
 * in what order, what soul_defaults fills in and what soul_keys_json
 * prints.  The readers of its rows whose kind no other code reads (a
 * number, hours, days, a weight) and of its K_FN rows (a chamber's
 * gate, adaptive, the daily budget) are here with it; a key with its
 * own code (K_OWN) is read by that code, after the walk (soul.c,
 * soultool.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartsoul.h"

#define M_CH	(M_SCHED | M_IDLE)
#define M_EP	(M_LLM | M_TRIAGE)

/* llm.context_budget's default and least, in tokens (heart(7), LIMITS) */
#define HEART_BUDGET	16000
#define HEART_BUDGET_MIN 1000

#define GATE_TIMEOUT	10	/* a gate program's, s */

#define DEF_INTERVAL	(30 * 60)	/* schedule.interval */

/* Each map's path in messages, in the order of its bit (soul_map). */
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

typedef int keyfn(struct soul_loading *, const json_t *, const char *, void *);

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

static keyfn get_budget, get_catch_up, get_dormant, get_gate, get_window,
    load_adaptive, no_adaptive, no_interval;

static keyfn get_monthly;	/* heart.monthly_budget */

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
	FN(M_HEART, "monthly_budget", get_monthly),
	FN(M_HEART, "dormant_after", get_dormant),
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
	FN(M_SCHED, "catch_up", get_catch_up),
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
	FN(M_BRK, "window", get_window),
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

const char *
soul_map_path(unsigned map)
{
	size_t i;

	for (i = 0; (1u << i) != map; i++)
		;
	return mappath[i];
}

/* The struct the keys of map go in; NULL for llm.triage when none. */
void *
soul_map_base(struct soul *s, unsigned map)
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
const char *
soul_key_path(char *buf, size_t n, const char *path, const char *key)
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
void
soul_unknown_keys(struct soul_loading *v, const json_t *obj, unsigned map,
    const char *path)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)obj, key, val)
		if (!known(map, key))
			soul_add_warning(v, obj, key, "unknown key '%.64s' in "
			    "%s (ignored)", key, path);
}

/*
 * A key of the other chamber only (K_NONE, in the chamber where it is
 * misplaced) written in this one: said on standard error, as an
 * unknown key is, and never read (it has no effect; heart-soul(5)).
 */
static int
other_chamber(struct soul_loading *v, const json_t *m, const struct key *k)
{
	char msg[400];

	if (json_object_get(m, k->name) == NULL)
		return 0;
	snprintf(msg, sizeof msg, "key '%s' in %s has no effect: it is %s's "
	    "(ignored)", k->name, soul_map_path(k->in),
	    soul_map_path(M_CH & ~k->in));
	soul_add_warning(v, m, k->name, "%s%s", msg, "");
	return 0;
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

static int
read_int(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, long long lo, long long *dst)
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
		return soul_bad(v, obj, key, path, m);
	}
	if (!json_is_integer(j))
		return soul_bad(v, obj, key, path, "must be a whole number");
	if (json_integer_value(j) < lo) {
		snprintf(m, sizeof m, "must be at least %lld", lo);
		return soul_bad(v, obj, key, path, m);
	}
	*dst = json_integer_value(j);
	return 0;
}

static int
read_hours(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, struct hours *dst)
{
	json_t *j = json_object_get(obj, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_string(j) || hours_parse(json_string_value(j), dst))
		return soul_bad(v, obj, key, path, "must be hours like "
		    "\"08:00-23:00\" (may wrap midnight)");
	return 0;
}

static int
read_weight(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, double *dst)
{
	json_t *j = json_object_get(obj, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_number(j) || json_number_value(j) < 0 ||
	    json_number_value(j) > 1)
		return soul_bad(v, obj, key, path, "must be a number from 0 "
		    "to 1");
	*dst = json_number_value(j);
	return 0;
}

/* adaptive.window: a whole number of days, or a duration of whole days */
static int
read_days(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, long long *dst)
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
		return soul_bad(v, obj, key, path, "must be whole days, 1 to "
		    "365 (write e.g. 14 or 14d)");
	*dst = d;
	return 0;
}

static int
get_key(struct soul_loading *v, const json_t *m, const struct key *k,
    const char *path, void *base)
{
	void *dst = (char *)base + k->off;

	switch (k->kind) {
	case K_STR:
		return soul_str(v, m, k->name, path, dst);
	case K_INT:
		return read_int(v, m, k->name, path, k->lo, dst);
	case K_DUR:
		return soul_dur(v, m, k->name, path, dst);
	case K_HOURS:
		return read_hours(v, m, k->name, path, dst);
	case K_DAYS:
		return read_days(v, m, k->name, path, dst);
	case K_WEIGHT:
		return read_weight(v, m, k->name, path, dst);
	case K_FN:
		return k->fn(v, m, path, base);
	case K_NONE:
		return other_chamber(v, m, k);
	default:
		return 0;
	}
}

/* A key of heart that is a mapping and no key of heart: a chamber
 * mistyped, or one heart does not have. */
static int
no_chamber(struct soul_loading *v, const json_t *heart)
{
	const char *key;
	json_t *val;
	char m[200];

	json_object_foreach((json_t *)heart, key, val)
		if (!known(M_HEART, key) && json_is_object(val)) {
			snprintf(m, sizeof m, "unknown chamber '%.40s' (the "
			    "chambers are pulse, schedule and idle)", key);
			return soul_bad_at(v, heart, key, "heart", m, 1);
		}
	return 0;
}

/* Read the keys of map from m into its struct, in the table's order;
 * heart's mappings that are no keys of it first. */
int
soul_walk(struct soul_loading *v, const json_t *m, unsigned map)
{
	void *base = soul_map_base(v->s, map);
	char path[128];
	size_t i;

	if (map == M_HEART && no_chamber(v, m) == -1)
		return -1;
	for (i = 0; i < NKEYS; i++)
		if ((keys[i].in & map) && get_key(v, m, &keys[i],
		    soul_key_path(path, sizeof path, soul_map_path(map),
		    keys[i].name), base) == -1)
			return -1;
	return 0;
}

/* The map of heart named by map: read, then its unknown keys warned
 * about; *out is it, or NULL when the soul leaves it out. */
int
soul_load_map(struct soul_loading *v, const json_t *heart, unsigned map,
    json_t **out)
{
	const char *path = soul_map_path(map);

	if (soul_need_map(v, heart, strrchr(path, '.') + 1, path, out) == -1)
		return -1;
	if (*out == NULL)
		return 0;
	if (soul_walk(v, *out, map) == -1)
		return -1;
	soul_unknown_keys(v, *out, map, path);
	return 0;
}

/*
 * schedule.adaptive: true (the defaults), false, or a mapping of min,
 * max, window and levels.  The bounds must hold schedule.interval.
 */
static int
load_adaptive(struct soul_loading *v, const json_t *sched, const char *path,
    void *base)
{
	struct adapt_conf *a = &v->s->adapt;
	long long iv = ((struct chamber_conf *)base)->every;
	json_t *j = json_object_get(sched, "adaptive"), *lv;
	char m[160], d[32], p[128];

	if (j == NULL || json_is_null(j) || json_is_false(j))
		return 0;
	if (!json_is_true(j) && !json_is_object(j))
		return soul_bad(v, sched, "adaptive", path, "must be true, "
		    "false or a mapping of min, max, window and levels");
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
	if (soul_walk(v, j, M_ADAPT) == -1 || soul_need_map(v, j, "levels",
	    soul_map_path(M_LEVELS), &lv) == -1)
		return -1;
	dur_format(iv, d, sizeof d);
	if (a->min > iv) {
		snprintf(m, sizeof m, "must not be longer than "
		    "schedule.interval (%s)", d);
		return soul_bad(v, j, "min", soul_key_path(p, sizeof p, path,
		    "min"), m);
	}
	if (a->max < iv) {
		snprintf(m, sizeof m, "must not be shorter than "
		    "schedule.interval (%s)", d);
		return soul_bad(v, j, "max", soul_key_path(p, sizeof p, path,
		    "max"), m);
	}
	if (lv != NULL && soul_walk(v, lv, M_LEVELS) == -1)
		return -1;
	if (lv != NULL)
		soul_unknown_keys(v, lv, M_LEVELS, soul_map_path(M_LEVELS));
	soul_unknown_keys(v, j, M_ADAPT, path);
	return 0;
}

static int
no_adaptive(struct soul_loading *v, const json_t *m, const char *path,
    void *base)
{
	(void)base;
	if (json_object_get(m, "adaptive") != NULL)
		return soul_bad_at(v, m, "adaptive", path, "only the schedule "
		    "chamber adapts its interval", 1);
	return 0;
}

static int
no_interval(struct soul_loading *v, const json_t *m, const char *path,
    void *base)
{
	(void)base;
	if (json_object_get(m, "interval") != NULL)
		return soul_bad(v, m, "interval", path, "the idle chamber "
		    "fires 'after' a quiet stretch; write after: instead");
	return 0;
}

static int
get_gate(struct soul_loading *v, const json_t *m, const char *path, void *base)
{
	struct chamber_conf *cc = base;
	json_t *gate = json_object_get(m, "gate");

	if (gate == NULL)
		return 0;
	if (!soul_strlist(gate, 1))
		return soul_bad(v, m, "gate", path, "must be a list of "
		    "strings: the program and its arguments");
	cc->gate = json_incref(gate);
	return 0;
}
/* heart.daily_budget: dollars a day, as nanodollars. */
static int
get_budget(struct soul_loading *v, const json_t *heart, const char *path,
    void *base)
{
	struct soul *s = base;
	json_t *j = json_object_get(heart, "daily_budget");

	if (j == NULL || json_is_null(j))
		return 0;
	if ((s->daily_budget = price_nano(j)) < 0)
		return soul_bad(v, heart, "daily_budget", path, "must be a "
		    "number of dollars, 0 or more and at most 9e9, such "
		    "as 1.50");
	return 0;
}

/* heart.monthly_budget: dollars a local calendar month, as nanodollars. */
static int
get_monthly(struct soul_loading *v, const json_t *heart, const char *path,
    void *base)
{
	struct soul *s = base;
	json_t *j = json_object_get(heart, "monthly_budget");

	if (j == NULL || json_is_null(j))
		return 0;
	if ((s->monthly_budget = price_nano(j)) < 0)
		return soul_bad(v, heart, "monthly_budget", path, "must be a "
		    "number of dollars, 0 or more and at most 9e9, such "
		    "as 40.00");
	return 0;
}

/* Does j turn a duration key off: false, 0 or "0"? */
static int
dur_off(const json_t *j)
{
	const char *str = json_string_value(j);

	return json_is_false(j) || (json_is_number(j) &&
	    json_number_value(j) == 0) || (str != NULL && strcmp(str, "0") ==
	    0);
}

/* heart.dormant_after: a duration; 0 or false: off (dormant.c). */
static int
get_dormant(struct soul_loading *v, const json_t *heart, const char *path,
    void *base)
{
	struct soul *s = base;
	json_t *j = json_object_get(heart, "dormant_after");

	if (j == NULL || json_is_null(j))
		return 0;
	if (dur_off(j)) {
		s->dormant_after = 0;
		return 0;
	}
	return soul_dur(v, heart, "dormant_after", path, &s->dormant_after);
}

/*
 * schedule.catch_up: a duration of a minute or more, since a wake less
 * than a minute after its slot is on time and no catch-up; 0 or false:
 * a missed slot is never caught up (slot.c, slot_missed).
 */
static int
get_catch_up(struct soul_loading *v, const json_t *sched, const char *path,
    void *base)
{
	struct soul *s = v->s;
	json_t *j = json_object_get(sched, "catch_up");

	(void)base;
	if (j == NULL || json_is_null(j))
		return 0;
	if (dur_off(j)) {
		s->catch_up = 0;
		return 0;
	}
	if (soul_dur(v, sched, "catch_up", path, &s->catch_up) == -1)
		return -1;
	if (s->catch_up < SLOT_ON_TIME)
		return soul_bad(v, sched, "catch_up", path, "must be 1m or "
		    "more (heart-wake runs every minute: a wake less than a "
		    "minute after its slot is on time), or false to never "
		    "catch up");
	return 0;
}

/* Warn about the keys of breaker.window w (at path) other than its two. */
static void
window_unknown(struct soul_loading *v, const json_t *w, const char *path)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)w, key, val)
		if (strcmp(key, "failures") != 0 && strcmp(key, "within") != 0)
			soul_add_warning(v, w, key, "unknown key '%.64s' in "
			    "%s (ignored)", key, path);
}

/*
 * heart.breaker.window: a mapping of failures (1 to BRK_WINDOW_MAX)
 * and within (a duration), each defaulting to 10 and 1h; true, the
 * defaults; false, no window.
 */
static int
get_window(struct soul_loading *v, const json_t *brk, const char *path,
    void *base)
{
	struct soul *s = base;
	json_t *j = json_object_get(brk, "window");
	char m[64], kp[128];

	if (j == NULL || json_is_null(j) || json_is_true(j))
		return 0;
	if (json_is_false(j)) {
		s->brk_window_fails = 0;
		return 0;
	}
	if (!json_is_object(j))
		return soul_bad(v, brk, "window", path, "must be a mapping of "
		    "failures and within, such as { failures: 10, within: "
		    "1h }, or false");
	if (read_int(v, j, "failures", soul_key_path(kp, sizeof kp, path,
	    "failures"), 1, &s->brk_window_fails) == -1 ||
	    soul_dur(v, j, "within", soul_key_path(kp, sizeof kp, path,
	    "within"), &s->brk_window) == -1)
		return -1;
	if (s->brk_window_fails > BRK_WINDOW_MAX) {
		snprintf(m, sizeof m, "must be at most %d", BRK_WINDOW_MAX);
		return soul_bad(v, j, "failures", soul_key_path(kp, sizeof kp,
		    path, "failures"), m);
	}
	window_unknown(v, j, path);
	return 0;
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
				key_default(&keys[i], soul_map_base(s, map));
	if (idle->seed_tool_cap < 0)
		idle->seed_tool_cap = s->ch[CH_SCHEDULE].seed_tool_cap;
	if (s->brk_max_cooldown < s->brk_cooldown)
		s->brk_max_cooldown = s->brk_cooldown;
	if (s->brk_window_fails < 0)
		s->brk_window_fails = DEF_BRK_WINDOW_FAILS;
	if (s->brk_window < 0)
		s->brk_window = DEF_BRK_WINDOW;
	if (s->ghost_also == NULL)
		s->ghost_also = json_pack("[s]", "HEARTBEAT_OK");
	if (s->timezone == NULL)
		s->timezone = xstrdup(clock_tz_local());
}

/* The string and number keys of map from its struct base, in the
 * table's order; an unset one (NULL, < 0) is null. */
json_t *
soul_keys_json(unsigned map, const void *base)
{
	json_t *j = json_object();
	const struct key *k;
	const char *at, *str;
	long long n;

	for (k = keys; k < keys + NKEYS; k++) {
		if (!(k->in & map))
			continue;
		at = (const char *)base + k->off;
		str = *(char *const *)at;
		if (k->kind == K_STR)
			json_object_set_new(j, k->name,
			    str ? json_string(str) : json_null());
		else if (k->kind == K_INT || k->kind == K_DUR) {
			n = *(const long long *)at;
			json_object_set_new(j, k->name, n < 0 ? json_null() :
			    json_integer(n));
		}
	}
	return j;
}
