/*
 * tool.c - programs run on the model's behalf: the soul's tools, and
 * the command provider's program (llm.c).  No shell: the argv is the
 * soul's, exactly; the model's text reaches a program only on its
 * standard input, as JSON, and a program is handed no descriptor but
 * its standard input, output and error.  Each run has its own process
 * group, in the soul's directory, with a timeout, and a cap on the
 * output kept.
 *
 * Invariants: when the program exits, or its time is up, its whole
 * process group is killed, so nothing it started outlives the call;
 * the group is signalled before its leader is reaped, so the group id
 * cannot have been reused.  A SIGTERM, SIGINT or SIGHUP that comes
 * while a program runs kills its group first, and is then raised
 * again, to end the caller as it would have.  A tool never sees the
 * model's API key.  What a program writes is outside text: its
 * standard error reaches messages through errf, its output the model
 * and the history through secret_dup.
 */
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartint.h"

extern char **environ;

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
 * In the child: its own group, the pipes on 0, 1 and 2 (moved above 2
 * first, in case heart-wake was started with one of them closed), the
 * signals the parent holds back let through again, the soul's
 * directory, then exec.
 */
static void
child(const struct tool_proc *p, int in, int out, int eout, int ep)
{
	sigset_t held;
	int e;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&held);
	sigaddset(&held, SIGTERM);
	sigaddset(&held, SIGINT);
	sigaddset(&held, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &held, NULL);
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

/*
 * Start p->argv in its own process group, its standard input, output
 * and error on pipes (c->in ours to write, c->out and c->err ours to
 * read, all non-blocking; with p->inherit, its output and error are
 * ours, and c->out and c->err -1).  Returns 0 once the program is
 * running, -1 with err when it could not be started or exec'd (nothing
 * is left running then).  The caller ends it with tool_end.
 */
int
tool_spawn(const struct tool_proc *p, struct tool_child *c, char *err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, eo[2] = { -1, -1 };
	int ep[2] = { -1, -1 }, e = 0;
	ssize_t r;
	pid_t pid;

	c->pid = -1;
	c->in = c->out = c->err = -1;
	if (pipe2(in, O_CLOEXEC) == -1 || (!p->inherit &&
	    (pipe2(out, O_CLOEXEC) == -1 || pipe2(eo, O_CLOEXEC) == -1)) ||
	    pipe2(ep, O_CLOEXEC) == -1 || (pid = fork()) == -1) {
		errf(err, "%s: cannot start: %s", p->argv[0],
		    strerror(errno));
		close_pair(in);
		close_pair(out);
		close_pair(eo);
		close_pair(ep);
		return -1;
	}
	if (pid == 0)
		child(p, in[0], out[1], eo[1], ep[1]);
	setpgid(pid, pid);
	close(in[0]);
	if (!p->inherit) {
		close(out[1]);
		close(eo[1]);
		out[1] = eo[1] = -1;
	}
	close(ep[1]);
	/* the pipe closes at exec, or carries exec's errno */
	while ((r = read(ep[0], &e, sizeof e)) == -1 && errno == EINTR)
		;
	close(ep[0]);
	if (r == (ssize_t)sizeof e) {
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
		close(in[1]);
		close_pair(out);
		close_pair(eo);
		errf(err, "%s: cannot run: %s", p->argv[0], strerror(e));
		return -1;
	}
	c->pid = pid;
	c->in = in[1];
	c->out = out[0];
	c->err = eo[0];
	fcntl(c->in, F_SETFL, O_NONBLOCK);
	if (!p->inherit) {
		fcntl(c->out, F_SETFL, O_NONBLOCK);
		fcntl(c->err, F_SETFL, O_NONBLOCK);
	}
	return 0;
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
		if (i == n || (left = deadline - mono_ms()) <= 0)
			return;
		poll(NULL, 0, left < 20 ? (int)left : 20);
	}
}

/*
 * End the programs c[0..n) started by tool_spawn, all at once: their
 * standard input closed (a well-behaved program exits at its end),
 * then after grace ms a SIGTERM to each group, after grace ms more a
 * SIGKILL to each group whatever happened (nothing a program started
 * survives it), then each leader reaped; status[i] (may be NULL) as
 * from wait(2).  Every descriptor is closed.
 */
