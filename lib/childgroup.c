/*
 * childgroup.c - does a process of the children's groups still run?
 * /proc read with system calls alone: a fatal signal's handler and a
 * sentinel ask it (child.c).
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

/* The decimal at *s, and *s past it and the space after it. */
static long
get_num(const char **s, const char *end)
{
	long n = 0;

	for (; *s < end && **s >= '0' && **s <= '9'; (*s)++)
		n = n * 10 + (**s - '0');
	if (*s < end)
		(*s)++;
	return n;
}

/*
 * Does the process of name (an entry of /proc) run in a group of
 * c[0..n), and is it not that group's sentinel?  Its state, parent and
 * group are in /proc/PID/stat, after the name in parentheses (which
 * may hold one): "PID (NAME) S PPID PGRP ..."; a zombie has ended.
 */
static int
in_groups(const char *name, const struct tool_child *c, size_t n)
{
	char path[40] = "/proc/", st[512];
	const char *p, *end;
	ssize_t r;
	size_t i, k;
	long pid = 0, pg;
	int fd;

	for (k = 0; k < 10 && name[k] >= '0' && name[k] <= '9'; k++) {
		path[6 + k] = name[k];
		pid = pid * 10 + (name[k] - '0');
	}
	if (k == 0 || name[k] != '\0')
		return 0;
	memcpy(path + 6 + k, "/stat", 6);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	r = read(fd, st, sizeof st);
	close(fd);
	if (r <= 0 || (p = memrchr(st, ')', (size_t)r)) == NULL ||
	    (end = st + r) - p < 4 || p[2] == 'Z' || p[2] == 'X')
		return 0;
	p += 4;
	(void)get_num(&p, end);		/* its parent */
	pg = get_num(&p, end);
	for (i = 0; i < n; i++)
		if (c[i].pid > 0 && pg == c[i].pid && pid != c[i].sentinel)
			return 1;
	return 0;
}

/*
 * Does a process of the groups of c[0..n) run, other than their
 * sentinels?  /proc is read with system calls alone (on_fatal and a
 * sentinel ask): 1, 0, or -1 when it cannot be read.
 */
int
tool_groups_run(const struct tool_child *c, size_t n)
{
	char buf[8192];
	struct dirent64 *d;
	ssize_t r, k;
	int dfd, found = 0;

	if ((dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	while (!found && (r = getdents64(dfd, buf, sizeof buf)) > 0)
		for (k = 0; k < r && !found; k += d->d_reclen) {
			d = (struct dirent64 *)(buf + k);
			found = in_groups(d->d_name, c, n);
		}
	close(dfd);
	return found;
}
