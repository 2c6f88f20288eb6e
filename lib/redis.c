/*
 * redis.c - the Redis store: the caps, breakers, wake locks and
 * wake.json of a fleet that spans machines, in one Redis (hiredis).
 *
 * Invariants: the store keeps bytes and knows no rule.  A document is
 * one string key, the same JSON as the file of that name; it is only
 * replaced by compare-and-set (WATCH, GET, MULTI, SET, EXEC: written
 * only if it still is what the caller decided from); "now" is always
 * the caller's clock, never the server's.  Keys carry the agent id in
 * braces (one cluster slot per agent):
 *
 *   heart:{ID}:cap.json	the day's counter (cap.json); 30 days
 *				after a change
 *   heart:{ID}:breaker.json	the breaker (breaker.json); 30 days
 *				after its last wait
 *   heart:{ID}:wake.json	wake.json; written only by the wake
 *				lock's holder; 30 days
 *   heart:{ID}:wake.lock	the wake lock: a holder's token, leased
 *
 * The hashes of heart 0.x (heart:{ID}:cap, :cap:DAY, :breaker and the
 * string :wake) are read once, when a document is not there yet, and
 * moved to it (heart(7) UPGRADING).
 *
 * A server that cannot be reached fails the call (store_fail:
 * HX_UNAVAILABLE): the caller fails closed.  The connection is made at
 * the first call, and again at the next after one is lost.
 */
#include <sys/file.h>
#include <sys/random.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>

#include "heartint.h"

#define DAY		86400LL
#define KEEP		(30 * DAY)	/* wake.json, after a change */
#define TIMEOUT		3		/* s, to connect and per command */
#define MAXARGS		16
#define MAXHELD		8

static struct {
	char	 url[512];	/* as given; it never holds a password */
	char	 host[256];
	int	 port;
	long long db;
	char	 me[128];	/* host name, for the probe and the tokens */
	redisContext *c;
} rs;

static struct {
	int	 fd;
	char	 agent[HEART_IDMAX + 1];
	char	 name[32];
	char	 token[192];
} held[MAXHELD];

static struct store_ops ops;

struct args {
	int	 n;
	const char *v[MAXARGS];
	size_t	 len[MAXARGS];
	char	 buf[MAXARGS][32];
};

static void
aput(struct args *a, const char *s)
{
	a->len[a->n] = strlen(s);
	a->v[a->n++] = s;
}

static void
anum(struct args *a, long long x)
{
	snprintf(a->buf[a->n], sizeof a->buf[a->n], "%lld", x);
	aput(a, a->buf[a->n]);
}

static void
disconnect(void)
{
	if (rs.c != NULL)
		redisFree(rs.c);
	rs.c = NULL;
}

/*
 * An error reply, as a message and an exit code: a server that is
 * there but will not serve now is unreachable; one that refuses us
 * is misconfigured; anything else is a state error.
 */
static void
reply_error(const redisReply *r, const char *what, char *err)
{
	static const char *down[] = { "LOADING", "BUSY", "MASTERDOWN",
	    "MISCONF", "READONLY", "TRYAGAIN", "CLUSTERDOWN", NULL };
	int i;

	/* Redis 7 answers a long command before AUTH with a protocol error */
	if (strncmp(r->str, "NOAUTH", 6) == 0 ||
	    strstr(r->str, "unauthenticated") != NULL) {
		errf(err, "%s: the server wants a password: set "
		    "HEART_REDIS_PASSWORD", rs.url);
		store_fail(HX_CONFIG);
		return;
	}
	if (strncmp(r->str, "WRONGPASS", 9) == 0 ||
	    strstr(r->str, "invalid password") != NULL ||
	    strstr(r->str, "no password is set") != NULL) {
		errf(err, "%s: the password was refused: %.200s", rs.url,
		    r->str);
		store_fail(HX_CONFIG);
		return;
	}
	if (strncmp(r->str, "heart:{", 7) == 0)	/* a script's: it names
						   the key */
		errf(err, "%s: %.400s", rs.url, r->str);
	else
		errf(err, "%s: %s: %.300s", rs.url, what, r->str);
	for (i = 0; down[i] != NULL; i++)
		if (strncmp(r->str, down[i], strlen(down[i])) == 0)
			store_fail(HX_UNAVAILABLE);
}

