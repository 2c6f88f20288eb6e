/*
 * admit.c - a due wake's admission, after its gates: the agent's
 * breaker, its provider account's hold (hold.c), the fleet's budget
 * (budget.c, for an agent with a price) and the daily counter (cap.c),
 * in that order, each probe or place granted and handed back if a later
 * one refuses the wake; the rate limit (bucket.c) between the hold and
 * the budget.  A hold of the account's rate limit (hold.c) defers the
 * wake as the fleet file's rate limit does: status throttled.  run.c
 * asks it for every wake that would send a request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

/* The key lc sends, or NULL. */
static const char *
key_of(const struct llm_conf *lc)
{
	return lc->key_env[0] != '\0' ? getenv(lc->key_env) : NULL;
}

/* lc's account's hold (hold.c), with grant its probe taken: 1 held,
 * 0 not, 2 the probe is this wake's (grant) or due (not), -1 with
 * err; v says which. */
static int
account_held(const struct llm_conf *lc, time_t now, int grant,
    struct hold_view *v, char *err)
{
	if (lc->command != NULL)
		return 0;
	return hold_admit(lc->base_url, key_of(lc), now, grant, v, err);
}

/* The probes a wake refused after admit_held() granted them, handed
 * back. */
static void
hold_give(struct wake *k, const struct llm_conf *lc)
{
	char e2[HEART_ERRLEN];

	if (lc->command == NULL)
		hold_giveback(lc->base_url, key_of(lc), k->now, e2);
	if (k->triage && k->tc.command == NULL)
		hold_giveback(k->tc.base_url, key_of(&k->tc), k->now, e2);
}

/* Do a and b send to one account (base URL and key)? */
static int
same_account(const struct llm_conf *a, const struct llm_conf *b)
{
	const char *ka = key_of(a), *kb = key_of(b);

	return a->command == NULL && b->command == NULL &&
	    strcmp(a->base_url, b->base_url) == 0 &&
	    strcmp(ka ? ka : "", kb ? kb : "") == 0;
}

/*
 * Is the wake held by its model's account (its triage model's too)?
 * Asked twice: before the gate program, only read (a held wake runs
 * nothing, sends nothing, uses no slot, as a paused one), and once the
 * breaker admits it, with grant, so that the fleet's one probe of the
 * period goes to a wake that sends.  1 held (reason and k->g.next
 * say why and until when, *status "held", or "throttled" for the
 * account's rate limit), 0 not, 2 not but the probe is this wake's
 * (grant) or due (not), -1 with err.
 */
int
admit_held(struct wake *k, const struct llm_conf *lc, int grant,
    char *reason, size_t rn, const char **status, char *err)
{
	struct hold_view v;
	char e2[HEART_ERRLEN];
	int r, t;

	if ((r = account_held(lc, k->now, grant, &v, err)) == -1)
		return -1;
	if (r != 1 && k->triage && !same_account(lc, &k->tc) &&
	    (t = account_held(&k->tc, k->now, grant, &v, err)) != 0) {
		if (t != 2 && r == 2 && grant)	/* the main's, unused */
			hold_giveback(lc->base_url, key_of(lc), k->now, e2);
		r = t;
	}
	if (r != 1)
		return r;
	hold_why(&v, reason, rn);
	k->g.next = v.probe;
	*status = status_name(strcmp(v.kind, "rate") == 0 ? ST_THROTTLED :
	    ST_HELD);
	return 1;
}

/* What a wake refused after the hold was granted hands back: the
 * breaker's probe, the hold's, the bucket's request. */
static void
give_back(struct wake *k, const struct llm_conf *lc, int probe, int took,
    const char *ep)
{
	char e2[HEART_ERRLEN];

	if (probe)
		brk_giveback(k->s->name, k->now, NULL);
	if (took == 2)
		hold_give(k, lc);
	if (ep[0] != '\0')
		bucket_give(ep, k->taken, time(NULL), e2);
}

/* The fleet's budget (budget.c): 1 admitted, 0 refused (capped once it
 * is reached, throttled while the wakes in flight could reach it), -1
 * with err. */
static int
fleet_admit(struct wake *k, char *reason, size_t rn, const char **status,
    char *err)
{
	struct budget_view v;
	int verdict;

	if (budget_take(k->s->name, k->now, &verdict, &v, err) == -1)
		return -1;
	if (verdict == BUDGET_ADMIT)
		return 1;
	budget_why_at(&v, verdict, k->now, reason, rn, &k->g.next);
	if (verdict == BUDGET_REACHED)	/* -1: never */
		k->budget_at = k->g.next > 0 ? k->g.next : -1;
	*status = status_name(verdict == BUDGET_REACHED ? ST_CAPPED :
	    ST_THROTTLED);
	return 0;
}

/* Breaker, the account's hold, then cap.  Returns 1 when admitted.  A
 * probe granted (the breaker's, the hold's) to a wake refused after it
 * is handed back. */
int
admit_wake(struct wake *k, const struct llm_conf *lc, char *reason, size_t rn,
    const char **status, char *err)
{
	enum chamber c = k->g.chamber;
	struct caps caps;
	const char *ep;
	char until[40], e2[HEART_ERRLEN];
	int allowed, probe, ok, took;

	if (brk_check(k->s->name, &k->bc, k->now, &allowed, &probe, &k->bv,
	    k->events, err) == -1)
		return -1;
	if (!allowed) {
		clock_utc(k->bv.until, until, sizeof until);
		snprintf(reason, rn, "breaker %s (%s trigger: %s); next "
		    "probe at %s", brk_state_name(k->bv.state),
		    k->bv.trigger[0] ? k->bv.trigger : "?", k->bv.reason,
		    until);
		k->g.next = k->bv.until;
		*status = status_name(ST_OPEN);
		return 0;
	}
	if ((took = admit_held(k, lc, 1, reason, rn, status, err)) == 1 ||
	    took == -1) {
		if (probe)
			brk_giveback(k->s->name, k->now, NULL);
		return took == 1 ? 0 : -1;
	}
	/* the fleet's rate limit: a throttled wake is deferred, not spent;
	 * its first request goes to the triage endpoint when there is one */
	ep = k->triage ? k->tep : k->ep;
	k->taken = time(NULL);
	if ((ok = bucket_gate(ep, k->s->name, &k->taken, k->o->wait,
	    &k->g.next, reason, rn, err)) != 1) {
		if (probe)
			brk_giveback(k->s->name, k->now, NULL);
		if (took == 2)
			hold_give(k, lc);
		*status = status_name(ST_THROTTLED);
		return ok;
	}
	cap_from_soul(k->s, &caps);
	if (caps.priced && (ok = fleet_admit(k, reason, rn, status, err)) !=
	    1) {
		give_back(k, lc, probe, took, ep);
		return ok;
	}
	/* durable with the claim, or the refused slot, that follows it:
	 * one sync of the agent's directory for both (heart(7), State) */
	if (cap_take(k->s->name, c, &caps, -1, k->s->timezone, k->now, 0,
	    &ok, &k->cv, err) == -1)
		ok = -1;
	if (ok == 1)
		return 1;
	give_back(k, lc, probe, took, ep);
	if (caps.priced)
		budget_give(k->s->name, k->now, e2);
	if (ok == -1)
		return -1;
	k->g.next = cap_open_at(&k->cv, &k->cv.caps, k->now);
	cap_why(&k->cv, c, k->now, reason, rn);
	*status = status_name(ST_CAPPED);
	return 0;
}
