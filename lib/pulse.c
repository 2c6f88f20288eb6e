/*
 * pulse.c - what a pulse says: the dashboard's fields, read from an
 * agent's state files, and its topic.  This file defines those fields
 * once for every program (heart-pulse publishes them, its watcher
 * reads them back); publisher.c says the rest of the pulse chamber's
 * messages.
 *
 * Invariant: reading never takes a lock.  The writers replace the
 * files whole by rename (state.c), so a reader sees the old or the new
 * file, and a pulse can never make a wake wait.  A file that is missing
 * means its default (breaker closed, no wake running, nothing used); a
 * file that cannot be read or parsed leaves its field unknown (null in
 * the pulse) and is reported to the caller, who carries on.  The texts
 * a state keeps (a breaker's reason, a wake's error) are its own, freed
 * by pulse_clear.
 */
#include <sys/file.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"
#include "heartpulse.h"

#define PULSE_TEXTMAX	121	/* a reason in a pulse: 120 bytes at most */
#define PULSE_GRACE_MIN	120	/* s: the least grace of an overdue wake */

/* Keep a text of a state file, made fit for a pulse, or none. */
static void
set_text(char **dst, const char *s)
{
	char buf[PULSE_TEXTMAX];

	free(*dst);
	*dst = NULL;
	if (s == NULL || *s == '\0')
		return;
	text_line(buf, sizeof buf, s, strlen(s));
	*dst = xstrdup(buf);
}

/* A status word of wake.json: a-z and _, short enough to keep. */
static int
word(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz_");

	return n > 0 && n < 16 && s[n] == '\0';
}

/*
 * The breaker as heart-breaker status tells it now: brk_peek's view,
 * the library's own rule (an open breaker whose cooldown has passed is
 * half-open), with the keys the breaker was last given.
 */
static int
read_breaker(const char *id, time_t now, struct pulse_state *st,
    char *err)
{
	struct brk_view v;

	st->breaker[0] = st->brk_trigger[0] = '\0';
	st->brk_until = 0;
	set_text(&st->brk_reason, NULL);
	if (brk_peek(id, NULL, now, &v, err) == -1)
		return -1;
	snprintf(st->breaker, sizeof st->breaker, "%s",
	    brk_state_name(v.state));
	if (v.state == BRK_CLOSED)
		return 0;
	st->brk_until = v.until;
	if (strcmp(v.trigger, "llm") == 0 || strcmp(v.trigger, "tool") == 0)
		memcpy(st->brk_trigger, v.trigger, strlen(v.trigger) + 1);
	set_text(&st->brk_reason, v.reason);
	return 0;
}

/*
 * When the idle chamber is next due, where it is on: slot.c's rule,
 * the one heart-wake's due gate follows, from the user's last sign
 * (read_input) and what wake.json said (read_due).
 */
static void
idle_due(const struct pulse_slots *sl, struct pulse_state *st)
{
	st->idle_due = sl != NULL && sl->idle > 0 ? slot_idle_due(st->input,
	    st->seen, st->idle_used, sl->idle) : 0;
}

/* When chamber c's slot was last used in wake.json: the last admitted
 * or refused wake; 0: never. */
static time_t
slot_used(json_t *j, enum chamber c)
{
	const char *name = soul_chamber_name(c);
	json_int_t used, t;

	used = json_integer_value(json_object_get(json_object_get(
	    json_object_get(j, "last"), name), "ts"));
	t = json_integer_value(json_object_get(json_object_get(
	    json_object_get(j, "refused"), name), "ts"));
	if (t > used)
		used = t;
	return used > 0 ? (time_t)used : 0;
}

/*
 * When the schedule is next due (pulse_due), from its slot last used in
 * wake.json, else the agent's first sight there, else sl->from; and
 * the idle chamber (idle_due), from its own slot and that first sight.
 */
