/*
 * bucket.c - the fleet-wide rate limit: requests and tokens a minute
 * per endpoint, across every process and host that shares the store.
 *
 * The endpoints are declared once, in the fleet file (HEART_FLEET,
 * heart(7) THE FLEET FILE), which endpoint.c reads.  Each has a
 * bucket of requests and of tokens: a request is counted in the second
 * it is sent (a wake's first, taken at admission, is moved there), and
 * returns 61 seconds after, so no 60 seconds ever see more than the
 * limit (a sliding window; at most BKT_SLOTS seconds are kept).  A 429
 * from the provider stops the whole endpoint until its Retry-After (a
 * minute without one).
 *
 * Fairness: a wake the bucket defers is put in line, in its document,
 * by agent, in the order wakes were first deferred; it keeps its place
 * while its agent asks again within LINE_TTL, and leaves the line when
 * its wake is admitted.  A wake is admitted only when the room left in
 * the window is more than the wakes in line before it (a wake not in
 * line is after all of them): a request that frees goes to the wake
 * deferred first, whichever process or host reaches the store first,
 * whatever its --jobs.  A wake refused for its turn is told when it
 * would come if those before it take theirs.  Only a wake's first
 * request stands in line (bkt_args.who); its later ones (tool calls'
 * answers) take what the window has.  The line keeps requests a
 * minute: an endpoint limited by its tokens a minute alone admits in
 * no order.
 *
 * The rules are bucket_step's, a pure function; store_update reads,
 * decides and writes back endpoints/NAME/bucket.json under its flock,
 * or the key heart:{@NAME}:bucket.json by compare-and-set (heartint.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartint.h"
#include "heartstore.h"

#define BKTFILE		"bucket.json"
#define WINDOW		61	/* s: a take returns this long after */
#define SLOW_DEFAULT	60	/* s: a 429 without Retry-After */
#define LINE_TTL	180	/* s: a place in line not asked for again */
#define KEEP		(2 * 86400LL)	/* a server keeps it, s */

/*
 * Forget what was taken before the window of now, and the places in
 * line not asked for within LINE_TTL.  A second after now is kept:
 * another process's, whose clock was read after ours while we waited
 * for the store; only one more than a window ahead is forgotten (a
 * clock set back), so that it never holds the endpoint for long.
 */
static int
prune(struct bucket *b, time_t now)
{
	int i, k = 0, changed = 0;

	for (i = 0; i < b->n; i++) {
		if (b->e[i].sec > (long long)now - WINDOW &&
		    b->e[i].sec <= (long long)now + WINDOW)
			b->e[k++] = b->e[i];
		else
			changed = 1;
	}
	b->n = k;
	for (i = k = 0; i < b->nq; i++) {
		if (b->q[i].seen > (long long)now - LINE_TTL &&
		    b->q[i].seen <= (long long)now + WINDOW)
			b->q[k++] = b->q[i];
		else
			changed = 1;
	}
	b->nq = k;
	return changed;
}

/* who's place in line, or b->nq: after every wake in it. */
static int
place(const struct bucket *b, const char *who)
{
	int i;

	for (i = 0; i < b->nq; i++)
		if (strcmp(b->q[i].who, who) == 0)
			break;
	return i;
}

/* who deferred at now: in line at its place, or at its end, first. */
static void
line_up(struct bucket *b, int i, const char *who, time_t now)
{
	if (i == b->nq) {
		if (b->nq == BKT_LINE)
			return;		/* full: it stays after all */
		snprintf(b->q[i].who, sizeof b->q[i].who, "%s", who);
		b->q[i].since = now;
		b->nq++;
	}
	b->q[i].seen = now;
}

static void
sums(const struct bucket *b, long long *req, long long *tok)
{
	int i;

	*req = *tok = 0;
	for (i = 0; i < b->n; i++) {
		*req += b->e[i].req;
		*tok += b->e[i].tok;
	}
}

/* When the window's requests (tok: tokens) fall below lim again. */
static time_t
frees_at(const struct bucket *b, int tok, long long lim)
{
	long long req, toks, left;
	int i;

	sums(b, &req, &toks);
	left = tok ? toks : req;
	for (i = 0; i < b->n; i++) {
		left -= tok ? b->e[i].tok : b->e[i].req;
		if (left < lim)
			return (time_t)(b->e[i].sec + WINDOW);
	}
	return 0;
}

