/*
 * state.c - the state directory and its files.
 *
 * Invariants: directories are created 0700 and files 0600; a state
 * file is only ever replaced whole, by writing a temporary file beside
 * it, fdatasync, rename, and only by a writer that holds the file's
 * lock (so one fixed temporary name per file is safe and a writer
 * killed half-way leaves the old file intact).  A document rewritten
 * for ever (state_swap_json) is swapped with its temporary file
 * instead of renamed over, so that the file system allocates it no
 * new inode: its previous version stays behind as .NAME.tmp, and is
 * written over in place at the next change, then cut to its new
 * length if it was longer (never truncated first: that frees its
 * blocks, to be allocated again at once, each freed one a discard on a
 * file system mounted with it).  The rename is made durable by an
 * fsync of the directory where a promise needs it now (STATE_SYNC); a
 * STATE_WHOLE file's rename waits for the next sync of its directory;
 * a STATE_CACHE file, rebuilt when it does not read, is not synced at
 * all (heart(7), State).  The files heart writes outside it (heart-cap
 * status --prom) are replaced the same way, from a temporary file of
 * their own (state_replace).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"

int
state_dir(char *buf, size_t n, char *err)
{
	const char *d;

	if ((d = getenv("HEART_STATE_DIR")) != NULL && *d != '\0')
		snprintf(buf, n, "%s", d);
	else if ((d = getenv("XDG_STATE_HOME")) != NULL && *d == '/')
		snprintf(buf, n, "%s/heart", d);
	else if ((d = getenv("HOME")) != NULL && *d == '/')
		snprintf(buf, n, "%s/.local/state/heart", d);
	else {
		errf(err, "no state directory: set HEART_STATE_DIR or HOME");
		return -1;
	}
	return 0;
}

/*
 * mkdir -p, 0700.  The deepest directory is tried first and its parents
 * only when it says ENOENT: a new agent's directory under a state
 * directory that exists costs one mkdir, not one per level.
 */
