/*
 * wake.c - the schedule and idle chambers' gates, and their state.
 *
 * agents/ID/wake.json holds, per chamber, the last admitted wake
 * ("last", what the model's meta line reports) and apart from it the
 * last wake the breaker or the cap refused, or that ended at a gate
 * that uses the slot, gated or missed ("refused": a refused wake uses
 * up its slot, as a dropped timer, but it is no wake), plus when
 * heart first saw the agent and whether a wake is running now.
 * It is only written by the holder of agents/ID/wake.lock, the per-
 * agent wake lock (a chat front end may hold it too, so that the user
 * always wins); readers need no lock.  Both live where the store
 * says (store.c): beside the agent, or in a server a fleet shares.
 * "dormant_told" is the last input before a dormancy that was told
 * (dormant.c): written under the same lock, so that one dormancy is
 * one notice whichever host's wake finds it.
 *
 * Gates, in order, all before any network traffic: busy (the lock),
 * due, active hours, checklist; the breaker and the cap follow in
 * run.c.  Every skip says which gate held; wake_next says when a
 * wake of the chamber will next be admitted, every gate counted (the
 * checklist's items as far as their intervals tell).  The slots and
 * the agent's offset in them are slot.c's.  An adaptive schedule's
 * due gate asks adapt.c, whose agents/ID/activity.json is read here
 * with wake.json, under the same lock.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

#define WAKEFILE	"wake.json"
#define CARRYFILE	"checklist.json"
#define ADMIT_STEPS	100000	/* refused slots foreseen, at most */

static time_t
get_ts(json_t *o, const char *key)
{
	json_t *j = json_object_get(o, key);

	return json_is_integer(j) ? (time_t)json_integer_value(j) : 0;
}

/* One chamber's entry of "last" or "refused": its time and status. */
static void
get_entry(json_t *o, enum chamber ch, time_t *t, char *status, size_t n)
{
	json_t *c = json_object_get(o, soul_chamber_name(ch));
	const char *st = json_string_value(json_object_get(c, "status"));

	*t = get_ts(c, "ts");
	snprintf(status, n, "%s", st != NULL ? st : "");
}

int
wake_load(const char *dir, struct wake_state *w, char *err)
{
	json_t *j;
	int i;

	memset(w, 0, sizeof *w);
	if (adapt_load(dir, &w->act, err) == -1)
		return -1;
	if (store_read_json(dir, WAKEFILE, &j, err) == -1) {
		wake_free(w);
		return -1;
	}
	if (j == NULL)
		return 0;
	w->exists = 1;
	w->first_seen = get_ts(j, "first_seen_ts");
	for (i = 0; i < CH_NCHAMBERS; i++) {
		get_entry(json_object_get(j, "last"), (enum chamber)i,
		    &w->last[i], w->last_status[i], sizeof w->last_status[i]);
		get_entry(json_object_get(j, "refused"), (enum chamber)i,
		    &w->refused[i], w->refused_status[i],
		    sizeof w->refused_status[i]);
		/* a file of an older heart kept refusals in "last" */
		if (strcmp(w->last_status[i], status_name(ST_CAPPED)) == 0 ||
		    strcmp(w->last_status[i], status_name(ST_OPEN)) == 0) {
			if (w->last[i] > w->refused[i]) {
				w->refused[i] = w->last[i];
				memcpy(w->refused_status[i], w->last_status[i],
				    sizeof w->refused_status[i]);
			}
			w->last[i] = 0;
			w->last_status[i][0] = '\0';
		}
	}
	w->error_at = get_ts(json_object_get(j, "last_error"), "ts");
	snprintf(w->error, sizeof w->error, "%s", json_string_value(
	    json_object_get(json_object_get(j, "last_error"), "message")) ?
	    json_string_value(json_object_get(json_object_get(j,
	    "last_error"), "message")) : "");
	w->checklist_warned = json_is_true(json_object_get(j,
	    "checklist_warned"));
	w->dormant_told = get_ts(j, "dormant_told_ts");
	json_decref(j);
	return 0;
}

void
wake_free(struct wake_state *w)
{
	adapt_free(w->act);
	w->act = NULL;
	json_decref(w->carried);
	w->carried = NULL;
	w->carried_read = 0;
}

