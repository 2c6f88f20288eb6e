/*
 * ghost.c - ghost mode (paper section 4): which wake results leave a
 * trace, which are delivered, and which were delivered already.
 *
 * A result that is not "ok" rolls back: nothing of it is kept (the
 * statuses are status.c's table).  Most results are idle, so
 * ghost_parse decides on them with the tree-less scanner (jscan) and
 * builds a JSON tree only for "ok" and "error".
 *
 * An "ok" result is handled under the agent's delivered.lock, held
 * from the commit to the record of the delivery: the wake id is the
 * key.  A wake id already in the history (hist_commit says so) is not
 * committed again, and not delivered again unless its delivery failed
 * before.  agents/ID/delivered.json, replaced whole under the lock,
 * remembers the failed deliveries (wake id and time) and, for
 * --dedupe, the texts delivered (hash and time, never the text).  So
 * two processes given the same result commit it once and deliver it
 * once.
 */
#include <sys/file.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"

#define DLVFILE	"delivered.json"
#define DLVLOCK	"delivered.lock"
#define UNDELIVERED_MAX	1000	/* failed deliveries remembered */

/* A string member's value into out, for messages: raw when too long. */
static void
member_text(const struct jscan_member *m, char *out, size_t n)
{
	if (m->type != JSCAN_STRING)
		text_line(out, n, m->val, m->len);
	else if (jscan_string(m->val, m->len, out, n) == -1)
		text_line(out, n, m->val + 1, m->len - 2);
	else
		text_line(out, n, out, strlen(out));
}

static int
check_version(const struct jscan_member *v, char *err)
{
	char t[32];

	if (v->val == NULL) {
		errf(err, "no \"v\" (a wake result has \"v\":1)");
		return -1;
	}
	if (v->type == JSCAN_NUMBER && v->len == 1 && v->val[0] == '1')
		return 0;
	text_line(t, sizeof t, v->val, v->len);
	errf(err, "unknown version \"v\":%s (this heart-ghost reads 1)", t);
	return -1;
}

static int
check_status(const struct jscan_member *st, struct ghost_result *r,
    char *err)
{
	enum wake_status ws;
	char t[40];

	if (st->val == NULL) {
		errf(err, "no \"status\"");
		return -1;
	}
	if (st->type == JSCAN_STRING &&
	    jscan_string(st->val, st->len, r->status, sizeof r->status) == 0 &&
	    status_find(r->status, &ws) == 0) {
		r->kind = status_kind(ws);
		return 0;
	}
	member_text(st, t, sizeof t);
	errf(err, "unknown status \"%s\"", t);
	return -1;
}

static int
check_agent(const struct jscan_member *a, struct ghost_result *r,
    char *err)
{
	char t[80];

	if (a->val == NULL || a->type == JSCAN_NULL) {
		if (r->kind == GHOST_ERROR)
			return 0;
		errf(err, "no \"agent\"");
		return -1;
	}
	if (a->type == JSCAN_STRING &&
	    jscan_string(a->val, a->len, r->agent, sizeof r->agent) == 0 &&
	    id_valid(r->agent))
		return 0;
	r->agent[0] = '\0';
	member_text(a, t, sizeof t);
	errf(err, "invalid agent id \"%s\"", t);
	return -1;
}

/*
 * heart-wake's exit status for the wake: "exit", 0 to 255; without it
 * 0, and an error is never 0 (75, a temporary failure, as before there
 * was an "exit").
 */
static int
check_exit(const struct jscan_member *x, struct ghost_result *r, char *err)
{
	char t[40];
	long long v = 0;

	if (x->val != NULL && x->type != JSCAN_NULL) {
		text_line(t, sizeof t, x->val, x->len);
		if (x->type != JSCAN_NUMBER || x->len >= sizeof t ||
		    num_parse(t, 0, 255, &v) == -1) {
			errf(err, "\"exit\" is not an exit status: %s", t);
			return -1;
		}
	}
	r->exit = (int)v;
	if (r->kind == GHOST_ERROR && r->exit == HX_OK)
		r->exit = HX_TEMPFAIL;
	return 0;
}

static const char *
need_string(json_t *doc, const char *key, char *err)
{
	const char *s = json_string_value(json_object_get(doc, key));

	if (s == NULL || *s == '\0')
		errf(err, "an \"ok\" result without \"%s\"", key);
	return s != NULL && *s != '\0' ? s : NULL;
}