/*
 * When a take with `ahead' wakes in line before it can be granted, if
 * those take theirs as soon as they may: 0 now.  They take the room
 * the window has; each further one a request that leaves it; this one
 * the next (or, past the window's own, a minute after now).
 */
static time_t
turn_at(const struct bucket *b, long long ahead, time_t now)
{
	long long req, tok, k;
	time_t t = 0, u = 0;

	if ((long long)now < b->v.slow_until)
		return (time_t)b->v.slow_until;
	sums(b, &req, &tok);
	if (b->v.rpm > 0 && (k = ahead - (b->v.rpm - req)) >= 0)
		t = k < req ? frees_at(b, 0, req - k) : now + WINDOW;
	if (b->v.tpm > 0 && tok >= b->v.tpm)
		u = frees_at(b, 1, b->v.tpm);
	return t > u ? t : u;
}

/* The entry of second now, made in its place (oldest first) if it is
 * not there. */
static int
slot(struct bucket *b, time_t now)
{
	int i;

	for (i = b->n; i > 0 && b->e[i - 1].sec >= (long long)now; i--)
		if (b->e[i - 1].sec == (long long)now)
			return i - 1;
	if (b->n == BKT_SLOTS) {	/* full: the oldest goes */
		if (i == 0)
			return 0;	/* now is the oldest: count it there */
		memmove(b->e, b->e + 1, (BKT_SLOTS - 1) * sizeof *b->e);
		b->n--;
		i--;
	}
	memmove(b->e + i + 1, b->e + i, (size_t)(b->n - i) * sizeof *b->e);
	b->e[i].sec = now;
	b->e[i].req = b->e[i].tok = 0;
	b->n++;
	return i;
}

/*
 * One transition of bucket b at now (its limits in b->v.rpm, b->v.tpm):
 * take admits one request (*until 0) while the endpoint is not slowed
 * by a 429, both windows are below their limits and, for a wake's first
 * (a->who), the room left is more than the wakes in line before it;
 * else it sets *until to when its turn will be, and a->who keeps or
 * takes its place in line (b->v.ahead: the wakes before it); give hands
 * back a request taken at a->at;
 * move counts a request taken at a->at in second now instead (it is
 * being sent now), or takes one as take does when that second has left
 * the window; record adds a reply's tokens; slow stops the endpoint
 * until a->hold (or a minute); peek only forgets the past.  Returns 1
 * when b is to be written back.
 */
int
bucket_step(struct bucket *b, enum bkt_op op, const struct bkt_args *a,
    time_t now, time_t *until)
{
	int changed = prune(b, now), i;
	const char *who = a != NULL ? a->who : NULL;

	if (until != NULL)
		*until = 0;
	switch (op) {
	case BKT_MOVE:
		for (i = b->n - 1; i >= 0; i--)
			if (b->e[i].sec == (long long)a->at &&
			    b->e[i].req > 0) {
				b->e[i].req--;
				b->e[slot(b, now)].req++;
				return 1;
			}
		/* FALLTHROUGH */
	case BKT_TAKE:
		i = who != NULL ? place(b, who) : 0;
		b->v.ahead = i;
		if ((*until = turn_at(b, i, now)) != 0) {
			b->v.throttled++;
			if (who != NULL)
				line_up(b, i, who, now);
			return 1;
		}
		if (who != NULL && i < b->nq) {		/* its turn: out */
			memmove(b->q + i, b->q + i + 1, (size_t)(b->nq - i -
			    1) * sizeof *b->q);
			b->nq--;
		}
		b->e[slot(b, now)].req++;
		b->v.taken++;
		return 1;
	case BKT_GIVE:
		for (i = b->n - 1; i >= 0; i--)
			if (b->e[i].sec == (long long)a->at &&
			    b->e[i].req > 0) {
				b->e[i].req--;
				b->v.taken--;
				return 1;
			}
		return changed;
	case BKT_RECORD:
		if (a->tokens <= 0)
			return changed;
		b->e[slot(b, now)].tok += a->tokens;
		return 1;
	case BKT_SLOW:
		/* a second more: our clock counts whole seconds, and the
		 * provider's Retry-After counts from its reply */
		b->v.n429++;
		if ((long long)(a->hold > now ? a->hold + 1 : now +
		    SLOW_DEFAULT) > b->v.slow_until)
			b->v.slow_until = a->hold > now ? a->hold + 1 : now +
			    SLOW_DEFAULT;
		return 1;
	case BKT_PEEK:
		break;
	}
	return changed;
}

