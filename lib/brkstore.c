/*
 * brkstore.c - the breaker in the store: its document,
 * agents/ID/breaker.json, read into a struct brk and written from one;
 * each transition (brk.c's brk_step) done on the document as read and
 * written back whole by store_update, under agents/ID/breaker.lock or
 * by a server's compare-and-set; the events of a transition, made from
 * the names brk_step gave it once the write is done; and the status
 * object heart-breaker prints.
 *
 * Invariants: readers need no lock; a probe is only granted by a write
 * that no other writer came between.  A document is read whole or
 * refused (a field of the wrong type, an unknown state or trigger, an
 * open breaker without its until: store_bad_field names it), never
 * half taken, and one that does not parse is an error, never replaced;
 * a probe is read only from a half-open breaker; what is written is a
 * whole document, its times in UTC.  A document from before the window
 * (no failed_at, no window_failures) reads as no failure in it and no
 * window kept.  An event's time is its last field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartstore.h"

#define BRKFILE	"breaker.json"
#define KEEP	(30 * 86400LL)	/* a server keeps it after its last wait */

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

/* failed_at: the window's failure times, oldest first, at most
 * BRK_WINDOW_MAX of them. */
static int
get_failed(json_t *o, struct brk *b)
{
	json_t *j = json_object_get(o, "failed_at"), *e;
	size_t i;

	b->nfailed = 0;
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_array(j) || json_array_size(j) > BRK_WINDOW_MAX)
		return -1;
	json_array_foreach(j, i, e) {
		if (!json_is_string(e) || parse_utc(json_string_value(e),
		    &b->failed[i]) == -1 ||
		    (i > 0 && b->failed[i] < b->failed[i - 1]))
			return -1;
		b->nfailed++;
	}
	return 0;
}

/* window_failures kept: null or missing, none (0); 0, the window off
 * (-1); else the count. */
static int
get_wfails(json_t *o, long long *wf)
{
	json_t *j = json_object_get(o, "window_failures");

	if (state_count(o, "window_failures", wf) == -1 ||
	    *wf > BRK_WINDOW_MAX)
		return -1;
	if (json_is_integer(j) && *wf == 0)
		*wf = -1;
	return 0;
}

/* told: missing (a breaker from before the notices), not told */
static int
get_told(json_t *o, int *told)
{
	json_t *j = json_object_get(o, "told");

	*told = json_is_true(j);
	return j == NULL || json_is_boolean(j) ? 0 : -1;
}

static int
get_state(json_t *o, enum brk_state *st)
{
	json_t *j = json_object_get(o, "state");
	int i;

	if (!json_is_string(j))
		return -1;
	for (i = 0; i <= BRK_HALF_OPEN; i++)
		if (strcmp(json_string_value(j), brk_state_name(i)) == 0) {
			*st = (enum brk_state)i;
			return 0;
		}
	return -1;
}