static void
read_due(json_t *j, const struct pulse_slots *sl, struct pulse_state *st)
{
	json_int_t seen;
	time_t used;

	seen = json_integer_value(json_object_get(j, "first_seen_ts"));
	st->seen = seen > 0 ? (time_t)seen : sl != NULL ? sl->from : 0;
	st->idle_used = slot_used(j, CH_IDLE);
	idle_due(sl, st);
	st->due = 0;
	if (sl == NULL || sl->every <= 0)
		return;
	used = slot_used(j, CH_SCHEDULE);
	st->due = pulse_due(sl->every, sl->off, used > 0 ? used : st->seen);
}

/*
 * The user's last sign (hist.c), read without the history's lock, and
 * the idle chamber's due time from it.
 */
static int
read_input(const char *id, const char *dir, const struct pulse_slots *sl,
    struct pulse_state *st, char *err)
{
	int r = hist_last_sign(id, dir, 0, &st->input, err);

	idle_due(sl, st);
	return r;
}

/*
 * The newest of the last admitted wakes in wake.json j (one per
 * chamber; NULL: none), with its error if it had one, the newest real
 * answer among them (kept when a later wake replaces it: heart-pulse
 * remembers), and the due time (read_due).  The publisher gives it the
 * file, heart-cap status the store's document (pulse_docs).
 */
static void
wake_doc(json_t *j, const struct pulse_slots *sl,
    struct pulse_state *st)
{
	json_t *c, *e;
	const char *s;
	json_int_t ts;
	int i;

	st->last_status[0] = '\0';
	st->last_ts = 0;
	set_text(&st->last_error, NULL);
	for (i = 0; i < CH_NCHAMBERS; i++) {
		c = json_object_get(json_object_get(j, "last"),
		    soul_chamber_name((enum chamber)i));
		s = json_string_value(json_object_get(c, "status"));
		ts = json_integer_value(json_object_get(c, "ts"));
		if (s == NULL || !word(s) || ts <= 0)
			continue;
		if (strcmp(s, "ok") == 0 && ts > st->answer)
			st->answer = (time_t)ts;
		if (ts < st->last_ts)
			continue;
		st->last_chamber = (signed char)i;
		snprintf(st->last_status, sizeof st->last_status, "%s", s);
		st->last_ts = (time_t)ts;
	}
	read_due(j, sl, st);
	e = json_object_get(j, "last_error");
	if (st->last_ts > 0 && json_integer_value(json_object_get(e, "ts")) ==
	    st->last_ts)
		set_text(&st->last_error, json_string_value(
		    json_object_get(e, "message")));
}

/* A wake whose process is gone is not running, whatever its file says;
 * a publisher whose process is gone is no rival (pulsenode.c). */
int
pulse_pid_gone(long long pid)
{
	if (pid <= 0 || pid > 0x7fffffff)
		return 0;
	return kill((pid_t)pid, 0) == -1 && errno == ESRCH;
}

static int
read_wake(const char *dir, const struct pulse_slots *sl,
    struct pulse_state *st, char *err)
{
	json_t *j, *r, *ch, *pid;
	enum chamber c;

	st->waking = -1;
	st->chamber[0] = '\0';
	st->pid = 0;
	if (state_read_doc(dir, "wake.json", &j, err) == -1) {
		wake_doc(NULL, sl, st);
		return -1;
	}
	wake_doc(j, sl, st);
	r = json_object_get(j, "running");
	if (r == NULL || json_is_null(r)) {
		st->waking = 0;
		json_decref(j);
		return 0;
	}
	if (!json_is_object(r)) {
		json_decref(j);
		errf(err, "%s/wake.json: \"running\" is neither null nor an "
		    "object", dir);
		return -1;
	}
	ch = json_object_get(r, "chamber");
	pid = json_object_get(r, "pid");
	if (json_is_string(ch) && soul_chamber_parse(json_string_value(ch),
	    &c) == 0)
		snprintf(st->chamber, sizeof st->chamber, "%s",
		    soul_chamber_name(c));
	if (json_is_integer(pid))
		st->pid = json_integer_value(pid);
	st->waking = !pulse_pid_gone(st->pid);
	json_decref(j);
	return 0;
}

/*
 * The journal's last entry e (journal.c; NULL: none): when heart-wake
 * last looked at the agent and decided something, and, when that was
 * a skip (no model answered, no error), its status and reason.  The
 * publisher gives it the file's, heart-cap status the store's.
 */
