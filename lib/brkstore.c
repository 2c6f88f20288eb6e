/*
 * brkstore.c - the breaker in the store: each transition (brk.c's
 * brk_step) done on the document as read (brkjson.c) and written back
 * whole by store_update, under agents/ID/breaker.lock or by a
 * server's compare-and-set, and its events made once the write is
 * done.
 *
 * Invariants: readers need no lock; a probe is only granted by a write
 * that no other writer came between; a document that does not parse
 * is an error, never replaced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartstore.h"

#define KEEP	(30 * 86400LL)	/* a server keeps it after its last wait */

/* An outcome's flags: one LLM flag and one tool flag at most,
 * BRK_LLM_CONFIG only with BRK_LLM_FAIL, and BRK_TELL with others. */
static int
valid_flags(int f)
{
	return (f & ~BRK_TELL) != 0 && (f & ~(BRK_LLM_FAIL | BRK_TOOL_FAIL |
	    BRK_LLM_OK | BRK_TOOL_OK | BRK_LLM_CONFIG | BRK_TELL)) == 0 &&
	    (f & (BRK_LLM_OK | BRK_LLM_FAIL)) != (BRK_LLM_OK | BRK_LLM_FAIL) &&
	    (f & (BRK_TOOL_OK | BRK_TOOL_FAIL)) !=
	    (BRK_TOOL_OK | BRK_TOOL_FAIL) &&
	    (!(f & BRK_LLM_CONFIG) || (f & BRK_LLM_FAIL));
}

/* One transition in the store: what store_update asks brk_step. */
struct brkx {
	const char *agent;
	enum brk_op op;
	const struct brk_conf *given;
	time_t	 now;
	const struct brk_rec *rec;
	struct brk_who me;
	struct brk b;
	struct brk_out o;
};

static int
brkx_step(json_t *cur, json_t **next, long long *ttl, void *ctx, char *err)
{
	struct brkx *x = ctx;
	time_t go;

	if (brkjson_parse(x->agent, cur, &x->b, err) == -1)
		return -1;
	if (brk_step(&x->b, x->op, x->given, x->now, x->rec, &x->me, &x->o))
		*next = brkjson_of(x->agent, &x->b, x->now);
	go = brk_next_go(&x->b);
	*ttl = KEEP + (go > x->now ? go - x->now : 0);
	return 0;
}

/* Who we are, for a probe: this process on this host. */
static void
whoami(struct brk_who *me)
{
	static char host[64];

	if (host[0] == '\0' && (gethostname(host, sizeof host) == -1 ||
	    host[0] == '\0'))
		snprintf(host, sizeof host, "localhost");
	host[sizeof host - 1] = '\0';
	me->pid = getpid();
	me->host = host;
}

/* Read b (no write, no lock); -1 with err. */
static int
peek(const char *agent, struct brk *b, char *err)
{
	json_t *j;
	int r;

	if (store_get(agent, BRKFILE, &j, err) == -1)
		return -1;
	r = brkjson_parse(agent, j, b, err);
	json_decref(j);
	return r;
}

/* Do op in the store; its events appended to `events' once written. */
static int
transition(const char *agent, enum brk_op op, const struct brk_conf *given,
    time_t now, const struct brk_rec *rec, json_t *events, struct brkx *x,
    char *err)
{
	static const struct brk_rec none = { 0, 0, NULL };

	memset(x, 0, sizeof *x);
	x->agent = agent;
	x->op = op;
	x->given = given;
	x->now = now;
	x->rec = rec != NULL ? rec : &none;
	whoami(&x->me);
	if (store_update(agent, BRKFILE, STATE_SYNC, brkx_step, x,
	    err) == -1) {
		x->o.probe = 0;
		return -1;
	}
	brkjson_events(agent, &x->b, &x->o, events, now);
	return 0;
}

