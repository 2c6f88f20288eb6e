/*
 * publisher.c - heart-pulse's publishing end: its agents (pubagents.c)
 * kept alive over one broker connection (broker.c), in the caller's
 * poll loop: publisher_work before each poll, publisher_ready after
 * it; and its node, the process on the broker: the status messages
 * (births and wills, retained), the birth sequence kept across
 * restarts, the rival rule between two publishers with one client id,
 * the broker's ACL for its agents (heart-pulse(1)).  The watching end,
 * the subscriber, is watcher.c.
 *
 * A connection is announced by the node's online status, then the
 * agents' births, BIRTH_BATCH at a time and only while the broker keeps
 * up; each connection's will (its node offline, "will") carries the
 * birth sequence of the attempt (bdseq_next).  Pulses follow the
 * agents' schedule, which starts at the first connection: every slot
 * is moved on by the time that took (pubagents_rebase), so that no
 * agent's first slot passes unsent, however long the broker kept us
 * waiting.  Nothing here waits on the broker: while it is away, or has
 * not written the last batch, slots pass unsent (their sequence numbers
 * are skipped).  A goodbye says offline for the node and each agent
 * within SHUTDOWN_MS, and disconnects cleanly only once the broker has
 * them all; else the will says it.  systemd (Type=notify) hears READY,
 * RELOADING and STOPPING from here, and WATCHDOG every half of its
 * watchdog time.
 */
#include <sys/file.h>

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartint.h"
#include "heartpulse.h"
#include "heartstore.h"

#define SHUTDOWN_MS	5000	/* most a goodbye may take */
#define BIRTH_BATCH	512

struct pulse_node {		/* one publishing process and connection */
	const char *id;		/* the client id */
	const char *host;
	long	 pid;
	time_t	 since;		/* when the process started */
	long long bdseq;	/* birth sequence of this connection */
	long long agents;	/* -1: do not say */
};

struct publisher {
	struct broker b;
	struct pubagents *agents;
	long long nagents;	/* agents, and souls that did not load, */
	size_t	 nbad;		/* as the last load said */
	struct pulse_node node;
	char	 host_json[300];
	long long born;		/* the bdseq of the last connection; 0: none */
	long long started;	/* the schedule's origin; 0 once it runs */
	long long wd, wd_next;	/* the watchdog's period and next, ms */
	int	 told_next, told_save;	/* a birth sequence failure, said */
	int	 told_notify;	/* systemd's, said */
	json_t	*refused;	/* topics the broker refused, said once */
	unsigned long long sent, extra;	/* pulses: scheduled, on a change */
	unsigned long long skipped, births;	/* slots passed unsent; births */
	long long lag_max;	/* ms, the latest a slot was taken */
};

/*
 * Whether process pid has been killed and not yet torn down: SIGKILL
 * pending (kill(2) returns before the kernel ends it), or exiting
 * (PF_EXITING in /proc/PID/stat's flags, flags).
 */
static int
killed(json_int_t pid, unsigned flags)
{
	char path[64], line[128];
	unsigned long long mask;
	FILE *fp;
	int r = (flags & 0x4) != 0;

	snprintf(path, sizeof path, "/proc/%lld/status", (long long)pid);
	if (r || (fp = fopen(path, "re")) == NULL)
		return 1;
	while (!r && fgets(line, sizeof line, fp) != NULL)
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		    sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
		    (mask & 1ULL << (SIGKILL - 1)) != 0)
			r = 1;
	fclose(fp);
	return r;
}

/*
 * Whether pid is a live heart-pulse on this host: not a zombie, nor one
 * killed a moment ago (a publisher restarted at once after kill -9
 * reads the dead one's status while the kernel is still ending it).
 */
static int
live_pulse(json_int_t pid)
{
	char path[64], line[256], *p, state;
	unsigned flags;
	FILE *fp;
	int r = 0;

	if (pid <= 0 || pid > 0x7fffffff || pulse_pid_gone(pid))
		return 0;
	snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
	if ((fp = fopen(path, "re")) == NULL)
		return 0;
	if (fgets(line, sizeof line, fp) != NULL &&
	    (p = strstr(line, " (heart-pulse) ")) != NULL &&
	    sscanf(p + 15, "%c %*d %*d %*d %*d %*d %u", &state, &flags) == 2)
		r = state != 'Z' && state != 'X';
	fclose(fp);
	return r && !killed(pid, flags);
}

