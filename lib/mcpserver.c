/*
 * mcpserver.c - one MCP server, the stdio transport of the Model
 * Context Protocol, specification 2025-06-18 (and the older versions
 * a server may answer with, as versions[] lists them): started as a
 * child with child.c's runner (its own process group, no shell, the
 * soul's directory, a minimal environment plus the variables it
 * names); newline-delimited JSON-RPC 2.0 on its standard input and
 * output: initialize, notifications/initialized, tools/list page by
 * page, tools/call, notifications/cancelled at a timeout; the end of
 * its standard error kept; stopped at the end with every other
 * (tool_end: stdin closed, then after MCP_LINGER the runner's one stop
 * of the group).  mcp.c holds a wake's servers.
 * Every read is bounded: a message (MCP_LINEMAX), what is read while
 * waiting for one answer (MCP_READMAX), the server's timeout, the
 * tools listed (MCP_TOOLMAX) and their pages (MCP_PAGEMAX).  What a
 * server says is outside text: to messages through errf, to the model
 * through tool_text (mcp.c), its standard error to the caller only
 * when it failed.
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
#define MCP_TOOLMAX	1024		/* tools a server lists */
#define MCP_PAGEMAX	64		/* pages of tools/list */
#define MCP_TAIL	4096	/* the end of a server's stderr, kept */

/* the protocol versions heart speaks, the one it asks for first */
static const char *const versions[] = { "2025-06-18", "2025-03-26",
    "2024-11-05", NULL };

struct mcp_server {
	const char *name;
	const json_t *conf;
	struct tool_child ch;
	int	 started;
	int	 up;		/* initialized, its tools listed */
	int	 broken;	/* its stream can no longer be trusted */
	int	 failed;	/* something failed: its stderr is told */
	long long timeout;	/* s */
	long long next_id;
	char	*buf;		/* bytes read, not yet a whole message */
	size_t	 off, len;
	char	 tail[MCP_TAIL];	/* the end of its stderr */
	size_t	 tlen;
	char	 version[16];
	json_t	*listed;	/* the tools it listed */
	char	 why[HEART_ERRLEN];	/* its first failure, or "" */
};

static struct sigaction savedpipe;
static int guarded;		/* guard(1) is in force */

/* While servers run, SIGPIPE is ignored: a server that dies must not
 * end us.  (The signals that end heart-wake are child.c's.) */
static void
guard(int on)
{
	struct sigaction sa;

	if (on == guarded)
		return;
	guarded = on;
	if (!on) {
		sigaction(SIGPIPE, &savedpipe, NULL);
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &savedpipe);
}

