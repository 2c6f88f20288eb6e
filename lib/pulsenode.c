/*
 * pulsenode.c - the pulse chamber's nodes: a publishing or watching
 * process's client id, the rival rule between two publishers with one
 * id, the broker's ACL for a fleet, the status messages (births and
 * wills, retained), and the birth sequence kept across restarts
 * (heart-pulse(1)).
 */
#include <sys/file.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartpulse.h"

/*
 * The default client id of a publisher on host, its node name:
 * heart-pulse-HOST; of a watcher (pid > 0): heart-watch-HOST-PID.  The
 * host is cut to fit an id, and anything an id may not hold is a '-'.
 */
void
pulse_node_name(const char *host, long pid, char *out, size_t n)
{
	char tail[24] = "";
	size_t i;

	if (pid > 0)
		snprintf(tail, sizeof tail, "-%ld", pid);
	snprintf(out, n, "heart-%s-%.*s%s", pid > 0 ? "watch" : "pulse",
	    (int)(HEART_IDMAX - 12 - strlen(tail)), host, tail);
	for (i = 0; out[i] != '\0'; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", out[i]))
			out[i] = '-';
}

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
int
pulse_rival(const struct pulse_node *node, const char *payload, int len)
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
char *
pulse_acl(const char *prefix, const char *user, const char *const *ids,
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
char *
pulse_status(const struct pulse_node *node, const struct pulse_agentinfo
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
 * is kept in STATE/pulse/ID.json.  pulse_bdseq_next says the number a
 * next connection would have (the will of an attempt must carry it)
 * and writes nothing; pulse_bdseq_save records it once the broker has
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

int
pulse_bdseq_next(const char *id, long long last, long long *out, char *err)
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

int
pulse_bdseq_save(const char *id, long long bdseq, char *err)
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
