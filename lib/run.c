/*
 * run.c - one wake of one agent, start to end: the lock, the gates
 * (wake.c), the breaker, the cap, the model call, the outcome told to
 * the breaker and the counters, and the wake result (DESIGN.md).
 *
 * Invariants: nothing is sent before every gate has passed; the cap is
 * taken last, so a skipped wake never spends it, and a half-open probe
 * granted to a wake that the cap then refuses is handed back; the
 * history is read, never written (heart-ghost writes it).
 */
#include <sys/file.h>
#include <sys/random.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heart.h"

struct wake {
	const struct soul *s;
	const struct run_opts *o;
	time_t	 now;
	char	 dir[4096];
	char	 id[40];
	struct wake_state w;
	struct wake_state prev;		/* w as it was before this wake */
	struct gate g;
	struct brk_conf bc;
	struct brk_view bv;
	struct cap_view cv;
	json_t	*events;
	json_t	*res;
	long long t0;
};

static long long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
make_id(time_t now, char *buf, size_t n)
{
	unsigned int r = 0;
	struct tm tm;
	char t[20];

	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
		r = (unsigned int)getpid() ^ (unsigned int)now;
	gmtime_r(&now, &tm);
	strftime(t, sizeof t, "%Y%m%dT%H%M%SZ", &tm);
	snprintf(buf, n, "%s-%08x", t, r);
}

static json_t *
result_new(struct wake *k, enum chamber c)
{
	char at[32];

	clock_utc(k->now, at, sizeof at);
	return json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:n,s:n,s:n,s:[],"
	    "s:{s:i,s:i},s:n,s:s,s:{s:i,s:i},s:n,s:i}",
	    "v", 1, "agent", k->s->name, "chamber", chamber_name(c),
	    "wake_id", k->id, "at", at, "status", "error", "reason",
	    "response", "idle_level", "messages", "usage", "prompt_tokens", 0,
	    "completion_tokens", 0, "cap", "breaker", "closed",
	    "tools", "calls", 0, "failed", 0, "error", "duration_ms", 0);
}

static void
set_str(json_t *o, const char *key, const char *v)
{
	json_object_set_new(o, key, v ? json_string(v) : json_null());
}

/* Fill the fields every result carries at its end. */
static void
finish(struct wake *k, const char *status, const char *reason)
{
	char err[HEART_ERRLEN];

	set_str(k->res, "status", status);
	set_str(k->res, "reason", reason && *reason ? reason : NULL);
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
	set_str(k->res, "breaker", brk_state_name(k->bv.state));
	if (k->g.interval > 0)
		json_object_set_new(k->res, "interval",
		    json_integer(k->g.interval));
	if (k->g.next > 0) {
		char iso[32];
		clock_utc(k->g.next, iso, sizeof iso);
		set_str(k->res, "next", iso);
	}
	if (json_array_size(k->events) > 0)
		json_object_set(k->res, "breaker_events", k->events);
	json_object_set_new(k->res, "duration_ms",
	    json_integer(mono_ms() - k->t0));
}

static const char *default_prompt[CH_NCHAMBERS] = {
	"This is a scheduled heartbeat. Review your duties and any open "
	    "items below. If nothing needs the user's attention, respond "
	    "with [IDLE].",
	"The user has been quiet for a while. Explore your domain for "
	    "anything worth their attention. If nothing, respond [IDLE]."
};

/* The chamber prompt, the checklist's open items and the meta block. */
static char *
prompt_text(struct wake *k, enum chamber c)
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
	if (k->g.items != NULL)
		fprintf(fp, "\n\nOpen items of your checklist:\n%s\n",
		    k->g.items);
	fprintf(fp, "\n\n[heart] local time: %s (%s); chamber: %s; "
	    "last %s wake: %s; wakes left today: %lld of %lld; "
	    "consecutive failures: %lld; last error: %s.\n"
	    "Answer %s alone if there is nothing to do.",
	    now, s->timezone, chamber_name(c), chamber_name(c), last,
	    limit > k->cv.total ? limit - k->cv.total : 0, limit,
	    k->bv.llm_fails > k->bv.tool_fails ? k->bv.llm_fails :
	    k->bv.tool_fails, k->prev.error[0] ? k->prev.error : "none",
	    s->ghost_token);
	fclose(fp);
	return out;
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

