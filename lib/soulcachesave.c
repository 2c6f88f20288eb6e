/*
 * soulcachesave.c - the soul cache (soulcache.c) written back: a
 * round appends the entries it changed to STATE/rounds/HASH.delta, the
 * same head then entries, a later entry of a name standing for an
 * earlier one (one of id zero, until 0, not deferred and no skip: the
 * entry is gone); it writes the base again whole, with a new GEN, and
 * removes the delta only when the delta would pass half the base (or
 * 64 KiB): a steady fleet, whose every round wakes a few agents,
 * writes what changed rather than the whole cache every minute.
 *
 * Invariants: the cache is written under rounds/HASH.lock, and only
 * when something in it changed; a delta is appended to only while the
 * base is the one read and its last line is whole; a kept skip is
 * written back as the text it was read as.
 */
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

/* The delta is appended to while it stays within half the base or
 * this, whichever is more. */
#define DELTA_MIN	65536

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
	return strcmp(((const struct soulcache_ent *)a)->name,
	    ((const struct soulcache_ent *)b)->name);
}

/* Entry e as a line; `gone': its name with nothing kept. */
static void
ent_text(struct out *o, const struct soulcache_ent *e, int gone)
{
	size_t k;

	put_name(o, e->name);
	for (k = 0; k < SOULCACHE_NID; k++)
		put_num(o, gone ? 0 : e->id[k],
		    k < SOULCACHE_NID - 1 ? ',' : ']');
	put(o, ",", 1);
	put_num(o, gone ? 0 : e->until, ',');
	put_num(o, gone ? 0 : e->deferred, ',');
	if (!gone && e->line != NULL)
		put(o, e->line, strlen(e->line));
	else
		put(o, "null", 4);
	put(o, "]\n", 2);
}

static int
kept(const struct soulcache_ent *e)
{
	return e->line != NULL || e->deferred != 0;
}

static void
head_text(const struct soulcache *c, struct out *o)
{
	json_t *h = json_pack("{s:i,s:s,s:I}", "v", SOULCACHE_VERSION,
	    "dir", c->real, "gen", (json_int_t)c->gen);
	char *s = json_dumps(h, JSON_COMPACT);

	put(o, s, strlen(s));
	put(o, "\n", 1);
	free(s);
	json_decref(h);
}

/* The base, whole, of a new GEN. */
static void
text(struct soulcache *c, struct out *o)
{
	long long g = 0;
	size_t i;

	if (getrandom(&g, sizeof g, GRND_NONBLOCK) != sizeof g)
		g = (long long)time(NULL) ^ (long long)getpid() << 32;
	c->gen = (g & LLONG_MAX) != 0 && (g & LLONG_MAX) != c->gen ?
	    g & LLONG_MAX : c->gen + 1;
	head_text(c, o);
	if (c->n > 0)	/* the table is stale; none: no table (qsort wants one) */
		qsort(c->e, c->n, sizeof *c->e, cmpent);
	for (i = 0; i < c->n; i++)
		if (kept(&c->e[i]))
			ent_text(o, &c->e[i], 0);
	if (c->tcap > 0)
		memset(c->tab, 0, c->tcap * sizeof *c->tab);
	for (i = 0; i < c->n; i++)
		soulcache_index(c, i);
}

/*
 * Append d (the changed entries) to the delta, its head first when it
 * is new: 1 done, 0 when the base is to be written whole instead (it
 * is not the one read, or the delta would grow past its bound), -1.
 * The caller holds the cache's lock.
 */
