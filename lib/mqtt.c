/*
 * mqtt.c - one MQTT connection over libmosquitto, driven by the
 * caller's own poll loop, with a reconnection policy of our own.
 *
 * libmosquitto's reconnect delay only works inside its loop_forever
 * and loop_start, and its "exponential" mode grows quadratically; here
 * the caller polls what mqtt_pollfd() says, hands what poll saw to
 * mqtt_io(), and dials again when mqtt_retry_at() comes, after a delay
 * that doubles from 500 ms up to a cap, with jitter so that a fleet of
 * publishers does not come back in step.  Nothing here blocks but the
 * name lookup of the broker's host.  The program that uses this file is
 * the only one that links libmosquitto.
 *
 * MQTT v5 is asked for first (for message expiry); a broker that
 * refuses the protocol version is dialled again at once with v3.1.1.
 * A broker that refuses the credentials is not a broker that is away:
 * that attempt's events carry MQTT_EV_DENIED, for the caller to stop;
 * nor is one that hands our client id to another client (MQTT v5's
 * "session taken over"): MQTT_EV_TAKEN.
 * A QoS 1 publish the broker refuses (MQTT v5's PUBACK reason, such as
 * "not authorized" from its ACL) is kept for mqtt_refused.
 *
 * libmosquitto formats a log line for every packet while a log callback
 * is set, a pulse's publish among them: ours (on_log, for TLS's reason)
 * is set only from a dial to its CONNACK.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include "heartint.h"
#include "heartpulse.h"

enum { MQTT_DOWN, MQTT_CONNECTING, MQTT_UP };
#define BACKOFF_MIN	500	/* ms */
#define SEND_MAX	1024	/* QoS 1 publishes in flight at most: births
				   are ~400 bytes, so 400 kB at worst */

struct mqtt {
	struct mosquitto *m;
	struct mqtt_url url;
	char	 client_id[HEART_IDMAX + 1];
	int	 keepalive;
	long long backoff_max;
	int	 state;
	int	 v5;
	int	 dialled;	/* connect_async was called once */
	int	 fails;		/* attempts in a row that failed */
	int	 up;		/* this attempt got a CONNACK */
	int	 refused;	/* CONNACK reason of this attempt */
	int	 dropped;	/* the broker's DISCONNECT reason */
	long long retry_at;
	unsigned seed;
	unsigned events;
	char	 why[HEART_ERRLEN];
	char	 tlswhy[160];	/* the TLS library's last error, or "" */
	char	**subs;
	int	 nsubs;
	mosquitto_property *expiry;
	int	 expiry_s;
	json_t	*acks;		/* mid -> topic of QoS 1 publishes unacked */
	int	 window;	/* QoS 1 publishes the broker takes unacked */
	json_t	*denials;	/* [topic, reason] pairs not yet taken */
	void	(*onmsg)(void *, const char *, const void *, int, int);
	void	*arg;
};

int
mqtt_url_parse(const char *s, struct mqtt_url *u, char *err)
{
	const char *h, *rest;
	long long port;
	char why[96];
	int r;

	memset(u, 0, sizeof *u);
	if (strncmp(s, "mqtt://", 7) == 0)
		h = s + 7;
	else if (strncmp(s, "mqtts://", 8) == 0) {
		h = s + 8;
		u->tls = 1;
	} else
		goto bad;
	if (strchr(h, '@') != NULL) {
		errf(err, "%s: credentials do not belong in the URL, where ps "
		    "shows them; use --username and HEART_MQTT_PASSWORD or "
		    "--password-file", "the broker URL");
		return -1;
	}
	port = u->tls ? 8883 : 1883;
	if ((r = url_hostport(h, u->host, sizeof u->host, &port, &rest, why,
	    sizeof why)) == -2) {
		errf(err, "%s: not a broker URL: %s", s, why);
		return -1;
	}
	if (r == -1)
		goto bad;
	if (*rest == '/' && rest[1] != '\0') {
		errf(err, "%s: not a broker URL (it has no path)", s);
		return -1;
	}
	u->port = (int)port;
	return 0;
bad:
	errf(err, "%s: not a broker URL (use mqtt://HOST[:PORT] or "
	    "mqtts://HOST[:PORT])", s);
	return -1;
}

