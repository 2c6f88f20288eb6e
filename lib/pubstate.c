/*
 * pubstate.c - the state the publisher's pulses carry (pubagents.c
 * keeps the agents), cached and kept fresh without reading every agent's files
 * on every pulse: inotify on each agent directory marks what changed
 * (a change of breaker, wake or journal, or of the user's last sign
 * where the idle chamber is on, is read at once and queued for an extra
 * pulse; a change of the counter is read at the next pulse); whether a
 * chamber is overdue is judged from what was read, at each pulse, with
 * no read of its own; an agent
 * that has no watch is read in full at each of its pulses (the polling
 * fallback).
 *
 * Invariants: an agent is in wdmap at its wd, or its wd is -1 and it
 * is polled; it is in the changed queue at most once (queued); a part
 * of its state that cannot be read is told once until it reads again,
 * and its pulses carry null meanwhile.
 */
#include <sys/inotify.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"
#include "heartpulse.h"

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | \
	IN_MOVED_FROM | IN_ONLYDIR | IN_EXCL_UNLINK)

/*
 * Whether a's schedule or idle chamber is overdue (pulse.c's rule) at
 * now: each judged on its own due time and interval, and neither while
 * it is outside its active hours.
 */
static void
judge(struct pubagent *a, time_t now)
{
	a->st.overdue = (char)((!a->sched_quiet && pulse_overdue(a->st.due,
	    pulse_grace(a->every), a->st.looked, now)) || (!a->idle_quiet &&
	    pulse_overdue(a->st.idle_due, pulse_grace(a->idle), a->st.looked,
	    now)));
}

/* Whether chamber c of a is outside its active hours at now. */
static char
chamber_quiet(const struct pubagent *a, enum chamber c, time_t now)
{
	return (char)soul_hours_out(&a->active[c], a->zone, now);
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
			pubagents_warnf(f, "%s: %s (its pulses carry null "
			    "until it is readable)", a->id, err);
		}
	}
	a->dirty &= ~parts;
	judge(a, now);
}

void
pubstate_start(struct pubagents *f, struct pubagent *a, int quiet)
{
	char dir[4096], err[HEART_ERRLEN];
	int wd;

	a->wd = -1;
	if (f->ifd < 0)
		return;
	if (state_agent_dir(a->id, 1, dir, sizeof dir, err) == -1) {
		if (!quiet)
			pubagents_warnf(f, "%s: %s; its state is read once per "
			    "interval", a->id, err);
		return;
	}
	if ((wd = inotify_add_watch(f->ifd, dir, WATCH_MASK)) == -1) {
		if (errno == ENOSPC && f->watchfull++ == 0)
			pubagents_warnf(f, "inotify: no more watches (see "
			    "fs.inotify.max_user_watches); agents from %s on "
			    "are read once per interval", a->id);
		else if (errno != ENOSPC && !quiet)
			pubagents_warnf(f, "%s: inotify: %s; its state is read "
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

void
pubstate_stop(struct pubagents *f, struct pubagent *a)
{
	if (a->wd < 0)
		return;
	if ((size_t)a->wd < f->nwd && f->wdmap[a->wd] == a)
		f->wdmap[a->wd] = NULL;
	inotify_rm_watch(f->ifd, a->wd);
	a->wd = -1;
}

int
pubstate_fd(const struct pubagents *f)
{
	return f->ifd;
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
pubstate_read(struct pubagents *f, time_t now)
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
pubstate_changed(struct pubagents *f)
{
	struct pubagent *a;

	if (f->nchg == 0)
		return NULL;
	a = f->chg[--f->nchg];
	a->queued = 0;
	return a;
}

/*
 * Topic and payload of a's pulse, with its state brought up to date.
 * An extra pulse (a change) takes a sequence number of its own; a
 * scheduled one uses the slot pubagents_due took.  Returns the payload's
 * length, or -1 if a buffer is too small.
 */
int
pubstate_pulse(struct pubagents *f, struct pubagent *a, int extra,
    const char *prefix, const char *host_json, long long mono,
    const struct timespec *wall, char *topic, size_t tn, char *buf,
    size_t n)
{
	unsigned parts = a->dirty;

	if (a->wd < 0 && !extra) {
		parts = PS_ALL;
		if (a->rewatch && f->watchfull == 0) {
			a->rewatch = 0;
			pubstate_start(f, a, 1);
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
		a->sched_quiet = chamber_quiet(a, CH_SCHEDULE, wall->tv_sec);
		a->idle_quiet = chamber_quiet(a, CH_IDLE, wall->tv_sec);
	}
	judge(a, wall->tv_sec);
	if (extra)
		a->seq++;
	if (pulse_topic(topic, tn, prefix, a->id, "pulse") == -1)
		return -1;
	return pulse_format(buf, n, a->id, a->seq, mono, wall, host_json,
	    &a->st);
}
