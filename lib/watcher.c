/*
 * watcher.c - heart-pulse's watching end (--watch, --snapshot), the
 * subscriber: the chamber's topics read over one broker connection
 * (broker.c) into the liveness map (watchmap.c), in the caller's poll
 * loop, saying what changed, or, as a snapshot, the map once.
 *
 * A snapshot is taken an interval after the start, and once the map
 * has settled (watchmap_settled: each agent said online has pulsed since
 * the connection, or had time to); a watcher that never connected in
 * that interval has no map to give.  The interval is --interval, else
 * WATCH_INTERVAL.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heartint.h"
#include "heartpulse.h"

#define WATCH_INTERVAL	10	/* s */

struct watcher {
	struct broker b;
	struct watchmap *w;
	json_t	*events;	/* the changes not yet taken */
	long long iv;		/* the interval, ms */
	long long end;		/* a snapshot is not taken before */
	long long up_at;	/* when it first connected; -1: never */
};

static void
on_message(void *arg, const char *topic, const void *payload, int len,
    int retained)
{
	struct watcher *w = arg;

	watchmap_message(w->w, topic, payload, len, retained, mono_ms(),
	    time(NULL), w->events);
}

/* The watcher's own connection, in its map and its events. */
static void
report(struct watcher *w, unsigned ev, long long now)
{
	broker_report(&w->b, ev);
	if (w->b.fatal)
		return;
	if (ev & (MQTT_EV_DOWN | MQTT_EV_FAIL))
		watchmap_link(w->w, 0, mqtt_why(w->b.q), now, time(NULL),
		    w->events);
	if (ev & MQTT_EV_UP)
		watchmap_link(w->w, 1, NULL, now, time(NULL), w->events);
}

/* The connection's events ev at now: told, and the first connection
 * kept.  0, or -1 with err: a failure that retrying cannot mend. */
static int
seen(struct watcher *w, unsigned ev, long long now, char *err)
{
	if (ev != 0)
		report(w, ev, now);
	if (w->b.fatal)
		return broker_failed(&w->b, err);
	if (ev & MQTT_EV_UP && w->up_at < 0)
		w->up_at = now;
	return 0;
}

static void
subscribe(struct watcher *w)
{
	char t[512];

	snprintf(t, sizeof t, "%s/+/pulse", w->b.prefix);
	mqtt_subscribe(w->b.q, t);
	snprintf(t, sizeof t, "%s/+/status", w->b.prefix);
	mqtt_subscribe(w->b.q, t);
	snprintf(t, sizeof t, "%s/node/+/status", w->b.prefix);
	mqtt_subscribe(w->b.q, t);
}

/*
 * The watcher o asks for (warnings through h), not yet connected.  0,
 * or HX_USAGE or HX_CONFIG with err.
 */
int
watcher_open(const struct pulse_opts *o, const struct pulse_hooks *h,
    struct watcher **out, char *err)
{
	struct watcher *w = xcalloc(1, sizeof *w);
	int r;

	*out = w;
	broker_init(&w->b, o, h, 1);
	w->events = json_array();
	w->up_at = -1;
	w->iv = (o->interval > 0 ? o->interval : WATCH_INTERVAL) * 1000;
	if ((r = broker_open(&w->b, err)) != 0)
		return r;
	w->w = watchmap_new(w->b.prefix, o->misses, w->iv);
	mqtt_on_message(w->b.q, on_message, w);
	subscribe(w);
	w->end = mono_ms() + w->iv;
	return 0;
}

/*
 * What is due before the next poll: a dial, socket work, agents whose
 * pulses stopped.  0; 1: the snapshot is due (watcher_snapshot); -1
 * with err: a failure that retrying cannot mend (broker.c).
 */
int
watcher_work(struct watcher *w, long long now, char *err)
{
	struct mqtt *q = w->b.q;

	json_array_clear(w->events);	/* a snapshot's, not taken */
	if (mqtt_state(q) == MQTT_DOWN && now >= mqtt_retry_at(q))
		mqtt_dial(q, now);
	if (seen(w, mqtt_io(q, 0, now), now, err) == -1)
		return -1;
	watchmap_tick(w->w, now, time(NULL), w->events);
	if (w->b.o->snapshot && now >= w->end && (w->up_at < 0 ||
	    watchmap_settled(w->w, w->up_at, now)))
		return 1;
	return 0;
}

/* What to poll, and for how long: the poll's timeout in ms. */
int
watcher_poll(const struct watcher *w, long long now, struct pollfd *fd)
{
	*fd = (struct pollfd){ mqtt_fd(w->b.q), mqtt_events(w->b.q), 0 };
	return broker_timeout(&w->b, now, now + 200);
}

/* What the poll saw on fd (watcher_poll's).  0, or -1 as _work. */
int
watcher_ready(struct watcher *w, const struct pollfd *fd, char *err)
{
	if (fd->revents)
		return seen(w, mqtt_io(w->b.q, fd->revents, mono_ms()),
		    mono_ms(), err);
	return 0;
}

/*
 * The changes seen since the last call, in order (heart-pulse(1),
 * --watch): an array of objects, for the caller to print and empty.
 */
json_t *
watcher_events(struct watcher *w)
{
	return w->events;
}

/*
 * The map, once (heart-pulse(1), --snapshot), into *out (an array of
 * objects, sorted, to free): 0 every agent in it is online; 1 some is
 * not, or none was seen (err says so: a warning); -1 with err and no
 * map when the watcher never connected.
 */
int
watcher_snapshot(struct watcher *w, json_t **out, char *err)
{
	size_t off;

	*err = '\0';
	*out = NULL;
	if (w->up_at < 0) {
		errf(err, "%s: no connection within %llds", w->b.url,
		    w->iv / 1000);
		return -1;
	}
	*out = watchmap_snapshot(w->w, w->up_at, &off);
	if (json_array_size(*out) == 0) {
		errf(err, "%s: no agent seen under %s/ (a wrong --prefix, "
		    "an ACL that does not let this account read it, or no "
		    "publisher)", w->b.url, w->b.prefix);
		return 1;
	}
	return off > 0;
}

/* Disconnect, and free w. */
void
watcher_free(struct watcher *w)
{
	if (w == NULL)
		return;
	if (w->b.q != NULL)
		mqtt_disconnect(w->b.q);
	broker_close(&w->b);
	watchmap_free(w->w);
	json_decref(w->events);
	free(w);
}
