/*
 * llmsend.c - a request to the model endpoint sent and its answer read
 * (llm_send, which ask.c alone calls): to the command provider's
 * program, on its standard input (child.c's runner), or POSTed through
 * libcurl, loaded with dlopen(3) only when a request is really sent: a
 * wake skipped by a gate never pays for libcurl (about 4 ms of
 * start-up here).  TLS verification stays on; every request has a
 * timeout and a cap on the reply size (HEART_REPLYMAX).  Of the
 * reply's headers only Retry-After and the providers' rate-limit
 * headers are kept; a transport failure names the URL it tried.  A
 * failed answer is classified by what a person must do: the key, the
 * model or the URL is wrong (LLM_CONFIG), the account's quota is used
 * up (LLM_QUOTA), or it may pass by itself (LLM_TEMP); and the message
 * says so.
 *
 * One curl handle serves every request of a process (reset between
 * them, so no option of one request reaches the next): its open
 * connections, TLS sessions and CA store are kept, so that the turns
 * of a conversation and the wakes a round's worker runs one after
 * another to one endpoint pay for one connection and one handshake,
 * not one each (heart-wake(1), ROUNDS).  A program run on the model's
 * behalf never inherits a connection of it (child.c closes every
 * descriptor but the standard three at exec).  A process forked after
 * a request leaves the handle to its parent.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "heartint.h"
#include "heartwake.h"

struct http_resp {
	long	 status;
	char	*body;
	size_t	 len;
	char	 retry_after[64];	/* the header's value, or "" */
	char	 limit[HTTP_LIMITS][2][64];	/* rate-limit headers: the
					   name (lower case), the value */
	size_t	 nlimit;
};

/* a model's reply, as sent (heart(7), LIMITS) */
#define HEART_REPLYMAX	(1024 * 1024)
#define LLM_RATEMAX	3600	/* s an account's rate limit holds, at most */

/* A Retry-After is honoured for a day at most. */
#define HTTP_HOLDMAX	86400

struct http_req {
	const char *url;
	const char *const *headers;	/* NULL-terminated */
	const char *body;
	long	 timeout;		/* s */
	size_t	 maxbytes;
};

