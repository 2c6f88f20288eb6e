/*
 * mcpstdio.c - the stdio transport of MCP: a server started as a child
 * with child.c's runner (its own process group, no shell, the soul's
 * directory, a minimal environment plus the variables it names), one
 * newline-delimited message written to its standard input or read
 * from its output within a deadline, the end of its standard error
 * kept, and every server started stopped at the end (tool_end: stdin
 * closed, then after MCP_LINGER the runner's one stop of the group).
 * Every read is bounded: a message (MCP_LINEMAX), what is read while
 * waiting for one answer (MCP_READMAX).
 */
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

/* what a server gets of heart-wake's environment, unless it names more
 * (the variables the MCP SDKs pass by default, and the locale) */
static const char *const keep_vars[] = { "HOME", "LOGNAME", "PATH",
    "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR", NULL };

#define MCP_LINGER	1000	/* ms from closing its stdin to the stop */
#define MCP_LINEMAX	(4 * 1024 * 1024)	/* one message */
#define MCP_READMAX	(16 * 1024 * 1024)	/* read for one answer */

static struct sigaction savedpipe;

/* While servers run, SIGPIPE is ignored: a server that dies must not
 * end us.  (The signals that end heart-wake are child.c's.) */
void
mcp_guard(int on)
{
	struct sigaction sa;

	if (!on) {
		sigaction(SIGPIPE, &savedpipe, NULL);
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &savedpipe);
}

/* Why a server failed, the first time: kept, and said in err. */
int
mcp_fail(struct mcp_server *v, int broken, char *err, const char *fmt, ...)
{
	char msg[HEART_ERRLEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	errf(err, "mcp server %s: %s", v->name, msg);
	if (v->why[0] == '\0')
		snprintf(v->why, sizeof v->why, "%s", err);
	v->failed = 1;
	v->broken |= broken;
	return -1;
}

/* What is in its stderr pipe now, the end of it kept. */
static void
drain_err(struct mcp_server *v)
{
	char b[4096];
	ssize_t r;
	size_t n;
	int k;

	/* a bounded drain: a server that floods it must not hold us */
	for (k = 0; k < 16 && v->ch.err >= 0; k++) {
		if ((r = read(v->ch.err, b, sizeof b)) <= 0) {
			if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(v->ch.err);
				v->ch.err = -1;
			}
			if (r == -1 && errno == EINTR)
				continue;
			return;
		}
		n = (size_t)r;
		if (n >= MCP_TAIL) {
			memcpy(v->tail, b + n - MCP_TAIL, MCP_TAIL);
			v->tlen = MCP_TAIL;
			continue;
		}
		if (v->tlen + n > MCP_TAIL) {
			memmove(v->tail, v->tail + (v->tlen + n - MCP_TAIL),
			    MCP_TAIL - n);
			v->tlen = MCP_TAIL - n;
		}
		memcpy(v->tail + v->tlen, b, n);
		v->tlen += n;
	}
}

/* "exited with status 3", once its leader has gone (a tenth of a
 * second at most after its output closed) */
static void
ended(struct mcp_server *v, char *buf, size_t n)
{
	long long until = mono_ms() + 100;
	siginfo_t si;

	while (!tool_gone(v->ch.pid) && mono_ms() < until)
		poll(NULL, 0, 5);
	memset(&si, 0, sizeof si);
	drain_err(v);
	if (waitid(P_PID, (id_t)v->ch.pid, &si, WEXITED | WNOHANG |
	    WNOWAIT) == -1 || si.si_pid != v->ch.pid)
		snprintf(buf, n, "closed its output");
	else if (si.si_code == CLD_EXITED)
		snprintf(buf, n, "exited with status %d", si.si_status);
	else
		snprintf(buf, n, "was killed by signal %d", si.si_status);
}

/* Write one message and its newline, within the deadline. */
int
mcp_send(struct mcp_server *v, json_t *msg, long long deadline, char *err)
{
	char *line = json_dumps(msg, JSON_COMPACT);
	size_t len = strlen(line), done = 0;
	struct pollfd pf;
	ssize_t w;
	int rc = 0;

	json_decref(msg);
	line = realloc(line, len + 2);
	if (line == NULL)
		abort();
	line[len++] = '\n';
	while (done < len && rc == 0) {
		if (v->ch.in < 0 || mono_ms() >= deadline) {
			rc = mcp_fail(v, 1, err, v->ch.in < 0 ? "its input is "
			    "closed" : "does not read its input");
			break;
		}
		pf = (struct pollfd){ v->ch.in, POLLOUT, 0 };
		poll(&pf, 1, (int)(deadline - mono_ms()));
		if ((w = write(v->ch.in, line + done, len - done)) > 0)
			done += (size_t)w;
		else if (w == -1 && errno != EAGAIN && errno != EINTR) {
			char how[100];
			ended(v, how, sizeof how);
			rc = mcp_fail(v, 1, err, "%s", how);
		}
	}
	free(line);
	return rc;
}

