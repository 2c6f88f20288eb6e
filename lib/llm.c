/*
 * llm.c - the model endpoint: configuration (soul's llm: block, then
 * the environment), the request, and its reply, behind a small
 * provider table: openai (Chat Completions, and every compatible
 * server), anthropic (Messages) and command (a local program that
 * reads an OpenAI-form request on stdin and writes an OpenAI-form
 * reply on stdout).  Messages and tool calls are kept in OpenAI Chat
 * Completions form inside heart; a provider translates at the edge.
 * The API key is read from the environment when the request is built
 * and lives only in memory: never in argv, output, state or an error
 * message.  libcurl is loaded only by the HTTP providers' send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"

#define LLM_MAXREPLY	(4 * 1024 * 1024)

struct provider {
	const char *name;
	const char *url;	/* default base URL; NULL: not HTTP */
	const char *path;	/* appended to the base URL */
	const char *key_env;	/* default key variable */
	json_t	*(*body)(const struct llm_conf *, json_t *, json_t *,
		    const char *);
	void	 (*headers)(const char *, char [][512], size_t *);
	int	 (*parse)(json_t *, struct llm_reply *, char *);
};

static json_t *
openai_body(const struct llm_conf *c, json_t *messages, json_t *tools,
    const char *force)
{
	json_t *b;

	b = json_pack("{s:O,s:I}", "messages", messages, "max_tokens",
	    (json_int_t)c->max_tokens);
	if (c->model[0] != '\0')
		json_object_set_new(b, "model", json_string(c->model));
	if (tools != NULL && json_array_size(tools) > 0)
		json_object_set(b, "tools", tools);
	if (force != NULL)
		json_object_set_new(b, "tool_choice", json_pack(
		    "{s:s,s:{s:s}}", "type", "function", "function", "name",
		    force));
	return b;
}

static void
openai_headers(const char *key, char h[][512], size_t *n)
{
	if (key != NULL && *key != '\0')
		snprintf(h[(*n)++], 512, "Authorization: Bearer %s", key);
}

static const char *
content_text(json_t *content)
{
	json_t *part;
	size_t i;

	if (json_is_string(content))
		return json_string_value(content);
	json_array_foreach(content, i, part)
		if (json_is_string(json_object_get(part, "text")))
			return json_string_value(json_object_get(part,
			    "text"));
	return NULL;
}

static int
openai_parse(json_t *j, struct llm_reply *r, char *err)
{
	json_t *msg, *usage, *calls;
	const char *text;

	msg = json_object_get(json_array_get(json_object_get(j, "choices"),
	    0), "message");
	if (!json_is_object(msg)) {
		errf(err, "unreadable reply: no choices[0].message");
		return -1;
	}
	text = content_text(json_object_get(msg, "content"));
	calls = json_object_get(msg, "tool_calls");
	if (text == NULL && !json_is_array(calls)) {
		errf(err, "unreadable reply: message has no content");
		return -1;
	}
	r->text = xstrdup(text ? text : "");
	if (json_is_array(calls) && json_array_size(calls) > 0)
		r->tool_calls = json_incref(calls);
	usage = json_object_get(j, "usage");
	r->prompt_tokens = json_integer_value(json_object_get(usage,
	    "prompt_tokens"));
	r->completion_tokens = json_integer_value(json_object_get(usage,
	    "completion_tokens"));
	return 0;
}


/*
 * Anthropic Messages.  The system messages become the system field;
 * an assistant's tool_calls become tool_use blocks; role "tool"
 * results become tool_result blocks of a user message; messages of the
 * same role in a row are merged (the API wants turns to alternate and
 * the first to be the user's).
 */
static json_t *
anth_blocks(json_t *m, const char **role)
{
	const char *r = json_string_value(json_object_get(m, "role"));
	const char *text = content_text(json_object_get(m, "content"));
	json_t *blocks = json_array(), *call, *fn, *in;
	size_t i;

	*role = r != NULL && strcmp(r, "assistant") == 0 ? "assistant" :
	    "user";
	if (r != NULL && strcmp(r, "tool") == 0) {
		json_array_append_new(blocks, json_pack("{s:s,s:s,s:s}",
		    "type", "tool_result", "tool_use_id",
		    json_string_value(json_object_get(m, "tool_call_id")) ?
		    json_string_value(json_object_get(m, "tool_call_id")) :
		    "", "content", text ? text : ""));
		return blocks;
	}
	if (text != NULL && *text != '\0')
		json_array_append_new(blocks, json_pack("{s:s,s:s}", "type",
		    "text", "text", text));
	json_array_foreach(json_object_get(m, "tool_calls"), i, call) {
		fn = json_object_get(call, "function");
		in = json_loads(json_string_value(json_object_get(fn,
		    "arguments")) ? json_string_value(json_object_get(fn,
		    "arguments")) : "", 0, NULL);
		if (!json_is_object(in)) {
			json_decref(in);
			in = json_object();
		}
		json_array_append_new(blocks, json_pack("{s:s,s:O,s:O,s:o}",
		    "type", "tool_use", "id", json_object_get(call, "id"),
		    "name", json_object_get(fn, "name"), "input", in));
	}
	return blocks;
}

