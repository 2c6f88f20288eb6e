/*
 * redisstore.c - the Redis store: the caps, breakers, wake locks and
 * wake.json of a fleet that spans machines, in one Redis (redisconn.c makes
 * the connection and speaks the protocol).
 *
 * Invariants: the store keeps bytes and knows no rule.  A document is
 * one string key, the same JSON as the file of that name; it is only
 * replaced by compare-and-set (WATCH, GET, MULTI, SET, EXEC: written
 * only if it still is what the caller decided from); "now" is always
 * the caller's clock, never the server's.  Keys carry the agent id in
 * braces (one cluster slot per agent):
 *
 *   heart:{ID}:cap.json	the day's counter (cap.json); 62 days
 *				after a change (cap.c)
 *   heart:{ID}:breaker.json	the breaker (breaker.json); 30 days
 *				after its last wait
 *   heart:{ID}:wake.json	wake.json; written only by the wake
 *				lock's holder; 30 days
 *   heart:{ID}:wake.lock	the wake lock: a holder's token, leased
 *   heart:{ID}:journal.jsonl
 *				the agent's journal (journal.c): a list of
 *				its lines, oldest first, capped (LTRIM);
 *				30 days after the last entry
 *   heart:{*}:pause.json	the store's own: who is paused (pause.c);
 *				a day after the last pause ends
 *
 * The hashes of heart 0.x (heart:{ID}:cap, :cap:DAY, :breaker and the
 * string :wake) are read once, when a document is not there yet, and
 * moved to it (redisupgrade.c makes it; heart(7), Stores).
 *
 * A server that cannot be reached fails the call (store_fail:
 * HX_UNAVAILABLE): the caller fails closed.
 */
#include <sys/file.h>
#include <sys/random.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartint.h"
#include "heartstore.h"
#include "redis.h"

/*
 * A wake lock held in a server store is leased: a holder killed before
 * it lets go blocks its agent for at most this many seconds.  Longer
 * than any wake: the model's timeout (60s by default) times its rounds
 * of tool calls.
 */
#define STORE_WAKE_LEASE	900

#define DAY		86400LL
#define KEEP		(30 * DAY)	/* wake.json, after a change */
#define MAXHELD		8

static struct {
	int	 fd;
	char	 agent[HEART_IDMAX + 1];
	char	 name[32];
	char	 token[192];
} held[MAXHELD];

static char me[128];		/* host name, for the tokens */

/* The agent of a state directory agents/ID. */
static const char *
agent_of(const char *dir, char *err)
{
	const char *p = strrchr(dir, '/');

	p = p != NULL ? p + 1 : dir;
	return id_check(p, err) == 0 ? p : NULL;
}

static void
rwhere(const char *agent, const char *name, char *buf, size_t n)
{
	char key[128];

	redisconn_key(agent, name, key, sizeof key);
	snprintf(buf, n, "%s: %s", redisconn_url(), key);
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
	struct redisconn_args c[3];
	redisReply *r[3];
	int same, n = 0, rc;

	c[0].n = c[1].n = c[2].n = 0;
	redisconn_aput(&c[0], "WATCH");
	redisconn_aput(&c[0], guard);
	redisconn_aput(&c[1], "GET");
	redisconn_aput(&c[1], guard);
	if (redisconn_pipeline(c, 2, r, guard, err) == -1)
		return -1;
	same = want == NULL ? r[1]->type == REDIS_REPLY_NIL :
	    redisconn_str(r[1]) != NULL && r[1]->type == REDIS_REPLY_STRING &&
	    strlen(want) == r[1]->len && memcmp(want, r[1]->str,
	    r[1]->len) == 0;
	redisconn_free_replies(r, 2);
	c[0].n = c[1].n = c[2].n = 0;
	if (!same) {
		redisconn_aput(&c[0], "UNWATCH");
		n = 1;
	} else {
		redisconn_aput(&c[0], "MULTI");
		if (doc != NULL) {
			redisconn_aput(&c[1], "SET");
			redisconn_aput(&c[1], key);
			redisconn_aput(&c[1], doc);
			redisconn_aput(&c[1], "EX");
			redisconn_anum(&c[1], ttl > 0 ? ttl : KEEP);
		} else {
			redisconn_aput(&c[1], "DEL");
			redisconn_aput(&c[1], key);
		}
		redisconn_aput(&c[2], "EXEC");
		n = 3;
	}
	if (redisconn_pipeline(c, n, r, key, err) == -1)
		return -1;
	/* EXEC: nil when a watched key changed, else the replies */
	rc = same && r[2]->type == REDIS_REPLY_ARRAY;
	redisconn_free_replies(r, n);
	return rc;
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
	struct redisconn_args c[2];
	redisReply *r[2];
	char *moved;
	int n;

	*doc = NULL;
	if (redisconn_begin(err) == -1)
		return -1;
	redisconn_key(agent, name, key, sizeof key);
	if (redisconn_get(key, doc, err) == -1)
		return -1;
	if (*doc != NULL || !id_valid(agent))	/* an endpoint, the store's
						   own: no 0.x's */
		return 0;
	if (redisupgrade_doc(agent, name, &moved, err) == -1)
		return -1;
	if (moved == NULL)
		return 0;
	c[0].n = c[1].n = 0;
	redisconn_aput(&c[0], "SET");
	redisconn_aput(&c[0], key);
	redisconn_aput(&c[0], moved);
	redisconn_aput(&c[0], "NX");
	redisconn_aput(&c[0], "EX");
	redisconn_anum(&c[0], KEEP);
	redisconn_aput(&c[1], "DEL");
	redisconn_key(agent, strcmp(name, "wake.json") == 0 ? "wake" :
	    strcmp(name, "cap.json") == 0 ? "cap" : "breaker", old,
	    sizeof old);
	redisconn_aput(&c[1], old);
	n = redisconn_pipeline(c, 2, r, key, err);
	free(moved);
	if (n == -1)
		return -1;
	redisconn_free_replies(r, 2);
	return redisconn_get(key, doc, err);
}

