/*
 * soul.c - soul files: YAML, or Markdown whose YAML frontmatter sits
 * between "---" lines and whose body is the system prompt.  The text
 * is read into JSON (yj.c), then every key is checked into struct
 * soul.  Errors name file:line:column; unknown keys become warnings
 * the program prints.  After soul_load every field holds a value:
 * caps are never unbounded.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Warn about keys of obj that are not in known[]. */
static void
unknown_keys(struct sv *v, const json_t *obj, const char *path,
    const char *const known[])
{
	const char *key;
	const struct yj_pos *p;
	json_t *val;
	size_t i;

	json_object_foreach((json_t *)obj, key, val) {
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(key, known[i]) == 0)
				break;
		if (known[i] != NULL)
			continue;
		p = yj_key(v->y, obj, key);
		warn(v, p ? p->kline : 1, p ? p->kcol : 1,
		    "unknown key '%.64s' in %s (ignored)", key, path);
	}
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

/*
 * schedule.adaptive: true (the defaults), false, or a mapping of min,
 * max, window and levels.  The bounds must hold schedule.interval.
 */
static int
load_adaptive(struct sv *v, const json_t *sched)
{
	static const char *const known[] = { "min", "max", "window",
	    "levels", NULL };
	static const char *const kl[] = { "low", "medium", "high", NULL };
	struct adapt_conf *a = &v->s->adapt;
	long long iv = v->s->ch[CH_SCHEDULE].every;
	const char *path = "heart.schedule.adaptive";
	json_t *j = json_object_get(sched, "adaptive"), *lv;
	char m[160], d[32];
	int i;

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
	if (get_dur(v, j, "min", "heart.schedule.adaptive.min", &a->min) ||
	    get_dur(v, j, "max", "heart.schedule.adaptive.max", &a->max) ||
	    get_days(v, j, "window", "heart.schedule.adaptive.window",
	    &a->window) || need_map(v, j, "levels",
	    "heart.schedule.adaptive.levels", &lv) == -1)
		return -1;
	dur_format(iv, d, sizeof d);
	if (a->min > iv) {
		snprintf(m, sizeof m, "must not be longer than "
		    "schedule.interval (%s)", d);
		return bad(v, j, "min", "heart.schedule.adaptive.min", m);
	}
	if (a->max < iv) {
		snprintf(m, sizeof m, "must not be shorter than "
		    "schedule.interval (%s)", d);
		return bad(v, j, "max", "heart.schedule.adaptive.max", m);
	}
	for (i = 0; lv != NULL && kl[i] != NULL; i++) {
		snprintf(m, sizeof m, "%s.levels.%s", path, kl[i]);
		if (get_weight(v, lv, kl[i], m, &a->weight[i]) == -1)
			return -1;
	}
	if (lv != NULL) {
		snprintf(m, sizeof m, "%s.levels", path);
		unknown_keys(v, lv, m, kl);
	}
	unknown_keys(v, j, path, known);
	return 0;
}

