/*
 * heart-pulse - the pulse chamber: one process, one MQTT connection,
 * any number of agents, each published alive every interval with the
 * state the dashboard draws; never a model.  With --watch, the other
 * end: a subscriber that prints each change of the liveness map.
 *
 * One poll loop over the broker socket, inotify and a signalfd; the
 * schedule, the state cache and the liveness rules live in lib/
 * (fleet.c, pulse.c, watch.c), the connection in lib/mqtt.c.  Nothing
 * here waits on the broker: while it is away, slots pass unsent (their
 * sequence numbers are skipped) and the process keeps its place.
 */
#include <sys/signalfd.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heart.h"
#include "prog.h"

const char progname[] = "heart-pulse";
const char usage_text[] =
    "usage: heart-pulse --soul FILE... | --souls DIR [--broker URL]"
    " [--prefix P]\n"
    "           [--interval DUR] [--client-id ID] [--keepalive DUR]\n"
    "           [--backoff-max DUR] [--username NAME]"
    " [--password-file FILE]\n"
    "           [--cafile FILE] [--cert FILE --key FILE] [--no-inotify]"
    " [-v]\n"
    "       heart-pulse --acl --soul FILE... | --souls DIR [--prefix P]"
    " [--username NAME]\n"
    "       heart-pulse --watch [--snapshot] [--misses N]"
    " [--interval DUR]\n"
    "           [--broker URL] [--prefix P] [connection options]\n";

#define SHUTDOWN_MS	5000	/* most a goodbye may take */
#define BIRTH_BATCH	512

static struct {
	char	**souls;
	size_t	 nsouls;
	const char *dir;
	const char *broker;
	const char *prefix;
	long long interval;	/* s; -1: the souls' */
	long long misses;
	const char *pwfile;
	int	 watch, snapshot, verbose, noinotify, acl;
	struct mqtt_conf mc;
} o = { .prefix = "heart", .interval = -1, .misses = -1 };

static struct {
	unsigned long long sent, skipped, extra, births;
	long long lag_max;
	int	 connects;
} stats;

static struct mqtt *q;
static struct fleet *fleet;
static struct pulse_node node;
static char host[256], host_json[300], client_id[HEART_IDMAX + 1];
static int said_down;	/* an outage was reported; quiet until it ends */
static long long born;	/* the bdseq of the last connection; 0: none */
static long long started;	/* the schedule's origin; 0 once it runs */





static long long
dur_opt(const char *name, const char *arg)
{
	char m[128], why[96];
	long long v;

	if (*dur_why(arg, 1, why, sizeof why) != '\0') {
		snprintf(m, sizeof m, "--%s: %s", name, why);
		die(HX_USAGE, m);
	}
	dur_parse(arg, &v);
	return v;
}

static void
print_warnings(void)
{
	char *m;

	while ((m = fleet_warning(fleet)) != NULL) {
		warn(NULL, m);
		free(m);
	}
}

static void
notify(const char *state)
{
	char err[HEART_ERRLEN];
	static int told;

	if (sdnotify_send(state, err) == -1 && !told++)
		warn(NULL, err);
}

/* --- the connection, as both ends use it --- */

static void
report(unsigned ev)
{
	char m[2 * HEART_ERRLEN];

	if (ev & MQTT_EV_DENIED) {	/* not the broker's moment: ours */
		snprintf(m, sizeof m, "%s: %s%s: %s (check the account and "
		    "its password on the broker)", o.broker, o.mc.username ?
		    "user " : "no user name", o.mc.username ? o.mc.username :
		    "", mqtt_why(q));
		die(HX_CONFIG, m);
	}
	/*
	 * Two of us with one id.  Publishers settle it on the node's
	 * topic (on_node_status: the younger gives way), so that a
	 * broker that says "taken over" never stops the older one.
	 */
	if ((ev & MQTT_EV_TAKEN) && o.watch) {
		snprintf(m, sizeof m, "%s: another client is connected with "
		    "the client id %s; two processes need two ids "
		    "(--client-id)", o.broker, o.mc.client_id);
		die(HX_CONFIG, m);
	}
	if (ev & MQTT_EV_UP) {
		stats.connects++;
		if (said_down || o.verbose)
			fprintf(stderr, "heart-pulse: %s: connected%s\n",
			    o.broker, mqtt_v5(q) ? "" : " (MQTT 3.1.1)");
		said_down = 0;
	}
	if ((ev & (MQTT_EV_DOWN | MQTT_EV_FAIL)) && (!said_down ||
	    o.verbose)) {
		char cap[32];

		fprintf(stderr, "heart-pulse: %s: %s: %s; retrying with "
		    "backoff up to %s\n", o.broker, ev & MQTT_EV_DOWN ?
		    "connection lost" : "cannot connect", mqtt_why(q),
		    dur_format(o.mc.backoff_max / 1000, cap, sizeof cap));
		said_down = 1;
	}
}

