/*
 * run.c - one wake of one agent, start to end: the lock, the gates
 * (wake.c), the chamber's gate program (gate.c), the breaker, the
 * account's hold and the cap (admit.c), then the triage model
 * (triage.c) and the conversation with the model and its tools, and
 * after it the outcome told to the breaker and the counters (talk.c),
 * and the wake result (heart-wake(1), THE WAKE RESULT).  --explain, the same
 * gates asked without a wake, is explain.c's.
 *
 * Invariants: nothing is sent before every gate has passed, the gate
 * program included; the cap is taken last, so a skipped wake never
 * spends it, and a half-open probe granted to a wake that the cap then
 * refuses is handed back; a wake sends at most one request to the
 * triage endpoint, if there is one, besides talk.c's.
 *
 * A result's status is one of status.c's table (finish() checks), and
 * its "exit" is heart-wake's exit status for the wake.  The outcome
 * (status, reason, idle level, warnings) is kept in the wake as it is
 * written into the result, by one helper each (outcome.c), and decided
 * from there: nothing is read back out of the result.
 */
#include <sys/file.h>
#include <sys/random.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

/* run_id's seed, drawn again in a forked child (atfork) */
static int	id_seeded;

static void
id_forked(void)
{
	id_seeded = 0;
}

void
run_id(time_t now, char *buf, size_t n)
{
	static time_t last = -1;	/* a round asks for thousands */
	static char t[20];
	static unsigned long long seed, count;
	static int hooked;
	unsigned long long x;
	struct tm tm;

	/* one getrandom(2) a process (a forked worker draws its own),
	 * then splitmix64 of a counter: a syscall a line cost a round of
	 * ten thousand souls more than the rest of a kept skip */
	if (!id_seeded) {
		if (!hooked && pthread_atfork(NULL, NULL, id_forked) == 0)
			hooked = 1;
		if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) !=
		    sizeof seed)
			seed = (unsigned long long)getpid() << 32 ^
			    (unsigned long long)now ^
			    (unsigned long long)mono_ms();
		count = 0;
		id_seeded = 1;
	}
	x = seed + ++count * 0x9e3779b97f4a7c15ULL;
	x = (x ^ x >> 30) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ x >> 27) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	if (now != last) {
		gmtime_r(&now, &tm);
		strftime(t, sizeof t, "%Y%m%dT%H%M%SZ", &tm);
		last = now;
	}
	snprintf(buf, n, "%s-%08x", t, (unsigned int)x);
}

static json_t *
result_new(struct wake *k, enum chamber c)
{
	char at[32];

	clock_utc(k->now, at, sizeof at);
	k->said = json_array();		/* the result holds it */
	return json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:n,s:n,s:n,s:o,"
	    "s:{s:i,s:i,s:i,s:i},s:n,s:s,s:{s:i,s:i},s:n,s:i,s:i}",
	    "v", 1, "agent", k->s->name, "chamber", soul_chamber_name(c),
	    "wake_id", k->id, "at", at, "status", status_name(ST_ERROR),
	    "reason", "response", "idle_level", "messages", k->said, "usage",
	    "prompt_tokens", 0, "completion_tokens", 0, "cached_tokens", 0,
	    "cache_write_tokens", 0, "cap", "breaker",
	    "closed", "tools", "calls", 0, "failed", 0, "error",
	    "duration_ms", 0, "exit", 0);
}

/*
 * From when the breaker, the cap and the fleet's budget all admit a
 * wake of chamber c, as they stand (k->bv, k->cv, k->budget_at): 0
 * when the cap or the fleet's budget never does.
 */
time_t
run_open_at(const struct wake *k, enum chamber c)
{
	struct caps caps;
	long long lim;
	time_t cap_at, brk_at;

	cap_from_soul(k->s, &caps);
	if ((lim = cap_limit(&caps, c)) <= 0)
		return 0;
	cap_at = k->cv.day[0] == '\0' || (k->cv.total < lim &&
	    cap_spend_ok(&k->cv, &caps)) ? k->now :
	    cap_open_at(&k->cv, &caps, k->now);
	if (cap_at == 0 || k->budget_at < 0)
		return 0;	/* a budget of $0: never */
	if (k->budget_at > cap_at)
		cap_at = k->budget_at;
	brk_at = k->bv.until > k->now ? k->bv.until : k->now;
	return cap_at > brk_at ? cap_at : brk_at;
}

