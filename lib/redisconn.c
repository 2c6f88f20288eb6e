/*
 * redisconn.c - the Redis store's connection and protocol (hiredis),
 * for redisstore.c and redisupgrade.c (redis.h): the store's URL, the
 * connection with its AUTH and SELECT, commands sent one at a time or
 * pipelined, their replies, and a reply's error as a message and an
 * exit code.
 *
 * Invariants: one connection a process (redis_conn, this file's own),
 * made at the first call (redisconn_begin) and again at the next after
 * one is lost; a connection lost, or refused at AUTH or SELECT, is
 * dropped at once.  A server that cannot be reached fails the call
 * (store_fail: HX_UNAVAILABLE): the caller fails closed.  The URL never
 * holds a password: it is read from HEART_REDIS_PASSWORD at each
 * connect.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "redis.h"

#define TIMEOUT		3		/* s, to connect and per command */

static struct {
	char	 url[512];	/* as given; it never holds a password */
	char	 host[256];
	int	 port;
	long long db;
	redisContext *ctx;
} redis_conn;

void
redisconn_aput(struct redisconn_args *a, const char *s)
{
	a->len[a->n] = strlen(s);
	a->v[a->n++] = s;
}

void
redisconn_anum(struct redisconn_args *a, long long x)
{
	snprintf(a->buf[a->n], sizeof a->buf[a->n], "%lld", x);
	redisconn_aput(a, a->buf[a->n]);
}

void
redisconn_disconnect(void)
{
	if (redis_conn.ctx != NULL)
		redisFree(redis_conn.ctx);
	redis_conn.ctx = NULL;
}

/*
 * An error reply, as a message and an exit code: a server that is
 * there but will not serve now is unreachable; one that refuses us
 * is misconfigured; anything else is a state error.
 */
void
redisconn_reply_error(const redisReply *r, const char *what, char *err)
{
	static const char *down[] = { "LOADING", "BUSY", "MASTERDOWN",
	    "MISCONF", "READONLY", "TRYAGAIN", "CLUSTERDOWN", NULL };
	int i;

	/* Redis 7 answers a long command before AUTH with a protocol error */
	if (strncmp(r->str, "NOAUTH", 6) == 0 ||
	    strstr(r->str, "unauthenticated") != NULL) {
		errf(err, "%s: the server wants a password: set "
		    "HEART_REDIS_PASSWORD", redis_conn.url);
		store_fail(HX_CONFIG);
		return;
	}
	if (strncmp(r->str, "WRONGPASS", 9) == 0 ||
	    strstr(r->str, "invalid password") != NULL ||
	    strstr(r->str, "no password is set") != NULL) {
		errf(err, "%s: the password was refused: %.200s",
		    redis_conn.url, r->str);
		store_fail(HX_CONFIG);
		return;
	}
	if (strncmp(r->str, "heart:{", 7) == 0)	/* a script's: it names
						   the key */
		errf(err, "%s: %.400s", redis_conn.url, r->str);
	else
		errf(err, "%s: %s: %.300s", redis_conn.url, what, r->str);
	for (i = 0; down[i] != NULL; i++)
		if (strncmp(r->str, down[i], strlen(down[i])) == 0)
			store_fail(HX_UNAVAILABLE);
}

/*
 * A reply that did not come: the connection is dropped.  A server
 * silent past TIMEOUT is said to be so (hiredis 0.14 tells it as
 * EAGAIN, "Resource temporarily unavailable"), not a lost connection.
 */
static void
lost(const char *what, char *err)
{
	const char *why = redis_conn.ctx->errstr[0] ?
	    redis_conn.ctx->errstr : strerror(errno);

	if (redis_conn.ctx->err == REDIS_ERR_IO &&
	    strcmp(why, strerror(EAGAIN)) == 0)
		errf(err, "%s: %s: no answer within %ds", redis_conn.url,
		    what, TIMEOUT);
	else
		errf(err, "%s: %s: connection lost: %s", redis_conn.url,
		    what, why);
	store_fail(HX_UNAVAILABLE);
	redisconn_disconnect();
}

/* A command's reply, or NULL with err: the connection is then gone. */
redisReply *
redisconn_command(struct redisconn_args *a, const char *what, char *err)
{
	redisReply *r;

	r = redisCommandArgv(redis_conn.ctx, a->n, a->v, a->len);
	if (r == NULL)
		lost(what, err);
	return r;
}

/* A command whose reply must be OK (AUTH, SELECT); -1 with err. */
static int
command_ok(struct redisconn_args *a, const char *what, char *err)
{
	redisReply *r;
	int ok;

	if ((r = redisconn_command(a, what, err)) == NULL)
		return -1;
	ok = r->type != REDIS_REPLY_ERROR;
	if (!ok) {
		redisconn_reply_error(r, what, err);
		if (strcmp(what, "SELECT") == 0)
			store_fail(HX_CONFIG);
	}
	freeReplyObject(r);
	if (!ok)
		redisconn_disconnect();
	return ok ? 0 : -1;
}