/* Delay before attempt number fails+1: doubling, capped, jittered. */
static long long
mqtt_backoff(int fails, long long max, unsigned *seed)
{
	long long d = BACKOFF_MIN;

	while (fails-- > 1 && d < max)
		d *= 2;
	if (d > max)
		d = max;
	return d / 2 + (long long)(rand_r(seed) % (unsigned)(d / 2 + 1));
}

/* Why the connection failed, as errf writes it (no secret, one line). */
static void
set_why(struct mqtt *q, int rc, int err_no)
{
	if (rc == MOSQ_ERR_ERRNO)
		errf(q->why, "%s", strerror(err_no));
	else if (rc == MOSQ_ERR_EAI)
		errf(q->why, "cannot resolve %s", q->url.host);
	else if (q->dropped == MQTT_RC_SESSION_TAKEN_OVER)
		errf(q->why, "another client took over the client id %s "
		    "(give each process its own --client-id)", q->client_id);
	else if (rc == MOSQ_ERR_TLS && q->tlswhy[0] != '\0')
		errf(q->why, "TLS: %s", q->tlswhy);
	else if (rc == MOSQ_ERR_KEEPALIVE)
		errf(q->why, "the broker did not answer within the keepalive "
		    "(%ds)", q->keepalive);
	else if (rc == MOSQ_ERR_CONN_LOST && q->up)
		errf(q->why, "the broker closed it (it is going down, or "
		    "another client took the client id %s)", q->client_id);
	else if (q->refused > 0)
		errf(q->why, "refused: %s", q->v5 ?
		    mosquitto_reason_string(q->refused) :
		    mosquitto_connack_string(q->refused));
	else
		errf(q->why, "%s", mosquitto_strerror(rc));
}

/* Whether a CONNACK's reason refuses who we are, not the moment. */
static int
denied(const struct mqtt *q)
{
	if (q->v5)
		return q->refused == MQTT_RC_BAD_USERNAME_OR_PASSWORD ||
		    q->refused == MQTT_RC_NOT_AUTHORIZED;
	return q->refused == CONNACK_REFUSED_BAD_USERNAME_PASSWORD ||
	    q->refused == CONNACK_REFUSED_NOT_AUTHORIZED;
}

/* The connection is gone (or never came): plan the next attempt. */
static void
lost(struct mqtt *q, int rc, int err_no, long long now)
{
	set_why(q, rc, err_no);
	q->events |= q->up ? MQTT_EV_DOWN : MQTT_EV_FAIL;
	if (denied(q))
		q->events |= MQTT_EV_DENIED;
	if (q->dropped == MQTT_RC_SESSION_TAKEN_OVER)
		q->events |= MQTT_EV_TAKEN;
	q->tlswhy[0] = '\0';
	q->state = MQTT_DOWN;
	if (q->up)
		q->fails = 0;
	q->fails++;
	q->retry_at = now + mqtt_backoff(q->fails, q->backoff_max, &q->seed);
	q->up = 0;
	q->dropped = 0;
}

static void
on_disconnect(struct mosquitto *m, void *arg, int rc,
    const mosquitto_property *props)
{
	struct mqtt *q = arg;

	(void)m;
	(void)props;
	q->dropped = rc;
}

static void
on_connect(struct mosquitto *m, void *arg, int rc, int flags,
    const mosquitto_property *props)
{
	struct mqtt *q = arg;
	uint16_t rmax = 0;

	(void)flags;
	if (rc != 0) {
		q->refused = rc;
		return;
	}
	/* MQTT v5 3.2.2.3.3: absent, the broker's receive maximum is 65,535 */
	q->window = SEND_MAX;
	if (mosquitto_property_read_int16(props, MQTT_PROP_RECEIVE_MAXIMUM,
	    &rmax, false) != NULL && rmax > 0 && rmax < SEND_MAX)
		q->window = rmax;
	q->state = MQTT_UP;
	q->up = 1;
	q->refused = 0;
	mosquitto_log_callback_set(m, NULL);	/* connected: the TLS is up */
	json_object_clear(q->acks);	/* what an old connection sent */
	q->events |= MQTT_EV_UP;
	if (q->nsubs > 0)
		mosquitto_subscribe_multiple(m, NULL, q->nsubs, q->subs, 1, 0,
		    NULL);
}