/* Why a server failed, the first time: kept, and said in err. */
static int
fail(struct mcp_server *v, int broken, char *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
fail(struct mcp_server *v, int broken, char *err, const char *fmt, ...)
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
static int
write_msg(struct mcp_server *v, json_t *msg, long long deadline, char *err)
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
			rc = fail(v, 1, err, v->ch.in < 0 ? "its input is "
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
			rc = fail(v, 1, err, "%s", how);
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
static int
read_msg(struct mcp_server *v, long long deadline, size_t *total, char **line,
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
			return fail(v, 1, err, "sent a message longer "
			    "than %d bytes", MCP_LINEMAX);
		if (*total > MCP_READMAX)
			return fail(v, 1, err, "sent more than %d bytes "
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
			return fail(v, 1, err, "poll: %s",
			    strerror(errno));
		drain_err(v);
		r = read(v->ch.out, v->buf + v->len, MCP_LINEMAX + 2 -
		    v->len);
		if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR)) {
			ended(v, how, sizeof how);
			return fail(v, 1, err, "%s", how);
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
static int
start(struct mcp_server *v, const struct soul *s, const struct tool_ctx *c,
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
		fail(v, 1, err, "%s", e2);
	else {
		v->started = 1;
		v->buf = xcalloc(1, MCP_LINEMAX + 3);
	}
	env_free(env);
	free(av);
	return rc;
}

/* A request of the server's own, answered: ping, else "no method". */
static int
answer_request(struct mcp_server *v, json_t *req, long long deadline,
    char *err)
{
	const char *method = json_string_value(json_object_get(req,
	    "method"));
	json_t *id = json_object_get(req, "id");

	if (method != NULL && strcmp(method, "ping") == 0)
		return write_msg(v, json_pack("{s:s,s:O,s:{}}", "jsonrpc",
		    "2.0", "id", id, "result"), deadline, err);
	return write_msg(v, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc",
	    "2.0", "id", id, "error", "code", -32601, "message",
	    "heart-wake does not offer this method"), deadline, err);
}

/*
 * Send method(params) (params is taken) and wait for its answer: 0
 * with *result, -1 with err (a JSON-RPC error, a timeout: the request
 * is cancelled, or a server that broke its stream).
 */
static int
request(struct mcp_server *v, const char *method, json_t *params,
    json_t **result, char *err)
{
	long long id = ++v->next_id, deadline = mono_ms() + v->timeout * 1000;
	json_t *msg = NULL;
	size_t total = 0;
	char *line = NULL, e2[HEART_ERRLEN];
	int r, kind;

	*result = NULL;
	if (v->broken) {
		errf(err, "%s", v->why);
		json_decref(params);
		return -1;
	}
	if (write_msg(v, json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0",
	    "id", (json_int_t)id, "method", method, "params", params),
	    deadline, err) == -1)
		return -1;
	for (;;) {
		if ((r = read_msg(v, deadline, &total, &line, err)) == -1)
			return -1;
		if (r == 0)
			break;
		kind = mcp_message(line, strlen(line), id, &msg, e2);
		if (kind == -1)
			return fail(v, 1, err, "%s", e2);
		if (kind == MCP_REQUEST && answer_request(v, msg, deadline,
		    err) == -1) {
			json_decref(msg);
			return -1;
		}
		if (kind == MCP_RESULT) {
			*result = msg;
			return 0;
		}
		if (kind == MCP_ERROR) {
			errf(err, "mcp server %s: %s: error %lld: %.300s",
			    v->name, method, (long long)json_integer_value(
			    json_object_get(msg, "code")), json_string_value(
			    json_object_get(msg, "message")) ?
			    json_string_value(json_object_get(msg,
			    "message")) : "(no message)");
			json_decref(msg);
			v->failed = 1;
			return -1;
		}
		json_decref(msg);
	}
	/* the specification: initialize is never cancelled */
	if (strcmp(method, "initialize") != 0)
		write_msg(v, json_pack("{s:s,s:s,s:{s:I,s:s}}", "jsonrpc",
		    "2.0", "method", "notifications/cancelled", "params",
		    "requestId", (json_int_t)id, "reason", "timeout"),
		    mono_ms() + 1000, e2);
	return fail(v, strcmp(method, "initialize") == 0, err, "no answer "
	    "to %s within %llds%s", method, v->timeout,
	    strcmp(method, "initialize") ? " (cancelled)" : "");
}

/* initialize, the version agreed on, then notifications/initialized */
static int
initialize(struct mcp_server *v, const char *client, char *err)
{
	json_t *res;
	const char *ver;
	int i;

	if (request(v, "initialize", json_pack("{s:s,s:{},s:{s:s,s:s}}",
	    "protocolVersion", versions[0], "capabilities", "clientInfo",
	    "name", "heart-wake", "version", client ? client : "0"), &res,
	    err) == -1)
		return -1;
	ver = json_string_value(json_object_get(res, "protocolVersion"));
	for (i = 0; ver != NULL && versions[i] != NULL; i++)
		if (strcmp(ver, versions[i]) == 0)
			break;
	if (ver == NULL || versions[i] == NULL) {
		fail(v, 1, err, "speaks protocol version %.40s; "
		    "heart-wake speaks 2025-06-18, 2025-03-26 and 2024-11-05",
		    ver ? ver : "(none given)");
		json_decref(res);
		return -1;
	}
	snprintf(v->version, sizeof v->version, "%s", ver);
	if (!json_is_object(json_object_get(json_object_get(res,
	    "capabilities"), "tools"))) {
		json_decref(res);
		return fail(v, 1, err, "offers no tools (its capabilities "
		    "have none)");
	}
	json_decref(res);
	return write_msg(v, json_pack("{s:s,s:s}", "jsonrpc", "2.0",
	    "method", "notifications/initialized"), mono_ms() +
	    v->timeout * 1000, err);
}

/* tools/list, page by page, into v->listed */
static int
list_tools(struct mcp_server *v, char *err)
{
	char last[1024] = "", e2[HEART_ERRLEN];
	const char *cursor = NULL;
	json_t *res, *params;
	int page;

	v->listed = json_array();
	for (page = 0; page < MCP_PAGEMAX; page++) {
		params = cursor ? json_pack("{s:s}", "cursor", last) :
		    json_object();
		if (request(v, "tools/list", params, &res, err) == -1)
			return -1;
		if (mcp_tools(res, v->listed, &cursor, e2) == -1) {
			json_decref(res);
			return fail(v, 1, err, "tools/list: %s", e2);
		}
		if (json_array_size(v->listed) > MCP_TOOLMAX) {
			json_decref(res);
			return fail(v, 1, err, "lists more than %d tools",
			    MCP_TOOLMAX);
		}
		if (cursor == NULL || strlen(cursor) >= sizeof last ||
		    strcmp(cursor, last) == 0) {
			int bad = cursor != NULL;
			json_decref(res);
			if (bad)
				return fail(v, 1, err, "tools/list: a "
				    "next cursor too long, or the same again");
			return 0;
		}
		snprintf(last, sizeof last, "%s", cursor);
		json_decref(res);
	}
	return fail(v, 1, err, "lists its tools in more than %d pages",
	    MCP_PAGEMAX);
}

/*
 * Start the server name of conf (its soul s), initialize it and list
 * its tools: 0, or -1 with err.  *out is always set: stop it with
 * mcp_stop.
 */
int
mcp_start(const struct soul *s, const struct tool_ctx *c, const char *name,
    const json_t *conf, const char *client, struct mcp_server **out,
    char *err)
{
	struct mcp_server *v = xcalloc(1, sizeof *v);

	*out = v;
	v->name = name;
	v->conf = conf;
	v->timeout = json_integer_value(json_object_get(conf, "timeout"));
	guard(1);
	if (start(v, s, c, err) == -1 || initialize(v, client, err) == -1 ||
	    list_tools(v, err) == -1)
		return -1;
	v->up = 1;
	return 0;
}

/* The tools it listed (borrowed). */
const json_t *
mcp_listed(const struct mcp_server *v)
{
	return v->listed;
}

/*
 * Call its tool with args (taken): 0 with its result as text (*out,
 * *len, *iserror as mcp_result says); -1 with err when the server
 * failed, answered with an error, or not in time, or with a result
 * that does not read.
 */
int
mcp_tool_call(struct mcp_server *v, const char *tool, json_t *args,
    char **out, size_t *len, int *iserror, char *err)
{
	char e2[HEART_ERRLEN];
	json_t *res;

	*out = NULL;
	if (request(v, "tools/call", json_pack("{s:s,s:o}", "name", tool,
	    "arguments", args), &res, err) == -1)
		return -1;
	if (mcp_result(res, out, len, iserror, e2) == -1) {
		json_decref(res);
		v->failed = 1;
		errf(err, "mcp server %s: tools/call: %s", v->name, e2);
		return -1;
	}
	json_decref(res);
	return 0;
}

static int
allowed(const struct mcp_server *v, const char *tool)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(v->conf, "tools"), i, e)
		if (strcmp(json_string_value(e), tool) == 0)
			return 1;
	return 0;
}