/* A command's reply, or NULL with err: the connection is then gone. */
static redisReply *
command(struct args *a, const char *what, char *err)
{
	redisReply *r;

	r = redisCommandArgv(rs.c, a->n, a->v, a->len);
	if (r == NULL) {
		errf(err, "%s: %s: connection lost: %s", rs.url, what,
		    rs.c->errstr[0] ? rs.c->errstr : strerror(errno));
		store_fail(HX_UNAVAILABLE);
		disconnect();
	}
	return r;
}

/* A command whose reply must be OK (AUTH, SELECT); -1 with err. */
static int
command_ok(struct args *a, const char *what, char *err)
{
	redisReply *r;
	int ok;

	if ((r = command(a, what, err)) == NULL)
		return -1;
	ok = r->type != REDIS_REPLY_ERROR;
	if (!ok) {
		reply_error(r, what, err);
		if (strcmp(what, "SELECT") == 0)
			store_fail(HX_CONFIG);
	}
	freeReplyObject(r);
	if (!ok)
		disconnect();
	return ok ? 0 : -1;
}

static int
connect_now(char *err)
{
	struct timeval tv = { TIMEOUT, 0 };
	const char *pw = getenv("HEART_REDIS_PASSWORD");
	struct args a;

	if (rs.c != NULL && rs.c->err == 0)
		return 0;
	disconnect();
	rs.c = redisConnectWithTimeout(rs.host, rs.port, tv);
	if (rs.c == NULL || rs.c->err) {
		errf(err, "%s: cannot connect: %s", rs.url, rs.c != NULL ?
		    rs.c->errstr : "out of memory");
		store_fail(HX_UNAVAILABLE);
		disconnect();
		return -1;
	}
	redisSetTimeout(rs.c, tv);
	if (pw != NULL && *pw != '\0') {
		a.n = 0;
		aput(&a, "AUTH");
		aput(&a, pw);
		if (command_ok(&a, "AUTH", err) == -1)
			return -1;
	}
	if (rs.db != 0) {
		a.n = 0;
		aput(&a, "SELECT");
		anum(&a, rs.db);
		if (command_ok(&a, "SELECT", err) == -1)
			return -1;
	}
	return 0;
}

/* Each call starts clean: a failure says what it asks for. */
static int
begin(char *err)
{
	store_fail(0);
	return connect_now(err);
}

/*
 * Send n commands at once and read their n replies into r (a pipeline:
 * one round trip).  -1 with err, the replies freed, when the
 * connection failed; an error reply is left for the caller.
 */
static int
pipeline(struct args *cmd, int n, redisReply **r, const char *what,
    char *err)
{
	int i, j;

	for (i = 0; i < n; i++)
		redisAppendCommandArgv(rs.c, cmd[i].n, cmd[i].v, cmd[i].len);
	for (i = 0; i < n; i++) {
		if (redisGetReply(rs.c, (void **)&r[i]) != REDIS_OK ||
		    r[i] == NULL) {
			errf(err, "%s: %s: connection lost: %s", rs.url, what,
			    rs.c->errstr[0] ? rs.c->errstr : strerror(errno));
			store_fail(HX_UNAVAILABLE);
			for (j = 0; j < i; j++)
				freeReplyObject(r[j]);
			disconnect();
			return -1;
		}
	}
	return 0;
}

static void
free_replies(redisReply **r, int n)
{
	int i;

	for (i = 0; i < n; i++)
		freeReplyObject(r[i]);
}

/* The first error among n replies, as err; 1 if there was one. */
static int
any_error(redisReply **r, int n, const char *what, char *err)
{
	int i;

	for (i = 0; i < n; i++)
		if (r[i]->type == REDIS_REPLY_ERROR) {
			reply_error(r[i], what, err);
			return 1;
		}
	return 0;
}

static const char *
rstr(const redisReply *r)
{
	if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
		return r->str;
	return NULL;
}

/* The agent of a state directory agents/ID. */
static const char *
agent_of(const char *dir, char *err)
{
	const char *p = strrchr(dir, '/');

	p = p != NULL ? p + 1 : dir;
	return id_check(p, err) == 0 ? p : NULL;
}

static void
key_of(const char *agent, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "heart:{%s}:%s", agent, name);
}

static void
rwhere(const char *agent, const char *name, char *buf, size_t n)
{
	char key[128];

	key_of(agent, name, key, sizeof key);
	snprintf(buf, n, "%s: %s", rs.url, key);
}

