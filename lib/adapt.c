/*
 * adapt.c - the adaptive schedule (schedule.adaptive): an activity
 * estimator over a moving window, and the interval it puts in force.
 *
 * agents/ID/activity.json keeps, for every local hour of the window,
 * how many of the schedule chamber's answers spoke for it, real ones
 * and ghosts (by idle level): an answer speaks for the hour it came in
 * and, when the stretch since the previous wake was longer than min,
 * for every hour that stretch overlapped (work reported after a long
 * quiet stretch may have come in any of them).  Also the ghosts in a
 * row since the last real answer, and when the last wake was.  The
 * interval in force at a time t comes from the figures of t's hour of
 * the week, of the same hour on the other days, and the ghosts in a
 * row; it is a function of those figures, the soul and t only: no
 * clock, no randomness, so --explain can say exactly why (heart-soul(5)
 * gives the rule).  Intervals are rungs of a ladder (schedule.interval
 * doubled or halved, min, max) whose slots, shifted by the agent's
 * phase, nest in one another, so that a fleet still spreads; a wake is
 * never carried past the start of an hour expected to be busy.  The
 * ladder, the phase and the slots are slot.c's.
 *
 * Invariant: activity.json is only replaced whole (state_write) by the
 * holder of the agent's wake.lock; a file that does not parse is
 * reported and left as it is, never reset.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

enum { ADAPT_BUSY_HERE = 1, ADAPT_BUSY_ELSEWHERE };	/* adapt_fig's busy */

#define ACTFILE		"activity.json"
#define RUN_STEP	0.25	/* doublings per ghost in a row */
#define OTHER_DAYS	6.0	/* the other days' ghosts count 1/6 */
#define UNSEEN_MAX	1.0	/* doublings of an hour never seen */

struct hour {
	time_t	 ts;		/* when the local hour began */
	long long ok;
	long long g[4];		/* ghosts: plain, LOW, MEDIUM, HIGH */
	int	 how;		/* its hour of the week in `zone' */
};

struct adapt {
	struct hour *b;	/* sorted by ts */
	size_t	 n;
	long long run;		/* ghosts in a row */
	double	 runw;		/* their weight */
	time_t	 last_ok;
	time_t	 last;		/* the last wake recorded */
	char	 zone[128];	/* the zone of the cached `how's */
};

struct adapt_fig {
	int	 how;		/* hour of the week, 0: Monday 00:00 */
	time_t	 hour;		/* when that hour began */
	long long real;		/* real answers in it over the window */
	long long ghosts[4];	/* ghosts: plain, LOW, MEDIUM, HIGH */
	double	 gweight;	/* the ghosts, weighted */
	long long dreal;	/* the same, for the same hour of the day */
	double	 dgweight;	/* on the other days of the week */
	long long run;		/* ghosts in a row since the last real one */
	double	 runweight;
	int	 busy;		/* ADAPT_BUSY_HERE, _ELSEWHERE, or 0 */
	int	 unseen;	/* not seen in an earlier week */
	int	 turned;	/* answers at this hour on another day since */
	double	 evidence;	/* else the doublings the ghosts allow */
	double	 exponent;	/* interval = schedule.interval * 2^exponent */
	long long interval;	/* the rung in force */
};

static const char *levels[] = { "idle", "low", "medium", "high" };
static const char *days[] = { "Mon", "Tue", "Wed", "Thu", "Fri", "Sat",
    "Sun" };

/* The hour of the week (0: Monday 00:00) of t, and when it began. */
static int
hour_of(const char *zone, time_t t, time_t *start)
{
	struct tm tm;

	clock_tz_use(zone);
	localtime_r(&t, &tm);
	if (start != NULL)
		*start = t - tm.tm_min * 60 - tm.tm_sec;
	return ((tm.tm_wday + 6) % 7) * 24 + tm.tm_hour;
}

static void
cache_hours(struct adapt *a, const char *zone)
{
	size_t i;

	if (strcmp(a->zone, zone) == 0)
		return;
	for (i = 0; i < a->n; i++)
		a->b[i].how = hour_of(zone, a->b[i].ts, NULL);
	snprintf(a->zone, sizeof a->zone, "%s", zone);
}

void
adapt_free(struct adapt *a)
{
	if (a == NULL)
		return;
	free(a->b);
	free(a);
}

