/*
 * fleet.c - the agents one heart-pulse process keeps alive: loaded from
 * souls (and loaded again on demand, agents added and removed), each
 * with its place in a schedule that spreads the fleet's pulses across
 * the interval, and a cache of the state its pulse carries.
 *
 * The cache is kept fresh without reading every agent's files on every
 * pulse: inotify on each agent directory marks what changed (a change
 * of breaker or wake is read at once and queued for an extra pulse; a
 * change of the counter is read at the next pulse); an agent that has
 * no watch is read in full at each of its pulses (the polling
 * fallback).  Invariants: `a' is sorted by id; every agent is in the
 * heap exactly once, at hpos; `seq' only grows, by one for every slot
 * of the schedule (sent or not) and every extra pulse, so a subscriber
 * that sees a gap knows a pulse was lost.
 */
#include <sys/inotify.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"

#define PS_ALL	(PULSE_BREAKER | PULSE_WAKE | PULSE_CAP)
#define BATCH_MS 200	/* slots due this soon are taken with this batch */
#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | \
	IN_MOVED_FROM | IN_ONLYDIR | IN_EXCL_UNLINK)

struct fleet_agent {
	char	 id[HEART_IDMAX + 1];
	char	*zone;
	char	*path;		/* the soul file */
	struct caps caps;
	struct hours active[CH_NCHAMBERS];
	long long quiet_min;	/* the minute `st.quiet' was found for */
	long long interval;	/* seconds */
	long long misses;
	long long due;		/* monotonic ms of the next slot */
	unsigned long long seq;
	size_t	 hpos;
	int	 wd;		/* inotify watch; -1: polled */
	unsigned dirty;		/* PS_* parts to read again */
	unsigned reported;	/* PS_* parts whose failure was told */
	int	 born;		/* birth sent on this connection */
	int	 queued;	/* in the changed queue */
	int	 keep;		/* reload: still wanted */
	int	 rewatch;	/* its directory went away: watch again */
	size_t	 ord;		/* reload: order of its soul */
	struct pulse_state st;
};

struct fleet {
	struct fleet_agent **a;	/* sorted by id */
	size_t	 n;
	struct fleet_agent **heap;
	size_t	 hn;		/* agents in the heap (== n between calls) */
	struct fleet_agent **wdmap;
	size_t	 nwd;
	int	 ifd;
	int	 watchfull;	/* watch limit reported */
	char	**warn;
	size_t	 nwarn, warnhead;
	struct fleet_agent **gone, **chg;
	size_t	 ngone, nchg;
	size_t	 cursor;	/* births */
	long long interval;	/* override, s; -1: the souls' */
};

