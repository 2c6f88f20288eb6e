/*
 * pubagents.c - the publisher's agents: those one heart-pulse process
 * keeps alive, loaded and loaded again from their souls; their
 * schedule, which spreads their pulses across the interval (a binary
 * min-heap of slots on `due'); what is told of them once per connection
 * (births) or once (an agent gone); and the state their pulses carry,
 * kept fresh without reading every agent's files on every pulse:
 * inotify on each agent directory marks what changed (breaker, wake,
 * journal, and the user's last sign where the idle chamber is on: read
 * at once, and queued for an extra pulse when the pulse would say
 * otherwise; the counter: read at the next pulse).  An agent without a
 * watch is read in full at each of its pulses; whether it is overdue
 * is judged at each pulse from what was read.
 *
 * Invariants: `a' is sorted by id; every agent is in the heap exactly
 * once; `seq' only grows, by one for every slot of the schedule (sent
 * or not) and every extra pulse, so a subscriber that sees a gap knows
 * a pulse was lost.  One agent per id, from the first soul that names
 * it (the directory's in name order, then the files given); a soul that
 * does not load leaves its agent as it was; an agent loaded again keeps
 * its slot, its seq and its state; one no soul names any more leaves
 * the schedule and the watches for pubagents_gone.  An agent is in
 * wdmap at its wd, or its wd is -1 and it is polled; it is in the
 * changed queue at most once (queued); a part of its state that cannot
 * be read is told once (warning.c) until it reads again, and its pulses
 * carry null meanwhile.
 */
#include <sys/inotify.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartpulse.h"
#include "heartstore.h"
#include "heartwake.h"

#define BATCH_MS 200	/* slots due this soon are taken with this batch */
#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | \
	IN_MOVED_FROM | IN_ONLYDIR | IN_EXCL_UNLINK)
#define PS_ALL	(PULSE_BREAKER | PULSE_WAKE | PULSE_CAP | PULSE_JOURNAL | \
	PULSE_INPUT)
struct pubagent {
	char	 id[HEART_IDMAX + 1];
	char	 sched_quiet;	/* the schedule outside its active hours */
	char	 idle_quiet;	/* the idle chamber outside its own */
	unsigned char born;	/* birth sent on this connection */
	unsigned char queued;	/* in the changed queue */
	unsigned char keep;	/* reload: still wanted */
	unsigned char rewatch;	/* its directory went away: watch again */
	char	*zone;
	char	*path;		/* the soul file */
	struct caps caps;
	struct hours active[CH_NCHAMBERS];
	long long interval;	/* s */
	long long misses;
	long long every, off;	/* the schedule's slots (slot.c); 0: off */
	long long idle;		/* the idle chamber's after; 0: off */
	unsigned long long seq;
	int	 wd;		/* inotify watch; -1: polled */
	unsigned dirty;		/* PS_* parts to read again */
	unsigned reported;	/* PS_* parts whose failure was told */
	int	 quiet_min;	/* the minute `st.quiet' was found for */
	size_t	 ord;		/* reload: order of its soul */
	struct pulse_state st;
};
/* A place in the schedule, a binary min-heap on due: the due time is
 * the heap's own, so that ordering it reads no agent. */
struct pubagent_slot {
	long long due;		/* monotonic ms of the agent's next pulse */
	struct pubagent *a;
};
struct pubagents {
	struct pubagent **a;	/* sorted by id */
	size_t	 n;
	struct pubagent_slot *heap;
	size_t	 hn;		/* agents in the heap (== n between calls) */
	struct pubagent **wdmap;
	size_t	 nwd;
	int	 ifd;
	int	 watchfull;	/* watch limit reported */
	struct pubagent **gone, **chg;
	size_t	 ngone, nchg;
	struct pubagent *retired;	/* pubagents_gone's last */
	size_t	 cursor;	/* births */
	long long interval;	/* override, s; -1: the souls' */
	time_t	 loaded;	/* when the souls were last read; 0: not
				   yet asked (pulse_slots.from) */
	int	 remote;	/* the state is a server's (HEART_STORE):
				   never read, never due */
};

struct pubagents *
pubagents_new(long long interval, int watch)
{
	struct pubagents *f = xcalloc(1, sizeof *f);

	f->interval = interval;
	f->ifd = -1;
	f->remote = store_server_named(getenv("HEART_STORE"));
	if (watch && !f->remote && (f->ifd = inotify_init1(IN_NONBLOCK |
	    IN_CLOEXEC)) == -1)
		warningf(NULL, "inotify: %s; reading state once per "
		    "interval", strerror(errno));
	return f;
}

