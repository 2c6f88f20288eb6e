/*
 * broker.c - the broker connection as both ends of the pulse chamber
 * use it (publisher.c, watcher.c): its defaults, the topic prefix, the
 * process's name on the broker, the credentials, what its events say
 * (and a rival publisher's), how long a poll may wait, and a flush
 * before the end.
 *
 * Invariant: the password is in memory only from broker_open's reading
 * to mqtt_new's copy, then wiped.  A failure that retrying cannot mend
 * (the broker refused our credentials, another process has our client
 * id) is kept in `fatal' with its message, and stops the caller; an
 * outage is said once, and said again only when it ends.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartpulse.h"

#define BROKER_URL	"mqtt://localhost:1883"
#define BROKER_PREFIX	"heart"
#define BACKOFF_MAX	30000	/* ms, --backoff-max's default */

/* A failure that stops the caller; the first one is kept. */
static void
broker_fatal(struct broker *b, const char *fmt, ...)
{
	va_list ap;

	if (b->fatal)
		return;
	b->fatal = 1;
	va_start(ap, fmt);
	vsnprintf(b->why, sizeof b->why, fmt, ap);
	va_end(ap);
}

/*
 * The default client id of a publisher on host, its node name:
 * heart-pulse-HOST; of a watcher (pid > 0): heart-watch-HOST-PID.  The
 * host is cut to fit an id, and anything an id may not hold is a '-'.
 */
static void
node_name(const char *host, long pid, char *out, size_t n)
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
 * The process's name on the broker: the host it runs on, and its
 * client id (--client-id, else node_name's: a watcher's carries
 * its pid).  No I/O but gethostname.
 */
void
broker_init(struct broker *b, const struct pulse_opts *o, int watcher)
{
	memset(b, 0, sizeof *b);
	b->o = o;
	b->watcher = watcher;
	b->prefix = o->prefix != NULL ? o->prefix : BROKER_PREFIX;
	if (gethostname(b->host, sizeof b->host - 1) == -1)
		snprintf(b->host, sizeof b->host, "localhost");
	b->mc.client_id = o->client_id;
	if (b->mc.client_id == NULL) {
		node_name(b->host, watcher ? (long)getpid() : 0,
		    b->client_id, sizeof b->client_id);
		b->mc.client_id = b->client_id;
	}
}

/*
 * Whether the topic prefix is one: one or more levels, none empty, no
 * wildcard, not starting with '$' (the broker's own).  0, or HX_USAGE
 * with err.
 */
int
broker_prefix_check(const struct broker *b, char *err)
{
	const char *p = b->prefix;
	size_t i, n = strlen(p);

	if (n == 0 || n > 200 || p[0] == '$' || p[0] == '/' ||
	    p[n - 1] == '/' || strstr(p, "//") != NULL)
		goto bad;
	for (i = 0; i < n; i++)
		if (p[i] == '+' || p[i] == '#' || (unsigned char)p[i] < 0x20)
			goto bad;
	return 0;
bad:
	errf(err, "--prefix: not a topic prefix (levels without + or #, "
	    "not starting with $ or /)");
	return HX_USAGE;
}

/*
 * The broker password: from the file (which must not be readable by
 * others), else from $HEART_MQTT_PASSWORD, else none (*out NULL).
 */