static void
journal_doc(json_t *e, struct pulse_state *st)
{
	enum wake_status ws;
	const char *status;

	st->looked = 0;
	st->skip = -1;
	set_text(&st->skip_reason, NULL);
	if (e == NULL)
		return;
	clock_parse_utc(json_string_value(json_object_get(e, "at")),
	    &st->looked);
	status = json_string_value(json_object_get(e, "status"));
	if (status_find(status, &ws) == 0 && !status_ran(ws) &&
	    ws != ST_ERROR) {
		st->skip = (signed char)ws;
		set_text(&st->skip_reason, json_string_value(
		    json_object_get(e, "reason")));
	}
}

static int
read_journal(const char *id, struct pulse_state *st, char *err)
{
	json_t *arr;

	journal_doc(NULL, st);
	if (journal_read(id, 0, 1, &arr, err) == -1)
		return -1;
	journal_doc(json_array_get(arr, 0), st);
	json_decref(arr);
	return 0;
}

/* Whether st's last skip is to be shown: no wake was admitted after
 * it. */
static int
skip_shown(const struct pulse_state *st)
{
	return st->skip >= 0 && st->looked >= st->last_ts;
}

/*
 * What a store's documents say (overdue.c): wake.json's, j, and the
 * journal's last entry, e (NULL: none), read as the files are
 * (wake_doc, journal_doc); the skip is kept only where it is shown.
 */
void
pulse_docs(json_t *j, json_t *e, const struct pulse_slots *sl,
    struct pulse_state *st)
{
	wake_doc(j, sl, st);
	journal_doc(e, st);
	if (!skip_shown(st)) {
		st->skip = -1;
		set_text(&st->skip_reason, NULL);
	}
}

/*
 * When the schedule is next due after its slot last used at `used' (or
 * its first sight): the next of its slots (slot.c), as wake.c's due
 * gate places a fixed schedule's; every 0: off, 0.
 */
time_t
pulse_due(long long every, long long off, time_t used)
{
	if (every <= 0 || used <= 0)
		return 0;
	return slot_before(used, every, off) + every;
}

/*
 * The schedule's slots for its due time (pulse_due) in *every and
 * *off: an adaptive one's longest rung, the latest it may be due;
 * every 0 when the chamber is off.
 */
void
pulse_slots_of(const struct soul *s, long long *every, long long *off)
{
	*every = *off = 0;
	if (s->ch[CH_SCHEDULE].daily_cap == 0 || s->ch[CH_SCHEDULE].every <= 0)
		return;
	*every = s->adapt.on ? s->adapt.max : s->ch[CH_SCHEDULE].every;
	*off = s->adapt.on ? slot_rung_offset(s, *every) :
	    slot_offset(s->name, *every);
}

/*
 * The rule of an overdue chamber (every: its interval): its due time
 * passed more than a grace ago (one interval, at least
 * PULSE_GRACE_MIN), and no heart-wake has looked at the agent since (an
 * admitted or refused wake in wake.json, or any entry of its journal,
 * at or after due).  A not_due wake writes nothing, and need not: it
 * was not due.
 */
int
pulse_overdue(time_t due, long long every, time_t looked, time_t now)
{
	long long grace = every > PULSE_GRACE_MIN ? every : PULSE_GRACE_MIN;

	return due > 0 && now >= due + (time_t)grace && looked < due;
}

static int
read_cap(const char *id, const char *zone, const struct caps *caps,
    time_t now, struct pulse_state *st, char *err)
{
	struct cap_view v;

	st->cap_used = st->cap_max = -1;
	st->cap_until = 0;
	if (cap_peek(id, zone, now, &v, err) == -1)
		return -1;
	st->cap_used = v.total;
	st->tokens = v.tok.prompt + v.tok.completion + v.triage.prompt +
	    v.triage.completion;
	st->cap_max = cap_agent_limit(caps != NULL ? caps : &v.caps);
	if (caps != NULL)
		v.caps = *caps;
	st->cost = cap_cost(&v);
	st->cap_until = clock_next_midnight(v.zone, now);
	return 0;
}

