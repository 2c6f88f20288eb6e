/*
 * slot.c - the schedule's slots: the ladder of intervals an adaptive
 * schedule may put in force, the agent's offset inside an interval,
 * and the slots themselves (offset + k * interval).  wake.c's due gate
 * and adapt.c's estimator both place wakes with these, and nothing
 * else does.
 *
 * Invariants: an agent's offset is a function of its id and the
 * interval alone (FNV-1a), so that a fleet spreads and every process
 * agrees where an agent's slots are; the rungs of the ladder are
 * schedule.interval doubled or halved (and min, max), and their slots
 * nest, so that a change of rung keeps the slots of the longer one.
 *
 * A slot missed because nothing ran (the host was off) is caught up
 * once, whatever the number of slots missed: the due gate asks only
 * whether a slot has passed since the last one used, and the wake uses
 * it.  How late that wake may be is slot_missed's rule.
 */
#include <math.h>
#include <stdio.h>

#include "heartint.h"
#include "heartstore.h"

/* A stable offset inside the interval, from the agent id (FNV-1a). */
long long
slot_offset(const char *agent, long long interval)
{
	/* the basis it has always had, a digit short of FNV's own: it
	 * places every agent's slots, so it stays */
	uint64_t h = fnv1a_str(1469598103934665603ULL, agent);

	h ^= h >> 29;
	return interval > 0 ? (long long)(h % (unsigned long long)interval) :
	    0;
}

/*
 * The rung nearest to base * 2^x in log scale: min, base doubled or
 * halved a whole number of times strictly inside (min, max), max.  On
 * a tie the shorter wins.
 */
long long
slot_rung(long long base, long long min, long long max, double x)
{
	double best = (double)min, bd = fabs(log2((double)min / base) - x);
	double d, r;
	int k, lo, hi;

	lo = (int)floor(log2((double)min / base));
	hi = (int)ceil(log2((double)max / base));
	for (k = lo; k <= hi; k++) {
		r = ldexp((double)base, k);
		if (r <= (double)min || r >= (double)max)
			continue;
		if ((d = fabs(k - x)) < bd) {
			best = r;
			bd = d;
		}
	}
	if (fabs(log2((double)max / base) - x) < bd)
		best = (double)max;
	return llround(best);
}

/*
 * The agent's offset inside the rung iv of its adaptive ladder: its
 * offset inside the longest rung, so that the slots of every rung nest
 * (and agree with the fixed schedule's at schedule.interval).
 */
long long
slot_rung_offset(const struct soul *s, long long iv)
{
	long long base = s->ch[CH_SCHEDULE].every, top = base;

	while (top < s->adapt.max && top <= (1LL << 40))
		top *= 2;
	return slot_offset(s->name, top) % iv;
}

/* The first slot (offset + k * iv) at or after t. */
time_t
slot_from(time_t t, long long iv, long long off)
{
	long long d = (long long)t - off, k;

	k = d / iv;
	if (d > k * iv)
		k++;
	return (time_t)(off + k * iv);
}

/* The last slot at or before t. */
time_t
slot_before(time_t t, long long iv, long long off)
{
	time_t c = slot_from(t, iv, off);

	return c > t ? c - iv : c;
}

/*
 * Is a wake at now, for the slot that opened at t (the newest passed,
 * at or before now), too late to go: a catch-up (SLOT_ON_TIME or more
 * after it) past catch_up, schedule.catch_up (0: a catch-up never
 * goes; < 0, unset: always)?  A wake is never an interval late from
 * the newest slot, so any catch_up of an interval or more is as unset.
 */
int
slot_missed(time_t t, time_t now, long long catch_up)
{
	long long late = (long long)now - (long long)t;

	return catch_up >= 0 && late >= SLOT_ON_TIME && late > catch_up;
}

/* What slot_missed says of a wake at now for the slot t, in words. */
void
slot_why(time_t t, time_t now, long long catch_up, char *buf, size_t n)
{
	char at[40], late[32], lim[32];

	clock_utc(t, at, sizeof at);
	dur_format((long long)(now - t), late, sizeof late);
	if (catch_up > 0)
		dur_format(catch_up, lim, sizeof lim);
	else
		snprintf(lim, sizeof lim, "false");
	if (now - t < SLOT_ON_TIME)
		snprintf(buf, n, "on time for the slot of %s", at);
	else if (slot_missed(t, now, catch_up))
		snprintf(buf, n, "schedule: missed: the slot of %s is %s late, "
		    "past schedule.catch_up %s; the agent waits for its next "
		    "slot", at, late, lim);
	else if (catch_up < 0)
		snprintf(buf, n, "a catch-up, %s after the slot of %s, once "
		    "whatever the slots missed (no schedule.catch_up)", late,
		    at);
	else
		snprintf(buf, n, "a catch-up, %s after the slot of %s, within "
		    "schedule.catch_up %s", late, at, lim);
}

/*
 * When the idle chamber is next due: `after' past the user's last sign
 * (input; 0: none, then the agent's first sight, seen), and never
 * before `after' past its slot last used (used: the last idle wake
 * admitted or refused; 0: none).  wake.c's due gate and the pulse
 * (pulse.c) both ask this.
 */
time_t
slot_idle_due(time_t input, time_t seen, time_t used, long long after)
{
	time_t t = (input ? input : seen) + (time_t)after;

	return used + (time_t)after > t ? used + (time_t)after : t;
}