/* A server's tools for --list-tools: allowed or not, and as what. */
json_t *
mcp_server_json(const struct mcp_server *v)
{
	json_t *tools = json_array(), *t;
	const char *tn;
	char full[128];
	size_t j;

	json_array_foreach(v->listed, j, t) {
		tn = json_string_value(json_object_get(t, "name"));
		snprintf(full, sizeof full, "%s%s%s", v->name, MCP_SEP, tn);
		json_array_append_new(tools, json_pack("{s:s,s:b,s:s?,s:O?}",
		    "name", tn, "allowed", allowed(v, tn), "as",
		    soul_tool_name_ok(full) ? full : NULL, "description",
		    json_object_get(t, "description")));
	}
	return json_pack("{s:s,s:b,s:s?,s:s?,s:o}", "server", v->name, "ok",
	    v->up, "protocol", v->version[0] ? v->version : NULL, "error",
	    v->why[0] ? v->why : NULL, "tools", tools);
}

/*
 * Stop every server of sv[0..n) that was started, all at once
 * (tool_end), whatever state it is in; the end of the standard error
 * of each one that failed goes to tell(arg, server, text) first.
 * Frees each.
 */
void
mcp_stop(struct mcp_server **sv, size_t n, void (*tell)(void *,
    const char *, const char *), void *arg)
{
	struct tool_child ch[MCP_SERVERMAX];
	struct mcp_server *v;
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (sv[i]->started)
			ch[k++] = sv[i]->ch;
	tool_end(ch, k, MCP_LINGER, NULL);
	guard(0);
	for (i = 0; i < n; i++) {
		v = sv[i];
		if (v->failed && v->tlen > 0 && tell != NULL) {
			v->tail[v->tlen < MCP_TAIL ? v->tlen : MCP_TAIL - 1] =
			    '\0';
			tell(arg, v->name, v->tail);
		}
		free(v->buf);
		json_decref(v->listed);
		free(v);
	}
}

