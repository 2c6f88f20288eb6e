/*
 * http.c - one HTTP POST through libcurl, loaded with dlopen(3) only
 * when a request is really sent: a wake skipped by a gate never pays
 * for libcurl (about 4 ms of start-up here).  TLS verification stays
 * on; every request has a timeout and a cap on the reply size.  Of
 * the reply's headers only Retry-After (http_retry_after reads it) and
 * the providers' rate-limit headers (llmfail.c reads them) are kept; a
 * transport failure names the URL it tried.
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

/* A Retry-After is honoured for a day at most. */
#define HTTP_HOLDMAX	86400

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
http_preload(char *err)
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
int
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
int
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
