/*
 * soulcache.c - what a round learnt of each soul of a directory, so
 * that the next round touches a soul's YAML only when it changed: a
 * not-due agent costs a stat and a comparison.
 *
 * STATE/rounds/HASH.jsonl (HASH of the directory's real path) is JSON
 * Lines: a head {"v":3,"dir":REAL}, then per soul file, in name order,
 *
 *	[NAME,[DEV,INO,SIZE,MSEC,MNSEC,CSEC,CNSEC],UNTIL,DEFERRED,LINE]
 *
 * its name in the directory, its identity when it was read, the time
 * before which no gate of it can pass (wake_admit's, cap and breaker
 * left out: they only ever hold a wake back longer), since when its
 * wake is deferred by the fleet's rate limit (0: not), and the skip it
 * gave then (null: none), without wake_id, at and duration_ms.
 *
 * The file is read with one read(2) and taken apart here, never
 * through a JSON tree: a kept skip stays the text it was written as,
 * and is written back as it was read.  That is what makes a round of
 * ten thousand souls, none due, cost a stat each and little else.
 *
 * Invariants: an entry serves only while the file's identity is the
 * one kept (an edit, a touch, a rename or a replace-by-rename misses)
 * and its time has not come; an entry of a file gone is dropped at the
 * next save; the cache is replaced whole (state_write under
 * rounds/HASH.lock), only when something in it changed, and a cache
 * that does not read is rebuilt: it is never trusted over the file.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"

#define NID	7
/*
 * The version written.  A version 2 cache still reads, its skips
 * dropped and their souls read again: before 3, a soul without a
 * timezone was judged in the zone of the soul before it in the round.
 */
#define VERSION	3

struct ent {
	char	*name;		/* the file's name in the directory */
	long long id[NID];	/* dev, ino, size, mtime, ctime (s, ns) */
	long long until;	/* no gate passes before; with line */
	long long deferred;	/* since; 0: not */
	char	*line;		/* the kept skip; NULL: none */
	int	 own;		/* 1: line is malloc'd, 2: name too */
	int	 seen;		/* met in this round */
};

struct soulcache {
	char	 dir[4096];	/* STATE/rounds */
	char	 name[40];	/* HASH.jsonl */
	char	 real[PATH_MAX];	/* the souls' directory */
	char	*buf;		/* the file as read: names and lines */
	struct ent *e;
	size_t	 n, cap;
	size_t	*tab;		/* open addressing: index + 1; 0 empty */
	size_t	 tcap;
	int	 dirty;
};

static void
identity(const struct stat *st, long long *id)
{
	id[0] = (long long)st->st_dev;
	id[1] = (long long)st->st_ino;
	id[2] = (long long)st->st_size;
	id[3] = (long long)st->st_mtim.tv_sec;
	id[4] = (long long)st->st_mtim.tv_nsec;
	id[5] = (long long)st->st_ctim.tv_sec;
	id[6] = (long long)st->st_ctim.tv_nsec;
}

static size_t
hash(const char *s)
{
	size_t h = 14695981039346656037ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void
tab_add(struct soulcache *c, size_t i)
{
	size_t k = hash(c->e[i].name) & (c->tcap - 1);

	while (c->tab[k] != 0)
		k = (k + 1) & (c->tcap - 1);
	c->tab[k] = i + 1;
}

/* Room for one more entry, the table at most half full. */
static void
grow(struct soulcache *c)
{
	size_t i;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		if ((c->e = realloc(c->e, c->cap * sizeof *c->e)) == NULL)
			abort();
	}
	if (2 * (c->n + 1) <= c->tcap)
		return;
	c->tcap = c->tcap ? c->tcap * 2 : 2048;
	free(c->tab);
	c->tab = xcalloc(c->tcap, sizeof *c->tab);
	for (i = 0; i < c->n; i++)
		tab_add(c, i);
}

static struct ent *
find(const struct soulcache *c, const char *name)
{
	size_t k, i;

	if (c->tcap == 0)
		return NULL;
	for (k = hash(name) & (c->tcap - 1); (i = c->tab[k]) != 0;
	    k = (k + 1) & (c->tcap - 1))
		if (strcmp(c->e[i - 1].name, name) == 0)
			return &c->e[i - 1];
	return NULL;
}

