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
 * once, at hpos; `seq' only grows, by one for every slot of the
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartpulse.h"

#define BATCH_MS 200	/* slots due this soon are taken with this batch */

void
pubagents_warnf(struct pubagents *f, const char *fmt, ...)
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
pubagents_warning(struct pubagents *f)
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

struct pubagents *
pubagents_new(long long interval, int watch)
{
	struct pubagents *f = xcalloc(1, sizeof *f);

	f->interval = interval;
	f->ifd = -1;
	if (watch && (f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
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

/* --- the schedule: a binary min-heap on `due' --- */

static void
pubagents_heap_set(struct pubagents *f, size_t i, struct pubagent *a)
{
	f->heap[i] = a;
	a->hpos = i;
}

static void
pubagents_sift_up(struct pubagents *f, size_t i)
{
	struct pubagent *a = f->heap[i];

	while (i > 0 && f->heap[(i - 1) / 2]->due > a->due) {
		pubagents_heap_set(f, i, f->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	pubagents_heap_set(f, i, a);
}

static void
pubagents_sift_down(struct pubagents *f, size_t i, size_t n)
{
	struct pubagent *a = f->heap[i];
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && f->heap[c + 1]->due < f->heap[c]->due)
			c++;
		if (f->heap[c]->due >= a->due)
			break;
		pubagents_heap_set(f, i, f->heap[c]);
		i = c;
	}
	pubagents_heap_set(f, i, a);
}

/* Move every slot by delta ms (the schedule starts when the broker
   is first reached, so no agent's first slot passes unsent). */
void
pubagents_rebase(struct pubagents *f, long long delta)
{
	size_t i;

	for (i = 0; i < f->hn; i++)
		f->heap[i]->due += delta;
}

/* Monotonic ms of the earliest slot; LLONG_MAX with no agent. */
long long
pubagents_next_due(const struct pubagents *f)
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
struct pubagent *
pubagents_due(struct pubagents *f, long long now, long long *lag)
{
	struct pubagent *a;
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
	pubagents_sift_down(f, 0, f->hn);
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
	a->wd = -1;
	a->dirty = PS_ALL;
	a->st.waking = -1;
	a->st.cap_used = a->st.cap_max = -1;
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

/* Take a out of the schedule and the watches; its offline is due. */
static void
drop(struct pubagents *f, struct pubagent *a)
{
	struct pubagent *moved;
	size_t i = a->hpos, last = --f->hn;

	pubstate_stop(f, a);
	if (i != last) {
		moved = f->heap[last];
		pubagents_heap_set(f, i, moved);
		pubagents_sift_down(f, i, last);
		pubagents_sift_up(f, moved->hpos);
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
merge(struct pubagents *f, struct pubagent **nv, size_t nn, char **failed,
    size_t nfailed, long long now)
{
	struct pubagent **v, *a;
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
				pubagent_free(f->gone[j]);
				f->gone[j--] = f->gone[--f->ngone];
			}
		if (first)
			a->due = now + (long long)i * a->interval * 1000 /
			    (long long)nn;
		else
			a->due = now + (long long)(fnv1a_str(FNV_BASIS, a->id) %
			    (uint64_t)(a->interval * 1000));
		v[m++] = a;
		pubagents_heap_set(f, f->hn++, a);
		pubagents_sift_up(f, a->hpos);
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