/* When heart-wake, run as now, will next have a wake admitted: the
 * chamber asked for, or the sooner of the two; 0 if never. */
static time_t
next_wake(struct wake *k)
{
	time_t t, best = 0;
	int c;

	for (c = 0; c < CH_NCHAMBERS; c++) {
		if ((k->o->chamber >= 0 && c != k->o->chamber) ||
		    k->s->ch[c].daily_cap == 0)
			continue;
		if (c == CH_IDLE)
			wake_input(k->s, k->dir, &k->w);
		t = wake_next(k->s, k->dir, &k->w, (enum chamber)c, k->now,
		    run_open_at(k, (enum chamber)c), 0);
		if (t > 0 && (best == 0 || t < best))
			best = t;
	}
	return best;
}

/* Fill the fields every result carries at its end. */
static void
finish(struct wake *k, const char *status, const char *reason)
{
	char err[HEART_ERRLEN];
	enum wake_status st;
	time_t next = k->g.next;

	if (status_find(status, &st) == -1)
		abort();	/* a status not in status.c's table */
	outcome_status(k, st);
	outcome_reason(k, reason);
	if (k->cv.day[0] == '\0')
		cap_peek(k->s->name, k->s->timezone, k->now, &k->cv, err);
	if (k->cv.day[0] != '\0') {
		struct caps caps;
		cap_from_soul(k->s, &caps);
		json_object_set_new(k->res, "cap", json_pack("{s:I,s:I,s:s}",
		    "used", (json_int_t)k->cv.total, "cap",
		    (json_int_t)cap_limit(&caps, k->g.chamber), "day",
		    k->cv.day));
	}
	outcome_set(k, "breaker", brk_state_name(k->bv.state));
	if (k->g.interval > 0)
		json_object_set_new(k->res, "interval",
		    json_integer(k->g.interval));
	if (k->g.why != NULL)
		json_object_set(k->res, "adaptive", k->g.why);
	if (k->loaded)
		next = next_wake(k);
	if (next > 0 && next < k->held_until)	/* the hold it set */
		next = k->held_until;
	if (next > 0) {
		char iso[32];
		clock_utc(next, iso, sizeof iso);
		outcome_set(k, "next", iso);
	}
	if (json_array_size(k->events) > 0)
		json_object_set(k->res, "breaker_events", k->events);
	json_object_set_new(k->res, "duration_ms",
	    json_integer(mono_ms() - k->t0));
}

/* Pick the chamber whose gates pass; 0 with k->g set to the skip. */
static int
pick_chamber(struct wake *k)
{
	struct gate other;
	char both[1024];
	int c0, c1;

	if (k->o->chamber >= 0)
		return wake_gates(k->s, k->dir, &k->w,
		    (enum chamber)k->o->chamber, k->now, k->o->force, &k->g);
	if (wake_gates(k->s, k->dir, &k->w, CH_SCHEDULE, k->now,
	    k->o->force, &k->g))
		return 1;
	if (wake_gates(k->s, k->dir, &k->w, CH_IDLE, k->now, k->o->force,
	    &other)) {
		wake_gate_free(&k->g);
		k->g = other;
		return 1;
	}
	c0 = k->g.next > 0;
	c1 = other.next > 0;
	snprintf(both, sizeof both, "%.500s; %.500s", k->g.reason,
	    other.reason);
	snprintf(k->g.reason, sizeof k->g.reason, "%s", both);
	if (!c0 || (c1 && other.next < k->g.next))
		k->g.next = other.next;
	if (!k->g.warning[0])
		memcpy(k->g.warning, other.warning, sizeof other.warning);
	/* an agent whose schedule is off lives by its idle chamber */
	if (k->s->ch[CH_SCHEDULE].daily_cap == 0) {
		k->g.chamber = CH_IDLE;
		memcpy(k->g.status, other.status, sizeof other.status);
		k->g.interval = other.interval;
	}
	wake_gate_free(&other);
	return 0;
}