/* system, the last history.keep messages, then the new user message */
static json_t *
request_messages(struct wake *k, json_t *user, char *err)
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
	json_array_foreach(hist, i, m)
		json_array_append_new(msgs, context_msg(m));
	json_decref(hist);
	json_array_append(msgs, user);
	return msgs;
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
		gate_free(&k->g);
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
	gate_free(&other);
	return 0;
}

/* Breaker, then cap.  Returns 1 when admitted. */
static int
admit(struct wake *k, char *reason, size_t rn, const char **status,
    char *err)
{
	enum chamber c = k->g.chamber;
	struct caps caps;
	char until[40], reset[40];
	int allowed, probe, ok;

	if (brk_check(k->s->name, &k->bc, k->now, &allowed, &probe, &k->bv,
	    k->events, err) == -1)
		return -1;
	if (!allowed) {
		clock_iso(k->s->timezone, k->bv.until, until, sizeof until);
		snprintf(reason, rn, "breaker %s (%s trigger: %s); next "
		    "probe at %s", brk_state_name(k->bv.state),
		    k->bv.trigger[0] ? k->bv.trigger : "?", k->bv.reason,
		    until);
		k->g.next = k->bv.until;
		*status = "open";
		return 0;
	}
	cap_from_soul(k->s, &caps);
	if (cap_take(k->s->name, c, &caps, k->s->timezone, k->now, &ok,
	    &k->cv, err) == -1) {
		if (probe)
			brk_giveback(k->s->name, k->now, NULL);
		return -1;
	}
	if (ok)
		return 1;
	if (probe)
		brk_giveback(k->s->name, k->now, NULL);
	k->g.next = clock_next_midnight(k->s->timezone, k->now);
	clock_iso(k->s->timezone, k->g.next, reset, sizeof reset);
	snprintf(reason, rn, "%s: daily cap reached: %lld of %lld today; "
	    "resets at %s", chamber_name(c), k->cv.total,
	    cap_limit(&caps, c), reset);
	*status = "capped";
	return 0;
}

/* The model call and its outcome.  Returns an exit code. */
static int
call_model(struct wake *k, const struct llm_conf *lc, char *err)
{
	enum chamber c = k->g.chamber;
	struct llm_reply r;
	const char *lvl = NULL, *status;
	json_t *user, *msgs, *body, *m;
	char *text, e2[HEART_ERRLEN];
	int idle, rc = HX_OK;

	text = prompt_text(k, c);
	user = json_pack("{s:s,s:s}", "role", "user", "content", text);
	free(text);
	m = json_object_get(k->res, "messages");
	json_array_append(m, user);
	if ((msgs = request_messages(k, user, err)) == NULL) {
		json_decref(user);
		return HX_IOERR;
	}
	json_decref(user);
	body = llm_body(lc, msgs, NULL);
	json_decref(msgs);
	if (llm_send(lc, body, &r, err) == -1) {
		json_decref(body);
		snprintf(k->w.error, sizeof k->w.error, "%s", err);
		k->w.error_at = k->now;
		brk_record(k->s->name, &k->bc, k->now, BRK_LLM_FAIL, err,
		    k->events, e2);
		set_str(k->res, "error", err);
		snprintf(k->w.last_status[c], sizeof k->w.last_status[c],
		    "error");
		brk_peek(k->s->name, &k->bc, k->now, &k->bv, e2);
		return HX_TEMPFAIL;
	}
	json_decref(body);
	idle = idle_detect(k->s, r.text, &lvl);
	status = idle ? "idle" : "ok";
	json_array_append_new(m, json_pack("{s:s,s:s}", "role", "assistant",
	    "content", r.text));
	set_str(k->res, "response", r.text);
	set_str(k->res, "idle_level", lvl);
	json_object_set_new(k->res, "usage", json_pack("{s:I,s:I}",
	    "prompt_tokens", (json_int_t)r.prompt_tokens,
	    "completion_tokens", (json_int_t)r.completion_tokens));
	set_str(k->res, "status", status);
	snprintf(k->w.last_status[c], sizeof k->w.last_status[c], "%s",
	    status);
	k->w.error[0] = '\0';
	if (brk_record(k->s->name, &k->bc, k->now, BRK_LLM_OK, NULL,
	    k->events, err) == -1 || cap_record(k->s->name,
	    k->s->timezone, k->now, idle, r.prompt_tokens,
	    r.completion_tokens, err) == -1)
		rc = HX_IOERR;
	if (brk_peek(k->s->name, &k->bc, k->now, &k->bv, e2) == -1)
		rc = HX_IOERR;
	llm_reply_free(&r);
	return rc;
}

