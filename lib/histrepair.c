/*
 * histrepair.c - heart-ghost --repair: the history taken apart front
 * to back by the readers' rule (histwalk.c), its whole wakes kept and
 * every other run of bytes set aside in agents/ID/history.damaged.
 *
 * Invariant: under the history's exclusive lock, the bytes set aside
 * are synced before the history is replaced by its whole wakes
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