static int
poll_timeout(long long now, long long until)
{
	long long t = until - now;

	if (mqtt_state(q) == MQTT_DOWN && mqtt_retry_at(q) - now < t)
		t = mqtt_retry_at(q) - now;
	if (t > 1000)
		t = 1000;	/* keepalive and the watchdog */
	return t < 0 ? 0 : (int)t;
}

/*
 * Wait until what is queued is written (and with acked, until the
 * broker has acknowledged every status: some brokers drop what they
 * have not finished storing when the DISCONNECT comes), or the deadline.
 */
static void
flush(long long deadline, int acked)
{
	struct pollfd p;
	long long now;

	while ((mqtt_busy(q) || (acked && mqtt_unacked(q) > 0)) &&
	    (now = mono_ms()) < deadline) {
		p.fd = mqtt_fd(q);
		p.events = mqtt_events(q);
		p.revents = 0;
		if (poll(&p, 1, (int)(deadline - now)) == -1 && errno != EINTR)
			break;
		mqtt_io(q, p.revents, mono_ms());
	}
}

static int
signals(void)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		die(HX_IOERR, "signalfd failed");
	return fd;
}

static int
next_signal(int fd)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof si) != (ssize_t)sizeof si)
		return 0;
	return (int)si.ssi_signo;
}

static void
connect_setup(void)
{
	char err[HEART_ERRLEN], *pw = NULL;

	if (o.broker == NULL && (o.broker = getenv("HEART_BROKER")) == NULL)
		o.broker = "mqtt://localhost:1883";
	if (mqtt_url_parse(o.broker, &o.mc.url, err) == -1)
		die(HX_USAGE, err);
	if (!pulse_prefix_valid(o.prefix))
		die(HX_USAGE, "--prefix: not a topic prefix (levels without "
		    "+ or #, not starting with $ or /)");
	if (mqtt_password(o.pwfile, &pw, err) == -1)
		die(HX_CONFIG, err);
	if (pw != NULL && o.mc.username == NULL)
		die(HX_USAGE, "a password needs --username");
	if (pw == NULL && o.mc.username != NULL) {
		snprintf(err, sizeof err, "--username %s: no password: it is "
		    "read from --password-file, else $HEART_MQTT_PASSWORD, "
		    "and neither is given; logging in without one",
		    o.mc.username);
		warn(NULL, err);
	}
	o.mc.password = pw;
	if (o.mc.backoff_max <= 0)
		o.mc.backoff_max = 30000;
	if ((q = mqtt_new(&o.mc, err)) == NULL)
		die(HX_CONFIG, err);
	if (pw != NULL) {
		explicit_bzero(pw, strlen(pw));
		free(pw);
		o.mc.password = NULL;
	}
}

/* --- the publisher --- */

/*
 * An agent whose soul went away: an offline "removed" for those who
 * listen now, then its retained status cleared (an empty retained
 * message), so that no snapshot or dashboard keeps it for ever.
 */