static json_t *
anth_messages(json_t *messages, char **system)
{
	json_t *out = json_array(), *m, *blocks, *last;
	const char *role, *r, *text;
	size_t i, n = 0;
	FILE *fp = open_memstream(system, &n);

	if (fp == NULL)
		abort();
	json_array_foreach(messages, i, m) {
		r = json_string_value(json_object_get(m, "role"));
		if (r != NULL && strcmp(r, "system") == 0) {
			text = content_text(json_object_get(m, "content"));
			fprintf(fp, "%s%s", ftell(fp) > 0 ? "\n\n" : "",
			    text ? text : "");
			continue;
		}
		blocks = anth_blocks(m, &role);
		if (json_array_size(blocks) == 0) {
			json_decref(blocks);
			continue;
		}
		if (json_array_size(out) == 0 && strcmp(role, "user") != 0)
			json_array_append_new(out, json_pack("{s:s,s:[{s:s,"
			    "s:s}]}", "role", "user", "content", "type",
			    "text", "text", "(The conversation so far.)"));
		last = json_array_get(out, json_array_size(out) - 1);
		if (last != NULL && strcmp(json_string_value(json_object_get(
		    last, "role")), role) == 0)
			json_array_extend(json_object_get(last, "content"),
			    blocks);
		else
			json_array_append_new(out, json_pack("{s:s,s:O}",
			    "role", role, "content", blocks));
		json_decref(blocks);
	}
	fclose(fp);
	return out;
}

static json_t *
anthropic_body(const struct llm_conf *c, json_t *messages, json_t *tools,
    const char *force)
{
	json_t *b, *arr, *t, *fn;
	char *system = NULL;
	size_t i;

	b = json_pack("{s:s,s:I,s:o}", "model", c->model, "max_tokens",
	    (json_int_t)c->max_tokens, "messages", anth_messages(messages,
	    &system));
	if (system != NULL && *system != '\0')
		json_object_set_new(b, "system", json_string(system));
	free(system);
	if (tools != NULL && json_array_size(tools) > 0) {
		arr = json_array();
		json_array_foreach(tools, i, t) {
			fn = json_object_get(t, "function");
			json_array_append_new(arr, json_pack("{s:O,s:O,s:O}",
			    "name", json_object_get(fn, "name"),
			    "description", json_object_get(fn, "description"),
			    "input_schema", json_object_get(fn,
			    "parameters")));
		}
		json_object_set_new(b, "tools", arr);
	}
	if (force != NULL)
		json_object_set_new(b, "tool_choice", json_pack("{s:s,s:s}",
		    "type", "tool", "name", force));
	return b;
}

static void
anthropic_headers(const char *key, char h[][512], size_t *n)
{
	snprintf(h[(*n)++], 512, "anthropic-version: 2023-06-01");
	if (key != NULL && *key != '\0')
		snprintf(h[(*n)++], 512, "x-api-key: %s", key);
}

static long long
tokens(json_t *usage, const char *key)
{
	return json_integer_value(json_object_get(usage, key));
}

/* A tool_use block as an OpenAI tool call. */
static json_t *
anth_call(json_t *b)
{
	json_t *in = json_object_get(b, "input"), *call;
	char *args = in ? json_dumps(in, JSON_COMPACT | JSON_ENCODE_ANY) :
	    NULL;

	call = json_pack("{s:O?,s:s,s:{s:O?,s:s}}", "id", json_object_get(b,
	    "id"), "type", "function", "function", "name",
	    json_object_get(b, "name"), "arguments", args ? args : "{}");
	free(args);
	return call;
}

static int
anthropic_parse(json_t *j, struct llm_reply *r, char *err)
{
	json_t *content = json_object_get(j, "content"), *b, *calls, *usage;
	const char *type, *text;
	char *out = NULL;
	size_t i, n = 0;
	FILE *fp;

	if (!json_is_array(content)) {
		errf(err, "unreadable reply: no content");
		return -1;
	}
	if ((fp = open_memstream(&out, &n)) == NULL)
		abort();
	calls = json_array();
	json_array_foreach(content, i, b) {
		type = json_string_value(json_object_get(b, "type"));
		text = json_string_value(json_object_get(b, "text"));
		if (type != NULL && strcmp(type, "text") == 0 && text)
			fprintf(fp, "%s%s", ftell(fp) > 0 ? "\n" : "", text);
		else if (type != NULL && strcmp(type, "tool_use") == 0)
			json_array_append_new(calls, anth_call(b));
	}
	fclose(fp);
	r->text = out;
	usage = json_object_get(j, "usage");
	r->prompt_tokens = tokens(usage, "input_tokens") + tokens(usage,
	    "cache_creation_input_tokens") + tokens(usage,
	    "cache_read_input_tokens");
	r->completion_tokens = tokens(usage, "output_tokens");
	if (json_array_size(calls) > 0)
		r->tool_calls = calls;
	else
		json_decref(calls);
	return 0;
}

