/*
 * brk.c - the dual-trigger circuit breaker (paper section 6), shared by
 * every process that wakes an agent.
 *
 * One breaker per agent, in agents/ID/breaker.json: closed, open or
 * half_open, with a count of consecutive LLM failures and one of tool
 * failures, and the times of the last failures of either kind.  Either
 * count reaching the threshold opens it for the current cooldown, and
 * so does the window: window_fails failures within window_s, however
 * many successes came between (a provider that fails every other
 * request).  Once the cooldown has passed it is half-open and exactly
 * one caller is granted the probe, whose result closes it (cooldown
 * back to base) or reopens it (cooldown doubled up to max_cooldown).
 * A closing probe leaves the window as it is: a failure that comes
 * while it still holds enough reopens the breaker at once.
 * The first opening of a stretch of failures that a wake reports
 * (BRK_TELL), a Retry-After alone aside, is told (its event's notice,
 * heart-wake's notice.c) and marks the breaker told; the probe of a
 * wake that closes a told breaker is told too.
 * This file holds the transitions, pure functions of what they are
 * given; brkstore.c reads and writes the document, does the
 * transitions in the store and makes the events.
 *
 * Invariants: the rules are brk_step's, a pure function of the
 * breaker, the time and the keys; the document is only ever replaced
 * whole by store_update (under agents/ID/breaker.lock, or by a
 * server's compare-and-set), so readers need no lock; a probe is only
 * granted by a write that no other writer came between; an open
 * breaker whose cooldown has passed is half-open, whether or not the
 * store says so yet (the next writer stores the transition); a probe
 * that neither reports nor is handed back within BRK_PROBE_LEASE
 * seconds is presumed dead.  A document that does not parse is an
 * error, never replaced.  Events are made from the transitions' names
 * once the write is done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"

/*
 * The outcome flags of brk_record (heartstore.h), one LLM and one tool
 * flag combined: BRK_LLM_OK, the model answered (resets the LLM count);
 * BRK_LLM_FAIL, an HTTP error, a timeout, an unreadable reply;
 * BRK_TOOL_OK, the wake's tool calls all succeeded (resets the tool
 * count); BRK_TOOL_FAIL, a tool failed, or seed_tool_cap was passed;
 * BRK_LLM_CONFIG, with BRK_LLM_FAIL, a failure only a person can fix
 * (the key, the model, the URL, the account's quota): the breaker
 * opens now, whatever the count, for max_cooldown; BRK_TELL, with
 * others, a wake's outcome, whose notice heart-wake prints.
 *
 * struct brk_out's kind says what opened it: "failures" (in a row),
 * "window", "config", "hold" (a Retry-After alone) or "probe"; its
 * notice, that the transition is told (heart-wake(1), Notices).
 */
#define FAILS	(BRK_LLM_FAIL | BRK_TOOL_FAIL)

static const char *const names[] = { "closed", "open", "half_open" };

/*
 * The soul's breaker keys; a NULL soul gives the defaults 3, 15m, 2h,
 * and a window of 10 failures within 1h.  A breaker keeps the keys it
 * was last given; a call given a NULL conf goes by those (else the
 * defaults) and leaves them as they are.
 */