/*
 * Compare-and-set of key, guarded by key `guard' (the key itself, or
 * the wake lock): when guard still holds `want' (NULL: guard is not
 * there), set key to doc for ttl seconds (doc NULL: delete it).
 * 1 done, 0 guard held something else or changed meanwhile, -1 err.
 */
static int
guarded_set(const char *guard, const char *want, const char *key,
    const char *doc, long long ttl, char *err)
{
	struct args c[3];
	redisReply *r[3];
	int same, n = 0, rc;

	c[0].n = c[1].n = c[2].n = 0;
	aput(&c[0], "WATCH");
	aput(&c[0], guard);
	aput(&c[1], "GET");
	aput(&c[1], guard);
	if (pipeline(c, 2, r, guard, err) == -1)
		return -1;
	if (any_error(r, 2, guard, err)) {
		free_replies(r, 2);
		disconnect();	/* and its WATCH */
		return -1;
	}
	same = want == NULL ? r[1]->type == REDIS_REPLY_NIL :
	    rstr(r[1]) != NULL && r[1]->type == REDIS_REPLY_STRING &&
	    strlen(want) == r[1]->len && memcmp(want, r[1]->str,
	    r[1]->len) == 0;
	free_replies(r, 2);
	c[0].n = c[1].n = c[2].n = 0;
	if (!same) {
		aput(&c[0], "UNWATCH");
		n = 1;
	} else {
		aput(&c[0], "MULTI");
		if (doc != NULL) {
			aput(&c[1], "SET");
			aput(&c[1], key);
			aput(&c[1], doc);
			aput(&c[1], "EX");
			anum(&c[1], ttl > 0 ? ttl : KEEP);
		} else {
			aput(&c[1], "DEL");
			aput(&c[1], key);
		}
		aput(&c[2], "EXEC");
		n = 3;
	}
	if (pipeline(c, n, r, key, err) == -1)
		return -1;
	if (any_error(r, n, key, err)) {
		free_replies(r, n);
		disconnect();
		return -1;
	}
	/* EXEC: nil when a watched key changed, else the replies */
	rc = same && r[2]->type == REDIS_REPLY_ARRAY;
	free_replies(r, n);
	return rc;
}