static void
on_publish(struct mosquitto *m, void *arg, int mid, int reason,
    const mosquitto_property *props)
{
	struct mqtt *q = arg;
	char key[16];
	json_t *t;

	(void)m;
	(void)props;
	if (json_object_size(q->acks) == 0)
		return;		/* a pulse's QoS 0, sent */
	snprintf(key, sizeof key, "%d", mid);
	if ((t = json_object_get(q->acks, key)) == NULL)
		return;
	if (reason >= 0x80) {
		json_array_append(q->denials, t);
		json_array_append_new(q->denials,
		    json_string(mosquitto_reason_string(reason)));
	}
	json_object_del(q->acks, key);
}

static void
on_message(struct mosquitto *m, void *arg, const struct mosquitto_message
    *msg, const mosquitto_property *props)
{
	struct mqtt *q = arg;

	(void)m;
	(void)props;
	if (q->onmsg != NULL)
		q->onmsg(q->arg, msg->topic, msg->payload, msg->payloadlen,
		    msg->retain);
}

/*
 * libmosquitto says why TLS failed only in its log ("OpenSSL Error[0]:
 * error:0A000086:SSL routines::certificate verify failed"): keep the
 * reason, the text after the last colon.
 */
static void
on_log(struct mosquitto *m, void *arg, int level, const char *s)
{
	struct mqtt *q = arg;
	const char *r;

	(void)m;
	if (level != MOSQ_LOG_ERR || strncmp(s, "OpenSSL Error", 13) != 0 ||
	    q->tlswhy[0] != '\0')
		return;
	r = strrchr(s, ':');
	snprintf(q->tlswhy, sizeof q->tlswhy, "%s", r[1] == ' ' ? r + 2 :
	    r + 1);
}

/* A TLS file named by an option: it must be there and readable. */
static int
tls_file(const char *opt, const char *file, char *err)
{
	int fd;

	if (file == NULL)
		return 0;
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1) {
		errf(err, "%s %s: %s", opt, file, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* A key file with a passphrase is refused rather than asked for. */
static int
no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)userdata;
	return 0;
}

struct mqtt *
mqtt_new(const struct mqtt_conf *c, char *err)
{
	struct mqtt *q;
	int rc;

	mosquitto_lib_init();
	q = xcalloc(1, sizeof *q);
	q->url = c->url;
	snprintf(q->client_id, sizeof q->client_id, "%s",
	    c->client_id ? c->client_id : "(made up)");
	q->keepalive = c->keepalive > 0 ? c->keepalive : 30;
	q->backoff_max = c->backoff_max > BACKOFF_MIN ? c->backoff_max :
	    BACKOFF_MIN;
	q->seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	q->v5 = 1;
	if ((q->m = mosquitto_new(c->client_id, 1, q)) == NULL) {
		errf(err, "cannot set up an MQTT client: %s",
		    strerror(errno));
		free(q);
		return NULL;
	}
	mosquitto_int_option(q->m, MOSQ_OPT_PROTOCOL_VERSION,
	    MQTT_PROTOCOL_V5);
	mosquitto_int_option(q->m, MOSQ_OPT_TCP_NODELAY, 1);
	mosquitto_int_option(q->m, MOSQ_OPT_SEND_MAXIMUM, SEND_MAX);
	mosquitto_connect_v5_callback_set(q->m, on_connect);
	mosquitto_message_v5_callback_set(q->m, on_message);
	mosquitto_disconnect_v5_callback_set(q->m, on_disconnect);
	mosquitto_publish_v5_callback_set(q->m, on_publish);
	q->acks = json_object();
	q->denials = json_array();
	if (c->username != NULL && (rc = mosquitto_username_pw_set(q->m,
	    c->username, c->password)) != MOSQ_ERR_SUCCESS) {
		errf(err, "--username: %s", mosquitto_strerror(rc));
		goto fail;
	}
	if (!c->url.tls && (c->cafile || c->certfile || c->keyfile)) {
		errf(err, "--cafile, --cert and --key need an mqtts:// URL");
		goto fail;
	}
	if ((c->certfile == NULL) != (c->keyfile == NULL)) {
		errf(err, "--cert and --key go together");
		goto fail;
	}
	if (tls_file("--cafile", c->cafile, err) == -1 ||
	    tls_file("--cert", c->certfile, err) == -1 ||
	    tls_file("--key", c->keyfile, err) == -1)
		goto fail;
	if (c->url.tls && (rc = mosquitto_tls_set(q->m, c->cafile,
	    c->cafile ? NULL : "/etc/ssl/certs", c->certfile, c->keyfile,
	    no_passphrase)) != MOSQ_ERR_SUCCESS) {
		errf(err, "TLS: %s: %s", c->certfile ? c->certfile :
		    c->cafile ? c->cafile : "/etc/ssl/certs",
		    mosquitto_strerror(rc));
		goto fail;
	}
	return q;
fail:
	mqtt_free(q);
	return NULL;
}