static void
retire(struct fleet_agent *a)
{
	char topic[512], *msg;
	struct pulse_agentinfo pa;

	fleet_agent_info(a, &pa);
	pulse_topic(topic, sizeof topic, o.prefix, pa.id, "status");
	node.agents = (long long)fleet_size(fleet);
	msg = pulse_status(&node, &pa, "offline", "removed", time(NULL));
	mqtt_publish(q, topic, msg, (int)strlen(msg), 1, 0, 0);
	mqtt_publish(q, topic, "", 0, 1, 1, 0);
	free(msg);
}

static void
publish_status(struct fleet_agent *a, const char *status,
    const char *reason)
{
	char topic[512], *msg;
	struct pulse_agentinfo pa;

	if (a != NULL) {
		fleet_agent_info(a, &pa);
		pulse_topic(topic, sizeof topic, o.prefix, pa.id, "status");
	} else
		pulse_topic(topic, sizeof topic, o.prefix, NULL, node.id);
	node.agents = (long long)fleet_size(fleet);
	msg = pulse_status(&node, a ? &pa : NULL, status, reason, time(NULL));
	mqtt_publish(q, topic, msg, (int)strlen(msg), 1, 1, 0);
	free(msg);
}

static void
dial(long long now)
{
	char err[HEART_ERRLEN], topic[512], *will;
	static int told;
	long long b;

	if (pulse_bdseq_next(node.id, born, &b, err) == -1 && !told++)
		fprintf(stderr, "heart-pulse: birth sequence: %s (counting "
		    "in memory)\n", err);
	node.bdseq = b;
	node.agents = -1;
	pulse_topic(topic, sizeof topic, o.prefix, NULL, node.id);
	will = pulse_status(&node, NULL, "offline", "will", 0);
	if (mqtt_will(q, topic, will, 1, err) == -1)
		warn(NULL, err);
	free(will);
	mqtt_dial(q, now);
}

static void
send_pulse(struct fleet_agent *a, int extra, long long now)
{
	char topic[512], buf[2048];
	struct pulse_agentinfo pa;
	struct timespec wall;
	int n;

	clock_gettime(CLOCK_REALTIME, &wall);
	n = fleet_pulse(fleet, a, extra, o.prefix, host_json, now, &wall,
	    topic, sizeof topic, buf, sizeof buf);
	fleet_agent_info(a, &pa);
	if (n < 0 || mqtt_publish(q, topic, buf, n, 0, 0,
	    (int)pa.interval) == -1) {
		stats.skipped++;
		return;
	}
	if (extra)
		stats.extra++;
	else
		stats.sent++;
}

static void
do_births(void)
{
	struct fleet_agent *a;
	int i;

	for (i = 0; i < BIRTH_BATCH && !mqtt_busy(q) &&
	    mqtt_unacked(q) < mqtt_window(q); i++) {
		if ((a = fleet_unborn(fleet)) == NULL)
			return;
		publish_status(a, "online", NULL);
		stats.births++;
	}
}

static void
do_pulses(long long now)
{
	struct fleet_agent *a;
	long long lag;
	/*
	 * What the last batch wrote is not gone yet (a broker that stalls,
	 * a slow link): this batch is skipped rather than queued behind it,
	 * so memory stays bounded and no stale pulse is sent late.
	 */
	int up = mqtt_state(q) == MQTT_UP && !mqtt_busy(q);

	mqtt_cork(q, 1);
	while (started == 0 && (a = fleet_due(fleet, now, &lag)) != NULL) {
		if (lag > stats.lag_max)
			stats.lag_max = lag;
		if (up)
			send_pulse(a, 0, now);
		else
			stats.skipped++;
	}
	while ((a = fleet_changed(fleet)) != NULL)
		if (up)
			send_pulse(a, 1, now);
	while (up && (a = fleet_gone(fleet)) != NULL) {	/* else later */
		retire(a);
		fleet_agent_free(a);
	}
	mqtt_cork(q, 0);
}

static void
print_stats(void)
{
	printf("{\"agents\":%zu,\"sent\":%llu,\"extra\":%llu,\"skipped\":%llu,"
	    "\"births\":%llu,\"connects\":%d,\"lag_max_ms\":%lld,"
	    "\"connected\":%s,\"window\":%d}\n", fleet_size(fleet), stats.sent,
	    stats.extra, stats.skipped, stats.births, stats.connects,
	    stats.lag_max, mqtt_state(q) == MQTT_UP ? "true" : "false",
	    mqtt_window(q));
	fflush(stdout);
}