static int
mkdirs(char *path, char *err)
{
	char *slash;
	struct stat st;
	int rc;

	if (mkdir(path, 0700) == 0)
		return 0;
	if ((errno == ENOENT || errno == ENOTDIR) &&
	    (slash = strrchr(path, '/')) != NULL &&
	    slash != path) {
		*slash = '\0';
		rc = mkdirs(path, err);
		*slash = '/';
		if (rc == -1)
			return -1;
		if (mkdir(path, 0700) == 0)
			return 0;
	}
	if (errno != EEXIST) {
		errf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (stat(path, &st) == -1 || !S_ISDIR(st.st_mode)) {
		errf(err, "%s: not a directory", path);
		return -1;
	}
	return 0;
}

/* The directory of agent `id'; created (0700) when `create' is set. */
int
state_agent_dir(const char *id, int create, char *out, size_t n, char *err)
{
	char dir[4096];
	struct stat st;

	if (id_check(id, err) == -1)
		return -1;
	if (state_dir(dir, sizeof dir, err) == -1)
		return -1;
	if ((size_t)snprintf(out, n, "%s/agents/%s", dir, id) >= n) {
		errf(err, "%s: state directory path too long", dir);
		return -1;
	}
	if (create && !(stat(out, &st) == 0 && S_ISDIR(st.st_mode)))
		return mkdirs(out, err);
	return 0;
}

static int
cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every valid agent id under agents/, sorted; none is not an error. */
int
state_agents(char ***listo, size_t *no, char *err)
{
	char dir[4096];
	struct dirent *de;
	char **list = NULL;
	size_t n = 0;
	DIR *dp;

	*listo = NULL;
	*no = 0;
	if (state_dir(dir, sizeof dir, err) == -1)
		return -1;
	strncat(dir, "/agents", sizeof dir - strlen(dir) - 1);
	if ((dp = opendir(dir)) == NULL) {
		if (errno == ENOENT)
			return 0;
		errf(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(dp)) != NULL) {
		if (!id_valid(de->d_name))
			continue;
		if ((list = realloc(list, (n + 1) * sizeof *list)) == NULL)
			abort();
		list[n++] = xstrdup(de->d_name);
	}
	closedir(dp);
	if (n > 0)
		qsort(list, n, sizeof *list, cmpstr);
	*listo = list;
	*no = n;
	return 0;
}

void
state_free_list(char **list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/*
 * Lock file `name' in `dir' (created 0600).  flags: LOCK_EX or LOCK_SH,
 * optionally | LOCK_NB.  Returns the descriptor, -1 on error, or -2
 * when LOCK_NB was asked and someone else holds the lock.
 */
int
state_lock(const char *dir, const char *name, int flags, char *err)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		errf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(fd, flags) == -1) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK) {
			close(fd);
			return -2;
		}
		errf(err, "%s: lock: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void
state_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* Write all of p to fd, whatever write(2) does in pieces. */
int
state_write_all(int fd, const char *p, size_t len)
{
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* fsync(2) a directory, so that a rename in it is kept. */
int
state_sync_dir(const char *dir)
{
	int fd, r;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

/*
 * Write data over the temporary file tmp (fd, open at its start; what
 * it held past len cut off), sync it as `keep' says, give it mode,
 * rename it over path (with `swap', swap the two where the file system
 * can and path exists) and, for STATE_SYNC, sync dir: the one way a
 * file of heart is replaced whole.  tmp is gone unless the rename was
 * made, or holds what path held.
 */
static int
replace(int fd, const char *tmp, const char *path, const char *dir,
    const char *data, size_t len, mode_t mode, enum state_keep keep,
    int swap, char *err)
{
	struct stat st;

	/* cut only a longer file: ext4 truncates even to the same length */
	if (fstat(fd, &st) == -1 || state_write_all(fd, data, len) == -1 ||
	    (st.st_size > (off_t)len && ftruncate(fd, (off_t)len) == -1) ||
	    (keep != STATE_CACHE && fdatasync(fd) == -1) || (mode != 0600 &&
	    fchmod(fd, mode) == -1)) {
		close(fd);
		goto fail;
	}
	if (close(fd) == -1)
		goto fail;
	/* an exchange fails, changing nothing, when path is not there yet
	 * or the file system cannot (EINVAL): then a rename */
	if ((!swap || renameat2(AT_FDCWD, tmp, AT_FDCWD, path,
	    RENAME_EXCHANGE) == -1) && rename(tmp, path) == -1)
		goto fail;
	if (keep == STATE_SYNC && state_sync_dir(dir) == -1) {
		errf(err, "%s: cannot write: %s", path, strerror(errno));
		return -1;
	}
	return 0;
fail:
	errf(err, "%s: cannot write: %s", path, strerror(errno));
	unlink(tmp);
	return -1;
}

/* Replace dir/name with data, atomically, kept as `keep' says; with
 * `swap', swapped with its temporary file.  Caller holds name's lock:
 * one fixed temporary name is enough. */
static int
put(const char *dir, const char *name, const char *data, size_t len,
    enum state_keep keep, int swap, char *err)
{
	char tmp[4096], path[4096];
	int fd;

	snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {	/* the temporary file is the one to name */
		errf(err, "%s: cannot write: %s", tmp, strerror(errno));
		return -1;
	}
	return replace(fd, tmp, path, dir, data, len, 0600, keep, swap,
	    err);
}

int
state_put(const char *dir, const char *name, const char *data,
    size_t len, enum state_keep keep, char *err)
{
	return put(dir, name, data, len, keep, 0, err);
}

/* state_put, durable at once: the way of every file no promise
 * relaxes. */
int
state_write(const char *dir, const char *name, const char *data,
    size_t len, char *err)
{
	return state_put(dir, name, data, len, STATE_SYNC, err);
}

/* Replace path, outside the state directory, with data, mode mode: no
 * lock is held, so the temporary file (prefix, then six random
 * characters) is one of its own. */
int
state_replace(const char *path, const char *prefix, const char *data,
    size_t len, mode_t mode, char *err)
{
	char tmp[4200], dir[4096], *p;
	int fd;

	snprintf(dir, sizeof dir, "%s", path);
	if ((p = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (p == dir)
		p[1] = '\0';
	else
		*p = '\0';
	snprintf(tmp, sizeof tmp, "%s/%sXXXXXX", dir, prefix);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		errf(err, "%s: cannot write: %s", path, strerror(errno));
		return -1;
	}
	return replace(fd, tmp, path, dir, data, len, mode, STATE_SYNC, 0,
	    err);
}

/*
 * Read dir/name as a JSON object: 0 (a missing file is not an error:
 * *out is NULL), -1 with err when it cannot be read or is not a
 * regular file, -2 with err when
 * it does not parse or is not an object.  Read whole with one read(2)
 * and parsed from the buffer: jansson's own file reader takes a byte
 * at a time through stdio, and a wake reads a dozen of these.  A file
 * that cannot be read whole goes to that reader, for its message.
 */
static int
read_obj(const char *dir, const char *name, json_t **out, char *err)
{
	char path[4096], *buf;
	json_error_t je;
	struct stat st;
	size_t len;
	json_t *j;

	*out = NULL;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	/* a FIFO would wait for a writer, a directory is no document */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		errf(err, "%s: not a regular file; remove it by hand", path);
		return -1;
	}
	if (file_read(path, SIZE_MAX - 2, &buf, &len) == 0) {
		j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
		free(buf);
	} else if (errno == ENOENT)
		return 0;
	else
		j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (j == NULL) {
		if (access(path, F_OK) == -1 && errno == ENOENT)
			return 0;
		if (access(path, R_OK) == -1) {
			errf(err, "%s: %s", path, strerror(errno));
			return -1;
		}
		errf(err, "%s: not valid JSON at line %d: %s", path, je.line,
		    je.text);
		return -2;
	}
	if (!json_is_object(j)) {
		errf(err, "%s: not a JSON object", path);
		json_decref(j);
		return -2;
	}
	*out = j;
	return 0;
}

/* read_obj's -2 as the -1 of a file only a person can mend. */
static int
by_hand(char *err)
{
	strncat(err, "; fix or remove it by hand", HEART_ERRLEN -
	    strlen(err) - 1);
	return -1;
}

int
state_read_json(const char *dir, const char *name, json_t **out, char *err)
{
	int r;

	if ((r = read_obj(dir, name, out, err)) == -2)
		return by_hand(err);
	return r;
}

/*
 * state_read_json for a document replaced by swapping it with its
 * temporary file (state_swap_json), whose partner .NAME.tmp holds the
 * version before it.  A swap not followed by a sync of the directory
 * may not be on the disk when the next change writes over the partner
 * in place: a power cut in that moment can leave the document the disk
 * names torn, never both (each was synced before it was swapped in).
 * So a document that does not read is read from its partner, and the
 * reader says so (warning.c), once per document; the next change
 * writes it whole again (heart(7), State).
 */
int
state_read_doc(const char *dir, const char *name, json_t **out, char *err)
{
	static uint64_t told[16];
	char tmp[4096], e2[HEART_ERRLEN];
	uint64_t h;
	size_t i;
	int r;

	if ((r = read_obj(dir, name, out, err)) != -2)
		return r;
	snprintf(tmp, sizeof tmp, ".%s.tmp", name);
	if (read_obj(dir, tmp, out, e2) != 0 || *out == NULL)
		return by_hand(err);	/* *out NULL: read_obj's first step */
	h = fnv1a_str(fnv1a_str(FNV_BASIS, dir), name);
	for (i = 0; i < 16 && told[i] != 0 && told[i] != h; i++)
		;
	if (i == 16 || told[i] == 0) {
		warningf("warning", "%s; read %s/%s, the version before "
		    "it (a power cut can leave one torn: heart(7), State)",
		    err, dir, tmp);
		if (i < 16)
			told[i] = h;
	}
	err[0] = '\0';
	return 0;
}

/* A count of a state document: key missing or null is 0; -1 when it
 * is not a whole number from 0. */
int
state_count(const json_t *o, const char *key, long long *v)
{
	const json_t *j = json_object_get(o, key);

	*v = 0;
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return -1;
	*v = json_integer_value(j);
	return 0;
}

static int
put_json(const char *dir, const char *name, const json_t *j,
    enum state_keep keep, int swap, char *err)
{
	size_t len;
	char *s;
	int r;

	if ((s = json_dumps(j, JSON_COMPACT)) == NULL) {
		errf(err, "%s/%s: cannot encode JSON", dir, name);
		return -1;
	}
	len = strlen(s);
	if ((s = realloc(s, len + 2)) == NULL)
		abort();
	s[len] = '\n';
	s[len + 1] = '\0';
	r = put(dir, name, s, len + 1, keep, swap, err);
	free(s);
	return r;
}

/*
 * state_write_json, kept as `keep' says, for a document that is
 * rewritten for ever and never removed (an agent's cap, wake, breaker;
 * an endpoint's bucket): its previous version stays as .NAME.tmp, and
 * the file system allocates it no new inode after its first write.
 * New inodes were a wake's largest single cost on ext4 without a
 * journal, which looks through the inodes freed in the last minutes
 * for each one (heart(7), State).
 */
int
state_swap_json(const char *dir, const char *name, const json_t *j,
    enum state_keep keep, char *err)
{
	return put_json(dir, name, j, keep, 1, err);
}

int
state_write_json(const char *dir, const char *name, const json_t *j,
    char *err)
{
	return put_json(dir, name, j, STATE_SYNC, 0, err);
}

/* The directory STATE/name (one level, e.g. "pulse"), created 0700. */
int
state_subdir(const char *name, char *out, size_t n, char *err)
{
	char dir[4096];

	if (state_dir(dir, sizeof dir, err) == -1)
		return -1;
	if ((size_t)snprintf(out, n, "%s/%s", dir, name) >= n) {
		errf(err, "%s: state directory path too long", dir);
		return -1;
	}
	return mkdirs(out, err);
}
