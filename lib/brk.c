/*
 * brk.c - the dual-trigger circuit breaker (paper section 6), shared by
 * every process that wakes an agent.
 *
 * One breaker per agent, in agents/ID/breaker.json: closed, open or
 * half_open, with a count of consecutive LLM failures and one of tool
 * failures.  Either count reaching the threshold opens it for the
 * current cooldown; once that has passed it is half-open and exactly
 * one caller is granted the probe, whose result closes it (cooldown
 * back to base) or reopens it (cooldown doubled up to max_cooldown).
 *
 * Invariants: the file is only ever replaced by rename under
 * agents/ID/breaker.lock, so readers need no lock; a probe is only
 * granted under that lock, after reading the file again; an open
 * breaker whose cooldown has passed is half-open, whether or not the
 * file says so yet (the next writer stores the transition); a probe
 * that neither reports nor is handed back within BRK_PROBE_LEASE
 * seconds is presumed dead.  A file that does not parse is an error,
 * never replaced.
 *
 * With a server store in force (store.h), the store does each
 * transition, by the same rules, and hands back the breaker after it
 * and the transitions' names; the events are made here, for both.
 */
#include <sys/file.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

#define BRKFILE	"breaker.json"
#define BRKLOCK	"breaker.lock"
#define FAILS	(BRK_LLM_FAIL | BRK_TOOL_FAIL)

static const char *const names[] = { "closed", "open", "half_open" };

void
brk_from_soul(const struct soul *s, struct brk_conf *c)
{
	c->threshold = 3;
	c->cooldown = 15 * 60;
	c->max_cooldown = 2 * 3600;
	if (s == NULL)
		return;
	if (s->brk_threshold > 0)
		c->threshold = s->brk_threshold;
	if (s->brk_cooldown > 0)
		c->cooldown = s->brk_cooldown;
	if (s->brk_max_cooldown > 0)
		c->max_cooldown = s->brk_max_cooldown;
}

const char *
brk_state_name(enum brk_state st)
{
	if ((unsigned)st > BRK_HALF_OPEN)
		return "?";
	return names[st];
}

/* The outcome words of heart-breaker record; tool-fail: the model
 * answered, so it resets the LLM count. */
int
brk_outcome(const char *word)
{
	if (strcmp(word, "ok") == 0)
		return BRK_LLM_OK | BRK_TOOL_OK;
	if (strcmp(word, "llm-fail") == 0)
		return BRK_LLM_FAIL;
	if (strcmp(word, "tool-fail") == 0)
		return BRK_LLM_OK | BRK_TOOL_FAIL;
	return -1;
}

/*
 * The keys in force, made usable (threshold and cooldown at least 1,
 * max >= base): those given (a soul's); else, given NULL, those kept
 * with b, else the defaults.  Returns 1 when they are the kept ones.
 */
static int
keys(const struct brk_conf *c, const struct brk *b, struct brk_conf *o)
{
	int kept = c == NULL && b != NULL && b->base > 0;

	if (c != NULL)
		*o = *c;
	else
		brk_from_soul(NULL, o);
	if (kept)
		o->cooldown = b->base;
	if (c == NULL && b != NULL && b->threshold > 0)
		o->threshold = b->threshold;
	if (c == NULL && b != NULL && b->max > 0)
		o->max_cooldown = b->max;
	if (o->threshold < 1)
		o->threshold = 1;
	if (o->cooldown < 1)
		o->cooldown = 1;
	if (o->max_cooldown < o->cooldown)
		o->max_cooldown = o->cooldown;
	return kept;
}

static int
parse_utc(const char *s, time_t *t)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof tm);
	if ((end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) == NULL ||
	    *end != '\0')
		return -1;
	*t = timegm(&tm);
	return *t > 0 ? 0 : -1;
}