/* Fill b from the stored JSON (NULL: none); -1 if it is not sound. */
static int
doc_parse(const char *agent, json_t *j, struct brk *b, char *err)
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
	else if (state_count(j, "llm_fails", &b->llm_fails) == -1)
		bad = "llm_fails";
	else if (state_count(j, "tool_fails", &b->tool_fails) == -1)
		bad = "tool_fails";
	else if (state_count(j, "cooldown_s", &b->cooldown) == -1)
		bad = "cooldown_s";
	else if (state_count(j, "base_s", &b->kept.cooldown) == -1)
		bad = "base_s";
	else if (state_count(j, "threshold", &b->kept.threshold) == -1)
		bad = "threshold";
	else if (state_count(j, "max_cooldown_s", &b->kept.max_cooldown) ==
	    -1)
		bad = "max_cooldown_s";
	else if (get_wfails(j, &b->kept.window_fails) == -1)
		bad = "window_failures";
	else if (state_count(j, "window_s", &b->kept.window_s) == -1)
		bad = "window_s";
	else if (get_failed(j, b) == -1)
		bad = "failed_at";
	else if (get_time(j, "until", b->state == BRK_OPEN ? &b->until :
	    &ignored) == -1 || (b->state == BRK_OPEN && b->until == 0))
		bad = "until";
	else if (get_time(j, "probe_at", &b->probe_at) == -1)
		bad = "probe_at";
	else if (state_count(j, "probe_pid", &b->probe_pid) == -1)
		bad = "probe_pid";
	else if (get_text(j, "probe_host", b->probe_host,
	    sizeof b->probe_host) == -1)
		bad = "probe_host";
	else if (get_text(j, "trigger", b->trigger, sizeof b->trigger) ==
	    -1 || (b->trigger[0] != '\0' && strcmp(b->trigger, "llm") != 0 &&
	    strcmp(b->trigger, "tool") != 0))
		bad = "trigger";
	else if (get_text(j, "reason", b->reason, sizeof b->reason) == -1)
		bad = "reason";
	else if (get_told(j, &b->told) == -1)
		bad = "told";
	if (bad != NULL) {
		store_bad_field(agent, BRKFILE, bad, err);
		return -1;
	}
	if (b->state != BRK_HALF_OPEN) {
		b->probe_at = b->probe_pid = 0;
		b->probe_host[0] = '\0';
	}
	return 0;
}

/* The kept window and its failures' times. */
static void
put_window(json_t *j, const struct brk *b)
{
	long long wf = b->kept.window_fails;
	json_t *a = json_array();
	char buf[32];
	int i;

	json_object_set_new(j, "window_failures", wf == 0 ? json_null() :
	    json_integer(wf > 0 ? wf : 0));
	json_object_set_new(j, "window_s", b->kept.window_s > 0 ?
	    json_integer(b->kept.window_s) : json_null());
	for (i = 0; i < b->nfailed; i++) {
		clock_utc(b->failed[i], buf, sizeof buf);
		json_array_append_new(a, json_string(buf));
	}
	json_object_set_new(j, "failed_at", a);
}

/* The document to write of b, agents/ID/BRKFILE. */
static json_t *
doc_of(const char *agent, const struct brk *b, time_t now)
{
	json_t *j;

	j = json_pack("{s:i,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "v", 1,
	    "agent", agent, "state", brk_state_name(b->state),
	    "llm_fails", (json_int_t)b->llm_fails,
	    "tool_fails", (json_int_t)b->tool_fails,
	    "cooldown_s", (json_int_t)b->cooldown,
	    "base_s", (json_int_t)b->kept.cooldown,
	    "threshold", (json_int_t)b->kept.threshold,
	    "max_cooldown_s", (json_int_t)b->kept.max_cooldown);
	put_time(j, "until", brk_next_go(b));
	put_time(j, "probe_at", b->probe_at);
	json_object_set_new(j, "probe_pid", b->probe_pid > 0 ?
	    json_integer(b->probe_pid) : json_null());
	json_object_set_new(j, "probe_host", b->probe_pid > 0 ?
	    json_string(b->probe_host) : json_null());
	json_object_set_new(j, "trigger", json_string(b->trigger));
	json_object_set_new(j, "reason", json_string(b->reason));
	json_object_set_new(j, "told", json_boolean(b->told));
	put_window(j, b);
	put_time(j, "updated", now);
	return j;
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

/* The "open" event of b, just opened from state `from' (o: how). */
static void
open_event(const char *agent, const struct brk *b, const char *from,
    const struct brk_out *o, json_t *events, time_t now)
{
	char until[32];
	json_t *e;

	clock_utc(b->until, until, sizeof until);
	e = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:I,s:I}",
	    "event", "open", "agent", agent, "trigger", b->trigger,
	    "cooldown_s", (json_int_t)b->cooldown, "until", until,
	    "reason", b->reason, "from", from,
	    "kind", o->kind != NULL ? o->kind : "?",
	    "llm_fails", (json_int_t)b->llm_fails,
	    "tool_fails", (json_int_t)b->tool_fails);
	if (o->notice)
		json_object_set_new(e, "notice", json_true());
	emit(events, e, now);
}

