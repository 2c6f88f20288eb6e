/*
 * llm.c - the model endpoint: the providers, each a row of
 * providers[] (its request body, its headers and the reading of its
 * reply); the configuration (soul's llm: block, then the environment);
 * the request as --dry-run shows it, and the warning of a key missing.
 * openai (Chat Completions, and every compatible server), anthropic
 * (Messages) and command (a local program that reads an OpenAI-form
 * request on stdin and writes an OpenAI-form reply on stdout).
 * Messages and tool calls are kept in OpenAI Chat Completions form
 * inside heart; a provider translates at the edge.  A reply's bytes
 * that are not UTF-8 are decoded lossily (utf8_clean), never a
 * failure: the paid answer is kept.  A request is sent by llmsend.c.
 * The API key is read from the environment when the request is built
 * and lives only in memory: never in argv, output, state or an error
 * message (llm_conf registers it with secret_add, and llm_send scrubs
 * a reply's text, its tool calls and every message of it).  The
 * context a request carries is bounded by llm_fit (llmfit.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

/* A provider: its row of providers[]. */
struct llm_provider {
	const char *name;
	const char *url;	/* default base URL; NULL: not HTTP */
	const char *path;	/* appended to the base URL */
	const char *key_env;	/* default key variable */
	json_t	*(*body)(const struct llm_conf *, json_t *, json_t *,
		    const char *);
	void	 (*headers)(const char *, char [][512], size_t *);
	int	 (*parse)(json_t *, struct llm_reply *, char *);
};

/*
 * The request's fields in the order of their stability from wake to
 * wake, the per-wake ones last (heart-soul(5), PROMPT CACHING): the
 * model, the tools, then the messages, whose own order is the system,
 * the history and the wake's prompt.  jansson keeps this order.
 */
