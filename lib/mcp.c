/*
 * mcp.c - tools from MCP servers, the soul's mcp_servers: the stdio
 * transport of the Model Context Protocol, specification 2025-06-18
 * (and the older versions a server may answer with, as MCP_VERSIONS
 * lists them): newline-delimited JSON-RPC 2.0 on a server's standard
 * input and output; initialize, notifications/initialized, tools/list
 * page by page, tools/call, notifications/cancelled at a timeout.
 *
 * Invariants: a server is started only by mcp_open, which run.c calls
 * once every gate has admitted the wake, through mcpstdio.c, the
 * transport: the server's process and its messages; mcp_close ends
 * every server started, whatever happened; a SIGTERM, SIGINT or
 * SIGHUP that ends heart-wake meanwhile, or its SIGKILL, stops their
 * groups so too (child.c).
 * Every read is bounded: a message (MCP_LINEMAX), what is read while
 * waiting for one answer (MCP_READMAX) (mcpstdio.c), the server's
 * timeout, the tools listed (MCP_TOOLMAX) and their pages
 * (MCP_PAGEMAX).  What a server
 * says is outside text: to messages through errf, to the model through
 * tool_text, its standard error to the caller only when it failed.
 */
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

#define MCP_TOOLMAX	1024		/* tools a server lists */
#define MCP_PAGEMAX	64		/* pages of tools/list */

/* the protocol versions heart speaks, the one it asks for first */
static const char *const versions[] = { "2025-06-18", "2025-03-26",
    "2024-11-05", NULL };

struct mcp {
	struct mcp_server sv[MCP_SERVERMAX];
	size_t	 n;
	json_t	*offer;		/* the allowed tools, OpenAI form */
	json_t	*warn;		/* strings */
	int	 guarded;	/* mcp_guard(1) is in force */
};