static struct {
	void	*dl;
	CURLcode (*global_init)(long);
	CURL	*(*init)(void);
	CURLcode (*setopt)(CURL *, CURLoption, ...);
	CURLcode (*perform)(CURL *);
	CURLcode (*getinfo)(CURL *, CURLINFO, ...);
	void	 (*reset)(CURL *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void	 (*slist_free_all)(struct curl_slist *);
	const char *(*strerror)(CURLcode);
	CURL	*c;		/* the handle, kept from request to request */
	pid_t	 pid;		/* the process that made it */
	CURL	*parents;	/* a forked process's copy of its parent's */
} cu;

static int
load_curl(char *err)
{
	static const char *names[] = { "libcurl.so.4",
	    "libcurl-gnutls.so.4", "libcurl.so", NULL };
	int i;

	if (cu.dl != NULL)
		return 0;
	for (i = 0; names[i] != NULL && cu.dl == NULL; i++)
		cu.dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (cu.dl == NULL) {
		errf(err, "cannot load libcurl: %s (install libcurl4)",
		    dlerror());
		return -1;
	}
#define SYM(f, n) *(void **)&cu.f = dlsym(cu.dl, n)
	SYM(global_init, "curl_global_init");
	SYM(init, "curl_easy_init");
	SYM(setopt, "curl_easy_setopt");
	SYM(perform, "curl_easy_perform");
	SYM(getinfo, "curl_easy_getinfo");
	SYM(reset, "curl_easy_reset");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
	SYM(strerror, "curl_easy_strerror");
#undef SYM
	if (!cu.global_init || !cu.init || !cu.setopt || !cu.perform ||
	    !cu.getinfo || !cu.reset || !cu.slist_append ||
	    !cu.slist_free_all || !cu.strerror) {
		errf(err, "libcurl lacks a needed function");
		dlclose(cu.dl);
		cu.dl = NULL;
		return -1;
	}
	cu.global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

/*
 * Load libcurl now, before a round forks its workers: each then has it
 * already, where loading it in each would cost every wake its
 * start-up again.  0, or -1 with err.
 */
int
llm_preload(char *err)
{
	return load_curl(err);
}

struct sink {
	char	*buf;
	size_t	 len;
	size_t	 max;
	int	 toobig;
};

static size_t
sink_write(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t add = size * n;

	if (s->len + add > s->max) {
		s->toobig = 1;
		return 0;
	}
	if ((s->buf = realloc(s->buf, s->len + add + 1)) == NULL)
		abort();
	memcpy(s->buf + s->len, p, add);
	s->len += add;
	s->buf[s->len] = '\0';
	return add;
}

/* A rate-limit header (OpenAI's x-ratelimit-*, Anthropic's
 * anthropic-ratelimit-*) of p, its name and value, kept in rs. */
static void
limit_line(const char *p, size_t len, struct http_resp *rs)
{
	static const char *const prefix[] = { "x-ratelimit-",
	    "anthropic-ratelimit-", NULL };
	size_t k, i;
	char *d;

	for (i = 0; prefix[i] != NULL; i++)
		if (len > strlen(prefix[i]) && strncasecmp(p, prefix[i],
		    strlen(prefix[i])) == 0)
			break;
	if (prefix[i] == NULL || rs->nlimit == HTTP_LIMITS ||
	    (k = strcspn(p, ":\r\n")) >= len || p[k] != ':')
		return;
	d = rs->limit[rs->nlimit][0];
	snprintf(d, sizeof rs->limit[0][0], "%.*s", (int)k, p);
	for (; *d != '\0'; d++)
		*d = (char)tolower((unsigned char)*d);
	for (k++; k < len && (p[k] == ' ' || p[k] == '\t'); k++)
		;
	snprintf(rs->limit[rs->nlimit++][1], sizeof rs->limit[0][1], "%.*s",
	    (int)strcspn(p + k, "\r\n"), p + k);
}

/* A header line of the reply: keep Retry-After's value, and the
 * rate-limit headers. */
static size_t
header_line(char *p, size_t size, size_t n, void *arg)
{
	static const char name[] = "retry-after:";
	struct http_resp *rs = arg;
	size_t len = size * n, k = sizeof name - 1;

	if (len > k && strncasecmp(p, name, k) == 0) {
		while (k < len && (p[k] == ' ' || p[k] == '\t'))
			k++;
		snprintf(rs->retry_after, sizeof rs->retry_after, "%.*s",
		    (int)strcspn(p + k, "\r\n"), p + k);
	} else
		limit_line(p, len, rs);
	return len;
}

/*
 * The process's handle, reset: made at its first request; one copied
 * by fork(2) is its parent's (its connections are shared with it) and
 * is never used here.
 */
static CURL *
handle(void)
{
	if (cu.c != NULL && cu.pid != getpid()) {
		cu.parents = cu.c;
		cu.c = NULL;
	}
	if (cu.c != NULL)
		cu.reset(cu.c);
	else if ((cu.c = cu.init()) != NULL)
		cu.pid = getpid();
	return cu.c;
}

static void
transport_err(CURLcode rc, const struct http_req *rq, const struct sink *s,
    char *err)
{
	if (s->toobig)
		errf(err, "%s: reply larger than %zu bytes, cut off", rq->url,
		    s->max);
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		errf(err, "%s: no complete reply within %lds", rq->url,
		    rq->timeout);
	else
		errf(err, "%s: %s", rq->url, cu.strerror(rc));
}

/*
 * POST rq->body to rq->url with rq->headers.  Returns 0 with the HTTP
 * status and body in *rs (any status: the caller judges it), -1 with
 * err on a transport failure, a timeout or an oversized reply.
 */
static int
http_post(const struct http_req *rq, struct http_resp *rs, char *err)
{
	struct curl_slist *h = NULL;
	struct sink s = { NULL, 0, rq->maxbytes, 0 };
	CURLcode rc;
	CURL *c;
	size_t i;

	memset(rs, 0, sizeof *rs);
	if (load_curl(err) == -1)
		return -1;
	if ((c = handle()) == NULL) {
		errf(err, "curl_easy_init failed");
		return -1;
	}
	for (i = 0; rq->headers[i] != NULL; i++)
		h = cu.slist_append(h, rq->headers[i]);
	cu.setopt(c, CURLOPT_URL, rq->url);
	cu.setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu.setopt(c, CURLOPT_HTTPHEADER, h);
	cu.setopt(c, CURLOPT_POSTFIELDS, rq->body);
	cu.setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(rq->body));
	cu.setopt(c, CURLOPT_TIMEOUT, rq->timeout);
	cu.setopt(c, CURLOPT_CONNECTTIMEOUT, rq->timeout < 10 ?
	    rq->timeout : 10L);
	cu.setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
	cu.setopt(c, CURLOPT_WRITEDATA, &s);
	cu.setopt(c, CURLOPT_HEADERFUNCTION, header_line);
	cu.setopt(c, CURLOPT_HEADERDATA, rs);
	cu.setopt(c, CURLOPT_USERAGENT, "heart-wake/1");
	rc = cu.perform(c);
	if (rc == CURLE_OK) {
		cu.getinfo(c, CURLINFO_RESPONSE_CODE, &rs->status);
		rs->body = s.buf ? s.buf : xstrdup("");
		rs->len = s.len;
	} else {
		transport_err(rc, rq, &s, err);
		free(s.buf);
	}
	cu.setopt(c, CURLOPT_HTTPHEADER, NULL);
	cu.slist_free_all(h);
	return rc == CURLE_OK ? 0 : -1;
}

/*
 * A Retry-After value (RFC 9110: seconds, or an HTTP date in any of its
 * three forms) as the time it names, at most HTTP_HOLDMAX after now.
 * Returns -1 for a value that is neither.
 */
static int
http_retry_after(const char *v, time_t now, time_t *until)
{
	static const char *fmt[] = { "%a, %d %b %Y %H:%M:%S GMT",
	    "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y", NULL };
	const char *end;
	long long secs;
	struct tm tm;
	time_t t;
	int i;

	*until = 0;
	if (v == NULL)
		return -1;
	if (num_parse(v, 0, (long long)1 << 40, &secs) == 0) {
		*until = now + (secs < HTTP_HOLDMAX ? secs : HTTP_HOLDMAX);
		return 0;
	}
	for (i = 0; fmt[i] != NULL; i++) {
		memset(&tm, 0, sizeof tm);
		if ((end = strptime(v, fmt[i], &tm)) == NULL || *end != '\0')
			continue;
		t = timegm(&tm);
		*until = t - now > HTTP_HOLDMAX ? now + HTTP_HOLDMAX : t;
		return 0;
	}
	return -1;
}

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
static int
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
 * Is a 429 answered with the rate-limit headers limit[n] (a name in
 * lower case, a value) the account's rate limit?  It is when one of
 * the provider's rate-limit windows says nothing remains: OpenAI's
 * x-ratelimit-remaining-requests or -tokens, Anthropic's
 * anthropic-ratelimit-requests-remaining, -tokens-, -input-tokens- or
 * -output-tokens-remaining at 0.  Returns the latest reset of those
 * windows (the matching -reset header), else retry (Retry-After), else
 * a minute on; at most LLM_RATEMAX on, and past now.  0: a 429 with no
 * such sign, the request's (too large, or the provider's own load).
 */
