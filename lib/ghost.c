/*
 * ghost.c - ghost mode (paper section 4): which wake results leave a
 * trace, which are delivered, and which were delivered already.
 *
 * A result that is not "ok" rolls back: nothing of it is kept (the
 * statuses are status.c's table).  Most results are idle, so
 * ghost_parse decides on them with the tree-less scanner (jscan) and
 * builds a JSON tree only for "ok" and "error".
 * Delivered texts are remembered (hash and time, never the text) in
 * agents/ID/delivered.json, replaced whole under delivered.lock, and
 * the lock is held from the check to the record so that two processes
 * never deliver the same text twice.
 */
#include <sys/file.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"

#define DLVFILE	"delivered.json"
#define DLVLOCK	"delivered.lock"

/* Copy at most n - 1 bytes of s, control characters made blanks. */
static void
printable(const char *s, size_t len, char *out, size_t n)
{
	size_t i;

	for (i = 0; i < len && i + 1 < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' :
		    s[i];
	out[i] = '\0';
}

/* A string member's value into out, for messages: raw when too long. */
static void
member_text(const struct jscan_member *m, char *out, size_t n)
{
	if (m->type != JSCAN_STRING)
		printable(m->val, m->len, out, n);
	else if (jscan_string(m->val, m->len, out, n) == -1)
		printable(m->val + 1, m->len - 2, out, n);
	else
		printable(out, strlen(out), out, n);
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
	printable(v->val, v->len, t, sizeof t);
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
		printable(x->val, x->len < sizeof t ? x->len : sizeof t - 1, t,
		    sizeof t);
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

/* Check delivered.json's shape: {"delivered":[{"hash","at"}...]} */
static int
check_delivered(json_t *doc, const char *dir, char *err)
{
	json_t *a = json_object_get(doc, "delivered"), *e;
	time_t t;
	size_t i;

	if (!json_is_array(a))
		goto bad;
	json_array_foreach(a, i, e)
		if (!json_is_string(json_object_get(e, "hash")) ||
		    clock_parse_utc(json_string_value(json_object_get(e,
		    "at")), &t) == -1)
			goto bad;
	return 0;
bad:
	errf(err, "%s/%s: not a list of delivered texts; fix or remove it "
	    "by hand", dir, DLVFILE);
	return -1;
}

static time_t
entry_time(json_t *e)
{
	time_t t = 0;

	clock_parse_utc(json_string_value(json_object_get(e, "at")), &t);
	return t;
}

/*
 * Before delivering text for agent: lock, and say (*dup) whether the
 * same normalized text was delivered within window seconds of now.
 * Call ghost_dedupe_end afterwards, whatever happened.
 */
int
ghost_dedupe_begin(const char *agent, const char *text, long long window,
    time_t now, struct ghost_dedupe *d, int *dup, char *err)
{
	json_t *e;
	size_t i;

	memset(d, 0, sizeof *d);
	d->lockfd = -1;
	*dup = 0;
	if (state_agent_dir(agent, 1, d->dir, sizeof d->dir, err) == -1)
		return -1;
	if ((d->lockfd = state_lock(d->dir, DLVLOCK, LOCK_EX, err)) < 0)
		return -1;
	if (state_read_json(d->dir, DLVFILE, &d->doc, err) == -1 ||
	    (d->doc != NULL && check_delivered(d->doc, d->dir, err) == -1)) {
		state_unlock(d->lockfd);
		json_decref(d->doc);
		d->lockfd = -1;
		d->doc = NULL;
		return -1;
	}
	if (d->doc == NULL)
		d->doc = json_pack("{s:[]}", "delivered");
	ghost_hash(text, d->hash);
	d->window = window;
	d->now = now;
	json_array_foreach(json_object_get(d->doc, "delivered"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "hash")),
		    d->hash) == 0 && now - entry_time(e) < window)
			*dup = 1;
	return 0;
}

/*
 * After the delivery: when it was delivered, remember the text's hash
 * (and forget those older than the window); then unlock.
 */
int
ghost_dedupe_end(struct ghost_dedupe *d, int delivered, char *err)
{
	json_t *old, *keep, *e;
	char at[32];
	size_t i;
	int rc = 0;

	if (d->lockfd < 0)
		return 0;
	if (delivered) {
		old = json_object_get(d->doc, "delivered");
		keep = json_array();
		json_array_foreach(old, i, e)
			if (d->now - entry_time(e) < d->window)
				json_array_append(keep, e);
		clock_utc(d->now, at, sizeof at);
		json_array_append_new(keep, json_pack("{s:s,s:s}", "hash",
		    d->hash, "at", at));
		json_object_set_new(d->doc, "delivered", keep);
		rc = state_write_json(d->dir, DLVFILE, d->doc, err);
	}
	json_decref(d->doc);
	state_unlock(d->lockfd);
	d->doc = NULL;
	d->lockfd = -1;
	return rc;
}
