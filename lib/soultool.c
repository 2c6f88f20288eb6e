/*
 * soultool.c - a soul's tools: and mcp_servers:, lists whose items are
 * checked by their own code: the names the model APIs take, the
 * commands, the variables a server is given.
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"
#include "heartsoul.h"

#define MCP_NAMEMAX	32	/* a server's name */

/* A tool's name as the model APIs take it: 1 to 64 of A-Z a-z 0-9 _ - */
int
soul_tool_name_ok(const char *n)
{
	size_t i;

	for (i = 0; n[i] != '\0'; i++)
		if (i >= 64 || !strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", n[i]))
			return 0;
	return i > 0;
}

static int
load_tool(struct soul_loading *v, json_t *t, const char *path)
{
	json_t *n = json_object_get(t, "name");
	json_t *p = json_object_get(t, "parameters");
	long long to = 30;

	if (!json_is_string(n) || !soul_tool_name_ok(json_string_value(n)))
		return soul_bad(v, t, n ? "name" : "command", path, "a tool "
		    "needs a name of letters, digits, _ and - (at most 64)");
	if (!soul_strlist(json_object_get(t, "command"), 1))
		return soul_bad(v, t, json_object_get(t, "command") ?
		    "command" : "name", path, "a tool needs a command: a list "
		    "of strings, the program and its arguments");
	if (p != NULL && !json_is_object(p))
		return soul_bad(v, t, "parameters", path, "parameters must be "
		    "a JSON-schema object");
	if (json_object_get(t, "description") != NULL &&
	    !json_is_string(json_object_get(t, "description")))
		return soul_bad(v, t, "description", path, "must be a string");
	if (strcmp(json_string_value(n), "heartbeat") == 0 &&
	    v->s->ghost_mode != NULL && strcmp(v->s->ghost_mode, "tool") == 0)
		return soul_bad(v, t, "name", path, "heartbeat is heart's own "
		    "tool in ghost.mode tool; give this one another name");
	if (soul_dur(v, t, "timeout", path, &to) == -1)
		return -1;
	json_object_set_new(t, "timeout", json_integer(to));
	if (p == NULL)
		json_object_set_new(t, "parameters", json_pack("{s:s,s:{}}",
		    "type", "object", "properties"));
	soul_unknown_keys(v, t, M_TOOL, path);
	return 0;
}

static int
load_tools(struct soul_loading *v, const json_t *root)
{
	json_t *tools, *t;
	char path[64];
	size_t i;
	int lc[2];

	if ((tools = json_object_get(root, "tools")) == NULL ||
	    json_is_null(tools))
		return 0;
	if (!json_is_array(tools))
		return soul_bad(v, root, "tools", "tools", "must be a list");
	json_array_foreach(tools, i, t) {
		snprintf(path, sizeof path, "tools[%zu]", i);
		if (!json_is_object(t)) {
			yj_where(v->y, tools, NULL, i, 0, lc);
			errf(v->err, "%s:%d:%d: %s: must be a mapping",
			    v->file, lc[0], lc[1], path);
			return -1;
		}
		if (load_tool(v, t, path) == -1)
			return -1;
	}
	v->s->tools = json_incref(tools);
	return 0;
}

/* a variable's name, as pass_env and env give them */
static int
var_name_ok(const char *n)
{
	size_t i;

	for (i = 0; n[i] != '\0'; i++)
		if (!(n[i] == '_' || (n[i] >= 'A' && n[i] <= 'Z') ||
		    (n[i] >= 'a' && n[i] <= 'z') || (i > 0 && n[i] >= '0' &&
		    n[i] <= '9')))
			return 0;
	return i > 0;
}

/* A server's name: a tool's name it prefixes with MCP_SEP must stay a
 * name the model APIs take, and split at its first MCP_SEP. */
static int
server_name_ok(const char *n)
{
	return soul_tool_name_ok(n) && strlen(n) <= MCP_NAMEMAX &&
	    strstr(n, MCP_SEP) == NULL && n[strlen(n) - 1] != '_';
}

/* pass_env: a list of variable names; env: a mapping name -> string */
static int
load_server_env(struct soul_loading *v, json_t *m, const char *path)
{
	json_t *pe = json_object_get(m, "pass_env"), *env, *e;
	const char *key;
	char p[160];
	size_t i;

	if (pe != NULL && !json_is_null(pe) && !soul_strlist(pe, 0))
		return soul_bad(v, m, "pass_env", path, "must be a list of "
		    "variable names");
	json_array_foreach(pe, i, e)
		if (!var_name_ok(json_string_value(e)))
			return soul_bad(v, m, "pass_env", path, "must be a "
			    "list of variable names (letters, digits and _), "
			    "never their values");
	snprintf(p, sizeof p, "%.100s.env", path);
	if (soul_need_map(v, m, "env", p, &env) == -1)
		return -1;
	json_object_foreach(env, key, e)
		if (!var_name_ok(key) || !json_is_string(e))
			return soul_bad(v, env, key, p, "must map variable "
			    "names to strings (quote numbers; a secret goes "
			    "in pass_env, by name)");
	if (pe == NULL || json_is_null(pe))
		json_object_set_new(m, "pass_env", json_array());
	if (env == NULL)
		json_object_set_new(m, "env", json_object());
	return 0;
}

/* tools: the allowlist; each NAME becomes SERVER__NAME for the model */
static int
load_server_tools(struct soul_loading *v, json_t *m, const char *name,
    const char *path)
{
	json_t *t = json_object_get(m, "tools"), *e;
	char full[128];
	size_t i;

	if (t == NULL || json_is_null(t)) {
		soul_add_warning(v, m, "command", "%s: no tools listed: "
		    "none is offered and the server is never started (list "
		    "them in tools:; heart-wake --list-tools shows them)%s",
		    path, "");
		json_object_set_new(m, "tools", json_array());
		return 0;
	}
	if (!soul_strlist(t, 0))
		return soul_bad(v, m, "tools", path, "must be a list of the "
		    "server's tool names");
	json_array_foreach(t, i, e) {
		snprintf(full, sizeof full, "%s%s%s", name, MCP_SEP,
		    json_string_value(e));
		if (!soul_tool_name_ok(json_string_value(e)) ||
		    !soul_tool_name_ok(full))
			return soul_bad(v, m, "tools", path, "a tool offered "
			    "is named SERVER__TOOL: letters, digits, _ and -, "
			    "at most 64 in all");
	}
	return 0;
}

static int
load_server(struct soul_loading *v, const char *name, json_t *m,
    const char *path)
{
	json_t *type = json_object_get(m, "type");
	long long to = 30;

	if (type != NULL && !(json_is_string(type) &&
	    strcmp(json_string_value(type), "stdio") == 0))
		return soul_bad(v, m, "type", path, "only stdio servers are "
		    "supported: a command heart-wake starts");
	if (json_object_get(m, "url") != NULL)
		return soul_bad_at(v, m, "url", path, "only stdio servers are "
		    "supported: give a command, not a url", 1);
	if (!json_is_string(json_object_get(m, "command")) ||
	    *json_string_value(json_object_get(m, "command")) == '\0')
		return soul_bad(v, m, json_object_get(m, "command") ?
		    "command" : "tools", path, "a server needs a command: the "
		    "program to start (its arguments in args)");
	if (json_object_get(m, "args") != NULL &&
	    !soul_strlist(json_object_get(m, "args"), 0))
		return soul_bad(v, m, "args", path, "must be a list of "
		    "strings");
	if (json_object_get(m, "args") == NULL)
		json_object_set_new(m, "args", json_array());
	if (load_server_env(v, m, path) == -1 ||
	    load_server_tools(v, m, name, path) == -1 ||
	    soul_dur(v, m, "timeout", path, &to) == -1)
		return -1;
	json_object_set_new(m, "timeout", json_integer(to));
	soul_unknown_keys(v, m, M_SERVER, path);
	return 0;
}

/*
 * mcp_servers: name -> server, as the common mcpServers files write
 * them (command, args, env), and heart's own keys (tools, timeout,
 * pass_env); a soul tool must not take a name a server's tools take.
 */
static int
load_mcp(struct soul_loading *v, const json_t *root)
{
	json_t *m, *srv, *t;
	const char *name, *tn;
	char path[160];
	size_t i;

	if (soul_need_map(v, root, "mcp_servers", "mcp_servers", &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (json_object_size(m) > MCP_SERVERMAX)
		return soul_bad(v, root, "mcp_servers", "mcp_servers", "at "
		    "most 16 servers");
	json_object_foreach(m, name, srv) {
		snprintf(path, sizeof path, "mcp_servers.%.64s", name);
		if (!server_name_ok(name))
			return soul_bad_at(v, m, name, path, "a server's name "
			    "is letters, digits, - and _ (not __, not ending "
			    "in _), at most 32", 1);
		if (!json_is_object(srv))
			return soul_bad(v, m, name, path, "must be a mapping");
		if (load_server(v, name, srv, path) == -1)
			return -1;
		json_array_foreach(v->s->tools, i, t) {
			tn = json_string_value(json_object_get(t, "name"));
			if (strncmp(tn, name, strlen(name)) == 0 &&
			    strncmp(tn + strlen(name), MCP_SEP,
			    strlen(MCP_SEP)) == 0)
				return soul_bad_at(v, m, name, path, "the "
				    "soul's tool names NAME__... are this "
				    "server's: rename the tool or the server",
				    1);
		}
	}
	v->s->mcp = json_incref(m);
	return 0;
}

/* A soul's tools:, then its mcp_servers:, whose tools' names the
 * soul's tools must not take. */
int
soul_load_tools(struct soul_loading *v, const json_t *root)
{
	return load_tools(v, root) == -1 ? -1 : load_mcp(v, root);
}