void
mqtt_free(struct mqtt *q)
{
	int i;

	if (q == NULL)
		return;
	mosquitto_destroy(q->m);
	mosquitto_property_free_all(&q->expiry);
	json_decref(q->acks);
	json_decref(q->denials);
	for (i = 0; i < q->nsubs; i++)
		free(q->subs[i]);
	free(q->subs);
	free(q);
	mosquitto_lib_cleanup();
}

void
mqtt_on_message(struct mqtt *q, void (*fn)(void *, const char *,
    const void *, int, int), void *arg)
{
	q->onmsg = fn;
	q->arg = arg;
}

/* Subscribe to pattern on every connection from now on. */
void
mqtt_subscribe(struct mqtt *q, const char *pattern)
{
	q->subs = realloc(q->subs, (size_t)(q->nsubs + 1) * sizeof *q->subs);
	if (q->subs == NULL)
		abort();
	q->subs[q->nsubs++] = xstrdup(pattern);
}

/* The last will of the next connection (QoS 1). */
int
mqtt_will(struct mqtt *q, const char *topic, const char *payload,
    int retain, char *err)
{
	int rc;

	rc = mosquitto_will_set_v5(q->m, topic, (int)strlen(payload),
	    payload, 1, retain, NULL);
	if (rc != MOSQ_ERR_SUCCESS) {
		errf(err, "last will: %s", mosquitto_strerror(rc));
		return -1;
	}
	return 0;
}

/* Start an attempt to connect; its outcome comes from mqtt_io. */
void
mqtt_dial(struct mqtt *q, long long now)
{
	int rc;

	q->up = 0;
	q->refused = 0;
	mosquitto_log_callback_set(q->m, on_log);	/* until the CONNACK */
	errno = 0;
	if (!q->dialled) {
		rc = mosquitto_connect_bind_async(q->m, q->url.host,
		    q->url.port, q->keepalive, NULL);
		q->dialled = rc == MOSQ_ERR_SUCCESS;
	} else
		rc = mosquitto_reconnect_async(q->m);
	if (rc != MOSQ_ERR_SUCCESS) {
		lost(q, rc, errno, now);
		return;
	}
	q->state = MQTT_CONNECTING;
}

int
mqtt_up(const struct mqtt *q)
{
	return q->state == MQTT_UP;
}

/* When the next attempt is due: LLONG_MAX while one is under way. */
long long
mqtt_retry_at(const struct mqtt *q)
{
	return q->state == MQTT_DOWN ? q->retry_at : LLONG_MAX;
}

/* The socket, and what to poll it for (fd -1: none). */
void
mqtt_pollfd(const struct mqtt *q, struct pollfd *p)
{
	p->fd = q->state == MQTT_DOWN ? -1 : mosquitto_socket(q->m);
	p->events = POLLIN | (mosquitto_want_write(q->m) ? POLLOUT : 0);
	p->revents = 0;
}

int
mqtt_busy(const struct mqtt *q)
{
	return q->state != MQTT_DOWN && mosquitto_want_write(q->m);
}

/* Why the last attempt failed or the connection went. */
const char *
mqtt_why(const struct mqtt *q)
{
	return q->why;
}

/*
 * How many QoS 1 publishes may wait for their acknowledgement at once:
 * the broker's receive maximum (MQTT v5), at most SEND_MAX; 0 when not
 * connected.
 */
int
mqtt_window(const struct mqtt *q)
{
	return q->state == MQTT_UP ? q->window : 0;
}

/* QoS 1 publishes the broker has not acknowledged yet. */
int
mqtt_unacked(const struct mqtt *q)
{
	return q->state == MQTT_UP ? (int)json_object_size(q->acks) : 0;
}

