/*
 * notice.c - a notice: the one result line, after a wake's own, that
 * tells the agent's person its breaker opened or closed, or that it
 * went dormant (heart-wake(1), NOTICES).  Made from the wake result's
 * breaker_events, which hold only the transitions this wake's own
 * writes made (brkstore.c): so one opening is one notice, whichever
 * process or host made it, and a transition another process made is
 * never told here.
 *
 * Which transitions are told is brk.c's rule (the events' "notice"):
 * the first opening of a stretch of failures, not a reopening after a
 * failed probe (a provider down for a day is two notices), nor an
 * opening by a Retry-After alone; the closing of a stretch that was
 * told, by the probe, not by an operator's reset.  The error told is
 * the breaker's reason, scrubbed of secrets when it was recorded
 * (brk_record).
 *
 * A dormancy's notice (dormant.c) is made the same way, from the wake
 * result's "dormant" when it carries "notice": only the wake that
 * recorded the telling in wake.json, under the wake lock, has it.
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"

static const char *
field(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

/* What opened it, in words, into buf. */
static void
kind_text(const json_t *e, char *buf, size_t n)
{
	const char *kind = field(e, "kind");
	int tool = strcmp(field(e, "trigger"), "tool") == 0;

	long long k = json_integer_value(json_object_get(e, tool ?
	    "tool_fails" : "llm_fails"));

	if (strcmp(kind, "failures") == 0 && k == 1)
		snprintf(buf, n, "1 failure");
	else if (strcmp(kind, "failures") == 0)
		snprintf(buf, n, "%lld failures in a row", k);
	else if (strcmp(kind, "window") == 0)
		snprintf(buf, n, "too many failures within its window");
	else if (strcmp(kind, "config") == 0)
		snprintf(buf, n, "a configuration error a person must fix");
	else if (strcmp(kind, "hold") == 0)
		snprintf(buf, n, "the provider asked it to wait");
	else
		snprintf(buf, n, "%s", kind);
}

/* The notice's fields every one has, of the wake result res. */
static json_t *
notice_new(const json_t *res, const json_t *e, enum wake_status st)
{
	char id[HEART_IDMAX + 1];

	snprintf(id, sizeof id, "%.55s-breaker", field(res, "wake_id"));
	return json_pack("{s:i,s:s,s:s,s:s,s:s,s:s}", "v", 1, "agent",
	    field(res, "agent"), "chamber", field(res, "chamber"),
	    "wake_id", id, "at", field(e, "at"), "status", status_name(st));
}

static json_t *
open_notice(const json_t *res, const json_t *e)
{
	char kind[80], text[1024];
	const char *agent = field(res, "agent");
	json_t *n;

	kind_text(e, kind, sizeof kind);
	snprintf(text, sizeof text, "heart: %s's %s failing (%s): %s. No "
	    "wake until %s; heart tries again then.", agent,
	    strcmp(field(e, "trigger"), "tool") == 0 ? "tools are" :
	    "model is", kind, field(e, "reason"), field(e, "until"));
	n = notice_new(res, e, ST_BREAKER_OPEN);
	json_object_set_new(n, "trigger", json_string(field(e, "trigger")));
	json_object_set_new(n, "kind", json_string(field(e, "kind")));
	json_object_set_new(n, "error", json_string(field(e, "reason")));
	json_object_set_new(n, "until", json_string(field(e, "until")));
	json_object_set_new(n, "response", json_string(text));
	json_object_set_new(n, "exit", json_integer(0));
	return n;
}

static json_t *
closed_notice(const json_t *res, const json_t *e)
{
	char text[160];
	json_t *n;

	snprintf(text, sizeof text, "heart: %s's model answers again.",
	    field(res, "agent"));
	n = notice_new(res, e, ST_BREAKER_CLOSED);
	json_object_set_new(n, "response", json_string(text));
	json_object_set_new(n, "exit", json_integer(0));
	return n;
}

/* The dormancy told: which chambers stop, since when, until what. */
static json_t *
dormant_notice(const json_t *res, const json_t *d)
{
	char id[HEART_IDMAX + 1], text[1024], chs[64] = "";
	const json_t *c;
	json_t *n;
	size_t i;

	json_array_foreach(json_object_get(d, "chambers"), i, c)
		snprintf(chs + strlen(chs), sizeof chs - strlen(chs), "%s%s",
		    i == 0 ? "" : " and ", json_string_value(c));
	snprintf(text, sizeof text, "heart: nobody has spoken to %s since "
	    "%s (heart.dormant_after %s): its %s wakes stop, and spend "
	    "nothing, until a user message wakes it.", field(res, "agent"),
	    field(d, "since"), field(d, "after"), chs);
	snprintf(id, sizeof id, "%.55s-dormant", field(res, "wake_id"));
	n = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:O}", "v", 1,
	    "agent", field(res, "agent"), "chamber", field(res, "chamber"),
	    "wake_id", id, "at", field(res, "at"), "status",
	    status_name(ST_DORMANT_NOTICE), "since", field(d, "since"),
	    "after", field(d, "after"), "chambers", json_object_get(d,
	    "chambers"));
	json_object_set_new(n, "response", json_string(text));
	json_object_set_new(n, "exit", json_integer(0));
	return n;
}

/* The notice of the wake result res, or NULL when its wake opened or
 * closed no breaker and told no dormancy. */
json_t *
notice_of(const json_t *res)
{
	const json_t *e;
	const char *ev;
	size_t i;

	e = json_object_get(res, "dormant");
	if (json_is_true(json_object_get(e, "notice")))
		return dormant_notice(res, e);
	json_array_foreach(json_object_get(res, "breaker_events"), i, e) {
		ev = field(e, "event");
		if (!json_is_true(json_object_get(e, "notice")))
			continue;
		if (strcmp(ev, "open") == 0)
			return open_notice(res, e);
		if (strcmp(ev, "closed") == 0)
			return closed_notice(res, e);
	}
	return NULL;
}