static int
append(struct soulcache *c, const struct out *d, char *err)
{
	char path[4200];
	struct out h = { NULL, 0, 0 };
	struct stat st;
	long long id[SOULCACHE_NID];
	size_t bound = c->blen / 2 > DELTA_MIN ? c->blen / 2 : DELTA_MIN;
	char last;
	int fd, r;

	soulcache_path(c, ".jsonl", path, sizeof path);
	if (c->whole || stat(path, &st) == -1)
		return 0;
	soulcache_identity(&st, id);
	if (memcmp(id, c->bid, sizeof id) != 0)
		return 0;
	soulcache_path(c, ".delta", path, sizeof path);
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd == -1 || fstat(fd, &st) == -1) {
		errf(err, "%s: cannot write: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	/* past its bound, or its last line cut by a writer killed */
	if ((size_t)st.st_size + d->len > bound || (st.st_size > 0 &&
	    (pread(fd, &last, 1, st.st_size - 1) != 1 || last != '\n'))) {
		close(fd);
		return 0;
	}
	if (st.st_size == 0)
		head_text(c, &h);
	if (h.len > 0)
		put(&h, d->p, d->len);
	r = state_write_all(fd, h.len > 0 ? h.p : d->p,
	    h.len > 0 ? h.len : d->len) == -1 ? -1 : 1;
	if (close(fd) == -1)
		r = -1;
	if (r == -1)
		errf(err, "%s: cannot write: %s", path, strerror(errno));
	free(h.p);
	return r;
}

/* Write the base whole, of a new GEN, and remove the delta. */
static int
rewrite(struct soulcache *c, char *err)
{
	struct out o = { NULL, 0, 0 };
	char path[4200];
	struct stat st;
	int r;

	text(c, &o);
	r = state_put(c->dir, c->name, o.p, o.len, STATE_CACHE, err);
	free(o.p);
	if (r == -1)
		return -1;
	soulcache_path(c, ".delta", path, sizeof path);
	if (unlink(path) == -1 && errno != ENOENT) {
		errf(err, "%s: cannot remove: %s", path, strerror(errno));
		return -1;
	}
	soulcache_path(c, ".jsonl", path, sizeof path);
	if (stat(path, &st) == 0)
		soulcache_identity(&st, c->bid);
	c->blen = o.len;
	c->whole = 0;
	return 0;
}

/*
 * Write the cache back if it changed: what changed appended to the
 * delta, or the base whole (see the head of this file); with `whole'
 * (a round that met every soul of the directory) the entries of files
 * not met go.
 */
int
soulcache_save(struct soulcache *c, int whole, char *err)
{
	struct out d = { NULL, 0, 0 };
	char lock[40];
	size_t i, k;
	int fd, r;

	/* the delta's lines, unless the base is to be written whole */
	for (i = 0, k = 0; i < c->n; i++) {
		if (whole && !c->e[i].seen) {
			if (kept(&c->e[i])) {
				c->dirty = 1;
				if (!c->whole)
					ent_text(&d, &c->e[i], 1);
			}
			soulcache_line_drop(&c->e[i]);
			if (c->e[i].own == 2)
				free(c->e[i].name);
			continue;
		}
		if (c->e[i].chg && !c->whole)
			ent_text(&d, &c->e[i], !kept(&c->e[i]));
		c->e[k++] = c->e[i];
	}
	if (k != c->n) {
		c->n = k;
		memset(c->tab, 0, c->tcap * sizeof *c->tab);
		for (i = 0; i < c->n; i++)
			soulcache_index(c, i);
	}
	r = 0;
	if (!c->dirty)
		goto out;
	r = -1;
	if (state_subdir("rounds", c->dir, sizeof c->dir, err) == -1)
		goto out;
	snprintf(lock, sizeof lock, "%.*s.lock", (int)strcspn(c->name, "."),
	    c->name);
	if ((fd = state_lock(c->dir, lock, LOCK_EX, err)) < 0)
		goto out;
	if ((r = c->whole ? 0 : d.len > 0 ? append(c, &d, err) : 1) == 0)
		r = rewrite(c, err);
	state_unlock(fd);
	if (r != -1) {
		r = 0;
		c->dirty = 0;
		for (i = 0; i < c->n; i++)
			c->e[i].chg = 0;
	}
out:
	free(d.p);
	return r;
}
