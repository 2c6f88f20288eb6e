/*
 * soulcache.c - what a round learnt of each soul of a directory, so
 * that the next round touches a soul's YAML only when it changed: a
 * not-due agent costs a stat and a comparison.
 *
 * STATE/rounds/HASH.jsonl (HASH of the directory's real path) is JSON
 * Lines: a head {"v":4,"dir":REAL,"gen":GEN}, then per soul file, in
 * name order,
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
 * A round appends the entries it changed to STATE/rounds/HASH.delta
 * (its head, then entries: a later one of a name stands for an
 * earlier; one with nothing kept is gone); once the delta would pass
 * half the base (or 64 KiB), it writes the base again whole, of a new
 * GEN, and removes the delta: a steady fleet writes what changed.
 *
 * Invariants: an entry serves only while the file's identity is the
 * one kept (an edit, a touch, a rename or a replace-by-rename misses)
 * and its time has not come; an entry of a file gone is dropped at the
 * next save; the cache is written (under rounds/HASH.lock) only when
 * something in it changed; a delta is appended to only while the base
 * is the one read and its last line is whole, and extends only the
 * base of its GEN,
 * and one of another is ignored (its base was written again after
 * it), as is a last line not ended (its writer killed, or still
 * appending: an entry lost is a hint lost, never a wrong skip, since
 * every entry it stood for had expired or no longer matched its file);
 * a base or a delta with a line that does not read is rebuilt: the
 * cache is never trusted over the file.
 */
#include <sys/file.h>
#include <sys/random.h>
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
#include "heartwake.h"

#define SOULCACHE_NID	7	/* a file's identity: dev, ino, size, times */
#define SOULCACHE_VERSION	4	/* the version written */
#define DELTA_MIN	65536	/* a delta may pass half the base up to this */
struct soulcache_ent {
	char	*name;		/* the file's name in the directory */
	long long id[SOULCACHE_NID];	/* soulcache_identity's */
	long long until;	/* no gate passes before; with line */
	long long deferred;	/* since; 0: not */
	char	*line;		/* the kept skip; NULL: none */
	int	 own;		/* 1: line is malloc'd, 2: name too */
	int	 seen;		/* met in this round */
	int	 chg;		/* changed since it was read */
};
struct soulcache {
	char	 dir[4096];	/* STATE/rounds */
	char	 name[40];	/* HASH.jsonl */
	char	 real[PATH_MAX];	/* the souls' directory */
	char	*buf;		/* the base as read: names and lines */
	char	*dbuf;		/* the delta as read */
	struct soulcache_ent *e;
	size_t	 n, cap;
	size_t	*tab;		/* open addressing: index + 1; 0 empty */
	size_t	 tcap;
	size_t	 blen;		/* the base's length */
	long long gen;		/* the base's GEN; 0: none read */
	long long bid[SOULCACHE_NID];	/* the base's, before it was read */
	int	 dirty;
	int	 whole;		/* write the base again at the next save */
};

static void
soulcache_identity(const struct stat *st, long long *id)
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
soulcache_index(struct soulcache *c, size_t i)
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
		soulcache_index(c, i);
}

static struct soulcache_ent *
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

/* The four hex digits of a \u escape at p into *u; -1 when p does not
 * hold four (the line may end sooner: no byte past one not a digit is
 * read). */