/*
 * Whether rival (a node status's fields) is older than us: it started
 * first, or in the same second with a smaller pid (one host) or host
 * name (two).  A status without "since" (an older heart-pulse said
 * none) is older.  Both processes apply the same order, so exactly one
 * of them gives way.
 */
static int
older(const struct pulse_node *node, json_t *j, const char *host,
    json_int_t pid)
{
	const char *s;
	time_t t;

	s = json_string_value(json_object_get(j, "since"));
	if (s == NULL || clock_parse_utc(s, &t) == -1)
		return 1;
	if (t != node->since)
		return t < node->since;
	if (strcmp(host, node->host) != 0)
		return strcmp(host, node->host) < 0;
	return pid < node->pid;
}

/*
 * Whether a node status (payload) read back on our own node's topic is
 * a rival's: our node name, from another process that is alive (on
 * another host, or a heart-pulse on this one) and older than us,
 * saying it is online or leaving its will (the broker publishes the
 * will of a live client whose id a new connection took).  A status a
 * dead process left retained (a crash, a reboot) is no rival.  Two
 * processes with one client id push each other off the broker for
 * ever, and only one of them may carry on: the older, so that a second
 * process started by mistake never stops the one that was working,
 * however late the first one reads the second's birth or will.
 */
static int
rival(const struct pulse_node *node, const char *payload, int len)
{
	const char *s, *n, *h, *why;
	json_int_t pid;
	json_t *j;
	int r = 0;

	if (len <= 0 || (j = json_loadb(payload, (size_t)len, 0, NULL)) == NULL)
		return 0;
	s = json_string_value(json_object_get(j, "status"));
	n = json_string_value(json_object_get(j, "node"));
	h = json_string_value(json_object_get(j, "host"));
	why = json_string_value(json_object_get(j, "reason"));
	pid = json_integer_value(json_object_get(j, "pid"));
	if (s != NULL && n != NULL && h != NULL && strcmp(n, node->id) == 0 &&
	    (strcmp(s, "online") == 0 || (why != NULL &&
	    strcmp(why, "will") == 0)))
		r = (strcmp(h, node->host) != 0 ? strcmp(s, "online") == 0 :
		    pid != node->pid && live_pulse(pid)) &&
		    older(node, j, h, pid);
	json_decref(j);
	return r;
}

/*
 * The broker ACL block of one publishing host (mosquitto's acl_file):
 * its account may write its agents' pulse and status topics, and
 * nothing else (its node's status comes from the shared pattern of
 * contrib/mosquitto/heart.acl).  ids[n] are its agents.
 */
static char *
acl_block(const char *prefix, const char *user, const char *const *ids,
    size_t n)
{
	size_t i, len = strlen(user) + 80;
	char *s, *p;

	for (i = 0; i < n; i++)
		len += 2 * (strlen(prefix) + strlen(ids[i]) + 24);
	p = s = xcalloc(1, len);
	p += sprintf(p, "# heart-pulse --acl: %zu agent%s\nuser %s\n", n,
	    n == 1 ? "" : "s", user);
	for (i = 0; i < n; i++)
		p += sprintf(p, "topic write %s/%s/pulse\n"
		    "topic write %s/%s/status\n", prefix, ids[i], prefix,
		    ids[i]);
	return s;
}

/*
 * A retained status message, for an agent (pa non-NULL) or for the
 * node (the process and its connection).  `reason' (may be NULL) says
 * why an offline was sent: "shutdown", "removed", "will".
 */
static char *
node_status(const struct pulse_node *node, const struct pulse_agentinfo
    *pa, const char *status, const char *reason, time_t now)
{
	char at[32];
	json_t *j;
	char *s;

	j = json_pack("{s:i,s:s}", "v", 1, "status", status);
	if (pa != NULL) {
		json_object_set_new(j, "agent", json_string(pa->id));
		json_object_set_new(j, "interval",
		    json_integer(pa->interval));
		json_object_set_new(j, "misses", json_integer(pa->misses));
	}
	json_object_set_new(j, "node", json_string(node->id));
	json_object_set_new(j, "bdseq", json_integer(node->bdseq));
	json_object_set_new(j, "host", json_string(node->host));
	json_object_set_new(j, "pid", json_integer(node->pid));
	if (pa == NULL && node->since > 0) {
		clock_utc(node->since, at, sizeof at);
		json_object_set_new(j, "since", json_string(at));
	}
	if (pa == NULL && node->agents >= 0)
		json_object_set_new(j, "agents", json_integer(node->agents));
	if (reason != NULL)
		json_object_set_new(j, "reason", json_string(reason));
	if (now > 0) {
		clock_utc(now, at, sizeof at);
		json_object_set_new(j, "at", json_string(at));
	}
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (s == NULL)
		abort();
	return s;
}