static json_t *
ts_obj(time_t t, const char *status)
{
	char iso[32];

	clock_utc(t, iso, sizeof iso);
	return json_pack("{s:s,s:I,s:s}", "at", iso, "ts", (json_int_t)t,
	    "status", status);
}

/*
 * Write w, kept as keep says; running is the chamber of the wake in
 * progress, or -1.  The caller holds wake.lock.
 */
int
wake_save(const char *dir, const char *agent, const struct wake_state *w,
    int running, enum state_keep keep, time_t now, char *err)
{
	json_t *j, *last, *refused, *run = json_null();
	char iso[32];
	int i, r;

	last = json_object();
	refused = json_object();
	for (i = 0; i < CH_NCHAMBERS; i++) {
		json_object_set_new(last, soul_chamber_name((enum chamber)i),
		    w->last[i] ? ts_obj(w->last[i], w->last_status[i]) :
		    json_null());
		json_object_set_new(refused,
		    soul_chamber_name((enum chamber)i), w->refused[i] ?
		    ts_obj(w->refused[i], w->refused_status[i]) :
		    json_null());
	}
	if (running >= 0) {
		clock_utc(now, iso, sizeof iso);
		run = json_pack("{s:s,s:s,s:i}", "chamber",
		    soul_chamber_name((enum chamber)running), "since", iso,
		    "pid", (int)getpid());
	}
	clock_utc(w->first_seen, iso, sizeof iso);
	j = json_pack("{s:i,s:s,s:s,s:I,s:o,s:o,s:o,s:o,s:b}", "v", 1,
	    "agent", agent, "first_seen", iso, "first_seen_ts",
	    (json_int_t)w->first_seen, "last", last, "refused", refused,
	    "running", run,
	    "last_error", w->error[0] ? ts_obj(w->error_at, "error") :
	    json_null(), "checklist_warned", w->checklist_warned);
	if (w->error[0])
		json_object_set_new(json_object_get(j, "last_error"),
		    "message", json_string(w->error));
	if (w->dormant_told) {
		clock_utc(w->dormant_told, iso, sizeof iso);
		json_object_set_new(j, "dormant_told", json_string(iso));
		json_object_set_new(j, "dormant_told_ts",
		    json_integer(w->dormant_told));
	}
	r = store_put_json(dir, WAKEFILE, j, keep, err);
	json_decref(j);
	return r;
}

/* The gate holds, with this skip status (status.c's table). */
static void
gate_status(struct gate *g, enum wake_status st)
{
	snprintf(g->status, sizeof g->status, "%s", status_name(st));
}

/* The user's last sign into w, read once: the idle chamber's clock. */
void
wake_input(const struct soul *s, const char *dir, struct wake_state *w)
{
	char err[HEART_ERRLEN];

	if (!w->input_read)
		hist_last_sign(s->name, dir, 1, &w->input, err);
	w->input_read = 1;
}

/* When the chamber's slot was last used: by a wake admitted or refused. */
static time_t
slot_used(const struct wake_state *w, enum chamber c)
{
	return w->refused[c] > w->last[c] ? w->refused[c] : w->last[c];
}

/*
 * When chamber c is due, from its state alone (a time <= now: due
 * now).  The idle chamber needs wake_input first.
 */
static time_t
due_at(const struct soul *s, const struct wake_state *w, enum chamber c,
    time_t now)
{
	long long iv = s->ch[c].every;
	time_t since = slot_used(w, c);

	if (c == CH_IDLE)
		return slot_idle_due(w->input, w->first_seen, since, iv);
	if (s->adapt.on)
		return adapt_next(s, w->act, since, w->first_seen, now);
	return slot_before(since ? since : w->first_seen, iv,
	    slot_offset(s->name, iv)) + iv;
}

/* "last wake T, " and a refusal that used the slot since, for reasons */
static void
since_text(const struct wake_state *w, enum chamber c, char *buf, size_t n)
{
	char a[40], b[40];

	buf[0] = '\0';
	if (w->last[c])
		clock_utc(w->last[c], a, sizeof a);
	if (w->refused[c] > w->last[c])
		clock_utc(w->refused[c], b, sizeof b);
	if (w->last[c] && w->refused[c] > w->last[c])
		snprintf(buf, n, "last wake %s; a wake refused (%s) at %s "
		    "used its slot; ", a, w->refused_status[c], b);
	else if (w->last[c])
		snprintf(buf, n, "last wake %s, ", a);
	else if (w->refused[c])
		snprintf(buf, n, "a wake refused (%s) at %s used its slot; ",
		    w->refused_status[c], b);
}