/* The events of a transition done, in order, from the names in o;
 * b is the breaker after it. */
static void
doc_events(const char *agent, const struct brk *b,
    const struct brk_out *o, json_t *events, time_t now)
{
	char name[24], *by;
	json_t *e;
	int i;

	for (i = 0; i < o->nev && i < BRK_MAXEV; i++) {
		snprintf(name, sizeof name, "%s", o->ev[i]);
		if ((by = strchr(name, '/')) != NULL)
			*by++ = '\0';
		if (strcmp(name, "open") == 0) {
			open_event(agent, b, by != NULL ? by : "?", o,
			    events, now);
			continue;
		}
		e = event(name, agent);
		if (by != NULL)
			json_object_set_new(e, "by", json_string(by));
		if (strcmp(name, "closed") == 0 && o->notice)
			json_object_set_new(e, "notice", json_true());
		emit(events, e, now);
	}
}

/* An outcome's flags: one LLM flag and one tool flag at most,
 * BRK_LLM_CONFIG only with BRK_LLM_FAIL, and BRK_TELL with others. */
static int
valid_flags(int f)
{
	return (f & ~BRK_TELL) != 0 && (f & ~(BRK_LLM_FAIL | BRK_TOOL_FAIL |
	    BRK_LLM_OK | BRK_TOOL_OK | BRK_LLM_CONFIG | BRK_TELL)) == 0 &&
	    (f & (BRK_LLM_OK | BRK_LLM_FAIL)) != (BRK_LLM_OK | BRK_LLM_FAIL) &&
	    (f & (BRK_TOOL_OK | BRK_TOOL_FAIL)) !=
	    (BRK_TOOL_OK | BRK_TOOL_FAIL) &&
	    (!(f & BRK_LLM_CONFIG) || (f & BRK_LLM_FAIL));
}

/* One transition in the store: what store_update asks brk_step. */
struct brkx {
	const char *agent;
	enum brk_op op;
	const struct brk_conf *given;
	time_t	 now;
	struct brk_ask ask;
	struct brk b;
	struct brk_out o;
};

static int
brkx_step(json_t *cur, json_t **next, long long *ttl, void *ctx, char *err)
{
	struct brkx *x = ctx;
	time_t go;

	if (doc_parse(x->agent, cur, &x->b, err) == -1)
		return -1;
	if (brk_step(&x->b, x->op, x->given, x->now, &x->ask, &x->o))
		*next = doc_of(x->agent, &x->b, x->now);
	go = brk_next_go(&x->b);
	*ttl = KEEP + (go > x->now ? go - x->now : 0);
	return 0;
}

/* Who we are, for a probe: this process on this host. */
static void
whoami(struct brk_ask *me)
{
	static char host[64];

	if (host[0] == '\0' && (gethostname(host, sizeof host) == -1 ||
	    host[0] == '\0'))
		snprintf(host, sizeof host, "localhost");
	host[sizeof host - 1] = '\0';
	me->pid = getpid();
	me->host = host;
}

/* Read b (no write, no lock); -1 with err. */
static int
peek(const char *agent, struct brk *b, char *err)
{
	json_t *j;
	int r;

	if (store_get(agent, BRKFILE, &j, err) == -1)
		return -1;
	r = doc_parse(agent, j, b, err);
	json_decref(j);
	return r;
}

/* Do op in the store; its events appended to `events' once written. */
static int
transition(const char *agent, enum brk_op op, const struct brk_conf *given,
    time_t now, const struct brk_ask *rec, json_t *events, struct brkx *x,
    char *err)
{
	memset(x, 0, sizeof *x);
	x->agent = agent;
	x->op = op;
	x->given = given;
	x->now = now;
	if (rec != NULL)
		x->ask = *rec;
	whoami(&x->ask);
	if (store_update(agent, BRKFILE, STATE_SYNC, brkx_step, x,
	    err) == -1) {
		x->o.probe = 0;
		return -1;
	}
	doc_events(agent, &x->b, &x->o, events, now);
	return 0;
}