/* The parts of an ok result that are committed and delivered. */
static int
check_ok(struct ghost_result *r, char *err)
{
	json_t *m;
	size_t i;

	if ((r->wake_id = need_string(r->doc, "wake_id", err)) == NULL ||
	    (r->chamber = need_string(r->doc, "chamber", err)) == NULL ||
	    (r->at = need_string(r->doc, "at", err)) == NULL)
		return -1;
	if (strcmp(r->chamber, "user") == 0) {
		errf(err, "chamber \"user\" is kept for heart-ghost --user");
		return -1;
	}
	r->response = json_string_value(json_object_get(r->doc, "response"));
	if (r->response == NULL) {
		errf(err, "an \"ok\" result without a \"response\" text");
		return -1;
	}
	r->messages = json_object_get(r->doc, "messages");
	if (!json_is_array(r->messages) || json_array_size(r->messages) == 0) {
		errf(err, "an \"ok\" result without \"messages\"");
		return -1;
	}
	json_array_foreach(r->messages, i, m)
		if (!json_is_string(json_object_get(m, "role"))) {
			errf(err, "message %zu has no \"role\"", i + 1);
			return -1;
		}
	return 0;
}

/*
 * Read one wake result.  0: *r says what it is (free it with
 * ghost_result_free); -1: the line is bad data, err says why.
 */
int
ghost_parse(const char *line, size_t len, struct ghost_result *r, char *err)
{
	struct jscan_member m[4] = {
		{ "v", NULL, 0, 0 },
		{ "status", NULL, 0, 0 },
		{ "agent", NULL, 0, 0 },
		{ "exit", NULL, 0, 0 },
	};
	json_error_t je;

	memset(r, 0, sizeof *r);
	if (jscan_object(line, len, m, 4, err) == -1 ||
	    check_version(&m[0], err) == -1 ||
	    check_status(&m[1], r, err) == -1 ||
	    check_agent(&m[2], r, err) == -1 ||
	    check_exit(&m[3], r, err) == -1)
		return -1;
	if (r->kind == GHOST_ROLLBACK)
		return 0;
	r->doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (r->doc == NULL) {
		errf(err, "not JSON: %s", je.text);
		return -1;
	}
	if (r->kind == GHOST_COMMIT && check_ok(r, err) == -1) {
		ghost_result_free(r);
		return -1;
	}
	return 0;
}

void
ghost_result_free(struct ghost_result *r)
{
	json_decref(r->doc);
	memset(r, 0, sizeof *r);
}

static int
is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == '\f' || c == '\v';
}

/*
 * The hash (FNV-1a, 64 bits, 16 hex digits) of a text normalized the
 * way a reader compares: blanks at both ends dropped, every run of
 * blanks one space, ASCII letters in lower case.
 */
void
ghost_hash(const char *text, char *out)
{
	const unsigned char *p = (const unsigned char *)text;
	uint64_t h = 0xcbf29ce484222325ULL;
	int gap = 0, any = 0;

	for (; *p != '\0'; p++) {
		if (is_space(*p)) {
			gap = any;
			continue;
		}
		if (gap) {
			h = (h ^ ' ') * 0x100000001b3ULL;
			gap = 0;
		}
		any = 1;
		h = (h ^ (unsigned char)(*p >= 'A' && *p <= 'Z' ? *p + 32 :
		    *p)) * 0x100000001b3ULL;
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}


/*
 * Check delivered.json's shape: {"delivered":[{"hash","at"}...],
 * "undelivered":[{"wake_id","at"}...]}; the second may be missing.
 */
static int
check_delivered(json_t *doc, const char *dir, char *err)
{
	json_t *a = json_object_get(doc, "delivered"), *e;
	json_t *u = json_object_get(doc, "undelivered");
	time_t t;
	size_t i;

	if (!json_is_array(a) || (u != NULL && !json_is_array(u)))
		goto bad;
	json_array_foreach(a, i, e)
		if (!json_is_string(json_object_get(e, "hash")) ||
		    clock_parse_utc(json_string_value(json_object_get(e,
		    "at")), &t) == -1)
			goto bad;
	json_array_foreach(u, i, e)
		if (!json_is_string(json_object_get(e, "wake_id")) ||
		    clock_parse_utc(json_string_value(json_object_get(e,
		    "at")), &t) == -1)
			goto bad;
	return 0;
bad:
	errf(err, "%s/%s: not a list of delivered texts and failed "
	    "deliveries; fix or remove it by hand", dir, DLVFILE);
	return -1;
}

static time_t
entry_time(json_t *e)
{
	time_t t = 0;

	clock_parse_utc(json_string_value(json_object_get(e, "at")), &t);
	return t;
}

/* Read delivered.json, once; -1 when it cannot be (err says why). */
static int
txn_read(struct ghost_txn *t, char *err)
{
	if (t->state != 0)
		return t->state == 1 ? 0 : -1;
	if (state_read_json(t->dir, DLVFILE, &t->doc, err) == -1 ||
	    (t->doc != NULL && check_delivered(t->doc, t->dir, err) == -1)) {
		json_decref(t->doc);
		t->doc = NULL;
		t->state = -1;
		return -1;
	}
	if (t->doc == NULL)
		t->doc = json_pack("{s:[]}", "delivered");
	if (json_object_get(t->doc, "undelivered") == NULL)
		json_object_set_new(t->doc, "undelivered", json_array());
	t->state = 1;
	return 0;
}

/* Where the wake is among the failed deliveries, or -1. */
static long
undelivered_at(const struct ghost_txn *t)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(t->doc, "undelivered"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "wake_id")),
		    t->wake_id) == 0)
			return (long)i;
	return -1;
}

