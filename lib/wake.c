/*
 * wake.c - the schedule and idle chambers' gates, and their state.
 *
 * agents/ID/wake.json holds, per chamber, the last admitted wake, plus
 * when heart first saw the agent and whether a wake is running now.
 * It is only written by the holder of agents/ID/wake.lock, the per-
 * agent wake lock (a chat front end may hold it too, so that the user
 * always wins); readers need no lock.  Both live where the store
 * says (store.c): beside the agent, or in a server a fleet shares.
 *
 * Gates, in order, all before any network traffic: busy (the lock),
 * due, active hours, checklist; the breaker and the cap follow in
 * run.c.  Every skip says which gate held and when the chamber may
 * next fire.  An adaptive schedule's due gate asks adapt.c, whose
 * agents/ID/activity.json is read here with wake.json, under the
 * same lock.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heart.h"

#define WAKEFILE	"wake.json"

static time_t
get_ts(json_t *o, const char *key)
{
	json_t *j = json_object_get(o, key);

	return json_is_integer(j) ? (time_t)json_integer_value(j) : 0;
}

int
wake_load(const char *dir, struct wake_state *w, char *err)
{
	json_t *j, *last, *c, *run;
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
	last = json_object_get(j, "last");
	for (i = 0; i < CH_NCHAMBERS; i++) {
		c = json_object_get(last, chamber_name((enum chamber)i));
		w->last[i] = get_ts(c, "ts");
		snprintf(w->last_status[i], sizeof w->last_status[i], "%s",
		    json_string_value(json_object_get(c, "status")) ?
		    json_string_value(json_object_get(c, "status")) : "");
	}
	w->error_at = get_ts(json_object_get(j, "last_error"), "ts");
	snprintf(w->error, sizeof w->error, "%s", json_string_value(
	    json_object_get(json_object_get(j, "last_error"), "message")) ?
	    json_string_value(json_object_get(json_object_get(j,
	    "last_error"), "message")) : "");
	w->checklist_warned = json_is_true(json_object_get(j,
	    "checklist_warned"));
	run = json_object_get(j, "running");
	if (json_is_object(run))
		w->running_pid = (pid_t)json_integer_value(
		    json_object_get(run, "pid"));
	json_decref(j);
	return 0;
}

void
wake_free(struct wake_state *w)
{
	adapt_free(w->act);
	w->act = NULL;
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
 * Write w; running is the chamber of the wake in progress, or -1.
 * The caller holds wake.lock.
 */
int
wake_save(const char *dir, const char *agent, const struct wake_state *w,
    int running, time_t now, char *err)
{
	json_t *j, *last, *run = json_null();
	char iso[32];
	int i, r;

	last = json_object();
	for (i = 0; i < CH_NCHAMBERS; i++)
		json_object_set_new(last, chamber_name((enum chamber)i),
		    w->last[i] ? ts_obj(w->last[i], w->last_status[i]) :
		    json_null());
	if (running >= 0) {
		clock_utc(now, iso, sizeof iso);
		run = json_pack("{s:s,s:s,s:i}", "chamber",
		    chamber_name((enum chamber)running), "since", iso,
		    "pid", (int)getpid());
	}
	clock_utc(w->first_seen, iso, sizeof iso);
	j = json_pack("{s:i,s:s,s:s,s:I,s:o,s:o,s:o,s:b}", "v", 1,
	    "agent", agent, "first_seen", iso, "first_seen_ts",
	    (json_int_t)w->first_seen, "last", last, "running", run,
	    "last_error", w->error[0] ? ts_obj(w->error_at, "error") :
	    json_null(), "checklist_warned", w->checklist_warned);
	if (w->error[0])
		json_object_set_new(json_object_get(j, "last_error"),
		    "message", json_string(w->error));
	r = store_write_json(dir, WAKEFILE, j, err);
	json_decref(j);
	return r;
}