static int
load_chamber(struct sv *v, const json_t *heart, enum chamber c)
{
	static const char *const known[] = { "interval", "after", "prompt",
	    "daily_cap", "seed_tool_cap", "active_hours", "checklist",
	    "adaptive", "gate", "gate_timeout", NULL };
	struct chamber_conf *cc = &v->s->ch[c];
	const char *every = c == CH_SCHEDULE ? "interval" : "after";
	char path[64], p2[96];
	json_t *m;

	snprintf(path, sizeof path, "heart.%s", soul_chamber_name(c));
	if (need_map(v, heart, soul_chamber_name(c), path, &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
#define P(k) (snprintf(p2, sizeof p2, "%s.%s", path, k), p2)
	if (get_dur(v, m, every, P(every), &cc->every) == -1 ||
	    get_str(v, m, "prompt", P("prompt"), &cc->prompt) == -1 ||
	    get_int(v, m, "daily_cap", P("daily_cap"), 0, &cc->daily_cap) ||
	    get_hours(v, m, "active_hours", P("active_hours"), &cc->active) ||
	    get_str(v, m, "checklist", P("checklist"), &cc->checklist) == -1 ||
	    get_dur(v, m, "gate_timeout", P("gate_timeout"),
	    &cc->gate_timeout) == -1)
		return -1;
	if (json_object_get(m, "gate") != NULL) {
		if (!is_strlist(json_object_get(m, "gate"), 1))
			return bad(v, m, "gate", P("gate"), "must be a list "
			    "of strings: the program and its arguments");
		cc->gate = json_incref(json_object_get(m, "gate"));
	}
	if (c == CH_SCHEDULE && (get_int(v, m, "seed_tool_cap",
	    P("seed_tool_cap"), 0, &cc->seed_tool_cap) == -1 ||
	    load_adaptive(v, m) == -1))
		return -1;
	if (c == CH_IDLE && json_object_get(m, "adaptive") != NULL)
		return bad_at(v, m, "adaptive", P("adaptive"), "only the "
		    "schedule chamber adapts its interval", 1);
	if (c == CH_IDLE && json_object_get(m, "interval") != NULL)
		return bad(v, m, "interval", P("interval"), "the idle chamber "
		    "fires 'after' a quiet stretch; write after: instead");
#undef P
	unknown_keys(v, m, path, known);
	return 0;
}

static int
load_small(struct sv *v, const json_t *heart)
{
	static const char *const kp[] = { "interval", "misses", NULL };
	static const char *const kb[] = { "threshold", "cooldown",
	    "max_cooldown", NULL };
	static const char *const kh[] = { "keep", NULL };
	struct soul *s = v->s;
	json_t *m;

	if (need_map(v, heart, "pulse", "heart.pulse", &m) == -1)
		return -1;
	if (m && (get_dur(v, m, "interval", "heart.pulse.interval",
	    &s->pulse_interval) || get_int(v, m, "misses",
	    "heart.pulse.misses", 1, &s->pulse_misses)))
		return -1;
	if (m)
		unknown_keys(v, m, "heart.pulse", kp);
	if (need_map(v, heart, "breaker", "heart.breaker", &m) == -1)
		return -1;
	if (m && (get_int(v, m, "threshold", "heart.breaker.threshold", 1,
	    &s->brk_threshold) || get_dur(v, m, "cooldown",
	    "heart.breaker.cooldown", &s->brk_cooldown) || get_dur(v, m,
	    "max_cooldown", "heart.breaker.max_cooldown",
	    &s->brk_max_cooldown)))
		return -1;
	if (m)
		unknown_keys(v, m, "heart.breaker", kb);
	if (need_map(v, heart, "history", "heart.history", &m) == -1)
		return -1;
	if (m && get_int(v, m, "keep", "heart.history.keep", 0,
	    &s->history_keep))
		return -1;
	if (m)
		unknown_keys(v, m, "heart.history", kh);
	return 0;
}

static int
load_ghost(struct sv *v, const json_t *heart)
{
	static const char *const known[] = { "token", "also", "mode",
	    "ack_max_chars", NULL };
	struct soul *s = v->s;
	json_t *m, *also;

	if (need_map(v, heart, "ghost", "heart.ghost", &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (get_str(v, m, "token", "heart.ghost.token", &s->ghost_token) ||
	    get_str(v, m, "mode", "heart.ghost.mode", &s->ghost_mode) ||
	    get_int(v, m, "ack_max_chars", "heart.ghost.ack_max_chars", 0,
	    &s->ghost_ack_max))
		return -1;
	if (s->ghost_token != NULL && s->ghost_token[0] == '\0')
		return bad(v, m, "token", "heart.ghost.token",
		    "must not be empty");
	if (s->ghost_mode != NULL && strcmp(s->ghost_mode, "token") != 0 &&
	    strcmp(s->ghost_mode, "tool") != 0)
		return bad(v, m, "mode", "heart.ghost.mode",
		    "must be 'token' or 'tool'");
	if ((also = json_object_get(m, "also")) != NULL) {
		if (json_is_string(also)) {
			json_decref(s->ghost_also);
			s->ghost_also = json_pack("[O]", also);
		} else if (is_strlist(also, 0)) {
			json_decref(s->ghost_also);
			s->ghost_also = json_incref(also);
		} else
			return bad(v, m, "also", "heart.ghost.also",
			    "must be a string or a list of strings");
	}
	unknown_keys(v, m, "heart.ghost", known);
	return 0;
}

/* heart.daily_budget: dollars a day, as nanodollars. */
static int
get_budget(struct sv *v, const json_t *heart)
{
	json_t *j = json_object_get(heart, "daily_budget");

	if (j == NULL || json_is_null(j))
		return 0;
	if ((v->s->daily_budget = price_nano(j)) < 0)
		return bad(v, heart, "daily_budget", "heart.daily_budget",
		    "must be a number of dollars, 0 or more, such as 1.50");
	return 0;
}

static int
load_heart(struct sv *v, const json_t *root)
{
	static const char *const known[] = { "timezone", "daily_cap",
	    "daily_budget", "pulse", "schedule", "idle", "breaker", "ghost",
	    "history", NULL };
	const char *key;
	json_t *heart, *val;
	char m[200];
	int c;

	if (need_map(v, root, "heart", "heart", &heart) == -1)
		return -1;
	if (heart == NULL)
		return 0;
	json_object_foreach(heart, key, val) {
		for (c = 0; known[c] != NULL; c++)
			if (strcmp(key, known[c]) == 0)
				break;
		if (known[c] == NULL && json_is_object(val)) {
			snprintf(m, sizeof m, "unknown chamber '%.40s' (the "
			    "chambers are pulse, schedule and idle)", key);
			return bad_at(v, heart, key, "heart", m, 1);
		}
	}
	if (get_str(v, heart, "timezone", "heart.timezone",
	    &v->s->timezone) || get_int(v, heart, "daily_cap",
	    "heart.daily_cap", 0, &v->s->daily_cap) || get_budget(v, heart))
		return -1;
	if (v->s->timezone != NULL && !clock_tz_valid(v->s->timezone)) {
		snprintf(m, sizeof m, "unknown timezone '%.60s' (use an IANA "
		    "name such as Europe/Paris)", v->s->timezone);
		return bad(v, heart, "timezone", "heart.timezone", m);
	}
	for (c = 0; c < CH_NCHAMBERS; c++)
		if (load_chamber(v, heart, (enum chamber)c) == -1)
			return -1;
	if (load_small(v, heart) == -1 || load_ghost(v, heart) == -1)
		return -1;
	unknown_keys(v, heart, "heart", known);
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

	snprintf(p2, sizeof p2, "%s.price", path);
	if (price_parse(json_object_get(m, "price"), &e->price, err) == -1)
		return bad(v, m, "price", p2, err);
	snprintf(p2, sizeof p2, "%s.cache", path);
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
 * The keys of one endpoint, llm or llm.triage (path), from the map m
 * into e: one parser for both.
 */
static int
load_endpoint(struct sv *v, json_t *m, const char *path, struct soul_llm *e)
{
	char p2[64];
	json_t *cmd;

#define P(k) (snprintf(p2, sizeof p2, "%s.%s", path, k), p2)
	if (get_str(v, m, "provider", P("provider"), &e->provider) ||
	    get_str(v, m, "base_url", P("base_url"), &e->base_url) ||
	    get_str(v, m, "model", P("model"), &e->model) ||
	    get_str(v, m, "api_key_env", P("api_key_env"),
	    &e->api_key_env) ||
	    get_dur(v, m, "timeout", P("timeout"), &e->timeout) ||
	    get_int(v, m, "max_tokens", P("max_tokens"), 1,
	    &e->max_tokens) ||
	    get_int(v, m, "context_budget", P("context_budget"),
	    HEART_BUDGET_MIN, &e->context_budget))
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
	static const char *const known[] = { "provider", "base_url", "model",
	    "api_key_env", "timeout", "max_tokens", "context_budget",
	    "command", "triage", "price", "cache", NULL };
	static const char *const tknown[] = { "provider", "base_url",
	    "model", "api_key_env", "timeout", "max_tokens",
	    "context_budget", "command", "price", "cache", NULL };
	struct soul *s = v->s;
	json_t *m, *t;

	if (need_map(v, root, "llm", "llm", &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (load_endpoint(v, m, "llm", &s->llm) == -1)
		return -1;
	if (need_map(v, m, "triage", "llm.triage", &t) == -1)
		return -1;
	if (t != NULL) {
		s->triage = xcalloc(1, sizeof *s->triage);
		endpoint_init(s->triage);
		if (load_endpoint(v, t, "llm.triage", s->triage) == -1)
			return -1;
		unknown_keys(v, t, "llm.triage", tknown);
	}
	unknown_keys(v, m, "llm", known);
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
	static const char *const known[] = { "name", "description",
	    "parameters", "command", "timeout", NULL };
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
	unknown_keys(v, t, path, known);
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
	static const char *const known[] = { "command", "args", "env",
	    "pass_env", "tools", "timeout", "type", NULL };
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
	unknown_keys(v, m, path, known);
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
	static const char *const known[] = { "name", "system", "heart",
	    "llm", "tools", "mcp_servers", NULL };
	struct soul *s = v->s;
	char m[200];

	if (get_str(v, root, "name", "name", &s->name) == -1 ||
	    get_str(v, root, "system", "system", &s->system) == -1)
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
	if (s->daily_budget >= 0 && !s->llm.price.set)
		return bad_at(v, json_object_get(root, "heart"),
		    "daily_budget", "heart.daily_budget", "needs llm.price: "
		    "heart counts dollars from the model's price per million "
		    "tokens (heart-soul(5)); without one a budget would "
		    "never be reached", 1);
	if (s->daily_budget >= 0 && s->triage != NULL &&
	    !soul_price(s, 1)->set)
		return bad_at(v, json_object_get(root, "heart"),
		    "daily_budget", "heart.daily_budget", "needs "
		    "llm.triage.price too: the triage model is not llm's, "
		    "so llm.price is not its price", 1);
	unknown_keys(v, root, "the soul", known);
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

static int
read_file(const char *path, char **bufo, size_t *leno, char *err)
{
	char *buf;
	size_t n;

	if (file_read(path, HEART_SOULMAX, &buf, &n) == -1) {
		errf(err, "%s: %s", path, errno == EFBIG ? "larger than 1 MiB" :
		    strerror(errno));
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

#define DEF(f, v) do { if ((f) < 0) (f) = (v); } while (0)

/* Fill every unset field with its documented default. */
void
soul_defaults(struct soul *s)
{
	DEF(s->pulse_interval, 10);
	DEF(s->pulse_misses, 3);
	DEF(s->ch[CH_SCHEDULE].every, DEF_INTERVAL);
	DEF(s->ch[CH_SCHEDULE].daily_cap, DEF_SCHEDULE_CAP);
	DEF(s->ch[CH_SCHEDULE].seed_tool_cap, 5);
	DEF(s->ch[CH_IDLE].every, 2 * 3600);
	DEF(s->ch[CH_IDLE].daily_cap, DEF_IDLE_CAP);
	DEF(s->ch[CH_IDLE].seed_tool_cap, s->ch[CH_SCHEDULE].seed_tool_cap);
	DEF(s->ch[CH_SCHEDULE].gate_timeout, GATE_TIMEOUT);
	DEF(s->ch[CH_IDLE].gate_timeout, GATE_TIMEOUT);
	DEF(s->brk_threshold, DEF_BRK_THRESHOLD);
	DEF(s->brk_cooldown, DEF_BRK_COOLDOWN);
	DEF(s->brk_max_cooldown, DEF_BRK_MAX_COOLDOWN);
	if (s->brk_max_cooldown < s->brk_cooldown)
		s->brk_max_cooldown = s->brk_cooldown;
	DEF(s->ghost_ack_max, 300);
	DEF(s->history_keep, 8);
	DEF(s->llm.timeout, 60);
	DEF(s->llm.max_tokens, 1024);
	DEF(s->llm.context_budget, HEART_BUDGET);
	if (s->ghost_token == NULL)
		s->ghost_token = xstrdup("[IDLE]");
	if (s->ghost_also == NULL)
		s->ghost_also = json_pack("[s]", "HEARTBEAT_OK");
	if (s->ghost_mode == NULL)
		s->ghost_mode = xstrdup("token");
	if (s->timezone == NULL)
		s->timezone = xstrdup(clock_tz_local());
}

#undef DEF

static int
parse_soul(struct soul *s, char *buf, size_t len, char *err)
{
	struct yj y;
	struct sv v = { &y, s->path, s, err };
	char *yaml = buf, *body = NULL, *sys;
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
	r = load_top(&v, y.root);
	/* utf8_text has checked the body too */
	if (r == 0 && body != NULL && (sys = trimmed(body)) != NULL) {
		free(s->system);
		s->system = sys;
	}
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

/* llm.triage as written: its unset keys are null (llm's hold) */
static json_t *
endpoint_json(const struct soul_llm *e)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:O?,s:o,s:o}",
	    "provider", str_or_null(e->provider),
	    "base_url", str_or_null(e->base_url),
	    "model", str_or_null(e->model),
	    "api_key_env", str_or_null(e->api_key_env),
	    "timeout", e->timeout < 0 ? json_null() :
	    json_integer(e->timeout),
	    "max_tokens", e->max_tokens < 0 ? json_null() :
	    json_integer(e->max_tokens),
	    "context_budget", e->context_budget < 0 ? json_null() :
	    json_integer(e->context_budget),
	    "command", e->command,
	    "price", price_conf_json(&e->price),
	    "cache", cache_json(e->cache));
}

/* The effective soul, defaults filled in, durations in seconds. */
json_t *
soul_json(const struct soul *s)
{
	const struct chamber_conf *sc = &s->ch[CH_SCHEDULE];
	const struct chamber_conf *ic = &s->ch[CH_IDLE];
	json_t *j;

	j = json_pack("{s:s,s:o,s:s,s:o,s:{s:I,s:I},"
	    "s:{s:I,s:o,s:I,s:I,s:o,s:o},s:{s:I,s:o,s:I,s:o,s:o},"
	    "s:{s:I,s:I,s:I},s:{s:s,s:O,s:s,s:I},s:I,"
	    "s:{s:o,s:o,s:o,s:o,s:I,s:I,s:I},s:O}",
	    "name", s->name, "system", str_or_null(s->system),
	    "timezone", s->timezone, "daily_cap", s->daily_cap < 0 ?
	    json_null() : json_integer(s->daily_cap),
	    "pulse", "interval", (json_int_t)s->pulse_interval,
	    "misses", (json_int_t)s->pulse_misses,
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
	    "breaker", "threshold", (json_int_t)s->brk_threshold,
	    "cooldown", (json_int_t)s->brk_cooldown,
	    "max_cooldown", (json_int_t)s->brk_max_cooldown,
	    "ghost", "token", s->ghost_token, "also", s->ghost_also,
	    "mode", s->ghost_mode, "ack_max_chars",
	    (json_int_t)s->ghost_ack_max,
	    "history_keep", (json_int_t)s->history_keep,
	    "llm", "provider", str_or_null(s->llm.provider),
	    "base_url", str_or_null(s->llm.base_url),
	    "model", str_or_null(s->llm.model),
	    "api_key_env", str_or_null(s->llm.api_key_env),
	    "timeout", (json_int_t)s->llm.timeout,
	    "max_tokens", (json_int_t)s->llm.max_tokens,
	    "context_budget", (json_int_t)s->llm.context_budget,
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