/* A name in its JSON string, decoded in place; p after the opening
 * quote; the byte after the closing quote, or NULL. */
static char *
str_in(char *p, char **out)
{
	char *w = p;
	unsigned int u;

	*out = p;
	for (; *p != '"'; p++) {
		if (*p == '\0' || *p == '\n')
			return NULL;
		if (*p != '\\') {
			*w++ = *p;
			continue;
		}
		p++;
		if (*p == '"' || *p == '\\' || *p == '/')
			*w++ = *p;
		else if (*p == 'u' && sscanf(p + 1, "%4x", &u) == 1 &&
		    u > 0 && u < 0x80) {
			*w++ = (char)u;
			p += 4;
		} else
			return NULL;
	}
	*w = '\0';
	return p + 1;
}

/* A decimal number ended by sep; the byte after sep, or NULL.  By
 * hand: strtoll's locale and errno cost more than the whole lookup. */
static char *
num_in(char *p, long long *v, char sep)
{
	unsigned long long u = 0;
	int neg = *p == '-';
	char *s;

	p += neg;
	for (s = p; *p >= '0' && *p <= '9' && p - s < 19; p++)
		u = u * 10 + (unsigned long long)(*p - '0');
	if (p == s || *p != sep || u > (unsigned long long)LLONG_MAX)
		return NULL;
	*v = neg ? -(long long)u : (long long)u;
	return p + 1;
}

/* One entry line [p, nl), taken apart in place; -1: not one.  An
 * entry of an older version keeps no skip. */
static int
ent_in(struct soulcache *c, char *p, char *nl, int old)
{
	struct ent e;
	int i;

	memset(&e, 0, sizeof e);
	if (strncmp(p, "[\"", 2) != 0 || (p = str_in(p + 2, &e.name)) ==
	    NULL || strncmp(p, ",[", 2) != 0)
		return -1;
	for (p += 2, i = 0; i < NID && p != NULL; i++)
		p = num_in(p, &e.id[i], i < NID - 1 ? ',' : ']');
	if (p == NULL || *p++ != ',' || (p = num_in(p, &e.until, ',')) ==
	    NULL || (p = num_in(p, &e.deferred, ',')) == NULL ||
	    nl - p < 5 || nl[-1] != ']' || *e.name == '\0' ||
	    find(c, e.name) != NULL)
		return -1;
	nl[-1] = '\0';
	if (strcmp(p, "null") != 0) {
		if (*p != '{' || nl[-2] != '}')
			return -1;
		e.line = p;
	}
	if (old) {
		e.line = NULL;
		e.until = 0;
	}
	grow(c);
	c->e[c->n] = e;
	tab_add(c, c->n++);
	return 0;
}

/* The head line [p, nl): this directory's cache; its version (2 or
 * VERSION), or -1. */
static int
head_in(const struct soulcache *c, const char *p, const char *nl)
{
	json_t *j = json_loadb(p, (size_t)(nl - p), 0, NULL);
	const char *d = json_string_value(json_object_get(j, "dir"));
	json_int_t v = json_integer_value(json_object_get(j, "v"));
	int ok;

	ok = (v == 2 || v == VERSION) && d != NULL && strcmp(d, c->real) == 0;
	json_decref(j);
	return ok ? (int)v : -1;
}

static void
ents_free(struct soulcache *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (c->e[i].own >= 1)
			free(c->e[i].line);
		if (c->e[i].own == 2)
			free(c->e[i].name);
	}
	free(c->e);
	free(c->tab);
	c->e = NULL;
	c->tab = NULL;
	c->n = c->cap = c->tcap = 0;
}

/* Read the cache file; one that does not read leaves the cache empty. */
static void
load(struct soulcache *c)
{
	char path[4200], *p, *nl, *end;
	size_t len;
	int v;

	snprintf(path, sizeof path, "%s/%s", c->dir, c->name);
	if (file_read(path, SIZE_MAX - 2, &c->buf, &len) == -1)
		return;
	end = c->buf + len;
	if ((nl = memchr(c->buf, '\n', len)) == NULL ||
	    (v = head_in(c, c->buf, nl)) == -1)
		goto bad;
	for (p = nl + 1; p < end; p = nl + 1)
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL ||
		    ent_in(c, p, nl, v < VERSION) == -1)
			goto bad;
	c->dirty = v < VERSION;
	return;