/*
 * The birth sequence of node `id' (Sparkplug's bdSeq) counts its
 * connections, and grows across restarts: the last one that connected
 * is kept in STATE/pulse/ID.json.  bdseq_next says the number a
 * next connection would have (the will of an attempt must carry it)
 * and writes nothing; bdseq_save records it once the broker has
 * accepted that connection.  On error *out still gets last + 1 (the
 * caller may carry on with its own count) and -1 is returned.
 */
static int
bdseq_file(const char *id, char *dir, size_t n, char *name, char *err)
{
	if (!id_valid(id)) {
		errf(err, "invalid node id");
		return -1;
	}
	snprintf(name, HEART_IDMAX + 8, "%s.json", id);
	return state_subdir("pulse", dir, n, err);
}

static int
bdseq_next(const char *id, long long last, long long *out, char *err)
{
	char dir[4096], name[HEART_IDMAX + 8];
	json_t *j = NULL, *v;

	*out = last + 1;
	if (bdseq_file(id, dir, sizeof dir, name, err) == -1 ||
	    state_read_json(dir, name, &j, err) == -1)
		return -1;
	v = json_object_get(j, "bdseq");
	if (json_is_integer(v) && json_integer_value(v) >= *out)
		*out = json_integer_value(v) + 1;
	json_decref(j);
	return 0;
}

static int
bdseq_save(const char *id, long long bdseq, char *err)
{
	char dir[4096], name[HEART_IDMAX + 8], lock[HEART_IDMAX + 8];
	json_t *j = NULL;
	json_int_t had;
	int fd, r = -1;

	if (bdseq_file(id, dir, sizeof dir, name, err) == -1)
		return -1;
	snprintf(lock, sizeof lock, "%s.lock", id);
	if ((fd = state_lock(dir, lock, LOCK_EX, err)) < 0)
		return -1;
	if (state_read_json(dir, name, &j, err) == -1)
		goto out;
	had = json_integer_value(json_object_get(j, "bdseq"));
	json_decref(j);
	j = NULL;
	if (had >= bdseq) {
		r = 0;		/* never backwards */
		goto out;
	}
	j = json_pack("{s:I}", "bdseq", (json_int_t)bdseq);
	r = state_write_json(dir, name, j, err);
out:
	json_decref(j);
	state_unlock(fd);
	return r;
}

/* systemd's notification; a failure is said once. */
static void
notify(struct publisher *p, const char *state)
{
	char err[HEART_ERRLEN];

	if (sdnotify_send(state, err) == -1 && !p->told_notify++)
		warning(NULL, err);
}

static long long
load(struct publisher *p, long long now)
{
	const struct pulse_opts *o = p->b.o;
	char err[HEART_ERRLEN];
	long long n;

	n = pubagents_load(p->agents, o->souls, o->nsouls, o->dir, now,
	    &p->nbad, err);
	if (n == -1)
		warning(NULL, err);
	else
		p->nagents = n;
	return n;
}

static void
identity(struct publisher *p)
{
	json_t *h;
	char *s;

	h = json_string(p->b.host);
	s = h != NULL ? json_dumps(h, JSON_ENCODE_ANY) : NULL;
	snprintf(p->host_json, sizeof p->host_json, "%s", s ? s : "null");
	free(s);
	json_decref(h);
	p->node.id = p->b.mc.client_id;
	p->node.host = p->b.host;
	p->node.pid = (long)getpid();
	p->node.since = time(NULL);
}

/*
 * An agent whose soul went away: an offline "removed" for those who
 * listen now, then its retained status cleared (an empty retained
 * message), so that no snapshot or dashboard keeps it for ever.
 */
static void
retire(struct publisher *p, struct pubagent *a)
{
	char topic[512], *msg;
	struct pulse_agentinfo pa;

	pubagent_info(a, &pa);
	pulse_topic(topic, sizeof topic, p->b.prefix, pa.id, "status");
	p->node.agents = p->nagents;
	msg = node_status(&p->node, &pa, "offline", "removed", time(NULL));
	mqtt_publish(p->b.q, topic, msg, (int)strlen(msg), 1, 0, 0);
	mqtt_publish(p->b.q, topic, "", 0, 1, 1, 0);
	free(msg);
}