/*
 * May a wake go now?  *allowed = 1 when closed, or when this caller was
 * granted the half-open probe (then *probe = 1).  Transitions (open ->
 * half_open) are appended to `events' (a JSON array, may be NULL).
 */
int
brk_check(const char *agent, const struct brk_conf *conf, time_t now,
    int *allowed, int *probe, struct brk_view *vo, json_t *events,
    char *err)
{
	struct brkx x;

	*allowed = *probe = 0;
	memset(&x, 0, sizeof x);
	if (peek(agent, &x.b, err) == -1)
		return -1;
	/* the common case, closed: a read, no write */
	whoami(&x.ask);
	if (brk_step(&x.b, BRK_CHECK, conf, now, &x.ask, &x.o) &&
	    transition(agent, BRK_CHECK, conf, now, NULL, events, &x,
	    err) == -1)
		return -1;
	*probe = x.o.probe;
	*allowed = x.b.state == BRK_CLOSED || *probe;
	if (vo != NULL)
		*vo = x.o.view;
	return 0;
}

/*
 * Hand back a probe that was granted but not used (e.g. the cap then
 * refused the wake): the breaker stays half-open, a later caller may
 * probe.
 */
int
brk_giveback(const char *agent, time_t now, char *err)
{
	struct brkx x;

	if (peek(agent, &x.b, err) == -1)
		return -1;
	if (x.b.state != BRK_HALF_OPEN || x.b.probe_at == 0)
		return 0;
	return transition(agent, BRK_GIVEBACK, NULL, now, NULL, NULL, &x,
	    err);
}

/*
 * Feed an outcome (BRK_* flags) with a human reason (may be NULL); with
 * BRK_LLM_FAIL, a hold later than now keeps the breaker open at least
 * until then (a provider's Retry-After), opening it now if need be (0:
 * none); transitions are appended to `events'.
 */
int
brk_record(const char *agent, const struct brk_conf *conf, time_t now,
    int flags, time_t hold, const char *reason, json_t *events, char *err)
{
	struct brk_ask rec = { 0, NULL, flags, hold, NULL };
	char why[256], *scrubbed;
	struct brkx x;

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
	/*
	 * The common case, a success on a closed breaker with no failure
	 * counted: a read, no lock, no write.  brk_step is a function of
	 * what it is given, so an outcome that changes nothing in what
	 * was read is the transition at the moment of the read.
	 */
	if (peek(agent, &x.b, err) == -1)
		return -1;
	whoami(&rec);
	if (!brk_step(&x.b, BRK_RECORD, conf, now, &rec, &x.o))
		return 0;
	return transition(agent, BRK_RECORD, conf, now, &rec, events, &x,
	    err);
}

int
brk_peek(const char *agent, const struct brk_conf *conf, time_t now,
    struct brk_view *v, char *err)
{
	struct brk_out o;
	struct brk b;

	if (peek(agent, &b, err) == -1)
		return -1;
	brk_step(&b, BRK_PEEK, conf, now, NULL, &o);
	*v = o.view;
	return 0;
}

/* Close the breaker and clear both counts (an operator's hand). */
int
brk_reset(const char *agent, json_t *events, char *err)
{
	struct brkx x;

	if (peek(agent, &x.b, err) == -1)
		return -1;
	if (!x.b.exists)
		return 0;	/* never used: closed already */
	return transition(agent, BRK_RESET, NULL, time(NULL), NULL, events,
	    &x, err);
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
	json_object_set_new(j, "window_fails",
	    json_integer(v->window_fails));
	json_object_set_new(j, "window_failures",
	    json_integer(v->conf.window_fails));
	json_object_set_new(j, "window_s", json_integer(v->conf.window_s));
	json_object_set_new(j, "threshold", json_integer(v->conf.threshold));
	json_object_set_new(j, "max_cooldown_s",
	    json_integer(v->conf.max_cooldown));
	return j;
}