static int
connect_now(char *err)
{
	struct timeval tv = { TIMEOUT, 0 };
	const char *pw = getenv("HEART_REDIS_PASSWORD");
	struct redisconn_args a;

	if (redis_conn.ctx != NULL && redis_conn.ctx->err == 0)
		return 0;
	redisconn_disconnect();
	redis_conn.ctx = redisConnectWithTimeout(redis_conn.host,
	    redis_conn.port, tv);
	if (redis_conn.ctx == NULL || redis_conn.ctx->err) {
		errf(err, "%s: cannot connect: %s", redis_conn.url,
		    redis_conn.ctx != NULL ? redis_conn.ctx->errstr :
		    "out of memory");
		store_fail(HX_UNAVAILABLE);
		redisconn_disconnect();
		return -1;
	}
	redisSetTimeout(redis_conn.ctx, tv);
	if (pw != NULL && *pw != '\0') {
		a.n = 0;
		redisconn_aput(&a, "AUTH");
		redisconn_aput(&a, pw);
		if (command_ok(&a, "AUTH", err) == -1)
			return -1;
	}
	if (redis_conn.db != 0) {
		a.n = 0;
		redisconn_aput(&a, "SELECT");
		redisconn_anum(&a, redis_conn.db);
		if (command_ok(&a, "SELECT", err) == -1)
			return -1;
	}
	return 0;
}

/* Each call starts clean: a failure says what it asks for. */
int
redisconn_begin(char *err)
{
	store_fail(0);
	return connect_now(err);
}

void
redisconn_free_replies(redisReply **r, int n)
{
	int i;

	for (i = 0; i < n; i++)
		freeReplyObject(r[i]);
}

/*
 * Send n commands at once and read their n replies into r (a pipeline:
 * one round trip).  -1 with err, the replies freed and the connection
 * dropped (a WATCH or MULTI with it), when it failed or a reply is an
 * error.
 */
int
redisconn_pipeline(struct redisconn_args *cmd, int n, redisReply **r,
    const char *what, char *err)
{
	int i;

	for (i = 0; i < n; i++)
		redisAppendCommandArgv(redis_conn.ctx, cmd[i].n, cmd[i].v,
		    cmd[i].len);
	for (i = 0; i < n; i++) {
		if (redisGetReply(redis_conn.ctx, (void **)&r[i]) != REDIS_OK ||
		    r[i] == NULL) {
			redisconn_free_replies(r, i);
			lost(what, err);
			return -1;
		}
	}
	for (i = 0; i < n; i++)
		if (r[i]->type == REDIS_REPLY_ERROR) {
			redisconn_reply_error(r[i], what, err);
			redisconn_free_replies(r, n);
			redisconn_disconnect();
			return -1;
		}
	return 0;
}

const char *
redisconn_str(const redisReply *r)
{
	if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
		return r->str;
	return NULL;
}

/* The key of agent's document name: heart:{ID}:NAME. */
void
redisconn_key(const char *agent, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "heart:{%s}:%s", agent, name);
}

/* A string key (NULL: none) in *out; -1 with err. */
int
redisconn_get(const char *key, char **out, char *err)
{
	struct redisconn_args a;
	redisReply *r;
	int rc = -1;

	*out = NULL;
	a.n = 0;
	redisconn_aput(&a, "GET");
	redisconn_aput(&a, key);
	if ((r = redisconn_command(&a, key, err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_ERROR)
		redisconn_reply_error(r, key, err);
	else if (r->type == REDIS_REPLY_STRING) {
		*out = xstrdup(r->str);
		if (strlen(*out) != r->len)
			errf(err, "%s: %s: holds a NUL byte; fix or delete "
			    "the key by hand", redis_conn.url, key);
		else
			rc = 0;
		if (rc == -1) {
			free(*out);
			*out = NULL;
		}
	} else
		rc = 0;
	freeReplyObject(r);
	return rc;
}

const char *
redisconn_url(void)
{
	return redis_conn.url;
}

/* redis://HOST[:PORT][/DB], HOST a name, an IPv4 or an [IPv6] address */
int
redisconn_parse_url(const char *u, char *err)
{
	const char *p;
	long long port = 6379, db = 0;
	char why[96];
	int r;

	if (strncmp(u, "rediss://", 9) == 0) {
		errf(err, "rediss:// (TLS) needs hiredis 1.0 or later with "
		    "hiredis_ssl, and this build has hiredis %d.%d (Debian "
		    "12) without it: reach Redis through a tunnel (stunnel, "
		    "spiped, WireGuard) on a local port, with redis://",
		    HIREDIS_MAJOR, HIREDIS_MINOR);
		return -1;
	}
	if (strncmp(u, "redis://", 8) != 0) {
		errf(err, "'%.200s' is not a store: use redis://host:port[/db]"
		    ", or file", u);
		return -1;
	}
	p = u + 8;
	if (strchr(p, '@') != NULL || strchr(p, '?') != NULL) {
		/* the URL is not echoed: ?password= is a client's way */
		errf(err, "a user, a password or a query does not belong in "
		    "the store's URL (it would show in ps(1) and in logs): "
		    "set HEART_REDIS_PASSWORD");
		return -1;
	}
	if ((r = url_hostport(p, redis_conn.host, sizeof redis_conn.host,
	    &port, &p, why, sizeof why)) == -2) {
		errf(err, "'%.200s': not a store URL: %s", u, why);
		return -1;
	}
	if (r == -1)
		goto bad;
	if (*p == '/' && p[1] != '\0' &&
	    num_parse(p + 1, 0, 1 << 30, &db) == -1) {
		errf(err, "'%.200s': not a store URL: database %.40s: %s", u,
		    p + 1, num_why(p + 1, 0, 1 << 30, why, sizeof why));
		return -1;
	}
	redis_conn.port = (int)port;
	redis_conn.db = db;
	snprintf(redis_conn.url, sizeof redis_conn.url, "%s", u);
	return 0;
bad:
	errf(err, "'%.200s': not a store URL: use redis://host:port[/db]", u);
	return -1;
}