static void
warnf(struct fleet *f, const char *fmt, ...)
{
	char buf[HEART_ERRLEN + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	f->warn = realloc(f->warn, (f->nwarn + 1) * sizeof *f->warn);
	if (f->warn == NULL)
		abort();
	f->warn[f->nwarn++] = xstrdup(buf);
}

/* The next message for stderr, or NULL; the caller frees it. */
char *
fleet_warning(struct fleet *f)
{
	char *m;

	if (f->warnhead == f->nwarn) {
		free(f->warn);
		f->warn = NULL;
		f->nwarn = f->warnhead = 0;
		return NULL;
	}
	m = f->warn[f->warnhead];
	f->warn[f->warnhead++] = NULL;
	return m;
}

struct fleet *
fleet_new(long long interval, int watch)
{
	struct fleet *f = xcalloc(1, sizeof *f);

	f->interval = interval;
	f->ifd = -1;
	if (watch && (f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		warnf(f, "inotify: %s; reading state once per interval",
		    strerror(errno));
	return f;
}

static void
agent_free(struct fleet_agent *a)
{
	if (a == NULL)
		return;
	pulse_clear(&a->st);
	free(a->zone);
	free(a->path);
	free(a);
}

void
fleet_free(struct fleet *f)
{
	size_t i;

	if (f == NULL)
		return;
	for (i = 0; i < f->n; i++)
		agent_free(f->a[i]);
	for (i = 0; i < f->ngone; i++)
		agent_free(f->gone[i]);
	for (i = f->warnhead; i < f->nwarn; i++)
		free(f->warn[i]);
	if (f->ifd >= 0)
		close(f->ifd);
	free(f->warn);
	free(f->a);
	free(f->heap);
	free(f->wdmap);
	free(f->gone);
	free(f->chg);
	free(f);
}

/* --- the schedule: a binary min-heap on `due' --- */

static void
heap_set(struct fleet *f, size_t i, struct fleet_agent *a)
{
	f->heap[i] = a;
	a->hpos = i;
}

static void
sift_up(struct fleet *f, size_t i)
{
	struct fleet_agent *a = f->heap[i];

	while (i > 0 && f->heap[(i - 1) / 2]->due > a->due) {
		heap_set(f, i, f->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(f, i, a);
}

static void
sift_down(struct fleet *f, size_t i, size_t n)
{
	struct fleet_agent *a = f->heap[i];
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && f->heap[c + 1]->due < f->heap[c]->due)
			c++;
		if (f->heap[c]->due >= a->due)
			break;
		heap_set(f, i, f->heap[c]);
		i = c;
	}
	heap_set(f, i, a);
}

/* Move every slot by delta ms (the schedule starts when the broker
   is first reached, so no agent's first slot passes unsent). */
void
fleet_rebase(struct fleet *f, long long delta)
{
	size_t i;

	for (i = 0; i < f->hn; i++)
		f->heap[i]->due += delta;
}

/* Monotonic ms of the earliest slot; LLONG_MAX with no agent. */
long long
fleet_next_due(const struct fleet *f)
{
	return f->hn > 0 ? f->heap[0]->due : LLONG_MAX;
}

/*
 * The agent whose slot is due at `now', with that slot taken (seq
 * counted, next slot scheduled), or NULL; *lag is how late it is (ms,
 * negative when early).  Slots due within BATCH_MS are taken too, so
 * that a large fleet's pulses are written in batches (one wakeup and
 * one TCP push for many) while staying spread across the interval.
 * Slots that passed while the process could not run are counted and
 * skipped, never sent in a burst.
 */
struct fleet_agent *
fleet_due(struct fleet *f, long long now, long long *lag)
{
	struct fleet_agent *a;
	long long iv, k;

	if (f->hn == 0 || f->heap[0]->due > now + BATCH_MS)
		return NULL;
	a = f->heap[0];
	*lag = now - a->due;
	now += BATCH_MS;
	iv = a->interval * 1000;
	a->seq++;
	a->due += iv;
	if (a->due <= now) {
		k = (now - a->due) / iv + 1;
		a->due += k * iv;
		a->seq += (unsigned long long)k;
	}
	sift_down(f, 0, f->hn);
	return a;
}

/* --- state --- */

static void
refresh(struct fleet *f, struct fleet_agent *a, unsigned parts, time_t now)
{
	static const unsigned bits[] = {
		PULSE_BREAKER, PULSE_WAKE, PULSE_CAP
	};
	char err[HEART_ERRLEN];
	size_t i;

	for (i = 0; i < 3; i++) {
		if (!(parts & bits[i]))
			continue;
		if (pulse_read(a->id, a->zone, &a->caps, now, bits[i], &a->st,
		    err) == 0)
			a->reported &= ~bits[i];
		else if (!(a->reported & bits[i])) {
			a->reported |= bits[i];
			warnf(f, "%s: %s (its pulses carry null until it is "
			    "readable)", a->id, err);
		}
	}
	a->dirty &= ~parts;
}

static void
watch_agent(struct fleet *f, struct fleet_agent *a, int quiet)
{
	char dir[4096], err[HEART_ERRLEN];
	int wd;

	a->wd = -1;
	if (f->ifd < 0)
		return;
	if (state_agent_dir(a->id, 1, dir, sizeof dir, err) == -1) {
		if (!quiet)
			warnf(f, "%s: %s; its state is read once per interval",
		    a->id, err);
		return;
	}
	if ((wd = inotify_add_watch(f->ifd, dir, WATCH_MASK)) == -1) {
		if (errno == ENOSPC && f->watchfull++ == 0)
			warnf(f, "inotify: no more watches (see "
			    "fs.inotify.max_user_watches); agents from %s on "
			    "are read once per interval", a->id);
		else if (errno != ENOSPC && !quiet)
			warnf(f, "%s: inotify: %s; its state is read once "
			    "per interval", dir, strerror(errno));
		return;
	}
	if ((size_t)wd >= f->nwd) {
		size_t n = (size_t)wd * 2 + 16;
		f->wdmap = realloc(f->wdmap, n * sizeof *f->wdmap);
		if (f->wdmap == NULL)
			abort();
		memset(f->wdmap + f->nwd, 0, (n - f->nwd) * sizeof *f->wdmap);
		f->nwd = n;
	}
	f->wdmap[wd] = a;
	a->wd = wd;
}

static void
unwatch_agent(struct fleet *f, struct fleet_agent *a)
{
	if (a->wd < 0)
		return;
	if ((size_t)a->wd < f->nwd && f->wdmap[a->wd] == a)
		f->wdmap[a->wd] = NULL;
	inotify_rm_watch(f->ifd, a->wd);
	a->wd = -1;
}

int
fleet_watch_fd(const struct fleet *f)
{
	return f->ifd;
}

static void
queue_changed(struct fleet *f, struct fleet_agent *a)
{
	if (a->queued)
		return;
	f->chg = realloc(f->chg, (f->nchg + 1) * sizeof *f->chg);
	if (f->chg == NULL)
		abort();
	f->chg[f->nchg++] = a;
	a->queued = 1;
}

static void
on_event(struct fleet *f, const struct inotify_event *ev, time_t now)
{
	struct fleet_agent *a;
	struct pulse_state old;
	unsigned part = 0;

	if (ev->mask & IN_Q_OVERFLOW) {
		for (size_t i = 0; i < f->n; i++)
			f->a[i]->dirty = PS_ALL;
		return;
	}
	if (ev->wd < 0 || (size_t)ev->wd >= f->nwd ||
	    (a = f->wdmap[ev->wd]) == NULL)
		return;
	if (ev->mask & IN_IGNORED) {	/* the directory is gone */
		f->wdmap[ev->wd] = NULL;
		a->wd = -1;
		a->dirty = PS_ALL;
		a->rewatch = 1;
		return;
	}
	if (ev->len == 0)
		return;
	if (strcmp(ev->name, "breaker.json") == 0)
		part = PULSE_BREAKER;
	else if (strcmp(ev->name, "wake.json") == 0)
		part = PULSE_WAKE;
	else if (strcmp(ev->name, "cap.json") == 0)
		a->dirty |= PULSE_CAP;
	if (part == 0)
		return;
	old = a->st;
	refresh(f, a, part, now);
	if (pulse_changed(&old, &a->st))
		queue_changed(f, a);
}

/* Read what inotify has; agents whose drawn state changed are queued. */
void
fleet_watch_read(struct fleet *f, time_t now)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct
	    inotify_event))));
	const struct inotify_event *ev;
	ssize_t n;
	char *p;

	if (f->ifd < 0)
		return;
	while ((n = read(f->ifd, buf, sizeof buf)) > 0)
		for (p = buf; p < buf + n; p += sizeof *ev + ev->len) {
			ev = (const struct inotify_event *)p;
			on_event(f, ev, now);
		}
}

