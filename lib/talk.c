/*
 * talk.c - the conversation of one admitted wake with the model and
 * its tools: the prompt and the request (the history's tail, the
 * checklist's open items within the budget, the gate's output, the
 * triage's finding), the calls to the model, the tool calls it asks
 * for (tool.c, mcp.c), its replies judged by idle.c (a ghost, a
 * finding, work; a reply with no text and no call fails the wake), and
 * the tokens it spent.
 * run.c admits the wake before; talk_wake asks the triage model first
 * when the soul names one (triage.c), and tells the breaker, the
 * counters and wake.json the outcome.
 *
 * Invariants: the history is read, never written (heart-ghost writes
 * it); a wake runs at most seed_tool_cap tool calls, so it sends at
 * most seed_tool_cap + 2 requests to the model; every tool call and
 * result is in the result's messages, up to WAKE_MSGMAX bytes, past
 * which the wake ends; the outcome goes into the wake through
 * outcome.c, never straight into the result;
 * every request goes through ask.c, which counts and prices it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

/* a wake's messages: half a result line, so that every result is a
 * line heart-ghost reads (heart(7), LIMITS) */
#define WAKE_MSGMAX	(GHOST_LINEMAX / 2)

struct talk {
	json_t	*msgs;		/* the request's messages, growing */
	size_t	 h0, h1;	/* the history in msgs: [h0, h1) */
	size_t	 bytes;		/* of the result's messages */
	int	 overflow;	/* they would pass WAKE_MSGMAX */
	int	 empty;		/* the reply said nothing (IDLE_EMPTY) */
	int	 fail;		/* the model's failure: LLM_* */
	time_t	 hold;		/* and how long it asks to be let be */
	json_t	*offer;		/* the tools offered, or NULL */
	const char *force;	/* the tool the next reply must call */
	const char *hide;	/* the key's variable, kept from tools */
	enum chamber c;
	struct usage u;		/* its requests' tokens */
	long long cost;		/* its requests', nano$; -1: no price */
	int	 calls, failed;	/* tool calls run, and failed */
	struct mcp *mcp;	/* the MCP servers started, or NULL */
	int	 servers, sfailed;	/* MCP servers started, and failed */
	int	 capped;	/* the model asked for one past the cap */
	int	 ids;		/* call ids given by heart */
	char	 toolerr[HEART_ERRLEN];	/* the first tool failure */
};

static const char *default_prompt[CH_NCHAMBERS] = {
	"This is a scheduled heartbeat. Review your duties and any open "
	    "items below.",
	"The user has been quiet for a while. Explore your domain for "
	    "anything worth their attention."
};

static int
tool_mode(const struct soul *s)
{
	return strcmp(s->ghost_mode, "tool") == 0;
}

/* The soul's MCP servers with a tool allowed: those a wake starts. */
static int
mcp_wanted(const struct soul *s)
{
	const char *name;
	json_t *conf;
	int n = 0;

	json_object_foreach(s->mcp, name, conf)
		n += json_array_size(json_object_get(conf, "tools")) > 0;
	return n;
}

/*
 * The chamber prompt, the checklist's open items, the gate's output,
 * the triage's reason, and the meta block; for the triage model
 * (triage), the heartbeat question alone at its end.
 */
