/*
 * watcher.c - heart-pulse's watching end (--watch, --snapshot), the
 * subscriber: the chamber's topics read over one broker connection
 * (broker.c) into a liveness map, in the caller's poll loop, saying
 * what changed (an agent came online, went offline: its status said
 * so, its publisher's last will did, or `misses' intervals passed
 * without a pulse; a wake started or ended; the breaker changed), or,
 * as a snapshot, the map once.
 *
 * The birth sequence rule (Sparkplug's bdSeq): an agent's online status
 * names the node (publishing process) and the bdseq of its connection;
 * a node's offline (its will, or its clean goodbye) takes offline only
 * the agents whose last online carried that node and that bdseq, so a
 * late will of an old connection never marks a reborn publisher's
 * agents offline.  An agent belongs to the node of its last birth:
 * a status from another node may give it a new birth, never take it
 * offline.  Times are the caller's monotonic milliseconds.
 *
 * A node's will is told WILL_HOLD after it arrives, not at once: a
 * broker that goes down sends every client's will as it goes (mosquitto
 * does), and a will followed within WILL_HOLD by the watcher's own
 * disconnection is the broker's shutdown, not the fleet's death; its
 * agents become unknown instead.  A will that is retained news after a
 * reconnection (the broker went down and came back) is told only when
 * the agent's misses would tell it, so that a publisher that redials in
 * time is never reported offline.
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
#define WILL_HOLD	1000	/* ms a will waits before it is told */

struct wagent {
	char	 id[HEART_IDMAX + 1];
	int	 online;	/* 1, 0, -1: not known yet */
	char	 reason[16];
	long long last;		/* ms of the last sign of life; -1 */
	long long pulsed;	/* ms of the last pulse; -1 */
	long long held;		/* ms its node's will is told at; -1: none */
	long long interval;	/* ms, from the agent's birth; 0: not known */
	long long misses;	/* from the birth; 0: not known */
	char	 node[HEART_IDMAX + 1];
	long long bdseq;
	char	 breaker[12];	/* "": not known */
	int	 waking;	/* 1, 0, -1: not known */
	int	 overdue;	/* 1, 0 */
	json_t	*pulse;		/* the last pulse */
};

struct watchmap {
	char	*prefix;
	size_t	 plen;
	long long misses;	/* override; -1: each agent's */
	long long interval;	/* ms, for agents whose birth was not seen */
	int	 up;		/* the watcher's own connection */
	int	 again;		/* it was up before: a reconnection */
	struct wagent **a;
	size_t	 n;
	json_t	*index;		/* id -> position in a */
	json_t	*nodes;		/* node -> {"status", "bdseq"} */
};

static struct watchmap *
watchmap_new(const char *prefix, long long misses, long long interval)
{
	struct watchmap *w = xcalloc(1, sizeof *w);

	w->prefix = xstrdup(prefix);
	w->plen = strlen(prefix);
	w->misses = misses;
	w->interval = interval > 0 ? interval : 10000;
	w->index = json_object();
	w->nodes = json_object();
	w->up = 0;	/* until watchmap_link says it is up */
	return w;
}

static void
watchmap_free(struct watchmap *w)
{
	size_t i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++) {
		json_decref(w->a[i]->pulse);
		free(w->a[i]);
	}
	free(w->a);
	json_decref(w->index);
	json_decref(w->nodes);
	free(w->prefix);
	free(w);
}

static struct wagent *
agent(struct watchmap *w, const char *id)
{
	json_t *i = json_object_get(w->index, id);
	struct wagent *a;

	if (i != NULL)
		return w->a[json_integer_value(i)];
	a = xcalloc(1, sizeof *a);
	snprintf(a->id, sizeof a->id, "%s", id);
	a->online = -1;
	a->last = a->pulsed = a->held = -1;
	a->waking = -1;
	if ((w->a = realloc(w->a, (w->n + 1) * sizeof *w->a)) == NULL)
		abort();
	json_object_set_new(w->index, id, json_integer((json_int_t)w->n));
	w->a[w->n++] = a;
	return a;
}

static json_t *
event(json_t *out, time_t wall, const struct wagent *a, const char *what)
{
	char at[32];
	json_t *e;

	clock_utc(wall, at, sizeof at);
	e = json_pack("{s:s,s:s,s:s}", "at", at, "agent", a->id, "event",
	    what);
	json_array_append_new(out, e);
	return e;
}

static void
set_online(struct wagent *a, int on, const char *reason, time_t wall,
    json_t *out)
{
	json_t *e;

	snprintf(a->reason, sizeof a->reason, "%s", reason);
	if (a->online == on)
		return;
	a->online = on;
	e = event(out, wall, a, on ? "online" : "offline");
	json_object_set_new(e, "reason", json_string(reason));
	if (a->node[0] != '\0')
		json_object_set_new(e, "node", json_string(a->node));
}