/* One item of "hours"; returns the name of the bad field, or NULL. */
static const char *
load_bucket(json_t *h, struct hour *b)
{
	json_t *ts = json_object_get(h, "ts");
	int i;

	if (!json_is_object(h))
		return "";
	if (!json_is_integer(ts) || json_integer_value(ts) <= 0)
		return ".ts";
	b->ts = (time_t)json_integer_value(ts);
	if (state_count(h, "ok", &b->ok) == -1)
		return ".ok";
	for (i = 0; i < 4; i++)
		if (state_count(h, levels[i], &b->g[i]) == -1)
			return i == 0 ? ".idle" : i == 1 ? ".low" :
			    i == 2 ? ".medium" : ".high";
	return NULL;
}

static int
by_ts(const void *x, const void *y)
{
	const struct hour *a = x, *b = y;

	return (a->ts > b->ts) - (a->ts < b->ts);
}

/* Check and read the document; 0, or -1 with what is wrong in `what'. */
static int
from_json(json_t *j, struct adapt *a, char *what, size_t n)
{
	json_t *hours = json_object_get(j, "hours"), *run, *h, *w;
	const char *bad;
	size_t i;

	if (!json_is_integer(json_object_get(j, "v")) ||
	    json_integer_value(json_object_get(j, "v")) != 1)
		return snprintf(what, n, "v: must be 1"), -1;
	if (!json_is_array(hours))
		return snprintf(what, n, "hours: must be a list"), -1;
	run = json_object_get(j, "run");
	w = json_object_get(run, "weight");
	if (!json_is_object(run) || state_count(run, "ghosts", &a->run) == -1 ||
	    !json_is_number(w) || json_number_value(w) < 0)
		return snprintf(what, n, "run: must hold ghosts (a whole "
		    "number) and weight (a number), both >= 0"), -1;
	a->runw = json_number_value(w);
	h = json_object_get(j, "last_ok_ts");
	if (h != NULL && !json_is_null(h) && !json_is_integer(h))
		return snprintf(what, n, "last_ok_ts: must be a whole "
		    "number or null"), -1;
	a->last_ok = json_is_integer(h) ? (time_t)json_integer_value(h) :
	    0;
	h = json_object_get(j, "last_wake_ts");
	if (h != NULL && !json_is_null(h) && !json_is_integer(h))
		return snprintf(what, n, "last_wake_ts: must be a whole "
		    "number or null"), -1;
	a->last = json_is_integer(h) ? (time_t)json_integer_value(h) : 0;
	a->n = json_array_size(hours);
	a->b = xcalloc(a->n + 1, sizeof *a->b);
	json_array_foreach(hours, i, h)
		if ((bad = load_bucket(h, &a->b[i])) != NULL)
			return snprintf(what, n, "hours[%zu]%s: %s", i, bad,
			    *bad ? "must be a whole number >= 0" :
			    "must be a mapping"), -1;
	qsort(a->b, a->n, sizeof *a->b, by_ts);
	return 0;
}

/*
 * Read agents/ID/activity.json in dir: *out = NULL when there is none
 * (an agent with no history).  0, or -1 with err.
 */
int
adapt_load(const char *dir, struct adapt **out, char *err)
{
	struct adapt *a;
	char what[200];
	json_t *j;

	*out = NULL;
	if (state_read_json(dir, ACTFILE, &j, err) == -1)
		return -1;
	if (j == NULL)
		return 0;
	a = xcalloc(1, sizeof *a);
	if (from_json(j, a, what, sizeof what) == -1) {
		errf(err, "%s/%s: %s; fix or remove it by hand", dir,
		    ACTFILE, what);
		json_decref(j);
		adapt_free(a);
		return -1;
	}
	json_decref(j);
	*out = a;
	return 0;
}

static double
weighted(const struct adapt_conf *c, const long long g[4])
{
	return (double)g[0] + c->weight[0] * (double)g[1] +
	    c->weight[1] * (double)g[2] + c->weight[2] * (double)g[3];
}

/*
 * Add the hours of the window up to t to f: its own hour of the week,
 * and the same hour of the day on the other days.  Whether f's hour was
 * seen in an earlier week (before its hour began), and whether real
 * answers came at that hour on another day that had been quiet at it
 * before, after f's hour was last seen: the hour of the day has turned
 * busy since.
 */
