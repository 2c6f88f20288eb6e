/*
 * pause.c - an operator's stop (heart-cap pause, resume): agents held
 * back by hand, one by one or the whole fleet at once, until a time or
 * until resumed.  A paused agent's wake ends as "paused" at its
 * admission (run.c), before its gate program, its breaker, the fleet's
 * rate limit and its cap: nothing run, nothing sent, nothing taken, no
 * slot used; a script's heart-cap take is refused the same way.
 *
 * One document for the whole store, pause.json: a file in the state
 * directory, or the key heart:{*}:pause.json of a Redis store (store.c,
 * owner "*"), so that one read at a wake's admission answers for the
 * agent and for the fleet, on every host that shares the store, and an
 * agent not yet known is held back by a pause of the fleet:
 *
 *   {"v":1,"all":{"since":T,"until":T|null}|null,
 *    "agents":{"ID":{"since":T,"until":T|null},...},"updated":T}
 *
 * Invariants: the rule is pause_rule's, a pure function of the two
 * pauses that may hold an agent and "now"; a pause past its until is
 * over by itself, and is dropped at the next change; the document is
 * only changed through store_update (under its flock, or by compare-
 * and-set).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"

#define PAUSEDOC	"pause.json"
#define OWNER		"*"		/* the store's own (store.c) */
#define DAY		86400LL
#define FOREVER		(100 * 365 * DAY)	/* until resumed, s */

static int
holds(const struct pause_entry *e, time_t now)
{
	return e->since != 0 && (e->until == 0 || e->until > now);
}

/* Does a end after b (both holding)?  Until resumed is the latest. */
static int
ends_later(const struct pause_entry *a, const struct pause_entry *b)
{
	return b->until != 0 && (a->until == 0 || a->until > b->until);
}

/*
 * The rule: is an agent whose own pause is `own' paused at now, with
 * the fleet's `all'?  When both hold, the one that ends later is the
 * one shown.
 */
void
pause_rule(const struct pause_entry *own, const struct pause_entry *all,
    time_t now, struct pause_view *v)
{
	const struct pause_entry *e = NULL;

	memset(v, 0, sizeof *v);
	if (holds(own, now))
		e = own;
	if (holds(all, now) && (e == NULL || ends_later(all, e)))
		e = all;
	if (e == NULL)
		return;
	v->paused = 1;
	v->all = e == all;
	v->since = e->since;
	v->until = e->until;
}

/* The pause o (a field of the document; NULL or null: none) into e. */
static int
entry_parse(json_t *o, const char *field, struct pause_entry *e, char *err)
{
	json_t *u;

	memset(e, 0, sizeof *e);
	if (o == NULL || json_is_null(o))
		return 0;
	u = json_object_get(o, "until");
	if (!json_is_object(o) || clock_parse_utc(json_string_value(
	    json_object_get(o, "since")), &e->since) == -1 || u == NULL ||
	    (!json_is_null(u) && clock_parse_utc(json_string_value(u),
	    &e->until) == -1)) {
		store_bad_field(OWNER, PAUSEDOC, field, err);
		return -1;
	}
	return 0;
}

static json_t *
entry_json(const struct pause_entry *e)
{
	char since[32], until[32];

	clock_utc(e->since, since, sizeof since);
	clock_utc(e->until, until, sizeof until);
	return json_pack("{s:s,s:s?}", "since", since, "until", e->until ?
	    until : NULL);
}

/* The document as stored (NULL: none); -1 with err when it is not one. */
static int
doc_check(json_t *doc, char *err)
{
	json_t *a;

	if (doc == NULL)
		return 0;
	a = json_object_get(doc, "agents");
	if (a != NULL && !json_is_object(a)) {
		store_bad_field(OWNER, PAUSEDOC, "agents", err);
		return -1;
	}
	return 0;
}

/* Agent's pause (NULL: the fleet's) in doc. */
static int
doc_entry(json_t *doc, const char *agent, struct pause_entry *e, char *err)
{
	char field[HEART_IDMAX + 16];

	if (agent == NULL)
		return entry_parse(json_object_get(doc, "all"), "all", e, err);
	snprintf(field, sizeof field, "agents.%s", agent);
	return entry_parse(json_object_get(json_object_get(doc, "agents"),
	    agent), field, e, err);
}

/*
 * Is agent paused at now, by its own pause or the fleet's (agent NULL:
 * by the fleet's alone)?  1 paused, 0 not, -1 with err; v says by
 * which, since and until when.
 */
int
pause_peek(const char *agent, time_t now, struct pause_view *v, char *err)
{
	struct pause_entry own, all;
	json_t *doc;
	int r = -1;

	memset(v, 0, sizeof *v);
	if (store_get(OWNER, PAUSEDOC, &doc, err) == -1)
		return -1;
	memset(&own, 0, sizeof own);
	if (doc_check(doc, err) == 0 && doc_entry(doc, NULL, &all,
	    err) == 0 && (agent == NULL || doc_entry(doc, agent, &own,
	    err) == 0)) {
		pause_rule(&own, &all, now, v);
		r = v->paused;
	}
	json_decref(doc);
	return r;
}

/* A change: pause (until, 0: until resumed) or resume the agents named,
 * or with none the fleet (resume: every pause). */
struct pausex {
	char	*const *agents;
	size_t	 n;
	int	 resume;
	time_t	 until, now;
};

/* e as agents' id (NULL: the fleet's, returned), and *last moved to
 * when it ends (until resumed: far off). */