/*
 * One message from a server, read as an answer to request id: returns
 * MCP_RESULT (*out: its result, an object), MCP_ERROR (*out: its
 * error), MCP_NOTE (a notification), MCP_REQUEST (the server's own
 * request, *out: the message) or MCP_STRAY (an answer to another id),
 * or -1 with err for what is not a JSON-RPC 2.0 message.  Pure.
 */
int
mcp_message(const char *buf, size_t len, long long id, json_t **out,
    char *err)
{
	json_error_t je;
	json_t *j, *jid, *v;
	int kind, show = len < 80 ? (int)len : 80;

	*out = NULL;
	if ((j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je)) ==
	    NULL) {
		errf(err, "sent a line that is not JSON (%.100s): %.*s",
		    je.text, show, buf);
		return -1;
	}
	jid = json_object_get(j, "id");
	if (!json_is_object(j) || !json_is_string(json_object_get(j,
	    "jsonrpc")) || strcmp(json_string_value(json_object_get(j,
	    "jsonrpc")), "2.0") != 0 || (jid != NULL && !json_is_integer(jid)
	    && !json_is_string(jid) && !json_is_null(jid))) {
		json_decref(j);
		errf(err, "sent JSON that is not a JSON-RPC 2.0 message: "
		    "%.*s", show, buf);
		return -1;
	}
	if (json_is_string(json_object_get(j, "method"))) {
		if (jid == NULL) {
			json_decref(j);
			return MCP_NOTE;
		}
		*out = j;
		return MCP_REQUEST;
	}
	if (!json_is_integer(jid) || json_integer_value(jid) != id) {
		kind = jid != NULL ? MCP_STRAY : -1;
		json_decref(j);
		if (kind == -1)
			errf(err, "sent a message with neither a method nor "
			    "an id: %.*s", show, buf);
		return kind;
	}
	if ((v = json_object_get(j, "error")) != NULL && json_is_object(v)) {
		kind = MCP_ERROR;
	} else if ((v = json_object_get(j, "result")) != NULL &&
	    json_is_object(v)) {
		kind = MCP_RESULT;
	} else {
		json_decref(j);
		errf(err, "answered with neither a result nor an error: "
		    "%.*s", show, buf);
		return -1;
	}
	*out = json_incref(v);
	json_decref(j);
	return kind;
}

