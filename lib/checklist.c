/*
 * checklist.c - HEARTBEAT.md: the open items of a chamber's checklist.
 *
 * An item is open unless it is a heading, a blank line, inside an HTML
 * comment, or a checked box ("- [x]").  A checklist with no open item
 * means the chamber has no work, and the wake costs nothing.  An item
 * may end with its own interval, "(every 6h)" (checklist_interval); whether
 * it is due is wake.c's to say, from the last wake that carried it.
 * Which of the due items a prompt carries, when not all fit in the
 * context budget, is checklist_fit's to say.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

static int
blank(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return *s == '\0';
}

static int
checked(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	if (*s != '-' && *s != '*' && *s != '+')
		return 0;
	s++;
	while (*s == ' ' || *s == '\t')
		s++;
	return s[0] == '[' && (s[1] == 'x' || s[1] == 'X') && s[2] == ']';
}

/* Drop HTML comments from line, carrying *incomment across lines. */
static void
uncomment(char *line, int *incomment)
{
	char *r = line, *w = line, *e;

	while (*r != '\0') {
		if (*incomment) {
			if ((e = strstr(r, "-->")) == NULL)
				break;
			r = e + 3;
			*incomment = 0;
		} else if (strncmp(r, "<!--", 4) == 0) {
			r += 4;
			*incomment = 1;
		} else
			*w++ = *r++;
	}
	*w = '\0';
}

/*
 * The next line of fp, whole, into *buf (grown as it needs; its
 * newline kept), but never more than max bytes: a longer line goes on
 * as the next.  Returns the bytes read, 0 at the end.
 */
static size_t
read_line(FILE *fp, char **buf, size_t *cap, size_t max)
{
	size_t n = 0;
	int ch;

	while (n < max && (ch = getc(fp)) != EOF) {
		if (n + 2 > *cap) {
			*cap = *cap > 0 ? *cap * 2 : 256;
			if ((*buf = realloc(*buf, *cap)) == NULL)
				abort();
		}
		(*buf)[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	if (n > 0)
		(*buf)[n] = '\0';
	return n;
}

/* The open item of line (changed in place: its comments cut, its
 * text made valid UTF-8, as a prompt and checklist.json need), or
 * NULL when it is none. */
static char *
open_item(char *line, int *incomment)
{
	char *s;

	line[strcspn(line, "\r\n")] = '\0';
	uncomment(line, incomment);
	for (s = line; isspace((unsigned char)*s); s++)
		;
	if (blank(s) || *s == '#' || checked(s))
		return NULL;
	return text_line(s, strlen(s) + 1, s, strlen(s));
}

/*
 * The checklist at path, opened for reading, or NULL with err and
 * errno.  Only a regular file (file_open_regular: a FIFO is not waited
 * on); a directory or a device is no checklist.
 */
static FILE *
checklist_fopen(const char *path, char *err)
{
	struct stat st;
	FILE *fp;
	int fd, e;

	if ((fd = file_open_regular(path, O_RDONLY, 0, &st)) >= 0 &&
	    (fp = fdopen(fd, "r")) != NULL)
		return fp;
	e = errno;
	if (fd >= 0)
		close(fd);
	if (fd == -2) {
		errf(err, "%s: not a regular file", path);
		e = EINVAL;
	} else
		errf(err, "%s: %s", path, strerror(e));
	errno = e;
	return NULL;
}

/*
 * Read the checklist at path; *items gets the open lines joined by
 * newlines (NULL when there are none), each made one line of valid
 * UTF-8 (text_line: a byte that is not UTF-8 a '?', a tab or another
 * control character a space).  Returns 0, or 1 when the file is
 * longer than HEART_CHECKMAX (the rest is not read), or -1 with err
 * when it cannot be read or is not a regular file; a missing file sets
 * errno ENOENT.
 */
int
checklist_open_items(const char *path, char **items, char *err)
{
	char *line = NULL, *out = NULL, *s;
	size_t cap = 0, len = 0, total = 0, n;
	int inc = 0, more, kept = 0;
	FILE *fp, *op;

	*items = NULL;
	if ((fp = checklist_fopen(path, err)) == NULL)
		return -1;
	if ((op = open_memstream(&out, &len)) == NULL)
		abort();
	while ((n = read_line(fp, &line, &cap, HEART_CHECKMAX - total)) > 0) {
		total += n;
		if ((s = open_item(line, &inc)) != NULL)
			fprintf(op, "%s%s", kept++ ? "\n" : "", s);
	}
	more = total >= HEART_CHECKMAX && getc(fp) != EOF;
	fclose(fp);
	fclose(op);
	free(line);
	if (kept == 0) {
		free(out);
		out = NULL;
	}
	*items = out;
	return more;
}

/*
 * The interval an item ends with, "(every DUR)" (heart-soul(5),
 * CHECKLIST): 1 with *secs, or 0 when it names none (or names no
 * duration dur.c reads: then it is an item like any other).
 */
int
checklist_interval(const char *item, long long *secs)
{
	const char *open, *p, *end;
	char d[32];
	size_t n;

	end = item + strlen(item);
	while (end > item && isspace((unsigned char)end[-1]))
		end--;
	if (end == item || end[-1] != ')' ||
	    (open = memrchr(item, '(', (size_t)(end - item))) == NULL)
		return 0;
	p = open + 1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, "every", 5) != 0 || (p[5] != ' ' && p[5] != '\t'))
		return 0;
	for (p += 5; *p == ' ' || *p == '\t'; p++)
		;
	n = (size_t)(end - 1 - p);
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0 || n >= sizeof d)
		return 0;
	memcpy(d, p, n);
	d[n] = '\0';
	return dur_parse(d, secs) == 0 && *secs > 0;
}

/* Which goes first: an item with its own interval, carried longest ago
 * (never: before any), then one without; in file order else. */
static int
first(const void *x, const void *y)
{
	const struct checklist_item *a = *(const struct checklist_item *
	    const *)x, *b = *(const struct checklist_item *const *)y;

	if (a->every != b->every)
		return a->every ? -1 : 1;
	if (a->every && a->carried != b->carried)
		return a->carried < b->carried ? -1 : 1;
	return a < b ? -1 : a > b;
}

/*
 * Mark keep the items of it[0..n) (the due items, in file order) that
 * a prompt carries in room bytes, taken in the order heart-soul(5),
 * CHECKLIST, gives: those with their own interval first, the one
 * carried longest ago first, then those without, in file order; one
 * larger than the room left is passed over for the next.  Returns how
 * many are left out.
 */
size_t
checklist_fit(struct checklist_item *it, size_t n, size_t room)
{
	struct checklist_item **by;
	size_t i, left = 0;

	by = xcalloc(n > 0 ? n : 1, sizeof *by);
	for (i = 0; i < n; i++)
		by[i] = &it[i];
	qsort(by, n, sizeof *by, first);
	for (i = 0; i < n; i++)
		if ((by[i]->keep = by[i]->cost <= room))
			room -= by[i]->cost;
		else
			left++;
	free(by);
	return left;
}
