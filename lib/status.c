/*
 * status.c - the statuses of a wake result, and what ghost mode does
 * with each: one table, used by the writer (heart-wake: run.c and
 * wake.c name a status only through it) and by the reader (heart-ghost:
 * ghost.c), so that heart-wake cannot print a status heart-ghost does
 * not know.  heart-wake(1) says what each means, heart-ghost(1) what
 * is done with it.  "ran": the model answered (the wake was not
 * skipped, nor only rehearsed), so the line comes from a pipeline that
 * wakes the agent: only such a line takes its agent's outbox.  "hist":
 * a committed line is kept in the history (a notice, a breaker's or a
 * dormancy's, is delivered, never kept); "alert": --alert-only
 * delivers it whatever its text (a notice of a stop a person can end);
 * "journal": a wake that ends so is a decision the agent's journal
 * keeps (journal.c, heart-wake --why): every admitted wake and every
 * skip for a reason, a missed slot included, never a plain not_due
 * (nor not_idle, the idle chamber's own not yet), a rehearsal or a
 * notice (the wake that made the notice has its entry).
 */
#include <string.h>

#include "heartint.h"

static const struct {
	const char *name;
	enum ghost_kind kind;
	int ran, hist, alert, journal;
} table[ST_NSTATUS] = {
	[ST_OK] = { "ok", GHOST_COMMIT, 1, 1, 0, 1 },
	[ST_IDLE] = { "idle", GHOST_ROLLBACK, 1, 0, 0, 1 },
	[ST_CAPPED] = { "capped", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_OPEN] = { "open", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_NOT_DUE] = { "not_due", GHOST_ROLLBACK, 0, 0, 0, 0 },
	[ST_QUIET] = { "quiet", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_NOT_IDLE] = { "not_idle", GHOST_ROLLBACK, 0, 0, 0, 0 },
	[ST_BUSY] = { "busy", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_EMPTY] = { "empty", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_TOOL_CAP] = { "tool_cap", GHOST_ROLLBACK, 1, 0, 0, 1 },
	[ST_DRY_RUN] = { "dry_run", GHOST_ROLLBACK, 0, 0, 0, 0 },
	[ST_ERROR] = { "error", GHOST_ERROR, 0, 0, 0, 1 },
	[ST_GATED] = { "gated", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_THROTTLED] = { "throttled", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_PAUSED] = { "paused", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_DORMANT] = { "dormant", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_HELD] = { "held", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_MISSED] = { "missed", GHOST_ROLLBACK, 0, 0, 0, 1 },
	[ST_BREAKER_OPEN] = { "breaker_open", GHOST_COMMIT, 0, 0, 1, 0 },
	[ST_BREAKER_CLOSED] = { "breaker_closed", GHOST_COMMIT, 0, 0, 0, 0 },
	[ST_DORMANT_NOTICE] = { "dormant_notice", GHOST_COMMIT, 0, 0, 1, 0 },
};

const char *
status_name(enum wake_status st)
{
	return table[st].name;
}

enum ghost_kind
status_kind(enum wake_status st)
{
	return table[st].kind;
}

/* Did the model answer in a wake of this status? */
int
status_ran(enum wake_status st)
{
	return table[st].ran;
}

/* What ghost mode does with a line of this status, into r: its kind,
 * ran, hist (a committed line is kept in the history) and alert
 * (--alert-only delivers it, whatever its text). */
void
status_ghost(enum wake_status st, struct ghost_result *r)
{
	r->kind = table[st].kind;
	r->ran = table[st].ran;
	r->hist = table[st].hist;
	r->alert = table[st].alert;
}

/* Does the journal keep a wake that ends with this status? */
int
status_journal(enum wake_status st)
{
	return table[st].journal;
}

/* The status called name: 0, or -1 when there is none. */
int
status_find(const char *name, enum wake_status *st)
{
	int i;

	for (i = 0; i < ST_NSTATUS; i++)
		if (strcmp(table[i].name, name) == 0) {
			*st = (enum wake_status)i;
			return 0;
		}
	return -1;
}