static int
password(const char *file, char **out, char *err)
{
	char buf[1024];
	struct stat st;
	const char *e;
	ssize_t n;
	int fd;

	*out = NULL;
	if (file == NULL) {
		if ((e = getenv("HEART_MQTT_PASSWORD")) != NULL && *e != '\0')
			*out = xstrdup(e);
		secret_add(*out);
		return 0;
	}
	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		errf(err, "%s: %s", file, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 077) != 0) {
		errf(err, "%s: must be a file only its owner can read "
		    "(chmod 600)", file);
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		errf(err, "%s: %s", file, strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	*out = xstrdup(buf);
	secret_add(*out);
	explicit_bzero(buf, sizeof buf);
	return 0;
}

/*
 * The connection, not yet dialled: the broker (--broker, else
 * $HEART_BROKER, else BROKER_URL), the prefix, the password (its
 * file, else $HEART_MQTT_PASSWORD).  0, or HX_USAGE or HX_CONFIG with
 * err.
 */
int
broker_open(struct broker *b, char *err)
{
	const struct pulse_opts *o = b->o;
	char *pw = NULL;
	int r;

	if ((b->url = o->broker) == NULL &&
	    (b->url = getenv("HEART_BROKER")) == NULL)
		b->url = BROKER_URL;
	if (mqtt_url_parse(b->url, &b->mc.url, err) == -1)
		return HX_USAGE;
	if ((r = broker_prefix_check(b, err)) != 0)
		return r;
	if (password(o->pwfile, &pw, err) == -1)
		return HX_CONFIG;
	if (pw != NULL && o->username == NULL) {
		explicit_bzero(pw, strlen(pw));
		free(pw);
		errf(err, "a password needs --username");
		return HX_USAGE;
	}
	if (pw == NULL && o->username != NULL)
		warningf(NULL, "--username %s: no password: it is read "
		    "from --password-file, else $HEART_MQTT_PASSWORD, and "
		    "neither is given; logging in without one", o->username);
	b->mc.username = o->username;
	b->mc.password = pw;
	b->mc.cafile = o->cafile;
	b->mc.certfile = o->certfile;
	b->mc.keyfile = o->keyfile;
	b->mc.keepalive = o->keepalive;
	b->mc.backoff_max = o->backoff_max > 0 ? o->backoff_max * 1000 :
	    BACKOFF_MAX;
	b->q = mqtt_new(&b->mc, err);
	if (pw != NULL) {
		explicit_bzero(pw, strlen(pw));
		free(pw);
		b->mc.password = NULL;
	}
	return b->q == NULL ? HX_CONFIG : 0;
}

void
broker_close(struct broker *b)
{
	mqtt_free(b->q);
	b->q = NULL;
}

/*
 * What a connection's events say: a refusal of our credentials stops
 * us (it is ours to mend, not the broker's moment to pass), and so
 * does, for a watcher, another client with our id (publishers settle
 * it on the node's topic: publisher.c, the younger gives way, so that
 * a broker that says "taken over" never stops the older one).  An
 * outage is said once, its end too; with --verbose, each.
 */
void
broker_report(struct broker *b, unsigned ev)
{
	char cap[32];

	if (ev & MQTT_EV_DENIED)
		broker_fatal(b, "%s: %s%s: %s (check the account and its "
		    "password on the broker)", b->url, b->mc.username ?
		    "user " : "no user name", b->mc.username ?
		    b->mc.username : "", mqtt_why(b->q));
	if ((ev & MQTT_EV_TAKEN) && b->watcher)
		broker_fatal(b, "%s: another client is connected with the "
		    "client id %s; two processes need two ids (--client-id)",
		    b->url, b->mc.client_id);
	if (b->fatal)
		return;
	if (ev & MQTT_EV_UP) {
		b->connects++;
		if (b->said_down || b->o->verbose)
			warningf(NULL, "%s: connected%s", b->url,
			    mqtt_v5(b->q) ? "" : " (MQTT 3.1.1)");
		b->said_down = 0;
	}
	if ((ev & (MQTT_EV_DOWN | MQTT_EV_FAIL)) && (!b->said_down ||
	    b->o->verbose)) {
		warningf(NULL, "%s: %s: %s; retrying with backoff up to "
		    "%s", b->url, ev & MQTT_EV_DOWN ? "connection lost" :
		    "cannot connect", mqtt_why(b->q),
		    dur_format(b->mc.backoff_max / 1000, cap, sizeof cap));
		b->said_down = 1;
	}
}

/* A live publisher with our client id, the older of two (publisher.c's
 * rule): it carries on, we stop. */
void
broker_rival(struct broker *b)
{
	broker_fatal(b, "%s: another heart-pulse is connected with the "
	    "client id %s; two processes need two ids (--client-id)",
	    b->url, b->mc.client_id);
}

/* How long a poll at now may wait for something due at until. */
int
broker_timeout(const struct broker *b, long long now, long long until)
{
	long long t = until - now;

	if (mqtt_retry_at(b->q) - now < t)
		t = mqtt_retry_at(b->q) - now;
	if (t > 1000)
		t = 1000;	/* keepalive and the watchdog */
	return t < 0 ? 0 : (int)t;
}

/*
 * Wait until what is queued is written (and with acked, until the
 * broker has acknowledged every status: some brokers drop what they
 * have not finished storing when the DISCONNECT comes), or the
 * deadline, or a failure that stops us.
 */
void
broker_flush(struct broker *b, long long deadline, int acked)
{
	struct pollfd p;
	long long now;

	while (!b->fatal && (mqtt_busy(b->q) || (acked &&
	    mqtt_unacked(b->q) > 0)) && (now = mono_ms()) < deadline) {
		mqtt_pollfd(b->q, &p);
		if (poll(&p, 1, (int)(deadline - now)) == -1 && errno != EINTR)
			break;
		mqtt_io(b->q, p.revents, mono_ms());
	}
}

/* The failure that stopped the caller, into err: -1. */
int
broker_failed(const struct broker *b, char *err)
{
	snprintf(err, HEART_ERRLEN, "%s", b->why);
	return -1;
}