static long long
load(long long now)
{
	char err[HEART_ERRLEN];
	long long n;

	n = fleet_load(fleet, o.souls, o.nsouls, o.dir, now, err);
	print_warnings();
	if (n == -1)
		warn(NULL, err);
	return n;
}

static void
goodbye(void)
{
	struct fleet_agent *a;
	long long deadline = mono_ms() + SHUTDOWN_MS;

	notify("STOPPING=1");
	if (mqtt_state(q) != MQTT_UP)
		return;
	publish_status(NULL, "offline", "shutdown");
	fleet_unborn_all(fleet);
	while ((a = fleet_unborn(fleet)) != NULL && mono_ms() < deadline) {
		publish_status(a, "offline", "shutdown");
		if (mqtt_busy(q))
			flush(deadline, 0);
	}
	flush(deadline, 1);
	if (mqtt_busy(q) || mqtt_unacked(q) > 0)
		return;		/* no clean goodbye: the will says it */
	mqtt_disconnect(q);
	flush(deadline, 0);
}

static void
set_identity(void)
{
	json_t *h;
	char *s;

	if (gethostname(host, sizeof host - 1) == -1)
		snprintf(host, sizeof host, "localhost");
	h = json_string(host);
	s = h != NULL ? json_dumps(h, JSON_ENCODE_ANY) : NULL;
	snprintf(host_json, sizeof host_json, "%s", s ? s : "null");
	free(s);
	json_decref(h);
	if (o.mc.client_id == NULL) {
		pulse_node_name(host, o.watch ? (long)getpid() : 0,
		    client_id, sizeof client_id);
		o.mc.client_id = client_id;
	}
	node.id = o.mc.client_id;
	node.host = host;
	node.pid = (long)getpid();
	node.since = time(NULL);
}

static int
on_signal(int sfd, long long now)
{
	int sig;

	while ((sig = next_signal(sfd)) != 0) {
		if (sig == SIGTERM || sig == SIGINT)
			return 1;
		if (sig == SIGUSR1)
			print_stats();
		if (sig == SIGHUP) {
			notify("RELOADING=1");
			load(now);
			notify("READY=1");
		}
	}
	return 0;
}

/*
 * Publishes the broker refused (its ACL), each topic said once: the
 * account may not write it, and nothing of it reaches a subscriber.
 */
static void
refused(void)
{
	static json_t *said;
	char topic[512], why[128], m[1024];

	while (mqtt_refused(q, topic, sizeof topic, why, sizeof why)) {
		if (said == NULL)
			said = json_object();
		if (json_object_get(said, topic) != NULL)
			continue;
		json_object_set_new(said, topic, json_true());
		snprintf(m, sizeof m, "the broker refused it (%s): the "
		    "account %s may not write it; add the agent to the "
		    "account's block in the broker's ACL (heart-pulse --acl)",
		    why, o.mc.username ? o.mc.username : "(anonymous)");
		warn(topic, m);
	}
}

/* Socket work; a new connection announces the node and its agents. */
static void
io(short revents, long long now)
{
	char err[HEART_ERRLEN];
	static int told;
	unsigned ev;

	ev = mqtt_io(q, revents, now);
	refused();
	if (ev == 0)
		return;
	report(ev);
	if (ev & MQTT_EV_UP) {
		born = node.bdseq;	/* a connection: the sequence counts it */
		if (pulse_bdseq_save(node.id, born, err) == -1 && !told++)
			fprintf(stderr, "heart-pulse: birth sequence: %s "
			    "(counting in memory)\n", err);
		if (started != 0) {
			fleet_rebase(fleet, now - started);
			started = 0;
		}
		publish_status(NULL, "online", NULL);
		fleet_unborn_all(fleet);
	}
}

/*
 * Our node's topic, read back: a live rival with our client id is a
 * configuration error, said once (the rival carries on).
 */
