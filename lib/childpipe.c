/*
 * childpipe.c - a running child's pipes, as the runner (child.c) uses
 * them: its standard input fed, its output kept up to a cap and the
 * rest read and dropped, the start of its standard error kept.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

/* Keep up to the cap, read and drop the rest; 0 at end of file. */
static int
take(struct tool_io *x, int which)
{
	char scratch[65536];
	struct tool_out *o = x->o;
	ssize_t r;

	if (which == 1 && o->len < x->maxout) {
		r = read(x->fd[1], o->out + o->len, x->maxout - o->len);
		if (r > 0)
			o->len += (size_t)r;
	} else {
		r = read(x->fd[which], scratch, sizeof scratch);
		if (r > 0 && which == 1)
			o->cut = 1;
		if (r > 0 && which == 2 && x->errlen < sizeof o->errout - 1) {
			size_t n = (size_t)r;
			if (n > sizeof o->errout - 1 - x->errlen)
				n = sizeof o->errout - 1 - x->errlen;
			memcpy(o->errout + x->errlen, scratch, n);
			x->errlen += n;
		}
	}
	if (r == -1 && (errno == EINTR || errno == EAGAIN))
		return 1;
	return r > 0;
}

static void
give(struct tool_io *x)
{
	ssize_t w = write(x->fd[0], x->in, x->inleft);

	if (w > 0) {
		x->in += w;
		x->inleft -= (size_t)w;
	}
	if (x->inleft == 0 || (w == -1 && errno != EAGAIN && errno != EINTR)) {
		close(x->fd[0]);
		x->fd[0] = -1;
	}
}

/*
 * Wait up to ms for x's pipes (or for also, when not -1), then feed
 * stdin and read stdout and stderr as far as they let us; 0 when no
 * pipe was open.
 */
int
tool_io_exchange(struct tool_io *x, int also, long long ms)
{
	struct pollfd pf[4];
	int i, n;

	for (i = n = 0; i < 3; i++)
		if (x->fd[i] >= 0)
			pf[n++] = (struct pollfd){ x->fd[i],
			    i == 0 ? POLLOUT : POLLIN, 0 };
	if (n == 0 && also < 0)
		return 0;
	if (also >= 0)
		pf[n++] = (struct pollfd){ also, POLLIN, 0 };
	if (poll(pf, (nfds_t)n, ms > INT_MAX ? INT_MAX : (int)ms) == -1 &&
	    errno != EINTR)
		return 0;
	for (i = 0; i < 3; i++) {
		if (x->fd[i] < 0)
			continue;
		if (i == 0)
			give(x);
		else if (!take(x, i)) {
			close(x->fd[i]);
			x->fd[i] = -1;
		}
	}
	return 1;
}
