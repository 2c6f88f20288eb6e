/*
 * fleet.c - the agents one heart-pulse process keeps alive, each with
 * its place in a schedule that spreads the fleet's pulses across the
 * interval (a binary min-heap of slots on `due'), and what is told of
 * them once per connection (births) or once (an agent gone).  The
 * agents come from their souls (fleetsouls.c); the state their pulses
 * carry is kept fresh by fleetwatch.c.
 *
 * Invariants: `a' is sorted by id; every agent is in the heap exactly
 * once; `seq' only grows, by one for every slot of the
 * schedule (sent or not) and every extra pulse, so a subscriber that
 * sees a gap knows a pulse was lost.
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

#define BATCH_MS 200	/* slots due this soon are taken with this batch */

void
fleet_warnf(struct fleet *f, const char *fmt, ...)
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
		fleet_warnf(f, "inotify: %s; reading state once per interval",
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

/* --- the schedule: a binary min-heap of slots on `due' --- */

/* Slot s goes up from i, no higher than top, below no later slot. */
static void
rise(struct fleet *f, size_t i, size_t top, struct fleet_slot s)
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
sift_down(struct fleet *f, size_t i)
{
	struct fleet_slot s = f->heap[i];
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
void
fleet_heap_add(struct fleet *f, struct fleet_agent *a, long long due)
{
	rise(f, f->hn++, 0, (struct fleet_slot){ due, a });
}

/*
 * Only the agents a reload keeps keep their slots, and the heap is
 * made again from what is left: once a reload, no place kept per agent.
 */
void
fleet_heap_keep(struct fleet *f)
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
fleet_rebase(struct fleet *f, long long delta)
{
	size_t i;

	for (i = 0; i < f->hn; i++)
		f->heap[i].due += delta;
}

/* Monotonic ms of the earliest slot; LLONG_MAX with no agent. */
long long
fleet_next_due(const struct fleet *f)
{
	return f->hn > 0 ? f->heap[0].due : LLONG_MAX;
}

/*
 * The next agent due, into the cache while this one's pulse is made: on
 * a large fleet, reading it was a cache miss on every pulse.
 */
static void
prefetch(const struct fleet_agent *a)
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
struct fleet_agent *
fleet_due(struct fleet *f, long long now, long long *lag)
{
	struct fleet_slot *s = f->heap;
	struct fleet_agent *a;
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