static int	dormant(struct wake *, int, char *);
static int	too_late(struct wake *, char *, size_t);

/* --dry-run: the exact request that would be sent, and nothing spent. */
static int
dry_run(struct wake *k, const struct llm_conf *lc, int open, char *err)
{
	struct pause_view pv;
	const char *st;
	char why[160], held_why[1024];
	json_t *req;

	cap_peek(k->s->name, k->s->timezone, k->now, &k->cv, err);
	brk_peek(k->s->name, &k->bc, k->now, &k->bv, err);
	if ((req = talk_dry(k, lc, err)) == NULL) {
		finish(k, status_name(ST_ERROR), NULL);
		return HX_IOERR;
	}
	json_object_set_new(k->res, "dry_run", json_true());
	if (k->s->mcp != NULL)
		json_object_set_new(k->res, "mcp", mcp_plan(k->s));
	json_object_update(k->res, req);
	json_decref(req);
	/* a pause and a hold are gates too (read as the cap and breaker
	 * are: a rehearsal fails on none of them) */
	if (open && pause_peek(k->s->name, k->now, &pv, err) == 1) {
		pause_why(&pv, why, sizeof why);
		finish(k, status_name(ST_PAUSED), why);
		return HX_OK;
	}
	if (open && dormant(k, 0, err))
		return HX_OK;
	if (open && admit_held(k, lc, 0, held_why, sizeof held_why, &st,
	    err) == 1) {
		finish(k, st, held_why);
		return HX_OK;
	}
	if (open && too_late(k, held_why, sizeof held_why)) {
		finish(k, status_name(ST_MISSED), held_why);
		return HX_OK;
	}
	finish(k, open ? status_name(ST_DRY_RUN) : k->g.status, open ?
	    "would wake if the breaker and the cap admit it" : k->g.reason);
	return HX_OK;
}

/*
 * The result's next for a wake deferred until t by a gate that uses no
 * slot (a pause, a hold, the fleet's turn; 0: no time known): not
 * before the other gates admit it too (the breaker's probe, the cap's
 * or the budget's reset, the slot when not forced), as --explain counts
 * it; none when there is none.
 */
static void
deferred_next(struct wake *k, time_t t)
{
	time_t n = k->o->force ? run_open_at(k, k->g.chamber) : next_wake(k);
	char iso[32];

	json_object_del(k->res, "next");
	if (t == 0 || n == 0)
		return;
	clock_utc(n > t ? n : t, iso, sizeof iso);
	outcome_set(k, "next", iso);
}

static int
skip(struct wake *k, const char *status, const char *reason)
{
	char err[HEART_ERRLEN];

	if (k->bv.state == BRK_CLOSED && k->bv.cooldown == 0)
		brk_peek(k->s->name, &k->bc, k->now, &k->bv, err);
	finish(k, status, reason);
	return HX_OK;
}

static int
fail(struct wake *k, int code, const char *err)
{
	outcome_set(k, "error", err);
	finish(k, status_name(ST_ERROR), NULL);
	return code;
}

/* A slot used by a wake that was not admitted (wake.c, "refused"). */
static int
slot_used(struct wake *k, enum wake_status st, char *err)
{
	k->w.refused[k->g.chamber] = k->now;
	snprintf(k->w.refused_status[k->g.chamber], 16, "%s",
	    status_name(st));
	return wake_save(k->dir, k->s->name, &k->w, -1, STATE_SYNC, k->now,
	    err);
}

/*
 * An operator's stop (pause.c), the first of the admission: before the
 * gate program, the breaker, the rate limit and the cap, so a paused
 * wake runs nothing, sends nothing, takes nothing and uses no slot (the
 * slot is still due once resumed).  1 paused (the result finished), 0
 * not, -1 with err.
 */
static int
paused(struct wake *k, char *err)
{
	struct pause_view v;
	char reason[160];
	int r;

	if ((r = pause_peek(k->s->name, k->now, &v, err)) != 1)
		return r;
	pause_why(&v, reason, sizeof reason);
	skip(k, status_name(ST_PAUSED), reason);
	deferred_next(k, v.until);
	return 1;
}

