/*
 * triage.c - the structured skip/run decision asked of the cheap
 * triage model alone, with idle.c's heartbeat tool (heart-soul(5),
 * llm.triage).
 *
 * A wake whose soul names llm.triage asks that endpoint first, with the
 * system prompt and the wake's own prompt (the checklist's open items,
 * the gate's output and the meta line) but no history and no tool but
 * heartbeat, which it must call.  Its reply is judged by idle.c, the
 * one judge of replies, as ghost.mode: tool's first reply is (the main
 * model asked the same question with the same tool): a clean skip ends
 * the wake as a ghost; run, a finding beside a skip, or no readable
 * decision hands it to the main model (talk.c).  triage_wake is that
 * step of a wake: the outcome of a skip, or what the main model is
 * told the first look found, into the wake (outcome.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

/* What the triage model said, or how it failed */
struct triage {
	char	*text;		/* its reply, to judge (idle_judge), */
	json_t	*calls;		/* or NULL */
	int	 cut;		/* it stopped unfinished (llm_reply's) */
	json_t	*decision;	/* as judged: {"action"?, "reason"?}, or NULL */
	struct usage u;		/* its tokens, apart from the main model's */
	int	 fail;		/* failed: LLM_* */
	time_t	 hold;
};

/* The triage request's body: system (may be NULL) and prompt alone,
 * the heartbeat tool offered and forced. */
static json_t *
triage_body(const struct llm_conf *tc, const char *system, const char *prompt)
{
	json_t *msgs = json_array(), *tools = json_array(), *body;

	if (system != NULL)
		json_array_append_new(msgs, json_pack("{s:s,s:s}", "role",
		    "system", "content", system));
	json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user",
	    "content", prompt));
	json_array_append_new(tools, idle_heartbeat_tool());
	body = llm_body(tc, msgs, tools, "heartbeat");
	json_decref(msgs);
	json_decref(tools);
	return body;
}

/* --dry-run: the triage request of the wake's prompt for it (text), as
 * it would be sent (llm_dry). */
json_t *
triage_dry(struct wake *k, const char *text)
{
	json_t *body = triage_body(&k->tc, k->s->system, text), *dry;

	dry = llm_dry(&k->tc, body);
	json_decref(body);
	return dry;
}

/*
 * Ask k's triage endpoint (through ask.c): the soul's system prompt
 * and prompt, the heartbeat tool forced.  0 with the reply in t->text
 * and t->calls, to judge (idle_judge); -1 with err, t->fail and
 * t->hold (llm_reply's).  The tokens are counted either way, and
 * priced in k->tcost.
 */
static int
triage_ask(struct wake *k, const char *prompt, struct triage *t,
    char *err)
{
	struct llm_reply r;
	json_t *body;
	int rc;

	memset(t, 0, sizeof *t);
	body = triage_body(&k->tc, k->s->system, prompt);
	rc = ask_send(k, &k->tc, 1, body, &r, err);
	json_decref(body);
	t->u = r.u;
	k->tcost = r.cost;
	t->hold = r.hold;
	if (rc == -1)
		t->fail = r.fail;
	else {
		t->text = r.text;
		t->calls = json_incref(r.tool_calls);
		t->cut = r.cut != NULL;
		r.text = NULL;
	}
	llm_reply_free(&r);
	return rc;
}

/* What the result line says of it: its endpoint, decision as judged
 * (t->decision: the action only when the model gave one), usage and
 * what that cost (nanodollars, -1: no price). */
static json_t *
triage_json(const struct llm_conf *tc, const struct triage *t,
    long long cost, const char *error)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:I,s:I,s:I,s:I},s:o}",
	    "provider", tc->provider, "model", tc->command ? "command" :
	    tc->model, "usage", "prompt_tokens", (json_int_t)t->u.prompt,
	    "completion_tokens", (json_int_t)t->u.completion,
	    "cached_tokens", (json_int_t)t->u.cached,
	    "cache_write_tokens", (json_int_t)t->u.cache_write,
	    "cost", price_json(cost));

	if (t->decision != NULL)
		json_object_update(o, t->decision);
	if (error != NULL)
		json_object_set_new(o, "error", json_string(error));
	return o;
}

