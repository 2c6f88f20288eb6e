/*
 * journal.c - every decision of a wake, kept: an agent's journal, one
 * JSON line an entry (at, chamber, status, reason, wake_id), written by
 * run_wake once a wake's result is final, when status.c's table says
 * its status is kept (status_journal), and read back by heart-wake
 * --why and by the pulse (its last skip).  heart-wake(1), THE JOURNAL.
 *
 * Invariants: an entry is appended whole or not at all (one write(2)
 * under a lock, or one Redis transaction: store_ops); the journal is
 * bounded (JOURNAL_MAX bytes of file, JOURNAL_KEEP entries of a
 * server), the oldest entries going first; a reason is scrubbed of
 * secrets, one line, at most JOURNAL_REASON bytes.  A wake that is only
 * not due writes nothing here.
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
#include "heartstore.h"

#define JOURNAL_FILE	"journal.jsonl"
/* a file holds JOURNAL_MAX bytes at most (then its newest half), a
 * server the newest JOURNAL_KEEP entries */
#define JOURNAL_MAX	(128 * 1024)
#define JOURNAL_KEEP	500
#define JOURNAL_REASON	240	/* bytes of a reason, at most */
#define LOGLINE		1024	/* bytes of a line, at most */

/*
 * An agent's log `name', the journal: lines appended whole and read
 * back oldest first, the oldest dropped to keep it bounded.  Files: one
 * write(2) of the line with O_APPEND under name.lock; when the file
 * would pass `max' bytes it is replaced (state_put) by its newest lines
 * that fit in half of that, and the line.  A line cut short by a kill
 * or a full disk has no newline: the next append ends it first, and
 * the reader leaves it out.  A server keeps `keep' lines.
 */
static int
file_log_trim(const char *dir, const char *name, int fd, off_t size,
    const char *line, size_t len, size_t max, char *err)
{
	char *buf = xcalloc(1, (size_t)size + len + 1), *p;
	ssize_t r;
	size_t from = 0, kept;

	if ((r = pread(fd, buf, (size_t)size, 0)) < 0) {
		errf(err, "%s/%s: %s", dir, name, strerror(errno));
		free(buf);
		return -1;
	}
	if ((size_t)r + len + 1 > max / 2)
		from = (size_t)r + len + 1 - max / 2;
	/* from the start of a whole line */
	while (from > 0 && from < (size_t)r && buf[from - 1] != '\n')
		from++;
	if (from > (size_t)r)
		from = (size_t)r;
	kept = (size_t)r - from;
	memmove(buf, buf + from, kept);
	if (kept > 0 && buf[kept - 1] != '\n')
		kept = (p = memrchr(buf, '\n', kept)) ? (size_t)(p - buf) + 1 :
		    0;
	memcpy(buf + kept, line, len);
	buf[kept + len] = '\n';
	r = state_put(dir, name, buf, kept + len + 1, STATE_WHOLE, err);
	free(buf);
	return (int)r;
}