/*
 * Nobody there (dormant.c), right after the pause and as it: nothing
 * run, sent or taken, no slot used, no next wake but the one a user
 * message brings.  The first dormant wake of a stretch, unless only
 * rehearsed (tell 0), tells it: wake.json keeps that it was told, and
 * the result's "dormant" says so for its notice (notice.c).  1 dormant
 * (the result finished), 0 not, -1 with err.
 */
static int
dormant(struct wake *k, int tell, char *err)
{
	char reason[200];
	json_t *d;
	int r;

	if ((r = dormant_check(k->s, k->dir, &k->w, k->g.chamber, k->now,
	    tell, &d, reason, sizeof reason, err)) != 1)
		return r;
	json_object_set_new(k->res, "dormant", d);
	skip(k, status_name(ST_DORMANT), reason);
	json_object_del(k->res, "next");
	return 1;
}

/*
 * Is the wake too late for its slot (slot.c, slot_missed): a missed
 * schedule slot, found after the pause, dormancy and hold, which use
 * no slot?  Then reason says so.  Never under --force.
 */
static int
too_late(struct wake *k, char *reason, size_t n)
{
	if (k->g.chamber != CH_SCHEDULE || k->o->force ||
	    !slot_missed(k->g.slot, k->now, k->s->catch_up))
		return 0;
	slot_why(k->g.slot, k->now, k->s->catch_up, reason, n);
	return 1;
}

/*
 * A missed slot recorded as missed: a skip that uses the slot, so that
 * the agent waits for its next one.  1 missed (the result finished),
 * 0 not, -1 with err.
 */
static int
missed(struct wake *k, char *err)
{
	char reason[300];

	if (!too_late(k, reason, sizeof reason))
		return 0;
	if (slot_used(k, ST_MISSED, err) == -1)
		return -1;
	skip(k, status_name(ST_MISSED), reason);
	return 1;
}

/*
 * The chamber's gate program, when it has one: 1 to go on (its output
 * is k->gate_out), 0 when the wake ends here (*rc its exit code, the
 * result finished): gated, or failed as a tool fails, zero requests
 * either way, and the breaker told of a failure.  Either uses up the
 * slot, as a refusal does, so that the gate runs once a slot.
 */
static int
gate_step(struct wake *k, const struct llm_conf *lc, int *rc, char *err)
{
	struct tool_ctx ctx = { k->s->name, soul_chamber_name(k->g.chamber),
	    k->id, NULL, NULL };
	char reason[1024], e2[HEART_ERRLEN], *text;
	int r;

	if (k->s->ch[k->g.chamber].gate == NULL)
		return 1;
	ctx.hide = lc->key_env;
	r = gate_run(k->s, k->g.chamber, &ctx, k->dir,
	    k->w.last[k->g.chamber], k->res, &text, err);
	if (r == 1) {
		k->gate_out = text;
		return 1;
	}
	*rc = HX_OK;
	brk_peek(k->s->name, &k->bc, k->now, &k->bv, e2);
	if (r == 0) {
		snprintf(reason, sizeof reason, "%s: gated: %s",
		    soul_chamber_name(k->g.chamber), text[0] ? text :
		    "the gate said nothing");
		free(text);
		/* a gate that works again ends a run of its failures (an
		 * open breaker waits for its probe, as ever) */
		if ((k->bv.state == BRK_CLOSED && k->bv.tool_fails > 0 &&
		    brk_record(k->s->name, &k->bc,
		    k->now, BRK_TOOL_OK | BRK_TELL, 0, NULL, k->events,
		    e2) == -1) ||
		    slot_used(k, ST_GATED, e2) == -1) {
			*rc = fail(k, HX_IOERR, e2);
			return 0;
		}
		*rc = skip(k, status_name(ST_GATED), reason);
		return 0;
	}
	snprintf(k->w.error, sizeof k->w.error, "%.255s", err);
	k->w.error_at = k->now;
	if (brk_record(k->s->name, &k->bc, k->now, BRK_TOOL_FAIL | BRK_TELL,
	    0, err, k->events, e2) == -1 || brk_peek(k->s->name, &k->bc, k->now,
	    &k->bv, e2) == -1 || slot_used(k, ST_ERROR, e2) == -1) {
		*rc = fail(k, HX_IOERR, e2);
		return 0;
	}
	*rc = fail(k, HX_TEMPFAIL, err);
	return 0;
}