static void
on_node_status(void *arg, const char *topic, const void *payload, int len,
    int retained)
{
	char m[600];

	(void)arg;
	(void)topic;
	(void)retained;
	if (!pulse_rival(&node, payload, len))
		return;
	snprintf(m, sizeof m, "%s: another heart-pulse is connected with "
	    "the client id %s; two processes need two ids (--client-id)",
	    o.broker, node.id);
	die(HX_CONFIG, m);
}

static int
publisher(void)
{
	struct pollfd p[3];
	long long now, wd, wd_next = 0, until;
	char topic[512];
	int sfd;

	sfd = signals();	/* before the souls: a reload may come */
	set_identity();
	fleet = fleet_new(o.interval, !o.noinotify);
	started = now = mono_ms();
	if (load(now) <= 0)
		die(HX_CONFIG, "no agent to keep alive (no soul loaded)");
	connect_setup();
	pulse_topic(topic, sizeof topic, o.prefix, NULL, node.id);
	mqtt_subscribe(q, topic);
	mqtt_on_message(q, on_node_status, NULL);
	wd = sdnotify_watchdog() / 2;
	notify("READY=1");
	for (;;) {
		now = mono_ms();
		if (mqtt_state(q) == MQTT_DOWN && now >= mqtt_retry_at(q))
			dial(now);
		io(0, now);
		if (mqtt_state(q) == MQTT_UP)
			do_births();
		do_pulses(now);
		print_warnings();
		if (wd > 0 && now >= wd_next) {
			notify("WATCHDOG=1");
			wd_next = now + wd;
		}
		until = started ? LLONG_MAX : fleet_next_due(fleet);
		if (wd > 0 && wd_next < until)
			until = wd_next;
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		p[1] = (struct pollfd){ fleet_watch_fd(fleet), POLLIN, 0 };
		p[2] = (struct pollfd){ mqtt_fd(q), mqtt_events(q), 0 };
		if (mqtt_state(q) == MQTT_UP && mqtt_busy(q) == 0 &&
		    mqtt_unacked(q) < mqtt_window(q) &&
		    fleet_unborn_pending(fleet))
			until = now;
		if (poll(p, 3, poll_timeout(now, until)) == -1 &&
		    errno != EINTR)
			die(HX_IOERR, "poll failed");
		now = mono_ms();
		if (p[2].revents)
			io(p[2].revents, now);
		if (p[1].revents)
			fleet_watch_read(fleet, time(NULL));
		if (p[0].revents && on_signal(sfd, now))
			break;
	}
	goodbye();
	mqtt_free(q);
	fleet_free(fleet);
	close(sfd);
	return HX_OK;
}

/* --- the watcher --- */

struct watchctx {
	struct watch *w;
	json_t	*events;
};

static void
on_message(void *arg, const char *topic, const void *payload, int len,
    int retained)
{
	struct watchctx *c = arg;

	watch_message(c->w, topic, payload, len, retained, mono_ms(),
	    time(NULL), c->events);
}

static void
print_events(json_t *events)
{
	size_t i;
	json_t *e;
	char *s;

	json_array_foreach(events, i, e) {
		if ((s = json_dumps(e, JSON_COMPACT)) != NULL)
			puts(s);
		free(s);
	}
	json_array_clear(events);
	fflush(stdout);
}

static int
print_snapshot(struct watch *w, long long since)
{
	size_t off, i;
	json_t *arr = watch_snapshot(w, since, &off), *e;
	char *s, m[600];
	int rc = off > 0 ? HX_NO : HX_OK;

	if (json_array_size(arr) == 0) {
		snprintf(m, sizeof m, "%s: no agent seen under %s/ (a wrong "
		    "--prefix, an ACL that does not let this account read "
		    "it, or no publisher)", o.broker, o.prefix);
		warn(NULL, m);
		rc = HX_NO;
	}
	json_array_foreach(arr, i, e) {
		if ((s = json_dumps(e, JSON_COMPACT)) != NULL)
			puts(s);
		free(s);
	}
	json_decref(arr);
	fflush(stdout);
	return rc;
}

