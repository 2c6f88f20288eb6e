/*
 * cas.c - the two ways a Redis store can compare-and-set a document,
 * measured side by side (bench/cas.sh builds and runs it): WATCH, GET,
 * MULTI, SET, EXEC (what lib/redisstore.c does), and one generic Lua
 * script that sets a key only if it still holds what was read
 * (EVALSHA).
 * Each of N processes reads the key, adds one to the count in it and
 * compare-and-sets it back, R times; every lost race is a round again.
 *
 *	cas SOCKET watch|lua N R
 *
 * Prints: method, N, rounds per second, the rounds lost to another
 * writer, and whether the count is exact (N * R).
 */
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>

static const char lua[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if (v or '') ~= ARGV[1] then return 0 end\n"
    "redis.call('SET', KEYS[1], ARGV[2], 'EX', 86400)\n"
    "return 1\n";

static char sha[64];

static redisReply *
cmd(redisContext *c, const char *fmt, const char *a, const char *b)
{
	redisReply *r = redisCommand(c, fmt, a, b);

	if (r == NULL || r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "cas: %s\n", r != NULL ? r->str : c->errstr);
		exit(1);
	}
	return r;
}

/* One compare-and-set of key from old to new: 1 set, 0 lost. */
static int
cas_watch(redisContext *c, const char *key, const char *old,
    const char *new)
{
	redisReply *r;
	int ok;

	redisAppendCommand(c, "WATCH %s", key);
	redisAppendCommand(c, "GET %s", key);
	redisGetReply(c, (void **)&r);
	freeReplyObject(r);
	redisGetReply(c, (void **)&r);
	ok = strcmp(r->type == REDIS_REPLY_STRING ? r->str : "", old) == 0;
	freeReplyObject(r);
	if (!ok) {
		freeReplyObject(cmd(c, "UNWATCH", NULL, NULL));
		return 0;
	}
	redisAppendCommand(c, "MULTI");
	redisAppendCommand(c, "SET %s %s EX 86400", key, new);
	redisAppendCommand(c, "EXEC");
	redisGetReply(c, (void **)&r);
	freeReplyObject(r);
	redisGetReply(c, (void **)&r);
	freeReplyObject(r);
	redisGetReply(c, (void **)&r);
	ok = r->type == REDIS_REPLY_ARRAY;
	freeReplyObject(r);
	return ok;
}

static int
cas_lua(redisContext *c, const char *key, const char *old, const char *new)
{
	redisReply *r;
	int ok;

	r = redisCommand(c, "EVALSHA %s 1 %s %s %s", sha, key, old, new);
	if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
		fprintf(stderr, "cas: EVALSHA failed\n");
		exit(1);
	}
	ok = r->integer == 1;
	freeReplyObject(r);
	return ok;
}

static long
worker(const char *sock, int watch, int rounds)
{
	redisContext *c = redisConnectUnix(sock);
	char old[64], new[64];
	redisReply *r;
	long lost = 0;
	int i, done;

	if (c == NULL || c->err)
		exit(1);
	for (i = 0; i < rounds; i++)
		for (done = 0; !done;) {
			r = cmd(c, "GET %s", "bench:{cas}", NULL);
			snprintf(old, sizeof old, "%s",
			    r->type == REDIS_REPLY_STRING ? r->str : "");
			freeReplyObject(r);
			snprintf(new, sizeof new, "%ld", atol(old) + 1);
			done = watch ? cas_watch(c, "bench:{cas}", old, new) :
			    cas_lua(c, "bench:{cas}", old, new);
			lost += !done;
		}
	redisFree(c);
	return lost;
}

int
main(int argc, char **argv)
{
	struct timespec t0, t1;
	redisContext *c;
	redisReply *r;
	int watch, n, rounds, i, fds[2];
	long lost = 0, l;
	double s;

	if (argc != 5) {
		fprintf(stderr, "usage: cas SOCKET watch|lua N ROUNDS\n");
		return 64;
	}
	watch = strcmp(argv[2], "watch") == 0;
	n = atoi(argv[3]);
	rounds = atoi(argv[4]);
	if ((c = redisConnectUnix(argv[1])) == NULL || c->err)
		return 1;
	freeReplyObject(cmd(c, "DEL bench:{cas}", NULL, NULL));
	r = cmd(c, "SCRIPT LOAD %s", lua, NULL);
	snprintf(sha, sizeof sha, "%s", r->str);
	freeReplyObject(r);
	if (pipe(fds) == -1)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		if (fork() == 0) {
			l = worker(argv[1], watch, rounds);
			if (write(fds[1], &l, sizeof l) != sizeof l)
				_exit(1);
			_exit(0);
		}
	for (i = 0; i < n; i++) {
		if (read(fds[0], &l, sizeof l) == sizeof l)
			lost += l;
		wait(NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	r = cmd(c, "GET bench:{cas}", NULL, NULL);
	printf("%-5s  %5d  %9.0f  %9ld  %s\n", argv[2], n, n * rounds / s,
	    lost, atol(r->str) == (long)n * rounds ? "exact" : "WRONG");
	freeReplyObject(r);
	redisFree(c);
	return 0;
}