/* The next agent whose breaker or wake changed, for an extra pulse. */
struct fleet_agent *
fleet_changed(struct fleet *f)
{
	struct fleet_agent *a;

	if (f->nchg == 0)
		return NULL;
	a = f->chg[--f->nchg];
	a->queued = 0;
	return a;
}

/*
 * Topic and payload of a's pulse, with its state brought up to date.
 * An extra pulse (a change) takes a sequence number of its own; a
 * scheduled one uses the slot fleet_due took.  Returns the payload's
 * length, or -1 if a buffer is too small.
 */
int
fleet_pulse(struct fleet *f, struct fleet_agent *a, int extra,
    const char *prefix, const char *host_json, long long mono,
    const struct timespec *wall, char *topic, size_t tn, char *buf,
    size_t n)
{
	unsigned parts = a->dirty;

	if (a->wd < 0 && !extra) {
		parts = PS_ALL;
		if (a->rewatch && f->watchfull == 0) {
			a->rewatch = 0;
			watch_agent(f, a, 1);
		}
	}
	if (a->st.waking == 1)
		parts |= PULSE_WAKE;	/* is its process still there? */
	if (wall->tv_sec >= a->st.cap_until)
		parts |= PULSE_CAP;	/* a new day */
	if (a->st.brk_until > 0 && wall->tv_sec >= a->st.brk_until)
		parts |= PULSE_BREAKER;	/* its cooldown has passed */
	if (parts)
		refresh(f, a, parts, wall->tv_sec);
	if (wall->tv_sec / 60 != a->quiet_min) {	/* hours: by the minute */
		a->quiet_min = wall->tv_sec / 60;
		a->st.quiet = pulse_quiet(a->zone, &a->caps, a->active,
		    wall->tv_sec);
	}
	if (extra)
		a->seq++;
	if (pulse_topic(topic, tn, prefix, a->id, "pulse") == -1)
		return -1;
	return pulse_format(buf, n, a->id, a->seq, mono, wall, host_json,
	    &a->st);
}