static void
pubagent_free(struct pubagent *a)
{
	if (a == NULL)
		return;
	pulse_clear(&a->st);
	free(a->zone);
	free(a->path);
	free(a);
}

void
pubagents_free(struct pubagents *f)
{
	size_t i;

	if (f == NULL)
		return;
	for (i = 0; i < f->n; i++)
		pubagent_free(f->a[i]);
	for (i = 0; i < f->ngone; i++)
		pubagent_free(f->gone[i]);
	pubagent_free(f->retired);
	if (f->ifd >= 0)
		close(f->ifd);
	free(f->a);
	free(f->heap);
	free(f->wdmap);
	free(f->gone);
	free(f->chg);
	free(f);
}

/* --- the schedule: a binary min-heap of slots on `due' --- */

/* Slot s goes up from i, no higher than top, below no later slot. */
static void
rise(struct pubagents *f, size_t i, size_t top, struct pubagent_slot s)
{
	size_t up;

	while (i > top && f->heap[up = (i - 1) / 2].due > s.due) {
		f->heap[i] = f->heap[up];
		i = up;
	}
	f->heap[i] = s;
}

/*
 * Floyd's: the hole at i goes down to a leaf along the earlier child,
 * one comparison a level, and the slot rises from there.  A slot taken
 * at the root comes back an interval later, among the latest, so it
 * rises little: about half the comparisons of a plain sift.
 */
static void
sift_down(struct pubagents *f, size_t i)
{
	struct pubagent_slot s = f->heap[i];
	size_t c, top = i;

	while ((c = 2 * i + 1) < f->hn) {
		if (c + 1 < f->hn && f->heap[c + 1].due < f->heap[c].due)
			c++;
		f->heap[i] = f->heap[c];
		i = c;
	}
	rise(f, i, top, s);
}

/*
 * Only the agents a reload keeps keep their slots, and the heap is
 * made again from what is left: once a reload, no place kept per agent.
 */
static void
pubagents_heap_keep(struct pubagents *f)
{
	size_t i, m = 0;

	for (i = 0; i < f->hn; i++)
		if (f->heap[i].a->keep)
			f->heap[m++] = f->heap[i];
	if (m == f->hn)
		return;
	f->hn = m;
	for (i = m / 2; i-- > 0;)
		sift_down(f, i);
}

/* Move every slot by delta ms (the schedule starts when the broker
   is first reached, so no agent's first slot passes unsent). */
void
pubagents_rebase(struct pubagents *f, long long delta)
{
	size_t i;

	for (i = 0; i < f->hn; i++)
		f->heap[i].due += delta;
}

/*
 * The next agent due, into the cache while this one's pulse is made: on
 * a large fleet, reading it was a cache miss on every pulse.
 */
