/*
 * hold.c - one hold per provider account: a quota, billing or key
 * error (llmsend.c's LLM_QUOTA; LLM_CONFIG with HTTP 401 or 403) is the
 * account's, not the agent's, so it holds every agent that sends to
 * the same base URL with the same key, on every host that shares the
 * store.  A held wake ends as "held" at its admission (run.c), as a
 * paused one does: nothing run, nothing sent, no slot used.  One wake
 * in the whole fleet is let through per probe period (HOLD_PROBE, or
 * the provider's reset where it said one); any request on the account
 * that succeeds lifts the hold for all (ask.c).
 *
 * A 429 that says the account's rate limit (llm_rate_account) holds it
 * the same way, as kind "rate", until the provider's reset (the probe
 * time) and no longer: no probe, every wake goes once the reset has
 * passed, and a success before it does not lift it (a request sent
 * before the 429 may still succeed).  A wake it holds ends as
 * "throttled", as one the fleet file's rate limit defers.  A rate
 * limit never weakens a quota or key hold: it only pushes its probe on.
 *
 * One document for the whole store, hold.json: a file in the state
 * directory, or the key heart:{*}:hold.json of a Redis store (owner
 * "*", as pause.c's), so that one read at admission answers, and
 * heart-cap status lists every hold:
 *
 *   {"v":1,"holds":[{"endpoint":URL,"fingerprint":HEX,"kind":K,
 *    "http":N,"since":T,"probe":T},...],"updated":T}
 *
 * Invariants: the key itself is never kept, shown nor hashed into
 * anything but its FNV-1a 64 fingerprint; a base URL's user and
 * password are dropped from the endpoint kept and folded into the
 * fingerprint; the probe is granted only by store_update (under the
 * flock, or by compare-and-set), so that one caller has it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"

#define HOLDDOC		"hold.json"
#define OWNER		"*"		/* the store's own (store.c) */
#define KEEP		(7 * 86400LL)	/* a server keeps it this long */
#define HOLD_PROBE	900		/* s between probes, unless told */

/* The account of url and key: its endpoint (no user, no password) in
 * ep and its fingerprint in fp (16 hex digits). */
static void
account(const char *url, const char *key, char *ep, size_t n, char *fp)
{
	const char *s = strstr(url, "://"), *at, *host;
	uint64_t h = fnv1a_str(FNV_BASIS, key != NULL ? key : "");
	size_t len;

	host = s != NULL ? s + 3 : url;
	len = strcspn(host, "/?#");
	at = memchr(host, '@', len);
	if (at != NULL) {
		h = fnv1a(h, '@');
		while (host < at)
			h = fnv1a(h, (unsigned char)*host++);
		snprintf(ep, n, "%.*s%s", (int)(s + 3 - url), url, at + 1);
	} else
		snprintf(ep, n, "%s", url);
	snprintf(fp, 17, "%016llx", (unsigned long long)h);
}

/* Entry i of doc's holds as v; -1 with err when it does not read. */
static int
entry_parse(json_t *o, struct hold_view *v, char *err)
{
	const char *ep = json_string_value(json_object_get(o, "endpoint"));
	const char *fp = json_string_value(json_object_get(o,
	    "fingerprint"));
	const char *kind = json_string_value(json_object_get(o, "kind"));

	memset(v, 0, sizeof *v);
	if (ep == NULL || fp == NULL || strlen(fp) != 16 || kind == NULL ||
	    clock_parse_utc(json_string_value(json_object_get(o, "since")),
	    &v->since) == -1 || clock_parse_utc(json_string_value(
	    json_object_get(o, "probe")), &v->probe) == -1) {
		store_bad_field(OWNER, HOLDDOC, "holds", err);
		return -1;
	}
	snprintf(v->endpoint, sizeof v->endpoint, "%s", ep);
	snprintf(v->fp, sizeof v->fp, "%s", fp);
	snprintf(v->kind, sizeof v->kind, "%s", kind);
	v->http = (long)json_integer_value(json_object_get(o, "http"));
	v->held = 1;
	return 0;
}

static json_t *
entry_json(const struct hold_view *v)
{
	char since[32], probe[32];

	clock_utc(v->since, since, sizeof since);
	clock_utc(v->probe, probe, sizeof probe);
	return json_pack("{s:s,s:s,s:s,s:i,s:s,s:s}", "endpoint",
	    v->endpoint, "fingerprint", v->fp, "kind", v->kind, "http",
	    (int)v->http, "since", since, "probe", probe);
}

/* doc's holds (NULL: none); -1 with err when it is not an array. */
static int
holds_of(json_t *doc, json_t **a, char *err)
{
	*a = json_object_get(doc, "holds");
	if (*a != NULL && !json_is_array(*a)) {
		store_bad_field(OWNER, HOLDDOC, "holds", err);
		return -1;
	}
	return 0;
}