/* --dry-run: the exact request that would be sent, and nothing spent. */
static int
dry_run(struct wake *k, const struct llm_conf *lc, int open, char *err)
{
	json_t *user, *msgs, *body;
	char *text;

	cap_peek(k->s->name, k->s->timezone, k->now, &k->cv, err);
	text = prompt_text(k, k->g.chamber);
	user = json_pack("{s:s,s:s}", "role", "user", "content", text);
	free(text);
	msgs = request_messages(k, user, err);
	json_decref(user);
	if (msgs == NULL)
		return HX_IOERR;
	body = llm_body(lc, msgs, NULL);
	json_decref(msgs);
	json_object_set_new(k->res, "dry_run", json_true());
	json_object_set_new(k->res, "request", llm_dry(lc, body));
	json_decref(body);
	finish(k, open ? "dry_run" : k->g.status, open ? "would wake "
	    "if the breaker and the cap admit it" : k->g.reason);
	return HX_OK;
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
	set_str(k->res, "error", err);
	finish(k, "error", NULL);
	return code;
}

static int
run_locked(struct wake *k, const struct llm_conf *lc, char *err)
{
	const char *status = NULL;
	char reason[1024];
	int open, r;

	if (wake_load(k->dir, &k->w, err) == -1)
		return fail(k, HX_IOERR, err);
	if (k->w.first_seen == 0)
		k->w.first_seen = k->now;
	k->prev = k->w;
	open = pick_chamber(k);
	json_object_set_new(k->res, "chamber",
	    json_string(chamber_name(k->g.chamber)));
	if (k->g.warning[0])
		json_object_set_new(k->res, "warning",
		    json_string(k->g.warning));
	if (k->o->dry_run)
		return dry_run(k, lc, open, err);
	if (!open) {
		/* a skip writes only what it learnt: first sight, a warning */
		if ((!k->w.exists || k->w.checklist_warned !=
		    k->prev.checklist_warned) && wake_save(k->dir,
		    k->s->name, &k->w, -1, k->now, err) == -1)
			return fail(k, HX_IOERR, err);
		return skip(k, k->g.status, k->g.reason);
	}
	if ((r = admit(k, reason, sizeof reason, &status, err)) == -1)
		return fail(k, HX_IOERR, err);
	if (r == 0) {
		/* a refused wake still uses up its slot, as a dropped timer */
		k->w.last[k->g.chamber] = k->now;
		snprintf(k->w.last_status[k->g.chamber], 16, "%s", status);
		wake_save(k->dir, k->s->name, &k->w, -1, k->now, err);
		return skip(k, status, reason);
	}
	k->w.last[k->g.chamber] = k->now;
	snprintf(k->w.last_status[k->g.chamber], 16, "running");
	if (wake_save(k->dir, k->s->name, &k->w, k->g.chamber, k->now,
	    err) == -1)
		return fail(k, HX_IOERR, err);
	r = call_model(k, lc, err);
	if (wake_save(k->dir, k->s->name, &k->w, -1, k->now, err) == -1 &&
	    r == HX_OK)
		r = HX_IOERR;
	finish(k, json_string_value(json_object_get(k->res, "status")),
	    NULL);
	return r;
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
	k.events = json_array();
	make_id(now, k.id, sizeof k.id);
	k.res = result_new(&k, o->chamber >= 0 ? (enum chamber)o->chamber :
	    CH_SCHEDULE);
	k.g.chamber = o->chamber >= 0 ? (enum chamber)o->chamber :
	    CH_SCHEDULE;
	brk_from_soul(s, &k.bc);
	if (llm_conf(s, &lc, err) == -1)
		rc = fail(&k, HX_CONFIG, err);
	else if (state_agent_dir(s->name, 1, k.dir, sizeof k.dir, err) == -1)
		rc = fail(&k, HX_IOERR, err);
	else if ((fd = store_lock(k.dir, "wake.lock", LOCK_EX | LOCK_NB,
	    err)) == -1)
		rc = fail(&k, HX_IOERR, err);
	else if (fd == -2)
		rc = skip(&k, "busy", "a wake of this agent is running (or "
		    "its user holds wake.lock)");
	else {
		rc = run_locked(&k, &lc, err);
		store_unlock(fd);
	}
	if (rc == HX_IOERR)
		rc = store_code(rc);	/* a store out of reach: 69 */
	gate_free(&k.g);
	json_decref(k.events);
	*out = k.res;
	return rc;
}