/* A retained status of agent a, or of the node (a NULL). */
static void
status(struct publisher *p, struct pubagent *a, const char *status,
    const char *reason)
{
	char topic[512], *msg;
	struct pulse_agentinfo pa;

	if (a != NULL) {
		pubagent_info(a, &pa);
		pulse_topic(topic, sizeof topic, p->b.prefix, pa.id,
		    "status");
	} else
		pulse_topic(topic, sizeof topic, p->b.prefix, NULL,
		    p->node.id);
	p->node.agents = p->nagents;
	msg = node_status(&p->node, a ? &pa : NULL, status, reason,
	    time(NULL));
	mqtt_publish(p->b.q, topic, msg, (int)strlen(msg), 1, 1, 0);
	free(msg);
}

static void
bdseq_failed(int *told, const char *err)
{
	if (!(*told)++)
		warningf(NULL, "birth sequence: %s (counting in memory)", err);
}

/* A new attempt, its will carrying the birth sequence it would have. */
static void
dial(struct publisher *p, long long now)
{
	char err[HEART_ERRLEN], topic[512], *will;
	long long b;

	if (bdseq_next(p->node.id, p->born, &b, err) == -1)
		bdseq_failed(&p->told_next, err);
	p->node.bdseq = b;
	p->node.agents = -1;
	pulse_topic(topic, sizeof topic, p->b.prefix, NULL, p->node.id);
	will = node_status(&p->node, NULL, "offline", "will", 0);
	if (mqtt_will(p->b.q, topic, will, 1, err) == -1)
		warning(NULL, err);
	free(will);
	mqtt_dial(p->b.q, now);
}

static void
send_pulse(struct publisher *p, struct pubagent *a, int extra,
    long long now)
{
	char topic[512], buf[2048];
	struct pulse_agentinfo pa;
	struct timespec wall;
	int n;

	clock_gettime(CLOCK_REALTIME, &wall);
	n = pubagents_pulse(p->agents, a, extra, p->host_json, now, &wall, buf,
	    sizeof buf);
	pubagent_info(a, &pa);
	if (n < 0 || pulse_topic(topic, sizeof topic, p->b.prefix, pa.id,
	    "pulse") == -1 || mqtt_publish(p->b.q, topic, buf, n, 0, 0,
	    (int)pa.interval) == -1) {
		p->skipped++;
		return;
	}
	if (extra)
		p->extra++;
	else
		p->sent++;
}

static void
births(struct publisher *p)
{
	struct pubagent *a;
	int i;

	for (i = 0; i < BIRTH_BATCH && !mqtt_busy(p->b.q) &&
	    mqtt_unacked(p->b.q) < mqtt_window(p->b.q); i++) {
		if ((a = pubagents_unborn(p->agents)) == NULL)
			return;
		status(p, a, "online", NULL);
		p->births++;
	}
}

static void
pulses(struct publisher *p, long long now)
{
	struct pubagent *a;
	long long lag;
	/*
	 * What the last batch wrote is not gone yet (a broker that stalls,
	 * a slow link): this batch is skipped rather than queued behind it,
	 * so memory stays bounded and no stale pulse is sent late.
	 */
	int up = mqtt_up(p->b.q) && !mqtt_busy(p->b.q);

	mqtt_cork(p->b.q, 1);
	while (p->started == 0 && (a = pubagents_due(p->agents, now, &lag)) !=
	    NULL) {
		if (lag > p->lag_max)
			p->lag_max = lag;
		if (up)
			send_pulse(p, a, 0, now);
		else
			p->skipped++;
	}
	while ((a = pubagents_changed(p->agents)) != NULL)
		if (up)
			send_pulse(p, a, 1, now);
	/* the gone are retired once connected, else later */
	while (up && (a = pubagents_gone(p->agents)) != NULL)
		retire(p, a);
	mqtt_cork(p->b.q, 0);
}

/*
 * Publishes the broker refused (its ACL), each topic said once: the
 * account may not write it, and nothing of it reaches a subscriber.
 */