static int
hex4(const char *p, unsigned int *u)
{
	int i, d;

	*u = 0;
	for (i = 0; i < 4; i++) {
		if (p[i] >= '0' && p[i] <= '9')
			d = p[i] - '0';
		else if ((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'f')
			d = (p[i] | 0x20) - 'a' + 10;
		else
			return -1;
		*u = *u * 16 + (unsigned int)d;
	}
	return 0;
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
		else if (*p == 'u' && hex4(p + 1, &u) == 0 && u > 0 &&
		    u < 0x80) {
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

static void
soulcache_line_drop(struct soulcache_ent *e)
{
	if (e->own >= 1)
		free(e->line);
	e->line = NULL;
	if (e->own == 1)
		e->own = 0;
}

/* One entry line [p, nl), taken apart in place; -1: not one.  An
 * entry of an older version keeps no skip; one of the delta (`over')
 * stands for the entry of its name read before. */
static int
ent_in(struct soulcache *c, char *p, char *nl, int old, int over)
{
	struct soulcache_ent e, *f;
	int i;

	memset(&e, 0, sizeof e);
	if (strncmp(p, "[\"", 2) != 0 || (p = str_in(p + 2, &e.name)) ==
	    NULL || strncmp(p, ",[", 2) != 0)
		return -1;
	for (p += 2, i = 0; i < SOULCACHE_NID && p != NULL; i++)
		p = num_in(p, &e.id[i], i < SOULCACHE_NID - 1 ? ',' : ']');
	if (p == NULL || *p++ != ',' || (p = num_in(p, &e.until, ',')) ==
	    NULL || (p = num_in(p, &e.deferred, ',')) == NULL ||
	    nl - p < 5 || nl[-1] != ']' || *e.name == '\0' ||
	    ((f = find(c, e.name)) != NULL && !over))
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
	if (f != NULL) {
		soulcache_line_drop(f);
		memcpy(f->id, e.id, sizeof f->id);
		f->until = e.until;
		f->deferred = e.deferred;
		f->line = e.line;
		return 0;
	}
	grow(c);
	c->e[c->n] = e;
	soulcache_index(c, c->n++);
	return 0;
}

/*
 * The head line [p, nl): this directory's cache; its version (2 to
 * SOULCACHE_VERSION) and its GEN in *gen (0: none), or -1.  A version 2
 * cache still reads, its skips dropped and their souls read again:
 * before 3, a soul without a timezone was judged in the zone of the
 * soul before it in the round.  Version 3 had no GEN and no delta; it
 * reads, and is written again.
 */
static int
head_in(const struct soulcache *c, const char *p, const char *nl,
    long long *gen)
{
	json_t *j = json_loadb(p, (size_t)(nl - p), 0, NULL);
	const char *d = json_string_value(json_object_get(j, "dir"));
	json_int_t v = json_integer_value(json_object_get(j, "v"));
	int ok;

	*gen = v == SOULCACHE_VERSION ?
	    json_integer_value(json_object_get(j, "gen")) : 0;
	ok = v >= 2 && v <= SOULCACHE_VERSION && d != NULL &&
	    strcmp(d, c->real) == 0 && (v < SOULCACHE_VERSION || *gen != 0);
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

static void
soulcache_path(const struct soulcache *c, const char *ext, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%.*s%s", c->dir, (int)strcspn(c->name, "."),
	    c->name, ext);
}

/* The entries of buf (len bytes, its head's version v); -1: one does
 * not read, or the text does not end a line. */
static int
ents_in(struct soulcache *c, char *p, char *end, int v, int over)
{
	char *nl;

	for (; p < end; p = nl + 1)
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL ||
		    ent_in(c, p, nl, v < 3, over) == -1)
			return -1;
	return 0;
}

/* The delta over the base just read; none, or one of another GEN, is
 * nothing to add; a last line not ended (its writer killed, or still
 * appending) is left out.  Either way the base is then written again.
 * -1: a line does not read. */
static int
load_delta(struct soulcache *c)
{
	char path[4200], *nl, *end;
	long long gen;
	size_t len;

	soulcache_path(c, ".delta", path, sizeof path);
	if (file_read(path, SIZE_MAX - 2, &c->dbuf, &len) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((nl = memchr(c->dbuf, '\n', len)) == NULL ||
	    head_in(c, c->dbuf, nl, &gen) != SOULCACHE_VERSION ||
	    gen != c->gen) {
		c->whole = 1;
		return 0;
	}
	end = memrchr(c->dbuf, '\n', len) + 1;
	if (end != c->dbuf + len)
		c->whole = 1;
	return ents_in(c, nl + 1, end, SOULCACHE_VERSION, 1);
}

/* Read the cache; one that does not read leaves the cache empty. */
static void
load(struct soulcache *c)
{
	char path[4200], *nl;
	struct stat st;
	size_t len;
	int v;

	soulcache_path(c, ".jsonl", path, sizeof path);
	if (stat(path, &st) == -1)
		return;
	soulcache_identity(&st, c->bid);
	if (file_read(path, SIZE_MAX - 2, &c->buf, &len) == -1)
		return;
	c->blen = len;
	if ((nl = memchr(c->buf, '\n', len)) == NULL ||
	    (v = head_in(c, c->buf, nl, &c->gen)) == -1 ||
	    ents_in(c, nl + 1, c->buf + len, v, 0) == -1)
		goto bad;
	if (v < SOULCACHE_VERSION)
		return;		/* written again whole */
	c->whole = 0;
	if (load_delta(c) == -1)
		goto bad;
	c->dirty = c->whole;
	return;
bad:
	ents_free(c);
	free(c->buf);
	free(c->dbuf);
	c->buf = c->dbuf = NULL;
	c->gen = 0;
	c->whole = 1;
}

/* The cache of the souls of dir (NULL when it cannot be named: no
 * state directory; err says why).  A cache file that does not read is
 * an empty cache. */
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
	c->dirty = c->whole = 1;	/* until it reads */
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
	free(c->dbuf);
	free(c);
}

/* Entries are named by the file's name in the directory. */
static const char *
key(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

static struct soulcache_ent *
entry(struct soulcache *c, const char *path)
{
	struct soulcache_ent *e;

	path = key(path);
	if ((e = find(c, path)) == NULL) {
		grow(c);
		e = &c->e[c->n];
		memset(e, 0, sizeof *e);
		e->name = xstrdup(path);
		e->own = 2;
		soulcache_index(c, c->n++);
	}
	e->seen = 1;
	return e;
}

/* The skip soul `path' (whose stat is st) gives at now, decided
 * before from the same file: its line, compact JSON without wake_id,
 * at and duration_ms, good until the next call that changes the cache;
 * or NULL (a miss: read the soul). */
const char *
soulcache_get(struct soulcache *c, const char *path, const struct stat *st,
    time_t now)
{
	struct soulcache_ent *e = entry(c, path);
	long long id[SOULCACHE_NID];

	if (e->line == NULL || e->until <= (long long)now)
		return NULL;
	soulcache_identity(st, id);
	if (memcmp(id, e->id, sizeof id) != 0)
		return NULL;
	return e->line;
}

/* Keep the skip res of soul path (stat st), good until `until'. */
void
soulcache_put(struct soulcache *c, const char *path, const struct stat *st,
    time_t until, const json_t *res)
{
	struct soulcache_ent *e = entry(c, path);
	json_t *line = json_deep_copy(res);

	json_object_del(line, "wake_id");
	json_object_del(line, "at");
	json_object_del(line, "duration_ms");
	soulcache_line_drop(e);
	if ((e->line = json_line(line)) != NULL && e->own == 0)
		e->own = 1;
	json_decref(line);
	soulcache_identity(st, e->id);
	e->until = (long long)until;
	c->dirty = e->chg = 1;
}

/* Forget the skip kept for path (its soul was read afresh). */
void
soulcache_drop(struct soulcache *c, const char *path)
{
	struct soulcache_ent *e = entry(c, path);

	if (e->line != NULL) {
		soulcache_line_drop(e);
		memset(e->id, 0, sizeof e->id);
		e->until = 0;
		c->dirty = e->chg = 1;
	}
}

/* Since when the wake of soul path is deferred (throttled); 0: not. */
time_t
soulcache_deferred(struct soulcache *c, const char *path)
{
	struct soulcache_ent *e = find(c, key(path));

	return e != NULL ? (time_t)e->deferred : 0;
}

/* A wake of soul path was throttled at now (1), or went (0). */
void
soulcache_defer(struct soulcache *c, const char *path, int throttled,
    time_t now)
{
	struct soulcache_ent *e = entry(c, path);

	if (throttled && e->deferred == 0) {
		e->deferred = (long long)now;
		c->dirty = e->chg = 1;
	} else if (!throttled && e->deferred != 0) {
		e->deferred = 0;
		c->dirty = e->chg = 1;
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

/* Append d (the changed entries) to the delta, its head first when it
 * is new: 1 done, 0 when the base is to be written whole instead (it
 * is not the one read, or the delta would grow past its bound), -1.
 * The caller holds the cache's lock. */
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
	put(&h, d->p, d->len);
	r = state_write_all(fd, h.p, h.len) == -1 ? -1 : 1;
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

/* Write the cache back if it changed: what changed appended to the
 * delta, or the base whole (see the head of this file); with `whole'
 * (a round that met every soul of the directory) the entries of files
 * not met go. */
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