static void
gather(const struct soul *s, struct adapt *a, time_t t, struct adapt_fig *f)
{
	time_t from = t - (time_t)s->adapt.window * 86400;
	time_t seen = 0, turned = 0;
	long long dg[4] = { 0, 0, 0, 0 };
	int quiet[7] = { 0, 0, 0, 0, 0, 0, 0 }, d, k;
	const struct hour *b;
	size_t i;

	cache_hours(a, s->timezone);
	for (i = 0; i < a->n; i++) {
		b = &a->b[i];
		if (b->ts <= from || b->ts > t || b->how % 24 != f->how % 24)
			continue;
		if (b->how == f->how) {
			f->real += b->ok;
			for (k = 0; k < 4; k++)
				f->ghosts[k] += b->g[k];
			if (b->ts < f->hour)
				seen = b->ts;
			continue;
		}
		f->dreal += b->ok;
		for (k = 0; k < 4; k++)
			dg[k] += b->g[k];
		d = b->how / 24;
		if (b->ok == 0)
			quiet[d] = 1;
		else if (quiet[d])
			turned = b->ts;
	}
	f->dgweight = weighted(&s->adapt, dg);
	f->unseen = seen == 0;
	f->turned = turned > seen;
	f->run = a->run;
	f->runweight = a->runw;
}

/*
 * The figures of the hour of t, and the interval they put in force;
 * the rule is heart-soul(5)'s.  An hour is busy (min) when real
 * answers came in it, or came at that hour on other days since it was
 * last seen; else
 * its ghosts, the other days' and those in a row allow it so many
 * doublings, at most one until it has been seen in an earlier week.
 */
static long long
figures(const struct soul *s, struct adapt *a, time_t t, struct adapt_fig *f)
{
	const struct adapt_conf *c = &s->adapt;
	long long base = s->ch[CH_SCHEDULE].every;

	memset(f, 0, sizeof *f);
	f->how = hour_of(s->timezone, t, &f->hour);
	f->unseen = 1;
	if (a != NULL)
		gather(s, a, t, f);
	f->gweight = weighted(c, f->ghosts);
	if (f->real > 0)
		f->busy = ADAPT_BUSY_HERE;
	else if (f->dreal > 0 && (f->unseen || f->turned))
		f->busy = ADAPT_BUSY_ELSEWHERE;
	if (f->busy)
		f->exponent = log2((double)c->min / base);
	else {
		f->evidence = f->gweight + f->dgweight / OTHER_DAYS +
		    f->runweight * RUN_STEP;
		if (f->unseen && f->evidence > UNSEEN_MAX)
			f->evidence = UNSEEN_MAX;
		f->exponent = fmin(log2((double)c->max / base), f->evidence);
	}
	f->interval = slot_rung(base, c->min, c->max, f->exponent);
	return f->interval;
}

/*
 * When the schedule chamber is next due, given its last wake (0 for
 * none: then first, when heart first saw the agent).  Hour by hour from
 * now: the first slot of the hour's interval that is at least min
 * after the last wake and not before the hour began; but when an hour
 * ahead is expected to be busy (its interval is min), the last slot of
 * min at or before that hour begins, if it is at least min after the
 * last wake; never later than max after the last wake.
 */
time_t
adapt_next(const struct soul *s, struct adapt *a, time_t last,
    time_t first, time_t now)
{
	struct adapt_fig f;
	time_t since = last ? last : first, hs, from, c;
	long long gap = last ? s->adapt.min : 1, iv, i, n;

	hour_of(s->timezone, now, &hs);
	n = s->adapt.max / 3600 + 3;
	for (i = 0; i < n; i++, hs += 3600) {
		iv = figures(s, a, i == 0 ? now : hs, &f);
		if (i > 0 && iv == s->adapt.min) {
			c = slot_before(hs, iv, slot_rung_offset(s, iv));
			if (c >= since + gap)
				return c;
		}
		from = since + gap > hs ? since + gap : hs;
		c = slot_from(from, iv, slot_rung_offset(s, iv));
		if (c < hs + 3600 && c < since + s->adapt.max)
			return c;
		if (hs + 3600 >= since + s->adapt.max)
			break;
	}
	return since + s->adapt.max;
}

static int
level_index(const char *level)
{
	int i;

	if (level == NULL)
		return 0;
	for (i = 1; i < 4; i++)
		if (strcasecmp(level, levels[i]) == 0)
			return i;
	return 0;
}