void
fleet_agent_info(const struct fleet_agent *a, struct pulse_agentinfo *pa)
{
	pa->id = a->id;
	pa->interval = a->interval;
	pa->misses = a->misses;
}

size_t
fleet_size(const struct fleet *f)
{
	return f->n;
}

/* --- births: each agent's online status, once per connection --- */

void
fleet_unborn_all(struct fleet *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		f->a[i]->born = 0;
	f->cursor = 0;
}

struct fleet_agent *
fleet_unborn(struct fleet *f)
{
	while (f->cursor < f->n) {
		struct fleet_agent *a = f->a[f->cursor++];
		if (!a->born) {
			a->born = 1;
			return a;
		}
	}
	return NULL;
}

/* Whether some agent still waits for its birth on this connection. */
int
fleet_unborn_pending(struct fleet *f)
{
	while (f->cursor < f->n && f->a[f->cursor]->born)
		f->cursor++;
	return f->cursor < f->n;
}

/* An agent that a reload removed: its offline is due, then free it. */
struct fleet_agent *
fleet_gone(struct fleet *f)
{
	return f->ngone > 0 ? f->gone[--f->ngone] : NULL;
}

void
fleet_agent_free(struct fleet_agent *a)
{
	agent_free(a);
}

/* --- loading souls --- */

static int
cmpagent(const void *x, const void *y)
{
	const struct fleet_agent *a = *(struct fleet_agent *const *)x;
	const struct fleet_agent *b = *(struct fleet_agent *const *)y;
	int c = strcmp(a->id, b->id);

	if (c != 0)
		return c;
	return a->ord < b->ord ? -1 : a->ord > b->ord;
}

static int
cmpstr(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* A Markdown file is a soul only when it opens with a "---" line: a
 * checklist such as HEARTBEAT.md beside the souls is not one. */
static int
soul_file(const char *dir, const char *name)
{
	const char *dot = strrchr(name, '.');
	char path[4096], head[4];
	size_t n;
	FILE *fp;
	int md;

	if (name[0] == '.' || dot == NULL || (strcmp(dot, ".yaml") != 0 &&
	    strcmp(dot, ".yml") != 0 && strcmp(dot, ".md") != 0))
		return 0;
	if (!(md = strcmp(dot, ".md") == 0))
		return 1;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fp = fopen(path, "r")) == NULL)
		return 1;	/* soul_load will say why */
	n = fread(head, 1, sizeof head, fp);
	md = n >= 3 && memcmp(head, "---", 3) == 0 && (n == 3 ||
	    head[3] == '\n' || head[3] == '\r');
	fclose(fp);
	return md;
}