static void
refused(struct publisher *p)
{
	char topic[512], why[128];

	while (mqtt_refused(p->b.q, topic, sizeof topic, why, sizeof why)) {
		if (p->refused == NULL)
			p->refused = json_object();
		if (json_object_get(p->refused, topic) != NULL)
			continue;
		json_object_set_new(p->refused, topic, json_true());
		warningf(topic, "the broker refused it (%s): the "
		    "account %s may not write it; add the agent to the "
		    "account's block in the broker's ACL (heart-pulse --acl)",
		    why, p->b.mc.username ? p->b.mc.username :
		    "(anonymous)");
	}
}

/* Socket work; a new connection announces the node and its agents. */
static void
io(struct publisher *p, short revents, long long now)
{
	char err[HEART_ERRLEN];
	unsigned ev;

	ev = mqtt_io(p->b.q, revents, now);
	if (p->b.fatal)
		return;		/* a rival (on_node_status) */
	refused(p);
	if (ev == 0)
		return;
	broker_report(&p->b, ev);
	if (p->b.fatal || !(ev & MQTT_EV_UP))
		return;
	p->born = p->node.bdseq;	/* the sequence counts a connection */
	if (bdseq_save(p->node.id, p->born, err) == -1)
		bdseq_failed(&p->told_save, err);
	if (p->started != 0) {
		pubagents_rebase(p->agents, now - p->started);
		p->started = 0;
	}
	status(p, NULL, "online", NULL);
	pubagents_unborn_all(p->agents);
}

/*
 * Our node's topic, read back: a live rival with our client id (the
 * older of two, rival) stops us; the rival carries on.
 */
static void
on_node_status(void *arg, const char *topic, const void *payload, int len,
    int retained)
{
	struct publisher *p = arg;

	(void)topic;
	(void)retained;
	if (rival(&p->node, payload, len))
		broker_rival(&p->b);
}

/*
 * The publisher of o's souls (warnings to warning.c), not yet connected;
 * systemd is told it is ready.  0, or HX_USAGE or HX_CONFIG with err.
 */
int
publisher_open(const struct pulse_opts *o, struct publisher **out,
    char *err)
{
	struct publisher *p = xcalloc(1, sizeof *p);
	char topic[512];
	int r;

	*out = p;
	broker_init(&p->b, o, 0);
	identity(p);
	p->agents = pubagents_new(o->interval, !o->noinotify);
	p->started = mono_ms();
	if (load(p, p->started) <= 0) {
		errf(err, "no agent to keep alive (no soul loaded)");
		return HX_CONFIG;
	}
	if ((r = broker_open(&p->b, err)) != 0)
		return r;
	pulse_topic(topic, sizeof topic, p->b.prefix, NULL, p->node.id);
	mqtt_subscribe(p->b.q, topic);
	mqtt_on_message(p->b.q, on_node_status, p);
	p->wd = sdnotify_watchdog() / 2;
	notify(p, "READY=1");
	return 0;
}

/*
 * What is due before the next poll: a dial, socket work, births,
 * pulses, the watchdog.  0, or -1 with err: a failure that retrying
 * cannot mend (broker.c), the process's end.
 */
int
publisher_work(struct publisher *p, long long now, char *err)
{
	struct mqtt *q = p->b.q;

	if (now >= mqtt_retry_at(q))
		dial(p, now);
	io(p, 0, now);
	if (p->b.fatal)
		return broker_failed(&p->b, err);
	if (mqtt_up(q))
		births(p);
	pulses(p, now);
	if (p->wd > 0 && now >= p->wd_next) {
		notify(p, "WATCHDOG=1");
		p->wd_next = now + p->wd;
	}
	return 0;
}

/*
 * What to poll (fd[0] the broker, fd[1] the souls' changes), and for
 * how long: the poll's timeout in ms.
 */
int
publisher_poll(const struct publisher *p, long long now, struct pollfd *fd)
{
	struct mqtt *q = p->b.q;
	long long until;
	int unborn;

	until = pubagents_poll(p->agents, &fd[1], &unborn);
	if (p->started)
		until = LLONG_MAX;	/* no slot before the first connection */
	if (p->wd > 0 && p->wd_next < until)
		until = p->wd_next;
	mqtt_pollfd(q, &fd[0]);
	if (unborn && mqtt_up(q) && mqtt_busy(q) == 0 &&
	    mqtt_unacked(q) < mqtt_window(q))
		until = now;	/* births() can go on */
	return broker_timeout(&p->b, now, until);
}