void
tool_end(struct tool_child *c, size_t n, long long grace, int *status)
{
	size_t i;
	int st;

	for (i = 0; i < n; i++)
		if (c[i].in >= 0) {
			close(c[i].in);
			c[i].in = -1;
		}
	wait_leaders(c, n, mono_ms() + grace);
	for (i = 0; i < n; i++)
		if (c[i].pid > 0 && !tool_gone(c[i].pid))
			kill(-c[i].pid, SIGTERM);
	wait_leaders(c, n, mono_ms() + grace);
	for (i = 0; i < n; i++) {
		if (c[i].out >= 0)
			close(c[i].out);
		if (c[i].err >= 0)
			close(c[i].err);
		c[i].out = c[i].err = -1;
		if (c[i].pid <= 0)
			continue;
		kill(-c[i].pid, SIGKILL);
		while (waitpid(c[i].pid, &st, 0) == -1 && errno == EINTR)
			;
		if (status != NULL)
			status[i] = st;
		c[i].pid = -1;
	}
}

struct io {
	int	 fd[3];		/* stdin (ours to write), stdout, stderr */
	const char *in;
	size_t	 inleft;
	struct tool_out *o;
	size_t	 maxout;
	size_t	 errlen;
};

/* Keep up to the cap, read and drop the rest; 0 at end of file. */
static int
take(struct io *x, int which)
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
give(struct io *x)
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

static volatile sig_atomic_t caught;

static void
on_signal(int sig)
{
	caught = sig;
}

/*
 * Feed stdin, read stdout and stderr until the leader exits (then kill
 * what is left of its group and drain the pipes, for a second at most:
 * only a process that left the group can still hold them) or the
 * deadline passes (kill the group).  SIGTERM, SIGINT and SIGHUP are
 * caught meanwhile, and are let through (ppoll) only while waiting: one
 * kills the group at once, and tool_exec raises it again when done.
 */
