/*
 * llm.c - the model endpoint: configuration (soul's llm: block, then
 * the environment), the request, and its reply, behind a small
 * provider table so another wire protocol slots in without touching
 * the gates.  Messages are kept in OpenAI Chat Completions form inside
 * heart; a provider translates at the edge.  The API key is read from
 * the environment when the request is built and lives only in memory:
 * never in argv, output, state or an error message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"

#define LLM_MAXREPLY	(4 * 1024 * 1024)

struct provider {
	const char *name;
	const char *url;	/* default base URL */
	const char *path;	/* appended to the base URL */
	const char *key_env;	/* default key variable */
	json_t	*(*body)(const struct llm_conf *, json_t *, json_t *);
	void	 (*headers)(const char *, char [][512], size_t *);
	int	 (*parse)(json_t *, struct llm_reply *, char *);
};

static json_t *
openai_body(const struct llm_conf *c, json_t *messages, json_t *tools)
{
	json_t *b;

	b = json_pack("{s:s,s:O,s:I}", "model", c->model, "messages",
	    messages, "max_tokens", (json_int_t)c->max_tokens);
	if (tools != NULL && json_array_size(tools) > 0)
		json_object_set(b, "tools", tools);
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

static const struct provider providers[] = {
	{ "openai", "https://api.openai.com/v1", "/chat/completions",
	    "OPENAI_API_KEY", openai_body, openai_headers, openai_parse },
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
		    "this heart-wake", s->path, prov);
		return -1;
	}
	snprintf(c->provider, sizeof c->provider, "%s", p->name);
	snprintf(c->base_url, sizeof c->base_url, "%s",
	    pick(s->llm_base_url, "HEART_LLM_URL", p->url));
	snprintf(c->model, sizeof c->model, "%s",
	    pick(s->llm_model, "HEART_LLM_MODEL", ""));
	snprintf(c->key_env, sizeof c->key_env, "%s",
	    pick(s->llm_api_key_env, NULL, p->key_env));
	c->timeout = s->llm_timeout;
	c->max_tokens = s->llm_max_tokens;
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

/* The request body for messages (and tools), in the provider's form. */
json_t *
llm_body(const struct llm_conf *c, json_t *messages, json_t *tools)
{
	return provider_find(c->provider)->body(c, messages, tools);
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

/* Send body; on success fill r (free with llm_reply_free). */
int
llm_send(const struct llm_conf *c, json_t *body, struct llm_reply *r,
    char *err)
{
	const struct provider *p = provider_find(c->provider);
	char h[8][512], url[1100];
	const char *hv[10];
	struct http_req rq;
	struct http_resp rs;
	json_error_t je;
	json_t *j;
	size_t n = 0, i;
	int rc = -1;

	memset(r, 0, sizeof *r);
	p->headers(getenv(c->key_env), h, &n);
	hv[0] = "Content-Type: application/json";
	for (i = 0; i < n; i++)
		hv[i + 1] = h[i];
	hv[n + 1] = NULL;
	snprintf(url, sizeof url, "%s%s", c->base_url, p->path);
	rq.url = url;
	rq.headers = hv;
	rq.body = json_dumps(body, JSON_COMPACT);
	rq.timeout = (long)c->timeout;
	rq.maxbytes = LLM_MAXREPLY;
	if (http_post(&rq, &rs, err) == 0) {
		if (rs.status < 200 || rs.status > 299)
			http_err(rs.status, rs.body, err);
		else if ((j = json_loads(rs.body, 0, &je)) == NULL)
			errf(err, "unreadable reply: not JSON: %s", je.text);
		else {
			rc = p->parse(j, r, err);
			json_decref(j);
		}
		free(rs.body);
	}
	explicit_bzero(h, sizeof h);
	free((char *)rq.body);
	return rc;
}

void
llm_reply_free(struct llm_reply *r)
{
	free(r->text);
	json_decref(r->tool_calls);
	memset(r, 0, sizeof *r);
}
