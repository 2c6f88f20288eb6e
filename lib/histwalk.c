/*
 * histwalk.c - the history, agents/ID/history.jsonl, read by the rule
 * of what a whole wake is (hist_line_part, hist_same_wake): back to
 * front, line by line (back_prev) and whole wake by whole wake
 * (walk_prev), for its readers (hist_tail, hist_last_user) and for its
 * writer, hist.c, which asks where the whole wakes end (hist_ends); and
 * front to back for heart-ghost --repair (hist_repair), its whole
 * wakes kept and every other run of bytes set aside in
 * agents/ID/history.damaged.
 *
 * Invariants: the torn tail a killed writer leaves (bytes after the
 * last newline, a last line that does not parse, the lines of a wake
 * that never reached its last part) is skipped; anything damaged
 * before it is an error that names the line and the repair.  Under
 * the history's exclusive lock, the bytes a repair sets aside are
 * synced before the history is replaced by its whole wakes
 * (state_write): a crash between keeps the bytes twice, never none.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

#define CHUNK		65536

struct hist_back {		/* the file, line by line */
	int	 fd;
	const char *path;
	char	*buf;		/* the file's bytes [lo, hi) */
	off_t	 lo, hi;
	off_t	 cur;		/* lines before cur are still to come */
	long	 nread;		/* lines returned so far */
};
struct hist_walk {		/* the file, wake by wake */
	struct hist_back b;
	const char *agent;	/* whose: the repair named */
	int	 tail;		/* still inside the torn tail */
	off_t	 good_end;	/* end of the last whole wake */
};

static const char *
str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int
hist_ioerr(const char *path, const char *what, char *err)
{
	errf(err, "%s: %s: %s", path, what, strerror(errno));
	return -1;
}

/* Read more of the file before lo, keeping [lo, keep) of what we have. */
static int
back_grow(struct hist_back *b, off_t keep, char *err)
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
			return hist_ioerr(b->path, "read", err);
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
back_nl(struct hist_back *b, off_t off, off_t *nl, char *err)
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
back_init(struct hist_back *b, int fd, const char *path, char *err)
{
	struct stat st;
	off_t nl;
	int r;

	memset(b, 0, sizeof *b);
	b->fd = fd;
	b->path = path;
	if (fstat(fd, &st) == -1)
		return hist_ioerr(path, "stat", err);
	b->lo = b->hi = st.st_size;
	if ((r = back_nl(b, st.st_size, &nl, err)) == -1)
		return -1;
	b->cur = r == 1 ? nl + 1 : 0;
	return 0;
}

/* The line before cur, without its newline: 1, 0 at the start, -1. */
static int
back_prev(struct hist_back *b, const char **line, size_t *len,
    off_t *start, char *err)
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
hist_line_parse(const char *p, size_t len)
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
hist_line_part(json_t *o, long long *part, long long *parts)
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
damaged(struct hist_walk *w, off_t at, const char *why, char *err)
{
	errf(err, "%s: damaged at line %lld (byte %lld): %s; heart-ghost "
	    "--repair %s sets it aside (heart-ghost(1))", w->b.path,
	    line_at(w->b.fd, at), (long long)at + 1, why, w->agent);
	return -1;
}

static void
walk_close(struct hist_walk *w)
{
	if (w != NULL)
		free(w->b.buf);
	free(w);
}

/* A walk back from the end of fd (path, agent's: for messages);
 * NULL with err.  walk_close frees it. */
static struct hist_walk *
walk_open(int fd, const char *path, const char *agent, char *err)
{
	struct hist_walk *w = xcalloc(1, sizeof *w);

	if (back_init(&w->b, fd, path, err) == -1) {
		walk_close(w);
		return NULL;
	}
	w->agent = agent;
	w->tail = 1;
	return w;
}