/*
 * The parts of st named by `what' unknown: null in the pulse; sl as
 * pulse_read's (its due counts from sl->from, if it has slots).
 */
void
pulse_unknown(const struct pulse_slots *sl, unsigned what,
    struct pulse_state *st)
{
	if (what & PULSE_BREAKER) {
		st->breaker[0] = st->brk_trigger[0] = '\0';
		st->brk_until = 0;
		set_text(&st->brk_reason, NULL);
	}
	if (what & PULSE_WAKE) {
		st->waking = -1;
		wake_doc(NULL, sl, st);
	}
	if (what & PULSE_CAP)
		st->cap_used = st->cap_max = -1;
	if (what & PULSE_JOURNAL) {
		st->looked = 0;
		st->skip = -1;
	}
	if (what & PULSE_INPUT) {
		st->input = 0;
		idle_due(sl, st);
	}
}

/*
 * Read the parts of agent id's state named by `what' (one or more of
 * PULSE_BREAKER, PULSE_WAKE, PULSE_CAP, PULSE_JOURNAL, PULSE_INPUT)
 * into st.  On failure the failed part is left unknown (the user's last
 * sign: what could be read of it), the others are read all the same,
 * and err names the last file that failed.  caps are the soul's (NULL:
 * the cap file's); sl its chambers' slots, for the due times read with
 * the wake and the input (NULL: none).
 */
int
pulse_read(const char *id, const char *zone, const struct caps *caps,
    const struct pulse_slots *sl, time_t now, unsigned what,
    struct pulse_state *st, char *err)
{
	char dir[4096];
	int r = 0;

	if (state_agent_dir(id, 0, dir, sizeof dir, err) == -1) {
		pulse_unknown(sl, what, st);
		return -1;
	}
	if ((what & PULSE_BREAKER) && read_breaker(id, now, st, err) == -1)
		r = -1;
	if ((what & PULSE_WAKE) && read_wake(dir, sl, st, err) == -1)
		r = -1;
	if ((what & PULSE_CAP) && read_cap(id, zone, caps, now, st, err) == -1)
		r = -1;
	if ((what & PULSE_JOURNAL) && read_journal(id, st, err) == -1)
		r = -1;
	if ((what & PULSE_INPUT) && read_input(id, dir, sl, st, err) == -1)
		r = -1;
	return r;
}

/*
 * Whether the agent is asleep: every chamber that is on (its cap above
 * 0) has active hours, and now is outside all of them.  caps and
 * active[CH_NCHAMBERS] are the soul's.
 */
int
pulse_quiet(const char *zone, const struct caps *caps,
    const struct hours *active, time_t now)
{
	int c, m = -1, on = 0;

	for (c = 0; c < CH_NCHAMBERS; c++) {
		if (cap_limit(caps, (enum chamber)c) <= 0)
			continue;
		if (!active[c].set)
			return 0;
		if (m < 0)
			m = clock_minute_of_day(zone, now);
		if (soul_hours_in(&active[c], m))
			return 0;
		on = 1;
	}
	return on;
}

/*
 * Free st's texts (brk_reason, last_error): they are the state's own,
 * NULL or allocated.  A copy of the struct must not be freed, and
 * pulse_changed does not look at them.
 */
void
pulse_clear(struct pulse_state *st)
{
	set_text(&st->brk_reason, NULL);
	set_text(&st->last_error, NULL);
	set_text(&st->skip_reason, NULL);
}

/* Whether the dashboard must redraw: breaker, wake, overdue or the
 * last skip changed. */
int
pulse_changed(const struct pulse_state *a, const struct pulse_state *b)
{
	return strcmp(a->breaker, b->breaker) != 0 ||
	    a->overdue != b->overdue || a->skip != b->skip ||
	    a->waking != b->waking ||
	    (a->waking == 1 && strcmp(a->chamber, b->chamber) != 0);
}

/*
 * The pulse is built by hand, not with printf: a fleet of 100,000
 * agents formats 10,000 of them a second, and this is most of what the
 * process does.  `at' is formatted once per second and given its
 * milliseconds per pulse.
 */