static void
put_time(json_t *o, const char *key, time_t t)
{
	char buf[32];

	if (t <= 0) {
		json_object_set_new(o, key, json_null());
		return;
	}
	clock_utc(t, buf, sizeof buf);
	json_object_set_new(o, key, json_string(buf));
}

/* Field readers: a missing (or null) field is 0 or "", a wrong one -1. */
static int
get_count(json_t *o, const char *key, long long *v)
{
	json_t *j = json_object_get(o, key);

	*v = 0;
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return -1;
	*v = json_integer_value(j);
	return 0;
}

static int
get_time(json_t *o, const char *key, time_t *t)
{
	json_t *j = json_object_get(o, key);

	*t = 0;
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return -1;
	return parse_utc(json_string_value(j), t);
}

static int
get_text(json_t *o, const char *key, char *buf, size_t n)
{
	json_t *j = json_object_get(o, key);

	buf[0] = '\0';
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return -1;
	text_line(buf, n, json_string_value(j),
	    strlen(json_string_value(j)));
	return 0;
}

static int
get_state(json_t *o, enum brk_state *st)
{
	json_t *j = json_object_get(o, "state");
	int i;

	if (!json_is_string(j))
		return -1;
	for (i = 0; i <= BRK_HALF_OPEN; i++)
		if (strcmp(json_string_value(j), names[i]) == 0) {
			*st = (enum brk_state)i;
			return 0;
		}
	return -1;
}

/* Fill b from the file's JSON (NULL: no file); -1 if it is not sound. */
static int
parse(const char *dir, json_t *j, struct brk *b, char *err)
{
	const char *bad = NULL;
	time_t ignored;

	memset(b, 0, sizeof *b);
	b->state = BRK_CLOSED;
	if (j == NULL)
		return 0;
	b->exists = 1;
	if (get_state(j, &b->state) == -1)
		bad = "state";
	else if (get_count(j, "llm_fails", &b->llm_fails) == -1)
		bad = "llm_fails";
	else if (get_count(j, "tool_fails", &b->tool_fails) == -1)
		bad = "tool_fails";
	else if (get_count(j, "cooldown_s", &b->cooldown) == -1)
		bad = "cooldown_s";
	else if (get_count(j, "base_s", &b->base) == -1)
		bad = "base_s";
	else if (get_count(j, "threshold", &b->threshold) == -1)
		bad = "threshold";
	else if (get_count(j, "max_cooldown_s", &b->max) == -1)
		bad = "max_cooldown_s";
	else if (get_time(j, "until", b->state == BRK_OPEN ? &b->until :
	    &ignored) == -1 || (b->state == BRK_OPEN && b->until == 0))
		bad = "until";
	else if (get_time(j, "probe_at", &b->probe_at) == -1)
		bad = "probe_at";
	else if (get_count(j, "probe_pid", &b->probe_pid) == -1)
		bad = "probe_pid";
	else if (get_text(j, "trigger", b->trigger, sizeof b->trigger) ==
	    -1 || (b->trigger[0] != '\0' && strcmp(b->trigger, "llm") != 0 &&
	    strcmp(b->trigger, "tool") != 0))
		bad = "trigger";
	else if (get_text(j, "reason", b->reason, sizeof b->reason) == -1)
		bad = "reason";
	if (bad != NULL) {
		errf(err, "%s/%s: field '%s' is missing or not valid; fix "
		    "or remove the file by hand", dir, BRKFILE, bad);
		return -1;
	}
	if (b->state != BRK_HALF_OPEN)
		b->probe_at = b->probe_pid = 0;
	return 0;
}

static int
load(const char *dir, struct brk *b, char *err)
{
	json_t *j;
	int r;

	if (state_read_json(dir, BRKFILE, &j, err) == -1)
		return -1;
	r = parse(dir, j, b, err);
	json_decref(j);
	return r;
}

static time_t
next_go(const struct brk *b)
{
	if (b->state == BRK_OPEN)
		return b->until;
	if (b->state == BRK_HALF_OPEN && b->probe_at > 0)
		return b->probe_at + BRK_PROBE_LEASE;
	return 0;
}

