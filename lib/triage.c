/*
 * triage.c - the structured skip/run decision, the heartbeat tool, and
 * the cheap triage model that asks it alone (heart-soul(5), llm.triage).
 *
 * A wake whose soul names llm.triage asks that endpoint first, with the
 * system prompt and the wake's own prompt (the checklist's open items,
 * the gate's output and the meta line) but no history and no tool but
 * heartbeat, which it must call.  Its reply is judged by idle.c, the
 * one judge of replies, as ghost.mode: tool's first reply is (the main
 * model asked the same question with the same tool): a clean skip ends
 * the wake as a ghost; run, a finding beside a skip, or no readable
 * decision hands it to the main model (run.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

static const char heartbeat_tool[] =
    "{\"type\":\"function\",\"function\":{\"name\":\"heartbeat\","
    "\"description\":\"Call this first, before anything else: does this "
    "wake have work? skip: nothing needs doing or telling now. run: "
    "there is work; go on with it.\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"action\":{\"type\":\"string\","
    "\"enum\":[\"skip\",\"run\"]},\"reason\":{\"type\":\"string\","
    "\"description\":\"why, in a few words\"}},\"required\":"
    "[\"action\"]}}}";

/* The heartbeat tool, OpenAI form. */
json_t *
triage_hb_tool(void)
{
	return json_loads(heartbeat_tool, 0, NULL);
}

/* The triage request's body: system (may be NULL) and prompt alone,
 * the heartbeat tool offered and forced. */
json_t *
triage_body(const struct llm_conf *tc, const char *system, const char *prompt)
{
	json_t *msgs = json_array(), *tools = json_array(), *body;

	if (system != NULL)
		json_array_append_new(msgs, json_pack("{s:s,s:s}", "role",
		    "system", "content", system));
	json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user",
	    "content", prompt));
	json_array_append_new(tools, triage_hb_tool());
	body = llm_body(tc, msgs, tools, "heartbeat");
	json_decref(msgs);
	json_decref(tools);
	return body;
}

/*
 * Ask the triage endpoint (a's, through ask.c): system (may be NULL)
 * and prompt, the heartbeat tool forced.  0 with the reply in t->text
 * and t->calls, to judge (idle_judge); -1 with err, t->fail and
 * t->hold (llm_reply's).  The tokens are counted either way, and
 * priced in a->cost.
 */
int
triage_ask(struct ask *a, const char *system, const char *prompt,
    time_t now, struct triage *t, char *err)
{
	struct llm_reply r;
	json_t *body;
	int rc;

	memset(t, 0, sizeof *t);
	body = triage_body(a->lc, system, prompt);
	rc = ask_send(a, body, now, &r, err);
	json_decref(body);
	t->u = a->u;
	t->status = r.status;
	t->hold = r.hold;
	if (rc == -1) {
		t->fail = r.fail;
		t->hold = r.hold;
	} else {
		t->text = r.text;
		t->calls = json_incref(r.tool_calls);
		r.text = NULL;
	}
	llm_reply_free(&r);
	return rc;
}

/* What the result line says of it: its endpoint, decision as judged
 * (t->decision: the action only when the model gave one), usage and
 * what that cost (nanodollars, -1: no price). */
json_t *
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

void
triage_free(struct triage *t)
{
	free(t->text);
	json_decref(t->calls);
	json_decref(t->decision);
	t->text = NULL;
	t->calls = NULL;
	t->decision = NULL;
}