static long long
get_num(json_t *o, const char *key, int *bad)
{
	json_t *j = json_object_get(o, key);

	if (j == NULL)
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		*bad = 1;
	return json_integer_value(j);
}

/* The line, [[agent, since, seen], ...] (NULL: none), into b. */
static int
parse_line(const char *owner, json_t *q, struct bucket *b, char *err)
{
	json_t *e;
	size_t i;

	if (q == NULL)
		return 0;
	if (!json_is_array(q) || json_array_size(q) > BKT_LINE)
		goto bad;
	json_array_foreach(q, i, e) {
		if (json_array_size(e) != 3 ||
		    !id_valid(json_string_value(json_array_get(e, 0))) ||
		    !json_is_integer(json_array_get(e, 1)) ||
		    !json_is_integer(json_array_get(e, 2)))
			goto bad;
		snprintf(b->q[i].who, sizeof b->q[i].who, "%s",
		    json_string_value(json_array_get(e, 0)));
		b->q[i].since = json_integer_value(json_array_get(e, 1));
		b->q[i].seen = json_integer_value(json_array_get(e, 2));
	}
	b->nq = (int)json_array_size(q);
	return 0;
bad:
	store_bad_field(owner, BKTFILE, "queue", err);
	return -1;
}

/* b from the stored JSON (NULL: none); -1 with err if it is unsound. */
static int
parse_bucket(const char *owner, json_t *j, struct bucket *b, char *err)
{
	json_t *log, *e;
	size_t i;
	int bad = 0;

	memset(b, 0, sizeof *b);
	if (j == NULL)
		return 0;
	b->v.slow_until = get_num(j, "slow_until", &bad);
	b->v.n429 = get_num(j, "n429", &bad);
	b->v.throttled = get_num(j, "throttled", &bad);
	b->v.taken = get_num(j, "taken", &bad);
	log = json_object_get(j, "log");
	if (bad || !json_is_array(log) || json_array_size(log) > BKT_SLOTS) {
		store_bad_field(owner, BKTFILE, bad ? "counts" : "log", err);
		return -1;
	}
	json_array_foreach(log, i, e) {
		if (json_array_size(e) != 3 ||
		    !json_is_integer(json_array_get(e, 0)) ||
		    !json_is_integer(json_array_get(e, 1)) ||
		    !json_is_integer(json_array_get(e, 2))) {
			store_bad_field(owner, BKTFILE, "log", err);
			return -1;
		}
		b->e[i].sec = json_integer_value(json_array_get(e, 0));
		b->e[i].req = json_integer_value(json_array_get(e, 1));
		b->e[i].tok = json_integer_value(json_array_get(e, 2));
	}
	b->n = (int)json_array_size(log);
	return parse_line(owner, json_object_get(j, "queue"), b, err);
}

static json_t *
bucket_doc(const char *name, const struct bucket *b, time_t now)
{
	json_t *log = json_array(), *q = json_array();
	char ts[32];
	int i;

	for (i = 0; i < b->n; i++)
		json_array_append_new(log, json_pack("[I,I,I]",
		    (json_int_t)b->e[i].sec, (json_int_t)b->e[i].req,
		    (json_int_t)b->e[i].tok));
	for (i = 0; i < b->nq; i++)
		json_array_append_new(q, json_pack("[s,I,I]", b->q[i].who,
		    (json_int_t)b->q[i].since, (json_int_t)b->q[i].seen));
	clock_utc(now, ts, sizeof ts);
	return json_pack("{s:i,s:s,s:I,s:I,s:o,s:o,s:I,s:I,s:I,s:I,s:s}",
	    "v", 1, "endpoint", name, "requests_per_minute",
	    (json_int_t)b->v.rpm, "tokens_per_minute", (json_int_t)b->v.tpm,
	    "log", log, "queue", q, "slow_until", (json_int_t)b->v.slow_until,
	    "n429", (json_int_t)b->v.n429, "throttled",
	    (json_int_t)b->v.throttled, "taken", (json_int_t)b->v.taken,
	    "updated", ts);
}