/* The last line of the next wake back, skipping the torn tail. */
static int
walk_last(struct hist_walk *w, json_t **jo, off_t *starto, long long *partso,
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
		if ((j = hist_line_parse(p, len)) == NULL) {
			/* the last line may be one torn by a crash */
			if (w->tail && w->b.nread == 1)
				continue;
			return damaged(w, s, "a line that is not a JSON "
			    "object", err);
		}
		if (hist_line_part(j, &part, &parts) == -1) {
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

static int
hist_same_wake(json_t *a, json_t *b)
{
	const char *x = json_string_value(json_object_get(a, "wake_id"));
	const char *y = json_string_value(json_object_get(b, "wake_id"));

	return x != NULL && y != NULL && strcmp(x, y) == 0;
}

/*
 * The next whole wake back: 1 with its lines in file order in *wakeo
 * (a new array) and its first byte in *starto; 0 at the beginning of
 * the file; -1 when damaged or unreadable.
 */
static int
walk_prev(struct hist_walk *w, json_t **wakeo, off_t *starto, char *err)
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
		if ((j = hist_line_parse(p, len)) == NULL ||
		    hist_line_part(j, &part, &ps) == -1 || part != k ||
		    ps != parts || !hist_same_wake(j, last)) {
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

/*
 * Find where the whole wakes end (*endo) and, when keep > 0 and the
 * file holds keep wakes or more, where the last keep - 1 of them start
 * (*keepo; -1 when nothing needs trimming).
 */
int
hist_ends(int fd, const char *path, const char *agent, long long keep,
    off_t *endo, off_t *keepo, char *err)
{
	struct hist_walk *w;
	long long n, want = keep > 0 ? keep : 1;
	off_t s, from = -1;
	json_t *wake;
	int r = 0;

	*keepo = -1;
	if ((w = walk_open(fd, path, agent, err)) == NULL)
		return -1;
	for (n = 0; n < want; n++) {
		if ((r = walk_prev(w, &wake, &s, err)) != 1)
			break;
		json_decref(wake);
		if (n == 0)
			from = w->good_end;
		if (n + 1 < keep)
			from = s;
	}
	*endo = w->good_end;
	if (r != -1 && keep > 0 && n == keep)
		*keepo = keep == 1 ? *endo : from;
	walk_close(w);
	return r == -1 ? -1 : 0;
}

/* Open the history for reading under a shared lock; 0 when none. */
static int
open_read(const char *agent, int lock, char *path, size_t n, int *lko,
    int *fdo, char *err)
{
	char dir[4096];
	struct stat st;

	*lko = *fdo = -1;
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1)
		return -1;
	if (stat(dir, &st) == -1 && errno == ENOENT)
		return 0;
	snprintf(path, n, "%s/%s", dir, HISTFILE);
	if (lock && (*lko = state_lock(dir, HISTLOCK, LOCK_SH, err)) < 0)
		return -1;
	if ((*fdo = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		state_unlock(*lko);
		*lko = -1;
		if (errno == ENOENT)
			return 0;
		return hist_ioerr(path, "open", err);
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
	struct hist_walk *w;
	json_t *wakes, *wake;
	size_t have = 0;
	off_t s;
	int lk, fd, r;

	*out = NULL;
	if ((r = open_read(agent, 1, path, sizeof path, &lk, &fd, err)) == -1)
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
	if ((w = walk_open(fd, path, agent, err)) == NULL)
		r = -1;
	else
		while (have < n && (r = walk_prev(w, &wake, &s, err)) == 1) {
			have += json_array_size(wake);
			json_array_append_new(wakes, wake);
		}
	walk_close(w);
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
 * hist_user (chamber "user"); 0 when there is none.  lock 0: read
 * without the history's lock, for a reader that must never make a
 * writer wait (pulse.c): a wake is appended in one write, and bytes
 * after the last newline are torn and passed over (back_init).
 */
int
hist_last_user(const char *agent, int lock, time_t *at, char *err)
{
	static const char mark[] = "\"chamber\":\"user\"";
	char path[4200];
	struct hist_walk *w;
	const char *p;
	size_t len;
	off_t s;
	json_t *j;
	int lk, fd, r;

	*at = 0;
	if ((r = open_read(agent, lock, path, sizeof path, &lk, &fd,
	    err)) != 1)
		return r == -1 ? -1 : 0;
	if ((w = walk_open(fd, path, agent, err)) == NULL)
		r = -1;
	else
		while ((r = back_prev(&w->b, &p, &len, &s, err)) == 1) {
			if (memmem(p, len, mark, sizeof mark - 1) == NULL ||
			    (j = hist_line_parse(p, len)) == NULL)
				continue;
			const char *ch = str(j, "chamber");
			int user = ch != NULL && strcmp(ch, "user") == 0 &&
			    clock_parse_utc(str(j, "at"), at) == 0;
			json_decref(j);
			if (user)
				break;
		}
	walk_close(w);
	close(fd);
	state_unlock(lk);
	return r == -1 ? -1 : 0;
}

#define ASIDEFILE	"history.damaged"

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

	j = ended ? hist_line_parse(sc->buf + s, (size_t)(to - s - 1)) : NULL;
	if (j == NULL || hist_line_part(j, &part, &parts) == -1) {
		cut_short(sc);
		aside(sc, s, to, line, 1, !ended ? "a last line not ended" :
		    j == NULL ? "a line that is not a JSON object" :
		    "bad part/parts");
	} else if (sc->ws >= 0 && part == sc->next && parts == sc->parts &&
	    hist_same_wake(j, sc->first)) {
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
		return hist_ioerr(path, "open", err);
	clock_utc(now, at, sizeof at);
	json_array_foreach(sc->runs, i, r) {
		b = json_integer_value(json_object_get(r, "byte")) - 1;
		n = json_integer_value(json_object_get(r, "bytes"));
		if (asprintf(&head, "# heart-ghost --repair, %s: %s line %lld "
		    "(%lld lines, bytes %lld-%lld): %s\n", at, HISTFILE,
		    json_integer_value(json_object_get(r, "line")),
		    json_integer_value(json_object_get(r, "lines")), b + 1,
		    b + n, json_string_value(json_object_get(r, "why"))) == -1)
			abort();
		bad |= state_write_all(fd, head, strlen(head)) == -1 ||
		    state_write_all(fd, sc->buf + b, (size_t)n) == -1 ||
		    (sc->buf[b + n - 1] != '\n' &&
		    state_write_all(fd, "\n", 1) == -1);
		free(head);
	}
	if (bad || fdatasync(fd) == -1) {
		close(fd);
		return hist_ioerr(path, "write", err);
	}
	close(fd);
	if (created && state_sync_dir(dir) == -1)
		return hist_ioerr(dir, "fsync", err);
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
		hist_ioerr(path, "read", err);
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