/* A request of the server's own, answered: ping, else "no method". */
static int
answer_request(struct mcp_server *v, json_t *req, long long deadline,
    char *err)
{
	const char *method = json_string_value(json_object_get(req,
	    "method"));
	json_t *id = json_object_get(req, "id");

	if (method != NULL && strcmp(method, "ping") == 0)
		return mcp_send(v, json_pack("{s:s,s:O,s:{}}", "jsonrpc",
		    "2.0", "id", id, "result"), deadline, err);
	return mcp_send(v, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc",
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
	if (mcp_send(v, json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0",
	    "id", (json_int_t)id, "method", method, "params", params),
	    deadline, err) == -1)
		return -1;
	for (;;) {
		if ((r = mcp_recv(v, deadline, &total, &line, err)) == -1)
			return -1;
		if (r == 0)
			break;
		kind = mcp_message(line, strlen(line), id, &msg, e2);
		if (kind == -1)
			return mcp_fail(v, 1, err, "%s", e2);
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
		mcp_send(v, json_pack("{s:s,s:s,s:{s:I,s:s}}", "jsonrpc",
		    "2.0", "method", "notifications/cancelled", "params",
		    "requestId", (json_int_t)id, "reason", "timeout"),
		    mono_ms() + 1000, e2);
	return mcp_fail(v, strcmp(method, "initialize") == 0, err, "no answer "
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
		mcp_fail(v, 1, err, "speaks protocol version %.40s; "
		    "heart-wake speaks 2025-06-18, 2025-03-26 and 2024-11-05",
		    ver ? ver : "(none given)");
		json_decref(res);
		return -1;
	}
	snprintf(v->version, sizeof v->version, "%s", ver);
	if (!json_is_object(json_object_get(json_object_get(res,
	    "capabilities"), "tools"))) {
		json_decref(res);
		return mcp_fail(v, 1, err, "offers no tools (its capabilities "
		    "have none)");
	}
	json_decref(res);
	return mcp_send(v, json_pack("{s:s,s:s}", "jsonrpc", "2.0",
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
			return mcp_fail(v, 1, err, "tools/list: %s", e2);
		}
		if (json_array_size(v->listed) > MCP_TOOLMAX) {
			json_decref(res);
			return mcp_fail(v, 1, err, "lists more than %d tools",
			    MCP_TOOLMAX);
		}
		if (cursor == NULL || strlen(cursor) >= sizeof last ||
		    strcmp(cursor, last) == 0) {
			int bad = cursor != NULL;
			json_decref(res);
			if (bad)
				return mcp_fail(v, 1, err, "tools/list: a "
				    "next cursor too long, or the same again");
			return 0;
		}
		snprintf(last, sizeof last, "%s", cursor);
		json_decref(res);
	}
	return mcp_fail(v, 1, err, "lists its tools in more than %d pages",
	    MCP_PAGEMAX);
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

static const json_t *
listed(const struct mcp_server *v, const char *tool)
{
	json_t *t;
	size_t i;

	json_array_foreach(v->listed, i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")),
		    tool) == 0)
			return t;
	return NULL;
}

/* The allowed tools it listed, offered; a warning for one it lacks. */
static void
offer_tools(struct mcp *m, struct mcp_server *v)
{
	const json_t *t, *d;
	json_t *e;
	char name[128], w[600];
	size_t i, n;

	json_array_foreach(json_object_get(v->conf, "tools"), i, e) {
		if ((t = listed(v, json_string_value(e))) == NULL) {
			n = (size_t)snprintf(w, sizeof w, "mcp server %s has "
			    "no tool %.64s (it has:", v->name,
			    json_string_value(e));
			json_array_foreach(v->listed, i, e)
				if (n < sizeof w)
					n += (size_t)snprintf(w + n, sizeof w -
					    n, " %.64s", json_string_value(
					    json_object_get(e, "name")));
			if (n < sizeof w)
				snprintf(w + n, sizeof w - n, ")");
			json_array_append_new(m->warn, json_string(w));
			continue;
		}
		snprintf(name, sizeof name, "%s%s%s", v->name, MCP_SEP,
		    json_string_value(e));
		d = json_object_get(t, "description");
		json_array_append_new(m->offer, json_pack("{s:s,s:{s:s,s:s,"
		    "s:O}}", "type", "function", "function", "name", name,
		    "description", json_is_string(d) ? json_string_value(d) :
		    "", "parameters", json_object_get(t, "inputSchema")));
	}
}

/*
 * Start the soul's servers that have a tool allowed (all of them with
 * all, for --list-tools), initialize each and list its tools.  *out is
 * always set (free it with mcp_close); returns how many servers
 * failed, the first one's message in err.
 */
int
mcp_open(const struct soul *s, const struct tool_ctx *c,
    const char *client, int all, struct mcp **out, char *err)
{
	struct mcp *m = xcalloc(1, sizeof *m);
	struct mcp_server *v;
	const char *name;
	json_t *conf;
	char e2[HEART_ERRLEN];
	int nfail = 0;

	m->offer = json_array();
	m->warn = json_array();
	*out = m;
	json_object_foreach(s->mcp, name, conf) {
		if (m->n == MCP_SERVERMAX || (!all && json_array_size(
		    json_object_get(conf, "tools")) == 0))
			continue;
		v = &m->sv[m->n++];
		v->name = name;
		v->conf = conf;
		v->timeout = json_integer_value(json_object_get(conf,
		    "timeout"));
		if (!m->guarded) {
			m->guarded = 1;
			mcp_guard(1);
		}
		if (mcp_start(v, s, c, e2) == -1 || initialize(v, client,
		    e2) == -1 || list_tools(v, e2) == -1) {
			if (nfail++ == 0)
				snprintf(err, HEART_ERRLEN, "%s", e2);
			continue;
		}
		v->up = 1;
		offer_tools(m, v);
	}
	return nfail;
}

/* The allowed tools, OpenAI form (borrowed). */
const json_t *
mcp_offer(const struct mcp *m)
{
	return m->offer;
}

/* What opening found worth a word (borrowed: strings). */
const json_t *
mcp_warnings(const struct mcp *m)
{
	return m->warn;
}

/* The server of an offered name, and the tool's own name in it. */
static struct mcp_server *
find(struct mcp *m, const char *name, const char **tool)
{
	const char *sep;
	json_t *t;
	size_t i;

	if (m == NULL || name == NULL || (sep = strstr(name, MCP_SEP)) ==
	    NULL)
		return NULL;
	json_array_foreach(m->offer, i, t)
		if (strcmp(json_string_value(json_object_get(json_object_get(
		    t, "function"), "name")), name) == 0)
			break;
	if (i == json_array_size(m->offer))
		return NULL;
	for (i = 0; i < m->n; i++)
		if (strlen(m->sv[i].name) == (size_t)(sep - name) &&
		    strncmp(m->sv[i].name, name, (size_t)(sep - name)) == 0) {
			*tool = sep + strlen(MCP_SEP);
			return &m->sv[i];
		}
	return NULL;
}

/* Is name (SERVER__NAME) a tool offered?  The calls it owns go to
 * mcp_call, as tool_call's do. */
int
mcp_has(struct mcp *m, const char *name)
{
	const char *tool;

	return find(m, name, &tool) != NULL;
}

static char *
error_text(const char *msg, const char *more, size_t len)
{
	char *head = NULL, *text;

	if (asprintf(&head, "error: %s", msg) == -1)
		abort();
	text = tool_text(head, more ? more : "", more ? len : 0, 0);
	free(head);
	return text;
}

/*
 * Run one call (OpenAI form) of an offered tool.  Always sets *text to
 * what the model reads back.  0 when the tool succeeded; -1 with err
 * when it failed: arguments that are not an object, a server that
 * failed, an error, no answer within the server's timeout, or a result
 * the tool marks isError.
 */
int
mcp_call(struct mcp *m, const json_t *call, char **text, char *err)
{
	const char *name = json_string_value(json_object_get(
	    json_object_get(call, "function"), "name")), *tool = NULL;
	struct mcp_server *v = find(m, name, &tool);
	json_t *args, *res;
	char e2[HEART_ERRLEN], *out = NULL;
	size_t len;
	int iserror;

	*text = NULL;
	if (v == NULL)
		errf(err, "%.64s: no such tool", name ? name : "(no name)");
	else if ((args = tool_args(call, err)) == NULL)
		;
	else if (request(v, "tools/call", json_pack("{s:s,s:o}", "name",
	    tool, "arguments", args), &res, e2) == -1)
		errf(err, "%s: %s", name, e2);
	else if (mcp_result(res, &out, &len, &iserror, e2) == -1) {
		json_decref(res);
		v->failed = 1;
		errf(err, "%s: mcp server %s: tools/call: %s", name, v->name,
		    e2);
	} else {
		json_decref(res);
		if (!iserror) {
			*text = tool_text(NULL, out, len, 0);
			free(out);
			return 0;
		}
		snprintf(e2, sizeof e2, "%s: the tool reports an error", name);
		*text = error_text(e2, out, len);
		errf(err, "%s: %.*s", e2, (int)strcspn(out, "\n") < 200 ?
		    (int)strcspn(out, "\n") : 200, out);
		free(out);
		return -1;
	}
	*text = error_text(err, NULL, 0);
	free(out);
	return -1;
}

/* A server's tools for --list-tools: allowed or not, and as what. */
static json_t *
list_server(const struct mcp_server *v)
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

/* --list-tools: each server, how it answered, and its tools. */
json_t *
mcp_list(const struct mcp *m)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < m->n; i++)
		json_array_append_new(arr, list_server(&m->sv[i]));
	return arr;
}

