/*
 * cache.c - fuzz target: the soul cache of a round (lib/soulcache.c,
 * heart-wake(1) FILES), its base and its delta read back.  The input
 * is the base's entry lines, then optionally a NUL and the delta's;
 * its first byte chooses the heads the target puts before them (the
 * base's version 2, 3 or 4; the delta of the base's GEN or another).
 * Whatever is read, a round's changes saved (appended or written
 * whole) must read back: a skip put is the skip got.
 */
#include <sys/stat.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartint.h"	/* the soul cache is the library's own */
#include "heartwake.h"

#define NOW	1795348800	/* 2026-11-22T12:00:00Z */

static char souls[4200], real[PATH_MAX], rounds[4200], base[40];
static char spath[2][4300];
static struct stat sst[2];

static void
setup(void)
{
	char err[HEART_ERRLEN], hash[17];
	int i;

	snprintf(souls, sizeof souls, "%s/souls", fz_dir());
	if (mkdir(souls, 0700) == -1 || realpath(souls, real) == NULL ||
	    state_subdir("rounds", rounds, sizeof rounds, err) == -1)
		abort();
	for (i = 0; i < 2; i++) {
		snprintf(spath[i], sizeof spath[i], "%s/%c.yaml", souls,
		    'a' + i);
		fz_put(souls, spath[i] + strlen(souls) + 1,
		    (const uint8_t *)"heart: {}\n", 10);
		if (stat(spath[i], &sst[i]) == -1)
			abort();
	}
	ghost_hash(real, hash);
	snprintf(base, sizeof base, "%s", hash);
}

/* rounds/name: the head of version v (of GEN gen when 4), then n
 * bytes of p */
static void
put_file(const char *name, int v, long long gen, const uint8_t *p,
    size_t n)
{
	char *b, head[PATH_MAX + 80];
	size_t h = 0;

	if (v == 4)
		h = (size_t)snprintf(head, sizeof head,
		    "{\"v\":4,\"dir\":\"%s\",\"gen\":%lld}\n", real, gen);
	else if (v > 0)
		h = (size_t)snprintf(head, sizeof head,
		    "{\"v\":%d,\"dir\":\"%s\"}\n", v, real);
	b = malloc(h + n + 1);
	memcpy(b, head, h);
	memcpy(b + h, p, n);
	fz_put(rounds, name, (const uint8_t *)b, h + n);
	free(b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN], name[64], path[4300];
	const uint8_t *nul;
	const char *line;
	struct soulcache *c;
	json_t *skip;
	int v, i;

	if (souls[0] == '\0')
		setup();
	if (n == 0)
		return 0;
	v = 2 + data[0] % 3;
	data++, n--;
	nul = memchr(data, '\0', n);
	snprintf(name, sizeof name, "%s.jsonl", base);
	put_file(name, v, 7, data, nul != NULL ? (size_t)(nul - data) : n);
	snprintf(name, sizeof name, "%s.delta", base);
	if (nul != NULL)
		put_file(name, 4, (data[-1] & 8) ? 8 : 7, nul + 1,
		    n - (size_t)(nul - data) - 1);
	else {
		snprintf(path, sizeof path, "%s/%s", rounds, name);
		remove(path);
	}

	if ((c = soulcache_open(souls, err)) == NULL)
		abort();
	for (i = 0; i < 2; i++)
		if ((line = soulcache_get(c, spath[i], &sst[i], NOW)) != NULL)
			FZ_ASSERT(*line == '{' && line[strlen(line) - 1] ==
			    '}');
	soulcache_deferred(c, spath[1]);
	/* a round's changes: a skip put, another soul read afresh */
	skip = json_pack("{s:s,s:s,s:s}", "agent", "a", "status", "not_due",
	    "reason", "fuzzed");
	soulcache_put(c, spath[0], &sst[0], NOW + 60, skip);
	soulcache_drop(c, spath[1]);
	soulcache_defer(c, spath[1], data[-1] & 16, NOW);
	FZ_ASSERT(soulcache_save(c, 1, err) == 0);
	soulcache_free(c);

	/* what was saved reads back */
	if ((c = soulcache_open(souls, err)) == NULL)
		abort();
	line = soulcache_get(c, spath[0], &sst[0], NOW);
	FZ_ASSERT(line != NULL && strstr(line, "\"fuzzed\"") != NULL);
	FZ_ASSERT(soulcache_get(c, spath[1], &sst[1], NOW) == NULL);
	FZ_ASSERT((soulcache_deferred(c, spath[1]) != 0) ==
	    ((data[-1] & 16) != 0));
	soulcache_free(c);
	json_decref(skip);
	return 0;
}