static time_t	hours_next(const struct soul *, enum chamber, time_t);

/*
 * A due schedule's slot: when the newest slot passed opened, the later
 * of due (when the chamber fell due) and the last slot of the interval
 * in force at or before now, moved to the start of the active hours
 * when it fell outside them (a slot the hours skip is no slot missed).
 * How late a wake is counts from it (slot.c, slot_missed).
 */
static time_t
newest_slot(const struct soul *s, time_t due, long long iv, long long off,
    time_t now)
{
	time_t t = slot_before(now, iv, off), h;

	if (due > t)
		t = due;
	h = hours_next(s, CH_SCHEDULE, t);
	return h != 0 && h <= now ? h : t;
}

/* The adaptive schedule: the interval in force and its slot. */
static int
due_adaptive(const struct soul *s, struct wake_state *w, time_t now,
    struct gate *g)
{
	time_t next;
	char a[40], b[200];

	next = due_at(s, w, CH_SCHEDULE, now);
	g->interval = adapt_interval(s, w->act, now, &g->why);
	g->offset = slot_rung_offset(s, g->interval);
	if (next <= now) {
		g->slot = newest_slot(s, next, g->interval, g->offset, now);
		return 1;
	}
	g->next = next;
	clock_utc(next, a, sizeof a);
	since_text(w, CH_SCHEDULE, b, sizeof b);
	snprintf(g->reason, sizeof g->reason, "schedule: not due: %snext "
	    "wake %s (adaptive, offset %llds; %s)", b, a, g->offset,
	    json_string_value(json_object_get(g->why, "why")));
	gate_status(g, ST_NOT_DUE);
	return 0;
}

static int
due_schedule(const struct soul *s, struct wake_state *w, time_t now,
    struct gate *g)
{
	long long iv = s->ch[CH_SCHEDULE].every;
	long long off = slot_offset(s->name, iv);
	char a[40], b[200];

	if (s->adapt.on)
		return due_adaptive(s, w, now, g);
	g->interval = iv;
	g->offset = off;
	if ((g->next = due_at(s, w, CH_SCHEDULE, now)) <= now) {
		g->slot = newest_slot(s, g->next, iv, off, now);
		g->next = 0;
		return 1;
	}
	clock_utc(g->next, a, sizeof a);
	since_text(w, CH_SCHEDULE, b, sizeof b);
	if (slot_used(w, CH_SCHEDULE))
		snprintf(g->reason, sizeof g->reason, "schedule: not due: "
		    "%snext slot %s (every %llds, offset %llds)", b, a, iv,
		    off);
	else
		snprintf(g->reason, sizeof g->reason, "schedule: not due: "
		    "first slot %s (every %llds, offset %llds spreads the "
		    "fleet)", a, iv, off);
	gate_status(g, ST_NOT_DUE);
	return 0;
}

static int
due_idle(const struct soul *s, const char *dir, struct wake_state *w,
    time_t now, struct gate *g)
{
	long long after = s->ch[CH_IDLE].every;
	time_t from, t;
	char a[40], d[32];

	wake_input(s, dir, w);
	from = w->input ? w->input : w->first_seen;
	g->interval = after;
	if (now >= (t = due_at(s, w, CH_IDLE, now)))
		return 1;
	g->next = t;
	clock_utc(t, a, sizeof a);
	dur_format(now - from, d, sizeof d);
	if (now < from + after) {
		gate_status(g, ST_NOT_IDLE);
		if (w->input)
			snprintf(g->reason, sizeof g->reason, "idle: the "
			    "user was active %s ago; idle after %llds, at %s",
			    d, after, a);
		else
			snprintf(g->reason, sizeof g->reason, "idle: no user "
			    "input yet, quiet for %s since heart first saw "
			    "the agent; idle after %llds, at %s", d, after,
			    a);
	} else {
		gate_status(g, ST_NOT_DUE);
		snprintf(g->reason, sizeof g->reason, "idle: %s in this "
		    "quiet stretch; next at %s", w->refused[CH_IDLE] >
		    w->last[CH_IDLE] ? "a wake was refused" : "already woke",
		    a);
	}
	return 0;
}