static const struct provider providers[] = {
	{ "openai", "https://api.openai.com/v1", "/chat/completions",
	    "OPENAI_API_KEY", openai_body, openai_headers, openai_parse },
	{ "anthropic", "https://api.anthropic.com/v1", "/messages",
	    "ANTHROPIC_API_KEY", anthropic_body, anthropic_headers,
	    anthropic_parse },
	{ "command", NULL, NULL, "", openai_body, NULL, openai_parse },
};

static const struct provider *
provider_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof providers / sizeof providers[0]; i++)
		if (strcmp(providers[i].name, name) == 0)
			return &providers[i];
	return NULL;
}

static const char *
pick(const char *soul, const char *env, const char *def)
{
	const char *e = env ? getenv(env) : NULL;

	if (soul != NULL)
		return soul;
	if (e != NULL && *e != '\0')
		return e;
	return def;
}

/* The command provider: a program from the soul, no model or URL. */
static int
command_conf(const struct soul *s, struct llm_conf *c, char *err)
{
	if (s->llm_command == NULL) {
		errf(err, "%s: llm provider command needs llm.command: the "
		    "program and its arguments, as a list", s->path);
		return -1;
	}
	c->command = s->llm_command;
	c->base_url[0] = '\0';
	soul_dir(s, c->dir, sizeof c->dir);
	return 0;
}

/* Fill c from the soul's llm: block, then HEART_LLM_*, then defaults. */
int
llm_conf(const struct soul *s, struct llm_conf *c, char *err)
{
	const struct provider *p;
	const char *prov;

	memset(c, 0, sizeof *c);
	prov = pick(s->llm_provider, "HEART_LLM_PROVIDER", "openai");
	if ((p = provider_find(prov)) == NULL) {
		errf(err, "%s: llm provider '%.32s' is not supported by "
		    "this heart-wake (openai, anthropic, command)", s->path,
		    prov);
		return -1;
	}
	snprintf(c->provider, sizeof c->provider, "%s", p->name);
	snprintf(c->model, sizeof c->model, "%s",
	    pick(s->llm_model, "HEART_LLM_MODEL", ""));
	snprintf(c->key_env, sizeof c->key_env, "%s",
	    pick(s->llm_api_key_env, NULL, p->key_env));
	c->timeout = s->llm_timeout;
	c->max_tokens = s->llm_max_tokens;
	if (p->url == NULL)
		return command_conf(s, c, err);
	snprintf(c->base_url, sizeof c->base_url, "%s",
	    pick(s->llm_base_url, "HEART_LLM_URL", p->url));
	if (c->model[0] == '\0') {
		errf(err, "%s: no model: set llm.model in the soul or "
		    "HEART_LLM_MODEL", s->path);
		return -1;
	}
	if (strncmp(c->base_url, "http://", 7) != 0 &&
	    strncmp(c->base_url, "https://", 8) != 0) {
		errf(err, "%s: llm base_url must start with http:// or "
		    "https://", s->path);
		return -1;
	}
	return 0;
}

/*
 * The request body for messages and the tools offered (both in OpenAI
 * form; tools may be NULL), in the provider's form.  force names a
 * tool the model must call in this reply, or is NULL.
 */
json_t *
llm_body(const struct llm_conf *c, json_t *messages, json_t *tools,
    const char *force)
{
	return provider_find(c->provider)->body(c, messages, tools, force);
}

/* The full request, key redacted, for --dry-run. */
json_t *
llm_dry(const struct llm_conf *c, json_t *body)
{
	const struct provider *p = provider_find(c->provider);
	char h[8][512], url[1100];
	const char *key = getenv(c->key_env);
	json_t *hs;
	size_t n = 0, i;

	if (c->command != NULL)
		return json_pack("{s:O,s:s,s:O}", "command", c->command,
		    "directory", c->dir, "stdin", body);
	p->headers(key ? "[redacted]" : NULL, h, &n);
	hs = json_array();
	json_array_append_new(hs, json_string("Content-Type: "
	    "application/json"));
	for (i = 0; i < n; i++)
		json_array_append_new(hs, json_string(h[i]));
	snprintf(url, sizeof url, "%s%s", c->base_url, p->path);
	return json_pack("{s:s,s:s,s:o,s:O}", "method", "POST", "url", url,
	    "headers", hs, "body", body);
}