static json_t *
openai_body(const struct llm_conf *c, json_t *messages, json_t *tools,
    const char *force)
{
	json_t *b = json_object();

	if (c->model[0] != '\0')
		json_object_set_new(b, "model", json_string(c->model));
	json_object_set_new(b, "max_tokens", json_integer(c->max_tokens));
	if (tools != NULL && json_array_size(tools) > 0)
		json_object_set(b, "tools", tools);
	if (force != NULL)
		json_object_set_new(b, "tool_choice", json_pack(
		    "{s:s,s:{s:s}}", "type", "function", "function", "name",
		    force));
	json_object_set(b, "messages", messages);
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

/*
 * A count of tokens in a usage object, whole or written as a real;
 * missing, not a number or below 1: 0.  One past LLM_TOKENS_MAX is
 * past any request (ask.c bounds it to the request's) and is read as
 * LLM_TOKENS_MAX, so that three of them add up.
 */
static long long
tokens(json_t *usage, const char *key)
{
	json_t *j = json_object_get(usage, key);
	json_int_t n = json_integer_value(j);
	double d = json_number_value(j);

	if (json_is_integer(j))
		return n <= 0 ? 0 : n > LLM_TOKENS_MAX ? LLM_TOKENS_MAX : n;
	return !(d >= 1) ? 0 : d >= (double)LLM_TOKENS_MAX ?
	    LLM_TOKENS_MAX : (long long)d;
}

/* What stopped the model before its answer was done (llm_reply's
 * cut), or NULL: why is its finish_reason (OpenAI: length,
 * content_filter) or stop_reason (Anthropic: max_tokens, refusal). */
static const char *
cut_by(json_t *why)
{
	const char *s = json_string_value(why);

	if (s != NULL && (strcmp(s, "length") == 0 ||
	    strcmp(s, "max_tokens") == 0))
		return "max_tokens";
	if (s != NULL && (strcmp(s, "content_filter") == 0 ||
	    strcmp(s, "refusal") == 0))
		return "the provider's filter";
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
	r->cut = cut_by(json_object_get(json_array_get(json_object_get(j,
	    "choices"), 0), "finish_reason"));
	usage = json_object_get(j, "usage");
	r->u.prompt = tokens(usage, "prompt_tokens");
	r->u.completion = tokens(usage, "completion_tokens");
	r->u.cached = tokens(json_object_get(usage,
	    "prompt_tokens_details"), "cached_tokens");
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

/*
 * The prompt cache's marks (llm.cache): a block so marked ends a
 * prefix Anthropic keeps for the next request.  The stable prefix ends
 * before the wake's prompt, the last user message (after it come only
 * the wake's own replies and tool results).
 */
static void
anth_mark(const struct llm_conf *c, json_t *block)
{
	if (c->cache == LLM_CACHE_OFF || block == NULL)
		return;
	json_object_set_new(block, "cache_control", c->cache ==
	    LLM_CACHE_1H ? json_pack("{s:s,s:s}", "type", "ephemeral", "ttl",
	    "1h") : json_pack("{s:s}", "type", "ephemeral"));
}

/* The index of the wake's prompt: the last user message, or n. */
static size_t
anth_prompt(json_t *messages)
{
	size_t i = json_array_size(messages);
	const char *r;

	while (i-- > 0) {
		r = json_string_value(json_object_get(json_array_get(messages,
		    i), "role"));
		if (r != NULL && strcmp(r, "user") == 0)
			return i;
	}
	return json_array_size(messages);
}

static json_t *
anth_messages(const struct llm_conf *c, json_t *messages, char **system)
{
	json_t *out = json_array(), *m, *blocks, *last, *mark[2] = { 0 };
	const char *role, *r, *text;
	size_t i, n = 0, p = anth_prompt(messages);
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
		/* the history's end, and the wake's last reply or result */
		if (i != p)
			mark[i > p] = json_array_get(blocks,
			    json_array_size(blocks) - 1);
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
	anth_mark(c, mark[0]);
	anth_mark(c, mark[1]);
	fclose(fp);
	return out;
}

/* The same order as openai_body: model, tools, system, messages. */
static json_t *
anthropic_body(const struct llm_conf *c, json_t *messages, json_t *tools,
    const char *force)
{
	json_t *b, *arr, *t, *fn, *msgs, *sys;
	char *system = NULL;
	size_t i;

	msgs = anth_messages(c, messages, &system);
	b = json_pack("{s:s,s:I}", "model", c->model, "max_tokens",
	    (json_int_t)c->max_tokens);
	arr = json_array();
	json_array_foreach(tools, i, t) {
		fn = json_object_get(t, "function");
		json_array_append_new(arr, json_pack("{s:O,s:O,s:O}", "name",
		    json_object_get(fn, "name"), "description",
		    json_object_get(fn, "description"), "input_schema",
		    json_object_get(fn, "parameters")));
	}
	if (json_array_size(arr) > 0)
		json_object_set(b, "tools", arr);
	if (force != NULL)
		json_object_set_new(b, "tool_choice", json_pack("{s:s,s:s}",
		    "type", "tool", "name", force));
	if (system != NULL && *system != '\0' && c->cache != LLM_CACHE_OFF) {
		sys = json_pack("{s:s,s:s}", "type", "text", "text", system);
		anth_mark(c, sys);
		json_object_set_new(b, "system", json_pack("[o]", sys));
	} else if (system != NULL && *system != '\0')
		json_object_set_new(b, "system", json_string(system));
	else	/* no system: the tools end the prefix */
		anth_mark(c, json_array_get(arr, json_array_size(arr) - 1));
	free(system);
	json_decref(arr);
	json_object_set_new(b, "messages", msgs);
	return b;
}

static void
anthropic_headers(const char *key, char h[][512], size_t *n)
{
	snprintf(h[(*n)++], 512, "anthropic-version: 2023-06-01");
	if (key != NULL && *key != '\0')
		snprintf(h[(*n)++], 512, "x-api-key: %s", key);
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
	r->u.prompt = tokens(usage, "input_tokens") + tokens(usage,
	    "cache_creation_input_tokens") + tokens(usage,
	    "cache_read_input_tokens");
	r->u.completion = tokens(usage, "output_tokens");
	r->u.cached = tokens(usage, "cache_read_input_tokens");
	r->u.cache_write = tokens(usage, "cache_creation_input_tokens");
	r->cut = cut_by(json_object_get(j, "stop_reason"));
	if (json_array_size(calls) > 0)
		r->tool_calls = calls;
	else
		json_decref(calls);
	return 0;
}

static const struct llm_provider providers[] = {
	{ "openai", "https://api.openai.com/v1", "/chat/completions",
	    "OPENAI_API_KEY", openai_body, openai_headers, openai_parse },
	{ "anthropic", "https://api.anthropic.com/v1", "/messages",
	    "ANTHROPIC_API_KEY", anthropic_body, anthropic_headers,
	    anthropic_parse },
	{ "command", NULL, NULL, "", openai_body, NULL, openai_parse },
};

static const struct llm_provider *
find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof providers / sizeof providers[0]; i++)
		if (strcmp(providers[i].name, name) == 0)
			return &providers[i];
	return NULL;
}