/* A status, a goodbye or a will's time come: what it says ends a held will. */
static void
tell(struct wagent *a, int on, const char *reason, time_t wall, json_t *out)
{
	a->held = -1;
	set_online(a, on, reason, wall, out);
}

static const char *
str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The schedule overdue ("overdue", with when it was due), or back on
 * time ("overdue_end"): one event each way. */
static void
on_overdue(struct wagent *a, json_t *p, time_t wall, json_t *out)
{
	int od = json_is_true(json_object_get(p, "overdue"));
	json_t *e;
	char due[32];

	if (od == a->overdue)
		return;
	a->overdue = od;
	e = event(out, wall, a, od ? "overdue" : "overdue_end");
	if (od && json_is_integer(json_object_get(p, "due"))) {
		clock_utc((time_t)json_integer_value(json_object_get(p, "due")),
		    due, sizeof due);
		json_object_set_new(e, "due", json_string(due));
	}
}

static void
on_pulse(struct watchmap *w, struct wagent *a, json_t *p, long long now,
    time_t wall, json_t *out)
{
	json_t *wk = json_object_get(p, "waking"), *e;
	const char *brk = str(p, "breaker");
	int waking = -1;

	(void)w;
	a->last = a->pulsed = now;
	set_online(a, 1, "pulse", wall, out);
	if (brk != NULL && strcmp(brk, a->breaker) != 0 &&
	    (a->breaker[0] != '\0' || strcmp(brk, "closed") != 0)) {
		e = event(out, wall, a, "breaker");
		json_object_set_new(e, "state", json_string(brk));
		json_object_set_new(e, "was", a->breaker[0] ?
		    json_string(a->breaker) : json_null());
	}
	if (brk != NULL)
		snprintf(a->breaker, sizeof a->breaker, "%s", brk);
	if (json_is_false(wk))
		waking = 0;
	else if (json_is_true(wk) || json_is_string(wk))
		waking = 1;
	if (waking == 1 && a->waking != 1) {
		e = event(out, wall, a, "wake_start");
		json_object_set_new(e, "chamber", json_is_string(wk) ?
		    json_incref(wk) : json_null());
	} else if (waking == 0 && a->waking == 1)
		event(out, wall, a, "wake_end");
	if (waking != -1)
		a->waking = waking;
	on_overdue(a, p, wall, out);
	json_decref(a->pulse);
	a->pulse = json_incref(p);
}

/* How long after its last sign of life an agent is offline by misses. */
static long long
grace(const struct watchmap *w, const struct wagent *a)
{
	long long iv = a->interval > 0 ? a->interval : w->interval;
	long long m = w->misses > 0 ? w->misses : a->misses > 0 ? a->misses :
	    3;

	return m * iv + iv / 2;
}

/* a's node's will: told later (the head comment says when). */
static void
hold_will(const struct watchmap *w, struct wagent *a, long long now,
    int retained)
{
	if (a->online == 0 || a->held >= 0)
		return;
	a->held = now + (retained && w->again ? grace(w, a) : WILL_HOLD);
}

static int
node_offline(struct watchmap *w, const char *node, long long bdseq)
{
	json_t *n = json_object_get(w->nodes, node);
	const char *s = str(n, "status");

	return s != NULL && strcmp(s, "offline") == 0 &&
	    json_integer_value(json_object_get(n, "bdseq")) == bdseq;
}

static void
on_status(struct watchmap *w, struct wagent *a, json_t *p, long long now,
    int retained, time_t wall, json_t *out)
{
	const char *s = str(p, "status"), *node = str(p, "node");
	const char *reason = str(p, "reason");
	json_t *bd = json_object_get(p, "bdseq");
	json_t *iv = json_object_get(p, "interval");
	json_t *ms = json_object_get(p, "misses");

	if (s == NULL)
		return;
	/*
	 * An agent is owned by the node of its last birth: an offline
	 * from another node (a host that kept a soul the agent has left,
	 * a forger on a broker without per-host accounts) is not its.
	 */
	if (strcmp(s, "online") != 0 && a->node[0] != '\0' &&
	    (node == NULL || strcmp(node, a->node) != 0))
		return;
	if (node != NULL && json_is_integer(bd)) {
		snprintf(a->node, sizeof a->node, "%s", node);
		a->bdseq = json_integer_value(bd);
	}
	if (strcmp(s, "online") == 0) {
		if (json_is_integer(iv) && json_integer_value(iv) > 0)
			a->interval = json_integer_value(iv) * 1000;
		if (json_is_integer(ms) && json_integer_value(ms) > 0)
			a->misses = json_integer_value(ms);
		if (node != NULL && node_offline(w, node, a->bdseq))
			hold_will(w, a, now, retained);
		else {
			a->last = now;
			tell(a, 1, "status", wall, out);	/* born since */
		}
	} else if (strcmp(s, "offline") == 0)
		tell(a, 0, reason ? reason : "status", wall, out);
}