struct out {
	char	*p, *end;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->p == NULL || (size_t)(o->end - o->p) < n) {
		o->p = NULL;
		return;
	}
	memcpy(o->p, s, n);
	o->p += n;
}

#define PUTS(o, lit)	put(o, lit, sizeof lit - 1)

static void
put_str(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void
put_num(struct out *o, unsigned long long v)
{
	char d[24], *q = d + sizeof d;

	do
		*--q = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	put(o, q, (size_t)(d + sizeof d - q));
}

static void
put_int(struct out *o, long long v)
{
	if (v < 0) {
		PUTS(o, "-");
		put_num(o, 0ULL - (unsigned long long)v);
	} else
		put_num(o, (unsigned long long)v);
}

/* A text kept by set_text (one line, valid UTF-8) as a JSON string. */
static void
put_text(struct out *o, const char *s)
{
	size_t n;

	PUTS(o, "\"");
	while (*s != '\0') {
		n = strcspn(s, "\"\\");
		put(o, s, n);
		if (s[n] == '\0')
			break;
		put(o, s[n] == '"' ? "\\\"" : "\\\\", 2);
		s += n + 1;
	}
	PUTS(o, "\"");
}

/* ,"cost":D, in dollars, the decimal it is (price_text) */
static void
put_dollars(struct out *o, long long nano)
{
	char d[32];

	PUTS(o, ",\"cost\":");
	price_text(nano, 0, d, sizeof d);
	put(o, d, strlen(d));
}

/* ,"key":N */
static void
put_field(struct out *o, const char *key, long long v)
{
	PUTS(o, ",\"");
	put_str(o, key);
	PUTS(o, "\":");
	put_int(o, v);
}

/* clock_utc's time, its Z after the milliseconds */
static void
put_at(struct out *o, const struct timespec *ts)
{
	static time_t last = -1;
	static char sec[32];
	int ms = (int)(ts->tv_nsec / 1000000) % 1000;
	char m[5] = { '.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10),
	    (char)('0' + ms % 10), 'Z' };

	if (ts->tv_sec != last) {
		last = ts->tv_sec;
		clock_utc(last, sec, sizeof sec);
		sec[strcspn(sec, "Z")] = '\0';
	}
	put_str(o, sec);
	put(o, m, sizeof m);
}

/* What a pulse says beyond liveness, breaker, wake and cap. */
static void
put_extra(struct out *o, const struct pulse_state *st)
{
	if (st->brk_until > 0)
		put_field(o, "breaker_until", (long long)st->brk_until);
	if (st->brk_trigger[0] != '\0') {
		PUTS(o, ",\"breaker_trigger\":\"");
		put_str(o, st->brk_trigger);
		PUTS(o, "\"");
	}
	if (st->brk_reason != NULL) {
		PUTS(o, ",\"breaker_reason\":");
		put_text(o, st->brk_reason);
	}
	if (st->last_status[0] != '\0') {
		PUTS(o, ",\"last_wake\":{\"chamber\":\"");
		put_str(o, soul_chamber_name((enum chamber)st->last_chamber));
		PUTS(o, "\",\"status\":\"");
		put_str(o, st->last_status);
		PUTS(o, "\"");
		put_field(o, "ts", (long long)st->last_ts);
		if (st->last_error != NULL) {
			PUTS(o, ",\"error\":");
			put_text(o, st->last_error);
		}
		PUTS(o, "}");
	}
	if (st->answer > 0)
		put_field(o, "answer", (long long)st->answer);
	if (st->quiet)
		PUTS(o, ",\"quiet\":true");
	if (st->due > 0 || st->idle_due > 0)	/* the earlier chamber's */
		put_field(o, "due", (long long)(st->idle_due <= 0 ? st->due :
		    st->due <= 0 || st->idle_due < st->due ? st->idle_due :
		    st->due));
	if (st->overdue)
		PUTS(o, ",\"overdue\":true");
	if (skip_shown(st)) {
		PUTS(o, ",\"skip\":{\"status\":\"");
		put_str(o, status_name((enum wake_status)st->skip));
		PUTS(o, "\"");
		put_field(o, "ts", (long long)st->looked);
		if (st->skip_reason != NULL) {
			PUTS(o, ",\"reason\":");
			put_text(o, st->skip_reason);
		}
		PUTS(o, "}");
	}
}

/*
 * The pulse, one JSON object:
 *   {"v":1,"agent":ID,"seq":N,"mono_ms":N,"at":ISO,"host":H,
 *    "breaker":"closed"|"open"|"half_open"|null,
 *    "waking":false|true|"schedule"|"idle"|null,
 *    "cap":{"used":N,"cap":N,"tokens":N,"resets":T,"cost":D}|null,
 *    "breaker_until":T,"breaker_trigger":"llm"|"tool",
 *    "breaker_reason":TEXT,
 *    "last_wake":{"chamber":C,"status":S,"ts":T,"error":TEXT},
 *    "answer":T,"quiet":true,"due":T,"overdue":true,
 *    "skip":{"status":S,"ts":T,"reason":TEXT}}
 * with T a Unix time in seconds, D dollars (only for an agent with a
 * price: llm.price); the fields after "cap" only when they
 * have something to say (heart-pulse(1)).  host_json is the host name
 * already encoded as a JSON string.  Ids and the words read from state
 * are checked and texts made one line by set_text, so only the texts'
 * quotes and backslashes need escaping.  Returns the length, or -1
 * when buf is too small.
 */
int
pulse_format(char *buf, size_t n, const char *id, unsigned long long seq,
    long long mono_ms, const struct timespec *wall, const char *host_json,
    const struct pulse_state *st)
{
	struct out o = { buf, buf + n };

	PUTS(&o, "{\"v\":1,\"agent\":\"");
	put_str(&o, id);
	PUTS(&o, "\",\"seq\":");
	put_num(&o, seq);
	PUTS(&o, ",\"mono_ms\":");
	put_int(&o, mono_ms);
	PUTS(&o, ",\"at\":\"");
	put_at(&o, wall);
	PUTS(&o, "\",\"host\":");
	put_str(&o, host_json);
	PUTS(&o, ",\"breaker\":");
	if (st->breaker[0] != '\0') {
		PUTS(&o, "\"");
		put_str(&o, st->breaker);
		PUTS(&o, "\"");
	} else
		PUTS(&o, "null");
	PUTS(&o, ",\"waking\":");
	if (st->waking == 1 && st->chamber[0] != '\0') {
		PUTS(&o, "\"");
		put_str(&o, st->chamber);
		PUTS(&o, "\"");
	} else
		put_str(&o, st->waking == 1 ? "true" : st->waking == 0 ?
		    "false" : "null");
	PUTS(&o, ",\"cap\":");
	if (st->cap_used >= 0) {
		PUTS(&o, "{\"used\":");
		put_int(&o, st->cap_used);
		put_field(&o, "cap", st->cap_max);
		put_field(&o, "tokens", st->tokens);
		put_field(&o, "resets", (long long)st->cap_until);
		if (st->cost >= 0)
			put_dollars(&o, st->cost);
		PUTS(&o, "}");
	} else
		PUTS(&o, "null");
	put_extra(&o, st);
	PUTS(&o, "}\0");
	return o.p == NULL ? -1 : (int)(o.p - buf - 1);
}

/*
 * PREFIX/ID/LEAF for an agent; PREFIX/node/NODE/status for a node
 * (id NULL).  The node topics have one level more than any agent's, so
 * the two can never meet, whatever the agent is called.  Put together
 * by hand: every pulse names its topic.
 */
int
pulse_topic(char *buf, size_t n, const char *prefix, const char *id,
    const char *leaf)
{
	struct out o = { buf, buf + n };

	put_str(&o, prefix);
	if (id != NULL) {
		PUTS(&o, "/");
		put_str(&o, id);
		PUTS(&o, "/");
		put_str(&o, leaf);
	} else {
		PUTS(&o, "/node/");
		put_str(&o, leaf);
		PUTS(&o, "/status");
	}
	PUTS(&o, "\0");
	if (o.p == NULL) {
		if (n > 0)
			buf[0] = '\0';
		return -1;
	}
	return (int)(o.p - buf - 1);
}