static int
save(const char *dir, const char *agent, const struct brk *b, time_t now,
    char *err)
{
	json_t *j;
	int r;

	j = json_pack("{s:i,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "v", 1,
	    "agent", agent, "state", names[b->state],
	    "llm_fails", (json_int_t)b->llm_fails,
	    "tool_fails", (json_int_t)b->tool_fails,
	    "cooldown_s", (json_int_t)b->cooldown,
	    "base_s", (json_int_t)b->base,
	    "threshold", (json_int_t)b->threshold,
	    "max_cooldown_s", (json_int_t)b->max);
	put_time(j, "until", next_go(b));
	put_time(j, "probe_at", b->probe_at);
	json_object_set_new(j, "probe_pid", b->probe_pid > 0 ?
	    json_integer(b->probe_pid) : json_null());
	json_object_set_new(j, "trigger", json_string(b->trigger));
	json_object_set_new(j, "reason", json_string(b->reason));
	put_time(j, "updated", now);
	r = state_write_json(dir, BRKFILE, j, err);
	json_decref(j);
	return r;
}

static json_t *
event(const char *name, const char *agent)
{
	return json_pack("{s:s,s:s}", "event", name, "agent", agent);
}

/* Append e to events, with the time as its last field; e is stolen. */
static void
emit(json_t *events, json_t *e, time_t now)
{
	put_time(e, "at", now);
	if (events != NULL)
		json_array_append(events, e);
	json_decref(e);
}

/* Drop what this call appended to events when it then failed. */
static void
unemit(json_t *events, size_t n)
{
	while (events != NULL && json_array_size(events) > n)
		json_array_remove(events, json_array_size(events) - 1);
}

/* The "open" event of b, just opened from state `from'. */
static void
open_event(const char *agent, const struct brk *b, const char *from,
    json_t *events, time_t now)
{
	char until[32];
	json_t *e;

	clock_utc(b->until, until, sizeof until);
	e = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:I,s:I}",
	    "event", "open", "agent", agent, "trigger", b->trigger,
	    "cooldown_s", (json_int_t)b->cooldown, "until", until,
	    "reason", b->reason, "from", from,
	    "llm_fails", (json_int_t)b->llm_fails,
	    "tool_fails", (json_int_t)b->tool_fails);
	emit(events, e, now);
}

/*
 * Bring b up to `now': never let a clock set back stretch a cooldown
 * or a probe lease, turn an open breaker whose cooldown has passed
 * half-open, and forget a probe whose lease has run out.  Returns 1
 * when b changed.
 */
static int
advance(const char *agent, const struct brk_conf *c, struct brk *b,
    time_t now, json_t *events)
{
	int changed = 0;

	if (b->state == BRK_CLOSED ? b->cooldown != c->cooldown :
	    b->cooldown <= 0) {
		b->cooldown = c->cooldown;	/* closed: always the base */
		changed = 1;
	}
	if (b->state == BRK_OPEN && b->until - now > b->cooldown) {
		b->until = now + b->cooldown;
		changed = 1;
	}
	if (b->state == BRK_OPEN && now >= b->until) {
		b->state = BRK_HALF_OPEN;
		b->until = b->probe_at = b->probe_pid = 0;
		emit(events, event("half_open", agent), now);
		changed = 1;
	}
	if (b->state == BRK_HALF_OPEN && b->probe_at > now) {
		b->probe_at = now;
		changed = 1;
	}
	if (b->state == BRK_HALF_OPEN && b->probe_at > 0 &&
	    now >= b->probe_at + BRK_PROBE_LEASE) {
		b->probe_at = b->probe_pid = 0;
		changed = 1;
	}
	return changed;
}

/* Keep the keys given (a soul's) with b; 1 when b changed.  Without
 * them (NULL) b keeps what it had: defaults are never kept. */
