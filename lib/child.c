/*
 * child.c - the one runner of every child heart has: the soul's tools
 * (tool.c) and the command provider's program (llm.c), gates (gate.c),
 * delivery programs (deliver.c), MCP servers (mcpserver.c) and a
 * round's workers (round.c) are started and ended here.  No shell:
 * the argv is the soul's, exactly; the model's text reaches a program
 * only on its standard input, as JSON, and a program is handed no
 * descriptor but its standard input, output and error.  Each run has
 * its own process group, in the soul's directory, with a timeout, and
 * a cap on the output kept.
 *
 * Invariants: a child ends one way, stop_groups: SIGTERM to its group,
 * then, as soon as no process of the group runs or TOOL_GRACE ms have
 * passed, SIGKILL to the group; so at a program's end (what it left
 * running), at its timeout, when an MCP server is closed, and when a
 * SIGTERM, SIGINT or SIGHUP ends the process (on_fatal: every child
 * still running is stopped so, all at once, and the signal is raised
 * again).  A group is signalled before its leader is reaped, and
 * taken out of the set of children (live) before too, so the group id
 * cannot have been reused.  A program's group holds a sentinel: a fork
 * of ours that only waits for our end, so that a SIGKILL of ours, which
 * nothing catches, still stops the group so; a round's worker, a fork
 * of ours, has SIGTERM as its parent-death signal instead, and stops
 * its own children then.
 */
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

#define TOOL_LIVEMAX	1100	/* children of one process at once: a
				   round's workers, a wake's servers */

extern char **environ;

static const int fatal[3] = { SIGTERM, SIGINT, SIGHUP };

/* The children running now, for on_fatal; the fatal signals' own
 * dispositions while on_fatal stands in. */
static struct tool_child live[TOOL_LIVEMAX];
static volatile sig_atomic_t nlive;
static struct sigaction before[3];

/* The sentinels' pipe: they read it; we alone hold its other end, so
 * that they see its end of file when we end. */
static int life[2] = { -1, -1 };

/* Milliseconds of the monotonic clock, asked of the kernel itself:
 * on_fatal and a sentinel ask it too. */
static long long
now_ms(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Has the group's leader exited?  Asked without reaping it. */
int
tool_gone(int pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT)
	    == 0 && si.si_pid == pid;
}

/* A running child's pipes: its standard input fed, its output kept
 * up to a cap and the rest read and dropped, the start of its standard
 * error kept. */
struct tool_io {
	int	 fd[3];		/* stdin (ours to write), stdout, stderr */
	const char *in;
	size_t	 inleft;
	struct tool_out *o;
	size_t	 maxout, errlen;
};

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
static int
io_exchange(struct tool_io *x, int also, long long ms)
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

/*
 * Does a process of the groups of c[0..n) run?  With mine (their
 * leaders are our children), a leader that runs says so at once, and
 * a group with no sentinel, a fork of our own (a worker), ends with
 * its leader: nothing else is ever in it.
 */
static int
running(const struct tool_child *c, size_t n, int mine)
{
	size_t i, watched = 0;
	int r;

	for (i = 0; i < n; i++) {
		if (c[i].pid <= 0)
			continue;
		if (mine && !tool_gone(c[i].pid))
			return 1;
		watched += c[i].sentinel > 0;
	}
	if (mine && watched == 0)
		return 0;
	r = tool_groups_run(c, n);
	return r == 1 || (r == -1 && !mine);
}
/*
 * The one way a child ends: SIGTERM (and SIGCONT, for one stopped) to
 * each group of c[0..n), then, as soon as no process of them runs, or
 * TOOL_GRACE ms later, SIGKILL to each.  Meanwhile what they write is
 * read into x (may be NULL).  mine: their leaders are our children.
 * With x NULL, it makes system calls alone: on_fatal and a sentinel
 * run it.
 */
