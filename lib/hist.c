/*
 * hist.c - the agent's history, agents/ID/history.jsonl.
 *
 * One message per line, as the wake had it, plus "wake_id", "chamber"
 * and "at" of its wake and "part"/"parts" (1/3, 2/3, 3/3): a wake is
 * whole when its lines run from part 1 to part == parts.  A line
 * without part and parts (written by hand) is a whole wake of one.
 *
 * A wake id is committed once: hist_commit looks for it among the
 * whole wakes first (a process reads each history once, then only what
 * was added to it), and a wake already there is not written again.
 *
 * Invariants.  Only hist_commit writes, and only under an exclusive
 * flock on agents/ID/history.lock: it appends a wake in one write and
 * fsyncs (or, to trim with a keep, replaces the file by rename).
 * Readers take the lock shared.  A writer killed half-way leaves a torn
 * tail: bytes after the last newline, at most one last line that does
 * not parse, and lines of a wake that never reached its last part.
 * Readers ignore the torn tail; the next writer cuts it off before it
 * appends.  Anything damaged before the tail is an error, never
 * silently dropped: its message names the file, the line and the
 * repair, hist_repair, which under the same exclusive lock appends
 * every byte that is not a whole wake to agents/ID/history.damaged
 * (synced first) and then replaces the history with its whole wakes
 * (state_write): a crash between keeps the bytes twice, never none.
 */
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

#define HISTFILE	"history.jsonl"
#define HISTLOCK	"history.lock"
#define ASIDEFILE	"history.damaged"
#define INPUTFILE	"input"
#define CHUNK		65536

/* The file read backwards, line by line. */
struct back {
	int	 fd;
	const char *path;
	char	*buf;		/* the file's bytes [lo, hi) */
	off_t	 lo, hi;
	off_t	 cur;		/* lines before cur are still to come */
	long	 nread;		/* lines returned so far */
};

/* The wakes of the file, read backwards. */
struct walk {
	struct back b;
	const char *agent;	/* whose: the repair named */
	int	 tail;		/* still inside the torn tail */
	off_t	 good_end;	/* end of the last whole wake */
};

static int
ioerr(const char *path, const char *what, char *err)
{
	errf(err, "%s: %s: %s", path, what, strerror(errno));
	return -1;
}

/* Read more of the file before lo, keeping [lo, keep) of what we have. */
static int
back_grow(struct back *b, off_t keep, char *err)
{
	off_t more = keep - b->lo > CHUNK ? keep - b->lo : CHUNK;
	off_t nlo = b->lo > more ? b->lo - more : 0, o;
	char *nb;
	ssize_t r;

	if ((nb = malloc((size_t)(keep - nlo) + 1)) == NULL)
		abort();
	if (keep > b->lo)
		memcpy(nb + (b->lo - nlo), b->buf, (size_t)(keep - b->lo));
	for (o = nlo; o < b->lo; o += r) {
		r = pread(b->fd, nb + (o - nlo), (size_t)(b->lo - o), o);
		if (r <= 0) {
			free(nb);
			if (r == 0)
				errno = EIO;
			return ioerr(b->path, "read", err);
		}
	}
	free(b->buf);
	b->buf = nb;
	b->lo = nlo;
	b->hi = keep;
	return 0;
}

/* The offset of the last newline before off: 1, 0 if none, -1 error. */
static int
back_nl(struct back *b, off_t off, off_t *nl, char *err)
{
	off_t upto = off;
	char *q;

	for (;;) {
		if (upto > b->lo && (q = memrchr(b->buf, '\n',
		    (size_t)(upto - b->lo))) != NULL) {
			*nl = b->lo + (q - b->buf);
			return 1;
		}
		if (b->lo == 0)
			return 0;
		upto = b->lo;
		if (back_grow(b, off, err) == -1)
			return -1;
	}
}

/* Start reading backwards; bytes after the last newline are torn. */
static int
back_init(struct back *b, int fd, const char *path, char *err)
{
	struct stat st;
	off_t nl;
	int r;

	memset(b, 0, sizeof *b);
	b->fd = fd;
	b->path = path;
	if (fstat(fd, &st) == -1)
		return ioerr(path, "stat", err);
	b->lo = b->hi = st.st_size;
	if ((r = back_nl(b, st.st_size, &nl, err)) == -1)
		return -1;
	b->cur = r == 1 ? nl + 1 : 0;
	return 0;
}