/*
 * --explain and --dry-run: the servers a wake would start, and the
 * names their tools would be offered as; nothing is started.
 */
json_t *
mcp_plan(const struct soul *s)
{
	json_t *arr = json_array(), *conf, *tools, *e;
	const char *name;
	char full[128];
	size_t i;

	json_object_foreach(s->mcp, name, conf) {
		tools = json_array();
		json_array_foreach(json_object_get(conf, "tools"), i, e) {
			snprintf(full, sizeof full, "%s%s%s", name, MCP_SEP,
			    json_string_value(e));
			json_array_append_new(tools, json_string(full));
		}
		json_array_append_new(arr, json_pack("{s:s,s:O,s:O,s:o,s:b}",
		    "server", name, "command", json_object_get(conf,
		    "command"), "args", json_object_get(conf, "args"),
		    "tools", tools, "started", 0));
	}
	return arr;
}

/*
 * End every server started (tool_end), whatever state it is in; the
 * end of the standard error of each one that failed goes to
 * tell(arg, server, text) first.  Frees m.
 */
void
mcp_close(struct mcp *m, void (*tell)(void *, const char *, const char *),
    void *arg)
{
	size_t i;

	if (m == NULL)
		return;
	mcp_stop(m->sv, m->n);
	if (m->guarded)
		mcp_guard(0);
	for (i = 0; i < m->n; i++) {
		if (m->sv[i].failed && m->sv[i].tlen > 0 && tell != NULL) {
			m->sv[i].tail[m->sv[i].tlen < MCP_TAIL ?
			    m->sv[i].tlen : MCP_TAIL - 1] = '\0';
			tell(arg, m->sv[i].name, m->sv[i].tail);
		}
		free(m->sv[i].buf);
		json_decref(m->sv[i].listed);
	}
	json_decref(m->offer);
	json_decref(m->warn);
	free(m);
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