/* The bucket of the hour that began at hs, made if need be. */
static struct hour *
bucket_at(struct adapt *a, time_t hs, const char *zone)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->b[i].ts >= hs)
			break;
	if (i < a->n && a->b[i].ts == hs)
		return &a->b[i];
	a->b = realloc(a->b, (a->n + 1) * sizeof *a->b);
	if (a->b == NULL)
		abort();
	memmove(&a->b[i + 1], &a->b[i], (a->n - i) * sizeof *a->b);
	a->n++;
	memset(&a->b[i], 0, sizeof a->b[i]);
	a->b[i].ts = hs;
	a->b[i].how = hour_of(zone, hs, NULL);
	return &a->b[i];
}

/* Count one answer in b: a real one (k -1) or a ghost of level k. */
static void
count_in(struct hour *b, int k)
{
	if (k == -1)
		b->ok++;
	else
		b->g[k]++;
}

/* When the local hour after the one that began at h begins. */
static time_t
next_hour(const char *zone, time_t h)
{
	time_t n;

	hour_of(zone, h + 3600, &n);
	return n > h ? n : h + 3600;
}

/* Forget the hours that began window days ago or earlier. */
static void
prune(struct adapt *a, time_t now, long long window)
{
	time_t from = now - (time_t)window * 86400;
	size_t i = 0;

	while (i < a->n && a->b[i].ts <= from)
		i++;
	memmove(a->b, a->b + i, (a->n - i) * sizeof *a->b);
	a->n -= i;
}

/* key and key_ts: when t was, or null */
static void
set_when(json_t *j, const char *key, time_t t)
{
	char iso[40], k[40];

	snprintf(k, sizeof k, "%s_ts", key);
	if (t)
		clock_utc(t, iso, sizeof iso);
	json_object_set_new(j, key, t ? json_string(iso) : json_null());
	json_object_set_new(j, k, t ? json_integer(t) : json_null());
}

static json_t *
to_json(const struct soul *s, const struct adapt *a)
{
	json_t *hours = json_array(), *h, *j;
	char iso[40];
	size_t i;
	int k;

	for (i = 0; i < a->n; i++) {
		clock_utc(a->b[i].ts, iso, sizeof iso);
		h = json_pack("{s:s,s:I,s:I}", "hour", iso, "ts",
		    (json_int_t)a->b[i].ts, "ok", (json_int_t)a->b[i].ok);
		for (k = 0; k < 4; k++)
			json_object_set_new(h, levels[k],
			    json_integer(a->b[i].g[k]));
		json_array_append_new(hours, h);
	}
	j = json_pack("{s:i,s:s,s:{s:I,s:f}}", "v", 1, "agent", s->name,
	    "run", "ghosts", (json_int_t)a->run, "weight", a->runw);
	set_when(j, "last_ok", a->last_ok);
	set_when(j, "last_wake", a->last);
	json_object_set_new(j, "hours", hours);
	return j;
}

/*
 * Add the outcome of one schedule wake at now and write the file: to
 * its hour, and when the stretch since the last wake recorded was
 * longer than min (and not longer than max: heart was held, not
 * scheduled, then), to every hour that stretch overlapped.  Statuses
 * other than ok and idle teach nothing and are ignored.
 */
int
adapt_record(const char *dir, const struct soul *s, struct adapt **ap,
    const char *status, const char *level, time_t now, char *err)
{
	struct adapt *a;
	time_t hs, h;
	json_t *j;
	int k, r;

	if (!s->adapt.on || status == NULL || (strcmp(status, "ok") != 0 &&
	    strcmp(status, "idle") != 0))
		return 0;
	if (*ap == NULL)
		*ap = xcalloc(1, sizeof **ap);
	a = *ap;
	cache_hours(a, s->timezone);
	k = strcmp(status, "ok") == 0 ? -1 : level_index(level);
	hour_of(s->timezone, now, &hs);
	count_in(bucket_at(a, hs, s->timezone), k);
	if (a->last > 0 && now - a->last > s->adapt.min &&
	    now - a->last <= s->adapt.max)
		for (hour_of(s->timezone, a->last, &h); h < hs;
		    h = next_hour(s->timezone, h))
			count_in(bucket_at(a, h, s->timezone), k);
	if (k == -1) {
		a->run = 0;
		a->runw = 0;
		a->last_ok = now;
	} else {
		a->run++;
		a->runw += k == 0 ? 1 : s->adapt.weight[k - 1];
	}
	a->last = now;
	prune(a, now, s->adapt.window);
	j = to_json(s, a);
	r = state_write_json(dir, ACTFILE, j, err);
	json_decref(j);
	return r;
}