static int
keep(const struct brk_conf *given, const struct brk_conf *c, struct brk *b)
{
	if (given == NULL || (b->base == c->cooldown &&
	    b->threshold == c->threshold && b->max == c->max_cooldown))
		return 0;
	b->base = c->cooldown;
	b->threshold = c->threshold;
	b->max = c->max_cooldown;
	return 1;
}

/* Does a check have to take the lock (and maybe write)? */
static int
check_needs_lock(const struct brk *b, time_t now)
{
	switch (b->state) {
	case BRK_CLOSED:
		return 0;
	case BRK_OPEN:
		return now >= b->until || b->cooldown <= 0 ||
		    b->until - now > b->cooldown;
	case BRK_HALF_OPEN:
		return b->probe_at == 0 || b->probe_at > now ||
		    now >= b->probe_at + BRK_PROBE_LEASE;
	}
	return 1;
}

/* The view of b, with the keys in force (those given, else kept). */
static void
to_view(const struct brk *b, const struct brk_conf *given,
    struct brk_view *v)
{
	struct brk_conf kc, *c = &kc;

	memset(v, 0, sizeof *v);
	v->kept = keys(given, b, c);
	v->conf = kc;
	v->state = b->state;
	v->llm_fails = b->llm_fails;
	v->tool_fails = b->tool_fails;
	v->cooldown = b->state == BRK_CLOSED || b->cooldown <= 0 ?
	    c->cooldown : b->cooldown;
	v->until = next_go(b);
	v->probe_at = b->state == BRK_HALF_OPEN ? b->probe_at : 0;
	snprintf(v->trigger, sizeof v->trigger, "%s", b->trigger);
	snprintf(v->reason, sizeof v->reason, "%s", b->reason);
}

/* Lock the agent's breaker (creating its directory) and read it again. */
static int
begin(const char *agent, char *dir, size_t dirn, struct brk *b, char *err)
{
	int fd;

	if (state_agent_dir(agent, 1, dir, dirn, err) == -1)
		return -1;
	if ((fd = state_lock(dir, BRKLOCK, LOCK_EX, err)) < 0)
		return -1;
	if (load(dir, b, err) == -1) {
		state_unlock(fd);
		return -1;
	}
	return fd;
}

/*
 * Hand a transition to the server store, then make its events, in
 * order, from the names it gives back.
 */
static int
remote(const struct store_ops *st, const char *agent, enum brk_op op,
    const struct brk_conf *c, time_t now, const struct brk_rec *rec,
    struct brk_out *o, json_t *events, char *err)
{
	static const struct brk_rec none = { 0, 0, NULL };
	struct brk_conf n;
	char name[24], *by;
	json_t *e;
	int i;

	memset(o, 0, sizeof *o);
	if (c != NULL)
		keys(c, NULL, &n);
	if (st->brk(agent, op, c != NULL ? &n : NULL, now, rec != NULL ? rec :
	    &none, o,
	    err) == -1)
		return -1;
	for (i = 0; i < o->nev && i < STORE_MAXEV; i++) {
		snprintf(name, sizeof name, "%s", o->ev[i]);
		if ((by = strchr(name, '/')) != NULL)
			*by++ = '\0';
		if (strcmp(name, "open") == 0) {
			open_event(agent, &o->b, by != NULL ? by : "?",
			    events, now);
			continue;
		}
		e = event(name, agent);
		if (by != NULL)
			json_object_set_new(e, "by", json_string(by));
		emit(events, e, now);
	}
	return 0;
}

