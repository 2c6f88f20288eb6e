/*
 * triage.c - the structured skip/run decision, the heartbeat tool, and
 * the cheap triage model that asks it alone (heart-soul(5), llm.triage).
 *
 * A wake whose soul names llm.triage asks that endpoint first, with the
 * system prompt and the wake's own prompt (the checklist's open items,
 * the gate's output and the meta line) but no history and no tool but
 * heartbeat, which it must call: skip ends the wake as a ghost, run
 * hands it to the main model.  ghost.mode: tool asks the main model the
 * same question with the same tool, and reads its answer the same way
 * (triage_hb_decision): one decision, one reading of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"

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

/*
 * The decision a reply's calls carry: only a heartbeat call with action
 * run, made first, is work; skip, no call, any other first call or an
 * unreadable action is a skip.  Returns {"action", "reason"}, *run 1
 * for run.
 */
json_t *
triage_hb_decision(const json_t *calls, int *run)
{
	const json_t *call = json_array_get(calls, 0), *fn;
	const char *action = NULL, *why, *a, *name;
	json_t *args = NULL, *d;

	fn = json_object_get(call, "function");
	name = json_string_value(json_object_get(fn, "name"));
	if (name != NULL && strcmp(name, "heartbeat") == 0) {
		a = json_string_value(json_object_get(fn, "arguments"));
		args = json_loads(a ? a : "", 0, NULL);
		action = json_string_value(json_object_get(args, "action"));
	}
	*run = action != NULL && strcmp(action, "run") == 0;
	why = json_string_value(json_object_get(args, "reason"));
	if (why == NULL)
		why = call == NULL ? "no heartbeat call" : args == NULL ?
		    "the first call was not a readable heartbeat call" :
		    action == NULL || (!*run && strcmp(action, "skip")) ?
		    "no readable heartbeat action" : NULL;
	d = json_pack("{s:s,s:s?}", "action", *run ? "run" : "skip",
	    "reason", why);
	json_decref(args);
	return d;
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
 * and prompt, the heartbeat tool forced.  0 with t->decision and
 * t->run; -1 with err, t->fail and t->hold (llm_reply's).  The tokens
 * are counted either way, and priced in a->cost.
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
	} else
		t->decision = triage_hb_decision(r.tool_calls, &t->run);
	llm_reply_free(&r);
	return rc;
}

/* What the result line says of it: its endpoint, decision, usage and
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
	json_decref(t->decision);
	t->decision = NULL;
}