static int
run_locked(struct wake *k, const struct llm_conf *lc, char *err)
{
	const char *status = NULL;
	char reason[1024], e2[HEART_ERRLEN];
	time_t until;
	int open, r;

	if (wake_load(k->dir, &k->w, err) == -1)
		return fail(k, HX_IOERR, err);
	if (k->w.first_seen == 0)
		k->w.first_seen = k->now;
	k->loaded = 1;
	k->prev = k->w;
	open = pick_chamber(k);
	json_object_set_new(k->res, "chamber",
	    json_string(soul_chamber_name(k->g.chamber)));
	if (k->g.warning[0])
		outcome_warn(k, k->g.warning);
	if (k->o->dry_run)
		return dry_run(k, lc, open, err);
	if (!open) {
		/* a skip writes only what it learnt: first sight, a warning */
		if ((!k->w.exists || k->w.checklist_warned !=
		    k->prev.checklist_warned) && wake_save(k->dir,
		    k->s->name, &k->w, -1, STATE_SYNC, k->now, err) == -1)
			return fail(k, HX_IOERR, err);
		return skip(k, k->g.status, k->g.reason);
	}
	if ((r = paused(k, err)) != 0)
		return r == -1 ? fail(k, HX_IOERR, err) : HX_OK;
	if ((r = dormant(k, 1, err)) != 0)
		return r == -1 ? fail(k, HX_IOERR, err) : HX_OK;
	if ((r = admit_held(k, lc, 0, reason, sizeof reason, &status,
	    err)) == -1)
		return fail(k, HX_IOERR, err);
	if (r != 1) {		/* else status: held, or throttled */
		if ((r = missed(k, err)) != 0)
			return r == -1 ? fail(k, HX_IOERR, err) : HX_OK;
		if (!gate_step(k, lc, &r, err))
			return r;
		if ((r = admit_wake(k, lc, reason, sizeof reason, &status,
		    err)) == -1)
			return fail(k, HX_IOERR, err);
	}
	if (status != NULL && (strcmp(status, status_name(ST_THROTTLED)) ==
	    0 || strcmp(status, status_name(ST_HELD)) == 0)) {
		/* deferred: its slot waits for the next round (held: the
		 * hold's next probe) */
		until = k->g.next;
		r = skip(k, status, reason);
		deferred_next(k, until);
		return r;
	}
	if (r == 0) {
		/* a refused wake still uses up its slot, as a dropped timer;
		 * it is no wake: the last one admitted stays as it was */
		k->w.refused[k->g.chamber] = k->now;
		snprintf(k->w.refused_status[k->g.chamber], 16, "%s", status);
		wake_save(k->dir, k->s->name, &k->w, -1, STATE_SYNC, k->now,
		    err);
		return skip(k, status, reason);
	}
	k->w.last[k->g.chamber] = k->now;
	snprintf(k->w.last_status[k->g.chamber], 16, "running");
	/* the claim, durable with the take before it: a power cut from
	 * here on finds the slot used, the wake as if killed mid-way */
	if (wake_save(k->dir, k->s->name, &k->w, k->g.chamber, STATE_SYNC,
	    k->now, err) == -1)
		return fail(k, HX_IOERR, err);
	r = talk_wake(k, lc, err);
	/* the items carried, once a model has answered: a wake that
	 * failed, or was killed before this, leaves every item due */
	if ((k->out.status == ST_OK || k->out.status == ST_IDLE) &&
	    wake_carry(k->dir, &k->w, k->g.chamber, k->g.items, k->now,
	    e2) == -1 && r == HX_OK) {
		snprintf(err, HEART_ERRLEN, "%s", e2);
		r = HX_IOERR;
	}
	/* the outcome teaches the adaptive schedule (adapt.c) */
	if (r == HX_OK && k->g.chamber == CH_SCHEDULE && adapt_record(k->dir,
	    k->s, &k->w.act, status_name(k->out.status), k->out.idle_level,
	    k->now, err) == -1)
		r = HX_IOERR;
	/* the outcome: whole, durable with the next sync of the directory
	 * or the kernel's writeback (heart(7), State) */
	if (wake_save(k->dir, k->s->name, &k->w, -1, STATE_WHOLE, k->now,
	    err) == -1 && r == HX_OK)
		r = HX_IOERR;
	snprintf(reason, sizeof reason, "%s", k->out.reason);
	finish(k, status_name(k->out.status), reason);
	return r;
}