time_t
llm_rate_account(char limit[][2][64], size_t n, time_t now, time_t retry)
{
	char name[64], *r;
	time_t t, reset = 0;
	size_t i, j;
	int spent = 0;

	for (i = 0; i < n; i++) {
		if ((r = strstr(limit[i][0], "remaining")) == NULL ||
		    strcmp(limit[i][1], "0") != 0)
			continue;
		spent = 1;
		snprintf(name, sizeof name, "%.*sreset%s",
		    (int)(r - limit[i][0]), limit[i][0], r + 9);
		for (j = 0; j < n; j++)
			if (strcmp(limit[j][0], name) == 0 &&
			    (t = reset_at(limit[j][1], now)) > reset)
				reset = t;
	}
	if (!spent)
		return 0;
	if (reset <= now)
		reset = retry > now ? retry : now + 60;
	return reset > now + LLM_RATEMAX ? now + LLM_RATEMAX : reset;
}

static int
http_send(const struct llm_conf *c, const char *body, time_t now,
    struct llm_reply *r, char *err)
{
	char h[8][512], url[1100];
	const char *hv[10];
	struct http_req rq;
	struct http_resp rs;
	size_t n = 0, i;
	int rc = -1;

	llm_headers(c, getenv(c->key_env), h, &n, url, sizeof url);
	hv[0] = "Content-Type: application/json";
	for (i = 0; i < n; i++)
		hv[i + 1] = h[i];
	hv[n + 1] = NULL;
	rq.url = url;
	rq.headers = hv;
	rq.body = body;
	rq.timeout = (long)c->timeout;
	rq.maxbytes = HEART_REPLYMAX;
	r->fail = LLM_TEMP;
	if (http_post(&rq, &rs, err) == 0) {
		if (rs.status < 200 || rs.status > 299) {
			r->status = rs.status;
			r->fail = llm_http_fail(c, url, rs.status, rs.body,
			    err);
			if (http_retry_after(rs.retry_after, now, &r->hold) ==
			    -1 || r->hold <= now)
				r->hold = 0;
			if (rs.status == 429)
				r->account = llm_rate_account(rs.limit,
				    rs.nlimit, now, r->hold);
		} else
			rc = llm_parse(c->provider, rs.body, rs.len, r, err);
		free(rs.body);
	}
	explicit_bzero(h, sizeof h);
	return rc;
}

