/*
 * ask.c - one request to a model, the only way heart sends one: each
 * turn of a wake's conversation with its main model (talk.c) and the
 * triage model's question (triage.c).  In order: the request's turn in
 * its endpoint's bucket, the fleet's rate limit (bucket.c); the request
 * (llm.c); what the answer tells the bucket (a 429, its tokens); and
 * the answer's usage, read within what the request could have produced
 * and priced (price.c); what the answer tells the account's hold
 * (hold.c): a quota or key error sets it, and so does a 429 of the
 * account's rate limit (until its reset); a success lifts it.
 *
 * Invariant: the usage ask_send returns is the one every count uses,
 * the bucket's tokens, the day's counters, the result and the cost.
 * No count is below zero; the cached and cache-written tokens are
 * within the prompt; the prompt is within the request's bytes (a token
 * is at least a byte) and the completion within llm.max_tokens or the
 * reply's bytes, each with USAGE_SLACK more for what a provider adds
 * on its side (heart-soul(5), MONEY).  A server's absurd usage block
 * costs a wake no more than its request could have.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

/* One count past its bound: counted at the bound, and said in note. */
static void
bound(long long *v, long long max, const char *what, const char *why,
    char *note, size_t n)
{
	size_t len = strlen(note);

	if (*v <= max)
		return;
	snprintf(note + len, n - len, "%s%s %s%lld counted as %lld (%s)",
	    len ? "; " : "usage past what the request could produce "
	    "(heart-soul(5), MONEY): ", what, *v >= LLM_TOKENS_MAX ?
	    "at least " : "", *v, max, why);
	*v = max;
}

/*
 * The usage u of a request of `sent' bytes answered in `got' bytes,
 * with max_tokens maxout, within what that request could have produced
 * (the head comment); what was mended is said in note (n bytes), ""
 * when nothing was.
 */
void
ask_usage_bound(struct usage *u, long long sent, long long got,
    long long maxout, char *note, size_t n)
{
	char why[64];

	note[0] = '\0';
	u->prompt = u->prompt < 0 ? 0 : u->prompt;
	u->completion = u->completion < 0 ? 0 : u->completion;
	u->cached = u->cached < 0 ? 0 : u->cached;
	u->cache_write = u->cache_write < 0 ? 0 : u->cache_write;
	snprintf(why, sizeof why, "%lld bytes sent", sent);
	bound(&u->prompt, sent + USAGE_SLACK, "prompt_tokens", why, note, n);
	snprintf(why, sizeof why, "max_tokens %lld, %lld bytes answered",
	    maxout, got);
	bound(&u->completion, (maxout > got ? maxout : got) + USAGE_SLACK,
	    "completion_tokens", why, note, n);
	bound(&u->cached, u->prompt, "cached_tokens", "the prompt's", note,
	    n);
	bound(&u->cache_write, u->prompt - u->cached, "cache_write_tokens",
	    "the prompt's not read from the cache", note, n);
}

/* The bytes a reply answered with: its text and its calls. */
static long long
answered(const struct llm_reply *r)
{
	return (long long)(r->text != NULL ? strlen(r->text) : 0) +
	    (long long)(r->tool_calls != NULL ? llm_cost(r->tool_calls) : 0);
}

/* The hold a failure of class fail (HTTP status http) puts on its
 * account: "quota", "key", or NULL when the failure is the agent's. */
static const char *
hold_kind(int fail, long http)
{
	if (fail == LLM_QUOTA)
		return "quota";
	if (fail == LLM_CONFIG && (http == 401 || http == 403))
		return "key";
	return NULL;
}

/* What r tells lc's account's hold, at now (a store out of reach
 * leaves the hold as it was: the wake's own outcome says the rest).
 * Returns when the hold it set lets a wake go (its probe, or its rate
 * limit's reset), 0 when it set none. */
static time_t
hold_after(const struct llm_conf *lc, int rc, const struct llm_reply *r,
    time_t now)
{
	const char *key, *kind;
	char e2[HEART_ERRLEN];
	struct hold_view v;

	if (lc->command != NULL)
		return 0;
	key = lc->key_env[0] != '\0' ? getenv(lc->key_env) : NULL;
	if (rc == 0) {
		hold_lift(lc->base_url, key, now, e2);
		return 0;
	}
	if ((kind = hold_kind(r->fail, r->status)) != NULL) {
		if (hold_set(lc->base_url, key, kind, r->status, r->hold, now,
		    e2) == -1)
			return 0;
	} else if (r->account == 0 || hold_set(lc->base_url, key, "rate",
	    r->status, r->account, now, e2) == -1)
		return 0;
	return hold_admit(lc->base_url, key, now, 0, &v, e2) == 1 ? v.probe :
	    0;
}

/*
 * Send body for wake k, to lc (the triage model's: triage 1), at
 * k->now: first its turn in the endpoint's bucket (k->ep, or k->tep):
 * the first request of a wake, its budget taken by admission
 * (bucket_gate, in second k->taken), is moved to this one, and
 * k->taken is 0 after; any other waits for its turn, at most
 * llm.timeout.  Then the request; the answer's usage, bounded, in
 * r->u, what it cost at the model's price (soul_price) in r->cost, and
 * what was mended a warning of k's outcome.  0 with r as llm_send
 * fills it (its counts bounded); -1 with err, r->fail and r->hold, as
 * llm_send, when the request failed or never got its turn (LLM_TEMP).
 */
int
ask_send(struct wake *k, const struct llm_conf *lc, int triage,
    json_t *body, struct llm_reply *r, char *err)
{
	const char *ep = triage ? k->tep : k->ep;
	const struct price *price = soul_price(k->s, triage);
	time_t taken = k->taken, held;
	char note[384] = "", max[32];
	int rc;

	k->taken = 0;
	rc = bucket_send(ep, taken, lc->timeout, err);
	if (rc != 1) {
		memset(r, 0, sizeof *r);
		r->fail = LLM_TEMP;
		r->cost = price_cost(price, &r->u);
		return -1;
	}
	rc = llm_send(lc, body, k->now, r, err);
	snprintf(max, sizeof max, " (%lld)", lc->max_tokens);
	ask_usage_bound(&r->u, (long long)llm_cost(body), answered(r),
	    lc->max_tokens, note, sizeof note);
	bucket_after(ep, r->status, r->hold, r->u.prompt + r->u.completion,
	    time(NULL));
	if ((held = hold_after(lc, rc, r, k->now)) > k->held_until)
		k->held_until = held;
	r->cost = price_cost(price, &r->u);
	if (note[0] != '\0')
		outcome_warn(k, note);
	if (rc == 0 && r->cut != NULL) {
		snprintf(note, sizeof note, "%sthe reply stopped at %s%s, "
		    "unfinished: never taken for a ghost (heart-soul(5), "
		    "GHOSTS)", triage ? "triage: " : "", r->cut,
		    strcmp(r->cut, "max_tokens") == 0 ? max : "");
		outcome_warn(k, note);
	}
	return rc;
}