/* The watcher's own connection, in its map and its events. */
static void
watch_report(struct watch *w, unsigned ev, long long now, json_t *out)
{
	report(ev);
	if (ev & (MQTT_EV_DOWN | MQTT_EV_FAIL))
		watch_link(w, 0, mqtt_why(q), now, time(NULL), out);
	if (ev & MQTT_EV_UP)
		watch_link(w, 1, NULL, now, time(NULL), out);
}

static void
watch_subscribe(void)
{
	char t[512];

	snprintf(t, sizeof t, "%s/+/pulse", o.prefix);
	mqtt_subscribe(q, t);
	snprintf(t, sizeof t, "%s/+/status", o.prefix);
	mqtt_subscribe(q, t);
	snprintf(t, sizeof t, "%s/node/+/status", o.prefix);
	mqtt_subscribe(q, t);
}

static int
watcher(void)
{
	struct watchctx c;
	struct pollfd p[2];
	long long now, end, iv = (o.interval > 0 ? o.interval : 10) * 1000;
	long long up_at = -1;	/* when it first connected */
	unsigned ev = 0;
	int sfd, rc = HX_OK, sig;

	sfd = signals();
	set_identity();
	connect_setup();
	c.w = watch_new(o.prefix, o.misses, iv);
	c.events = json_array();
	mqtt_on_message(q, on_message, &c);
	watch_subscribe();
	end = mono_ms() + iv;
	for (;;) {
		now = mono_ms();
		if (mqtt_state(q) == MQTT_DOWN && now >= mqtt_retry_at(q))
			mqtt_dial(q, now);
		if ((ev = mqtt_io(q, 0, now)) != 0)
			watch_report(c.w, ev, now, c.events);
		if (ev & MQTT_EV_UP && up_at < 0)
			up_at = now;
		watch_tick(c.w, now, time(NULL), c.events);
		if (!o.snapshot)
			print_events(c.events);
		json_array_clear(c.events);
		if (o.snapshot && now >= end && (up_at < 0 ||
		    watch_settled(c.w, up_at, now))) {
			rc = up_at >= 0 ? print_snapshot(c.w, up_at) :
			    HX_UNAVAILABLE;
			break;
		}
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		p[1] = (struct pollfd){ mqtt_fd(q), mqtt_events(q), 0 };
		if (poll(p, 2, poll_timeout(now, now + 200)) == -1 &&
		    errno != EINTR)
			die(HX_IOERR, "poll failed");
		if (p[1].revents && (ev = mqtt_io(q, p[1].revents,
		    mono_ms())) != 0)
			watch_report(c.w, ev, mono_ms(), c.events);
		if (ev & MQTT_EV_UP && up_at < 0)
			up_at = mono_ms();
		if (!o.snapshot)
			print_events(c.events);
		if (p[0].revents && ((sig = next_signal(sfd)) == SIGTERM ||
		    sig == SIGINT))
			break;
	}
	if (rc == HX_UNAVAILABLE)
		fprintf(stderr, "heart-pulse: %s: no connection within "
		    "%llds\n", o.broker, iv / 1000);
	mqtt_disconnect(q);
	mqtt_free(q);
	watch_free(c.w);
	json_decref(c.events);
	close(sfd);
	return rc;
}

/* --acl: the broker ACL block of this host's account, for its souls. */
static int
acl(void)
{
	struct fleet_agent *a;
	struct pulse_agentinfo pa;
	const char **ids = NULL;
	size_t n = 0;
	char *s;

	set_identity();
	fleet = fleet_new(o.interval, 0);
	if (load(mono_ms()) <= 0)
		die(HX_CONFIG, "no agent to keep alive (no soul loaded)");
	if (!pulse_prefix_valid(o.prefix))
		die(HX_USAGE, "--prefix: not a topic prefix (levels without "
		    "+ or #, not starting with $ or /)");
	fleet_unborn_all(fleet);
	while ((a = fleet_unborn(fleet)) != NULL) {
		if ((ids = realloc(ids, (n + 1) * sizeof *ids)) == NULL)
			abort();
		fleet_agent_info(a, &pa);
		ids[n++] = pa.id;
	}
	s = pulse_acl(o.prefix, o.mc.username ? o.mc.username :
	    o.mc.client_id, ids, n);
	fputs(s, stdout);
	free(s);
	free(ids);
	fleet_free(fleet);
	return HX_OK;
}