void
brk_from_soul(const struct soul *s, struct brk_conf *c)
{
	c->threshold = DEF_BRK_THRESHOLD;
	c->cooldown = DEF_BRK_COOLDOWN;
	c->max_cooldown = DEF_BRK_MAX_COOLDOWN;
	c->window_fails = DEF_BRK_WINDOW_FAILS;
	c->window_s = DEF_BRK_WINDOW;
	if (s == NULL)
		return;
	if (s->brk_threshold > 0)
		c->threshold = s->brk_threshold;
	if (s->brk_cooldown > 0)
		c->cooldown = s->brk_cooldown;
	if (s->brk_max_cooldown > 0)
		c->max_cooldown = s->brk_max_cooldown;
	if (s->brk_window_fails >= 0)
		c->window_fails = s->brk_window_fails;
	if (s->brk_window > 0)
		c->window_s = s->brk_window;
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
 * max >= base, the window's failures 0 (off) to BRK_WINDOW_MAX): those
 * given (a soul's); else, given NULL, those kept with b, else the
 * defaults.  Returns 1 when they are the kept ones.
 */
static int
keys(const struct brk_conf *c, const struct brk *b, struct brk_conf *o)
{
	const struct brk_conf *k = c == NULL && b != NULL ? &b->kept : NULL;
	int kept = k != NULL && k->cooldown > 0;

	if (c != NULL)
		*o = *c;
	else
		brk_from_soul(NULL, o);
	if (kept)
		o->cooldown = k->cooldown;
	if (k != NULL && k->threshold > 0)
		o->threshold = k->threshold;
	if (k != NULL && k->max_cooldown > 0)
		o->max_cooldown = k->max_cooldown;
	if (k != NULL && k->window_fails != 0)
		o->window_fails = k->window_fails > 0 ? k->window_fails : 0;
	if (k != NULL && k->window_s > 0)
		o->window_s = k->window_s;
	if (o->threshold < 1)
		o->threshold = 1;
	if (o->cooldown < 1)
		o->cooldown = 1;
	if (o->max_cooldown < o->cooldown)
		o->max_cooldown = o->cooldown;
	if (o->window_fails < 0)
		o->window_fails = 0;
	if (o->window_fails > BRK_WINDOW_MAX)
		o->window_fails = BRK_WINDOW_MAX;
	if (o->window_s < 1)
		o->window_s = 1;
	return kept;
}

/* When the breaker next lets a wake go: 0 now (closed, or a half-open
 * probe free). */
time_t
brk_next_go(const struct brk *b)
{
	if (b->state == BRK_OPEN)
		return b->until;
	if (b->state == BRK_HALF_OPEN && b->probe_at > 0)
		return b->probe_at + BRK_PROBE_LEASE;
	return 0;
}

static void
said(struct brk_out *o, const char *what, const char *by)
{
	if (o->nev < BRK_MAXEV)
		snprintf(o->ev[o->nev++], sizeof o->ev[0], "%s%s%s", what,
		    by != NULL ? "/" : "", by != NULL ? by : "");
}

static void
noprobe(struct brk *b)
{
	b->probe_at = b->probe_pid = 0;
	b->probe_host[0] = '\0';
}

/*
 * Bring b up to `now': never let a clock set back stretch a cooldown
 * or a probe lease, turn an open breaker whose cooldown has passed
 * half-open, and forget a probe whose lease has run out.  Returns 1
 * when b changed.
 */
static int
advance(const struct brk_conf *c, struct brk *b, time_t now,
    struct brk_out *o)
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
		b->until = 0;
		noprobe(b);
		said(o, "half_open", NULL);
		changed = 1;
	}
	if (b->state == BRK_HALF_OPEN && b->probe_at > now) {
		b->probe_at = now;
		changed = 1;
	}
	if (b->state == BRK_HALF_OPEN && b->probe_at > 0 &&
	    now >= b->probe_at + BRK_PROBE_LEASE) {
		noprobe(b);
		changed = 1;
	}
	return changed;
}

/* Keep the keys given (a soul's) with b; 1 when b changed.  Without
 * them (NULL) b keeps what it had: defaults are never kept.  A window
 * turned off is kept as -1 failures. */
static int
keep(const struct brk_conf *given, const struct brk_conf *c, struct brk *b)
{
	long long wf = c->window_fails > 0 ? c->window_fails : -1;

	if (given == NULL || (b->kept.cooldown == c->cooldown &&
	    b->kept.threshold == c->threshold &&
	    b->kept.max_cooldown == c->max_cooldown &&
	    b->kept.window_fails == wf && b->kept.window_s == c->window_s))
		return 0;
	b->kept = *c;
	b->kept.window_fails = wf;
	return 1;
}

/* The failures of b within the window at now (0: no window). */
static long long
in_window(const struct brk_conf *c, const struct brk *b, time_t now)
{
	long long n = 0;
	int i;

	if (c->window_fails <= 0)
		return 0;
	for (i = 0; i < b->nfailed; i++)
		if (b->failed[i] > now - c->window_s)
			n++;
	return n;
}

/* Note a failure at now: the window keeps the last window_fails
 * failures' times within window_s, oldest first (a clock set back
 * puts now before later ones), none when it is off. */