static double
round3(double x)
{
	return round(x * 1000) / 1000 + 0.0;	/* no -0 */
}

/* Why the hour is busy, or the sum of its evidence, for fig_json. */
static void
rule_text(const struct adapt_fig *f, char *buf, size_t n)
{
	if (f->busy == ADAPT_BUSY_HERE)
		snprintf(buf, n, "busy: real answers came in it");
	else if (f->busy && f->unseen)
		snprintf(buf, n, "busy: real answers came at this hour on "
		    "other days, and it was not seen in an earlier week");
	else if (f->busy)
		snprintf(buf, n, "busy: this hour turned busy on another day "
		    "since it was last seen");
	else
		snprintf(buf, n, "quiet: %.2f + %.2f/6 + %.2f/4 = %.2f "
		    "doublings%s", f->gweight, f->dgweight, f->runweight,
		    f->evidence, f->unseen ? " (at most 1: not seen in an "
		    "earlier week)" : "");
}

/* The figures as JSON, with a sentence that says why. */
static json_t *
fig_json(const struct soul *s, const struct adapt_fig *f)
{
	const struct adapt_conf *c = &s->adapt;
	char why[700], rule[160], iv[32], base[32], lo[32], hi[32];
	long long ng = f->ghosts[0] + f->ghosts[1] + f->ghosts[2] +
	    f->ghosts[3];

	dur_format(f->interval, iv, sizeof iv);
	dur_format(s->ch[CH_SCHEDULE].every, base, sizeof base);
	dur_format(c->min, lo, sizeof lo);
	dur_format(c->max, hi, sizeof hi);
	rule_text(f, rule, sizeof rule);
	snprintf(why, sizeof why, "%s %02d-%02dh: %lld real, %lld ghosts "
	    "(%.2f weighted) in %lld days; same hour other days: %lld real, "
	    "%.2f ghosts; %lld ghosts in a row (%.2f); %s; %s x 2^%.2f: "
	    "every %s (min %s, max %s)", days[f->how / 24 % 7],
	    f->how % 24, f->how % 24 + 1, f->real, ng, f->gweight, c->window,
	    f->dreal, f->dgweight, f->run, f->runweight, rule, base,
	    round3(f->exponent), iv, lo, hi);
	return json_pack("{s:i,s:s,s:I,s:I,s:{s:I,s:I,s:I,s:I},s:f,"
	    "s:{s:I,s:f},s:I,s:f,s:s,s:b,s:f,s:f,s:I,s:I,s:I,s:I,s:s}",
	    "hour_of_week", f->how, "day", days[f->how / 24 % 7], "window",
	    (json_int_t)c->window, "real", (json_int_t)f->real, "ghosts",
	    levels[0], (json_int_t)f->ghosts[0], levels[1],
	    (json_int_t)f->ghosts[1], levels[2], (json_int_t)f->ghosts[2],
	    levels[3], (json_int_t)f->ghosts[3], "ghosts_weighted",
	    round3(f->gweight), "other_days", "real", (json_int_t)f->dreal,
	    "ghosts_weighted", round3(f->dgweight), "in_a_row",
	    (json_int_t)f->run, "in_a_row_weighted", round3(f->runweight),
	    "busy", f->busy == ADAPT_BUSY_HERE ? "here" :
	    f->busy ? "elsewhere" : "no", "seen_before", !f->unseen, "evidence", round3(f->evidence),
	    "exponent", round3(f->exponent), "base", (json_int_t)
	    s->ch[CH_SCHEDULE].every, "min", (json_int_t)c->min, "max",
	    (json_int_t)c->max, "interval", (json_int_t)f->interval, "why",
	    why);
}

/* The interval in force at t (the rule above figures'); *why, when why
 * is not NULL, gets the figures that chose it (fig_json's). */
long long
adapt_interval(const struct soul *s, struct adapt *a, time_t t,
    json_t **why)
{
	struct adapt_fig f;

	figures(s, a, t, &f);
	if (why != NULL)
		*why = fig_json(s, &f);
	return f.interval;
}