static void
prefetch(const struct pubagent *a)
{
	const char *p;

	for (p = (const char *)a; p < (const char *)(a + 1); p += 64)
		__builtin_prefetch(p);
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
struct pubagent *
pubagents_due(struct pubagents *f, long long now, long long *lag)
{
	struct pubagent_slot *s = f->heap;
	struct pubagent *a;
	long long iv, k;

	if (f->hn == 0 || s->due > now + BATCH_MS)
		return NULL;
	a = s->a;
	*lag = now - s->due;
	now += BATCH_MS;
	iv = a->interval * 1000;
	a->seq++;
	s->due += iv;
	if (s->due <= now) {
		k = (now - s->due) / iv + 1;
		s->due += k * iv;
		a->seq += (unsigned long long)k;
	}
	sift_down(f, 0);
	prefetch(f->heap[0].a);
	return a;
}

void
pubagent_info(const struct pubagent *a, struct pulse_agentinfo *pa)
{
	pa->id = a->id;
	pa->interval = a->interval;
	pa->misses = a->misses;
}

/* Agents whose schedule or idle chamber is overdue (judge). */
size_t
pubagents_overdue(const struct pubagents *f)
{
	size_t i, n = 0;

	for (i = 0; i < f->n; i++)
		n += f->a[i]->st.overdue != 0;
	return n;
}

/* --- the state their pulses carry --- */

/*
 * Whether a's schedule or idle chamber is overdue (pulse.c's rule) at
 * now: each judged on its own due time and interval, and neither while
 * it is outside its active hours.
 */
static void
judge(struct pubagent *a, time_t now)
{
	a->st.overdue = (char)((!a->sched_quiet && pulse_overdue(a->st.due,
	    a->every, a->st.looked, now)) || (!a->idle_quiet &&
	    pulse_overdue(a->st.idle_due, a->idle, a->st.looked, now)));
}

static void
refresh(struct pubagents *f, struct pubagent *a, unsigned parts, time_t now)
{
	static const unsigned bits[] = {
		PULSE_BREAKER, PULSE_WAKE, PULSE_CAP, PULSE_JOURNAL,
		PULSE_INPUT
	};
	char err[HEART_ERRLEN];
	struct pulse_slots sl;
	size_t i;

	if (f->loaded == 0)
		f->loaded = now;
	if (a->idle <= 0) {	/* the idle chamber is off: nobody asks */
		parts &= ~(unsigned)PULSE_INPUT;
		a->dirty &= ~(unsigned)PULSE_INPUT;
	}
	sl = (struct pulse_slots){ a->every, a->off, f->loaded, a->idle };
	if (f->remote) {	/* a server's state: not ours to read */
		pulse_unknown(&sl, parts, &a->st);
		a->dirty &= ~parts;
		judge(a, now);
		return;
	}
	for (i = 0; i < sizeof bits / sizeof bits[0]; i++) {
		if (!(parts & bits[i]))
			continue;
		if (pulse_read(a->id, a->zone, &a->caps, &sl, now, bits[i],
		    &a->st, err) == 0)
			a->reported &= ~bits[i];
		else if (!(a->reported & bits[i])) {
			a->reported |= bits[i];
			warningf(NULL, "%s: %s (its pulses carry null "
			    "until it is readable)", a->id, err);
		}
	}
	a->dirty &= ~parts;
	judge(a, now);
}

static void
watch(struct pubagents *f, struct pubagent *a, int quiet)
{
	char dir[4096], err[HEART_ERRLEN];
	int wd;

	a->wd = -1;
	if (f->ifd < 0)
		return;
	if (state_agent_dir(a->id, 1, dir, sizeof dir, err) == -1) {
		if (!quiet)
			warningf(NULL, "%s: %s; its state is read once per "
			    "interval", a->id, err);
		return;
	}
	if ((wd = inotify_add_watch(f->ifd, dir, WATCH_MASK)) == -1) {
		if (errno == ENOSPC && f->watchfull++ == 0)
			warningf(NULL, "inotify: no more watches (see "
			    "fs.inotify.max_user_watches); agents from %s on "
			    "are read once per interval", a->id);
		else if (errno != ENOSPC && !quiet)
			warningf(NULL, "%s: inotify: %s; its state is read "
			    "once per interval", dir, strerror(errno));
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
unwatch(struct pubagents *f, struct pubagent *a)
{
	if (a->wd < 0)
		return;
	if ((size_t)a->wd < f->nwd && f->wdmap[a->wd] == a)
		f->wdmap[a->wd] = NULL;
	inotify_rm_watch(f->ifd, a->wd);
	a->wd = -1;
}

static void
queue_changed(struct pubagents *f, struct pubagent *a)
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
on_event(struct pubagents *f, const struct inotify_event *ev, time_t now)
{
	struct pubagent *a;
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
	else if (strcmp(ev->name, "journal.jsonl") == 0)
		part = PULSE_JOURNAL;
	else if (a->idle > 0 && (strcmp(ev->name, "input") == 0 ||
	    strcmp(ev->name, HISTFILE) == 0))
		part = PULSE_INPUT;	/* the user's last sign moved */
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
pubagents_read(struct pubagents *f, time_t now)
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
struct pubagent *
pubagents_changed(struct pubagents *f)
{
	struct pubagent *a;

	if (f->nchg == 0)
		return NULL;
	a = f->chg[--f->nchg];
	a->queued = 0;
	return a;
}

/*
 * The payload of a's pulse, with its state brought up to date.  An
 * extra pulse (a change) takes a sequence number of its own; a
 * scheduled one uses the slot pubagents_due took.  Returns the
 * payload's length, or -1 if buf is too small.
 */
int
pubagents_pulse(struct pubagents *f, struct pubagent *a, int extra,
    const char *host_json, long long mono, const struct timespec *wall,
    char *buf, size_t n)
{
	unsigned parts = a->dirty;

	if (a->wd < 0 && !extra) {
		parts = PS_ALL;
		if (a->rewatch && f->watchfull == 0) {
			a->rewatch = 0;
			watch(f, a, 1);
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
		a->quiet_min = (int)(wall->tv_sec / 60);
		a->st.quiet = pulse_quiet(a->zone, &a->caps, a->active,
		    wall->tv_sec);
		a->sched_quiet = (char)soul_hours_out(&a->active[CH_SCHEDULE],
		    a->zone, wall->tv_sec);
		a->idle_quiet = (char)soul_hours_out(&a->active[CH_IDLE],
		    a->zone, wall->tv_sec);
	}
	judge(a, wall->tv_sec);
	if (extra)
		a->seq++;
	return pulse_format(buf, n, a->id, a->seq, mono, wall, host_json,
	    &a->st);
}

/* --- births: each agent's online status, once per connection --- */

void
pubagents_unborn_all(struct pubagents *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		f->a[i]->born = 0;
	f->cursor = 0;
}

/* Whether some agent still waits for its birth on this connection. */
static int
unborn_pending(struct pubagents *f)
{
	while (f->cursor < f->n && f->a[f->cursor]->born)
		f->cursor++;
	return f->cursor < f->n;
}

/* The next agent whose birth is due on this connection, or NULL. */
struct pubagent *
pubagents_unborn(struct pubagents *f)
{
	if (!unborn_pending(f))
		return NULL;
	f->a[f->cursor]->born = 1;
	return f->a[f->cursor++];
}

/*
 * What to poll for the agents, into *fd: the souls' changes (inotify;
 * fd -1: none); *unborn: whether a birth waits (pubagents_unborn).
 * Returns the monotonic ms of the earliest slot, LLONG_MAX with none.
 */
long long
pubagents_poll(struct pubagents *f, struct pollfd *fd, int *unborn)
{
	*fd = (struct pollfd){ f->ifd, POLLIN, 0 };
	*unborn = unborn_pending(f);
	return f->hn > 0 ? f->heap[0].due : LLONG_MAX;
}

/* An agent a reload removed, its offline due; freed at the next call. */
struct pubagent *
pubagents_gone(struct pubagents *f)
{
	pubagent_free(f->retired);
	f->retired = f->ngone > 0 ? f->gone[--f->ngone] : NULL;
	return f->retired;
}

static int
cmpagent(const void *x, const void *y)
{
	const struct pubagent *a = *(struct pubagent *const *)x;
	const struct pubagent *b = *(struct pubagent *const *)y;
	int c = strcmp(a->id, b->id);

	if (c != 0)
		return c;
	return a->ord < b->ord ? -1 : a->ord > b->ord;
}

static int
cmpid(const void *id, const void *x)
{
	return strcmp(id, (*(struct pubagent *const *)x)->id);
}

static struct pubagent *
from_soul(const struct pubagents *f, const struct soul *s)
{
	struct pubagent *a = xcalloc(1, sizeof *a);
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
	if (!f->remote)	/* the schedule's slots, for when it is due */
		pulse_slots_of(s, &a->every, &a->off);
	/* the idle chamber, where it is on (slot_idle_due) */
	if (!f->remote && cap_limit(&a->caps, CH_IDLE) > 0 &&
	    s->ch[CH_IDLE].every > 0)
		a->idle = s->ch[CH_IDLE].every;
	a->wd = -1;
	a->dirty = PS_ALL;
	a->st.waking = -1;
	a->st.cap_used = a->st.cap_max = -1;
	a->st.skip = -1;
	return a;
}

/* Take over what a reloaded soul says; keep schedule, seq and state. */
static void
update(struct pubagent *old, struct pubagent *new)
{
	char *t;

	if (old->interval != new->interval || old->misses != new->misses)
		old->born = 0;	/* announce the new cadence */
	old->interval = new->interval;
	old->misses = new->misses;
	if (old->every != new->every || old->off != new->off)
		old->dirty |= PULSE_WAKE;	/* its due time again */
	if (old->idle != new->idle)
		old->dirty |= PULSE_WAKE | PULSE_INPUT;
	old->every = new->every;
	old->off = new->off;
	old->idle = new->idle;
	old->caps = new->caps;
	memcpy(old->active, new->active, sizeof old->active);
	old->quiet_min = -1;
	if (strcmp(old->zone, new->zone) != 0)
		old->dirty |= PULSE_CAP;
	t = old->zone, old->zone = new->zone, new->zone = t;
	t = old->path, old->path = new->path, new->path = t;
	old->keep = 1;
	pubagent_free(new);
}

/* Take a out of the watches (the schedule: pubagents_heap_keep); its
   offline is due. */
static void
drop(struct pubagents *f, struct pubagent *a)
{
	size_t i;

	unwatch(f, a);
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
merge(struct pubagents *f, struct pubagent **nv, size_t nn, char **failed,
    size_t nfailed, long long now)
{
	struct pubagent **v, **p, *a;
	size_t i, j, k = 0, m = 0;
	int first = f->n == 0;
	long long due;

	v = xcalloc(f->n + nn, sizeof *v);
	for (i = 0; i < f->n; i++)
		f->a[i]->keep = 0;
	for (i = 0; i < nn; i++) {
		if (f->n > 0 && (p = bsearch(nv[i]->id, f->a, f->n,
		    sizeof *f->a, cmpid)) != NULL)
			update(*p, nv[i]);
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
	pubagents_heap_keep(f);
	f->heap = realloc(f->heap, (m + nn + 1) * sizeof *f->heap);
	if (f->heap == NULL)
		abort();
	for (i = 0; i < nn; i++) {
		a = nv[i];
		for (j = 0; j < f->ngone; j++)	/* back before its goodbye */
			if (strcmp(f->gone[j]->id, a->id) == 0) {
				pubagent_free(f->gone[j]);
				f->gone[j--] = f->gone[--f->ngone];
			}
		if (first)
			due = now + (long long)i * a->interval * 1000 /
			    (long long)nn;
		else
			due = now + (long long)(fnv1a_str(FNV_BASIS, a->id) %
			    (uint64_t)(a->interval * 1000));
		v[m++] = a;
		rise(f, f->hn++, 0, (struct pubagent_slot){ due, a });
		watch(f, a, 0);
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
 * (warning.c), counted (*bad) and skipped; if its agent was loaded
 * before, it is kept as it was.  Agents no soul names any more go to
 * pubagents_gone.
 * Returns the number of agents, or -1 when dir cannot be read.
 */
long long
pubagents_load(struct pubagents *f, char *const *files, size_t nfiles,
    const char *dir, long long now, size_t *bad, char *err)
{
	char **paths = NULL, **failed = NULL, e[HEART_ERRLEN];
	struct pubagent **nv = NULL, *a;
	size_t np = 0, nn = 0, nfailed = 0, i, j;
	struct soul *s;

	*bad = 0;
	if (dir != NULL && soulset_dir(dir, &paths, &np, err) == -1)
		return -1;
	f->loaded = 0;	/* an agent with no wake.json counts from now */
	paths = realloc(paths, (np + nfiles + 1) * sizeof *paths);
	if (paths == NULL)
		abort();
	for (i = 0; i < nfiles; i++)
		paths[np++] = xstrdup(files[i]);
	nv = xcalloc(np, sizeof *nv);
	failed = xcalloc(np, sizeof *failed);
	for (i = 0; i < np; i++) {
		if (soul_load(paths[i], &s, e) == -1) {
			warningf(NULL, "%s", e);
			failed[nfailed++] = paths[i];
			continue;
		}
		for (j = 0; j < s->nwarn; j++)
			warningf(NULL, "warning: %s", s->warn[j]);
		a = from_soul(f, s);
		a->ord = i;
		soul_free(s);
		nv[nn++] = a;
	}
	if (nn > 0)
		qsort(nv, nn, sizeof *nv, cmpagent);
	for (i = 1, j = 1; i < nn; i++) {	/* one soul per agent */
		if (strcmp(nv[i]->id, nv[j - 1]->id) == 0) {
			warningf(NULL, "%s: agent %s is already defined "
			    "by %s; skipped", nv[i]->path, nv[i]->id,
			    nv[j - 1]->path);
			pubagent_free(nv[i]);
		} else
			nv[j++] = nv[i];
	}
	if (nn > 0)
		nn = j;
	merge(f, nv, nn, failed, nfailed, now);
	*bad = nfailed;
	for (i = 0; i < np; i++)
		free(paths[i]);
	free(paths);
	free(failed);
	free(nv);
	return (long long)f->n;
}
