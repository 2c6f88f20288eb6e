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

/* A rate-limit header's reset: an RFC 3339 time (Anthropic's), or a
 * duration of hours, minutes, seconds and milliseconds, "6m0s" or
 * "120ms" (OpenAI's), from now.  0: neither. */
static time_t
reset_at(const char *v, time_t now)
{
	double secs = 0, n;
	time_t t;
	char *end;

	if (clock_parse_utc(v, &t) == 0)
		return t;
	while (*v >= '0' && *v <= '9') {
		n = strtod(v, &end);
		if (strncmp(end, "ms", 2) == 0) {
			n /= 1000;
			end++;
		} else if (*end == 'h')
			n *= 3600;
		else if (*end == 'm')
			n *= 60;
		else if (*end != 's')
			return 0;
		secs += n;
		v = end + 1;
	}
	return *v == '\0' && secs < 1e9 ? now + (time_t)secs + (secs >
	    (time_t)secs) : 0;
}

/*
 * Is a 429 answered with rs the account's rate limit?  It is when one
 * of the provider's rate-limit windows says nothing remains: OpenAI's
 * x-ratelimit-remaining-requests or -tokens, Anthropic's
 * anthropic-ratelimit-requests-remaining, -tokens-, -input-tokens- or
 * -output-tokens-remaining at 0.  Returns the latest reset of those
 * windows (the matching -reset header), else retry (Retry-After), else
 * a minute on; at most LLM_RATEMAX on, and past now.  0: a 429 with no
 * such sign, the request's (too large, or the provider's own load).
 */
time_t
llm_rate_account(const struct http_resp *rs, time_t now, time_t retry)
{
	char name[64], *r;
	time_t t, reset = 0;
	size_t i, j;
	int spent = 0;

	for (i = 0; i < rs->nlimit; i++) {
		if ((r = strstr(rs->limit[i][0], "remaining")) == NULL ||
		    strcmp(rs->limit[i][1], "0") != 0)
			continue;
		spent = 1;
		snprintf(name, sizeof name, "%.*sreset%s",
		    (int)(r - rs->limit[i][0]), rs->limit[i][0], r + 9);
		for (j = 0; j < rs->nlimit; j++)
			if (strcmp(rs->limit[j][0], name) == 0 &&
			    (t = reset_at(rs->limit[j][1], now)) > reset)
				reset = t;
	}
	if (!spent)
		return 0;
	if (reset <= now)
		reset = retry > now ? retry : now + 60;
	return reset > now + LLM_RATEMAX ? now + LLM_RATEMAX : reset;
}