int
brk_check(const char *agent, const struct brk_conf *conf, time_t now,
    int *allowed, int *probe, struct brk_view *vo, json_t *events,
    char *err)
{
	size_t nev = json_array_size(events);
	const struct store_ops *st;
	struct brk_conf c;
	struct brk_out o;
	char dir[4096];
	struct brk b;
	int fd, changed, r = 0;

	*allowed = *probe = 0;
	if ((st = store_ops()) != NULL) {
		if ((r = remote(st, agent, BRK_CHECK, conf, now, NULL, &o,
		    events, err)) == 0) {
			*probe = o.probe;
			*allowed = o.b.state == BRK_CLOSED || o.probe;
			if (vo != NULL)
				to_view(&o.b, conf, vo);
		}
		return r;
	}
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1 ||
	    load(dir, &b, err) == -1)
		return -1;
	if (check_needs_lock(&b, now)) {
		if ((fd = begin(agent, dir, sizeof dir, &b, err)) < 0)
			return -1;
		keys(conf, &b, &c);
		changed = advance(agent, &c, &b, now, events);
		changed |= keep(conf, &c, &b);
		if (b.state == BRK_HALF_OPEN && b.probe_at == 0) {
			b.probe_at = now;
			b.probe_pid = getpid();
			*probe = changed = 1;
		}
		if (changed && (r = save(dir, agent, &b, now, err)) == -1) {
			unemit(events, nev);
			*probe = 0;
		}
		state_unlock(fd);
	}
	*allowed = r == 0 && (b.state == BRK_CLOSED || *probe);
	if (vo != NULL)
		to_view(&b, conf, vo);
	return r;
}

int
brk_giveback(const char *agent, time_t now, char *err)
{
	const struct store_ops *st = store_ops();
	struct brk_out o;
	char dir[4096];
	struct brk b;
	int fd, r = 0;

	if (st != NULL)
		return remote(st, agent, BRK_GIVEBACK, NULL, now, NULL, &o,
		    NULL, err);
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1 ||
	    load(dir, &b, err) == -1)
		return -1;
	if (b.state != BRK_HALF_OPEN || b.probe_at == 0)
		return 0;
	if ((fd = begin(agent, dir, sizeof dir, &b, err)) < 0)
		return -1;
	if (b.state == BRK_HALF_OPEN && b.probe_at != 0 &&
	    (b.probe_pid == 0 || b.probe_pid == getpid())) {
		b.probe_at = b.probe_pid = 0;
		r = save(dir, agent, &b, now, err);
	}
	state_unlock(fd);
	return r;
}

/*
 * Keep an open breaker open until t at least: its cooldown grows with
 * it, so that a clock set back never stretches it further (advance).
 * Returns 1 when b changed.
 */
static int
lengthen(struct brk *b, time_t now, time_t t)
{
	if (t <= b->until)
		return 0;
	b->until = t;
	if (b->cooldown < t - now)
		b->cooldown = t - now;
	return 1;
}

/* The cooldown of an opening: the base, doubling from the last up to
 * max_cooldown, or max_cooldown at once for a failure a person must
 * fix. */
static long long
next_cooldown(const struct brk_conf *c, const struct brk *b, int flags)
{
	long long cd;

	if (flags & BRK_LLM_CONFIG)
		return c->max_cooldown;
	if (b->state == BRK_CLOSED || b->cooldown <= 0)
		cd = c->cooldown;
	else if (b->cooldown > c->max_cooldown / 2)
		cd = c->max_cooldown;
	else
		cd = b->cooldown * 2;
	return cd < c->cooldown ? c->cooldown : cd;
}

/* Open b now for cooldown seconds, or until hold if that is later. */
static void
open_now(const char *agent, struct brk *b, time_t now, const char *trigger,
    long long cooldown, time_t hold, json_t *events)
{
	const char *from = names[b->state];

	b->state = BRK_OPEN;
	b->cooldown = cooldown;
	b->until = now + cooldown;
	lengthen(b, now, hold);
	b->probe_at = b->probe_pid = 0;
	snprintf(b->trigger, sizeof b->trigger, "%s", trigger);
	open_event(agent, b, from, events, now);
}