/*
 * A tools/list result: its well-formed tools (a name and an
 * inputSchema object) appended to into; *cursor its nextCursor (in
 * res), or NULL.  -1 with err when it has no tools list.  Pure.
 */
int
mcp_tools(const json_t *res, json_t *into, const char **cursor, char *err)
{
	json_t *tools = json_object_get(res, "tools"), *t;
	size_t i;

	*cursor = json_string_value(json_object_get(res, "nextCursor"));
	if (!json_is_array(tools)) {
		errf(err, "a result with no tools list");
		return -1;
	}
	json_array_foreach(tools, i, t)
		if (json_is_string(json_object_get(t, "name")) &&
		    json_is_object(json_object_get(t, "inputSchema")))
			json_array_append(into, t);
	return 0;
}

/* One content block as text. */
static void
block(FILE *fp, const json_t *c)
{
	const char *type = json_string_value(json_object_get(c, "type"));
	const json_t *r = json_object_get(c, "resource");
	const char *mime = json_string_value(json_object_get(c, "mimeType"));

	if (type == NULL)
		type = "(untyped)";
	if (strcmp(type, "text") == 0 && json_is_string(json_object_get(c,
	    "text")))
		fwrite(json_string_value(json_object_get(c, "text")), 1,
		    json_string_length(json_object_get(c, "text")), fp);
	else if (strcmp(type, "resource") == 0 && json_is_string(
	    json_object_get(r, "text")))
		fwrite(json_string_value(json_object_get(r, "text")), 1,
		    json_string_length(json_object_get(r, "text")), fp);
	else if (strcmp(type, "resource_link") == 0 || strcmp(type,
	    "resource") == 0)
		fprintf(fp, "[%s: %.1000s]", type, json_string_value(
		    json_object_get(r ? r : c, "uri")) ? json_string_value(
		    json_object_get(r ? r : c, "uri")) : "(no uri)");
	else
		fprintf(fp, "[%.40s content%s%.100s, not shown]", type,
		    mime ? " " : "", mime ? mime : "");
}

/*
 * A tools/call result as text (*out, *len; to free): its content
 * blocks, text as is and others named, one a line; its structured
 * content as JSON when no block is text; at most TOOL_MAXOUT + 1
 * bytes (tool_text cuts and says so).  *iserror from isError.  -1 with
 * err when it has neither content nor structured content.  Pure.
 */
int
mcp_result(const json_t *res, char **out, size_t *len, int *iserror,
    char *err)
{
	const json_t *content = json_object_get(res, "content"), *c;
	const json_t *sc = json_object_get(res, "structuredContent");
	FILE *fp;
	size_t i;
	int text = 0;
	char *js;

	*out = NULL;
	*len = 0;
	*iserror = json_is_true(json_object_get(res, "isError"));
	if (!json_is_array(content) && !json_is_object(sc)) {
		errf(err, "a result with no content");
		return -1;
	}
	if ((fp = open_memstream(out, len)) == NULL)
		abort();
	json_array_foreach(content, i, c) {
		if (ftell(fp) > TOOL_MAXOUT)
			break;
		if (i > 0)
			fputc('\n', fp);
		block(fp, c);
		text |= json_is_string(json_object_get(c, "type")) &&
		    strcmp(json_string_value(json_object_get(c, "type")),
		    "text") == 0;
	}
	if (!text && json_is_object(sc) && ftell(fp) <= TOOL_MAXOUT) {
		js = json_dumps(sc, JSON_COMPACT);
		fprintf(fp, "%s%s", ftell(fp) > 0 ? "\n" : "", js);
		free(js);
	}
	fclose(fp);
	return 0;
}