/* Does entry pass to the command provider?  All but a password: it is
 * the model's client and may need the key, never the store's. */
static int
no_password(const char *entry, const void *arg)
{
	(void)arg;
	return !secret_password_var(entry);
}

/* The command provider: the request on stdin, the reply on stdout. */
static int
command_send(const struct llm_conf *c, const char *body,
    struct llm_reply *r, char *err)
{
	const json_t *cmd = c->command;
	struct tool_proc tp;
	struct tool_out o;
	char **av, **env, *none[] = { NULL }, e2[HEART_ERRLEN];
	size_t i;
	int rc = -1;

	av = xcalloc(json_array_size(cmd) + 1, sizeof *av);
	for (i = 0; i < json_array_size(cmd); i++)
		av[i] = (char *)json_string_value(json_array_get(cmd, i));
	memset(&tp, 0, sizeof tp);
	tp.argv = av;
	tp.env = env = env_make(no_password, NULL, none);
	tp.dir = c->dir;
	tp.in = body;
	tp.inlen = strlen(body);
	tp.timeout = c->timeout;
	tp.maxout = HEART_REPLYMAX;
	r->fail = LLM_TEMP;
	if (tool_exec(&tp, &o, e2) == -1)
		errf(err, "llm.command: %s", e2);
	else if (tool_status("llm.command", &tp, &o, err) == 0) {
		if (o.cut)
			errf(err, "llm.command: reply larger than %d bytes, "
			    "cut off", HEART_REPLYMAX);
		else
			rc = llm_parse(c->provider, o.out, o.len, r, err);
	}
	tool_out_free(&o);
	env_free(env);
	free(av);
	return rc;
}

/*
 * Send body; on success fill r (free with llm_reply_free): its text and
 * its tool calls are scrubbed of secrets.  On failure (-1, why in err),
 * r->fail is the class of the failure (llm_http_fail), r->hold the time
 * the provider asked not to be asked again before (Retry-After), or 0,
 * and r->account, of a 429 that is the account's rate limit, its reset
 * (llm_rate_account), or 0.
 */
int
llm_send(const struct llm_conf *c, json_t *body, time_t now,
    struct llm_reply *r, char *err)
{
	char *text = json_dumps(body, JSON_COMPACT), *clean;
	int rc;

	memset(r, 0, sizeof *r);
	if (c->command != NULL)
		rc = command_send(c, text, r, err);
	else
		rc = http_send(c, text, now, r, err);
	free(text);
	if (rc == -1 && r->fail == 0)	/* a reply that did not read */
		r->fail = LLM_TEMP;
	if (rc == 0) {
		r->fail = 0;
		clean = secret_dup(r->text);
		free(r->text);
		r->text = clean;
		secret_json(r->tool_calls);
	}
	return rc;
}