static int
file_log_add(const char *dir, const char *name, const char *line,
    size_t max, char *err)
{
	char lock[64], path[4200], *buf;
	struct stat st;
	int lfd, fd, rc = -1;
	size_t len = strlen(line), n = 0;
	char last = '\n';

	snprintf(lock, sizeof lock, "%s.lock", name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((lfd = state_lock(dir, lock, LOCK_EX, err)) < 0)
		return -1;
	if ((fd = file_open_regular(path, O_RDWR | O_APPEND | O_CREAT |
	    O_NOFOLLOW, 0600, &st)) == -2) {
		errf(err, "%s: not a regular file; remove it by hand", path);
		goto out;
	}
	if (fd == -1 || (st.st_size > 0 &&
	    pread(fd, &last, 1, st.st_size - 1) != 1)) {
		errf(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((size_t)st.st_size + len + 2 > max) {
		rc = file_log_trim(dir, name, fd, st.st_size, line, len, max,
		    err);
		goto out;
	}
	buf = xcalloc(1, len + 2);
	if (last != '\n')
		buf[n++] = '\n';	/* a torn line ended */
	memcpy(buf + n, line, len);
	buf[n + len] = '\n';
	if (state_write_all(fd, buf, n + len + 1) == -1)
		errf(err, "%s: cannot write: %s", path, strerror(errno));
	else
		rc = 0;
	free(buf);
out:
	if (fd >= 0)
		close(fd);
	state_unlock(lfd);
	return rc;
}

static int
log_add(const char *agent, const char *name, const char *line,
    size_t max, long long keep, char *err)
{
	const struct store_ops *ops = store_ops();
	char dir[4096];

	if (ops != NULL)
		return ops->log_add(agent, name, line, keep, err);
	if (state_agent_dir(agent, 1, dir, sizeof dir, err) == -1)
		return -1;
	return file_log_add(dir, name, line, max, err);
}

/* Split buf (n bytes) into its whole lines, appended to *lines. */
static void
log_lines(char *buf, size_t n, char ***lines, size_t *nl)
{
	char *p = buf, *nlp;

	while (p < buf + n && (nlp = memchr(p, '\n', (size_t)(buf + n -
	    p))) != NULL) {
		*nlp = '\0';
		if (nlp > p) {
			*lines = reallocarray(*lines, *nl + 2, sizeof **lines);
			if (*lines == NULL)
				abort();
			(*lines)[(*nl)++] = xstrdup(p);
			(*lines)[*nl] = NULL;
		}
		p = nlp + 1;
	}
}

/*
 * The log's lines, oldest first, into *lines (*n of them; free with
 * state_free_list): the newest `last' (0: all; files: those among the
 * last last * LOGLINE bytes).  None kept: 0 and no line.
 */
static int
log_read(const char *agent, const char *name, long long last,
    char ***lines, size_t *n, char *err)
{
	char dir[4096], path[4200], *buf, *p;
	struct stat st;
	off_t from = 0;
	ssize_t r;
	int fd;

	*lines = NULL;
	*n = 0;
	if (store_ops() != NULL)
		return store_ops()->log_read(agent, name, last, lines, n, err);
	if (state_agent_dir(agent, 0, dir, sizeof dir, err) == -1)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fd = file_open_regular(path, O_RDONLY | O_NOFOLLOW, 0,
	    &st)) == -1 && errno == ENOENT)
		return 0;
	if (fd < 0) {
		if (fd == -2)
			errf(err, "%s: not a regular file; remove it by hand",
			    path);
		else
			errf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* from a byte before: a line begun before it is not whole */
	if (last > 0 && st.st_size > last * LOGLINE)
		from = st.st_size - last * LOGLINE - 1;
	buf = xcalloc(1, (size_t)(st.st_size - from) + 1);
	r = pread(fd, buf, (size_t)(st.st_size - from), from);
	close(fd);
	if (r < 0) {
		errf(err, "%s: %s", path, strerror(errno));
		free(buf);
		return -1;
	}
	p = buf;
	if (from > 0 && (p = memchr(buf, '\n', (size_t)r)) != NULL)
		p++;
	if (p != NULL)
		log_lines(p, (size_t)(buf + r - p), lines, n);
	free(buf);
	while (last > 0 && *n > (size_t)last) {
		free((*lines)[0]);
		memmove(*lines, *lines + 1, *n * sizeof **lines);
		(*n)--;
	}
	return 0;
}

/* Append one entry to the agent's journal. */
int
journal_add(const char *agent, time_t at, const char *chamber,
    const char *status, const char *reason, const char *wake_id,
    char *err)
{
	char when[32], why[JOURNAL_REASON + 1], *safe;
	json_t *j;
	char *line;
	int rc;

	clock_utc(at, when, sizeof when);
	why[0] = '\0';
	if (reason != NULL && *reason != '\0') {
		safe = secret_dup(reason);
		text_line(why, sizeof why, safe, strlen(safe));
		free(safe);
	}
	j = json_pack("{s:s,s:s,s:s,s:o,s:s}", "at", when, "chamber",
	    chamber, "status", status, "reason", why[0] ? json_string(why) :
	    json_null(), "wake_id", wake_id);
	if (j == NULL) {
		errf(err, "%s: journal: an entry that is not text", agent);
		return -1;
	}
	line = json_line(j);
	json_decref(j);
	rc = log_add(agent, JOURNAL_FILE, line, JOURNAL_MAX,
	    JOURNAL_KEEP, err);
	free(line);
	return rc;
}

/* An entry read back: its time, or -1 when it is no entry. */
static time_t
entry_at(const json_t *e)
{
	time_t t;

	if (!json_is_object(e) || !json_is_string(json_object_get(e,
	    "status")) || clock_parse_utc(json_string_value(json_object_get(e,
	    "at")), &t) == -1)
		return -1;
	return t;
}

/*
 * The agent's entries at or after since, oldest first, into *out (an
 * array, to decref): the newest `last' of the journal only (0: all).
 * A line that is no entry is left out.
 */
int
journal_read(const char *agent, time_t since, long long last, json_t **out,
    char *err)
{
	char **lines;
	size_t i, n;
	json_t *e;
	time_t t;

	*out = NULL;
	if (log_read(agent, JOURNAL_FILE, last, &lines, &n, err) == -1)
		return -1;
	*out = json_array();
	for (i = 0; i < n; i++) {
		e = json_loads(lines[i], JSON_REJECT_DUPLICATES, NULL);
		if ((t = entry_at(e)) != -1 && t >= since)
			json_array_append(*out, e);
		json_decref(e);
	}
	state_free_list(lines, n);
	return 0;
}

/* --since's TIME: a time (2026-11-22T05:00:00Z) or a duration ago (2h),
 * as heart-cap pause --until takes them. */
int
journal_since(const char *arg, time_t now, time_t *out, char *err)
{
	long long d;

	if (clock_parse_utc(arg, out) == 0)
		return 0;
	if (dur_parse(arg, &d) == -1) {
		errf(err, "--since: %s: neither a time (2026-11-22T05:00:00Z) "
		    "nor a duration ago (2h, 1d, 1h30m)", arg);
		return -1;
	}
	*out = now - (time_t)d;
	return 0;
}