/*
 * The next message: 1 with it in *line (NUL-ended, until the next
 * read), 0 when the deadline passed, -1 with err when the server ended
 * or passed a bound (*total counts the bytes of this wait).
 */
int
mcp_recv(struct mcp_server *v, long long deadline, size_t *total, char **line,
    char *err)
{
	struct pollfd pf[2];
	char *nl, how[100];
	long long left;
	ssize_t r;

	for (;;) {
		if ((nl = memchr(v->buf + v->off, '\n', v->len - v->off))) {
			*nl = '\0';
			*line = v->buf + v->off;
			v->off = (size_t)(nl - v->buf) + 1;
			return 1;
		}
		if (v->len - v->off > MCP_LINEMAX)
			return mcp_fail(v, 1, err, "sent a message longer "
			    "than %d bytes", MCP_LINEMAX);
		if (*total > MCP_READMAX)
			return mcp_fail(v, 1, err, "sent more than %d bytes "
			    "without an answer", MCP_READMAX);
		memmove(v->buf, v->buf + v->off, v->len - v->off);
		v->len -= v->off;
		v->off = 0;
		if ((left = deadline - mono_ms()) <= 0)
			return 0;
		pf[0] = (struct pollfd){ v->ch.out, POLLIN, 0 };
		pf[1] = (struct pollfd){ v->ch.err, POLLIN, 0 };
		if (poll(pf, v->ch.err >= 0 ? 2 : 1, (int)left) == -1 &&
		    errno != EINTR)
			return mcp_fail(v, 1, err, "poll: %s",
			    strerror(errno));
		drain_err(v);
		r = read(v->ch.out, v->buf + v->len, MCP_LINEMAX + 2 -
		    v->len);
		if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR)) {
			ended(v, how, sizeof how);
			return mcp_fail(v, 1, err, "%s", how);
		}
		if (r > 0) {
			v->len += (size_t)r;
			*total += (size_t)r;
		}
	}
}

/* The entries of heart-wake's environment a server gets. */
static int
keep_var(const char *entry, const void *arg)
{
	size_t n = strcspn(entry, "="), i;
	const json_t *pass = arg, *e;

	for (i = 0; keep_vars[i] != NULL; i++)
		if (strlen(keep_vars[i]) == n &&
		    strncmp(entry, keep_vars[i], n) == 0)
			return 1;
	json_array_foreach(pass, i, e)
		if (strlen(json_string_value(e)) == n &&
		    strncmp(entry, json_string_value(e), n) == 0)
			return 1;
	return 0;
}

/* its env values, then heart's names */
static char **
server_env(const struct mcp_server *v, const struct tool_ctx *c)
{
	const json_t *env = json_object_get(v->conf, "env");
	json_t *val;
	const char *key;
	char **set, **out;
	size_t k = 0;

	set = xcalloc(json_object_size(env) + 4, sizeof *set);
	json_object_foreach((json_t *)env, key, val)
		if (asprintf(&set[k++], "%s=%s", key,
		    json_string_value(val)) == -1)
			abort();
	if (asprintf(&set[k++], "HEART_AGENT=%s", c->agent) == -1 ||
	    asprintf(&set[k++], "HEART_CHAMBER=%s", c->chamber ?
	    c->chamber : "") == -1 || asprintf(&set[k++],
	    "HEART_WAKE_ID=%s", c->wake_id ? c->wake_id : "") == -1)
		abort();
	out = env_make(keep_var, json_object_get(v->conf, "pass_env"), set);
	env_free(set);
	return out;
}

/* Start a server, in its own process group: 0, or -1 with err. */
int
mcp_start(struct mcp_server *v, const struct soul *s, const struct tool_ctx *c,
    char *err)
{
	const json_t *args = json_object_get(v->conf, "args");
	struct tool_proc p;
	char dir[4096], **av, **env, e2[HEART_ERRLEN];
	size_t i;
	int rc;

	av = xcalloc(json_array_size(args) + 2, sizeof *av);
	av[0] = (char *)json_string_value(json_object_get(v->conf,
	    "command"));
	for (i = 0; i < json_array_size(args); i++)
		av[i + 1] = (char *)json_string_value(json_array_get(args,
		    i));
	env = server_env(v, c);
	soul_dir(s, dir, sizeof dir);
	memset(&p, 0, sizeof p);
	p.argv = av;
	p.dir = dir;
	p.env = env;
	if ((rc = tool_spawn(&p, &v->ch, e2)) == -1)
		mcp_fail(v, 1, err, "%s", e2);
	else {
		v->started = 1;
		v->buf = xcalloc(1, MCP_LINEMAX + 3);
	}
	env_free(env);
	free(av);
	return rc;
}

/* Stop every server of sv[0..n) that was started (tool_end). */
void
mcp_stop(struct mcp_server *sv, size_t n)
{
	struct tool_child ch[MCP_SERVERMAX];
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (sv[i].started)
			ch[k++] = sv[i].ch;
	tool_end(ch, k, MCP_LINGER, NULL);
}