/* Is name a provider?  Its default base URL (NULL: not HTTP, the
 * command provider) and key variable in *url and *key_env. */
static int
llm_provider_find(const char *name, const char **url, const char **key_env)
{
	const struct llm_provider *p = find(name);

	if (p == NULL)
		return 0;
	*url = p->url;
	*key_env = p->key_env;
	return 1;
}

/* Every provider's key, as the environment holds it, is a secret. */
static void
llm_provider_secrets(void)
{
	size_t i;

	for (i = 0; i < sizeof providers / sizeof providers[0]; i++)
		if (providers[i].key_env[0] != '\0')
			secret_add(getenv(providers[i].key_env));
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
	return find(c->provider)->body(c, messages, tools, force);
}

/*
 * An HTTP provider's request to c's endpoint: its URL (n bytes) and
 * its headers, *nh of them, with key (NULL: none) where it goes;
 * Anthropic's hour-long cache is a beta, and its header goes with it.
 */
void
llm_headers(const struct llm_conf *c, const char *key, char h[][512],
    size_t *nh, char *url, size_t n)
{
	const struct llm_provider *p = find(c->provider);

	p->headers(key, h, nh);
	if (c->cache == LLM_CACHE_1H && strcmp(c->provider, "anthropic") == 0)
		snprintf(h[(*nh)++], 512, "anthropic-beta: "
		    "extended-cache-ttl-2025-04-11");
	snprintf(url, n, "%s%s", c->base_url, p->path);
}

/* Each string of j that holds a NUL (\u0000 in the reply) with U+FFFD
 * in its place, as utf8_clean does a raw one: the text after it is
 * kept, and nothing heart writes or prints holds a NUL. */
static void
nul_out(json_t *j)
{
	const char *k;
	json_t *v;
	size_t i, n;
	char *c;

	if (json_is_string(j) && strlen(json_string_value(j)) <
	    json_string_length(j)) {
		c = utf8_clean(json_string_value(j), json_string_length(j), &n);
		json_string_setn(j, c, n);
		free(c);
	}
	json_object_foreach(j, k, v)
		nul_out(v);
	json_array_foreach(j, i, v)
		nul_out(v);
}

static int
reply_read(const struct llm_provider *p, const char *buf, size_t len,
    struct llm_reply *r, char *err)
{
	json_error_t je;
	json_t *j;
	char *clean;
	size_t n;
	int rc;

	/* bytes that are not UTF-8 are decoded lossily (U+FFFD), as a
	 * tool's or a gate's output is, and so is a NUL: the paid answer
	 * is kept; and a number past 2^63 (a usage count, say) reads as a
	 * real, rather than lose the answer beside it */
	clean = utf8_clean(buf, len, &n);
	if ((j = json_loadb(clean, n, JSON_ALLOW_NUL, &je)) == NULL)
		j = json_loadb(clean, n, JSON_ALLOW_NUL |
		    JSON_DECODE_INT_AS_REAL, NULL);
	free(clean);
	nul_out(j);
	if (j == NULL) {
		errf(err, "unreadable reply: not JSON: %s", je.text);
		return -1;
	}
	rc = p->parse(j, r, err);
	json_decref(j);
	return rc;
}

/*
 * Read a reply body of the named provider into r (zeroed first; free
 * it with llm_reply_free): llm_send's reading of what the model
 * answered.
 */
