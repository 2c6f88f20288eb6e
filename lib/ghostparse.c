/*
 * ghostparse.c - a wake result line, as heart-ghost reads it: its
 * version, status, agent and exit checked, and for "ok" (or a
 * breaker's notice, which has no messages) its answer, and whether
 * that carries an alert (its status's, or idle_alert's in its text).
 * Most results are idle, so ghost_parse decides on them with the
 * tree-less scanner (jscan) and builds a JSON tree only for "ok" and
 * "error"; a line it refuses is never half taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

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
	char name[16], t[40];

	if (st->val == NULL) {
		errf(err, "no \"status\"");
		return -1;
	}
	if (st->type == JSCAN_STRING &&
	    jscan_string(st->val, st->len, name, sizeof name) == 0 &&
	    status_find(name, &ws) == 0) {
		status_ghost(ws, r);
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

/* The parts of an ok result (or a notice) that are committed and
 * delivered. */
static int
check_ok(struct ghost_result *r, char *err)
{
	json_t *m;
	size_t i;

	if ((r->wake_id = need_string(r->doc, "wake_id", err)) == NULL)
		return -1;
	if (!id_valid(r->wake_id)) {
		errf(err, "wake_id \"%s\" is not 1 to 64 of A-Z a-z 0-9 _ . -",
		    r->wake_id);
		return -1;
	}
	if ((r->chamber = need_string(r->doc, "chamber", err)) == NULL ||
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
	r->alert = r->alert || idle_alert(r->response);
	r->messages = json_object_get(r->doc, "messages");
	if (!r->hist)
		return 0;	/* a notice: delivered, never kept */
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
	r->line = line;
	r->len = len;
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