static void
back_free(struct back *b)
{
	free(b->buf);
	b->buf = NULL;
}

/* The line before cur, without its newline: 1, 0 at the start, -1. */
static int
back_prev(struct back *b, const char **line, size_t *len, off_t *start,
    char *err)
{
	off_t nl, s;
	int r;

	if (b->cur == 0)
		return 0;
	if ((r = back_nl(b, b->cur - 1, &nl, err)) == -1)
		return -1;
	s = r == 1 ? nl + 1 : 0;
	*line = b->buf + (s - b->lo);
	*len = (size_t)(b->cur - 1 - s);
	*start = s;
	b->cur = s;
	b->nread++;
	return 1;
}

static json_t *
parse_line(const char *p, size_t len)
{
	json_t *j = json_loadb(p, len, JSON_REJECT_DUPLICATES, NULL);

	if (j != NULL && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* part and parts of a line; 1/1 when it has neither; -1 when bad. */
static int
line_part(json_t *o, long long *part, long long *parts)
{
	json_t *a = json_object_get(o, "part"), *b = json_object_get(o,
	    "parts");

	if (a == NULL && b == NULL) {
		*part = *parts = 1;
		return 0;
	}
	if (!json_is_integer(a) || !json_is_integer(b))
		return -1;
	*part = json_integer_value(a);
	*parts = json_integer_value(b);
	return *part >= 1 && *part <= *parts ? 0 : -1;
}

/* The line of the file on fd that byte at is on, counted from 1. */
static long long
line_at(int fd, off_t at)
{
	char buf[CHUNK];
	long long line = 1;
	off_t o;
	ssize_t r;
	char *p;

	for (o = 0; o < at; o += r) {
		r = pread(fd, buf, at - o < CHUNK ? (size_t)(at - o) : CHUNK,
		    o);
		if (r <= 0)
			break;
		for (p = buf; (p = memchr(p, '\n', (size_t)(buf + r - p))) !=
		    NULL; p++)
			line++;
	}
	return line;
}

static int
damaged(struct walk *w, off_t at, const char *why, char *err)
{
	errf(err, "%s: damaged at line %lld (byte %lld): %s; heart-ghost "
	    "--repair %s sets it aside (heart-ghost(1))", w->b.path,
	    line_at(w->b.fd, at), (long long)at + 1, why, w->agent);
	return -1;
}

static int
walk_init(struct walk *w, int fd, const char *path, const char *agent,
    char *err)
{
	if (back_init(&w->b, fd, path, err) == -1)
		return -1;
	w->agent = agent;
	w->tail = 1;
	w->good_end = 0;
	return 0;
}

/* The last line of the next wake back, skipping the torn tail. */
static int
walk_last(struct walk *w, json_t **jo, off_t *starto, long long *partso,
    char *err)
{
	const char *p;
	size_t len;
	off_t s;
	long long part, parts;
	json_t *j;
	int r;

	for (;;) {
		if ((r = back_prev(&w->b, &p, &len, &s, err)) != 1) {
			w->tail = 0;
			return r;
		}
		if ((j = parse_line(p, len)) == NULL) {
			/* the last line may be one torn by a crash */
			if (w->tail && w->b.nread == 1)
				continue;
			return damaged(w, s, "a line that is not a JSON "
			    "object", err);
		}
		if (line_part(j, &part, &parts) == -1) {
			json_decref(j);
			return damaged(w, s, "bad part/parts", err);
		}
		if (part == parts)
			break;
		json_decref(j);
		if (!w->tail)
			return damaged(w, s, "a wake cut short", err);
	}
	if (w->tail)
		w->good_end = s + (off_t)len + 1;
	w->tail = 0;
	*jo = j;
	*starto = s;
	*partso = parts;
	return 1;
}

static const char *
str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int
same_wake(json_t *a, json_t *b)
{
	const char *x = str(a, "wake_id"), *y = str(b, "wake_id");

	return x != NULL && y != NULL && strcmp(x, y) == 0;
}

/*
 * The next whole wake back: 1 with its lines in file order in *wakeo
 * (a new array) and its first byte in *starto; 0 at the beginning of
 * the file; -1 when damaged or unreadable.
 */
static int
walk_prev(struct walk *w, json_t **wakeo, off_t *starto, char *err)
{
	long long parts, k, part, ps;
	const char *p;
	size_t len;
	json_t *last, *j, *wake;
	off_t s;
	int r;

	if ((r = walk_last(w, &last, &s, &parts, err)) != 1)
		return r;
	wake = json_array();
	json_array_append_new(wake, last);
	for (k = parts - 1; k >= 1; k--) {
		if ((r = back_prev(&w->b, &p, &len, &s, err)) == -1)
			goto fail;
		if (r == 0) {
			damaged(w, 0, "a wake without its first part", err);
			goto fail;
		}
		if ((j = parse_line(p, len)) == NULL ||
		    line_part(j, &part, &ps) == -1 || part != k ||
		    ps != parts || !same_wake(j, last)) {
			json_decref(j);
			damaged(w, s, "a wake cut short", err);
			goto fail;
		}
		json_array_insert_new(wake, 0, j);
	}
	*wakeo = wake;
	*starto = s;
	return 1;
fail:
	json_decref(wake);
	return -1;
}

static int
utf8_ok(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

static char *
wake_lines(const json_t *messages, const char *wake_id, const char *chamber,
    const char *at, size_t *leno, char *err)
{
	size_t i, n = json_array_size(messages), len = 0;
	char *buf = NULL, *line;
	json_t *m, *c;

	if (!json_is_array(messages) || n == 0) {
		errf(err, "a wake without messages");
		return NULL;
	}
	if (wake_id == NULL || chamber == NULL || at == NULL ||
	    !utf8_ok(wake_id) || !utf8_ok(chamber) || !utf8_ok(at)) {
		errf(err, "a wake without a wake_id, chamber or time");
		return NULL;
	}
	json_array_foreach(messages, i, m) {
		if (!json_is_object(m) ||
		    !json_is_string(json_object_get(m, "role"))) {
			errf(err, "message %zu is not an object with a role",
			    i + 1);
			free(buf);
			return NULL;
		}
		c = json_copy(m);
		json_object_set_new(c, "wake_id", json_string(wake_id));
		json_object_set_new(c, "chamber", json_string(chamber));
		json_object_set_new(c, "at", json_string(at));
		json_object_set_new(c, "part",
		    json_integer((json_int_t)i + 1));
		json_object_set_new(c, "parts", json_integer((json_int_t)n));
		line = json_dumps(c, JSON_COMPACT);
		json_decref(c);
		if (line == NULL) {
			errf(err, "message %zu cannot be encoded", i + 1);
			free(buf);
			return NULL;
		}
		size_t ll = strlen(line);
		if ((buf = realloc(buf, len + ll + 2)) == NULL)
			abort();
		memcpy(buf + len, line, ll);
		buf[len + ll] = '\n';
		len += ll + 1;
		free(line);
	}
	*leno = len;
	return buf;
}

static int
pwrite_all(int fd, const char *p, size_t len, off_t off)
{
	ssize_t w;

	while (len > 0) {
		if ((w = pwrite(fd, p, len, off)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

/*
 * Find where the whole wakes end (*endo) and, when keep > 0 and the
 * file holds keep wakes or more, where the last keep - 1 of them start
 * (*keepo; -1 when nothing needs trimming).
 */
static int
find_ends(int fd, const char *path, const char *agent, long long keep,
    off_t *endo, off_t *keepo, char *err)
{
	struct walk w;
	long long n, want = keep > 0 ? keep : 1;
	off_t s, from = -1;
	json_t *wake;
	int r = 0;

	*keepo = -1;
	if (walk_init(&w, fd, path, agent, err) == -1)
		return -1;
	for (n = 0; n < want; n++) {
		if ((r = walk_prev(&w, &wake, &s, err)) != 1)
			break;
		json_decref(wake);
		if (n == 0)
			from = w.good_end;
		if (n + 1 < keep)
			from = s;
	}
	*endo = w.good_end;
	if (r != -1 && keep > 0 && n == keep)
		*keepo = keep == 1 ? w.good_end : from;
	back_free(&w.b);
	return r == -1 ? -1 : 0;
}

/* Replace the file with its bytes [from, end) and then buf. */
static int
rewrite(int fd, const char *dir, const char *path, off_t from, off_t end,
    const char *buf, size_t len, char *err)
{
	size_t old = (size_t)(end - from);
	char *all;
	ssize_t r;
	size_t o;
	int rc;

	if ((all = malloc(old + len + 1)) == NULL)
		abort();
	for (o = 0; o < old; o += (size_t)r)
		if ((r = pread(fd, all + o, old - o, from + (off_t)o)) <= 0) {
			if (r == 0)
				errno = EIO;
			free(all);
			return ioerr(path, "read", err);
		}
	memcpy(all + old, buf, len);
	rc = state_write(dir, HISTFILE, all, old + len, err);
	free(all);
	return rc;
}

static int
append(int fd, const char *dir, const char *path, off_t end, int created,
    const char *buf, size_t len, char *err)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return ioerr(path, "stat", err);
	if (end < st.st_size && ftruncate(fd, end) == -1)
		return ioerr(path, "cutting off a torn tail", err);
	if (pwrite_all(fd, buf, len, end) == -1 || fdatasync(fd) == -1) {
		int e = errno;
		if (ftruncate(fd, end) == 0)
			fdatasync(fd);
		errno = e;
		return ioerr(path, "write", err);
	}
	if (created && state_sync_dir(dir) == -1)
		return ioerr(dir, "fsync", err);
	return 0;
}

/*
 * The wake ids of the histories this process commits to, so that a run
 * of many results reads each history once, not once per result: per
 * agent directory, the ids of the whole wakes in the first `end' bytes
 * of its history file (that device and inode), each as hist_commit
 * writes it (a JSON string).  The first look of a process at a history
 * only searches it for the one id (a single result, as from cron); the
 * ids are collected from the second on.  Used and refreshed only under
 * the history lock; a file replaced or cut short is read again.
 */
struct seen {
	struct seen *next;
	char	*dir;
	dev_t	 dev;
	ino_t	 ino;
	off_t	 end;
	json_t	*ids;		/* id token -> true; NULL: not collected */
};
static struct seen *seen;

static const char idkey[] = "\"wake_id\":";

/*
 * The token of a line's top-level "wake_id" (a JSON string, quotes
 * included) into a new string, or NULL.  hist_commit writes it once,
 * just before "chamber"; any other line is parsed to be sure.
 */
static char *
line_id(const char *p, size_t len)
{
	struct jscan_member m = { "wake_id", NULL, 0, 0 };
	const char *e = p + len, *q, *t;
	char err[HEART_ERRLEN];

	if ((q = memmem(p, len, idkey, sizeof idkey - 1)) == NULL)
		return NULL;
	q += sizeof idkey - 1;
	for (t = q + 1; q < e && *q == '"' && t < e && *t != '"'; t++)
		if (*t == '\\')
			t++;
	if (q < e && *q == '"' && t < e && (size_t)(e - t) > 11 &&
	    memcmp(t + 1, ",\"chamber\":", 11) == 0 &&
	    memmem(t, (size_t)(e - t), idkey, sizeof idkey - 1) == NULL)
		return strndup(q, (size_t)(t + 1 - q));
	if (jscan_object(p, len, &m, 1, err) == -1 || m.type != JSCAN_STRING)
		return NULL;
	return strndup(m.val, m.len);
}

/*
 * Hand the bytes [from, to) of the file to fn, mapped, not copied: they
 * are whole lines (both ends are ends of whole wakes), and nobody
 * writes the file while the history lock is held.  Returns what fn
 * returned; -1 when the file cannot be mapped.
 */
static int
each_run(int fd, const char *path, off_t from, off_t to,
    int (*fn)(const char *, size_t, void *), void *arg, char *err)
{
	off_t base = from - from % (off_t)sysconf(_SC_PAGESIZE);
	char *map;
	int rc;

	if (from >= to)
		return 0;
	map = mmap(NULL, (size_t)(to - base), PROT_READ, MAP_PRIVATE, fd,
	    base);
	if (map == MAP_FAILED)
		return ioerr(path, "read", err);
	rc = fn(map + (from - base), (size_t)(to - from), arg);
	munmap(map, (size_t)(to - base));
	return rc;
}

/* each_run: is the id token arg the wake id of a line of the run? */
static int
has_id(const char *buf, size_t n, void *arg)
{
	const char *tok = arg, *m, *ls, *le;
	char *needle, *id;
	int r = 0;

	if (asprintf(&needle, "%s%s", idkey, tok) == -1)
		abort();
	for (m = buf; r == 0 && (m = memmem(m, n - (size_t)(m - buf), needle,
	    strlen(needle))) != NULL; m++) {
		ls = memrchr(buf, '\n', (size_t)(m - buf));
		ls = ls ? ls + 1 : buf;
		le = memchr(m, '\n', n - (size_t)(m - buf));
		id = line_id(ls, (size_t)(le - ls));
		r = id != NULL && strcmp(id, tok) == 0;
		free(id);
	}
	free(needle);
	return r;
}

/* each_run: add the wake ids of the run's lines to the object arg. */
static int
add_ids(const char *buf, size_t n, void *arg)
{
	const char *l, *le;
	char *id, *prev = NULL;

	for (l = buf; l < buf + n; l = le + 1) {
		le = memchr(l, '\n', n - (size_t)(l - buf));
		if ((id = line_id(l, (size_t)(le - l))) == NULL)
			continue;
		if (prev == NULL || strcmp(id, prev) != 0)
			json_object_set_new(arg, id, json_true());
		free(prev);
		prev = id;
	}
	free(prev);
	return 0;
}

/*
 * Is a whole wake of id (its token) among the first end bytes of the
 * history open on fd?  1 yes, 0 no, -1 unreadable; *sno is the agent's
 * entry in seen.
 */
static int
wake_known(const char *dir, int fd, const char *path, off_t end,
    const char *id, struct seen **sno, char *err)
{
	struct seen *sn;
	struct stat st;

	if (fstat(fd, &st) == -1)
		return ioerr(path, "stat", err);
	for (sn = seen; sn != NULL; sn = sn->next)
		if (strcmp(sn->dir, dir) == 0)
			break;
	*sno = sn;
	if (sn == NULL) {
		sn = *sno = xcalloc(1, sizeof *sn);
		sn->dir = xstrdup(dir);
		sn->next = seen;
		seen = sn;
		return each_run(fd, path, 0, end, has_id, (void *)id, err);
	}
	if (sn->ids == NULL || sn->dev != st.st_dev ||
	    sn->ino != st.st_ino || sn->end > end) {
		json_decref(sn->ids);
		sn->ids = json_object();
		sn->end = 0;
	}
	sn->dev = st.st_dev;
	sn->ino = st.st_ino;
	if (each_run(fd, path, sn->end, end, add_ids, sn->ids, err) == -1)
		return -1;
	sn->end = end;
	return json_object_get(sn->ids, id) != NULL;
}

/*
 * Append one wake (its messages, in order) to the history of agent, as
 * one commit.  keep > 0: afterwards the file holds at most keep wakes,
 * the oldest dropped whole.  Returns 0 when committed, 1 when a whole
 * wake of that wake id is in the history already (nothing is written:
 * the same result given twice is committed once), -1 on error.
 */
int
hist_commit(const char *agent, const json_t *messages, const char *wake_id,
    const char *chamber, const char *at, long long keep, char *err)
{
	char dir[4096], path[4200], *buf, *id;
	struct seen *sn;
	struct stat st;
	size_t len;
	off_t end, from;
	int lk, fd = -1, rc = -1, created;
	json_t *j;

	if ((buf = wake_lines(messages, wake_id, chamber, at, &len,
	    err)) == NULL)
		return -1;
	j = json_string(wake_id);
	id = json_dumps(j, JSON_ENCODE_ANY);
	json_decref(j);
	if (state_agent_dir(agent, 1, dir, sizeof dir, err) == -1)
		goto out;
	if ((lk = state_lock(dir, HISTLOCK, LOCK_EX, err)) < 0)
		goto out;
	snprintf(path, sizeof path, "%s/%s", dir, HISTFILE);
	created = lstat(path, &st) == -1 && errno == ENOENT;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		ioerr(path, "open", err);
	else if (find_ends(fd, path, agent, keep, &end, &from, err) == 0 &&
	    (rc = wake_known(dir, fd, path, end, id, &sn, err)) == 0) {
		if (from >= 0)
			rc = rewrite(fd, dir, path, from, end, buf, len, err);
		else if ((rc = append(fd, dir, path, end, created, buf, len,
		    err)) == 0 && sn->ids != NULL) {
			json_object_set_new(sn->ids, id, json_true());
			sn->end = end + (off_t)len;
		}
	}
	if (fd != -1)
		close(fd);
	state_unlock(lk);
out:
	free(id);
	free(buf);
	return rc;
}

/* Open the history for reading under a shared lock; 0 when none. */
static int
open_read(const char *agent, char *path, size_t n, int *lko, int *fdo,
    char *err)
{
	char dir[4096];
	struct stat st;

	*lko = *fdo = -1;
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1)
		return -1;
	if (stat(dir, &st) == -1 && errno == ENOENT)
		return 0;
	snprintf(path, n, "%s/%s", dir, HISTFILE);
	if ((*lko = state_lock(dir, HISTLOCK, LOCK_SH, err)) < 0)
		return -1;
	if ((*fdo = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		state_unlock(*lko);
		*lko = -1;
		if (errno == ENOENT)
			return 0;
		return ioerr(path, "open", err);
	}
	return 1;
}

/* The last n messages, from the end of the list of wakes (newest first). */
static json_t *
last_messages(json_t *wakes, size_t n)
{
	json_t *out = json_array(), *wake, *m;
	size_t i, j, k;

	for (i = json_array_size(wakes); i-- > 0;) {
		wake = json_array_get(wakes, i);
		json_array_foreach(wake, j, m) {
			json_object_del(m, "part");
			json_object_del(m, "parts");
			json_array_append(out, m);
		}
	}
	k = json_array_size(out) > n ? json_array_size(out) - n : 0;
	while (k < json_array_size(out)) {
		const char *role = str(json_array_get(out, k), "role");
		if (role == NULL || strcmp(role, "tool") != 0)
			break;
		k++;
	}
	for (i = 0; i < k; i++)
		json_array_remove(out, 0);
	return out;
}

/*
 * The last n messages of agent's history as a new JSON array, oldest
 * first; each is the wake's message with "wake_id", "chamber" and "at"
 * of its wake.  Only whole wakes are read (a torn tail is ignored).
 * The array never starts with a "tool" message whose call was cut
 * off, so it may hold fewer than n.  No history: an empty array.
 */
int
hist_tail(const char *agent, size_t n, json_t **out, char *err)
{
	char path[4200];
	struct walk w;
	json_t *wakes, *wake;
	size_t have = 0;
	off_t s;
	int lk, fd, r;

	*out = NULL;
	if ((r = open_read(agent, path, sizeof path, &lk, &fd, err)) == -1)
		return -1;
	if (r == 0 || n == 0) {
		if (r == 1) {
			close(fd);
			state_unlock(lk);
		}
		*out = json_array();
		return 0;
	}
	wakes = json_array();
	if ((r = walk_init(&w, fd, path, agent, err)) == 0)
		while (have < n && (r = walk_prev(&w, &wake, &s, err)) == 1) {
			have += json_array_size(wake);
			json_array_append_new(wakes, wake);
		}
	back_free(&w.b);
	close(fd);
	state_unlock(lk);
	if (r == -1) {
		json_decref(wakes);
		return -1;
	}
	*out = last_messages(wakes, n);
	json_decref(wakes);
	return 0;
}

/*
 * When the user last spoke: the "at" of the last message recorded by
 * hist_user (chamber "user"); 0 when there is none.
 */
int
hist_last_user(const char *agent, time_t *at, char *err)
{
	static const char mark[] = "\"chamber\":\"user\"";
	char path[4200];
	struct back b;
	const char *p;
	size_t len;
	off_t s;
	json_t *j;
	int lk, fd, r;

	*at = 0;
	if ((r = open_read(agent, path, sizeof path, &lk, &fd, err)) != 1)
		return r == -1 ? -1 : 0;
	if ((r = back_init(&b, fd, path, err)) == 0)
		while ((r = back_prev(&b, &p, &len, &s, err)) == 1) {
			if (memmem(p, len, mark, sizeof mark - 1) == NULL ||
			    (j = parse_line(p, len)) == NULL)
				continue;
			const char *ch = str(j, "chamber");
			int user = ch != NULL && strcmp(ch, "user") == 0 &&
			    clock_parse_utc(str(j, "at"), at) == 0;
			json_decref(j);
			if (user)
				break;
		}
	back_free(&b);
	close(fd);
	state_unlock(lk);
	return r == -1 ? -1 : 0;
}

/* Create or touch agents/ID/input (0600): its mtime becomes now. */
int
hist_touch_input(const char *agent, time_t now, char *err)
{
	char dir[4096], path[4200];
	struct timespec ts[2];
	int fd;

	if (state_agent_dir(agent, 1, dir, sizeof dir, err) == -1)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, INPUTFILE);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		return ioerr(path, "open", err);
	ts[0].tv_sec = ts[1].tv_sec = now;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	if (futimens(fd, ts) == -1) {
		close(fd);
		return ioerr(path, "touch", err);
	}
	close(fd);
	return 0;
}

/*
 * Whether text may be recorded as a message of the user: UTF-8, and
 * not only white space (heart-ghost(1), user).
 */
int
hist_user_text(const char *text, char *err)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t n = strlen(text), i, k;

	if (text[strspn(text, " \t\r\n")] == '\0') {
		errf(err, "an empty message is not recorded");
		return -1;
	}
	for (i = 0; i < n; i += k)
		if ((k = utf8_len(p + i, n - i)) == 0) {
			errf(err, "the message is not UTF-8 text");
			return -1;
		}
	return 0;
}

/*
 * Record a message of the user (hist_user_text says which may be): one
 * wake of its own (wake_id user-TIME-PID, chamber "user"), then touch
 * the input file, which is what the idle chamber watches.
 */
int
hist_user(const char *agent, const char *text, time_t now, long long keep,
    char *err)
{
	char id[64], at[32];
	json_t *msgs, *s;
	int rc;

	if (hist_user_text(text, err) == -1)
		return -1;
	if ((s = json_string(text)) == NULL) {
		errf(err, "the message is not UTF-8 text");
		return -1;
	}
	snprintf(id, sizeof id, "user-%lld-%ld", (long long)now,
	    (long)getpid());
	clock_utc(now, at, sizeof at);
	msgs = json_pack("[{s:s,s:o}]", "role", "user", "content", s);
	rc = hist_commit(agent, msgs, id, "user", at, keep, err);
	json_decref(msgs);
	if (rc != -1)
		rc = hist_touch_input(agent, now, err);
	return rc;
}

/*
 * hist_repair: the history taken apart line by line, front to back, by
 * the rule the readers apply back to front: its whole wakes are kept,
 * and every other run of bytes is set aside (a line that is not a JSON
 * object, a wake cut short, a torn tail).
 */
struct scan {
	const char *buf;
	char	*kept;		/* the whole wakes, in order */
	size_t	 klen;
	json_t	*runs;		/* set aside: {line, lines, byte, bytes, why} */
	off_t	 ws, we;	/* the wake begun: its bytes; ws -1: none */
	long long wline, wlines, next, parts;
	json_t	*first;		/* its first line */
};

/* Set [from, to), lines line on, aside, with the run before when the
 * two touch. */
static void
aside(struct scan *sc, off_t from, off_t to, long long line,
    long long lines, const char *why)
{
	size_t n = json_array_size(sc->runs);
	json_t *r = json_array_get(sc->runs, n - 1);
	long long b;

	if (n > 0 && (b = json_integer_value(json_object_get(r, "byte"))) +
	    json_integer_value(json_object_get(r, "bytes")) - 1 == from) {
		json_object_set_new(r, "bytes", json_integer(to - b + 1));
		json_object_set_new(r, "lines", json_integer(json_integer_value(
		    json_object_get(r, "lines")) + lines));
		return;
	}
	json_array_append_new(sc->runs, json_pack("{s:I,s:I,s:I,s:I,s:s}",
	    "line", (json_int_t)line, "lines", (json_int_t)lines, "byte",
	    (json_int_t)from + 1, "bytes", (json_int_t)(to - from), "why",
	    why));
}

static void
keep_run(struct scan *sc, off_t from, off_t to)
{
	memcpy(sc->kept + sc->klen, sc->buf + from, (size_t)(to - from));
	sc->klen += (size_t)(to - from);
}

/* The wake begun, if any, is cut short: set aside. */
static void
cut_short(struct scan *sc)
{
	if (sc->ws < 0)
		return;
	aside(sc, sc->ws, sc->we, sc->wline, sc->wlines, "a wake cut short");
	json_decref(sc->first);
	sc->first = NULL;
	sc->ws = -1;
}

/* The line [s, to) (ended: its last byte is its newline), line. */
static void
scan_line(struct scan *sc, off_t s, off_t to, int ended, long long line)
{
	long long part = 0, parts = 0;
	json_t *j;

	j = ended ? parse_line(sc->buf + s, (size_t)(to - s - 1)) : NULL;
	if (j == NULL || line_part(j, &part, &parts) == -1) {
		cut_short(sc);
		aside(sc, s, to, line, 1, !ended ? "a last line not ended" :
		    j == NULL ? "a line that is not a JSON object" :
		    "bad part/parts");
	} else if (sc->ws >= 0 && part == sc->next && parts == sc->parts &&
	    same_wake(j, sc->first)) {
		sc->next++;
		sc->we = to;
		sc->wlines++;
		if (part == parts) {
			keep_run(sc, sc->ws, to);
			json_decref(sc->first);
			sc->first = NULL;
			sc->ws = -1;
		}
	} else {
		cut_short(sc);
		if (part != 1)
			aside(sc, s, to, line, 1, "a wake cut short");
		else if (parts == 1)
			keep_run(sc, s, to);
		else {
			sc->ws = s;
			sc->we = to;
			sc->wline = line;
			sc->wlines = 1;
			sc->next = 2;
			sc->parts = parts;
			sc->first = j;
			return;
		}
	}
	json_decref(j);
}

/* Append the runs of sc to dir's history.damaged, synced. */
static int
put_aside(const char *dir, const struct scan *sc, time_t now, char *err)
{
	char path[4200], at[32], *head;
	long long b, n;
	size_t i;
	json_t *r;
	int fd, created, bad = 0;
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, ASIDEFILE);
	created = lstat(path, &st) == -1 && errno == ENOENT;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	if (fd == -1)
		return ioerr(path, "open", err);
	clock_utc(now, at, sizeof at);
	json_array_foreach(sc->runs, i, r) {
		b = json_integer_value(json_object_get(r, "byte")) - 1;
		n = json_integer_value(json_object_get(r, "bytes"));
		if (asprintf(&head, "# heart-ghost --repair, %s: %s line %lld "
		    "(%lld lines, bytes %lld-%lld): %s\n", at, HISTFILE,
		    json_integer_value(json_object_get(r, "line")),
		    json_integer_value(json_object_get(r, "lines")), b + 1,
		    b + n, str(r, "why")) == -1)
			abort();
		bad |= state_write_all(fd, head, strlen(head)) == -1 ||
		    state_write_all(fd, sc->buf + b, (size_t)n) == -1 ||
		    (sc->buf[b + n - 1] != '\n' &&
		    state_write_all(fd, "\n", 1) == -1);
		free(head);
	}
	if (bad || fdatasync(fd) == -1) {
		close(fd);
		return ioerr(path, "write", err);
	}
	close(fd);
	if (created && state_sync_dir(dir) == -1)
		return ioerr(dir, "fsync", err);
	return 0;
}

/* The len bytes of buf into sc: its whole wakes, its runs set aside. */
static void
scan_all(struct scan *sc, const char *buf, size_t len)
{
	const char *nl;
	long long line = 1;
	off_t s;

	memset(sc, 0, sizeof *sc);
	sc->buf = buf;
	sc->kept = xcalloc(len + 1, 1);
	sc->runs = json_array();
	sc->ws = -1;
	for (s = 0; (size_t)s < len; s = (off_t)(nl - buf) + 1, line++) {
		if ((nl = memchr(buf + s, '\n', len - (size_t)s)) == NULL) {
			scan_line(sc, s, (off_t)len, 0, line);
			break;
		}
		scan_line(sc, s, (off_t)(nl - buf) + 1, 1, line);
	}
	cut_short(sc);
}

/*
 * Set aside what is not a whole wake in agent's history (heart-ghost
 * --repair): appended to agents/ID/history.damaged, then the history
 * replaced by its whole wakes, under the history's lock.  *runs is the
 * runs set aside (an empty array: nothing was damaged), each with its
 * first line, its lines, its first byte (from 1), its bytes and why;
 * where, the file they went to.  0, or -1 with err.
 */
int
hist_repair(const char *agent, time_t now, json_t **runs, char *where,
    size_t wn, char *err)
{
	char dir[4096], path[4200], *buf = NULL;
	struct scan sc;
	struct stat st;
	size_t len = 0;
	int lk, rc = -1;

	*runs = NULL;
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, HISTFILE);
	snprintf(where, wn, "%s/%s", dir, ASIDEFILE);
	if ((lk = state_lock(dir, HISTLOCK, LOCK_EX, err)) < 0)
		return -1;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		errf(err, "%s: not a regular file; nothing is set aside",
		    path);
		goto out;
	}
	if (file_read(path, SIZE_MAX - 2, &buf, &len) == -1 &&
	    errno != ENOENT) {
		ioerr(path, "read", err);
		goto out;
	}
	scan_all(&sc, buf, len);
	rc = 0;
	if (json_array_size(sc.runs) > 0 && ((rc = put_aside(dir, &sc, now,
	    err)) == -1 || (rc = state_write(dir, HISTFILE, sc.kept, sc.klen,
	    err)) == -1))
		json_decref(sc.runs);
	else
		*runs = sc.runs;
	free(sc.kept);
out:
	free(buf);
	state_unlock(lk);
	return rc;
}