/*
 * May a wake go now?  *allowed = 1 when closed, or when this caller was
 * granted the half-open probe (then *probe = 1).  Transitions (open ->
 * half_open) are appended to `events' (a JSON array, may be NULL).
 */
int
brk_check(const char *agent, const struct brk_conf *conf, time_t now,
    int *allowed, int *probe, struct brk_view *vo, json_t *events,
    char *err)
{
	struct brkx x;

	*allowed = *probe = 0;
	memset(&x, 0, sizeof x);
	if (peek(agent, &x.b, err) == -1)
		return -1;
	/* the common case, closed: a read, no write */
	if (brk_check_writes(&x.b, now) && transition(agent, BRK_CHECK, conf,
	    now, NULL, events, &x, err) == -1)
		return -1;
	*probe = x.o.probe;
	*allowed = x.b.state == BRK_CLOSED || *probe;
	if (vo != NULL)
		brk_view_of(&x.b, conf, now, vo);
	return 0;
}

/*
 * Hand back a probe that was granted but not used (e.g. the cap then
 * refused the wake): the breaker stays half-open, a later caller may
 * probe.
 */
int
brk_giveback(const char *agent, time_t now, char *err)
{
	struct brkx x;

	if (peek(agent, &x.b, err) == -1)
		return -1;
	if (x.b.state != BRK_HALF_OPEN || x.b.probe_at == 0)
		return 0;
	return transition(agent, BRK_GIVEBACK, NULL, now, NULL, NULL, &x,
	    err);
}

/*
 * Feed an outcome (BRK_* flags) with a human reason (may be NULL); with
 * BRK_LLM_FAIL, a hold later than now keeps the breaker open at least
 * until then (a provider's Retry-After), opening it now if need be (0:
 * none); transitions are appended to `events'.
 */
int
brk_record(const char *agent, const struct brk_conf *conf, time_t now,
    int flags, time_t hold, const char *reason, json_t *events, char *err)
{
	struct brk_rec rec = { flags, hold, NULL };
	char why[256], *scrubbed;
	struct brkx x;

	if (!valid_flags(flags) || (hold > now && !(flags & BRK_LLM_FAIL))) {
		errf(err, "brk_record: bad outcome flags %#x", flags);
		return -1;
	}
	if (reason == NULL)
		reason = (flags & BRK_LLM_FAIL) ? "llm failure" :
		    "tool failure";
	/* no secret, on one line: it is shown and stored */
	scrubbed = secret_dup(reason);
	text_line(why, sizeof why, scrubbed, strlen(scrubbed));
	free(scrubbed);
	rec.reason = why;
	/*
	 * The common case, a success on a closed breaker with no failure
	 * counted: a read, no lock, no write.  brk_step is a function of
	 * what it is given, so an outcome that changes nothing in what
	 * was read is the transition at the moment of the read.
	 */
	if (peek(agent, &x.b, err) == -1)
		return -1;
	whoami(&x.me);
	if (!brk_step(&x.b, BRK_RECORD, conf, now, &rec, &x.me, &x.o))
		return 0;
	return transition(agent, BRK_RECORD, conf, now, &rec, events, &x,
	    err);
}

int
brk_peek(const char *agent, const struct brk_conf *conf, time_t now,
    struct brk_view *v, char *err)
{
	struct brk_out o;
	struct brk b;

	if (peek(agent, &b, err) == -1)
		return -1;
	brk_step(&b, BRK_PEEK, conf, now, NULL, NULL, &o);
	brk_view_of(&b, conf, now, v);
	return 0;
}

/* Close the breaker and clear both counts (an operator's hand). */
int
brk_reset(const char *agent, json_t *events, char *err)
{
	struct brkx x;

	if (peek(agent, &x.b, err) == -1)
		return -1;
	if (!x.b.exists)
		return 0;	/* never used: closed already */
	return transition(agent, BRK_RESET, NULL, time(NULL), NULL, events,
	    &x, err);
}