/* The first time at or after t inside chamber c's active hours. */
static time_t
hours_next(const struct soul *s, enum chamber c, time_t t)
{
	const struct hours *h = &s->ch[c].active;
	time_t m;

	if (!soul_hours_out(h, s->timezone, t))
		return t;
	for (m = t - t % 60 + 60; m < t + 2 * 86400; m += 60)
		if (soul_hours_in(h, clock_minute_of_day(s->timezone, m)))
			return m;
	return 0;
}

static int
in_hours(const struct soul *s, enum chamber c, time_t now, struct gate *g)
{
	const struct hours *h = &s->ch[c].active;
	char a[40];

	if ((g->next = hours_next(s, c, now)) == now) {
		g->next = 0;
		return 1;
	}
	gate_status(g, ST_QUIET);
	clock_utc(g->next, a, sizeof a);
	snprintf(g->reason, sizeof g->reason, "%s: outside active hours "
	    "%02d:%02d-%02d:%02d %s; next at %s", soul_chamber_name(c),
	    h->start / 60, h->start % 60, h->end / 60, h->end % 60,
	    s->timezone, a);
	return 0;
}

/* The checklist path: absolute, or relative to the soul's directory. */
static void
checklist_path(const struct soul *s, const char *ck, char *buf, size_t n)
{
	const char *slash = strrchr(s->path, '/');

	if (ck[0] == '/' || slash == NULL)
		snprintf(buf, n, "%s", ck);
	else
		snprintf(buf, n, "%.*s/%s", (int)(slash - s->path), s->path,
		    ck);
}

/*
 * agents/ID/checklist.json: when each item with its own interval was
 * last carried by a wake a model answered, per chamber ({"schedule":
 * {ITEM: ts}}), read once per wake and only for a checklist that has such an
 * item; written by wake_carry under wake.lock.  Unreadable is empty:
 * every item is due, nothing is lost.
 */
static json_t *
carried(const char *dir, struct wake_state *w, enum chamber c)
{
	char err[HEART_ERRLEN];
	json_t *j = NULL;

	if (!w->carried_read) {
		if (store_read_json(dir, CARRYFILE, &j, err) == -1 ||
		    !json_is_object(j)) {
			json_decref(j);
			j = json_object();
		}
		w->carried = j;
		w->carried_read = 1;
	}
	return json_object_get(w->carried, soul_chamber_name(c));
}

/* When item was last carried by a wake of chamber c; 0: never. */
time_t
wake_carried(const char *dir, struct wake_state *w, enum chamber c,
    const char *item)
{
	return (time_t)json_integer_value(json_object_get(carried(dir, w, c),
	    item));
}

/*
 * Drop from g->items the items whose own interval has not passed since
 * the last wake that carried them; g->next gets the first time one is
 * due again.  Returns the items kept.
 */