static void
stop_groups(const struct tool_child *c, size_t n, struct tool_io *x, int mine)
{
	long long until = now_ms() + TOOL_GRACE, left;
	size_t i;

	if (n == 0)
		return;
	for (i = 0; i < n; i++)
		if (c[i].pid > 0) {
			kill(-c[i].pid, SIGTERM);
			kill(-c[i].pid, SIGCONT);
		}
	while (running(c, n, mine) && (left = until - now_ms()) > 0)
		if (x == NULL ||
		    !io_exchange(x, -1, left < 20 ? left : 20))
			poll(NULL, 0, left < 20 ? (int)left : 20);
	for (i = 0; i < n; i++)
		if (c[i].pid > 0)
			kill(-c[i].pid, SIGKILL);
}

/* A fatal signal while children run: they are stopped, then the
 * signal does what it would have done. */
static void
on_fatal(int sig)
{
	int i;

	stop_groups(live, (size_t)nlive, NULL, 1);
	for (i = 0; i < 3; i++)
		if (fatal[i] == sig)
			sigaction(sig, &before[i], NULL);
	raise(sig);
}

/* on_fatal stands in for the fatal signals (on), or no more; one
 * ignored (nohup) stays so. */
static void
arm(int on)
{
	struct sigaction sa;
	int i;

	if (!on) {
		for (i = 0; i < 3; i++)
			sigaction(fatal[i], &before[i], NULL);
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 3; i++)
		sigaddset(&sa.sa_mask, fatal[i]);
	for (i = 0; i < 3; i++) {
		sigaction(fatal[i], &sa, &before[i]);
		if (before[i].sa_handler == SIG_IGN)
			sigaction(fatal[i], &before[i], NULL);
	}
}