/* --explain: each chamber's gates now, without changing anything. */
json_t *
run_explain(const struct soul *s, time_t now, char *err)
{
	struct wake k;
	json_t *arr = json_array(), *o;
	char iso[40];
	int c, open;

	memset(&k, 0, sizeof k);
	k.s = s;
	k.now = now;
	brk_from_soul(s, &k.bc);
	if (state_agent_dir(s->name, 0, k.dir, sizeof k.dir, err) == -1 ||
	    wake_load(k.dir, &k.w, err) == -1 ||
	    brk_peek(s->name, &k.bc, now, &k.bv, err) == -1 ||
	    cap_peek(s->name, s->timezone, now, &k.cv, err) == -1) {
		json_decref(arr);
		return NULL;
	}
	if (k.w.first_seen == 0)
		k.w.first_seen = now;
	k.prev = k.w;
	for (c = 0; c < CH_NCHAMBERS; c++) {
		open = wake_gates(s, k.dir, &k.w, (enum chamber)c, now, 0,
		    &k.g);
		if (open && k.bv.state == BRK_OPEN)
			snprintf(k.g.status, sizeof k.g.status, "open");
		o = json_pack("{s:s,s:s,s:s,s:s?,s:I,s:I,s:s}", "agent",
		    s->name, "chamber", chamber_name((enum chamber)c),
		    "would", open && k.bv.state != BRK_OPEN ? "wake" :
		    k.g.status, "reason", open ? NULL : k.g.reason,
		    "interval", (json_int_t)s->ch[c].every, "offset",
		    (json_int_t)(c == CH_SCHEDULE ? wake_offset(s->name,
		    s->ch[c].every) : 0), "breaker",
		    brk_state_name(k.bv.state));
		if (k.g.next > 0) {
			clock_iso(s->timezone, k.g.next, iso, sizeof iso);
			json_object_set_new(o, "next", json_string(iso));
		}
		json_object_set_new(o, "cap", json_pack("{s:I,s:I}", "used",
		    (json_int_t)k.cv.total, "cap",
		    (json_int_t)s->ch[c].daily_cap));
		json_array_append_new(arr, o);
		gate_free(&k.g);
	}
	return arr;
}
