/*
 * llmfail.c - a failed answer of the model endpoint, classified by what
 * a person must do: the key, the model or the URL is wrong
 * (LLM_CONFIG), the account's quota is used up (LLM_QUOTA), or it may
 * pass by itself (LLM_TEMP); and the message that says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

/* What a provider's error body says: its message, type and code. */
struct said {
	const char *msg, *type, *code;
};

static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void
said_read(const json_t *j, struct said *sd)
{
	const json_t *e = json_object_get(j, "error");

	memset(sd, 0, sizeof *sd);
	if (json_is_string(e))
		sd->msg = json_string_value(e);
	else if (json_is_object(e)) {
		sd->msg = str(e, "message");
		sd->type = str(e, "type");
		sd->code = str(e, "code");
	}
	if (sd->msg == NULL)
		sd->msg = str(j, "message") ? str(j, "message") :
		    str(j, "detail");
}

static int
is(const char *s, const char *word)
{
	return s != NULL && strcmp(s, word) == 0;
}

static int
says(const char *s, const char *words)
{
	return s != NULL && strcasestr(s, words) != NULL;
}

/* The account's quota or credit is used up (OpenAI insufficient_quota,
 * Anthropic billing_error or a credit balance too low, HTTP 402). */
static int
quota_gone(long status, const struct said *sd)
{
	return status == 402 || is(sd->code, "insufficient_quota") ||
	    is(sd->type, "insufficient_quota") ||
	    is(sd->type, "billing_error") ||
	    says(sd->msg, "credit balance is too low");
}

/* A 400 that says the model does not exist (OpenAI, vLLM, LiteLLM,
 * Ollama word it differently). */
static int
no_model(const struct said *sd)
{
	if (is(sd->code, "model_not_found") || is(sd->type,
	    "not_found_error"))
		return 1;
	return says(sd->msg, "model") && (says(sd->msg, "does not exist") ||
	    says(sd->msg, "not found") || says(sd->msg, "no such model") ||
	    says(sd->msg, "unknown model") || says(sd->msg, "invalid model"));
}

/*
 * The failure of an HTTP answer outside 2xx, by what a person must do,
 * and the message that says it: the soul, the URL and the fix for a
 * configuration error; the provider's own words last, cut short.
 */
int
llm_http_fail(const struct llm_conf *c, const char *url, long status,
    const char *body, char *err)
{
	const char *key = getenv(c->key_env);
	json_t *j = json_loads(body, 0, NULL);
	char said[200] = "";
	struct said sd;
	int class = LLM_CONFIG;

	said_read(j, &sd);
	if (sd.msg != NULL)
		snprintf(said, sizeof said, "; the provider said: %.160s",
		    sd.msg);
	if (quota_gone(status, &sd)) {
		errf(err, "%s: %s answered HTTP %ld: the account's quota or "
		    "credit is used up: add credit or raise the limit with "
		    "the provider%s", c->soul, url, status, said);
		class = LLM_QUOTA;
	} else if (status == 401 && (key == NULL || *key == '\0'))
		errf(err, "%s: %s answered HTTP 401: no API key was sent: "
		    "set %s in the environment heart-wake runs in (cron and "
		    "systemd do not read a login shell's profile)%s", c->soul,
		    url, c->key_env, said);
	else if (status == 401)
		errf(err, "%s: %s answered HTTP 401: the API key was refused: "
		    "set %s in the environment heart-wake runs in to a valid "
		    "key%s", c->soul, url, c->key_env, said);
	else if (status == 403)
		errf(err, "%s: %s answered HTTP 403: the API key may not use "
		    "this model or endpoint: check the key's permissions and "
		    "llm.model (%s)%s", c->soul, url, c->model, said);
	else if (status == 404)
		errf(err, "%s: %s answered HTTP 404: no such model or URL: "
		    "check llm.model (%s) and llm.base_url%s", c->soul, url,
		    c->model, said);
	else if (status == 400 && no_model(&sd))
		errf(err, "%s: %s answered HTTP 400: no such model: check "
		    "llm.model (%s)%s", c->soul, url, c->model, said);
	else {
		errf(err, "model endpoint answered HTTP %ld%s%.200s", status,
		    sd.msg ? ": " : "", sd.msg ? sd.msg : "");
		class = LLM_TEMP;
	}
	json_decref(j);
	return class;
}