static char *
talk_prompt(struct wake *k, enum chamber c, int triage)
{
	const struct soul *s = k->s;
	char now[40], last[64], *out = NULL;
	size_t n = 0;
	FILE *fp;
	struct caps caps;
	long long limit;

	cap_from_soul(s, &caps);
	limit = cap_limit(&caps, c);
	clock_iso(s->timezone, k->now, now, sizeof now);
	if (k->prev.last[c]) {
		clock_iso(s->timezone, k->prev.last[c], last, sizeof last);
		strncat(last, k->prev.last_status[c][0] ? " (" : "",
		    sizeof last - strlen(last) - 1);
		strncat(last, k->prev.last_status[c], sizeof last -
		    strlen(last) - 1);
		strncat(last, k->prev.last_status[c][0] ? ")" : "",
		    sizeof last - strlen(last) - 1);
	} else
		snprintf(last, sizeof last, "never");
	if ((fp = open_memstream(&out, &n)) == NULL)
		abort();
	fprintf(fp, "%s", s->ch[c].prompt ? s->ch[c].prompt :
	    default_prompt[c]);
	if (k->g.items != NULL || k->g.left > 0)
		fprintf(fp, "\n\nOpen items of your checklist:\n%s\n",
		    k->g.items ? k->g.items : "");
	if (k->g.left > 0)
		fprintf(fp, "[heart: %zu open items left out to fit "
		    "llm.context_budget; they stay open for a later wake]\n",
		    k->g.left);
	if (k->g.unread)
		fprintf(fp, "[heart: the checklist is longer than %d KiB; "
		    "the rest of it was not read]\n", HEART_CHECKMAX / 1024);
	if (k->gate_out != NULL)
		fprintf(fp, "\n\nWhat changed since your last wake (your "
		    "gate's output):\n%s\n", k->gate_out);
	if (k->found != NULL && !triage)
		fprintf(fp, "\n\n%s\n", k->found);
	fprintf(fp, "\n\n[heart] local time: %s (%s); chamber: %s; "
	    "last %s wake: %s; wakes left today: %lld of %lld; "
	    "consecutive failures: %lld; last error: %s.\n",
	    now, s->timezone, soul_chamber_name(c), soul_chamber_name(c), last,
	    limit > k->cv.total ? limit - k->cv.total : 0, limit,
	    k->bv.llm_fails > k->bv.tool_fails ? k->bv.llm_fails :
	    k->bv.tool_fails, k->prev.error[0] ? k->prev.error : "none");
	if (tool_mode(s) || triage)
		fprintf(fp, "First call heartbeat: action skip if nothing "
		    "needs doing now, run if there is work.");
	else
		fprintf(fp, "Answer %s alone if there is nothing to do.",
		    s->ghost_token);
	if ((s->tools != NULL || mcp_wanted(s)) && s->ch[c].seed_tool_cap > 0 &&
	    !triage)
		fprintf(fp, " At most %lld tool calls in this wake.",
		    s->ch[c].seed_tool_cap);
	fclose(fp);
	return out;
}

/* A text's bytes in a request, as a JSON string (an item's: as its
 * newline's, of the same two bytes as its quotes) */
static size_t
text_cost(const char *text)
{
	json_t *j = json_string(text);
	size_t n = j != NULL ? llm_cost(j) : strlen(text) * 6 + 2;

	json_decref(j);
	return n;
}