/* What the poll saw on fd (publisher_poll's).  0, or -1 as _work. */
int
publisher_ready(struct publisher *p, const struct pollfd *fd, long long now,
    char *err)
{
	if (fd[0].revents)
		io(p, fd[0].revents, now);
	if (p->b.fatal)
		return broker_failed(&p->b, err);
	if (fd[1].revents)
		pubagents_read(p->agents, time(NULL));
	return 0;
}

/* The souls read again (SIGHUP), systemd told. */
void
publisher_reload(struct publisher *p, long long now)
{
	notify(p, "RELOADING=1");
	load(p, now);
	notify(p, "READY=1");
}

/* SIGUSR1's figures (heart-pulse(1)), an object to free. */
json_t *
publisher_stats(const struct publisher *p)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:i,s:I,s:b,s:i,s:I}",
	    "agents", (json_int_t)p->nagents,
	    "sent", (json_int_t)p->sent, "extra", (json_int_t)p->extra,
	    "skipped", (json_int_t)p->skipped, "births", (json_int_t)p->births,
	    "connects", p->b.connects, "lag_max_ms", (json_int_t)p->lag_max,
	    "connected", mqtt_up(p->b.q), "window", mqtt_window(p->b.q),
	    "overdue", (json_int_t)pubagents_overdue(p->agents));
}

/*
 * The clean end (the head comment says how).  0, or -1 with err when a
 * rival stopped us meanwhile.
 */
int
publisher_goodbye(struct publisher *p, char *err)
{
	struct pubagent *a;
	long long deadline = mono_ms() + SHUTDOWN_MS;
	struct mqtt *q = p->b.q;

	notify(p, "STOPPING=1");
	if (!mqtt_up(q))
		return 0;
	status(p, NULL, "offline", "shutdown");
	pubagents_unborn_all(p->agents);
	while ((a = pubagents_unborn(p->agents)) != NULL &&
	    mono_ms() < deadline) {
		status(p, a, "offline", "shutdown");
		if (mqtt_busy(q))
			broker_flush(&p->b, deadline, 0);
		if (p->b.fatal)
			return broker_failed(&p->b, err);
	}
	broker_flush(&p->b, deadline, 1);
	if (p->b.fatal)
		return broker_failed(&p->b, err);
	if (mqtt_busy(q) || mqtt_unacked(q) > 0)
		return 0;	/* no clean goodbye: the will says it */
	mqtt_disconnect(q);
	broker_flush(&p->b, deadline, 0);
	return p->b.fatal ? broker_failed(&p->b, err) : 0;
}

void
publisher_free(struct publisher *p)
{
	if (p != NULL) {
		broker_close(&p->b);
		pubagents_free(p->agents);
		json_decref(p->refused);
	}
	free(p);
}

/*
 * --acl: the broker ACL block of this host's account (--username, else
 * its client id) for o's souls, into *out (to free).  0, or HX_CONFIG
 * or HX_USAGE with err; HX_CONFIG with *out too when a soul did not
 * load (the block leaves its agent out).
 */
int
publisher_acl(const struct pulse_opts *o, char **out, char *err)
{
	struct publisher *p = xcalloc(1, sizeof *p);
	struct pubagent *a;
	struct pulse_agentinfo pa;
	const char **ids = NULL;
	size_t n = 0;
	int r = HX_CONFIG;

	*out = NULL;
	broker_init(&p->b, o, 0);
	p->agents = pubagents_new(o->interval, 0);
	if (load(p, mono_ms()) <= 0) {
		errf(err, "no agent to keep alive (no soul loaded)");
		goto out;
	}
	if ((r = broker_prefix_check(&p->b, err)) != 0)
		goto out;
	pubagents_unborn_all(p->agents);
	while ((a = pubagents_unborn(p->agents)) != NULL) {
		if ((ids = realloc(ids, (n + 1) * sizeof *ids)) == NULL)
			abort();
		pubagent_info(a, &pa);
		ids[n++] = pa.id;
	}
	*out = acl_block(p->b.prefix, o->username ? o->username :
	    p->b.mc.client_id, ids, n);
	if (p->nbad > 0) {
		errf(err, "the block leaves out the agents of the %zu "
		    "soul%s that did not load", p->nbad,
		    p->nbad > 1 ? "s" : "");
		r = HX_CONFIG;
	}
out:
	free(ids);
	publisher_free(p);
	return r;
}