/* Was the same normalized text delivered within the window? */
static int
delivered_within(struct ghost_txn *t, const char *text)
{
	json_t *e;
	size_t i;

	ghost_hash(text, t->hash);
	json_array_foreach(json_object_get(t->doc, "delivered"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "hash")),
		    t->hash) == 0 && t->now - entry_time(e) < t->window)
			return 1;
	return 0;
}

/*
 * Whether to deliver r now: a new wake, or one whose delivery failed
 * before; then --alert-only and --dedupe have their say.  0, or 1
 * when delivered.json cannot be read: then a new wake is delivered
 * all the same (better twice than never) and an old one is not.
 */
static int
decide(const struct ghost_result *r, const struct ghost_opts *o,
    struct ghost_txn *t, int fresh, char *err)
{
	if (!fresh) {
		if (txn_read(t, err) == -1)
			return 1;
		if (undelivered_at(t) < 0)
			return 0;	/* delivered, or not wanted, before */
	}
	if (o->alert_only && !idle_alert(r->response))
		return 0;
	if (o->dedupe > 0) {
		if (txn_read(t, err) == -1) {
			t->deliver = 1;
			return 1;
		}
		if (delivered_within(t, r->response))
			return 0;
	}
	t->deliver = 1;
	return 0;
}

int
ghost_begin(const struct ghost_result *r, const struct ghost_opts *o,
    time_t now, struct ghost_txn *t, int *deliver, char *err)
{
	int rc;

	memset(t, 0, sizeof *t);
	t->lockfd = -1;
	t->now = now;
	t->window = o->dedupe;
	t->wake_id = r->wake_id;
	*deliver = 0;
	if (state_agent_dir(r->agent, 1, t->dir, sizeof t->dir, err) == -1 ||
	    (t->lockfd = state_lock(t->dir, DLVLOCK, LOCK_EX, err)) < 0) {
		t->lockfd = -1;
		return -1;
	}
	if ((rc = hist_commit(r->agent, r->messages, r->wake_id, r->chamber,
	    r->at, o->keep, err)) == -1) {
		state_unlock(t->lockfd);
		t->lockfd = -1;
		return -1;
	}
	rc = decide(r, o, t, rc == 0, err);
	*deliver = t->deliver;
	return rc;
}

/* Remember a failed delivery, the oldest forgotten past the limit. */
static void
add_undelivered(struct ghost_txn *t)
{
	json_t *u = json_object_get(t->doc, "undelivered");
	char at[32];

	clock_utc(t->now, at, sizeof at);
	json_array_append_new(u, json_pack("{s:s,s:s}", "wake_id",
	    t->wake_id, "at", at));
	while (json_array_size(u) > UNDELIVERED_MAX)
		json_array_remove(u, 0);
}

/* Remember a delivered text, and forget those older than the window. */
static void
add_delivered(struct ghost_txn *t)
{
	json_t *keep = json_array(), *e;
	char at[32];
	size_t i;

	json_array_foreach(json_object_get(t->doc, "delivered"), i, e)
		if (t->now - entry_time(e) < t->window)
			json_array_append(keep, e);
	clock_utc(t->now, at, sizeof at);
	json_array_append_new(keep, json_pack("{s:s,s:s}", "hash", t->hash,
	    "at", at));
	json_object_set_new(t->doc, "delivered", keep);
}

/*
 * After the delivery (delivered: it succeeded): record it in
 * delivered.json when there is something to remember, and unlock.
 * A failed delivery is remembered, so that the same result given
 * again is delivered then; a wake delivered, or no longer wanted,
 * is forgotten among the failures.
 */
int
ghost_end(struct ghost_txn *t, int delivered, char *err)
{
	int rc = 0, dirty = 0;
	long i;

	if (t->lockfd < 0)
		return 0;
	if (t->deliver && delivered && t->window > 0 && t->state == 1) {
		add_delivered(t);
		dirty = 1;
	}
	if (t->deliver && !delivered) {
		if (txn_read(t, err) == -1) {
			errf(err, "%s/%s: the failed delivery of wake %s is "
			    "not remembered", t->dir, DLVFILE, t->wake_id);
			rc = -1;
		} else if (undelivered_at(t) < 0) {
			add_undelivered(t);
			dirty = 1;
		}
	} else if (t->state == 1 && (i = undelivered_at(t)) >= 0) {
		json_array_remove(json_object_get(t->doc, "undelivered"),
		    (size_t)i);
		dirty = 1;
	}
	if (dirty)
		rc = state_write_json(t->dir, DLVFILE, t->doc, err);
	json_decref(t->doc);
	state_unlock(t->lockfd);
	t->doc = NULL;
	t->lockfd = -1;
	return rc;
}