struct bktx {
	char	 owner[HEART_IDMAX + 2];	/* "@", the endpoint's name */
	long long rpm, tpm;		/* its limits (endpoint.c) */
	enum bkt_op op;
	const struct bkt_args *a;
	time_t	 now, until;
	struct bucket b;
};

static int
bktx_step(json_t *cur, json_t **next, long long *ttl, void *ctx, char *err)
{
	struct bktx *x = ctx;

	if (parse_bucket(x->owner, cur, &x->b, err) == -1)
		return -1;
	x->b.v.rpm = x->rpm;
	x->b.v.tpm = x->tpm;
	if (bucket_step(&x->b, x->op, x->a, x->now, &x->until) && x->op !=
	    BKT_PEEK)
		*next = bucket_doc(x->owner + 1, &x->b, x->now);
	*ttl = KEEP;
	return 0;
}

static void
to_view(const struct bktx *x, struct rate_view *v)
{
	*v = x->b.v;
	snprintf(v->endpoint, sizeof v->endpoint, "%s", x->owner + 1);
	sums(&x->b, &v->requests, &v->tokens);
	v->waiting = x->b.nq;
}

static int
transition(const char *name, enum bkt_op op, const struct bkt_args *a,
    time_t now, struct bktx *x, char *err)
{
	json_t *j;
	int r;

	memset(x, 0, sizeof *x);
	if (endpoint_limits(name, &x->rpm, &x->tpm, err) != 1)
		return -1;
	snprintf(x->owner, sizeof x->owner, "@%s", name);
	x->op = op;
	x->a = a;
	x->now = now;
	if (op != BKT_PEEK)
		return store_update(x->owner, BKTFILE, STATE_WHOLE, bktx_step,
		    x, err);
	if (store_get(x->owner, BKTFILE, &j, err) == -1)
		return -1;
	r = parse_bucket(x->owner, j, &x->b, err);
	json_decref(j);
	if (r == 0) {
		x->b.v.rpm = x->rpm;
		x->b.v.tpm = x->tpm;
		bucket_step(&x->b, BKT_PEEK, a, now, NULL);
		x->b.v.ahead = a != NULL && a->who != NULL ? place(&x->b,
		    a->who) : 0;
	}
	return r;
}

/*
 * Take one request of endpoint name at now for the first request of
 * who's wake: *until is 0 when it is granted, else when its turn will
 * be (the request is not sent; who keeps its place in line); v, if not
 * NULL, gets the bucket after.
 */
static int
bucket_take(const char *name, const char *who, time_t now, time_t *until,
    struct rate_view *v, char *err)
{
	struct bkt_args a = { 0, 0, 0, who };
	struct bktx x;

	if (transition(name, BKT_TAKE, &a, now, &x, err) == -1)
		return -1;
	*until = x.until;
	if (v != NULL)
		to_view(&x, v);
	return 0;
}

/* Hand back a request taken at `at' and never sent. */
int
bucket_give(const char *name, time_t at, time_t now, char *err)
{
	struct bkt_args a = { 0, 0, at, NULL };
	struct bktx x;

	return transition(name, BKT_GIVE, &a, now, &x, err);
}

/* A reply's tokens, counted against the endpoint's tokens a minute. */
static int
bucket_record(const char *name, long long tokens, time_t now, char *err)
{
	struct bkt_args a = { tokens, 0, 0, NULL };
	struct bktx x;
	long long rpm, tpm;
	int r;

	if ((r = endpoint_limits(name, &rpm, &tpm, err)) == -1)
		return -1;
	if (tokens <= 0 || r == 0 || tpm == 0)
		return 0;
	return transition(name, BKT_RECORD, &a, now, &x, err);
}

/* The provider answered 429: no request to the endpoint before hold
 * (its Retry-After; 0: none given, a minute). */