/* The due items of all (split in place), as checklist_fit weighs them. */
static struct checklist_item *
items_of(struct wake *k, char *all, size_t *n)
{
	struct checklist_item *it;
	char *line, *save = NULL;
	const char *p;
	long long iv;
	size_t lines = 1;

	for (p = all; *p != '\0'; p++)
		lines += *p == '\n';
	it = xcalloc(lines, sizeof *it);
	*n = 0;
	for (line = strtok_r(all, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		it[*n].line = line;
		it[*n].cost = text_cost(line);
		if ((it[*n].every = checklist_interval(line, &iv)))
			it[*n].carried = wake_carried(k->dir, &k->w,
			    k->g.chamber, line);
		(*n)++;
	}
	return it;
}

/* What talk_fit kept, into the result, and a warning of what it left
 * out: the checklist has outgrown the budget. */
static void
fit_said(struct wake *k, size_t kept, long long budget)
{
	char w[400];

	json_object_set_new(k->res, "checklist", json_pack("{s:I,s:I,s:b}",
	    "items", (json_int_t)kept, "left_out", (json_int_t)k->g.left,
	    "unread", k->g.unread));
	if (k->g.left > 0) {
		snprintf(w, sizeof w, "checklist: %zu of %zu due items left "
		    "out to fit llm.context_budget (%lld tokens); they stay "
		    "due", k->g.left, kept + k->g.left, budget);
		outcome_warn(k, w);
	}
	if (k->g.unread) {
		snprintf(w, sizeof w, "checklist: longer than %d KiB; the "
		    "rest of it was not read", HEART_CHECKMAX / 1024);
		outcome_warn(k, w);
	}
}

/*
 * The checklist's due items within llm.context_budget, before any
 * prompt is built (the smaller budget of the two models' when a triage
 * model asks first: both see the same items): those checklist_fit
 * keeps in llm_items_room of what the system prompt and the rest of
 * the prompt cost.  Those left out are counted in the prompt and the
 * result, and stay due: they are not carried.
 */
static void
talk_fit(struct wake *k, const struct llm_conf *lc)
{
	struct checklist_item *it;
	long long budget = lc->budget;
	char *all = k->g.items, *text, *out = NULL;
	size_t n, i, len = 0, fixed, kept = 0;
	FILE *fp;

	if (all == NULL)
		return;
	if (k->triage && k->tc.budget < budget)
		budget = k->tc.budget;
	it = items_of(k, all, &n);
	k->g.items = NULL;
	k->g.left = n;		/* the note, at its longest */
	text = talk_prompt(k, k->g.chamber, 0);
	fixed = text_cost(text) + (k->s->system ? text_cost(k->s->system) :
	    0);
	free(text);
	k->g.left = checklist_fit(it, n, llm_items_room(fixed, budget));
	if ((fp = open_memstream(&out, &len)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		if (it[i].keep)
			fprintf(fp, "%s%s", kept++ ? "\n" : "", it[i].line);
	fclose(fp);
	k->g.items = kept > 0 ? out : NULL;
	if (kept == 0)
		free(out);
	free(it);
	free(all);
	fit_said(k, kept, budget);
}

/* Keep only what a model needs of a history line. */
static json_t *
context_msg(json_t *m)
{
	static const char *keep[] = { "role", "content", "tool_calls",
	    "tool_call_id", "name", NULL };
	json_t *o = json_object(), *v;
	int i;

	for (i = 0; keep[i] != NULL; i++)
		if ((v = json_object_get(m, keep[i])) != NULL)
			json_object_set(o, keep[i], v);
	return o;
}

/*
 * system, the last history.keep messages, then the new user message;
 * *h0 and *h1 are where the history begins and ends (llm_fit)
 */
static json_t *
request_messages(struct wake *k, json_t *user, size_t *h0, size_t *h1,
    char *err)
{
	json_t *msgs = json_array(), *hist = NULL, *m;
	size_t i;

	if (k->s->system != NULL)
		json_array_append_new(msgs, json_pack("{s:s,s:s}", "role",
		    "system", "content", k->s->system));
	if (k->s->history_keep > 0 && hist_tail(k->s->name,
	    (size_t)k->s->history_keep, &hist, err) == -1) {
		json_decref(msgs);
		return NULL;
	}
	json_array_foreach(hist, i, m) {
		/* a result whose call was cut off by keep means nothing */
		if (json_array_size(msgs) <= (k->s->system != NULL) &&
		    json_is_string(json_object_get(m, "role")) &&
		    strcmp(json_string_value(json_object_get(m, "role")),
		    "tool") == 0)
			continue;
		json_array_append_new(msgs, context_msg(m));
	}
	json_decref(hist);
	*h0 = k->s->system != NULL;
	*h1 = json_array_size(msgs);
	json_array_append(msgs, user);
	return msgs;
}

/* The tools offered in chamber c: heartbeat first in tool mode. */
static json_t *
offer(const struct soul *s, enum chamber c)
{
	json_t *arr;

	if (s->tools != NULL && s->ch[c].seed_tool_cap > 0)
		arr = tool_offer(s->tools);
	else
		arr = json_array();
	if (tool_mode(s))
		json_array_insert_new(arr, 0, idle_heartbeat_tool());
	if (json_array_size(arr) == 0) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

/* The first request's messages, and the prompt into the result; a
 * warning of a missing key, if any. */
static int
talk_begin(struct wake *k, const struct llm_conf *lc, struct talk *t,
    char *err)
{
	json_t *user;
	char *text, w[1024];

	memset(t, 0, sizeof *t);
	t->c = k->g.chamber;
	text = talk_prompt(k, t->c, 0);
	user = json_pack("{s:s,s:s}", "role", "user", "content", text);
	free(text);
	t->msgs = request_messages(k, user, &t->h0, &t->h1, err);
	json_decref(user);
	if (t->msgs == NULL)
		return -1;
	t->cost = k->s->llm.price.set ? 0 : -1;
	t->offer = offer(k->s, t->c);
	t->force = tool_mode(k->s) ? "heartbeat" : NULL;
	t->hide = lc->key_env;
	if (llm_key_warning(lc, w, sizeof w))
		outcome_warn(k, w);
	return 0;
}

/* m to the request and to the result's messages, while they stay
 * under WAKE_MSGMAX: past it the wake ends (talk_run). */
static void
say(struct wake *k, struct talk *t, json_t *m)
{
	size_t c = llm_cost(m);

	if (t->bytes + c > WAKE_MSGMAX)
		t->overflow = 1;
	if (!t->overflow) {
		json_array_append(k->said, m);
		t->bytes += c;
	}
	json_array_append_new(t->msgs, m);
}

/*
 * Every call gets an id (unique in the wake, where the server gave
 * none) and a type, so that its result can name it.
 */
static void
normalize_calls(struct talk *t, json_t *calls)
{
	json_t *call;
	char id[32];
	size_t i;

	json_array_foreach(calls, i, call) {
		if (!json_is_string(json_object_get(call, "id"))) {
			snprintf(id, sizeof id, "call_heart_%d", ++t->ids);
			json_object_set_new(call, "id", json_string(id));
		}
		json_object_set_new(call, "type", json_string("function"));
	}
}

static const char *
call_name(const json_t *call)
{
	const char *n = json_string_value(json_object_get(json_object_get(
	    call, "function"), "name"));

	return n ? n : "";
}

static void
tool_result(struct wake *k, struct talk *t, const json_t *call,
    const char *text)
{
	say(k, t, json_pack("{s:s,s:O,s:s}", "role", "tool", "tool_call_id",
	    json_object_get(call, "id"), "content", text));
}

/* Run one call, its result to the model.  0, or 1 when past the cap. */
static int
run_call(struct wake *k, struct talk *t, const json_t *call)
{
	struct tool_ctx ctx = { k->s->name, soul_chamber_name(t->c), k->id,
	    t->hide, t->offer };
	char e[HEART_ERRLEN], *text;
	int rc;

	if (t->calls >= k->s->ch[t->c].seed_tool_cap) {
		t->capped = 1;
		return 1;
	}
	t->calls++;
	if (tool_mode(k->s) && strcmp(call_name(call), "heartbeat") == 0) {
		tool_result(k, t, call, "already decided: run. Go on.");
		return 0;
	}
	if ((rc = mcp_call(t->mcp, call, &text, e)) == 1)
		rc = tool_call(k->s, &ctx, call, &text, e);
	if (rc == -1) {
		t->failed++;
		if (t->toolerr[0] == '\0')
			snprintf(t->toolerr, sizeof t->toolerr, "tool %.400s",
			    e);
	}
	tool_result(k, t, call, text);
	free(text);
	return 0;
}

/* The reply as an assistant message, its tool calls included. */
static json_t *
assistant(const struct llm_reply *r)
{
	json_t *m = json_pack("{s:s}", "role", "assistant");

	if (r->tool_calls != NULL) {
		json_object_set_new(m, "content", r->text && *r->text ?
		    json_string(r->text) : json_null());
		json_object_set(m, "tool_calls", r->tool_calls);
	} else
		json_object_set_new(m, "content", json_string(r->text ?
		    r->text : ""));
	return m;
}

/* Each call of the reply from the i-th on answered with text, so that
 * the history stays whole. */
static void
answer_all(struct wake *k, struct talk *t, const json_t *calls, size_t i,
    const char *text)
{
	for (; i < json_array_size(calls); i++)
		tool_result(k, t, json_array_get(calls, i), text);
}

/*
 * Tool mode, the first reply, as idle.c judges it: work (its heartbeat
 * call answered, the rest run), or the wake decided, a ghost or a
 * finding kept (each call answered "not run").  A reply that gives no
 * readable decision is work when it makes calls, else its text is
 * judged as token mode's, with a warning.  Returns the index of the
 * first call to run, or -1 when the wake is decided.
 */
static int
decide(struct wake *k, struct talk *t, struct llm_reply *r)
{
	const json_t *call = json_array_get(r->tool_calls, 0);
	struct idle_verdict v;
	char w[512];
	int first = -1;

	idle_judge(k->s, r->text, r->tool_calls, 1, r->cut != NULL, &v);
	json_object_set(k->res, "decision", v.decision);
	say(k, t, assistant(r));
	if (v.why[0] != '\0' && v.what != IDLE_EMPTY) {
		snprintf(w, sizeof w, "ghost.mode tool: %s: %s", v.why,
		    v.what == IDLE_RUN ? "taken as run" :
		    "the reply judged by its text");
		outcome_warn(k, w);
	}
	if (v.what == IDLE_EMPTY)
		t->empty = 1;
	else if (v.what != IDLE_RUN) {
		if (v.what == IDLE_KEEP)
			answer_all(k, t, r->tool_calls, 0, "not run: this "
			    "wake was skipped");
		outcome_reply(k, v.what == IDLE_GHOST ? ST_IDLE : ST_OK, v.keep,
		    v.level);
	} else if (strcmp(call_name(call), "heartbeat") == 0) {
		tool_result(k, t, call, v.why[0] ? "this call could not be "
		    "read; taken as run: go on with the work, then answer." :
		    "run: go on with the work, then answer.");
		first = 1;
	} else
		first = 0;
	idle_verdict_free(&v);
	return first;
}

/*
 * One reply.  Returns 1 to send the conversation again, 0 when the
 * wake is decided (the result's status is set).
 */
static int
answer(struct wake *k, struct talk *t, struct llm_reply *r)
{
	struct idle_verdict v;
	json_t *call;
	int first = t->force != NULL, i = 0;

	t->force = NULL;
	normalize_calls(t, r->tool_calls);
	if (first && (i = decide(k, t, r)) == -1)
		return 0;
	if (!first) {
		say(k, t, assistant(r));
		if (r->tool_calls == NULL) {
			idle_judge(k->s, r->text, NULL, 0, r->cut != NULL, &v);
			if (v.what == IDLE_EMPTY)
				t->empty = 1;
			else
				outcome_reply(k, v.what == IDLE_GHOST ? ST_IDLE :
				    ST_OK, v.keep, v.level);
			idle_verdict_free(&v);
			return 0;
		}
	}
	for (; (size_t)i < json_array_size(r->tool_calls); i++) {
		call = json_array_get(r->tool_calls, i);
		if (run_call(k, t, call) == 1) {
			outcome_status(k, ST_TOOL_CAP);
			return 0;
		}
	}
	return 1;
}

/*
 * The wake's tokens (t->u) and what they cost at the soul's price (each
 * request's, as ask.c counted it), the triage's included, into the
 * result: "usage" (the main model's; the triage's are in "triage"),
 * and "cost" in dollars (null: no price).  Returns the cost in
 * nanodollars, -1 when there is no price.
 */
static long long
talk_spent(struct wake *k, const struct talk *t)
{
	const struct usage *u = &t->u;
	long long cost = t->cost;

	if (k->tcost >= 0)	/* the triage's too: the wake's cost */
		cost = (cost < 0 ? 0 : cost) + k->tcost;
	json_object_set_new(k->res, "usage", json_pack("{s:I,s:I,s:I,s:I}",
	    "prompt_tokens", (json_int_t)u->prompt, "completion_tokens",
	    (json_int_t)u->completion, "cached_tokens", (json_int_t)u->cached,
	    "cache_write_tokens", (json_int_t)u->cache_write));
	json_object_set_new(k->res, "cost", price_json(cost));
	return cost;
}

/* The next request's body: the conversation within the budget. */
static json_t *
talk_request(const struct llm_conf *lc, const struct talk *t)
{
	json_t *ctx, *body;

	ctx = llm_fit(t->msgs, t->h0, t->h1, lc->budget);
	body = llm_body(lc, ctx, t->offer, t->force);
	json_decref(ctx);
	return body;
}

static void
tell(void *arg, const char *server, const char *text)
{
	const struct wake *k = arg;

	if (k->o->tell != NULL)
		k->o->tell(k->s->name, server, text);
}

/*
 * The soul's MCP servers, started now that the wake is admitted, when
 * the chamber allows tool calls: their allowed tools join the offer; a
 * server that fails is a tool failure, and its tools are not offered.
 */
static void
mcp_begin(struct wake *k, struct talk *t)
{
	struct tool_ctx ctx = { k->s->name, soul_chamber_name(t->c), k->id,
	    t->hide, NULL };
	char e[HEART_ERRLEN];
	const json_t *w, *offer, *warn;
	size_t i;

	if (!mcp_wanted(k->s) || k->s->ch[t->c].seed_tool_cap <= 0)
		return;
	t->sfailed = mcp_open(k->s, &ctx, k->o->version, 0, &t->mcp, e);
	t->servers = mcp_wanted(k->s);
	if (t->sfailed > 0 && t->toolerr[0] == '\0')
		snprintf(t->toolerr, sizeof t->toolerr, "tool %.400s", e);
	if (json_array_size(offer = mcp_offer(t->mcp, &warn)) > 0) {
		if (t->offer == NULL)
			t->offer = json_array();
		json_array_extend(t->offer, (json_t *)offer);
	}
	json_array_foreach(warn, i, w)
		outcome_warn(k, json_string_value(w));
}
/*
 * The model call, and the tool calls it asks for, until a final
 * answer, an error or the seed tool cap.  Returns 0, or 1 when the
 * model failed (err says why, t->fail and t->hold how); the outcome
 * is for talk_wake to settle.
 */
static int
talk_run(struct wake *k, const struct llm_conf *lc, struct talk *t,
    char *err)
{
	struct llm_reply r;
	json_t *body;
	int rc, more = 1;

	mcp_begin(k, t);
	t->bytes = llm_cost(json_array_get(t->msgs, t->h1));
	json_array_append(k->said, json_array_get(t->msgs, t->h1));
	while (more) {
		body = talk_request(lc, t);
		rc = ask_send(k, lc, 0, body, &r, err);
		json_decref(body);
		if (rc == -1) {
			t->fail = r.fail;
			t->hold = r.hold;
			break;
		}
		t->u.prompt += r.u.prompt;
		t->u.completion += r.u.completion;
		t->u.cached += r.u.cached;
		t->u.cache_write += r.u.cache_write;
		if (r.cost >= 0)
			t->cost = (t->cost < 0 ? 0 : t->cost) + r.cost;
		more = answer(k, t, &r);
		llm_reply_free(&r);
		if (t->empty || t->overflow) {
			if (t->empty)
				errf(err, "empty reply: no text and no tool "
				    "call");
			else
				errf(err, "the wake's messages passed %d "
				    "bytes, half the longest result line "
				    "heart-ghost reads: the wake ends here",
				    WAKE_MSGMAX);
			t->fail = LLM_TEMP;
			more = 1;
			break;
		}
	}
	mcp_close(t->mcp, tell, k);
	return more;
}

/* What talk_begin holds. */
static void
talk_end(struct talk *t)
{
	json_decref(t->msgs);
	json_decref(t->offer);
}

/* --dry-run: {"request", and "triage_request" if any}, as they would
 * be sent, with the key's warning; NULL (the outcome says why) when
 * its messages cannot be made. */
json_t *
talk_dry(struct wake *k, const struct llm_conf *lc, char *err)
{
	struct talk t;
	json_t *body, *dry;
	char *text;

	talk_fit(k, lc);
	if (talk_begin(k, lc, &t, err) == -1) {
		outcome_set(k, "error", err);
		return NULL;
	}
	body = talk_request(lc, &t);
	dry = json_pack("{s:o}", "request", llm_dry(lc, body));
	json_decref(body);
	talk_end(&t);
	if (k->triage) {
		text = talk_prompt(k, k->g.chamber, 1);
		json_object_set_new(dry, "triage_request", triage_dry(k,
		    text));
		free(text);
	}
	return dry;
}

/* The outcome to the breaker, the counters and wake.json.  Exit code. */
static int
settle(struct wake *k, struct talk *t, const char *llmerr, char *err)
{
	enum chamber c = t->c;
	enum wake_status st = k->out.status;
	char e2[HEART_ERRLEN], why[HEART_ERRLEN] = "";
	int flags, billed, rc = HX_OK;
	long long cost;
	json_t *tools;

	/* its notice is printed after its result (notice.c) */
	flags = BRK_TELL | (llmerr || k->tfail ? BRK_LLM_FAIL : BRK_LLM_OK);
	if (llmerr && (t->fail == LLM_CONFIG || t->fail == LLM_QUOTA))
		flags |= BRK_LLM_CONFIG;	/* a person must act */
	if (!llmerr && (k->tfail == LLM_CONFIG || k->tfail == LLM_QUOTA))
		flags |= BRK_LLM_CONFIG;
	if (t->capped || t->failed || t->sfailed)
		flags |= BRK_TOOL_FAIL;
	else if (t->calls > 0)
		flags |= BRK_TOOL_OK;
	if (llmerr)
		snprintf(why, sizeof why, "%s", llmerr);
	else if (k->tfail)
		snprintf(why, sizeof why, "%s", k->terr);
	else if (t->capped) {
		st = ST_TOOL_CAP;
		snprintf(why, sizeof why, "the model asked for more than "
		    "seed_tool_cap (%lld) tool calls in one wake; the wake "
		    "is discarded", k->s->ch[c].seed_tool_cap);
		outcome_reason(k, why);
	} else if (t->failed || t->sfailed)
		snprintf(why, sizeof why, "%s", t->toolerr);
	if (llmerr || t->capped) {
		outcome_status(k, llmerr ? ST_ERROR : st);
		outcome_set(k, "error", why);
	}
	cost = talk_spent(k, t);
	tools = json_pack("{s:i,s:i}", "calls", t->calls, "failed",
	    t->failed);
	if (t->servers > 0) {
		json_object_set_new(tools, "servers",
		    json_integer(t->servers));
		json_object_set_new(tools, "servers_failed",
		    json_integer(t->sfailed));
	}
	json_object_set_new(k->res, "tools", tools);
	snprintf(k->w.error, sizeof k->w.error, "%.255s", why);
	if (why[0] != '\0') {
		k->w.error_at = k->now;
		snprintf(err, HEART_ERRLEN, "%s", why);
		rc = llmerr && t->fail == LLM_CONFIG ? HX_CONFIG : HX_TEMPFAIL;
	}
	snprintf(k->w.last_status[c], sizeof k->w.last_status[c], "%s",
	    status_name(llmerr ? ST_ERROR : st));
	billed = t->u.prompt > 0 || t->u.completion > 0 || k->tu.prompt > 0 ||
	    k->tu.completion > 0 || !llmerr;
	/* a wake that cost nothing frees its place in the fleet's budget */
	if (brk_record(k->s->name, &k->bc, k->now, flags, llmerr ? t->hold :
	    k->tfail ? k->thold : 0, why[0] ? why : NULL, k->events, e2) ==
	    -1 || (billed && cap_record(k->s->name, k->s->timezone, k->now,
	    !llmerr && st == ST_IDLE, &t->u, &k->tu, cost, e2) == -1) ||
	    (!billed && budget_give(k->s->name, k->now, e2) == -1)) {
		snprintf(err, HEART_ERRLEN, "%s", e2);
		rc = HX_IOERR;
	}
	if (brk_peek(k->s->name, &k->bc, k->now, &k->bv, e2) == -1) {
		snprintf(err, HEART_ERRLEN, "%s", e2);
		rc = HX_IOERR;
	}
	return rc;
}

/* The triage model first, when the soul names one (triage.c), then
 * unless it ended the wake the conversation, and its outcome settled.
 * Exit code. */
int
talk_wake(struct wake *k, const struct llm_conf *lc, char *err)
{
	struct talk t;
	char *text;
	int rc, go = 1;

	talk_fit(k, lc);
	if (k->triage) {
		text = talk_prompt(k, k->g.chamber, 1);
		go = triage_wake(k, text, &rc, err);
		free(text);
	}
	if (!go)
		return rc;
	if (talk_begin(k, lc, &t, err) == -1) {
		outcome_set(k, "error", err);
		return HX_IOERR;
	}
	rc = settle(k, &t, talk_run(k, lc, &t, err) ? err : NULL, err);
	talk_end(&t);
	return rc;
}