/* The counts after an outcome; 1 when they changed. */
static int
count(struct brk *b, const struct brk_rec *rec)
{
	long long l = b->llm_fails, t = b->tool_fails;
	int flags = rec->flags;

	if (flags & BRK_LLM_OK)
		b->llm_fails = 0;
	if (flags & BRK_LLM_FAIL)
		b->llm_fails++;
	if (flags & BRK_TOOL_OK)
		b->tool_fails = 0;
	if (flags & BRK_TOOL_FAIL)
		b->tool_fails++;
	if (flags & FAILS)
		snprintf(b->reason, sizeof b->reason, "%s", rec->reason);
	return l != b->llm_fails || t != b->tool_fails;
}

static int
valid_flags(int f)
{
	return f != 0 && (f & ~(FAILS | BRK_LLM_OK | BRK_TOOL_OK |
	    BRK_LLM_CONFIG)) == 0 &&
	    (f & (BRK_LLM_OK | BRK_LLM_FAIL)) != (BRK_LLM_OK | BRK_LLM_FAIL) &&
	    (f & (BRK_TOOL_OK | BRK_TOOL_FAIL)) !=
	    (BRK_TOOL_OK | BRK_TOOL_FAIL) &&
	    (!(f & BRK_LLM_CONFIG) || (f & BRK_LLM_FAIL));
}

/*
 * Apply an outcome to b under the lock; 1 when b changed.  A hold
 * alone (a closed breaker under its threshold) opens it until then,
 * and no longer.
 */
static int
apply(const char *agent, const struct brk_conf *c, struct brk *b,
    time_t now, const struct brk_rec *rec, json_t *events)
{
	int changed = count(b, rec), flags = rec->flags;
	const char *trig = (flags & BRK_LLM_FAIL) ? "llm" : "tool";
	long long cd = next_cooldown(c, b, flags);
	json_t *e;

	switch (b->state) {
	case BRK_HALF_OPEN:	/* the probe's result */
		if (flags & FAILS) {
			open_now(agent, b, now, trig, cd, rec->hold, events);
			return 1;
		}
		b->state = BRK_CLOSED;
		b->llm_fails = b->tool_fails = 0;
		b->cooldown = c->cooldown;
		b->until = b->probe_at = b->probe_pid = 0;
		b->trigger[0] = '\0';
		e = event("closed", agent);
		json_object_set_new(e, "by", json_string("probe"));
		emit(events, e, now);
		return 1;
	case BRK_CLOSED:
		if ((flags & BRK_LLM_CONFIG) || b->llm_fails >= c->threshold)
			open_now(agent, b, now, "llm", cd, rec->hold, events);
		else if (b->tool_fails >= c->threshold)
			open_now(agent, b, now, "tool", cd, rec->hold, events);
		else if (rec->hold > now)
			open_now(agent, b, now, "llm", 0, rec->hold, events);
		break;
	case BRK_OPEN:		/* late news: counted; it may hold longer */
		if (flags & BRK_LLM_CONFIG)
			changed |= lengthen(b, now, now + c->max_cooldown);
		changed |= lengthen(b, now, rec->hold);
		break;
	}
	return changed || (flags & FAILS);
}

