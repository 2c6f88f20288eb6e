/*
 * sdnotify.c - the service manager's notification protocol, without
 * libsystemd: one datagram ("READY=1", "WATCHDOG=1", ...) to the unix
 * socket named by $NOTIFY_SOCKET ('@' names an abstract socket).  With
 * no $NOTIFY_SOCKET there is nobody to tell, and that is not an error.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartpulse.h"

int
sdnotify_send(const char *state, char *err)
{
	struct sockaddr_un sa;
	const char *path = getenv("NOTIFY_SOCKET");
	size_t n;
	ssize_t w;
	int fd;

	if (path == NULL || *path == '\0')
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path) {
		errf(err, "NOTIFY_SOCKET: not a socket path");
		return -1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		errf(err, "NOTIFY_SOCKET: %s", strerror(errno));
		return -1;
	}
	w = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
	    (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un,
	    sun_path) + n));
	close(fd);
	if (w == -1) {
		errf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The watchdog period the manager asks of this process, in ms; 0: none. */
long long
sdnotify_watchdog(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid;
	long long v, p;

	if (us == NULL || num_parse(us, 1, 1LL << 50, &v) == -1)
		return 0;
	pid = getenv("WATCHDOG_PID");
	if (pid != NULL && (num_parse(pid, 1, 1LL << 31, &p) == -1 ||
	    p != (long long)getpid()))
		return 0;
	return v / 1000 > 0 ? v / 1000 : 1;
}
