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
 * Here: the writers and the input file; the history's readers and its
 * repair are histwalk.c's.
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

#define INPUTFILE	"input"

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
			return hist_ioerr(path, "read", err);
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
		return hist_ioerr(path, "stat", err);
	if (end < st.st_size && ftruncate(fd, end) == -1)
		return hist_ioerr(path, "cutting off a torn tail", err);
	if (pwrite_all(fd, buf, len, end) == -1 || fdatasync(fd) == -1) {
		int e = errno;
		if (ftruncate(fd, end) == 0)
			fdatasync(fd);
		errno = e;
		return hist_ioerr(path, "write", err);
	}
	if (created && state_sync_dir(dir) == -1)
		return hist_ioerr(dir, "fsync", err);
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
		return hist_ioerr(path, "read", err);
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
		return hist_ioerr(path, "stat", err);
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
	struct seen *sn = NULL;
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
		hist_ioerr(path, "open", err);
	else if (hist_ends(fd, path, agent, keep, &end, &from, err) == 0 &&
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

/*
 * The user's last sign, the idle chamber's clock: the later of the
 * mtime of input in dir, the agent's state directory
 * (hist_touch_input), and the last message of the user (hist_last_user,
 * its lock as `lock' says); 0 when there is none.  On error *at still
 * has what could be read.
 */
int
hist_last_sign(const char *agent, const char *dir, int lock, time_t *at,
    char *err)
{
	char path[4200];
	struct stat st;
	time_t h = 0;
	int r;

	*at = 0;
	snprintf(path, sizeof path, "%s/%s", dir, INPUTFILE);
	if (stat(path, &st) == 0)
		*at = st.st_mtime;
	r = hist_last_user(agent, lock, &h, err);
	if (h > *at)
		*at = h;
	return r;
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
		return hist_ioerr(path, "open", err);
	ts[0].tv_sec = ts[1].tv_sec = now;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	if (futimens(fd, ts) == -1) {
		close(fd);
		return hist_ioerr(path, "touch", err);
	}
	close(fd);
	return 0;
}

/*
 * Whether text may be recorded as a message of the user: UTF-8, and
 * not only white space (heart-ghost(1), user).
 */
static int
user_text(const char *text, char *err)
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
 * Record a message of the user: one wake of its own (wake_id
 * user-TIME-PID, chamber "user"), then touch the input file, which is
 * what the idle chamber watches.  -2 (err) when text may not be
 * recorded (user_text), -1 (err) when it cannot be.
 */
int
hist_user(const char *agent, const char *text, time_t now, long long keep,
    char *err)
{
	char id[64], at[32];
	json_t *msgs, *s;
	int rc;

	if (user_text(text, err) == -1)
		return -2;
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