/*
 * The soul files of dir, sorted: *.yaml, *.yml, and *.md that open
 * with "---"; not a dot file, not a directory.  The one rule of a soul
 * directory (heart-pulse --souls, heart-wake --souls).
 */
int
fleet_souls(const char *dir, char ***out, size_t *no, char *err)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	char **v = NULL;
	size_t n = 0;
	DIR *dp;

	if ((dp = opendir(dir)) == NULL) {
		errf(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(dp)) != NULL) {
		if (!soul_file(dir, de->d_name))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		/* the directory's word for it, when it has one (a
		 * symbolic link is followed) */
		if (de->d_type != DT_REG && ((de->d_type != DT_UNKNOWN &&
		    de->d_type != DT_LNK) || stat(path, &st) == -1 ||
		    !S_ISREG(st.st_mode)))
			continue;
		if ((v = realloc(v, (n + 1) * sizeof *v)) == NULL)
			abort();
		v[n++] = xstrdup(path);
	}
	closedir(dp);
	if (n > 0)
		qsort(v, n, sizeof *v, cmpstr);
	*out = v;
	*no = n;
	return 0;
}

static struct fleet_agent *
find(struct fleet_agent **v, size_t n, const char *id)
{
	size_t lo = 0, hi = n, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if ((c = strcmp(id, v[mid]->id)) == 0)
			return v[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static struct fleet_agent *
from_soul(const struct fleet *f, const struct soul *s)
{
	struct fleet_agent *a = xcalloc(1, sizeof *a);
	int c;

	snprintf(a->id, sizeof a->id, "%s", s->name);
	a->zone = xstrdup(s->timezone);
	a->path = xstrdup(s->path);
	cap_from_soul(s, &a->caps);
	for (c = 0; c < CH_NCHAMBERS; c++)
		a->active[c] = s->ch[c].active;
	a->quiet_min = -1;
	a->interval = f->interval > 0 ? f->interval : s->pulse_interval;
	if (a->interval < 1)
		a->interval = 1;
	a->misses = s->pulse_misses;
	a->wd = -1;
	a->dirty = PS_ALL;
	a->st.waking = -1;
	a->st.cap_used = a->st.cap_max = -1;
	return a;
}

/* Take over what a reloaded soul says; keep schedule, seq and state. */
static void
update(struct fleet_agent *old, struct fleet_agent *new)
{
	char *t;

	if (old->interval != new->interval || old->misses != new->misses)
		old->born = 0;	/* announce the new cadence */
	old->interval = new->interval;
	old->misses = new->misses;
	old->caps = new->caps;
	memcpy(old->active, new->active, sizeof old->active);
	old->quiet_min = -1;
	if (strcmp(old->zone, new->zone) != 0)
		old->dirty |= PULSE_CAP;
	t = old->zone, old->zone = new->zone, new->zone = t;
	t = old->path, old->path = new->path, new->path = t;
	old->keep = 1;
	agent_free(new);
}

/* Take a out of the schedule and the watches; its offline is due. */
static void
drop(struct fleet *f, struct fleet_agent *a)
{
	struct fleet_agent *moved;
	size_t i = a->hpos, last = --f->hn;

	unwatch_agent(f, a);
	if (i != last) {
		moved = f->heap[last];
		heap_set(f, i, moved);
		sift_down(f, i, last);
		sift_up(f, moved->hpos);
	}
	for (i = 0; i < f->nchg; i++)
		if (f->chg[i] == a) {
			f->chg[i] = f->chg[--f->nchg];
			a->queued = 0;
			break;
		}
	f->gone = realloc(f->gone, (f->ngone + 1) * sizeof *f->gone);
	if (f->gone == NULL)
		abort();
	f->gone[f->ngone++] = a;
}

/* Load the agents nv[] (sorted) into f, diffing with what it had. */
static void
merge(struct fleet *f, struct fleet_agent **nv, size_t nn, char **failed,
    size_t nfailed, long long now)
{
	struct fleet_agent **v, *a;
	size_t i, j, k = 0, m = 0;
	int first = f->n == 0;

	v = xcalloc(f->n + nn, sizeof *v);
	for (i = 0; i < f->n; i++)
		f->a[i]->keep = 0;
	for (i = 0; i < nn; i++) {
		if ((a = find(f->a, f->n, nv[i]->id)) != NULL)
			update(a, nv[i]);
		else
			nv[k++] = nv[i];	/* a new agent */
	}
	nn = k;
	for (i = 0; i < f->n; i++) {	/* a broken soul keeps its agent */
		a = f->a[i];
		for (j = 0; !a->keep && j < nfailed; j++)
			if (strcmp(a->path, failed[j]) == 0)
				a->keep = 1;
		if (a->keep)
			v[m++] = a;
		else
			drop(f, a);
	}
	f->heap = realloc(f->heap, (m + nn + 1) * sizeof *f->heap);
	if (f->heap == NULL)
		abort();
	for (i = 0; i < nn; i++) {
		a = nv[i];
		for (j = 0; j < f->ngone; j++)	/* back before its goodbye */
			if (strcmp(f->gone[j]->id, a->id) == 0) {
				agent_free(f->gone[j]);
				f->gone[j--] = f->gone[--f->ngone];
			}
		if (first)
			a->due = now + (long long)i * a->interval * 1000 /
			    (long long)nn;
		else
			a->due = now + (long long)(fnv1a_str(FNV_BASIS, a->id) %
			    (uint64_t)(a->interval * 1000));
		v[m++] = a;
		heap_set(f, f->hn++, a);
		sift_up(f, a->hpos);
		watch_agent(f, a, 0);
	}
	qsort(v, m, sizeof *v, cmpagent);
	free(f->a);
	f->a = v;
	f->n = m;
	f->cursor = 0;
}

/*
 * Load (or load again) the souls named by files[] and those found in
 * dir (either may be empty).  A soul that does not load is reported
 * (fleet_warning) and skipped; if its agent was loaded before, it is
 * kept as it was.  Agents no soul names any more go to fleet_gone.
 * Returns the number of agents, or -1 when dir cannot be read.
 */
long long
fleet_load(struct fleet *f, char *const *files, size_t nfiles,
    const char *dir, long long now, char *err)
{
	char **paths = NULL, **failed = NULL, e[HEART_ERRLEN];
	struct fleet_agent **nv = NULL, *a;
	size_t np = 0, nn = 0, nfailed = 0, i, j;
	struct soul *s;

	if (dir != NULL && fleet_souls(dir, &paths, &np, err) == -1)
		return -1;
	paths = realloc(paths, (np + nfiles + 1) * sizeof *paths);
	if (paths == NULL)
		abort();
	for (i = 0; i < nfiles; i++)
		paths[np++] = xstrdup(files[i]);
	nv = xcalloc(np, sizeof *nv);
	failed = xcalloc(np, sizeof *failed);
	for (i = 0; i < np; i++) {
		if (soul_load(paths[i], &s, e) == -1) {
			warnf(f, "%s", e);
			failed[nfailed++] = paths[i];
			continue;
		}
		for (j = 0; j < s->nwarn; j++)
			warnf(f, "warning: %s", s->warn[j]);
		a = from_soul(f, s);
		a->ord = i;
		soul_free(s);
		nv[nn++] = a;
	}
	if (nn > 0)
		qsort(nv, nn, sizeof *nv, cmpagent);
	for (i = 1, j = 1; i < nn; i++) {	/* one soul per agent */
		if (strcmp(nv[i]->id, nv[j - 1]->id) == 0) {
			warnf(f, "%s: agent %s is already defined by %s; "
			    "skipped", nv[i]->path, nv[i]->id,
			    nv[j - 1]->path);
			agent_free(nv[i]);
		} else
			nv[j++] = nv[i];
	}
	if (nn > 0)
		nn = j;
	merge(f, nv, nn, failed, nfailed, now);
	for (i = 0; i < np; i++)
		free(paths[i]);
	free(paths);
	free(failed);
	free(nv);
	return (long long)f->n;
}
