/*
 * tool.c - programs run on the model's behalf: the soul's tools, and
 * the command provider's program (llm.c).  No shell: the argv is the
 * soul's, exactly; the model's text reaches a program only on its
 * standard input, as JSON.  Each run has its own process group, in the
 * soul's directory, with a timeout, and a cap on the output kept.
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

#include "heart.h"

extern char **environ;

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
 * soul's directory, then exec.
 */
static void
child(const struct tool_proc *p, int in, int out, int eout, int ep)
{
	int e;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_DFL);
	if ((in = fcntl(in, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (out = fcntl(out, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (eout = fcntl(eout, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    dup2(in, STDIN_FILENO) == -1 || dup2(out, STDOUT_FILENO) == -1 ||
	    dup2(eout, STDERR_FILENO) == -1 ||
	    (p->dir != NULL && chdir(p->dir) == -1))
		goto fail;
	execvpe(p->argv[0], p->argv, p->env ? p->env : environ);
fail:
	e = errno;
	(void)!write(ep, &e, sizeof e);
	_exit(127);
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

/* Has the group's leader exited?  Asked without reaping it. */
static int
leader_gone(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT)
	    == 0 && si.si_pid == pid;
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
		if (!gone && leader_gone(pid)) {
			gone = 1;
			kill(-pid, SIGKILL);
			if (deadline > now_ms() + 1000)
				deadline = now_ms() + 1000;
		}
		if (gone && x->fd[1] < 0 && x->fd[2] < 0)
			break;
		if ((left = deadline - now_ms()) <= 0 || caught) {
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
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, eo[2] = { -1, -1 };
	int ep[2] = { -1, -1 }, e = 0, i;
	struct sigaction ign, old, olds[3];
	sigset_t mask;
	struct io x;
	long long t0;
	pid_t pid;

	memset(o, 0, sizeof *o);
	o->out = xcalloc(1, p->maxout + 1);
	t0 = now_ms();
	catch_signals(1, olds, &mask);
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1 ||
	    pipe2(eo, O_CLOEXEC) == -1 || pipe2(ep, O_CLOEXEC) == -1 ||
	    (pid = fork()) == -1) {
		catch_signals(0, olds, &mask);
		errf(err, "%s: cannot start: %s", p->argv[0],
		    strerror(errno));
		close_pair(in);
		close_pair(out);
		close_pair(eo);
		close_pair(ep);
		return -1;
	}
	if (pid == 0) {
		catch_signals(0, olds, &mask);
		child(p, in[0], out[1], eo[1], ep[1]);
	}
	setpgid(pid, pid);
	close(in[0]);
	close(out[1]);
	close(eo[1]);
	close(ep[1]);
	memset(&x, 0, sizeof x);
	x.fd[0] = in[1];
	x.fd[1] = out[0];
	x.fd[2] = eo[0];
	x.in = p->in ? p->in : "";
	x.inleft = p->in ? p->inlen : 0;
	x.o = o;
	x.maxout = p->maxout;
	for (i = 0; i < 3; i++)
		fcntl(x.fd[i], F_SETFL, O_NONBLOCK);
	if (x.inleft == 0) {
		close(x.fd[0]);
		x.fd[0] = -1;
	}
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	pump(&x, pid, t0 + p->timeout * 1000, &mask);
	sigaction(SIGPIPE, &old, NULL);
	while (waitpid(pid, &o->status, 0) == -1 && errno == EINTR)
		;
	while (read(ep[0], &e, sizeof e) == -1 && errno == EINTR)
		;
	close(ep[0]);
	catch_signals(0, olds, &mask);
	if (caught)
		raise(caught);
	o->out[o->len] = '\0';
	o->errout[sizeof o->errout - 1] = '\0';
	o->ms = now_ms() - t0;
	if (e != 0) {
		errf(err, "%s: cannot run: %s", p->argv[0], strerror(e));
		o->status = -1;
		return -1;
	}
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

/* "NAME: no such tool (the tools are: a, b)" */
static void
unknown(const json_t *tools, const char *name, char *err)
{
	char list[300] = "";
	json_t *t;
	size_t i, n;

	json_array_foreach(tools, i, t) {
		n = strlen(list);
		snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
		    json_string_value(json_object_get(t, "name")));
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

/* environ without the secrets (not_hidden), then our names. */
static char **
tool_env(const struct tool_ctx *c, const char *tool)
{
	const char *names[4] = { "HEART_AGENT", "HEART_CHAMBER",
	    "HEART_WAKE_ID", "HEART_TOOL" };
	const char *vals[4] = { c->agent, c->chamber, c->wake_id, tool };
	char *set[5] = { NULL }, **env;
	int k;

	for (k = 0; k < 4; k++)
		if (asprintf(&set[k], "%s=%s", names[k], vals[k] ? vals[k] :
		    "") == -1)
			abort();
	env = env_make(not_hidden, c->hide, set);
	for (k = 0; k < 4; k++)
		free(set[k]);
	return env;
}

/*
 * Bytes as a JSON-safe string: invalid UTF-8 (a binary tool, a cut in
 * the middle of a character) and NUL become U+FFFD.
 */
static char *
utf8_clean(const char *s, size_t len, size_t *outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	char *o = xcalloc(1, len * 3 + 1);
	size_t i = 0, n = 0, c;

	while (i < len) {
		if ((c = utf8_len(p + i, len - i)) == 0) {
			memcpy(o + n, "\xef\xbf\xbd", 3);
			n += 3;
			i++;
		} else {
			memcpy(o + n, s + i, c);
			n += c;
			i += c;
		}
	}
	*outlen = n;
	return o;
}

/* What the model reads back: the output, and a word if it was cut;
 * never a secret of heart's (it is kept in the history). */
static char *
content(const char *head, const struct tool_out *o)
{
	char *clean, *text = NULL, *safe, note[64] = "";
	size_t n;

	if (o->cut)
		snprintf(note, sizeof note, "\n[heart: output cut at %d "
		    "bytes]", TOOL_MAXOUT);
	clean = utf8_clean(o->out, o->len, &n);
	if (asprintf(&text, "%s%s%.*s%s", head ? head : "",
	    head && n ? "\n" : "", (int)n, clean, note) == -1)
		abort();
	free(clean);
	safe = secret_dup(text);
	free(text);
	return safe;
}

static char *
error_text(const char *msg)
{
	char *text = NULL;

	if (asprintf(&text, "error: %s", msg) == -1)
		abort();
	return text;
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
	const char *args = json_string_value(json_object_get(fn,
	    "arguments"));
	struct tool_proc p;
	struct tool_out o;
	json_error_t je;
	json_t *a, *argv;
	char dir[4096], *in, **av, **env, e2[HEART_ERRLEN];
	size_t i;
	int rc;

	*text = NULL;
	if (name == NULL || (t = find_tool(s->tools, name)) == NULL) {
		unknown(s->tools, name, err);
		*text = error_text(err);
		return -1;
	}
	if ((a = json_loads(args ? args : "", JSON_DECODE_ANY, &je)) ==
	    NULL || !json_is_object(a)) {
		errf(err, "%s: arguments are not a JSON object%s%.200s", name,
		    a ? "" : ": ", a ? "" : je.text);
		json_decref(a);
		*text = error_text(err);
		return -1;
	}
	in = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	argv = json_object_get(t, "command");
	av = xcalloc(json_array_size(argv) + 1, sizeof *av);
	for (i = 0; i < json_array_size(argv); i++)
		av[i] = (char *)json_string_value(json_array_get(argv, i));
	env = tool_env(c, name);
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