static json_t *
put(json_t *agents, const char *id, const struct pause_entry *e,
    time_t now, long long *last)
{
	long long end = e->until == 0 ? now + FOREVER : e->until;
	json_t *o = entry_json(e);

	if (end > *last)
		*last = end;
	if (id == NULL)
		return o;
	json_object_set_new(agents, id, o);
	return NULL;
}

/* Into agents, each agent's pause of cur that still holds (none when
 * x resumes every pause).  -1 with err when one does not read. */
static int
holding(json_t *cur, const struct pausex *x, json_t *agents,
    long long *last, char *err)
{
	struct pause_entry e;
	const char *id;
	json_t *o;

	json_object_foreach(json_object_get(cur, "agents"), id, o) {
		if (!id_valid(id)) {
			store_bad_field(OWNER, PAUSEDOC, "agents", err);
			return -1;
		}
		if (doc_entry(cur, id, &e, err) == -1)
			return -1;
		if (holds(&e, x->now) && !(x->resume && x->n == 0))
			put(agents, id, &e, x->now, last);
	}
	return 0;
}

/* The pauses of cur that still hold, each named in x dropped (resume)
 * or set (pause); with none named, the fleet's.  NULL with err. */
static json_t *
apply(json_t *cur, const struct pausex *x, long long *ttl, char *err)
{
	struct pause_entry all, e;
	json_t *agents = json_object(), *allo = NULL;
	long long last = 0;
	size_t i;

	if (doc_check(cur, err) == -1 || doc_entry(cur, NULL, &all, err) ==
	    -1 || holding(cur, x, agents, &last, err) == -1) {
		json_decref(agents);
		return NULL;
	}
	for (i = 0; i < x->n; i++) {
		if (x->resume) {
			json_object_del(agents, x->agents[i]);
			continue;
		}
		doc_entry(cur, x->agents[i], &e, err);	/* read: holding */
		if (!holds(&e, x->now))
			e.since = x->now;
		e.until = x->until;
		put(agents, x->agents[i], &e, x->now, &last);
	}
	if (!x->resume && x->n == 0) {
		if (!holds(&all, x->now))
			all.since = x->now;
		all.until = x->until;
	} else if (!holds(&all, x->now) || (x->resume && x->n == 0))
		all.since = 0;
	if (all.since != 0)
		allo = put(NULL, NULL, &all, x->now, &last);
	/* a server keeps it while a pause holds, and a day after */
	*ttl = (last > x->now ? last - x->now : 0) + DAY;
	return json_pack("{s:i,s:o,s:o}", "v", 1, "all", allo ? allo :
	    json_null(), "agents", agents);
}

static int
pausex_step(json_t *cur, json_t **next, long long *ttl, void *ctx,
    char *err)
{
	const struct pausex *x = ctx;
	char at[32];

	if ((*next = apply(cur, x, ttl, err)) == NULL)
		return -1;
	clock_utc(x->now, at, sizeof at);
	json_object_set_new(*next, "updated", json_string(at));
	return 0;
}

/*
 * Pause the agents[0..n) (n 0: the whole fleet, agents not yet known
 * included) from now until `until' (0: until resumed).  An agent
 * paused already keeps its since, and takes the new until.
 */
int
pause_set(char *const *agents, size_t n, time_t until, time_t now,
    char *err)
{
	struct pausex x = { agents, n, 0, until, now };

	return store_update(OWNER, PAUSEDOC, STATE_SYNC, pausex_step, &x,
	    err);
}

/* Resume the agents[0..n): their own pauses end (the fleet's, if it
 * holds, still holds them); n 0: every pause ends, the fleet's too. */
int
pause_clear(char *const *agents, size_t n, time_t now, char *err)
{
	struct pausex x = { agents, n, 1, 0, now };

	return store_update(OWNER, PAUSEDOC, STATE_SYNC, pausex_step, &x,
	    err);
}

/*
 * --until's TIME: a time as heart prints it (2026-11-22T05:00:00Z), or
 * a duration from now (dur.c: 2h, 1d, 1h30m); -1 with err unless it is
 * still to come.
 */
int
pause_until(const char *arg, time_t now, time_t *out, char *err)
{
	long long d;

	if (clock_parse_utc(arg, out) == -1) {
		if (dur_parse(arg, &d) == -1) {
			errf(err, "--until: %s: neither a time (2026-11-22T"
			    "05:00:00Z) nor a duration (2h, 1d, 1h30m)", arg);
			return -1;
		}
		*out = now + (time_t)d;
	}
	if (*out <= now) {
		errf(err, "--until: %s: that time has come already", arg);
		return -1;
	}
	return 0;
}

/* A wake's reason for v: by whom, since and until when. */
void
pause_why(const struct pause_view *v, char *buf, size_t n)
{
	char since[32], until[48];

	clock_utc(v->since, since, sizeof since);
	if (v->until != 0) {
		snprintf(until, sizeof until, "until ");
		clock_utc(v->until, until + 6, sizeof until - 6);
	} else
		snprintf(until, sizeof until, "until resumed");
	snprintf(buf, n, "paused by heart-cap pause%s since %s, %s",
	    v->all ? " --all (the whole fleet)" : "", since, until);
}

/* v as the status object's "paused": null when not paused. */
json_t *
pause_json(const struct pause_view *v)
{
	struct pause_entry e = { v->since, v->until };
	json_t *o;

	if (!v->paused)
		return json_null();
	o = entry_json(&e);
	json_object_set_new(o, "all", json_boolean(v->all));
	return o;
}