static int
rcas(const char *agent, const char *name, const char *old, const char *doc,
    long long ttl, char *err)
{
	char key[160];

	if (redisconn_begin(err) == -1)
		return -1;
	redisconn_key(agent, name, key, sizeof key);
	return guarded_set(key, old, key, doc, ttl, err);
}

/* Our token for a lock: host, pid and a random number. */
static void
make_token(char *buf, size_t n)
{
	unsigned int x = 0;

	if (getrandom(&x, sizeof x, GRND_NONBLOCK) != sizeof x)
		x = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	snprintf(buf, n, "%s:%ld:%08x", me, (long)getpid(), x);
}

/* Take the fleet's wake lock of agent: 1 taken, 0 held, -1 err. */
static int
lock_take(const char *agent, const char *name, const char *token,
    char *err)
{
	char key[160];
	struct redisconn_args a;
	redisReply *r;
	int rc = -1;

	redisconn_key(agent, name, key, sizeof key);
	a.n = 0;
	redisconn_aput(&a, "SET");
	redisconn_aput(&a, key);
	redisconn_aput(&a, token);
	redisconn_aput(&a, "NX");
	redisconn_aput(&a, "PX");
	redisconn_anum(&a, STORE_WAKE_LEASE * 1000LL);
	if ((r = redisconn_command(&a, key, err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_ERROR)
		redisconn_reply_error(r, key, err);
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
			errf(err, "%s: too many wake locks held",
			    redisconn_url());
			got = -1;
		} else if (redisconn_begin(err) == -1)
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
		redisconn_key(held[i].agent, held[i].name, key, sizeof key);
		if (redisconn_begin(err) == 0)
			guarded_set(key, held[i].token, key, NULL, 0, err);
		held[i].agent[0] = '\0';
	}
	state_unlock(fd);
}

/* wake.json, written only while we still hold the agent's wake lock, if
 * we took it. */