static int
bucket_slow(const char *name, time_t hold, time_t now, char *err)
{
	struct bkt_args a = { 0, hold, 0, NULL };
	struct bktx x;

	return transition(name, BKT_SLOW, &a, now, &x, err);
}

/* The bucket of endpoint name as it stands at now, with who's place
 * in line (who may be NULL); nothing changes. */
int
bucket_peek(const char *name, const char *who, time_t now,
    struct rate_view *v, char *err)
{
	struct bkt_args a = { 0, 0, 0, who };
	struct bktx x;

	if (transition(name, BKT_PEEK, &a, now, &x, err) == -1)
		return -1;
	to_view(&x, v);
	return 0;
}

/* v as JSON: what heart-cap status and heart-wake --explain show. */
json_t *
bucket_json(const struct rate_view *v, time_t now)
{
	json_t *o;
	char iso[32];

	o = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "endpoint",
	    v->endpoint, "requests", (json_int_t)v->requests,
	    "requests_per_minute", (json_int_t)v->rpm, "tokens",
	    (json_int_t)v->tokens, "tokens_per_minute", (json_int_t)v->tpm,
	    "throttled", (json_int_t)v->throttled, "429s",
	    (json_int_t)v->n429, "taken", (json_int_t)v->taken, "waiting",
	    (json_int_t)v->waiting);
	if (v->slow_until > now) {
		clock_utc(v->slow_until, iso, sizeof iso);
		json_object_set_new(o, "slow_until", json_string(iso));
	}
	return o;
}

/* The wakes in line before this one, said after a reason: "" if none. */
static void
before(const struct rate_view *v, char *buf, size_t n)
{
	if (v->ahead > 0)
		snprintf(buf, n, ", after the %lld wake%s deferred before it",
		    v->ahead, v->ahead > 1 ? "s" : "");
	else
		buf[0] = '\0';
}

/*
 * run.c's rate gate, after the breaker and before the cap: 1 when a
 * request of endpoint ep ("": none declared) is taken for who's wake
 * (*now: when), waiting for its turn while it comes by `wait' (a
 * round's wakes wait within the round's minute; 0: no wait); 0 when
 * the wake is throttled, in line (reason, and *next: when its turn
 * will be); -1 with err.
 */
int
bucket_gate(const char *ep, const char *who, time_t *now, time_t wait,
    time_t *next, char *reason, size_t rn, char *err)
{
	struct rate_view v;
	char at[40], after[64];

	if (ep[0] == '\0')
		return 1;
	for (;;) {
		if (bucket_take(ep, who, *now, next, &v, err) == -1)
			return -1;
		if (*next == 0)
			return 1;
		if (*next > wait)
			break;
		while ((*now = time(NULL)) < *next)
			sleep((unsigned int)(*next - *now));
	}
	clock_utc(*next, at, sizeof at);
	before(&v, after, sizeof after);
	if (v.slow_until > *now)
		snprintf(reason, rn, "endpoint %s: the provider answered 429 "
		    "(too many requests); no request before %s", ep, at);
	else if (v.rpm > 0 && v.requests >= v.rpm)
		snprintf(reason, rn, "endpoint %s: %lld of %lld requests a "
		    "minute used; deferred until %s%s", ep, v.requests, v.rpm,
		    at, after);
	else if (v.rpm > 0 && v.ahead >= v.rpm - v.requests)
		snprintf(reason, rn, "endpoint %s: %lld of %lld requests a "
		    "minute used, the rest kept for the %lld wake%s deferred "
		    "before this one; deferred until %s", ep, v.requests,
		    v.rpm, v.ahead, v.ahead > 1 ? "s" : "", at);
	else
		snprintf(reason, rn, "endpoint %s: %lld of %lld tokens a "
		    "minute used; deferred until %s", ep, v.tokens, v.tpm, at);
	return 0;
}

/*
 * Would the bucket v grant a request at now?  1, with why it does in
 * reason; 0 with why not.
 */