int
brk_record(const char *agent, const struct brk_conf *conf, time_t now,
    int flags, time_t hold, const char *reason, json_t *events, char *err)
{
	size_t nev = json_array_size(events);
	const struct store_ops *st = store_ops();
	struct brk_rec rec = { flags, hold, NULL };
	struct brk_conf c;
	struct brk_out o;
	char dir[4096], why[256], *scrubbed;
	struct brk b;
	int fd, changed, r = 0;

	if (!valid_flags(flags) || (hold > now && !(flags & BRK_LLM_FAIL))) {
		errf(err, "brk_record: bad outcome flags %#x", flags);
		return -1;
	}
	if (reason == NULL)
		reason = (flags & BRK_LLM_FAIL) ? "llm failure" :
		    "tool failure";
	/* no secret, on one line: it is shown and stored */
	scrubbed = secret_dup(reason);
	text_line(why, sizeof why, scrubbed, strlen(scrubbed));
	free(scrubbed);
	rec.reason = why;
	if (st != NULL)
		return remote(st, agent, BRK_RECORD, conf, now, &rec, &o,
		    events, err);
	if ((fd = begin(agent, dir, sizeof dir, &b, err)) < 0)
		return -1;
	keys(conf, &b, &c);
	changed = advance(agent, &c, &b, now, events);
	changed |= keep(conf, &c, &b);
	changed |= apply(agent, &c, &b, now, &rec, events);
	if ((changed || !b.exists) &&
	    (r = save(dir, agent, &b, now, err)) == -1)
		unemit(events, nev);
	state_unlock(fd);
	return r;
}

int
brk_peek(const char *agent, const struct brk_conf *conf, time_t now,
    struct brk_view *v, char *err)
{
	const struct store_ops *st = store_ops();
	struct brk_conf c;
	struct brk_out o;
	char dir[4096];
	struct brk b;

	if (st != NULL) {
		if (remote(st, agent, BRK_PEEK, conf, now, NULL, &o, NULL,
		    err) == -1)
			return -1;
		to_view(&o.b, conf, v);
		return 0;
	}
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1 ||
	    load(dir, &b, err) == -1)
		return -1;
	keys(conf, &b, &c);
	advance(agent, &c, &b, now, NULL);
	to_view(&b, conf, v);
	return 0;
}

/* Close the breaker and clear both counts (an operator's hand). */
int
brk_reset(const char *agent, json_t *events, char *err)
{
	size_t nev = json_array_size(events);
	const struct store_ops *st = store_ops();
	time_t now = time(NULL);
	struct brk_out o;
	char dir[4096];
	struct brk b;
	json_t *e;
	int fd, r;

	if (st != NULL)
		return remote(st, agent, BRK_RESET, NULL, now, NULL, &o,
		    events, err);
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1 ||
	    load(dir, &b, err) == -1)
		return -1;
	if (!b.exists)
		return 0;	/* never used: closed already */
	if ((fd = begin(agent, dir, sizeof dir, &b, err)) < 0)
		return -1;
	if (b.state != BRK_CLOSED) {
		e = event("closed", agent);
		json_object_set_new(e, "by", json_string("reset"));
		emit(events, e, now);
	}
	b.state = BRK_CLOSED;
	b.llm_fails = b.tool_fails = 0;
	if (b.base > 0)
		b.cooldown = b.base;
	b.until = b.probe_at = b.probe_pid = 0;
	b.trigger[0] = b.reason[0] = '\0';
	if ((r = save(dir, agent, &b, now, err)) == -1)
		unemit(events, nev);
	state_unlock(fd);
	return r;
}

/* The status object heart-breaker prints, one per agent. */
json_t *
brk_json(const char *agent, const struct brk_view *v, time_t now)
{
	json_t *j;

	j = json_pack("{s:s,s:s,s:I,s:I,s:I}", "agent", agent,
	    "state", brk_state_name(v->state),
	    "llm_fails", (json_int_t)v->llm_fails,
	    "tool_fails", (json_int_t)v->tool_fails,
	    "cooldown_s", (json_int_t)v->cooldown);
	put_time(j, "until", v->until);
	json_object_set_new(j, "wait_s", json_integer(v->until > now ?
	    (json_int_t)(v->until - now) : 0));
	put_time(j, "probe_at", v->probe_at);
	json_object_set_new(j, "trigger", json_string(v->trigger));
	json_object_set_new(j, "reason", json_string(v->reason));
	json_object_set_new(j, "threshold", json_integer(v->conf.threshold));
	json_object_set_new(j, "max_cooldown_s",
	    json_integer(v->conf.max_cooldown));
	return j;
}