static void
on_node(struct watchmap *w, const char *node, json_t *p, long long now,
    int retained, time_t wall, json_t *out)
{
	const char *s = str(p, "status"), *reason = str(p, "reason");
	json_t *bd = json_object_get(p, "bdseq");
	long long b;
	size_t i;

	if (s == NULL || !json_is_integer(bd))
		return;
	b = json_integer_value(bd);
	json_object_set_new(w->nodes, node, json_pack("{s:s,s:I}", "status",
	    s, "bdseq", (json_int_t)b));
	if (strcmp(s, "offline") != 0)
		return;
	for (i = 0; i < w->n; i++) {
		if (strcmp(w->a[i]->node, node) != 0 || w->a[i]->bdseq != b)
			continue;
		if (reason == NULL || strcmp(reason, "will") == 0)
			hold_will(w, w->a[i], now, retained);
		else
			tell(w->a[i], 0, reason, wall, out);
	}
}

/* An agent whose retained status was cleared leaves the map. */
static void
retire(struct watchmap *w, const char *rest, time_t wall, json_t *out)
{
	char id[HEART_IDMAX + 1];
	const char *slash = strchr(rest, '/');
	json_t *i;
	size_t k;

	if (slash == NULL || strcmp(slash, "/status") != 0 ||
	    (size_t)(slash - rest) >= sizeof id)
		return;
	memcpy(id, rest, (size_t)(slash - rest));
	id[slash - rest] = '\0';
	if ((i = json_object_get(w->index, id)) == NULL)
		return;
	k = (size_t)json_integer_value(i);
	event(out, wall, w->a[k], "retired");
	json_decref(w->a[k]->pulse);
	free(w->a[k]);
	json_object_del(w->index, id);
	if (k != --w->n) {	/* the last one takes its place */
		w->a[k] = w->a[w->n];
		json_object_set_new(w->index, w->a[k]->id,
		    json_integer((json_int_t)k));
	}
}

/*
 * One message from the broker (retained: sent from the broker's store,
 * not live).  Changes are appended to `out' as JSON objects.  Messages
 * that are not the chamber's are ignored.
 */
static void
watchmap_message(struct watchmap *w, const char *topic, const char *payload,
    int len, int retained, long long now, time_t wall, json_t *out)
{
	char id[HEART_IDMAX + 1];
	const char *rest, *slash;
	json_t *p;
	size_t n;

	if (strncmp(topic, w->prefix, w->plen) != 0 || topic[w->plen] != '/')
		return;
	rest = topic + w->plen + 1;
	if (len <= 0) {		/* a retained status cleared: retired */
		retire(w, rest, wall, out);
		return;
	}
	if ((p = json_loadb(payload, (size_t)len, 0, NULL)) == NULL)
		return;
	if (!json_is_object(p))
		goto out;
	if (strncmp(rest, "node/", 5) == 0 && (slash = strchr(rest + 5,
	    '/')) != NULL && strcmp(slash, "/status") == 0) {
		n = (size_t)(slash - rest - 5);
		if (n > 0 && n < sizeof id) {
			memcpy(id, rest + 5, n);
			id[n] = '\0';
			on_node(w, id, p, now, retained, wall, out);
		}
		goto out;
	}
	if ((slash = strchr(rest, '/')) == NULL ||
	    (n = (size_t)(slash - rest)) >= sizeof id)
		goto out;
	memcpy(id, rest, n);
	id[n] = '\0';
	if (!id_valid(id))
		goto out;
	if (strcmp(slash, "/pulse") == 0)
		on_pulse(w, agent(w, id), p, now, wall, out);
	else if (strcmp(slash, "/status") == 0)
		on_status(w, agent(w, id), p, now, retained, wall, out);
out:
	json_decref(p);
}

/*
 * Agents whose pulses stopped (`misses' intervals and half a one), and
 * wills held long enough.
 */
static void
watchmap_tick(struct watchmap *w, long long now, time_t wall, json_t *out)
{
	struct wagent *a;
	size_t i;

	if (!w->up)
		return;		/* no news is not bad news while we are away */
	for (i = 0; i < w->n; i++) {
		a = w->a[i];
		if (a->held >= 0 && now >= a->held)
			tell(a, 0, "will", wall, out);
		else if (a->online == 1 && a->last >= 0 &&
		    now >= a->last + grace(w, a))
			set_online(a, 0, "misses", wall, out);
	}
}

/*
 * The watcher's own connection came (up) or went.  While it is away
 * nothing is known of any agent: each is unknown, not offline, and no
 * offline is reported for it; when it is back, the broker's retained
 * statuses and the pulses tell again, and misses count from then.  One
 * event says it: {"event":"connected"} or {"event":"disconnected"}.
 */