int
bucket_gate_ok(const struct rate_view *v, time_t now,
    char *reason, size_t rn)
{
	char at[40];

	if (v->slow_until > now) {
		clock_utc(v->slow_until, at, sizeof at);
		snprintf(reason, rn, "endpoint %s: the provider answered 429 "
		    "(too many requests); no request before %s", v->endpoint,
		    at);
		return 0;
	}
	if (v->rpm > 0 && v->requests >= v->rpm) {
		snprintf(reason, rn, "endpoint %s: %lld of %lld requests a "
		    "minute used", v->endpoint, v->requests, v->rpm);
		return 0;
	}
	if (v->rpm > 0 && v->ahead >= v->rpm - v->requests) {
		snprintf(reason, rn, "endpoint %s: %lld of %lld requests a "
		    "minute used, the rest kept for the %lld wake%s deferred "
		    "before this one", v->endpoint, v->requests, v->rpm,
		    v->ahead, v->ahead > 1 ? "s" : "");
		return 0;
	}
	if (v->tpm > 0 && v->tokens >= v->tpm) {
		snprintf(reason, rn, "endpoint %s: %lld of %lld tokens a "
		    "minute used", v->endpoint, v->tokens, v->tpm);
		return 0;
	}
	if (v->rpm > 0 && v->tpm > 0)
		snprintf(reason, rn, "endpoint %s: %lld of %lld requests, "
		    "%lld of %lld tokens a minute used", v->endpoint,
		    v->requests, v->rpm, v->tokens, v->tpm);
	else if (v->rpm > 0 || v->tpm > 0)
		snprintf(reason, rn, "endpoint %s: %lld of %lld %s a minute "
		    "used (no %s limit)", v->endpoint, v->rpm > 0 ?
		    v->requests : v->tokens, v->rpm > 0 ? v->rpm : v->tpm,
		    v->rpm > 0 ? "requests" : "tokens", v->rpm > 0 ? "token" :
		    "request");
	else
		snprintf(reason, rn, "endpoint %s: no limit set (%lld requests, "
		    "%lld tokens in the last minute)", v->endpoint, v->requests,
		    v->tokens);
	return 1;
}

/*
 * Take a request of endpoint ep, as op does (at: the second of the
 * take it moves), waiting for the budget at most `patience' seconds.
 * 1 when taken, 0 when it did not come in time (err says so), -1 with
 * err.
 */
static int
wait_for(const char *ep, enum bkt_op op, time_t at, long long patience,
    char *err)
{
	struct bkt_args a = { 0, 0, at, NULL };
	struct bktx x;
	time_t start = time(NULL), now = start, until;

	for (;;) {
		if (transition(ep, op, &a, now, &x, err) == -1)
			return -1;
		until = x.until;
		if (until == 0)
			return 1;
		if ((long long)(until - start) > patience) {
			errf(err, "endpoint %s: no request granted within %llds "
			    "(the fleet's rate limit): the wake ends here", ep,
			    patience);
			return 0;
		}
		while ((now = time(NULL)) < until)
			sleep((unsigned int)(until - now));
		op = BKT_TAKE;
	}
}

/*
 * A request of a wake goes now.  Its first, taken by bucket_gate in
 * second `taken', is counted in this second, not in the one of the
 * take: the provider counts it when it comes (the wake's own files
 * were written in between, seconds under load); when the take has
 * left the window meanwhile, a request is taken anew.  A later one
 * (taken 0: a tool call's answer) waits for the endpoint's budget.
 * Either waits at most `patience' seconds: 1 when taken, 0 when it did
 * not come in time (err says so), -1 with err.
 */
int
bucket_send(const char *ep, time_t taken, long long patience, char *err)
{
	if (ep[0] == '\0' || (taken != 0 && time(NULL) == taken))
		return 1;
	return wait_for(ep, taken != 0 ? BKT_MOVE : BKT_TAKE, taken,
	    patience, err);
}

/*
 * What a request's answer tells the endpoint's bucket: a 429 (status)
 * stops the endpoint until hold, a reply's tokens count.  Best effort:
 * the request went already, and the breaker and the cap still hold.
 */
void
bucket_after(const char *ep, long status, time_t hold, long long tokens,
    time_t now)
{
	char err[HEART_ERRLEN];

	if (ep[0] == '\0')
		return;
	if (status == 429)
		bucket_slow(ep, hold, now, err);
	else if (tokens > 0)
		bucket_record(ep, tokens, now, err);
}