/* The index of ep and fp's hold in doc into *at, v its view: 1 found,
 * 0 not, -1 with err. */
static int
find(json_t *doc, const char *ep, const char *fp, size_t *at,
    struct hold_view *v, char *err)
{
	json_t *a, *o;
	size_t i;

	memset(v, 0, sizeof *v);
	if (holds_of(doc, &a, err) == -1)
		return -1;
	json_array_foreach(a, i, o) {
		if (entry_parse(o, v, err) == -1)
			return -1;
		if (strcmp(v->endpoint, ep) == 0 && strcmp(v->fp, fp) == 0) {
			*at = i;
			return 1;
		}
	}
	memset(v, 0, sizeof *v);
	return 0;
}

static int
is_rate(const struct hold_view *v)
{
	return strcmp(v->kind, "rate") == 0;
}

/* A change to one account's hold: set it, take its probe, lift it. */
enum { SET, TAKE, GIVE, LIFT };
struct holdx {
	char	 ep[1024], fp[17];
	int	 op;
	const char *kind;	/* SET: "quota", "key" or "rate" */
	long	 http;
	time_t	 probe;		/* SET, TAKE, GIVE: the next probe */
	time_t	 now;
	int	 granted;	/* TAKE: 1 when this caller probes */
	struct hold_view v;	/* the hold, then after the change */
};

/* x's change to the account's hold x->v (found: it is held): 0 when
 * there is nothing to write. */
static int
change(struct holdx *x, int found)
{
	if (x->op != SET && !found)
		return 0;		/* lifted meanwhile */
	if (x->op == LIFT) {
		if (is_rate(&x->v) && x->v.probe > x->now)
			return 0;	/* before its reset */
		x->v.held = 0;
		return 1;
	}
	if (x->op == SET && found && strcmp(x->kind, "rate") == 0 &&
	    !is_rate(&x->v)) {
		if (x->v.probe >= x->probe)
			return 0;	/* the quota or key hold's probe */
		x->v.probe = x->probe;
		return 1;
	}
	if (x->op == TAKE) {
		if (x->v.probe > x->now || is_rate(&x->v))
			return 0;	/* another caller probes; a rate
					   limit has none */
		x->granted = 1;
	} else if (x->op == GIVE) {
		if (x->v.probe != x->now + HOLD_PROBE)
			return 0;	/* not the probe taken at now */
	} else {
		if (!found || strcmp(x->v.kind, x->kind) != 0 ||
		    (is_rate(&x->v) && x->v.probe <= x->now)) {
			snprintf(x->v.endpoint, sizeof x->v.endpoint, "%s",
			    x->ep);
			snprintf(x->v.fp, sizeof x->v.fp, "%s", x->fp);
			x->v.since = x->now;
		}
		snprintf(x->v.kind, sizeof x->v.kind, "%s", x->kind);
		x->v.http = x->http;
	}
	x->v.held = 1;
	x->v.probe = x->probe;
	return 1;
}

/* cur with the hold changed as x says: *next NULL when unchanged. */
static int
holdx_step(json_t *cur, json_t **next, long long *ttl, void *ctx,
    char *err)
{
	struct holdx *x = ctx;
	json_t *a;
	size_t at = 0;
	char t[32];
	int r;

	x->granted = 0;
	if ((r = find(cur, x->ep, x->fp, &at, &x->v, err)) == -1)
		return -1;
	if (!change(x, r))
		return 0;
	*next = cur != NULL ? json_deep_copy(cur) : json_pack("{s:i}", "v",
	    1);
	holds_of(*next, &a, err);	/* read: find */
	if (a == NULL)
		json_object_set_new(*next, "holds", a = json_array());
	if (x->op == LIFT)
		json_array_remove(a, at);
	else if (r == 0)
		json_array_append_new(a, entry_json(&x->v));
	else
		json_array_set_new(a, at, entry_json(&x->v));
	clock_utc(x->now, t, sizeof t);
	json_object_set_new(*next, "updated", json_string(t));
	*ttl = KEEP;
	return 0;
}

/* x made for the account of url and key, and its hold read into v as
 * find reads it: 1 held, 0 not, -1 with err. */
static int
peek(const char *url, const char *key, struct holdx *x, struct hold_view *v,
    char *err)
{
	json_t *doc;
	size_t at;
	int r;

	memset(x, 0, sizeof *x);
	account(url, key, x->ep, sizeof x->ep, x->fp);
	if (store_get(OWNER, HOLDDOC, &doc, err) == -1)
		return -1;
	r = find(doc, x->ep, x->fp, &at, v, err);
	json_decref(doc);
	return r;
}