static int
rwrite(const char *dir, const char *name, const json_t *j, char *err)
{
	char key[160], lock[160];
	const char *agent, *token;
	struct redisconn_args a;
	redisReply *x;
	char *s;
	int r = -1, tries;

	if ((agent = agent_of(dir, err)) == NULL || redisconn_begin(err) == -1)
		return -1;
	if ((s = json_dumps(j, JSON_COMPACT)) == NULL) {
		errf(err, "%s: cannot encode JSON", name);
		return -1;
	}
	redisconn_key(agent, name, key, sizeof key);
	redisconn_key(agent, "wake.lock", lock, sizeof lock);
	token = held_token(agent);
	if (*token == '\0') {
		a.n = 0;
		redisconn_aput(&a, "SET");
		redisconn_aput(&a, key);
		redisconn_aput(&a, s);
		redisconn_aput(&a, "EX");
		redisconn_anum(&a, KEEP);
		if ((x = redisconn_command(&a, key, err)) != NULL) {
			if (x->type == REDIS_REPLY_ERROR)
				redisconn_reply_error(x, key, err);
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
		    "ran out", redisconn_url(), key, STORE_WAKE_LEASE);
	return r == 1 ? 0 : -1;
}

/* A line on the right of the list `name', in one transaction with its
 * cap (the newest keep) and its lease of KEEP: never half there. */
static int
rlog_add(const char *agent, const char *name, const char *line,
    long long keep, char *err)
{
	struct redisconn_args c[5];
	redisReply *r[5];
	char key[160];
	int i, rc;

	if (id_check(agent, err) == -1 || redisconn_begin(err) == -1)
		return -1;
	redisconn_key(agent, name, key, sizeof key);
	for (i = 0; i < 5; i++)
		c[i].n = 0;
	redisconn_aput(&c[0], "MULTI");
	redisconn_aput(&c[1], "RPUSH");
	redisconn_aput(&c[1], key);
	redisconn_aput(&c[1], line);
	redisconn_aput(&c[2], "LTRIM");
	redisconn_aput(&c[2], key);
	redisconn_anum(&c[2], -keep);
	redisconn_anum(&c[2], -1);
	redisconn_aput(&c[3], "EXPIRE");
	redisconn_aput(&c[3], key);
	redisconn_anum(&c[3], KEEP);
	redisconn_aput(&c[4], "EXEC");
	if (redisconn_pipeline(c, 5, r, key, err) == -1)
		return -1;
	rc = 0;
	if (r[4]->type != REDIS_REPLY_ARRAY) {
		errf(err, "%s: %s: EXEC: a reply not understood",
		    redisconn_url(), key);
		rc = -1;
	}
	redisconn_free_replies(r, 5);
	if (rc == -1)
		redisconn_disconnect();	/* and its MULTI */
	return rc;
}

/* The newest `last' lines of the list `name' (0: all), oldest first. */
static int
rlog_read(const char *agent, const char *name, long long last,
    char ***lines, size_t *n, char *err)
{
	struct redisconn_args a;
	redisReply *r;
	char key[160];
	size_t i;
	int rc = 0;

	if (id_check(agent, err) == -1 || redisconn_begin(err) == -1)
		return -1;
	redisconn_key(agent, name, key, sizeof key);
	a.n = 0;
	redisconn_aput(&a, "LRANGE");
	redisconn_aput(&a, key);
	redisconn_anum(&a, last > 0 ? -last : 0);
	redisconn_anum(&a, -1);
	if ((r = redisconn_command(&a, key, err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_ERROR) {
		redisconn_reply_error(r, key, err);
		rc = -1;
	} else if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
		*lines = xcalloc(r->elements + 1, sizeof **lines);
		for (i = 0; i < r->elements; i++)
			if (redisconn_str(r->element[i]) != NULL)
				(*lines)[(*n)++] = xstrdup(
				    redisconn_str(r->element[i]));
	}
	freeReplyObject(r);
	return rc;
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
	struct redisconn_args a;

	*listo = NULL;
	*no = 0;
	if (redisconn_begin(err) == -1)
		return -1;
	do {
		a.n = 0;
		redisconn_aput(&a, "SCAN");
		redisconn_aput(&a, cursor);
		redisconn_aput(&a, "MATCH");
		redisconn_aput(&a, "heart:{*}:*");
		redisconn_aput(&a, "COUNT");
		redisconn_aput(&a, "1000");
		if ((r = redisconn_command(&a, "SCAN", err)) == NULL) {
			state_free_list(list, n);
			return -1;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    redisconn_str(r->element[0]) == NULL) {
			if (r->type == REDIS_REPLY_ERROR)
				redisconn_reply_error(r, "SCAN", err);
			else
				errf(err, "%s: SCAN: a reply not understood",
				    redisconn_url());
			freeReplyObject(r);
			state_free_list(list, n);
			return -1;
		}
		snprintf(cursor, sizeof cursor, "%s",
		    redisconn_str(r->element[0]));
		keys = r->element[1];
		for (i = 0; keys->type == REDIS_REPLY_ARRAY &&
		    i < keys->elements; i++)
			if (redisconn_str(keys->element[i]) != NULL)
				add_agent(redisconn_str(keys->element[i]),
				    &list, &n);
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
	struct redisconn_args a;
	int i, rc = -1;

	if (id_check(agent, err) == -1 || redisconn_begin(err) == -1)
		return -1;
	a.n = 0;
	redisconn_aput(&a, "EXISTS");
	for (i = 0; i < 6; i++) {
		redisconn_key(agent, what[i], k[i], sizeof k[i]);
		redisconn_aput(&a, k[i]);
	}
	if ((r = redisconn_command(&a, "EXISTS", err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_INTEGER)
		rc = r->integer > 0;
	else if (r->type == REDIS_REPLY_ERROR)
		redisconn_reply_error(r, "EXISTS", err);
	else
		errf(err, "%s: EXISTS: a reply not understood",
		    redisconn_url());
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
	redisconn_disconnect();
}

static const struct store_ops ops = {
	.get = rget, .cas = rcas, .where = rwhere, .lock = rlock,
	.unlock = runlock, .write_json = rwrite, .agents = ragents,
	.known = rknown, .log_add = rlog_add, .log_read = rlog_read,
	.forked = redisconn_disconnect
};

/*
 * Choose the store for this process: `flag' (--store), else
 * $HEART_STORE; none, empty or "file": the files.  Connects at the
 * first call, not now.  Returns 0, or with err HX_USAGE for a bad
 * flag, HX_CONFIG for a bad HEART_STORE.
 */
int
redisstore_open(const char *flag, char *err)
{
	const char *u = flag, *what = "--store";
	char why[HEART_ERRLEN];
	int bad = HX_USAGE;

	if (u == NULL) {
		u = getenv("HEART_STORE");
		what = "HEART_STORE";
		bad = HX_CONFIG;
	}
	if (!store_server_named(u))
		return 0;
	if (redisconn_parse_url(u, why) == -1) {
		errf(err, "%s: %s", what, why);
		return bad;
	}
	secret_add(getenv("HEART_REDIS_PASSWORD"));
	if (gethostname(me, sizeof me) == -1 || me[0] == '\0')
		snprintf(me, sizeof me, "localhost");
	me[sizeof me - 1] = '\0';
	if (store_ops() == NULL)
		atexit(rclose);
	store_use(&ops);
	return 0;
}