int
mqtt_v5(const struct mqtt *q)
{
	return q->v5;
}

/*
 * Do what poll saw on the socket (revents may be 0: keepalive only).
 * Returns the MQTT_EV_* bits of what happened since the last call.
 */
unsigned
mqtt_io(struct mqtt *q, short revents, long long now)
{
	unsigned ev;
	int rc = MOSQ_ERR_SUCCESS;

	if (q->state != MQTT_DOWN) {
		errno = 0;
		if (q->state == MQTT_CONNECTING && revents != 0)
			rc = mosquitto_loop_write(q->m, 1);
		if (rc == MOSQ_ERR_SUCCESS && (revents & (POLLIN | POLLHUP |
		    POLLERR)))
			rc = mosquitto_loop_read(q->m, 1);
		if (rc == MOSQ_ERR_SUCCESS && (revents & POLLOUT))
			rc = mosquitto_loop_write(q->m, 1);
		if (rc == MOSQ_ERR_SUCCESS)
			rc = mosquitto_loop_misc(q->m);
		if (rc == MOSQ_ERR_SUCCESS && q->refused == 0 &&
		    mosquitto_socket(q->m) == -1)
			rc = MOSQ_ERR_CONN_LOST;
		if (rc != MOSQ_ERR_SUCCESS || q->refused != 0) {
			if (q->v5 && (q->refused ==
			    MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION ||
			    q->refused == CONNACK_REFUSED_PROTOCOL_VERSION)) {
				q->v5 = 0;	/* an MQTT 3.1.1 broker */
				mosquitto_int_option(q->m,
				    MOSQ_OPT_PROTOCOL_VERSION,
				    MQTT_PROTOCOL_V311);
				mqtt_dial(q, now);
			} else
				lost(q, rc, errno, now);
		}
	}
	ev = q->events;
	q->events = 0;
	return ev;
}

/*
 * Publish at QoS 0 or 1, with a message expiry (seconds, 0: none) when
 * the connection is MQTT v5.  -1 when not connected.
 */
int
mqtt_publish(struct mqtt *q, const char *topic, const void *payload,
    int len, int qos, int retain, int expiry)
{
	char key[16];
	int rc, mid;

	if (q->state != MQTT_UP)
		return -1;
	if (q->v5 && expiry > 0 && expiry != q->expiry_s) {
		mosquitto_property_free_all(&q->expiry);
		mosquitto_property_add_int32(&q->expiry,
		    MQTT_PROP_MESSAGE_EXPIRY_INTERVAL, (uint32_t)expiry);
		q->expiry_s = expiry;
	}
	rc = mosquitto_publish_v5(q->m, &mid, topic, len, payload, qos,
	    retain, q->v5 && expiry > 0 ? q->expiry : NULL);
	if (rc != MOSQ_ERR_SUCCESS)
		return -1;
	if (qos > 0) {
		snprintf(key, sizeof key, "%d", mid);
		json_object_set_new(q->acks, key, json_string(topic));
	}
	return 0;
}

/*
 * The next publish the broker refused: its topic and the broker's
 * reason, copied into the caller's buffers; 0 when there is none.
 */
int
mqtt_refused(struct mqtt *q, char *topic, size_t tn, char *why, size_t wn)
{
	if (json_array_size(q->denials) < 2)
		return 0;
	snprintf(topic, tn, "%s", json_string_value(json_array_get(
	    q->denials, 0)));
	snprintf(why, wn, "%s", json_string_value(json_array_get(q->denials,
	    1)));
	json_array_remove(q->denials, 0);
	json_array_remove(q->denials, 0);
	return 1;
}

/*
 * Hold small writes back (on) and send them as few segments (off): a
 * batch of pulses then costs the kernel one trip through TCP instead of
 * one per message.
 */
void
mqtt_cork(struct mqtt *q, int on)
{
	int fd;

	if (q->state == MQTT_UP && (fd = mosquitto_socket(q->m)) >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
}

/* Say goodbye: the broker then drops the will. */
void
mqtt_disconnect(struct mqtt *q)
{
	if (q->state == MQTT_UP)
		mosquitto_disconnect(q->m);
	q->state = MQTT_DOWN;
}