static int
items_due(const char *dir, struct wake_state *w, enum chamber c,
    time_t now, struct gate *g)
{
	char *line, *save = NULL, *all = g->items, *out = NULL;
	size_t n = 0;
	long long iv;
	time_t t;
	int kept = 0;
	FILE *fp;

	if ((fp = open_memstream(&out, &n)) == NULL)
		abort();
	for (line = strtok_r(all, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		t = 0;
		if (checklist_interval(line, &iv))
			t = wake_carried(dir, w, c, line);
		if (t > 0 && now < t + iv) {
			if (g->next == 0 || t + iv < g->next)
				g->next = t + iv;
			continue;
		}
		fprintf(fp, "%s%s", kept++ ? "\n" : "", line);
	}
	fclose(fp);
	free(all);
	g->items = kept ? out : NULL;
	if (!kept)
		free(out);
	else
		g->next = 0;
	return kept;
}

static int
has_work(const struct soul *s, const char *dir, enum chamber c,
    struct wake_state *w, time_t now, struct gate *g)
{
	const char *ck = s->ch[c].checklist;
	char path[4096], err[HEART_ERRLEN], a[40];
	int r;

	if (ck == NULL)
		return 1;
	checklist_path(s, ck, path, sizeof path);
	if ((r = checklist_open_items(path, &g->items, err)) == -1) {
		if (!w->checklist_warned)
			snprintf(g->warning, sizeof g->warning, "%.400s; going "
			    "on with the prompt alone (said once)", err);
		w->checklist_warned = 1;
		return 1;
	}
	w->checklist_warned = 0;
	g->unread = r == 1;
	if (g->items == NULL) {
		gate_status(g, ST_EMPTY);
		snprintf(g->reason, sizeof g->reason, "%s: checklist %.400s "
		    "has no open item", soul_chamber_name(c), path);
		return 0;
	}
	if (items_due(dir, w, c, now, g) > 0)
		return 1;
	gate_status(g, ST_EMPTY);
	clock_utc(g->next, a, sizeof a);
	snprintf(g->reason, sizeof g->reason, "%s: checklist %.400s has no "
	    "item due; the next one is at %s", soul_chamber_name(c), path, a);
	return 0;
}

/*
 * A wake of chamber c carried items to a model that answered (ok or
 * idle): those with their own interval are not due again until it
 * has passed (checklist.json).  Written with the wake's outcome, never
 * before it: a wake that failed or was killed leaves them due.  The
 * caller holds wake.lock.
 */
int
wake_carry(const char *dir, struct wake_state *w, enum chamber c,
    const char *items, time_t now, char *err)
{
	char *copy, *line, *save = NULL;
	json_t *ch;
	long long iv;
	int n = 0;

	if (items == NULL)
		return 0;
	carried(dir, w, c);
	if ((ch = json_object_get(w->carried, soul_chamber_name(c))) == NULL) {
		ch = json_object();
		json_object_set_new(w->carried, soul_chamber_name(c), ch);
	}
	copy = xstrdup(items);
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (checklist_interval(line, &iv)) {
			json_object_set_new(ch, line, json_integer(now));
			n++;
		}
	free(copy);
	if (n == 0)
		return 0;
	json_object_set_new(w->carried, "v", json_integer(1));
	return store_put_json(dir, CARRYFILE, w->carried, STATE_WHOLE, err);
}

/*
 * When an item of chamber c's checklist is next due, from the file
 * and checklist.json: now when one is (or the chamber has no
 * checklist, or it cannot be read: the prompt goes alone), when the
 * first comes due again when none is, 0 when it has no open item (no
 * wake goes until one is added).  Changes nothing but w's cache.
 */
static time_t
items_at(const struct soul *s, const char *dir, struct wake_state *w,
    enum chamber c, time_t now)
{
	const char *ck = s->ch[c].checklist;
	char path[4096], err[HEART_ERRLEN];
	struct gate g;

	if (ck == NULL)
		return now;
	memset(&g, 0, sizeof g);
	checklist_path(s, ck, path, sizeof path);
	if (checklist_open_items(path, &g.items, err) == -1)
		return now;
	if (g.items == NULL)
		return 0;
	if (items_due(dir, w, c, now, &g) > 0)
		g.next = now;
	free(g.items);
	return g.next;
}

/* --force: no due gate, but the interval in force all the same. */
static void
forced(const struct soul *s, struct wake_state *w, enum chamber c,
    time_t now, struct gate *g)
{
	if (c == CH_SCHEDULE && s->adapt.on) {
		g->interval = adapt_interval(s, w->act, now, &g->why);
		g->offset = slot_rung_offset(s, g->interval);
	} else if (c == CH_SCHEDULE)
		g->interval = s->ch[c].every;
}

/*
 * When a wake of chamber c will next be admitted, if heart-wake runs
 * every minute: the first time at or after now when its due and
 * active-hours gates pass and the breaker and the cap admit it (both
 * do from open_at on), a wake they refuse before then using up its
 * slot as run.c has it.  force: the due and hours gates are skipped.
 * The checklist is wake_next's.  0: never (the chamber is off, or
 * open_at is 0).  Pure: w as loaded, with wake_input for the idle
 * chamber.
 */
time_t
wake_admit(const struct soul *s, const struct wake_state *w0,
    enum chamber c, time_t now, time_t open_at, int force)
{
	struct wake_state w = *w0;	/* its times only; act is read */
	time_t t = now, d;
	int i;

	if (s->ch[c].daily_cap == 0 || open_at <= 0)
		return 0;
	if (force)
		return open_at > now ? open_at : now;
	for (i = 0; i < ADMIT_STEPS; i++) {
		if ((d = due_at(s, &w, c, t)) > t)
			t = d;
		if ((t = hours_next(s, c, t)) == 0 || t >= open_at)
			return t;
		w.refused[c] = t;	/* refused, its slot used */
	}
	return 0;
}

/*
 * wake_admit with the checklist foreseen, as far as it can be: from
 * when an item of it is next due (a wake goes no sooner: the checklist
 * gate comes before the breaker and the cap, and skips without using
 * the slot), the first time its due and hours gates pass and the
 * breaker and the cap admit it.  0 when none will, or while the
 * checklist has no open item.  The idle chamber needs wake_input.
 */
time_t
wake_next(const struct soul *s, const char *dir, struct wake_state *w,
    enum chamber c, time_t now, time_t open_at, int force)
{
	time_t from;

	if (s->ch[c].daily_cap == 0 || open_at <= 0 ||
	    (from = items_at(s, dir, w, c, now)) == 0)
		return 0;
	return wake_admit(s, w, c, from > now ? from : now, open_at, force);
}

/*
 * --explain: the due, active-hours and checklist gates of chamber c at
 * now into g[0], g[1], g[2], each evaluated whatever the others say:
 * status "" when it passes; reason in either case.  force skips the
 * due and hours gates, as heart-wake --force does.
 */
void
wake_verdicts(const struct soul *s, const char *dir, struct wake_state *w,
    enum chamber c, time_t now, int force, struct gate g[3])
{
	static const char skipped[] = "skipped by --force";
	const struct hours *h = &s->ch[c].active;
	const char *ck = s->ch[c].checklist, *p;
	int i, n = 0;

	memset(g, 0, 3 * sizeof *g);
	for (i = 0; i < 3; i++)
		g[i].chamber = c;
	if (force) {
		forced(s, w, c, now, &g[0]);
		snprintf(g[0].reason, sizeof g[0].reason, "%s", skipped);
	} else if (c == CH_SCHEDULE ? due_schedule(s, w, now, &g[0]) :
	    due_idle(s, dir, w, now, &g[0]))
		snprintf(g[0].reason, sizeof g[0].reason, "%s: due now",
		    soul_chamber_name(c));
	if (force)
		snprintf(g[1].reason, sizeof g[1].reason, "%s", skipped);
	else if (in_hours(s, c, now, &g[1]) && h->set)
		snprintf(g[1].reason, sizeof g[1].reason, "inside active "
		    "hours %02d:%02d-%02d:%02d %s", h->start / 60,
		    h->start % 60, h->end / 60, h->end % 60, s->timezone);
	else if (!h->set)
		snprintf(g[1].reason, sizeof g[1].reason, "all day (no "
		    "active_hours)");
	if (!has_work(s, dir, c, w, now, &g[2]))
		return;
	for (p = g[2].items; p != NULL && *p != '\0'; p++)
		n += *p == '\n' || p[1] == '\0';
	if (ck == NULL)
		snprintf(g[2].reason, sizeof g[2].reason, "no checklist");
	else if (g[2].items == NULL)
		snprintf(g[2].reason, sizeof g[2].reason, "checklist %.400s "
		    "cannot be read: the prompt goes alone", ck);
	else
		snprintf(g[2].reason, sizeof g[2].reason, "%d open item%s",
		    n, n == 1 ? "" : "s");
}

/*
 * The gates after the lock, in order: chamber off, due, active hours
 * (both skipped by force), checklist.  Returns 1 when the chamber may
 * go on to the breaker and the cap, 0 with g->status and g->reason set.
 */
int
wake_gates(const struct soul *s, const char *dir, struct wake_state *w,
    enum chamber c, time_t now, int force, struct gate *g)
{
	int ok;

	memset(g, 0, sizeof *g);
	g->chamber = c;
	if (s->ch[c].daily_cap == 0) {
		gate_status(g, ST_CAPPED);
		snprintf(g->reason, sizeof g->reason, "%s: the chamber is off "
		    "(daily_cap: 0)", soul_chamber_name(c));
		return 0;
	}
	if (!force) {
		ok = c == CH_SCHEDULE ? due_schedule(s, w, now, g) :
		    due_idle(s, dir, w, now, g);
		if (!ok || !in_hours(s, c, now, g))
			return 0;
	} else
		forced(s, w, c, now, g);
	return has_work(s, dir, c, w, now, g);
}

void
wake_gate_free(struct gate *g)
{
	free(g->items);
	g->items = NULL;
	json_decref(g->why);
	g->why = NULL;
}