/* The fatal signals held back (block) or let through again (old). */
static void
hold(int block, sigset_t *old)
{
	sigset_t set;
	int i;

	if (!block) {
		sigprocmask(SIG_SETMASK, old, NULL);
		return;
	}
	sigemptyset(&set);
	for (i = 0; i < 3; i++)
		sigaddset(&set, fatal[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* c joins the children running (with the fatal signals held back). */
static void
live_add(const struct tool_child *c)
{
	live[nlive] = *c;
	nlive = nlive + 1;
	if (nlive == 1)
		arm(1);
}

/* The child led by pid leaves them (with the fatal signals held back). */
static void
live_del(int pid)
{
	int i;

	for (i = 0; i < nlive; i++)
		if (live[i].pid == pid) {
			live[i] = live[nlive - 1];
			nlive = nlive - 1;
			if (nlive == 0)
				arm(0);
			return;
		}
}

/* In a fork of ours that lives on (a worker): our children are not
 * its own, nor is our sentinels' pipe. */
static void
forget(void)
{
	if (nlive > 0)
		arm(0);
	nlive = 0;
	if (life[0] >= 0) {
		close(life[0]);
		close(life[1]);
		life[0] = life[1] = -1;
	}
}

/* Every descriptor closed but keep. */
static void
only_fd(int keep)
{
	int fd;

	if ((keep == 0 || close_range(0, (unsigned)keep - 1, 0) == 0) &&
	    close_range((unsigned)keep + 1, ~0U, 0) == 0)
		return;
	for (fd = 0; fd < 65536; fd++)
		if (fd != keep)
			close(fd);
}

/*
 * A sentinel, in the group pg: the fatal signals ignored (the group's
 * SIGTERM is not for it), no descriptor but its end of our pipe, its
 * memory (ours: a key among it) not to be read through /proc by the
 * programs of its group; when that pipe ends, we have ended, and it
 * stops the group (itself last, by the SIGKILL).  Never returns.
 */
static void
sentinel(int pg)
{
	struct tool_child g = { .pid = pg, .sentinel = getpid(), .in = -1,
	    .out = -1, .err = -1 };
	struct sigaction ign;
	sigset_t none;
	char b;
	int i;

	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	for (i = 0; i < 3; i++)
		sigaction(fatal[i], &ign, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, pg);
	prctl(PR_SET_DUMPABLE, 0);
	only_fd(life[0]);
	while (read(life[0], &b, 1) == -1 && errno == EINTR)
		;
	stop_groups(&g, 1, NULL, 0);
	_exit(0);
}

/*
 * In the child: every descriptor above standard error is closed at
 * exec, whoever opened it (a library's socket to the model or to Redis,
 * a pipe the caller of heart was given): a program gets its standard
 * input, output and error, nothing else.
 */
static void
only_std(void)
{
	int fd, max;

	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	max = (int)sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = 3; fd < max; fd++)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static void
close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/*
 * In the child: its own group, the fatal signals as they were before
 * on_fatal and let through again, then, once its sentinel is in the
 * group (go), the pipes on 0, 1 and 2 (moved above 2 first, in case
 * heart-wake was started with one of them closed), the soul's
 * directory, and exec.
 */
static void
child(const struct tool_proc *p, int in, int out, int eout, int ep,
    int go[2])
{
	sigset_t held;
	char b;
	int e, i;

	setpgid(0, 0);
	close(go[1]);
	for (i = 0; nlive > 0 && i < 3; i++)
		sigaction(fatal[i], &before[i], NULL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&held);
	for (i = 0; i < 3; i++)
		sigaddset(&held, fatal[i]);
	sigprocmask(SIG_UNBLOCK, &held, NULL);
	if (read(go[0], &b, 1) != 1)	/* we ended before its sentinel */
		_exit(127);
	if ((in = fcntl(in, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (!p->inherit && ((out = fcntl(out, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (eout = fcntl(eout, F_DUPFD_CLOEXEC, 3)) == -1)) ||
	    dup2(in, STDIN_FILENO) == -1 || (!p->inherit &&
	    (dup2(out, STDOUT_FILENO) == -1 ||
	    dup2(eout, STDERR_FILENO) == -1)) ||
	    (p->dir != NULL && chdir(p->dir) == -1))
		goto fail;
	only_std();
	execvpe(p->argv[0], p->argv, p->env ? p->env : environ);
fail:
	e = errno;
	(void)!write(ep, &e, sizeof e);
	_exit(127);
}

/* Fork the sentinel of the group pid leads, then let the child go on:
 * the sentinel's pid; or -1 with errno, and the child ends unstarted. */
static int
watch(int pid, int go[2])
{
	int s = -1, e;

	if ((life[0] >= 0 || pipe2(life, O_CLOEXEC) == 0) &&
	    (s = fork()) == 0)
		sentinel(pid);
	e = errno;
	if (s > 0) {
		setpgid(s, pid);
		(void)!write(go[1], "g", 1);
	}
	close_pair(go);
	errno = e;
	return s;
}

/* Stop c[0..n) (stop_groups, what they write read into x, may be
 * NULL), then every descriptor closed (x's after what is left is
 * read, a second at most: only a process that left the group can
 * still hold them), each leader and sentinel reaped, status[i] (may be
 * NULL) as from wait(2). */
static void
finish(struct tool_child *c, size_t n, struct tool_io *x, int *status)
{
	long long until;
	sigset_t old;
	size_t i;
	int st;

	stop_groups(c, n, x, 1);
	until = now_ms() + 1000;
	while (x != NULL && now_ms() < until && io_exchange(x, -1,
	    until - now_ms()))
		;
	for (i = 0; i < n; i++) {
		if (c[i].in >= 0)
			close(c[i].in);
		if (c[i].out >= 0)
			close(c[i].out);
		if (c[i].err >= 0)
			close(c[i].err);
		c[i].in = c[i].out = c[i].err = -1;
		if (c[i].pid <= 0)
			continue;
		hold(1, &old);
		live_del(c[i].pid);
		hold(0, &old);
		st = 127 << 8;	/* as a program that could not run */
		while (waitpid(c[i].pid, &st, 0) == -1 && errno == EINTR)
			;
		if (c[i].sentinel > 0) {
			kill(c[i].sentinel, SIGKILL);
			while (waitpid(c[i].sentinel, NULL, 0) == -1 &&
			    errno == EINTR)
				;
		}
		if (status != NULL)
			status[i] = st;
		c[i].pid = c[i].sentinel = -1;
	}
}

/*
 * Start p->argv in its own process group, with its sentinel, its
 * standard input, output and error on pipes (c->in ours to write,
 * c->out and c->err ours to read, all non-blocking; with p->inherit,
 * its output and error are ours, and c->out and c->err -1).  Returns 0
 * once the program is running, -1 with err when it could not be
 * started or exec'd (nothing is left running then).  The caller ends
 * it with tool_end.
 */
int
tool_spawn(const struct tool_proc *p, struct tool_child *c, char *err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, eo[2] = { -1, -1 };
	int ep[2] = { -1, -1 }, go[2] = { -1, -1 }, e = 0, unwatched;
	sigset_t old;
	ssize_t r;
	pid_t pid;

	memset(c, 0, sizeof *c);
	c->pid = c->sentinel = -1;
	c->in = c->out = c->err = -1;
	hold(1, &old);
	if (nlive == TOOL_LIVEMAX)
		errno = EAGAIN;
	if (nlive == TOOL_LIVEMAX || pipe2(in, O_CLOEXEC) == -1 ||
	    (!p->inherit && (pipe2(out, O_CLOEXEC) == -1 ||
	    pipe2(eo, O_CLOEXEC) == -1)) || pipe2(ep, O_CLOEXEC) == -1 ||
	    pipe2(go, O_CLOEXEC) == -1 || (pid = fork()) == -1) {
		errf(err, "%s: cannot start: %s", p->argv[0],
		    strerror(errno));
		close_pair(in);
		close_pair(out);
		close_pair(eo);
		close_pair(ep);
		close_pair(go);
		hold(0, &old);
		return -1;
	}
	if (pid == 0)
		child(p, in[0], out[1], eo[1], ep[1], go);
	setpgid(pid, pid);
	close(in[0]);
	if (!p->inherit) {
		close(out[1]);
		close(eo[1]);
	}
	close(ep[1]);
	c->pid = pid;
	c->in = in[1];
	c->out = out[0];
	c->err = eo[0];
	if ((unwatched = (c->sentinel = watch(pid, go)) == -1))
		e = errno;
	live_add(c);
	hold(0, &old);
	/* the pipe closes at exec, or carries exec's errno */
	while (e == 0 && (r = read(ep[0], &e, sizeof e)) == -1 &&
	    errno == EINTR)
		;
	close(ep[0]);
	if (e != 0) {
		finish(c, 1, NULL, NULL);
		errf(err, "%s: cannot %s: %s", p->argv[0], unwatched ?
		    "start" : "run", e == ENOENT && strchr(p->argv[0], '/') ==
		    NULL ? "no such program in PATH" : strerror(e));
		return -1;
	}
	fcntl(c->in, F_SETFL, O_NONBLOCK);
	if (!p->inherit) {
		fcntl(c->out, F_SETFL, O_NONBLOCK);
		fcntl(c->err, F_SETFL, O_NONBLOCK);
	}
	return 0;
}

/* Wait until every leader of c[0..n) has exited, or the deadline. */
static void
wait_leaders(const struct tool_child *c, size_t n, long long deadline)
{
	size_t i;
	long long left;

	for (;;) {
		for (i = 0; i < n; i++)
			if (c[i].pid > 0 && !tool_gone(c[i].pid))
				break;
		if (i == n || (left = deadline - now_ms()) <= 0)
			return;
		poll(NULL, 0, left < 20 ? (int)left : 20);
	}
}

/*
 * End the children c[0..n) started by tool_spawn or tool_fork, all at
 * once: their standard input closed (a well-behaved program ends at
 * its end, as a worker does), then, after linger ms at most, the one
 * stop (stop_groups) for what is left of each group; each leader
 * reaped, status[i] (may be NULL) as from wait(2).  Every descriptor
 * is closed.
 */
void
tool_end(struct tool_child *c, size_t n, long long linger, int *status)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i].in >= 0) {
			close(c[i].in);
			c[i].in = -1;
		}
	wait_leaders(c, n, now_ms() + linger);
	finish(c, n, NULL, status);
}

/*
 * Fork a process of heart's own (a round's worker) as a child of the
 * runner: the leader of a group of its own, ended as every child is
 * (tool_end; on_fatal), with SIGTERM as its parent-death signal (a
 * worker stops its own children then).  Returns 0, c->pid 0 in the
 * child (which forgets our children) and the child's here; -1 with err
 * when it could not be forked.
 */
int
tool_fork(struct tool_child *c, char *err)
{
	pid_t parent = getpid();
	sigset_t old;

	memset(c, 0, sizeof *c);
	c->sentinel = -1;
	c->in = c->out = c->err = -1;
	hold(1, &old);
	if (nlive == TOOL_LIVEMAX)
		errno = EAGAIN;
	if (nlive == TOOL_LIVEMAX || (c->pid = fork()) == -1) {
		errf(err, "fork: %s", strerror(errno));
		c->pid = -1;
		hold(0, &old);
		return -1;
	}
	if (c->pid == 0) {
		setpgid(0, 0);
		/* not the terminal's group: it may still write to it */
		signal(SIGTTOU, SIG_IGN);
		forget();
		/* and if we ended before it could ask for it */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
		    getppid() != parent)
			raise(SIGTERM);
	} else {
		setpgid(c->pid, c->pid);
		live_add(c);
	}
	hold(0, &old);
	return 0;
}
/* Feed stdin, read stdout and stderr until the leader exits or the
 * deadline passes (o->timedout). */
static void
pump(struct tool_io *x, pid_t pid, long long deadline)
{
	long long left;
	int pidfd;

	pidfd = pidfd_open(pid, 0);
	while (!tool_gone(pid)) {
		if ((left = deadline - now_ms()) <= 0) {
			x->o->timedout = 1;
			break;
		}
		/* without a pidfd, the leader is asked every 50 ms */
		if (pidfd < 0 && left > 50)
			left = 50;
		if (!io_exchange(x, pidfd, left))
			poll(NULL, 0, (int)left);
	}
	if (pidfd >= 0)
		close(pidfd);
}

/*
 * Run p->argv with p->in on its standard input, until it exits (what
 * it left running in its group is stopped then) or p->timeout (it is
 * stopped), as tool_end says.  Returns 0 when the program ran (o says
 * how it ended), -1 with err when it could not be started.  Free o
 * with tool_out_free.
 */
int
tool_exec(const struct tool_proc *p, struct tool_out *o, char *err)
{
	struct sigaction ign, old;
	struct tool_child c;
	struct tool_io x;
	long long t0;

	memset(o, 0, sizeof *o);
	o->out = xcalloc(1, p->maxout + 1);
	t0 = now_ms();
	if (tool_spawn(p, &c, err) == -1) {
		o->status = -1;
		o->ms = now_ms() - t0;
		return -1;
	}
	memset(&x, 0, sizeof x);
	x.fd[0] = c.in;
	x.fd[1] = c.out;
	x.fd[2] = c.err;
	c.in = c.out = c.err = -1;	/* x's now */
	x.in = p->in ? p->in : "";
	x.inleft = p->in ? p->inlen : 0;
	x.o = o;
	x.maxout = p->maxout;
	if (x.inleft == 0) {
		close(x.fd[0]);
		x.fd[0] = -1;
	}
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	pump(&x, c.pid, t0 + p->timeout * 1000);
	if (x.fd[0] >= 0) {
		close(x.fd[0]);
		x.fd[0] = -1;
	}
	finish(&c, 1, &x, &o->status);
	sigaction(SIGPIPE, &old, NULL);
	o->out[o->len] = '\0';
	o->errout[sizeof o->errout - 1] = '\0';
	o->ms = now_ms() - t0;
	return 0;
}

void
tool_out_free(struct tool_out *o)
{
	free(o->out);
	o->out = NULL;
}

/* The first line of s, at most n bytes, for a one-line message. */
static void
first_line(const char *s, char *buf, size_t n)
{
	size_t len = strcspn(s, "\n");

	snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), s);
}

/* 0 when the run ended with exit status 0, else -1 and why in err. */
int
tool_status(const char *what, const struct tool_proc *p,
    const struct tool_out *o, char *err)
{
	char line[300];

	first_line(o->errout, line, sizeof line);
	if (o->timedout)
		errf(err, "%s: no result within %llds: killed with its "
		    "process group", what, p->timeout);
	else if (WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0)
		return 0;
	else if (WIFEXITED(o->status))
		errf(err, "%s: exit status %d%s%s", what,
		    WEXITSTATUS(o->status), line[0] ? ": " : "", line);
	else if (WIFSIGNALED(o->status))
		errf(err, "%s: killed by signal %d", what,
		    WTERMSIG(o->status));
	else
		errf(err, "%s: ended abnormally", what);
	return -1;
}