static void
note_failure(const struct brk_conf *c, struct brk *b, time_t now)
{
	int i, n = 0;

	for (i = 0; i < b->nfailed; i++)
		if (b->failed[i] > now - c->window_s)
			b->failed[n++] = b->failed[i];
	if (n == BRK_WINDOW_MAX)
		memmove(b->failed, b->failed + 1, --n * sizeof b->failed[0]);
	for (i = n++; i > 0 && b->failed[i - 1] > now; i--)
		b->failed[i] = b->failed[i - 1];
	b->failed[i] = now;
	if (n > c->window_fails) {
		memmove(b->failed, b->failed + n - c->window_fails,
		    c->window_fails * sizeof b->failed[0]);
		n = c->window_fails;
	}
	b->nfailed = n;
}

/* Does a check have to write (a transition, or the probe)? */
static int
check_writes(const struct brk *b, time_t now)
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
view_of(const struct brk *b, const struct brk_conf *given, time_t now,
    struct brk_view *v)
{
	struct brk_conf kc, *c = &kc;

	memset(v, 0, sizeof *v);
	v->kept = keys(given, b, c);
	v->conf = kc;
	v->state = b->state;
	v->llm_fails = b->llm_fails;
	v->tool_fails = b->tool_fails;
	v->window_fails = in_window(c, b, now);
	v->cooldown = b->state == BRK_CLOSED || b->cooldown <= 0 ?
	    c->cooldown : b->cooldown;
	v->until = brk_next_go(b);
	v->probe_at = b->state == BRK_HALF_OPEN ? b->probe_at : 0;
	snprintf(v->trigger, sizeof v->trigger, "%s", b->trigger);
	snprintf(v->reason, sizeof v->reason, "%s", b->reason);
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

/* Open b now for cooldown seconds, or until hold if that is later;
 * kind: what opened it (struct brk_out). */
static void
open_now(struct brk *b, time_t now, const char *trigger, long long cooldown,
    time_t hold, const char *kind, struct brk_out *o)
{
	said(o, "open", names[b->state]);
	o->kind = kind;
	/* told once a stretch of failures, by the first wake that opens
	 * it (BRK_TELL); a Retry-After alone is no failing heartbeat */
	if (o->tell && !b->told && strcmp(kind, "hold") != 0)
		o->notice = b->told = 1;
	b->state = BRK_OPEN;
	b->cooldown = cooldown;
	b->until = now + cooldown;
	lengthen(b, now, hold);
	noprobe(b);
	snprintf(b->trigger, sizeof b->trigger, "%s", trigger);
}

/* The counts after an outcome; 1 when they changed. */
static int
count(struct brk *b, const struct brk_ask *rec)
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

/* Has b's window filled at now?  Then its reason says so. */
static int
window_full(const struct brk_conf *c, struct brk *b, time_t now)
{
	long long n = in_window(c, b, now);
	char why[400], d[32];

	if (c->window_fails <= 0 || n < c->window_fails)
		return 0;
	snprintf(why, sizeof why, "%lld failures within %s: %s", n,
	    dur_format(c->window_s, d, sizeof d), b->reason);
	text_line(b->reason, sizeof b->reason, why, strlen(why));
	return 1;
}

/* What a failed probe's reopening is: as a closed breaker's opening
 * would be, else "probe". */
static const char *
probe_kind(const struct brk_conf *c, const struct brk *b,
    const struct brk_ask *rec, time_t now)
{
	if (rec->flags & BRK_LLM_CONFIG)
		return "config";
	if (b->llm_fails >= c->threshold || b->tool_fails >= c->threshold)
		return "failures";
	if (rec->hold > now)
		return "hold";
	return "probe";
}

/*
 * Apply an outcome to b; 1 when b changed.  A failure is noted in the
 * window, which a success leaves as it is.  A hold alone (a closed
 * breaker under its threshold and its window) opens it until then,
 * and no longer.
 */
static int
apply(const struct brk_conf *c, struct brk *b, time_t now,
    const struct brk_ask *rec, struct brk_out *o)
{
	int changed = count(b, rec), flags = rec->flags;
	const char *trig = (flags & BRK_LLM_FAIL) ? "llm" : "tool";
	long long cd = next_cooldown(c, b, flags);

	o->tell = (flags & BRK_TELL) != 0;
	if (flags & FAILS)
		note_failure(c, b, now);
	switch (b->state) {
	case BRK_HALF_OPEN:	/* the probe's result */
		if (flags & FAILS) {
			open_now(b, now, trig, cd, rec->hold, probe_kind(c, b,
			    rec, now), o);
			return 1;
		}
		o->notice = o->tell && b->told;
		b->told = 0;
		b->state = BRK_CLOSED;
		b->llm_fails = b->tool_fails = 0;
		b->cooldown = c->cooldown;
		b->until = 0;
		noprobe(b);
		b->trigger[0] = '\0';
		said(o, "closed", "probe");
		return 1;
	case BRK_CLOSED:
		if (flags & BRK_LLM_CONFIG)
			open_now(b, now, "llm", cd, rec->hold, "config", o);
		else if (b->llm_fails >= c->threshold)
			open_now(b, now, "llm", cd, rec->hold, "failures", o);
		else if (b->tool_fails >= c->threshold)
			open_now(b, now, "tool", cd, rec->hold, "failures", o);
		else if ((flags & FAILS) && window_full(c, b, now))
			open_now(b, now, trig, cd, rec->hold, "window", o);
		else if (rec->hold > now)
			open_now(b, now, "llm", 0, rec->hold, "hold", o);
		break;
	case BRK_OPEN:		/* late news: counted; it may hold longer */
		if (flags & BRK_LLM_CONFIG)
			changed |= lengthen(b, now, now + c->max_cooldown);
		changed |= lengthen(b, now, rec->hold);
		break;
	}
	return changed || (flags & FAILS);
}

/* brk_step's transitions, but for the view after. */
static int
step(struct brk *b, enum brk_op op, const struct brk_conf *given,
    time_t now, const struct brk_ask *me, struct brk_out *o)
{
	struct brk_conf c;
	int changed;

	keys(given, b, &c);
	switch (op) {
	case BRK_CHECK:
		if (!check_writes(b, now))
			return 0;
		changed = advance(&c, b, now, o);
		changed |= keep(given, &c, b);
		if (b->state == BRK_HALF_OPEN && b->probe_at == 0) {
			b->probe_at = now;
			b->probe_pid = me->pid;
			snprintf(b->probe_host, sizeof b->probe_host, "%s",
			    me->host);
			o->probe = changed = 1;
		}
		return changed;
	case BRK_GIVEBACK:
		if (b->state != BRK_HALF_OPEN || b->probe_at == 0 ||
		    (b->probe_pid != 0 && (b->probe_pid != me->pid ||
		    strcmp(b->probe_host, me->host) != 0)))
			return 0;
		noprobe(b);
		return 1;
	case BRK_RECORD:
		changed = advance(&c, b, now, o);
		changed |= keep(given, &c, b);
		changed |= apply(&c, b, now, me, o);
		return changed || !b->exists;
	case BRK_PEEK:
		advance(&c, b, now, o);
		return 0;
	case BRK_RESET:
		if (!b->exists)
			return 0;	/* never used: closed already */
		if (b->state != BRK_CLOSED)
			said(o, "closed", "reset");
		b->state = BRK_CLOSED;
		b->llm_fails = b->tool_fails = 0;
		b->nfailed = 0;
		if (b->kept.cooldown > 0)
			b->cooldown = b->kept.cooldown;
		b->until = 0;
		b->told = 0;
		noprobe(b);
		b->trigger[0] = b->reason[0] = '\0';
		return 1;
	}
	return 0;
}

/*
 * One transition of breaker b at `now', with the keys given (a soul's;
 * NULL: those kept, else the defaults), asked by `ask': check grants
 * the half-open probe to the first caller (o->probe); giveback hands
 * back the asker's probe; record applies ask's outcome; reset closes it and
 * clears both counts and the window; peek only brings it up to now.
 * The transitions are named in o, with the view of b after them.
 * Returns 1 when b is to be written back.
 */
int
brk_step(struct brk *b, enum brk_op op, const struct brk_conf *given,
    time_t now, const struct brk_ask *ask, struct brk_out *o)
{
	int r;

	memset(o, 0, sizeof *o);
	r = step(b, op, given, now, ask, o);
	view_of(b, given, now, &o->view);
	return r;
}
