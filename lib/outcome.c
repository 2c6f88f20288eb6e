/*
 * outcome.c - a wake's outcome (its status, reason, answer and idle
 * level, warnings), kept in the wake as it is written into the wake
 * result, one helper each: run.c, talk.c and triage.c decide it, and
 * read it back from the wake, never from the result.
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

/* A string field of the wake's result (NULL: null). */
void
outcome_set(struct wake *k, const char *key, const char *v)
{
	json_object_set_new(k->res, key, v ? json_string(v) : json_null());
}

/* The outcome's status, into the wake and its result. */
void
outcome_status(struct wake *k, enum wake_status st)
{
	k->out.status = st;
	outcome_set(k, "status", status_name(st));
}

/* The outcome's reason ("" or NULL: none), into the wake and its
 * result. */
void
outcome_reason(struct wake *k, const char *reason)
{
	snprintf(k->out.reason, sizeof k->out.reason, "%s", reason ?
	    reason : "");
	outcome_set(k, "reason", reason && *reason ? reason : NULL);
}

/* The answer and its idle level (idle.c's, or NULL), into the wake
 * and its result, with the status they decide. */
void
outcome_reply(struct wake *k, enum wake_status st, const char *text,
    const char *lvl)
{
	outcome_set(k, "response", text && *text ? text : NULL);
	k->out.idle_level = lvl;
	outcome_set(k, "idle_level", lvl);
	outcome_status(k, st);
}

/* One more warning, into the wake and its result. */
void
outcome_warn(struct wake *k, const char *w)
{
	struct outcome *o = &k->out;
	char both[sizeof o->warning];
	json_t *v;

	/* cut to fit; cut inside a character, it stays as it was */
	if (snprintf(both, sizeof both, "%s%s%s", o->warning,
	    o->warning[0] ? "; " : "", w) < 0 ||
	    (v = json_string(both)) == NULL)
		return;
	memcpy(o->warning, both, sizeof both);
	json_object_set_new(k->res, "warning", v);
}