/*
 * May a request to url with key be sent at now?  0: no hold; 1: held
 * (v says which, since when and the next probe); 2: held, and the
 * probe of the period is due: with grant, taken by this caller (the
 * next one is HOLD_PROBE on), without, only read; -1 with err.
 */
int
hold_admit(const char *url, const char *key, time_t now, int grant,
    struct hold_view *v, char *err)
{
	struct holdx x;
	int r;

	if ((r = peek(url, key, &x, v, err)) != 1 || v->probe > now)
		return r;
	if (is_rate(v)) {		/* its reset has passed */
		memset(v, 0, sizeof *v);
		return 0;
	}
	if (!grant)
		return 2;
	x.op = TAKE;
	x.probe = now + HOLD_PROBE;
	x.now = now;
	if (store_update(OWNER, HOLDDOC, STATE_SYNC, holdx_step, &x,
	    err) == -1)
		return -1;
	*v = x.v;
	return !v->held ? 0 : x.granted ? 2 : 1;
}

/*
 * The account of url and key failed as kind ("quota", "key") with HTTP
 * status http at now: held (since the first failure) until a request
 * succeeds; its next probe at reset (the provider's, 0: none said), or
 * HOLD_PROBE on.  Kind "rate": held until reset (the head comment).
 */
int
hold_set(const char *url, const char *key, const char *kind, long http,
    time_t reset, time_t now, char *err)
{
	struct holdx x;

	memset(&x, 0, sizeof x);
	account(url, key, x.ep, sizeof x.ep, x.fp);
	x.op = SET;
	x.kind = kind;
	x.http = http;
	x.now = now;
	x.probe = reset > now ? reset : now + HOLD_PROBE;
	return store_update(OWNER, HOLDDOC, STATE_SYNC, holdx_step, &x, err);
}

/* The probe hold_admit granted at now goes unused (the wake was
 * refused after it): the next caller may take it at once. */
int
hold_giveback(const char *url, const char *key, time_t now, char *err)
{
	struct holdx x;

	memset(&x, 0, sizeof x);
	account(url, key, x.ep, sizeof x.ep, x.fp);
	x.op = GIVE;
	x.now = now;
	x.probe = now;
	return store_update(OWNER, HOLDDOC, STATE_SYNC, holdx_step, &x, err);
}

/* A request to url with key succeeded: the account's hold, if any,
 * lifts for all (a rate limit's, only once its reset has passed).
 * Read first: only a hold's end writes. */
int
hold_lift(const char *url, const char *key, time_t now, char *err)
{
	struct hold_view v;
	struct holdx x;
	int r;

	if ((r = peek(url, key, &x, &v, err)) != 1 || (is_rate(&v) &&
	    v.probe > now))
		return r == -1 ? -1 : 0;
	x.op = LIFT;
	x.now = now;
	return store_update(OWNER, HOLDDOC, STATE_SYNC, holdx_step, &x, err);
}

/* Every hold in the store at now, as a JSON array of heart-cap
 * status's objects (the fingerprint cut to its first 8 digits); a rate
 * limit's past its reset is none. */
int
hold_list(json_t **out, time_t now, char *err)
{
	struct hold_view v;
	json_t *doc, *a, *o;
	size_t i;
	int r = -1;

	*out = NULL;
	if (store_get(OWNER, HOLDDOC, &doc, err) == -1)
		return -1;
	if (holds_of(doc, &a, err) == -1)
		goto out;
	*out = json_array();
	json_array_foreach(a, i, o) {
		if (entry_parse(o, &v, err) == -1) {
			json_decref(*out);
			*out = NULL;
			goto out;
		}
		if (is_rate(&v) && v.probe <= now)
			continue;
		v.fp[8] = '\0';
		json_array_append_new(*out, entry_json(&v));
	}
	r = 0;
out:
	json_decref(doc);
	return r;
}

/* A wake's reason for v: the account, the kind, since when, the next
 * probe (a rate limit's: its reset). */
void
hold_why(const struct hold_view *v, char *buf, size_t n)
{
	char since[32], probe[32];

	clock_utc(v->since, since, sizeof since);
	clock_utc(v->probe, probe, sizeof probe);
	if (is_rate(v)) {
		snprintf(buf, n, "throttled: the account at %.200s (key %.8s) "
		    "is at its rate limit (HTTP %ld) since %s; until its "
		    "reset at %s (heart(7), Holds)", v->endpoint, v->fp,
		    v->http, since, probe);
		return;
	}
	snprintf(buf, n, "held: the account at %.200s (key %.8s) %s (HTTP "
	    "%ld) since %s; next probe at %s (heart(7), Holds)", v->endpoint,
	    v->fp, strcmp(v->kind, "quota") == 0 ? "is out of credit" :
	    "refuses its key", v->http, since, probe);
}