static void
pump(struct io *x, pid_t pid, long long deadline, const sigset_t *open)
{
	struct pollfd pf[4];
	struct timespec ts;
	int pidfd, gone = 0, i, n;
	long long left, wait;

	pidfd = pidfd_open(pid, 0);
	for (;;) {
		if (!gone && tool_gone(pid)) {
			gone = 1;
			kill(-pid, SIGKILL);
			if (deadline > mono_ms() + 1000)
				deadline = mono_ms() + 1000;
		}
		if (gone && x->fd[1] < 0 && x->fd[2] < 0)
			break;
		if ((left = deadline - mono_ms()) <= 0 || caught) {
			if (!gone) {
				kill(-pid, SIGKILL);
				x->o->timedout = !caught;
			}
			break;
		}
		for (i = n = 0; i < 3; i++)
			if (x->fd[i] >= 0)
				pf[n++] = (struct pollfd){ x->fd[i],
				    i == 0 ? POLLOUT : POLLIN, 0 };
		if (pidfd >= 0 && !gone)
			pf[n++] = (struct pollfd){ pidfd, POLLIN, 0 };
		wait = pidfd >= 0 || gone ? left : left < 50 ? left : 50;
		ts.tv_sec = wait / 1000;
		ts.tv_nsec = wait % 1000 * 1000000;
		if (ppoll(pf, (nfds_t)n, &ts, open) == -1 && errno != EINTR)
			break;
		for (i = 0; i < 3 && !caught; i++) {
			if (x->fd[i] < 0)
				continue;
			if (i == 0)
				give(x);
			else if (!take(x, i)) {
				close(x->fd[i]);
				x->fd[i] = -1;
			}
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	for (i = 0; i < 3; i++)
		if (x->fd[i] >= 0)
			close(x->fd[i]);
}

/* Catch (or let go) the signals that end heart-wake while a tool runs. */
static void
catch_signals(int on, struct sigaction old[3], sigset_t *mask)
{
	static const int sigs[3] = { SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa;
	sigset_t block;
	int i;

	if (!on) {
		sigprocmask(SIG_SETMASK, mask, NULL);
		for (i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
		return;
	}
	caught = 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&block);
	for (i = 0; i < 3; i++) {
		sigaction(sigs[i], &sa, &old[i]);
		if (old[i].sa_handler == SIG_IGN)	/* nohup: stay so */
			sigaction(sigs[i], &old[i], NULL);
		else
			sigaddset(&block, sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &block, mask);
}

/*
 * Run p->argv with p->in on its standard input.  Returns 0 when the
 * program ran (o says how it ended), -1 with err when it could not be
 * started.  Free o with tool_out_free.
 */
int
tool_exec(const struct tool_proc *p, struct tool_out *o, char *err)
{
	struct sigaction ign, old, olds[3];
	struct tool_child c;
	sigset_t mask;
	struct io x;
	long long t0;

	memset(o, 0, sizeof *o);
	o->out = xcalloc(1, p->maxout + 1);
	t0 = mono_ms();
	catch_signals(1, olds, &mask);
	if (tool_spawn(p, &c, err) == -1) {
		catch_signals(0, olds, &mask);
		o->status = -1;
		o->ms = mono_ms() - t0;
		return -1;
	}
	memset(&x, 0, sizeof x);
	x.fd[0] = c.in;
	x.fd[1] = c.out;
	x.fd[2] = c.err;
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
	pump(&x, c.pid, t0 + p->timeout * 1000, &mask);
	sigaction(SIGPIPE, &old, NULL);
	while (waitpid(c.pid, &o->status, 0) == -1 && errno == EINTR)
		;
	catch_signals(0, olds, &mask);
	if (caught)
		raise(caught);
	o->out[o->len] = '\0';
	o->errout[sizeof o->errout - 1] = '\0';
	o->ms = mono_ms() - t0;
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

/* The soul's tools as the model is offered them (OpenAI form). */
json_t *
tool_offer(const json_t *tools)
{
	json_t *arr = json_array(), *t;
	size_t i;

	json_array_foreach(tools, i, t)
		json_array_append_new(arr, json_pack("{s:s,s:{s:O,s:s,s:O}}",
		    "type", "function", "function", "name",
		    json_object_get(t, "name"), "description",
		    json_is_string(json_object_get(t, "description")) ?
		    json_string_value(json_object_get(t, "description")) : "",
		    "parameters", json_object_get(t, "parameters")));
	return arr;
}

static const json_t *
find_tool(const json_t *tools, const char *name)
{
	json_t *t;
	size_t i;

	json_array_foreach(tools, i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")),
		    name) == 0)
			return t;
	return NULL;
}

/* "NAME: no such tool (the tools are: a, b)": the tools offered
 * (OpenAI form) when known, else the soul's; heartbeat is heart's own */
static void
unknown(const json_t *tools, const json_t *offer, const char *name,
    char *err)
{
	char list[300] = "";
	const char *tn;
	json_t *t;
	size_t i, n;

	json_array_foreach(offer ? offer : tools, i, t) {
		tn = json_string_value(json_object_get(offer ?
		    json_object_get(t, "function") : t, "name"));
		if (tn == NULL || (offer && strcmp(tn, "heartbeat") == 0))
			continue;
		n = strlen(list);
		snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
		    tn);
	}
	errf(err, "%.64s: no such tool (%s%s)", name && *name ? name :
	    "(no name)", list[0] ? "the tools are: " : "there are no tools",
	    list);
}

/*
 * Does entry ("NAME=value") pass to a tool?  Not the soul's key
 * variable (hide), not a store or broker password, and not any
 * variable whose value is a secret heart holds (another provider's
 * key): a tool gets what it needs from its own configuration.
 */
static int
not_hidden(const char *entry, const void *hide)
{
	const char *eq = strchr(entry, '=');
	size_t hl = hide ? strlen(hide) : 0;

	if (hl > 0 && strncmp(entry, hide, hl) == 0 && entry[hl] == '=')
		return 0;
	return !secret_password_var(entry) && (eq == NULL ||
	    !secret_held(eq + 1));
}

/*
 * environ without the secrets (not_hidden), then our names, then more
 * ("NAME=value" each, NULL-ended; may be NULL): a tool's environment,
 * and a gate program's (gate.c).
 */
char **
tool_env(const struct tool_ctx *c, const char *tool, char *const *more)
{
	const char *names[4] = { "HEART_AGENT", "HEART_CHAMBER",
	    "HEART_WAKE_ID", "HEART_TOOL" };
	const char *vals[4] = { c->agent, c->chamber, c->wake_id, tool };
	char *set[4 + TOOL_ENVMORE + 1] = { NULL }, **env;
	int k, n;

	for (k = 0; k < 4; k++)
		if (asprintf(&set[k], "%s=%s", names[k], vals[k] ? vals[k] :
		    "") == -1)
			abort();
	for (n = 0; more != NULL && more[n] != NULL && n < TOOL_ENVMORE; n++)
		set[k + n] = more[n];
	env = env_make(not_hidden, c->hide, set);
	for (k = 0; k < 4; k++)
		free(set[k]);
	return env;
}

/*
 * What the model reads back of a program's or a server's output: head
 * (may be NULL) and the len bytes of out, cut at TOOL_MAXOUT with a
 * word if they were cut (or were already, cut), UTF-8 cleaned, never a
 * secret of heart's (it is kept in the history).
 */
char *
tool_text(const char *head, const char *out, size_t len, int cut)
{
	char *clean, *text = NULL, *safe, note[64] = "";
	size_t n;

	if (len > TOOL_MAXOUT) {
		len = TOOL_MAXOUT;
		cut = 1;
	}
	if (cut)
		snprintf(note, sizeof note, "\n[heart: output cut at %d "
		    "bytes]", TOOL_MAXOUT);
	clean = utf8_clean(out, len, &n);
	if (asprintf(&text, "%s%s%.*s%s", head ? head : "",
	    head && n ? "\n" : "", (int)n, clean, note) == -1)
		abort();
	free(clean);
	safe = secret_dup(text);
	free(text);
	return safe;
}

static char *
content(const char *head, const struct tool_out *o)
{
	return tool_text(head, o->out, o->len, o->cut);
}

static char *
error_text(const char *msg)
{
	char *text = NULL;

	if (asprintf(&text, "error: %s", msg) == -1)
		abort();
	return text;
}

/* The arguments of a call (OpenAI form): a JSON object, or NULL and
 * why in err. */
json_t *
tool_args(const json_t *call, char *err)
{
	const json_t *fn = json_object_get(call, "function");
	const char *name = json_string_value(json_object_get(fn, "name"));
	const char *args = json_string_value(json_object_get(fn,
	    "arguments"));
	json_error_t je;
	json_t *a;

	if ((a = json_loads(args ? args : "", JSON_DECODE_ANY, &je)) ==
	    NULL || !json_is_object(a)) {
		errf(err, "%s: arguments are not a JSON object%s%.200s",
		    name ? name : "(no name)", a ? "" : ": ", a ? "" :
		    je.text);
		json_decref(a);
		return NULL;
	}
	return a;
}

/*
 * Run one tool call (OpenAI form: {id, function: {name, arguments}}).
 * Always sets *text to what the model reads back.  Returns 0 when the
 * tool succeeded; -1 with why in err when it failed: an unknown name,
 * arguments that are not a JSON object, a program that cannot start,
 * exits non-zero, or runs past its timeout.
 */
int
tool_call(const struct soul *s, const struct tool_ctx *c,
    const json_t *call, char **text, char *err)
{
	const json_t *fn = json_object_get(call, "function"), *t;
	const char *name = json_string_value(json_object_get(fn, "name"));
	struct tool_proc p;
	struct tool_out o;
	json_t *a, *argv;
	char dir[4096], *in, **av, **env, e2[HEART_ERRLEN];
	size_t i;
	int rc;

	*text = NULL;
	if (name == NULL || (t = find_tool(s->tools, name)) == NULL) {
		unknown(s->tools, c->offer, name, err);
		*text = error_text(err);
		return -1;
	}
	if ((a = tool_args(call, err)) == NULL) {
		*text = error_text(err);
		return -1;
	}
	in = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	argv = json_object_get(t, "command");
	av = xcalloc(json_array_size(argv) + 1, sizeof *av);
	for (i = 0; i < json_array_size(argv); i++)
		av[i] = (char *)json_string_value(json_array_get(argv, i));
	env = tool_env(c, name, NULL);
	soul_dir(s, dir, sizeof dir);
	memset(&p, 0, sizeof p);
	p.argv = av;
	p.dir = dir;
	p.env = env;
	p.in = in;
	p.inlen = strlen(in);
	p.timeout = json_integer_value(json_object_get(t, "timeout"));
	p.maxout = TOOL_MAXOUT;
	if (tool_exec(&p, &o, e2) == -1) {
		errf(err, "%s: %s", name, e2);
		*text = error_text(err);
		rc = -1;
	} else if ((rc = tool_status(name, &p, &o, err)) == -1) {
		*text = error_text(err);
		if (o.len > 0) {
			char *more = content(*text, &o);
			free(*text);
			*text = more;
		}
	} else
		*text = content(NULL, &o);
	tool_out_free(&o);
	env_free(env);
	free(av);
	free(in);
	return rc;
}