bad:
	ents_free(c);
	free(c->buf);
	c->buf = NULL;
}

/*
 * The cache of the souls of dir (NULL when it cannot be named: no
 * state directory; err says why).  A cache file that does not read is
 * an empty cache.
 */
struct soulcache *
soulcache_open(const char *dir, char *err)
{
	struct soulcache *c = xcalloc(1, sizeof *c);
	char hash[17];

	if (realpath(dir, c->real) == NULL)
		snprintf(c->real, sizeof c->real, "%s", dir);
	ghost_hash(c->real, hash);
	snprintf(c->name, sizeof c->name, "%s.jsonl", hash);
	if (state_dir(c->dir, sizeof c->dir, err) == -1) {
		free(c);
		return NULL;
	}
	strncat(c->dir, "/rounds", sizeof c->dir - strlen(c->dir) - 1);
	c->dirty = 1;	/* until it reads */
	load(c);
	return c;
}

void
soulcache_free(struct soulcache *c)
{
	if (c == NULL)
		return;
	ents_free(c);
	free(c->buf);
	free(c);
}

/* Entries are named by the file's name in the directory. */
static const char *
key(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

static struct ent *
entry(struct soulcache *c, const char *path)
{
	struct ent *e;

	path = key(path);
	if ((e = find(c, path)) == NULL) {
		grow(c);
		e = &c->e[c->n];
		memset(e, 0, sizeof *e);
		e->name = xstrdup(path);
		e->own = 2;
		tab_add(c, c->n++);
	}
	e->seen = 1;
	return e;
}

static void
line_drop(struct ent *e)
{
	if (e->own >= 1)
		free(e->line);
	e->line = NULL;
	if (e->own == 1)
		e->own = 0;
}

/*
 * The skip soul `path' (whose stat is st) gives at now, decided
 * before from the same file: its line, compact JSON without wake_id,
 * at and duration_ms, good until the next call that changes the cache;
 * or NULL (a miss: read the soul).
 */
const char *
soulcache_get(struct soulcache *c, const char *path, const struct stat *st,
    time_t now)
{
	struct ent *e = entry(c, path);
	long long id[NID];

	if (e->line == NULL || e->until <= (long long)now)
		return NULL;
	identity(st, id);
	if (memcmp(id, e->id, sizeof id) != 0)
		return NULL;
	return e->line;
}

/* Keep the skip res of soul path (stat st), good until `until'. */
void
soulcache_put(struct soulcache *c, const char *path, const struct stat *st,
    time_t until, const json_t *res)
{
	struct ent *e = entry(c, path);
	json_t *line = json_deep_copy(res);

	json_object_del(line, "wake_id");
	json_object_del(line, "at");
	json_object_del(line, "duration_ms");
	line_drop(e);
	if ((e->line = json_dumps(line, JSON_COMPACT)) != NULL && e->own == 0)
		e->own = 1;
	json_decref(line);
	identity(st, e->id);
	e->until = (long long)until;
	c->dirty = 1;
}

/* Forget the skip kept for path (its soul was read afresh). */
void
soulcache_drop(struct soulcache *c, const char *path)
{
	struct ent *e = entry(c, path);

	if (e->line != NULL) {
		line_drop(e);
		memset(e->id, 0, sizeof e->id);
		e->until = 0;
		c->dirty = 1;
	}
}

/* Since when the wake of soul path is deferred (throttled); 0: not. */
time_t
soulcache_deferred(struct soulcache *c, const char *path)
{
	struct ent *e = find(c, key(path));

	return e != NULL ? (time_t)e->deferred : 0;
}

/* A wake of soul path was throttled at now (1), or went (0). */
void
soulcache_defer(struct soulcache *c, const char *path, int throttled,
    time_t now)
{
	struct ent *e = entry(c, path);

	if (throttled && e->deferred == 0) {
		e->deferred = (long long)now;
		c->dirty = 1;
	} else if (!throttled && e->deferred != 0) {
		e->deferred = 0;
		c->dirty = 1;
	}
}

/* A growing buffer for the file written back. */
struct out {
	char	*p;
	size_t	 len, cap;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->cap - o->len < n + 1) {
		while (o->cap - o->len < n + 1)
			o->cap = o->cap ? o->cap * 2 : 1 << 20;
		if ((o->p = realloc(o->p, o->cap)) == NULL)
			abort();
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void
put_num(struct out *o, long long v, char sep)
{
	char b[24], *q = b + sizeof b;
	unsigned long long u = v < 0 ? -(unsigned long long)v :
	    (unsigned long long)v;

	*--q = sep;
	do
		*--q = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--q = '-';
	put(o, q, (size_t)(b + sizeof b - q));
}

/* A name as a JSON string: only what JSON cannot hold raw escaped. */
static void
put_name(struct out *o, const char *s)
{
	char u[8];

	put(o, "[\"", 2);
	for (; *s != '\0'; s++)
		if (*s == '"' || *s == '\\') {
			put(o, "\\", 1);
			put(o, s, 1);
		} else if ((unsigned char)*s < 0x20) {
			snprintf(u, sizeof u, "\\u%04x", (unsigned char)*s);
			put(o, u, 6);
		} else
			put(o, s, 1);
	put(o, "\",[", 3);
}

static int
cmpent(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name,
	    ((const struct ent *)b)->name);
}

static void
text(struct soulcache *c, struct out *o)
{
	json_t *h = json_pack("{s:i,s:s}", "v", VERSION, "dir", c->real);
	char *s = json_dumps(h, JSON_COMPACT);
	struct ent *e;
	size_t i, k;

	put(o, s, strlen(s));
	put(o, "\n", 1);
	free(s);
	json_decref(h);
	if (c->n > 0)	/* the table is stale; none: no table (qsort wants one) */
		qsort(c->e, c->n, sizeof *c->e, cmpent);
	for (i = 0; i < c->n; i++) {
		e = &c->e[i];
		if (e->line == NULL && e->deferred == 0)
			continue;
		put_name(o, e->name);
		for (k = 0; k < NID; k++)
			put_num(o, e->id[k], k < NID - 1 ? ',' : ']');
		put(o, ",", 1);
		put_num(o, e->until, ',');
		put_num(o, e->deferred, ',');
		if (e->line != NULL)
			put(o, e->line, strlen(e->line));
		else
			put(o, "null", 4);
		put(o, "]\n", 2);
	}
	if (c->tcap > 0)
		memset(c->tab, 0, c->tcap * sizeof *c->tab);
	for (i = 0; i < c->n; i++)
		tab_add(c, i);
}

/*
 * Write the cache back if it changed; with `whole' (a round that met
 * every soul of the directory) the entries of files not met go.
 */
int
soulcache_save(struct soulcache *c, int whole, char *err)
{
	struct out o = { NULL, 0, 0 };
	char lock[40];
	size_t i, k;
	int fd, r;

	for (i = 0, k = 0; i < c->n; i++) {
		if (whole && !c->e[i].seen) {
			c->dirty = 1;
			line_drop(&c->e[i]);
			if (c->e[i].own == 2)
				free(c->e[i].name);
			continue;
		}
		c->e[k++] = c->e[i];
	}
	if (k != c->n) {
		c->n = k;
		memset(c->tab, 0, c->tcap * sizeof *c->tab);
		for (i = 0; i < c->n; i++)
			tab_add(c, i);
	}
	if (!c->dirty)
		return 0;
	if (state_subdir("rounds", c->dir, sizeof c->dir, err) == -1)
		return -1;
	snprintf(lock, sizeof lock, "%.*s.lock", (int)strcspn(c->name, "."),
	    c->name);
	if ((fd = state_lock(c->dir, lock, LOCK_EX, err)) < 0)
		return -1;
	text(c, &o);
	r = state_put(c->dir, c->name, o.p, o.len, STATE_CACHE, err);
	state_unlock(fd);
	free(o.p);
	if (r == 0)
		c->dirty = 0;
	return r;
}
