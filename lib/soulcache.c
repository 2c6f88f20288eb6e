/*
 * soulcache.c - what a round learnt of each soul of a directory, so
 * that the next round touches a soul's YAML only when it changed: a
 * not-due agent costs a stat and a comparison.
 *
 * STATE/rounds/HASH.json (HASH of the directory's real path) holds,
 * per soul file (by its name in the directory): its identity when it was read (device, inode, size,
 * modification and change times to the nanosecond), the time before
 * which no gate of it can pass (wake_admit's, cap and breaker left
 * out: they only ever hold a wake back longer), the skip it gave then,
 * and since when its wake is deferred by the fleet's rate limit.
 *
 * Invariants: an entry serves only while the file's identity is the
 * one kept (an edit, a touch, a rename or a replace-by-rename misses)
 * and its time has not come; an entry of a file gone is dropped at the
 * next save; the cache is replaced whole (state_write_json under
 * rounds/HASH.lock) and a cache that does not read is rebuilt: it is
 * never trusted over the file.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"

struct soulcache {
	char	 dir[4096];	/* STATE/rounds */
	char	 name[40];	/* HASH.json */
	char	 real[PATH_MAX];	/* the souls' directory */
	json_t	*souls;		/* path -> entry */
	json_t	*seen;		/* path -> true: met in this round */
	int	 dirty;
};

static json_t *
identity(const struct stat *st)
{
	return json_pack("[I,I,I,I,I,I,I]", (json_int_t)st->st_dev,
	    (json_int_t)st->st_ino, (json_int_t)st->st_size,
	    (json_int_t)st->st_mtim.tv_sec, (json_int_t)st->st_mtim.tv_nsec,
	    (json_int_t)st->st_ctim.tv_sec, (json_int_t)st->st_ctim.tv_nsec);
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
	char hash[17], e[HEART_ERRLEN];
	json_t *j = NULL;

	if (realpath(dir, c->real) == NULL)
		snprintf(c->real, sizeof c->real, "%s", dir);
	ghost_hash(c->real, hash);
	snprintf(c->name, sizeof c->name, "%s.json", hash);
	if (state_dir(c->dir, sizeof c->dir, err) == -1) {
		free(c);
		return NULL;
	}
	strncat(c->dir, "/rounds", sizeof c->dir - strlen(c->dir) - 1);
	if (state_read_json(c->dir, c->name, &j, e) == 0 && j != NULL &&
	    json_is_object(json_object_get(j, "souls")) &&
	    json_is_string(json_object_get(j, "dir")) &&
	    strcmp(json_string_value(json_object_get(j, "dir")), c->real) ==
	    0)
		c->souls = json_incref(json_object_get(j, "souls"));
	json_decref(j);
	if (c->souls == NULL) {
		c->souls = json_object();
		c->dirty = 1;
	}
	c->seen = json_object();
	return c;
}

void
soulcache_free(struct soulcache *c)
{
	if (c == NULL)
		return;
	json_decref(c->souls);
	json_decref(c->seen);
	free(c);
}

/* Entries are named by the file's name in the directory. */
static const char *
key(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

static json_t *
entry(struct soulcache *c, const char *path)
{
	json_t *e;

	path = key(path);
	json_object_set_new(c->seen, path, json_true());
	if ((e = json_object_get(c->souls, path)) == NULL) {
		e = json_object();
		json_object_set_new(c->souls, path, e);
	}
	return e;
}

/*
 * The skip soul `path' (whose stat is st) gives at now, decided
 * before from the same file: a copy of its result, or NULL (a miss:
 * read the soul).
 */
json_t *
soulcache_get(struct soulcache *c, const char *path, const struct stat *st,
    time_t now)
{
	json_t *e = entry(c, path), *id, *line, *bound;
	int same;

	if ((line = json_object_get(e, "line")) == NULL)
		return NULL;
	id = identity(st);
	same = json_equal(id, json_object_get(e, "id"));
	json_decref(id);
	bound = json_object_get(e, "until");
	if (!same || !json_is_integer(bound) ||
	    json_integer_value(bound) <= (json_int_t)now ||
	    !json_is_object(line))
		return NULL;
	return json_deep_copy(line);
}

/* Keep the skip res of soul path (stat st), good until `until'. */
void
soulcache_put(struct soulcache *c, const char *path, const struct stat *st,
    time_t until, const json_t *res)
{
	json_t *e = entry(c, path), *line = json_deep_copy(res);

	json_object_del(line, "wake_id");
	json_object_del(line, "at");
	json_object_del(line, "duration_ms");
	json_object_set_new(e, "id", identity(st));
	json_object_set_new(e, "until", json_integer((json_int_t)until));
	json_object_set_new(e, "line", line);
	c->dirty = 1;
}

/* Forget the skip kept for path (its soul was read afresh). */
void
soulcache_drop(struct soulcache *c, const char *path)
{
	json_t *e = entry(c, path);

	if (json_object_get(e, "line") != NULL) {
		json_object_del(e, "line");
		json_object_del(e, "until");
		json_object_del(e, "id");
		c->dirty = 1;
	}
}

/* Since when the wake of soul path is deferred (throttled); 0: not. */
time_t
soulcache_deferred(struct soulcache *c, const char *path)
{
	json_t *e = json_object_get(c->souls, key(path));

	return (time_t)json_integer_value(json_object_get(e, "deferred"));
}

/* A wake of soul path was throttled at now (1), or went (0). */
void
soulcache_defer(struct soulcache *c, const char *path, int throttled,
    time_t now)
{
	json_t *e = entry(c, path);

	if (throttled && soulcache_deferred(c, path) == 0) {
		json_object_set_new(e, "deferred", json_integer(
		    (json_int_t)now));
		c->dirty = 1;
	} else if (!throttled && json_object_get(e, "deferred") != NULL) {
		json_object_del(e, "deferred");
		c->dirty = 1;
	}
}

/*
 * Write the cache back if it changed; with `whole' (a round that met
 * every soul of the directory) the entries of files not met go.
 */
int
soulcache_save(struct soulcache *c, int whole, char *err)
{
	const char *path;
	json_t *e, *j;
	void *tmp;
	char lock[40];
	int fd, r;

	if (whole)
		json_object_foreach_safe(c->souls, tmp, path, e)
			if (json_object_get(c->seen, path) == NULL) {
				json_object_del(c->souls, path);
				c->dirty = 1;
			}
	if (!c->dirty)
		return 0;
	if (state_subdir("rounds", c->dir, sizeof c->dir, err) == -1)
		return -1;
	snprintf(lock, sizeof lock, "%.*s.lock", (int)strcspn(c->name, "."),
	    c->name);
	if ((fd = state_lock(c->dir, lock, LOCK_EX, err)) < 0)
		return -1;
	j = json_pack("{s:i,s:s,s:O}", "v", 1, "dir", c->real, "souls",
	    c->souls);
	r = state_write_json(c->dir, c->name, j, err);
	json_decref(j);
	state_unlock(fd);
	if (r == 0)
		c->dirty = 0;
	return r;
}