static void
watchmap_link(struct watchmap *w, int up, const char *why, long long now,
    time_t wall, json_t *out)
{
	char at[32];
	json_t *e;
	size_t i;

	if (w->up == up)
		return;
	if (w->up)
		w->again = 1;
	w->up = up;
	for (i = 0; i < w->n; i++) {
		w->a[i]->held = -1;	/* a will just before: the shutdown's */
		if (!up)
			w->a[i]->online = -1;
		else if (w->a[i]->last >= 0)
			w->a[i]->last = now;
	}
	if (!up)
		json_object_clear(w->nodes);
	clock_utc(wall, at, sizeof at);
	e = json_pack("{s:s,s:s}", "at", at, "event", up ? "connected" :
	    "disconnected");
	if (why != NULL)
		json_object_set_new(e, "why", json_string(why));
	json_array_append_new(out, e);
}

/*
 * Whether a snapshot may be taken: every agent whose status says online
 * has pulsed since `since' (the connection), or an interval and a half
 * has passed without it.
 */
static int
watchmap_settled(const struct watchmap *w, long long since, long long now)
{
	const struct wagent *a;
	long long iv;
	size_t i;

	for (i = 0; i < w->n; i++) {
		a = w->a[i];
		iv = a->interval > 0 ? a->interval : w->interval;
		if (a->online == 1 && a->pulsed < since &&
		    now < since + iv + iv / 2)
			return 0;
	}
	return 1;
}

/*
 * The latest birth of a's node, as its node status says, is newer than
 * a's: a's online is what an older connection said before it died.
 */
static int
stale(const struct watchmap *w, const struct wagent *a)
{
	json_t *n = json_object_get(w->nodes, a->node);

	return n != NULL && json_integer_value(json_object_get(n, "bdseq")) >
	    a->bdseq;
}

static int
cmpw(const void *x, const void *y)
{
	return strcmp((*(struct wagent *const *)x)->id,
	    (*(struct wagent *const *)y)->id);
}

/*
 * The map, one object per agent, sorted; *offline counts the agents
 * that are not online.  With since >= 0 (a snapshot, taken when
 * watchmap_settled), an agent is online only if it has pulsed since then
 * and its birth is its node's latest: an online status from an older
 * birth, or with no pulse for an interval and a half, is not alive.
 */
static json_t *
watchmap_snapshot(struct watchmap *w, long long since, size_t *offline)
{
	struct wagent **v = xcalloc(w->n, sizeof *v);
	json_t *arr = json_array(), *o, *p;
	const char *st, *why;
	size_t i;

	*offline = 0;
	if (w->n > 0) {
		memcpy(v, w->a, w->n * sizeof *v);
		qsort(v, w->n, sizeof *v, cmpw);
	}
	for (i = 0; i < w->n; i++) {
		p = v[i]->pulse;
		st = v[i]->online == 1 ? "online" : v[i]->online == 0 ?
		    "offline" : "unknown";
		why = v[i]->reason;
		if (v[i]->held >= 0) {	/* its node's will, not told yet */
			st = "offline";
			why = "will";
		} else if (since >= 0 && v[i]->online == 1 && stale(w, v[i])) {
			st = "offline";
			why = "stale";
		} else if (since >= 0 && v[i]->online == 1 &&
		    v[i]->pulsed < since) {
			st = "unknown";
			why = "no_pulse";
		}
		o = json_pack("{s:s,s:s,s:s}", "agent", v[i]->id, "status",
		    st, "reason", why);
		if (strcmp(st, "online") != 0)
			(*offline)++;
#define COPY(k) json_object_set(o, k, json_object_get(p, k) ? \
	json_object_get(p, k) : json_null())
		COPY("seq");
		COPY("at");
		COPY("host");
		COPY("breaker");
		COPY("waking");
		COPY("cap");
		COPY("due");
		COPY("skip");
#undef COPY
		json_object_set_new(o, "overdue", json_boolean(
		    json_is_true(json_object_get(p, "overdue"))));
		json_object_set_new(o, "node", v[i]->node[0] ?
		    json_string(v[i]->node) : json_null());
		json_array_append_new(arr, o);
	}
	free(v);
	return arr;
}

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
 * The watcher o asks for (warnings to warning.c), not yet connected.  0,
 * or HX_USAGE or HX_CONFIG with err.
 */
int
watcher_open(const struct pulse_opts *o, struct watcher **out, char *err)
{
	struct watcher *w = xcalloc(1, sizeof *w);
	int r;

	*out = w;
	broker_init(&w->b, o, 1);
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
	if (now >= mqtt_retry_at(q))
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
	mqtt_pollfd(w->b.q, fd);
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