int
llm_parse(const char *provider, const char *buf, size_t len,
    struct llm_reply *r, char *err)
{
	const struct llm_provider *p = find(provider);

	memset(r, 0, sizeof *r);
	if (p == NULL) {
		errf(err, "unknown provider \"%.40s\"", provider);
		return -1;
	}
	return reply_read(p, buf, len, r, err);
}

void
llm_reply_free(struct llm_reply *r)
{
	free(r->text);
	json_decref(r->tool_calls);
	memset(r, 0, sizeof *r);
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
command_conf(const struct soul *s, const struct soul_llm *e,
    struct llm_conf *c, char *err)
{
	if (e->command == NULL) {
		errf(err, "%s: llm provider command needs llm.command: the "
		    "program and its arguments, as a list", s->path);
		return -1;
	}
	c->command = e->command;
	c->base_url[0] = '\0';
	soul_dir(s, c->dir, sizeof c->dir);
	return 0;
}

/* The keys heart knows of, its soul's and every provider's, are
 * secrets, and so are the passwords of the environment: a command
 * provider or a tool may still print one. */
static void
keys_known(const struct llm_conf *c)
{
	secret_add(getenv(c->key_env));
	llm_provider_secrets();
	secret_add_passwords();
}

/* A password in base_url (http://user:password@host/...) is a secret
 * too, as it stands in the URL and %-decoded. */
static void
url_password(const char *url)
{
	const char *a = strstr(url, "://"), *end, *at, *colon;
	char *pw, *d;
	size_t i, o;

	if (a == NULL)
		return;
	a += 3;
	end = a + strcspn(a, "/?#");
	for (at = NULL; a < end; a++)
		if (*a == '@')
			at = a;
	if (at == NULL)
		return;
	a = strstr(url, "://") + 3;
	if ((colon = memchr(a, ':', (size_t)(at - a))) == NULL)
		return;
	pw = xcalloc(1, (size_t)(at - colon));
	memcpy(pw, colon + 1, (size_t)(at - colon - 1));
	secret_add(pw);
	d = xcalloc(1, strlen(pw) + 1);
	for (i = o = 0; pw[i] != '\0'; i++)
		if (pw[i] == '%' && isxdigit((unsigned char)pw[i + 1]) &&
		    isxdigit((unsigned char)pw[i + 2])) {
			char h[3] = { pw[i + 1], pw[i + 2], '\0' };
			d[o++] = (char)strtol(h, NULL, 16);
			i += 2;
		} else
			d[o++] = pw[i];
	secret_add(d);
	explicit_bzero(pw, strlen(pw));
	explicit_bzero(d, o);
	free(pw);
	free(d);
}

/* Fill c from the soul's llm: block, then HEART_LLM_*, then defaults. */
/* The endpoint e of soul s: its keys, else the environment's, else
 * the provider's defaults. */
static int
endpoint_conf(const struct soul *s, const struct soul_llm *e,
    struct llm_conf *c, char *err)
{
	const char *prov, *url, *key_env;

	memset(c, 0, sizeof *c);
	prov = pick(e->provider, "HEART_LLM_PROVIDER", "openai");
	if (!llm_provider_find(prov, &url, &key_env)) {
		errf(err, "%s: llm provider '%.32s' is not supported by "
		    "this heart-wake (openai, anthropic, command)", s->path,
		    prov);
		return -1;
	}
	snprintf(c->provider, sizeof c->provider, "%s", prov);
	snprintf(c->model, sizeof c->model, "%s",
	    pick(e->model, "HEART_LLM_MODEL", ""));
	snprintf(c->key_env, sizeof c->key_env, "%s",
	    pick(e->api_key_env, NULL, key_env));
	c->timeout = e->timeout;
	c->max_tokens = e->max_tokens;
	c->budget = e->context_budget;
	c->cache = e->cache < 0 ? LLM_CACHE_OFF : e->cache;
	c->soul = s->path;
	keys_known(c);
	if (url == NULL)
		return command_conf(s, e, c, err);
	snprintf(c->base_url, sizeof c->base_url, "%s",
	    pick(e->base_url, "HEART_LLM_URL", url));
	url_password(c->base_url);
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

#define INHERIT(f, none) (t.f = t.f != (none) ? t.f : s->llm.f)

/*
 * The main model of soul s (triage 0), or its triage endpoint
 * (llm.triage, 1), each key it leaves out being llm's: 0, 1 when the
 * soul has no triage, -1 with err.
 */
int
llm_conf(const struct soul *s, int triage, struct llm_conf *c, char *err)
{
	struct soul_llm t;

	if (!triage)
		return endpoint_conf(s, &s->llm, c, err);
	if (s->triage == NULL)
		return 1;
	t = *s->triage;
	/* another provider's URL, key and models are not this one's */
	if (soul_triage_same_provider(s)) {
		INHERIT(provider, NULL);
		INHERIT(base_url, NULL);
		INHERIT(api_key_env, NULL);
		INHERIT(command, NULL);
		INHERIT(model, NULL);
	}
	INHERIT(timeout, -1);
	INHERIT(max_tokens, -1);
	INHERIT(context_budget, -1);
	INHERIT(cache, -1);
	return endpoint_conf(s, &t, c, err);
}

#undef INHERIT

/* The full request, key redacted, for --dry-run. */
json_t *
llm_dry(const struct llm_conf *c, json_t *body)
{
	char h[8][512], url[1100];
	const char *key = getenv(c->key_env);
	json_t *hs;
	size_t n = 0, i;

	if (c->command != NULL)
		return json_pack("{s:O,s:s,s:O}", "command", c->command,
		    "directory", c->dir, "stdin", body);
	llm_headers(c, key ? "[redacted]" : NULL, h, &n, url, sizeof url);
	hs = json_array();
	json_array_append_new(hs, json_string("Content-Type: "
	    "application/json"));
	for (i = 0; i < n; i++)
		json_array_append_new(hs, json_string(h[i]));
	return json_pack("{s:s,s:s,s:o,s:O}", "method", "POST", "url", url,
	    "headers", hs, "body", body);
}

/* Is the URL's host this machine (localhost, 127.0.0.0/8, ::1)? */
static int
loopback(const char *url)
{
	const char *h = strstr(url, "://"), *at, *end;
	char host[256];
	size_t n;

	h = h != NULL ? h + 3 : url;
	n = strcspn(h, "/?#");
	if ((at = memchr(h, '@', n)) != NULL) {
		n -= (size_t)(at + 1 - h);
		h = at + 1;
	}
	if (*h == '[')
		end = memchr(h, ']', n), h++;
	else
		end = memchr(h, ':', n);
	if (end == NULL)
		end = h + strcspn(h, "/?#");
	snprintf(host, sizeof host, "%.*s", (int)(end - h), h);
	n = strlen(host);
	return strcasecmp(host, "localhost") == 0 || (n > 10 &&
	    strcasecmp(host + n - 10, ".localhost") == 0) ||
	    strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

/*
 * The usual cron mistake, seen before a request goes: an endpoint on
 * another host and no key in the environment.  Writes a warning into
 * buf (of size n) and returns 1, once per process for each key
 * variable; 0 when there is nothing to say.
 */
int
llm_key_warning(const struct llm_conf *c, char *buf, size_t n)
{
	static char warned[8][128];
	const char *key = getenv(c->key_env);
	size_t i;

	if (c->command != NULL || c->key_env[0] == '\0' || (key != NULL &&
	    *key != '\0') || loopback(c->base_url))
		return 0;
	for (i = 0; i < 8 && warned[i][0] != '\0'; i++)
		if (strcmp(warned[i], c->key_env) == 0)
			return 0;
	if (i < 8)
		snprintf(warned[i], sizeof warned[i], "%s", c->key_env);
	snprintf(buf, n, "no API key: %s is not set in the environment "
	    "heart-wake runs in, and %s is not on this host, so the request "
	    "will likely be refused (HTTP 401); set it where heart-wake runs "
	    "(cron and systemd do not read a login shell's profile), to any "
	    "value if the server needs no key", c->key_env, c->base_url);
	return 1;
}