/* A stable offset inside the interval, from the agent id (FNV-1a). */
long long
wake_offset(const char *agent, long long interval)
{
	unsigned long long h = 1469598103934665603ULL;
	const unsigned char *p;

	for (p = (const unsigned char *)agent; *p != '\0'; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	h ^= h >> 29;
	return interval > 0 ? (long long)(h % (unsigned long long)interval) :
	    0;
}

/* The latest slot boundary at or before now: offset + k * interval. */
static time_t
slot_start(time_t now, long long interval, long long offset)
{
	long long k = ((long long)now - offset) / interval;

	if ((long long)now - offset < 0 &&
	    ((long long)now - offset) % interval != 0)
		k--;
	return (time_t)(offset + k * interval);
}

static void
fmt_when(const struct soul *s, time_t t, char *buf, size_t n)
{
	clock_iso(s->timezone, t, buf, n);
}

/* The last sign of the user: input's mtime, or the last user message. */
static time_t
last_input(const char *agent, const char *dir)
{
	char path[4200];
	struct stat st;
	time_t t = 0, h = 0;
	char err[HEART_ERRLEN];

	snprintf(path, sizeof path, "%s/input", dir);
	if (stat(path, &st) == 0)
		t = st.st_mtime;
	if (hist_last_user(agent, &h, err) == 0 && h > t)
		t = h;
	return t;
}

/* The gate holds, with this skip status (status.c's table). */
static void
gate_status(struct gate *g, enum wake_status st)
{
	snprintf(g->status, sizeof g->status, "%s", status_name(st));
}

/* The adaptive schedule: the interval in force and its slot. */
static int
due_adaptive(const struct soul *s, struct wake_state *w, time_t now,
    struct gate *g)
{
	struct adapt_fig f;
	time_t next;
	char a[40], b[40];

	next = adapt_next(s, w->act, w->last[CH_SCHEDULE], w->first_seen,
	    now, &f);
	g->interval = f.interval;
	g->offset = adapt_offset(s, f.interval);
	g->why = adapt_json(s, &f);
	if (next <= now)
		return 1;
	g->next = next;
	fmt_when(s, next, a, sizeof a);
	if (w->last[CH_SCHEDULE])
		fmt_when(s, w->last[CH_SCHEDULE], b, sizeof b);
	snprintf(g->reason, sizeof g->reason, "schedule: not due: %s%s%s"
	    "next wake %s (adaptive, offset %llds; %s)",
	    w->last[CH_SCHEDULE] ? "last wake " : "",
	    w->last[CH_SCHEDULE] ? b : "", w->last[CH_SCHEDULE] ? ", " : "",
	    a, g->offset, json_string_value(json_object_get(g->why,
	    "why")));
	gate_status(g, ST_NOT_DUE);
	return 0;
}

static int
due_schedule(const struct soul *s, struct wake_state *w, time_t now,
    struct gate *g)
{
	long long iv = s->ch[CH_SCHEDULE].every;
	long long off = wake_offset(s->name, iv);
	time_t slot = slot_start(now, iv, off);
	time_t since = w->last[CH_SCHEDULE] ? w->last[CH_SCHEDULE] :
	    w->first_seen;
	char a[40], b[40];

	if (s->adapt.on)
		return due_adaptive(s, w, now, g);
	g->interval = iv;
	g->offset = off;
	if (since < slot)
		return 1;
	g->next = slot + iv;
	fmt_when(s, g->next, a, sizeof a);
	if (w->last[CH_SCHEDULE]) {
		fmt_when(s, w->last[CH_SCHEDULE], b, sizeof b);
		snprintf(g->reason, sizeof g->reason, "schedule: not due: "
		    "last wake %s, next slot %s (every %llds, offset %llds)",
		    b, a, iv, off);
	} else
		snprintf(g->reason, sizeof g->reason, "schedule: not due: "
		    "first slot %s (every %llds, offset %llds spreads the "
		    "fleet)", a, iv, off);
	gate_status(g, ST_NOT_DUE);
	return 0;
}

static int
due_idle(const struct soul *s, const char *dir,
    const struct wake_state *w, time_t now, struct gate *g)
{
	long long after = s->ch[CH_IDLE].every;
	time_t in = last_input(s->name, dir), from, t;
	char a[40], d[32];

	from = in ? in : w->first_seen;
	g->interval = after;
	t = from + after;
	if (w->last[CH_IDLE] + after > t)
		t = w->last[CH_IDLE] + after;
	if (now >= t)
		return 1;
	g->next = t;
	fmt_when(s, t, a, sizeof a);
	dur_format(now - from, d, sizeof d);
	if (now < from + after) {
		gate_status(g, ST_NOT_IDLE);
		if (in)
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
		snprintf(g->reason, sizeof g->reason, "idle: already woke in "
		    "this quiet stretch; next at %s", a);
	}
	return 0;
}

static int
in_hours(const struct soul *s, enum chamber c, time_t now, struct gate *g)
{
	const struct hours *h = &s->ch[c].active;
	time_t t;

	if (hours_in(h, clock_minute_of_day(s->timezone, now)))
		return 1;
	for (t = now - now % 60 + 60; t < now + 2 * 86400; t += 60)
		if (hours_in(h, clock_minute_of_day(s->timezone, t)))
			break;
	g->next = t;
	gate_status(g, ST_QUIET);
	{
		char a[40];
		fmt_when(s, t, a, sizeof a);
		snprintf(g->reason, sizeof g->reason, "%s: outside active "
		    "hours %02d:%02d-%02d:%02d %s; next at %s",
		    chamber_name(c), h->start / 60, h->start % 60,
		    h->end / 60, h->end % 60, s->timezone, a);
	}
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

static int
has_work(const struct soul *s, enum chamber c, struct wake_state *w,
    struct gate *g)
{
	const char *ck = s->ch[c].checklist;
	char path[4096], err[HEART_ERRLEN];

	if (ck == NULL)
		return 1;
	checklist_path(s, ck, path, sizeof path);
	if (ck_open_items(path, &g->items, err) == -1) {
		if (!w->checklist_warned)
			snprintf(g->warning, sizeof g->warning, "%.400s; going "
			    "on with the prompt alone (said once)", err);
		w->checklist_warned = 1;
		return 1;
	}
	w->checklist_warned = 0;
	if (g->items != NULL)
		return 1;
	gate_status(g, ST_EMPTY);
	snprintf(g->reason, sizeof g->reason, "%s: checklist %.400s has no "
	    "open item", chamber_name(c), path);
	return 0;
}

/*
 * When chamber c is next due, from its due gate alone (active hours
 * may hold it longer); for a result that has just woken it.
 */
time_t
wake_next(const struct soul *s, const char *dir, struct wake_state *w,
    enum chamber c, time_t now)
{
	struct gate g;

	memset(&g, 0, sizeof g);
	if (s->ch[c].daily_cap == 0 || (c == CH_SCHEDULE ?
	    due_schedule(s, w, now, &g) : due_idle(s, dir, w, now, &g)))
		g.next = 0;
	gate_free(&g);
	return g.next;
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
		    "(daily_cap: 0)", chamber_name(c));
		return 0;
	}
	if (!force) {
		ok = c == CH_SCHEDULE ? due_schedule(s, w, now, g) :
		    due_idle(s, dir, w, now, g);
		if (!ok || !in_hours(s, c, now, g))
			return 0;
	} else if (c == CH_SCHEDULE && s->adapt.on) {
		struct adapt_fig f;
		g->interval = adapt_interval(s, w->act, now, &f);
		g->offset = adapt_offset(s, g->interval);
		g->why = adapt_json(s, &f);
	} else if (c == CH_SCHEDULE)
		g->interval = s->ch[c].every;
	return has_work(s, c, w, g);
}

void
gate_free(struct gate *g)
{
	free(g->items);
	g->items = NULL;
	json_decref(g->why);
	g->why = NULL;
}
