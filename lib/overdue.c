/*
 * overdue.c - whether an agent's schedule is overdue, read through the
 * store (files or a server) for heart-cap status: when the schedule is
 * next due, whether that passed a grace ago with no heart-wake looking,
 * and the journal's last skip.  The rule and the reading of wake.json
 * and of the journal's last entry are pulse.c's, which heart-pulse
 * applies to the state files; this file only gives them the store's
 * documents, so a fleet on a server store is judged as one on files.
 *
 * Invariant: reading takes no lock and changes nothing (pulse.c's).
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartpulse.h"

/* What st says, into v. */
static void
view(const struct pulse_state *st, struct overdue_view *v)
{
	v->due = st->due;
	if (st->skip < 0)	/* none, or none shown (pulse_docs) */
		return;
	snprintf(v->skip, sizeof v->skip, "%s",
	    status_name((enum wake_status)st->skip));
	v->skip_at = st->looked;
	snprintf(v->reason, sizeof v->reason, "%s", st->skip_reason != NULL ?
	    st->skip_reason : "");
}

/*
 * Soul s's schedule at now, into v: its due time from wake.json's slot
 * last used or first sight (none before heart-wake has seen the agent:
 * due 0, not overdue), overdue or not, and the journal's last skip
 * after the last admitted wake.  No soul: v says nothing (read 0).
 */
int
overdue_peek(const struct soul *s, time_t now, struct overdue_view *v,
    char *err)
{
	struct pulse_state st;
	struct pulse_slots sl = { 0, 0, 0, 0 };	/* the schedule alone */
	json_t *wake, *arr;

	memset(v, 0, sizeof *v);
	if (s == NULL)
		return 0;
	memset(&st, 0, sizeof st);
	pulse_slots_of(s, &sl.every, &sl.off);
	if (store_get(s->name, "wake.json", &wake, err) == -1)
		return -1;
	if (journal_read(s->name, 0, 1, &arr, err) == -1) {
		json_decref(wake);
		return -1;
	}
	pulse_docs(wake, json_array_get(arr, 0), &sl, &st);
	json_decref(wake);
	json_decref(arr);
	v->read = 1;
	v->on = sl.every > 0;
	view(&st, v);
	/* never while the schedule is outside its active hours */
	v->overdue = !soul_hours_out(&s->ch[CH_SCHEDULE].active, s->timezone,
	    now) && pulse_overdue(st.due, sl.every, st.looked, now);
	pulse_clear(&st);
	return 0;
}

/* v's fields in the status object j: "due" (a time, or null), "overdue"
 * and "skip" ({"status","at","reason"}, or null); none when v says
 * nothing. */
void
overdue_json(const struct overdue_view *v, json_t *j)
{
	char at[32];
	json_t *skip = json_null();

	if (!v->read)
		return;
	clock_utc(v->due, at, sizeof at);
	json_object_set_new(j, "due", v->due > 0 ? json_string(at) :
	    json_null());
	json_object_set_new(j, "overdue", json_boolean(v->overdue));
	if (v->skip[0] != '\0') {
		clock_utc(v->skip_at, at, sizeof at);
		skip = json_pack("{s:s,s:s,s:o}", "status", v->skip, "at", at,
		    "reason", v->reason[0] != '\0' ? json_string(v->reason) :
		    json_null());
	}
	json_object_set_new(j, "skip", skip);
}