/* A string key (NULL: none) in *out; -1 with err. */
static int
get_string(const char *key, char **out, char *err)
{
	struct args a;
	redisReply *r;
	int rc = -1;

	*out = NULL;
	a.n = 0;
	aput(&a, "GET");
	aput(&a, key);
	if ((r = command(&a, key, err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_ERROR)
		reply_error(r, key, err);
	else if (r->type == REDIS_REPLY_STRING) {
		*out = xstrdup(r->str);
		if (strlen(*out) != r->len)
			errf(err, "%s: %s: holds a NUL byte; fix or delete "
			    "the key by hand", rs.url, key);
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

/* A hash of 0.x as a JSON object of strings (NULL: none); -1 err. */
static int
old_hash(const char *key, json_t **out, char *err)
{
	struct args a;
	redisReply *r;
	size_t i;

	*out = NULL;
	a.n = 0;
	aput(&a, "HGETALL");
	aput(&a, key);
	if ((r = command(&a, key, err)) == NULL)
		return -1;
	if (r->type != REDIS_REPLY_ARRAY) {
		if (r->type == REDIS_REPLY_ERROR)
			reply_error(r, key, err);
		else
			errf(err, "%s: %s: a reply not understood", rs.url,
			    key);
		freeReplyObject(r);
		return -1;
	}
	if (r->elements > 0)
		*out = json_object();
	for (i = 0; i + 1 < r->elements; i += 2)
		if (rstr(r->element[i]) != NULL &&
		    rstr(r->element[i + 1]) != NULL)
			json_object_set_new(*out, rstr(r->element[i]),
			    json_string(rstr(r->element[i + 1])));
	freeReplyObject(r);
	return 0;
}

/* A field of an old hash: a number (default 0), a time or the text. */
static json_t *
old_num(json_t *h, const char *f)
{
	const char *s = json_string_value(json_object_get(h, f));
	long long v = 0;

	if (s != NULL && num_parse(s, -1, (long long)1 << 53, &v) == -1)
		return json_string(s);	/* the parser names the field */
	return json_integer(v);
}

static json_t *
old_time(json_t *h, const char *f)
{
	const char *s = json_string_value(json_object_get(h, f));
	long long v = 0;
	char ts[32];

	if (s != NULL && num_parse(s, 0, (long long)1 << 53, &v) == -1)
		return json_string(s);
	if (v <= 0)
		return json_null();
	clock_utc((time_t)v, ts, sizeof ts);
	return json_string(ts);
}

static json_t *
old_text(json_t *h, const char *f)
{
	json_t *v = json_object_get(h, f);

	return v != NULL ? json_incref(v) : json_string("");
}

/*
 * What heart 0.x kept for document name of agent, made into that
 * document (NULL: nothing): cap.json from heart:{ID}:cap and the
 * day's heart:{ID}:cap:DAY, breaker.json from heart:{ID}:breaker,
 * wake.json from heart:{ID}:wake.
 */
static int
old_doc(const char *agent, const char *name, char **doc, char *err)
{
	char key[160];
	json_t *m, *d = NULL, *j = NULL;
	const char *day, *cs;
	int i;
	static const char *bf[] = { "llm_fails", "tool_fails", "cooldown_s",
	    "base_s", "threshold", "max_cooldown_s", "probe_pid" };

	*doc = NULL;
	if (strcmp(name, "wake.json") == 0) {
		key_of(agent, "wake", key, sizeof key);
		return get_string(key, doc, err);
	}
	key_of(agent, strcmp(name, "cap.json") == 0 ? "cap" : "breaker",
	    key, sizeof key);
	if (old_hash(key, &m, err) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (strcmp(name, "cap.json") == 0) {
		day = json_string_value(json_object_get(m, "day"));
		snprintf(key + strlen(key), sizeof key - strlen(key), ":%s",
		    day != NULL ? day : "");
		if (old_hash(key, &d, err) == -1) {
			json_decref(m);
			return -1;
		}
		if (d == NULL)
			d = json_object();
		cs = json_string_value(json_object_get(m, "cap_schedule"));
		j = json_pack("{s:i,s:s,s:O,s:O,s:o,s:{s:o,s:o},s:o,"
		    "s:{s:o,s:o}}", "v", 1, "agent", agent,
		    "day", json_object_get(m, "day"),
		    "zone", json_object_get(m, "zone"),
		    "total", old_num(d, "total"),
		    "chambers", "schedule", old_num(d, "schedule"),
		    "idle", old_num(d, "idle"),
		    "ghosts", old_num(d, "ghosts"),
		    "tokens", "prompt", old_num(d, "prompt"),
		    "completion", old_num(d, "completion"));
		if (j != NULL && cs != NULL && *cs != '\0')
			json_object_set_new(j, "caps", json_pack("{s:o,s:o,"
			    "s:o}", "schedule", old_num(m, "cap_schedule"),
			    "idle", old_num(m, "cap_idle"),
			    "agent", old_num(m, "cap_agent")));
		if (j != NULL && json_integer_value(json_object_get(json_object_get(j,
		    "caps"), "agent")) < 0)
			json_object_set_new(json_object_get(j, "caps"),
			    "agent", json_null());
	} else {
		j = json_pack("{s:i,s:s,s:o,s:o,s:o,s:o,s:o}", "v", 1,
		    "agent", agent, "state", old_text(m, "state"),
		    "until", old_time(m, "until"),
		    "probe_at", old_time(m, "probe_at"),
		    "probe_host", old_text(m, "probe_host"),
		    "trigger", old_text(m, "trigger"));
		for (i = 0; j != NULL && i < (int)(sizeof bf / sizeof bf[0]);
		    i++)
			json_object_set_new(j, bf[i], old_num(m, bf[i]));
		if (j != NULL)
			json_object_set_new(j, "reason", old_text(m,
			    "reason"));
	}
	json_decref(m);
	json_decref(d);
	if (j == NULL) {
		errf(err, "%s: %s: not a 0.x key; delete it by hand", rs.url,
		    key);
		return -1;
	}
	*doc = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return 0;
}

/*
 * Document name of agent (NULL: none).  One kept by heart 0.x is
 * moved to its key first (once: whoever comes second finds it there),
 * and the old keys are deleted.
 */
static int
rget(const char *agent, const char *name, char **doc, char *err)
{
	char key[160], old[160];
	struct args c[2];
	redisReply *r[2];
	char *moved;
	int n;

	*doc = NULL;
	if (store_owner_check(agent, err) == -1 || begin(err) == -1)
		return -1;
	key_of(agent, name, key, sizeof key);
	if (get_string(key, doc, err) == -1)
		return -1;
	if (*doc != NULL || agent[0] == '@')	/* an endpoint is no 0.x's */
		return 0;
	if (old_doc(agent, name, &moved, err) == -1)
		return -1;
	if (moved == NULL)
		return 0;
	c[0].n = c[1].n = 0;
	aput(&c[0], "SET");
	aput(&c[0], key);
	aput(&c[0], moved);
	aput(&c[0], "NX");
	aput(&c[0], "EX");
	anum(&c[0], KEEP);
	aput(&c[1], "DEL");
	key_of(agent, strcmp(name, "wake.json") == 0 ? "wake" :
	    strcmp(name, "cap.json") == 0 ? "cap" : "breaker", old,
	    sizeof old);
	aput(&c[1], old);
	n = pipeline(c, 2, r, key, err);
	free(moved);
	if (n == -1)
		return -1;
	n = 2;
	if (any_error(r, n, key, err)) {
		free_replies(r, n);
		return -1;
	}
	free_replies(r, n);
	return get_string(key, doc, err);
}

static int
rcas(const char *agent, const char *name, const char *old, const char *doc,
    long long ttl, char *err)
{
	char key[160];

	if (store_owner_check(agent, err) == -1 || begin(err) == -1)
		return -1;
	key_of(agent, name, key, sizeof key);
	return guarded_set(key, old, key, doc, ttl, err);
}

/* Our token for a lock: host, pid and a random number. */
static void
make_token(char *buf, size_t n)
{
	unsigned int x = 0;

	if (getrandom(&x, sizeof x, GRND_NONBLOCK) != sizeof x)
		x = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	snprintf(buf, n, "%s:%ld:%08x", rs.me, (long)getpid(), x);
}

/* Take the fleet's wake lock of agent: 1 taken, 0 held, -1 err. */
static int
lock_take(const char *agent, const char *name, const char *token,
    char *err)
{
	char key[160];
	struct args a;
	redisReply *r;
	int rc = -1;

	key_of(agent, name, key, sizeof key);
	a.n = 0;
	aput(&a, "SET");
	aput(&a, key);
	aput(&a, token);
	aput(&a, "NX");
	aput(&a, "PX");
	anum(&a, STORE_WAKE_LEASE * 1000LL);
	if ((r = command(&a, key, err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_ERROR)
		reply_error(r, key, err);
	else
		rc = r->type == REDIS_REPLY_STATUS;	/* OK; nil: held */
	freeReplyObject(r);
	return rc;
}

static int
held_slot(int fd)
{
	int i;

	for (i = 0; i < MAXHELD; i++)
		if (held[i].agent[0] != '\0' && held[i].fd == fd)
			return i;
	return -1;
}

static const char *
held_token(const char *agent)
{
	int i;

	for (i = 0; i < MAXHELD; i++)
		if (strcmp(held[i].agent, agent) == 0)
			return held[i].token;
	return "";
}

/*
 * The wake lock: the local one first (a chat front end on this host
 * may hold it with flock(1)), then the fleet's, a leased token.
 */
static int
rlock(const char *dir, const char *name, int flags, char *err)
{
	const struct timespec nap = { 0, 100 * 1000 * 1000 };
	char token[192];
	const char *agent;
	int fd, got, i;

	if ((agent = agent_of(dir, err)) == NULL)
		return -1;
	if ((fd = state_lock(dir, name, flags, err)) < 0)
		return fd;
	make_token(token, sizeof token);
	for (i = 0; i < MAXHELD && held[i].agent[0] != '\0'; i++)
		;
	for (;;) {
		if (i == MAXHELD) {
			errf(err, "%s: too many wake locks held", rs.url);
			got = -1;
		} else if (begin(err) == -1)
			got = -1;
		else
			got = lock_take(agent, name, token, err);
		if (got != 0 || (flags & LOCK_NB))
			break;
		nanosleep(&nap, NULL);
	}
	if (got != 1) {
		state_unlock(fd);
		return got == 0 ? -2 : -1;
	}
	held[i].fd = fd;
	snprintf(held[i].agent, sizeof held[i].agent, "%s", agent);
	snprintf(held[i].name, sizeof held[i].name, "%s", name);
	snprintf(held[i].token, sizeof held[i].token, "%s", token);
	return fd;
}

/* Let go of a wake lock: delete it if it is still ours; a server gone
 * by now lets the lease do it. */
static void
runlock(int fd)
{
	char err[HEART_ERRLEN], key[160];
	int i;

	if ((i = held_slot(fd)) >= 0) {
		key_of(held[i].agent, held[i].name, key, sizeof key);
		if (begin(err) == 0)
			guarded_set(key, held[i].token, key, NULL, 0, err);
		held[i].agent[0] = '\0';
	}
	state_unlock(fd);
}

static int
rread(const char *dir, const char *name, json_t **out, char *err)
{
	char where[4200], *doc;
	const char *agent;

	*out = NULL;
	if ((agent = agent_of(dir, err)) == NULL ||
	    rget(agent, name, &doc, err) == -1)
		return -1;
	if (doc == NULL)
		return 0;
	rwhere(agent, name, where, sizeof where);
	*out = store_parse(where, "key", doc, strlen(doc), err);
	free(doc);
	return *out != NULL ? 0 : -1;
}

/* wake.json, written only while we still hold the agent's wake lock, if
 * we took it. */
static int
rwrite(const char *dir, const char *name, const json_t *j, char *err)
{
	char key[160], lock[160];
	const char *agent, *token;
	struct args a;
	redisReply *x;
	char *s;
	int r = -1, tries;

	if ((agent = agent_of(dir, err)) == NULL || begin(err) == -1)
		return -1;
	if ((s = json_dumps(j, JSON_COMPACT)) == NULL) {
		errf(err, "%s: cannot encode JSON", name);
		return -1;
	}
	key_of(agent, name, key, sizeof key);
	key_of(agent, "wake.lock", lock, sizeof lock);
	token = held_token(agent);
	if (*token == '\0') {
		a.n = 0;
		aput(&a, "SET");
		aput(&a, key);
		aput(&a, s);
		aput(&a, "EX");
		anum(&a, KEEP);
		if ((x = command(&a, key, err)) != NULL) {
			if (x->type == REDIS_REPLY_ERROR)
				reply_error(x, key, err);
			else
				r = 1;
			freeReplyObject(x);
		}
	} else
		for (tries = r = 0; r == 0 && tries < 3; tries++)
			r = guarded_set(lock, token, key, s, KEEP, err);
	free(s);
	if (r == 0)
		errf(err, "%s: %s: the wake lock was lost: its lease of %ds "
		    "ran out", rs.url, key, STORE_WAKE_LEASE);
	return r == 1 ? 0 : -1;
}

static int
cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the agent of key k (heart:{ID}:...) to the list. */
static void
add_agent(const char *k, char ***list, size_t *n)
{
	char id[HEART_IDMAX + 1];
	const char *e;

	if (strncmp(k, "heart:{", 7) != 0 || (e = strstr(k, "}:")) == NULL ||
	    e - (k + 7) > HEART_IDMAX)
		return;
	snprintf(id, sizeof id, "%.*s", (int)(e - (k + 7)), k + 7);
	if (!id_valid(id))
		return;
	if ((*list = realloc(*list, (*n + 1) * sizeof **list)) == NULL)
		abort();
	(*list)[(*n)++] = xstrdup(id);
}

static int
ragents(char ***listo, size_t *no, char *err)
{
	char cursor[32] = "0";
	char **list = NULL;
	size_t n = 0, i, j;
	redisReply *r, *keys;
	struct args a;

	*listo = NULL;
	*no = 0;
	if (begin(err) == -1)
		return -1;
	do {
		a.n = 0;
		aput(&a, "SCAN");
		aput(&a, cursor);
		aput(&a, "MATCH");
		aput(&a, "heart:{*}:*");
		aput(&a, "COUNT");
		aput(&a, "1000");
		if ((r = command(&a, "SCAN", err)) == NULL) {
			state_free_list(list, n);
			return -1;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    rstr(r->element[0]) == NULL) {
			if (r->type == REDIS_REPLY_ERROR)
				reply_error(r, "SCAN", err);
			else
				errf(err, "%s: SCAN: a reply not understood",
				    rs.url);
			freeReplyObject(r);
			state_free_list(list, n);
			return -1;
		}
		snprintf(cursor, sizeof cursor, "%s", rstr(r->element[0]));
		keys = r->element[1];
		for (i = 0; keys->type == REDIS_REPLY_ARRAY &&
		    i < keys->elements; i++)
			if (rstr(keys->element[i]) != NULL)
				add_agent(rstr(keys->element[i]), &list, &n);
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	if (n > 0)
		qsort(list, n, sizeof *list, cmpstr);
	for (i = j = 0; i < n; i++) {
		if (j > 0 && strcmp(list[j - 1], list[i]) == 0)
			free(list[i]);
		else
			list[j++] = list[i];
	}
	*listo = list;
	*no = j;
	return 0;
}

/* Has agent keys of its own: a counter, a breaker or a wake.json (or
 * those of heart 0.x)? */
static int
rknown(const char *agent, char *err)
{
	static const char *what[] = { "cap.json", "breaker.json",
	    "wake.json", "cap", "breaker", "wake" };
	char k[6][96];
	redisReply *r;
	struct args a;
	int i, rc = -1;

	if (id_check(agent, err) == -1 || begin(err) == -1)
		return -1;
	a.n = 0;
	aput(&a, "EXISTS");
	for (i = 0; i < 6; i++) {
		key_of(agent, what[i], k[i], sizeof k[i]);
		aput(&a, k[i]);
	}
	if ((r = command(&a, "EXISTS", err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_INTEGER)
		rc = r->integer > 0;
	else if (r->type == REDIS_REPLY_ERROR)
		reply_error(r, "EXISTS", err);
	else
		errf(err, "%s: EXISTS: a reply not understood", rs.url);
	freeReplyObject(r);
	return rc;
}

/* At exit: let go of the wake locks still held, and the connection. */
static void
rclose(void)
{
	int i;

	for (i = 0; i < MAXHELD; i++)
		if (held[i].agent[0] != '\0')
			runlock(held[i].fd);
	disconnect();
}

/* redis://HOST[:PORT][/DB], HOST a name, an IPv4 or an [IPv6] address */
static int
parse_url(const char *u, char *err)
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
	if (strchr(p, '@') != NULL) {
		errf(err, "a user or password does not belong in the store's "
		    "URL (it would show in ps(1) and in logs): set "
		    "HEART_REDIS_PASSWORD");
		return -1;
	}
	if ((r = url_hostport(p, rs.host, sizeof rs.host, &port, &p, why,
	    sizeof why)) == -2) {
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
	rs.port = (int)port;
	rs.db = db;
	snprintf(rs.url, sizeof rs.url, "%s", u);
	return 0;
bad:
	errf(err, "'%.200s': not a store URL: use redis://host:port[/db]", u);
	return -1;
}

/*
 * Choose the store for this process: `flag' (--store), else
 * $HEART_STORE; none, empty or "file": the files.  Connects at the
 * first call, not now.  Returns 0, or with err HX_USAGE for a bad
 * flag, HX_CONFIG for a bad HEART_STORE.
 */
int
redis_open(const char *flag, char *err)
{
	const char *u = flag, *what = "--store";
	char why[HEART_ERRLEN];
	int bad = HX_USAGE;

	if (u == NULL) {
		u = getenv("HEART_STORE");
		what = "HEART_STORE";
		bad = HX_CONFIG;
	}
	if (u == NULL || *u == '\0' || strcmp(u, "file") == 0)
		return 0;
	if (parse_url(u, why) == -1) {
		errf(err, "%s: %s", what, why);
		return bad;
	}
	secret_add(getenv("HEART_REDIS_PASSWORD"));
	if (gethostname(rs.me, sizeof rs.me) == -1 || rs.me[0] == '\0')
		snprintf(rs.me, sizeof rs.me, "localhost");
	rs.me[sizeof rs.me - 1] = '\0';
	ops.name = rs.url;
	ops.get = rget;
	ops.cas = rcas;
	ops.where = rwhere;
	ops.lock = rlock;
	ops.unlock = runlock;
	ops.read_json = rread;
	ops.write_json = rwrite;
	ops.agents = ragents;
	ops.known = rknown;
	ops.forked = disconnect;
	if (store_ops() == NULL)
		atexit(rclose);
	store_use(&ops);
	return 0;
}