static void
triage_free(struct triage *t)
{
	free(t->text);
	json_decref(t->calls);
	json_decref(t->decision);
	t->text = NULL;
	t->calls = NULL;
	t->decision = NULL;
}

/*
 * The triage's reply is not a clean skip (idle.c judged it): what the
 * main model is told the first look found (its reason to run, the
 * finding beside its skip, or what it said without a decision), and a
 * warning when it did not say run.
 */
static void
triage_go(struct wake *k, const struct idle_verdict *v)
{
	const char *why = json_string_value(json_object_get(v->decision,
	    "reason"));
	char w[HEART_ERRLEN];
	int r = 0;

	if (v->what == IDLE_RUN && v->why[0] == '\0')
		r = asprintf(&k->found, "A first look found work: %s", why ?
		    why : "(no reason given)");
	else if (v->what == IDLE_KEEP)
		r = asprintf(&k->found, "A first look %s: %s", v->why[0] ?
		    "gave no decision but said" : "found work", v->keep);
	if (r == -1)
		abort();
	if (v->why[0] != '\0')
		snprintf(w, sizeof w, "triage: %s; the main model was asked "
		    "in its place", v->why);
	else if (v->what == IDLE_KEEP)
		snprintf(w, sizeof w, "triage: skip, but its reply holds a "
		    "finding; the main model was asked");
	else
		return;
	outcome_warn(k, w);
}

/*
 * A wake's triage, asked the wake's prompt for it (text): 1 to go on
 * to the main model (run, a finding beside a skip or no readable
 * decision, as idle.c judges its reply: triage_go; or the triage
 * failed, kept in k->tfail for the breaker: a failed triage never
 * loses a finding), 0 when it decided a clean skip (a ghost: the
 * result and its counters done, *rc the wake's exit code).
 */
int
triage_wake(struct wake *k, const char *text, int *rc, char *err)
{
	struct triage t;
	struct idle_verdict v;
	enum chamber c = k->g.chamber;
	char e2[HEART_ERRLEN], w[HEART_ERRLEN + 64];
	const char *why;
	int r;

	r = triage_ask(k, text, &t, err);
	k->tu = t.u;
	if (r == -1) {
		json_object_set_new(k->res, "triage", triage_json(&k->tc, &t,
		    k->tcost, err));
		k->tfail = t.fail;
		k->thold = t.hold;
		snprintf(k->terr, sizeof k->terr, "triage: %.400s", err);
		snprintf(w, sizeof w, "%s; the main model was asked in its "
		    "place", k->terr);
		outcome_warn(k, w);
		return 1;
	}
	idle_judge(k->s, t.text, t.calls, 1, t.cut, &v);
	t.decision = json_incref(v.decision);
	json_object_set_new(k->res, "triage", triage_json(&k->tc, &t,
	    k->tcost, NULL));
	if (v.what != IDLE_GHOST || v.why[0] != '\0') {
		triage_go(k, &v);
		idle_verdict_free(&v);
		triage_free(&t);
		return 1;
	}
	idle_verdict_free(&v);
	why = json_string_value(json_object_get(t.decision, "reason"));
	json_array_append_new(k->said, json_pack("{s:s,s:s}", "role", "user",
	    "content", text));
	outcome_status(k, ST_IDLE);
	snprintf(w, sizeof w, "triage: skip%s%.400s", why ? ": " : "",
	    why ? why : "");
	outcome_reason(k, w);
	json_object_set_new(k->res, "cost", price_json(k->tcost));
	triage_free(&t);
	snprintf(k->w.last_status[c], sizeof k->w.last_status[c], "%s",
	    status_name(ST_IDLE));
	k->w.error[0] = '\0';
	*rc = HX_OK;
	if (brk_record(k->s->name, &k->bc, k->now, BRK_LLM_OK | BRK_TELL, 0,
	    NULL, k->events, e2) == -1 || cap_record(k->s->name, k->s->timezone,
	    k->now, 1, NULL, &k->tu, k->tcost, e2) == -1 ||
	    brk_peek(k->s->name, &k->bc, k->now, &k->bv, e2) == -1) {
		snprintf(err, HEART_ERRLEN, "%s", e2);
		*rc = HX_IOERR;
	}
	return 0;
}