/*
 * The wake's decision, now final, into the agent's journal (journal.c)
 * when status.c's table keeps its status: a wake only not due writes
 * nothing.  An error's reason is its message.  A journal that cannot
 * be written is a warning of the wake, its result standing; of a wake
 * that failed on its store already (rc), the failure said it.
 */
static void
journal(struct wake *k, int rc)
{
	char err[HEART_ERRLEN];
	const char *why = k->out.reason;

	if (!status_journal(k->out.status))
		return;
	if (*why == '\0' && k->out.status == ST_ERROR)
		why = json_string_value(json_object_get(k->res, "error"));
	if (journal_add(k->s->name, k->now, soul_chamber_name(k->g.chamber),
	    status_name(k->out.status), why, k->id, err) == -1 &&
	    rc != HX_IOERR && rc != HX_UNAVAILABLE)
		outcome_warn(k, err);
}

/*
 * One wake of soul s.  Always sets *out to the wake result (status
 * "error" on failure, with the message in err too); returns the exit
 * code this wake asks for.
 */
int
run_wake(const struct soul *s, const struct run_opts *o, time_t now,
    json_t **out, char *err)
{
	struct wake k;
	struct llm_conf lc;
	int fd, rc;

	memset(&k, 0, sizeof k);
	k.s = s;
	k.o = o;
	k.now = now;
	k.t0 = mono_ms();
	k.tcost = -1;
	k.out.status = ST_ERROR;	/* as result_new says */
	k.events = json_array();
	run_id(now, k.id, sizeof k.id);
	k.res = result_new(&k, o->chamber >= 0 ? (enum chamber)o->chamber :
	    CH_SCHEDULE);
	k.g.chamber = o->chamber >= 0 ? (enum chamber)o->chamber :
	    CH_SCHEDULE;
	brk_from_soul(s, &k.bc);
	k.triage = s->triage != NULL;
	if (llm_conf(s, 0, &lc, err) == -1 || llm_conf(s, 1, &k.tc,
	    err) == -1 || endpoint_of(&lc, k.ep, sizeof k.ep, err) == -1 ||
	    (k.triage && endpoint_of(&k.tc, k.tep, sizeof k.tep,
	    err) == -1))
		rc = fail(&k, HX_CONFIG, err);
	else if (state_agent_dir(s->name, 1, k.dir, sizeof k.dir, err) == -1)
		rc = fail(&k, HX_IOERR, err);
	else if ((fd = store_lock(k.dir, "wake.lock", LOCK_EX | LOCK_NB,
	    err)) == -1)
		rc = fail(&k, HX_IOERR, err);
	else if (fd == -2)
		rc = skip(&k, status_name(ST_BUSY), "a wake of this agent is "
		    "running (or its user holds wake.lock)");
	else {
		rc = run_locked(&k, &lc, err);
		store_unlock(fd);
	}
	if (rc == HX_IOERR)
		rc = store_code(rc);	/* a store out of reach: 69 */
	if (!o->dry_run && k.dir[0] != '\0')
		journal(&k, rc);
	json_object_set_new(k.res, "exit", json_integer(rc));
	wake_gate_free(&k.g);
	wake_free(&k.w);
	free(k.gate_out);
	free(k.found);
	json_decref(k.events);
	*out = k.res;
	return rc;
}

/*
 * The result of a soul that could not be loaded: an error that names
 * no agent, with the exit status code, so that heart-ghost at the end
 * of the pipeline exits with it too.
 */
json_t *
run_refused(int code, const char *err, time_t now)
{
	char at[32];

	clock_utc(now, at, sizeof at);
	return json_pack("{s:i,s:n,s:n,s:n,s:s,s:s,s:s,s:i}", "v", 1,
	    "agent", "chamber", "wake_id", "at", at, "status",
	    status_name(ST_ERROR), "error", err, "exit", code);
}