static void
add_soul(const char *path)
{
	o.souls = realloc(o.souls, (o.nsouls + 1) * sizeof *o.souls);
	if (o.souls == NULL)
		abort();
	o.souls[o.nsouls++] = (char *)path;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "soul", required_argument, NULL, 's' },
		{ "souls", required_argument, NULL, 'S' },
		{ "broker", required_argument, NULL, 'b' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "keepalive", required_argument, NULL, 'k' },
		{ "backoff-max", required_argument, NULL, 'B' },
		{ "username", required_argument, NULL, 'u' },
		{ "password-file", required_argument, NULL, 'P' },
		{ "password", required_argument, NULL, 'X' },
		{ "cafile", required_argument, NULL, 'C' },
		{ "cert", required_argument, NULL, 'E' },
		{ "key", required_argument, NULL, 'K' },
		{ "watch", no_argument, NULL, 'w' },
		{ "snapshot", no_argument, NULL, 'n' },
		{ "acl", no_argument, NULL, 'A' },
		{ "misses", required_argument, NULL, 'm' },
		{ "no-inotify", no_argument, NULL, 'N' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rc;

	while ((c = getopt_long(argc, argv, "s:S:b:p:i:c:k:B:u:P:C:E:K:wnm:"
	    "Nvh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': add_soul(optarg); break;
		case 'S': o.dir = optarg; break;
		case 'b': o.broker = optarg; break;
		case 'p': o.prefix = optarg; break;
		case 'i': o.interval = dur_opt("interval", optarg); break;
		case 'c':
			if (!id_valid(optarg))
				die(HX_USAGE, "--client-id: use 1 to 64 of "
				    "A-Z a-z 0-9 _ . -");
			o.mc.client_id = optarg;
			break;
		case 'k':
			o.mc.keepalive = (int)dur_opt("keepalive", optarg);
			if (o.mc.keepalive < 5 || o.mc.keepalive > 65535)
				die(HX_USAGE, "--keepalive: from 5s to 18h");
			break;
		case 'B':
			o.mc.backoff_max = dur_opt("backoff-max", optarg) *
			    1000;
			break;
		case 'u': o.mc.username = optarg; break;
		case 'P': o.pwfile = optarg; break;
		case 'X':
			die(HX_USAGE, "--password: a password is never taken "
			    "on the command line (ps shows it); use "
			    "HEART_MQTT_PASSWORD or --password-file");
		case 'C': o.mc.cafile = optarg; break;
		case 'E': o.mc.certfile = optarg; break;
		case 'K': o.mc.keyfile = optarg; break;
		case 'w': o.watch = 1; break;
		case 'n': o.snapshot = o.watch = 1; break;
		case 'A': o.acl = 1; break;
		case 'm':
			if (num_parse(optarg, 1, 1000, &o.misses) == -1) {
				char m[96], why[64];
				snprintf(m, sizeof m, "--misses: %s", num_why(
				    optarg, 1, 1000, why, sizeof why));
				die(HX_USAGE, m);
			}
			break;
		case 'N': o.noinotify = 1; break;
		case 'v': o.verbose = 1; break;
		case 'h':
			fputs(usage_text, stdout);
			return HX_OK;
		case 'V':
			puts("heart-pulse " HEART_VERSION);
			return HX_OK;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (o.watch && (o.nsouls > 0 || o.dir != NULL))
		die(HX_USAGE, "--watch takes no souls");
	if (!o.watch && o.nsouls == 0 && o.dir == NULL)
		usage();
	if (o.acl && o.watch)
		die(HX_USAGE, "--acl is for the publisher's souls, not --watch");
	rc = o.watch ? watcher() : o.acl ? acl() : publisher();
	free(o.souls);
	return rc;
}
