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
 */
#include <math.h>

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