/* The provider's error message from an error body, if it has one. */
static void
http_err(long status, const char *body, char *err)
{
	json_t *j = json_loads(body, 0, NULL), *e;
	const char *m = NULL;

	e = json_object_get(j, "error");
	if (json_is_string(e))
		m = json_string_value(e);
	else if (json_is_string(json_object_get(e, "message")))
		m = json_string_value(json_object_get(e, "message"));
	errf(err, "model endpoint answered HTTP %ld%s%.200s", status,
	    m ? ": " : "", m ? m : "");
	json_decref(j);
}

static int
parse_reply(const struct provider *p, const char *buf, size_t len,
    struct llm_reply *r, char *err)
{
	json_error_t je;
	json_t *j;
	int rc;

	if ((j = json_loadb(buf, len, 0, &je)) == NULL) {
		errf(err, "unreadable reply: not JSON: %s", je.text);
		return -1;
	}
	rc = p->parse(j, r, err);
	json_decref(j);
	return rc;
}

/*
 * Read a reply body of the named provider into r (free it with
 * llm_reply_free), as llm_send does with what the model answered.
 */
int
llm_parse(const char *provider, const char *buf, size_t len,
    struct llm_reply *r, char *err)
{
	const struct provider *p = provider_find(provider);

	memset(r, 0, sizeof *r);
	if (p == NULL) {
		errf(err, "unknown provider \"%.40s\"", provider);
		return -1;
	}
	return parse_reply(p, buf, len, r, err);
}

static int
http_send(const struct llm_conf *c, const struct provider *p,
    const char *body, struct llm_reply *r, char *err)
{
	char h[8][512], url[1100];
	const char *hv[10];
	struct http_req rq;
	struct http_resp rs;
	size_t n = 0, i;
	int rc = -1;

	p->headers(getenv(c->key_env), h, &n);
	hv[0] = "Content-Type: application/json";
	for (i = 0; i < n; i++)
		hv[i + 1] = h[i];
	hv[n + 1] = NULL;
	snprintf(url, sizeof url, "%s%s", c->base_url, p->path);
	rq.url = url;
	rq.headers = hv;
	rq.body = body;
	rq.timeout = (long)c->timeout;
	rq.maxbytes = LLM_MAXREPLY;
	if (http_post(&rq, &rs, err) == 0) {
		if (rs.status < 200 || rs.status > 299)
			http_err(rs.status, rs.body, err);
		else
			rc = parse_reply(p, rs.body, rs.len, r, err);
		free(rs.body);
	}
	explicit_bzero(h, sizeof h);
	return rc;
}

/* The command provider: the request on stdin, the reply on stdout. */
static int
command_send(const struct llm_conf *c, const struct provider *p,
    const char *body, struct llm_reply *r, char *err)
{
	const json_t *cmd = c->command;
	struct tool_proc tp;
	struct tool_out o;
	char **av, e2[HEART_ERRLEN];
	size_t i;
	int rc = -1;

	av = xcalloc(json_array_size(cmd) + 1, sizeof *av);
	for (i = 0; i < json_array_size(cmd); i++)
		av[i] = (char *)json_string_value(json_array_get(cmd, i));
	memset(&tp, 0, sizeof tp);
	tp.argv = av;
	tp.dir = c->dir;
	tp.in = body;
	tp.inlen = strlen(body);
	tp.timeout = c->timeout;
	tp.maxout = LLM_MAXREPLY;
	if (tool_exec(&tp, &o, e2) == -1)
		errf(err, "llm.command: %s", e2);
	else if (tool_status("llm.command", &tp, &o, err) == 0) {
		if (o.cut)
			errf(err, "llm.command: reply larger than %d bytes, "
			    "cut off", LLM_MAXREPLY);
		else
			rc = parse_reply(p, o.out, o.len, r, err);
	}
	tool_out_free(&o);
	free(av);
	return rc;
}

/* Send body; on success fill r (free with llm_reply_free). */
int
llm_send(const struct llm_conf *c, json_t *body, struct llm_reply *r,
    char *err)
{
	const struct provider *p = provider_find(c->provider);
	char *text = json_dumps(body, JSON_COMPACT);
	int rc;

	memset(r, 0, sizeof *r);
	if (c->command != NULL)
		rc = command_send(c, p, text, r, err);
	else
		rc = http_send(c, p, text, r, err);
	free(text);
	return rc;
}

void
llm_reply_free(struct llm_reply *r)
{
	free(r->text);
	json_decref(r->tool_calls);
	memset(r, 0, sizeof *r);
}
