/*
 * mcp.c - tools from MCP servers, the soul's mcp_servers: a wake's
 * servers (each one mcpserver.c's), the allowed tools they list
 * offered as SERVER__NAME, a call of one routed to its server.
 *
 * Invariants: a server is started only by mcp_open, which run.c calls
 * once every gate has admitted the wake; mcp_close ends every server
 * started, whatever happened; a SIGTERM, SIGINT or SIGHUP that ends
 * heart-wake meanwhile, or its SIGKILL, stops their groups so too
 * (child.c).  What a server says is outside text: to messages through
 * errf, to the model through tool_text, its standard error to the
 * caller only when it failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

struct mcp {
	struct mcp_server *sv[MCP_SERVERMAX];
	const char *name[MCP_SERVERMAX];	/* each one's, the soul's */
	size_t	 n;
	json_t	*offer;		/* the allowed tools, OpenAI form */
	json_t	*warn;		/* strings */
};

static const json_t *
listed(const json_t *tools, const char *tool)
{
	json_t *t;
	size_t i;

	json_array_foreach(tools, i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")),
		    tool) == 0)
			return t;
	return NULL;
}

/* Of the tools the server sv (of conf) listed, the allowed ones
 * offered; a warning for one it lacks. */
static void
offer_tools(struct mcp *m, const char *sv, const json_t *conf,
    const json_t *tools)
{
	const json_t *t, *d;
	json_t *e, *x;
	char name[128], w[600];
	size_t i, j, n;

	json_array_foreach(json_object_get(conf, "tools"), i, e) {
		if ((t = listed(tools, json_string_value(e))) == NULL) {
			n = (size_t)snprintf(w, sizeof w, "mcp server %s has "
			    "no tool %.64s (it has:", sv,
			    json_string_value(e));
			json_array_foreach(tools, j, x)
				if (n < sizeof w)
					n += (size_t)snprintf(w + n, sizeof w -
					    n, " %.64s", json_string_value(
					    json_object_get(x, "name")));
			if (n < sizeof w)
				snprintf(w + n, sizeof w - n, ")");
			json_array_append_new(m->warn, json_string(w));
			continue;
		}
		snprintf(name, sizeof name, "%s%s%s", sv, MCP_SEP,
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
	struct mcp_server **v;
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
		m->name[m->n] = name;
		v = &m->sv[m->n++];
		if (mcp_start(s, c, name, conf, client, v, e2) == -1) {
			if (nfail++ == 0)
				snprintf(err, HEART_ERRLEN, "%s", e2);
			continue;
		}
		offer_tools(m, name, conf, mcp_listed(*v));
	}
	return nfail;
}

/* The allowed tools, OpenAI form; in *warn what opening found worth a
 * word (strings).  Both borrowed. */
const json_t *
mcp_offer(const struct mcp *m, const json_t **warn)
{
	*warn = m->warn;
	return m->offer;
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
		if (strlen(m->name[i]) == (size_t)(sep - name) &&
		    strncmp(m->name[i], name, (size_t)(sep - name)) == 0) {
			*tool = sep + strlen(MCP_SEP);
			return m->sv[i];
		}
	return NULL;
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
 * Run one call (OpenAI form) of an offered tool (SERVER__NAME).  1,
 * *text NULL, when the name is none of them: the call is tool_call's.
 * Else sets *text to what the model reads back.  0 when the tool
 * succeeded; -1 with err when it failed: arguments that are not an
 * object, a server that failed, an error, no answer within the
 * server's timeout, or a result the tool marks isError.
 */
int
mcp_call(struct mcp *m, const json_t *call, char **text, char *err)
{
	const char *name = json_string_value(json_object_get(
	    json_object_get(call, "function"), "name")), *tool = NULL;
	struct mcp_server *v = find(m, name, &tool);
	json_t *args;
	char e2[HEART_ERRLEN], *out = NULL;
	size_t len;
	int iserror;

	*text = NULL;
	if (v == NULL)
		return 1;
	if ((args = tool_args(call, err)) == NULL)
		;
	else if (mcp_tool_call(v, tool, args, &out, &len, &iserror, e2) == -1)
		errf(err, "%s: %s", name, e2);
	else {
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

/* --list-tools: each server, how it answered, and its tools. */
json_t *
mcp_list(const struct mcp *m)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < m->n; i++)
		json_array_append_new(arr, mcp_server_json(m->sv[i]));
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
	if (m == NULL)
		return;
	mcp_stop(m->sv, m->n, tell, arg);
	json_decref(m->offer);
	json_decref(m->warn);
	free(m);
}

