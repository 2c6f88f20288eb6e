/*
 * journal.c - every decision of a wake, kept: an agent's journal, one
 * JSON line an entry (at, chamber, status, reason, wake_id), written by
 * run_wake once a wake's result is final, when status.c's table says
 * its status is kept (status_journal), and read back by heart-wake
 * --why and by the pulse (its last skip).  heart-wake(1), THE JOURNAL.
 *
 * Invariants: an entry is appended whole or not at all (store.c's log:
 * one write(2) under a lock, or one Redis transaction); the journal is
 * bounded (JOURNAL_MAX bytes of file, JOURNAL_KEEP entries of a
 * server), the oldest entries going first; a reason is scrubbed of
 * secrets, one line, at most JOURNAL_REASON bytes.  A wake that is only
 * not due writes nothing here.
 */
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"

#define JOURNAL_FILE	"journal.jsonl"
/* a file holds JOURNAL_MAX bytes at most (then its newest half), a
 * server the newest JOURNAL_KEEP entries */
#define JOURNAL_MAX	(128 * 1024)
#define JOURNAL_KEEP	500
#define JOURNAL_REASON	240	/* bytes of a reason, at most */

/* Append one entry to the agent's journal. */
int
journal_add(const char *agent, time_t at, const char *chamber,
    const char *status, const char *reason, const char *wake_id,
    char *err)
{
	char when[32], why[JOURNAL_REASON + 1], *safe;
	json_t *j;
	char *line;
	int rc;

	clock_utc(at, when, sizeof when);
	why[0] = '\0';
	if (reason != NULL && *reason != '\0') {
		safe = secret_dup(reason);
		text_line(why, sizeof why, safe, strlen(safe));
		free(safe);
	}
	j = json_pack("{s:s,s:s,s:s,s:o,s:s}", "at", when, "chamber",
	    chamber, "status", status, "reason", why[0] ? json_string(why) :
	    json_null(), "wake_id", wake_id);
	if (j == NULL) {
		errf(err, "%s: journal: an entry that is not text", agent);
		return -1;
	}
	line = json_line(j);
	json_decref(j);
	rc = store_log_add(agent, JOURNAL_FILE, line, JOURNAL_MAX,
	    JOURNAL_KEEP, err);
	free(line);
	return rc;
}

/* An entry read back: its time, or -1 when it is no entry. */
static time_t
entry_at(const json_t *e)
{
	time_t t;

	if (!json_is_object(e) || !json_is_string(json_object_get(e,
	    "status")) || clock_parse_utc(json_string_value(json_object_get(e,
	    "at")), &t) == -1)
		return -1;
	return t;
}

/*
 * The agent's entries at or after since, oldest first, into *out (an
 * array, to decref): the newest `last' of the journal only (0: all).
 * A line that is no entry is left out.
 */
int
journal_read(const char *agent, time_t since, long long last, json_t **out,
    char *err)
{
	char **lines;
	size_t i, n;
	json_t *e;
	time_t t;

	*out = NULL;
	if (store_log_read(agent, JOURNAL_FILE, last, &lines, &n, err) == -1)
		return -1;
	*out = json_array();
	for (i = 0; i < n; i++) {
		e = json_loads(lines[i], JSON_REJECT_DUPLICATES, NULL);
		if ((t = entry_at(e)) != -1 && t >= since)
			json_array_append(*out, e);
		json_decref(e);
	}
	state_free_list(lines, n);
	return 0;
}

/* --since's TIME: a time (2026-11-22T05:00:00Z) or a duration ago (2h),
 * as heart-cap pause --until takes them. */
int
journal_since(const char *arg, time_t now, time_t *out, char *err)
{
	long long d;

	if (clock_parse_utc(arg, out) == 0)
		return 0;
	if (dur_parse(arg, &d) == -1) {
		errf(err, "--since: %s: neither a time (2026-11-22T05:00:00Z) "
		    "nor a duration ago (2h, 1d, 1h30m)", arg);
		return -1;
	}
	*out = now - (time_t)d;
	return 0;
}
