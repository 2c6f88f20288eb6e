/*
 * llm.c - the model endpoint: configuration (soul's llm: block, then
 * the environment), the request as --dry-run shows it, and the warning
 * of a key missing.  A request is sent by llmsend.c, in its provider's
 * form (llmprovider.c).  The API key is read from the environment when
 * the request is built and lives only in memory: never in argv,
 * output, state or an error message (llm_conf registers it with
 * secret_add, and llm_send scrubs a reply's text, its tool calls and
 * every message of it).  The context a request carries is bounded by
 * llm_fit (llmfit.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

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
 * secrets: a command provider or a tool may still print one. */
static void
keys_known(const struct llm_conf *c)
{
	secret_add(getenv(c->key_env));
	llm_provider_secrets();
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

/* The main model of soul s. */
int
llm_conf(const struct soul *s, struct llm_conf *c, char *err)
{
	return endpoint_conf(s, &s->llm, c, err);
}

#define INHERIT(f, none) (t.f = t.f != (none) ? t.f : s->llm.f)

/*
 * The triage endpoint of soul s (llm.triage), each key it leaves out
 * being llm's: 0, 1 when the soul has none, -1 with err.
 */
int
llm_triage_conf(const struct soul *s, struct llm_conf *c, char *err)
{
	struct soul_llm t;

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
