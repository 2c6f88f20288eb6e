/*
 * redisupgrade.c - the upgrade from heart 0.x's Redis keys: the hashes
 * heart:{ID}:cap with the day's heart:{ID}:cap:DAY and
 * heart:{ID}:breaker, and the string heart:{ID}:wake, made into the
 * document that redisstore.c keeps in their place (cap.json, breaker.json,
 * wake.json; heart(7), Stores).
 *
 * Invariants: it only reads; redisstore.c writes the document and deletes
 * the old key (rget).  A field missing from an old hash reads as 0, no
 * time or ""; one that is not a number is kept as its text, for the
 * document's parser to name.  A key that is not of 0.x fails the call
 * and is left for a person to delete.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "heartint.h"
#include "redis.h"

/* A hash of 0.x as a JSON object of strings (NULL: none); -1 err. */
static int
old_hash(const char *key, json_t **out, char *err)
{
	struct redisconn_args a;
	redisReply *r;
	size_t i;

	*out = NULL;
	a.n = 0;
	redisconn_aput(&a, "HGETALL");
	redisconn_aput(&a, key);
	if ((r = redisconn_command(&a, key, err)) == NULL)
		return -1;
	if (r->type != REDIS_REPLY_ARRAY) {
		if (r->type == REDIS_REPLY_ERROR)
			redisconn_reply_error(r, key, err);
		else
			errf(err, "%s: %s: a reply not understood",
			    redisconn_url(), key);
		freeReplyObject(r);
		return -1;
	}
	if (r->elements > 0)
		*out = json_object();
	for (i = 0; i + 1 < r->elements; i += 2)
		if (redisconn_str(r->element[i]) != NULL &&
		    redisconn_str(r->element[i + 1]) != NULL)
			json_object_set_new(*out, redisconn_str(r->element[i]),
			    json_string(redisconn_str(r->element[i + 1])));
	freeReplyObject(r);
	return 0;
}

/* A field of an old hash: a number (default 0), a time or the text. */
static json_t *
old_num(json_t *h, const char *f)
{
	const char *s = json_string_value(json_object_get(h, f));
	long long v = 0;

	if (s != NULL && num_parse(s, -1, (long long)1 << 53, &v) == -1)
		return json_string(s);	/* the parser names the field */
	return json_integer(v);
}

static json_t *
old_time(json_t *h, const char *f)
{
	const char *s = json_string_value(json_object_get(h, f));
	long long v = 0;
	char ts[32];

	if (s != NULL && num_parse(s, 0, (long long)1 << 53, &v) == -1)
		return json_string(s);
	if (v <= 0)
		return json_null();
	clock_utc((time_t)v, ts, sizeof ts);
	return json_string(ts);
}

static json_t *
old_text(json_t *h, const char *f)
{
	json_t *v = json_object_get(h, f);

	return v != NULL ? json_incref(v) : json_string("");
}

/*
 * What heart 0.x kept for document name of agent, made into that
 * document (NULL: nothing): cap.json from heart:{ID}:cap and the
 * day's heart:{ID}:cap:DAY, breaker.json from heart:{ID}:breaker,
 * wake.json from heart:{ID}:wake.
 */
int
redisupgrade_doc(const char *agent, const char *name, char **doc, char *err)
{
	char key[160];
	json_t *m, *d = NULL, *j = NULL;
	const char *day, *cs;
	int i;
	static const char *bf[] = { "llm_fails", "tool_fails", "cooldown_s",
	    "base_s", "threshold", "max_cooldown_s", "probe_pid" };

	*doc = NULL;
	if (strcmp(name, "wake.json") == 0) {
		redisconn_key(agent, "wake", key, sizeof key);
		return redisconn_get(key, doc, err);
	}
	redisconn_key(agent, strcmp(name, "cap.json") == 0 ? "cap" : "breaker",
	    key, sizeof key);
	if (old_hash(key, &m, err) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (strcmp(name, "cap.json") == 0) {
		day = json_string_value(json_object_get(m, "day"));
		snprintf(key + strlen(key), sizeof key - strlen(key), ":%s",
		    day != NULL ? day : "");
		if (old_hash(key, &d, err) == -1) {
			json_decref(m);
			return -1;
		}
		if (d == NULL)
			d = json_object();
		cs = json_string_value(json_object_get(m, "cap_schedule"));
		j = json_pack("{s:i,s:s,s:O,s:O,s:o,s:{s:o,s:o},s:o,"
		    "s:{s:o,s:o}}", "v", 1, "agent", agent,
		    "day", json_object_get(m, "day"),
		    "zone", json_object_get(m, "zone"),
		    "total", old_num(d, "total"),
		    "chambers", "schedule", old_num(d, "schedule"),
		    "idle", old_num(d, "idle"),
		    "ghosts", old_num(d, "ghosts"),
		    "tokens", "prompt", old_num(d, "prompt"),
		    "completion", old_num(d, "completion"));
		if (j != NULL && cs != NULL && *cs != '\0')
			json_object_set_new(j, "caps", json_pack("{s:o,s:o,"
			    "s:o}", "schedule", old_num(m, "cap_schedule"),
			    "idle", old_num(m, "cap_idle"),
			    "agent", old_num(m, "cap_agent")));
		if (j != NULL && json_integer_value(json_object_get(
		    json_object_get(j, "caps"), "agent")) < 0)
			json_object_set_new(json_object_get(j, "caps"),
			    "agent", json_null());
	} else {
		j = json_pack("{s:i,s:s,s:o,s:o,s:o,s:o,s:o}", "v", 1,
		    "agent", agent, "state", old_text(m, "state"),
		    "until", old_time(m, "until"),
		    "probe_at", old_time(m, "probe_at"),
		    "probe_host", old_text(m, "probe_host"),
		    "trigger", old_text(m, "trigger"));
		for (i = 0; j != NULL && i < (int)(sizeof bf / sizeof bf[0]);
		    i++)
			json_object_set_new(j, bf[i], old_num(m, bf[i]));
		if (j != NULL)
			json_object_set_new(j, "reason", old_text(m,
			    "reason"));
	}
	json_decref(m);
	json_decref(d);
	if (j == NULL) {
		errf(err, "%s: %s: not a 0.x key; delete it by hand",
		    redisconn_url(), key);
		return -1;
	}
	*doc = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return 0;
}
