/*
 * pubagents.c - the publisher's agents: those one heart-pulse process
 * keeps alive, each with its place in a schedule that spreads their
 * pulses across the interval (a binary min-heap of slots on `due'),
 * and what is told of them once per connection (births) or once (an
 * agent gone), loaded and loaded again from their souls: agents added,
 * changed and removed.  The state their pulses carry is kept fresh by
 * pubstate.c.
 *
 * Invariants: `a' is sorted by id; every agent is in the heap exactly
 * once; `seq' only grows, by one for every slot of the
 * schedule (sent or not) and every extra pulse, so a subscriber that
 * sees a gap knows a pulse was lost.  One agent per id, from the first
 * soul that names it (the directory's in name order, then the files
 * given); a soul that does not load leaves its agent as it was; an
 * agent loaded again keeps its slot, its seq and its state; an agent
 * no soul names any more leaves the schedule and the watches and goes
 * to pubagents_gone.
 */
#include <sys/inotify.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartpulse.h"
#include "heartstore.h"

/* A place in the schedule, a binary min-heap on due: the due time is
 * the heap's own, so that ordering it reads no agent. */
struct pubagent_slot {
	long long due;		/* monotonic ms of the agent's next pulse */
	struct pubagent *a;
};

#define BATCH_MS 200	/* slots due this soon are taken with this batch */

struct pubagents *
pubagents_new(long long interval, int watch)
{
	struct pubagents *f = xcalloc(1, sizeof *f);

	f->interval = interval;
	f->ifd = -1;
	f->remote = store_server_named(getenv("HEART_STORE"));
	if (watch && !f->remote && (f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		pubagents_warnf(f, "inotify: %s; reading state once per "
		    "interval", strerror(errno));
	return f;
}

static void
agent_free(struct pubagent *a)
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

/* a's first slot, at due; the caller made room in the heap. */
static void
pubagents_heap_add(struct pubagents *f, struct pubagent *a, long long due)
{
	rise(f, f->hn++, 0, (struct pubagent_slot){ due, a });
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

/* Monotonic ms of the earliest slot; LLONG_MAX with no agent. */
long long
pubagents_next_due(const struct pubagents *f)
{
	return f->hn > 0 ? f->heap[0].due : LLONG_MAX;
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

size_t
pubagents_size(const struct pubagents *f)
{
	return f->n;
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

struct pubagent *
pubagents_unborn(struct pubagents *f)
{
	while (f->cursor < f->n) {
		struct pubagent *a = f->a[f->cursor++];
		if (!a->born) {
			a->born = 1;
			return a;
		}
	}
	return NULL;
}

/* Whether some agent still waits for its birth on this connection. */
int
pubagents_unborn_pending(struct pubagents *f)
{
	while (f->cursor < f->n && f->a[f->cursor]->born)
		f->cursor++;
	return f->cursor < f->n;
}

/* An agent that a reload removed: its offline is due, then free it. */
struct pubagent *
pubagents_gone(struct pubagents *f)
{
	return f->ngone > 0 ? f->gone[--f->ngone] : NULL;
}

void
pubagent_free(struct pubagent *a)
{
	agent_free(a);
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

static struct pubagent *
find(struct pubagent **v, size_t n, const char *id)
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

	pubstate_stop(f, a);
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
	struct pubagent **v, *a;
	size_t i, j, k = 0, m = 0;
	int first = f->n == 0;
	long long due;

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
		pubagents_heap_add(f, a, due);
		pubstate_start(f, a, 0);
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
 * (pubagents_warning), counted (f->nbad) and skipped; if its agent was
 * loaded before, it is kept as it was.  Agents no soul names any more
 * go to pubagents_gone.
 * Returns the number of agents, or -1 when dir cannot be read.
 */
long long
pubagents_load(struct pubagents *f, char *const *files, size_t nfiles,
    const char *dir, long long now, char *err)
{
	char **paths = NULL, **failed = NULL, e[HEART_ERRLEN];
	struct pubagent **nv = NULL, *a;
	size_t np = 0, nn = 0, nfailed = 0, i, j;
	struct soul *s;

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
			pubagents_warnf(f, "%s", e);
			failed[nfailed++] = paths[i];
			continue;
		}
		for (j = 0; j < s->nwarn; j++)
			pubagents_warnf(f, "warning: %s", s->warn[j]);
		a = from_soul(f, s);
		a->ord = i;
		soul_free(s);
		nv[nn++] = a;
	}
	if (nn > 0)
		qsort(nv, nn, sizeof *nv, cmpagent);
	for (i = 1, j = 1; i < nn; i++) {	/* one soul per agent */
		if (strcmp(nv[i]->id, nv[j - 1]->id) == 0) {
			pubagents_warnf(f, "%s: agent %s is already defined "
			    "by %s; skipped", nv[i]->path, nv[i]->id,
			    nv[j - 1]->path);
			pubagent_free(nv[i]);
		} else
			nv[j++] = nv[i];
	}
	if (nn > 0)
		nn = j;
	merge(f, nv, nn, failed, nfailed, now);
	f->nbad = nfailed;
	for (i = 0; i < np; i++)
		free(paths[i]);
	free(paths);
	free(failed);
	free(nv);
	return (long long)f->n;
}
