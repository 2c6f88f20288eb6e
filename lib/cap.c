/*
 * cap.c - the daily atomic counter (paper section 5), across processes.
 *
 * One counter per agent per local day, in agents/ID/cap.json.  The file
 * is only ever replaced by rename under agents/ID/cap.lock, so readers
 * need no lock and see a whole file.  The day only moves forward: a
 * clock set back never brings a fresh allowance.  total is always the
 * sum of the chamber counts.  The caps kept with the counts are those
 * of the last take given a soul's caps; a take without them (heart-cap
 * take AGENT) is judged by the caps kept, else the defaults, and never
 * changes them.
 *
 * The day's spend is counted too: each wake's cost (price.c), in
 * nanodollars, and the agent's daily_budget refuses a take once it is
 * reached, as the caps do; an agent with no price has no cost.  The
 * local month's spend is kept beside it ("month", "month_cost"), rolled
 * when the day rolls into a later month, and the monthly_budget refuses
 * a take the same way; a counter kept before it had a month reads as
 * nothing spent this month.  The seven days before today are kept too
 * ("since", "week": budget.c), for the forecast; a counter kept before
 * them knows none.
 *
 * The rules are cap_step's, a pure function; store_update reads,
 * decides with it and writes back, in whichever store is in force
 * (heartint.h): the file under its lock, or a server's key by
 * compare-and-set.
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"

#define CAPFILE	"cap.json"
#define KEEP	(62 * 86400LL)	/* a server keeps it after a change, s:
				   past any month, whose spend it keeps */
#define POS(n)	((n) > 0 ? (n) : 0)

/* The caps of an agent whose soul is not at hand. */
static void
cap_defaults(struct caps *c)
{
	c->chamber[CH_SCHEDULE] = DEF_SCHEDULE_CAP;
	c->chamber[CH_IDLE] = DEF_IDLE_CAP;
	c->agent = -1;
	c->budget = c->monthly = -1;
	c->priced = 0;
}

/* The caps of soul s; a NULL soul gives the defaults. */
void
cap_from_soul(const struct soul *s, struct caps *c)
{
	int i;

	if (s == NULL) {
		cap_defaults(c);
		return;
	}
	for (i = 0; i < CH_NCHAMBERS; i++)
		c->chamber[i] = s->ch[i].daily_cap;
	c->agent = s->daily_cap;
	c->budget = s->llm.price.set ? s->daily_budget : -1;
	c->monthly = s->llm.price.set ? s->monthly_budget : -1;
	c->priced = s->llm.price.set;
}

/* The shared total at which chamber ch stops being admitted. */
long long
cap_limit(const struct caps *c, enum chamber ch)
{
	long long l = c->chamber[ch];

	if (c->agent >= 0 && c->agent < l)
		l = c->agent;
	return l;
}

/*
 * Does the fleet's budget (the fleet file's budget:), reached, refuse a
 * take of agent (heart-cap take)?  Only an agent with a price is: its
 * soul s says so, else the caps kept.  1 refused, why (n bytes) saying
 * so; 0 not; -1 the store failed, -2 the fleet file did (err).
 */
int
cap_fleet_refuses(const char *agent, const struct soul *s, time_t now,
    char *why, size_t n, char *err)
{
	struct budget_view b;
	struct cap_view v;
	time_t at;

	if (endpoint_budget(&b.fb, err) == -1)
		return -2;
	if (!b.fb.set)
		return 0;
	if (budget_peek(now, &b, err) == -1)
		return -1;
	if (!budget_spent(&b))
		return 0;
	if (s != NULL)
		cap_from_soul(s, &v.caps);
	else if (cap_peek(agent, NULL, now, &v, err) == -1)
		return -1;
	if (!v.caps.priced)
		return 0;
	budget_why_at(&b, BUDGET_REACHED, now, why, n, &at);
	return 1;
}

/* Whether v's spend is below c's budgets, the day's and the month's. */
int
cap_spend_ok(const struct cap_view *v, const struct caps *c)
{
	return (c->budget < 0 || v->cost < c->budget) &&
	    (c->monthly < 0 || v->month_cost < c->monthly);
}

/* The most the total can reach today through any chamber. */
long long
cap_agent_limit(const struct caps *c)
{
	long long l = 0, x;
	int i;

	for (i = 0; i < CH_NCHAMBERS; i++)
		if ((x = cap_limit(c, (enum chamber)i)) > l)
			l = x;
	return l;
}

/* A usage object of cap.json ({"prompt", "completion", "cached",
 * "cache_write"}; NULL: zeros) into u; -1 if it is not one. */
static int
get_usage(json_t *o, struct usage *u)
{
	memset(u, 0, sizeof *u);
	if (o == NULL)
		return 0;
	return !json_is_object(o) || state_count(o, "prompt", &u->prompt) ==
	    -1 || state_count(o, "completion", &u->completion) == -1 ||
	    state_count(o, "cached", &u->cached) == -1 ||
	    state_count(o, "cache_write", &u->cache_write) == -1 ? -1 : 0;
}

static json_t *
usage_json(const struct usage *u)
{
	return json_pack("{s:I,s:I,s:I,s:I}", "prompt", (json_int_t)u->prompt,
	    "completion", (json_int_t)u->completion,
	    "cached", (json_int_t)u->cached,
	    "cache_write", (json_int_t)u->cache_write);
}

static void
usage_add(struct usage *to, const struct usage *u)
{
	if (u == NULL)
		return;
	to->prompt += POS(u->prompt);
	to->completion += POS(u->completion);
	to->cached += POS(u->cached);
	to->cache_write += POS(u->cache_write);
}

static int
parse_caps(json_t *j, struct cap_view *v)
{
	json_t *a;
	int i;

	cap_defaults(&v->caps);
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_object(j))
		return -1;
	for (i = 0; i < CH_NCHAMBERS; i++)
		if (state_count(j, soul_chamber_name((enum chamber)i),
		    &v->caps.chamber[i]) == -1)
			return -1;
	a = json_object_get(j, "agent");
	if (a != NULL && !json_is_null(a) && state_count(j, "agent",
	    &v->caps.agent) == -1)
		return -1;
	a = json_object_get(j, "budget");
	if (a != NULL && !json_is_null(a) && (v->caps.budget =
	    price_nano(a)) < 0)
		return -1;
	a = json_object_get(j, "monthly");
	if (a != NULL && !json_is_null(a) && (v->caps.monthly =
	    price_nano(a)) < 0)
		return -1;
	a = json_object_get(j, "priced");
	if (a != NULL && !json_is_boolean(a))
		return -1;
	v->caps.priced = json_is_true(a);
	v->have_caps = 1;
	return 0;
}

/* Fill v from the stored JSON (NULL: none); -1 (with err) if it is
 * not a counter. */
static int
parse_view(const char *agent, json_t *j, struct cap_view *v, char *err)
{
	json_t *ch, *day, *zone, *cost, *month, *mcost;
	const char *bad = NULL;
	int i;

	memset(v, 0, sizeof *v);
	cap_defaults(&v->caps);
	if (j == NULL)
		return 0;
	day = json_object_get(j, "day");
	zone = json_object_get(j, "zone");
	ch = json_object_get(j, "chambers");
	cost = json_object_get(j, "cost");
	month = json_object_get(j, "month");
	mcost = json_object_get(j, "month_cost");
	if (!json_is_string(day) || strlen(json_string_value(day)) != 10)
		bad = "day";
	else if (zone != NULL && !json_is_string(zone))
		bad = "zone";
	else if (!json_is_object(ch))
		bad = "chambers";
	else if (state_count(j, "total", &v->total) == -1)
		bad = "total";
	else if (state_count(j, "ghosts", &v->ghosts) == -1)
		bad = "ghosts";
	else if (get_usage(json_object_get(j, "tokens"), &v->tok) == -1)
		bad = "tokens";
	else if (get_usage(json_object_get(j, "triage_tokens"),
	    &v->triage) == -1)
		bad = "triage_tokens";
	else if (cost != NULL && (v->cost = price_nano(cost)) < 0)
		bad = "cost";
	else if (month != NULL && (!json_is_string(month) ||
	    strlen(json_string_value(month)) != 7))
		bad = "month";
	else if (mcost != NULL && (month == NULL ||
	    (v->month_cost = price_nano(mcost)) < 0))
		bad = "month_cost";
	else if (parse_caps(json_object_get(j, "caps"), v) == -1)
		bad = "caps";
	else if (week_parse(j, &v->week) == -1)
		bad = "week";
	for (i = 0; bad == NULL && i < CH_NCHAMBERS; i++)
		if (state_count(ch, soul_chamber_name((enum chamber)i),
		    &v->used[i]) == -1)
			bad = "chambers";
	if (bad != NULL) {
		store_bad_field(agent, CAPFILE, bad, err);
		return -1;
	}
	snprintf(v->day, sizeof v->day, "%s", json_string_value(day));
	if (zone != NULL)
		snprintf(v->zone, sizeof v->zone, "%s",
		    json_string_value(zone));
	if (month != NULL)
		snprintf(v->month, sizeof v->month, "%s",
		    json_string_value(month));
	return 0;
}

/*
 * Move v to the local date of `now' in zone (or the stored zone, or
 * the machine's), only ever forward, and its month to that date's
 * (the month's spend starts again).  Returns 1 when v changed.
 */
static int
roll(struct cap_view *v, const char *zone, time_t now)
{
	char today[16];
	int changed = 0;

	if (zone == NULL)
		zone = v->zone[0] ? v->zone : clock_tz_local();
	if (strcmp(zone, v->zone) != 0) {
		snprintf(v->zone, sizeof v->zone, "%s", zone);
		changed = 1;
	}
	clock_day(v->zone, now, today, sizeof today);
	if (strcmp(today, v->day) > 0) {
		struct caps keep = v->caps;
		int have = v->have_caps;

		week_roll(&v->week, v->day, v->cost, today);
		memset(v->used, 0, sizeof v->used);
		v->total = v->ghosts = 0;
		memset(&v->tok, 0, sizeof v->tok);
		memset(&v->triage, 0, sizeof v->triage);
		v->cost = 0;
		v->caps = keep;
		v->have_caps = have;
		snprintf(v->day, sizeof v->day, "%s", today);
		changed = 1;
	}
	/* the month is the kept day's: a day kept ahead keeps its month;
	 * an old counter's, none, is filled in without a write of its own */
	if (strncmp(v->day, v->month, 7) > 0) {
		changed |= v->month[0] != '\0';
		snprintf(v->month, sizeof v->month, "%.7s", v->day);
		v->month_cost = 0;
	}
	return changed;
}

static json_t *
to_json(const char *agent, const struct cap_view *v, time_t now)
{
	char ts[32];
	json_t *caps;

	json_t *j;

	clock_utc(now, ts, sizeof ts);
	caps = !v->have_caps ? json_null() : json_pack("{s:I,s:I,s:o}",
	    "schedule", (json_int_t)v->caps.chamber[CH_SCHEDULE],
	    "idle", (json_int_t)v->caps.chamber[CH_IDLE],
	    "agent", v->caps.agent < 0 ? json_null() :
	    json_integer(v->caps.agent));
	if (v->have_caps && v->caps.budget >= 0)
		json_object_set_new(caps, "budget",
		    price_json(v->caps.budget));
	if (v->have_caps && v->caps.monthly >= 0)
		json_object_set_new(caps, "monthly",
		    price_json(v->caps.monthly));
	if (v->have_caps && v->caps.priced)
		json_object_set_new(caps, "priced", json_true());
	j = json_pack("{s:i,s:s,s:s,s:s,s:I,s:{s:I,s:I},s:I,"
	    "s:o,s:o,s:o,s:s,s:o,s:o,s:s}",
	    "v", 1, "agent", agent, "day", v->day, "zone", v->zone,
	    "total", (json_int_t)v->total,
	    "chambers", "schedule", (json_int_t)v->used[CH_SCHEDULE],
	    "idle", (json_int_t)v->used[CH_IDLE],
	    "ghosts", (json_int_t)v->ghosts,
	    "tokens", usage_json(&v->tok),
	    "triage_tokens", usage_json(&v->triage),
	    "cost", price_json(v->cost), "month", v->month,
	    "month_cost", price_json(v->month_cost), "caps", caps,
	    "updated", ts);
	week_json(&v->week, j);
	return j;
}

/*
 * One transition of the counter v, rolled to the day of `now' first:
 * take admits one wake of chamber a->ch (*admitted) when the shared
 * total is below the chamber's cap and the agent-wide cap, and the
 * day's cost below the budget and the month's below the monthly
 * budget (if any); a->caps
 * (the soul's) are kept with the counts, NULL judges by the caps kept
 * (else the defaults) and leaves them; a->chcap >= 0 is this take's
 * cap of the chamber instead, never kept.
 * record adds a wake's ghost flag, tokens and cost; reset zeroes the
 * day;
 * peek only rolls.  Returns 1 when v is to be written back.
 */
int
cap_step(struct cap_view *v, enum cap_op op, const struct cap_args *a,
    const char *zone, time_t now, int *admitted)
{
	int changed = roll(v, zone, now);
	struct caps in;

	if (admitted != NULL)
		*admitted = 0;
	switch (op) {
	case CAP_TAKE:
		if (a->caps != NULL && (memcmp(&v->caps, a->caps,
		    sizeof *a->caps) != 0 || !v->have_caps)) {
			v->caps = *a->caps;
			v->have_caps = 1;
			changed = 1;
		}
		in = v->caps;
		if (a->chcap >= 0)
			in.chamber[a->ch] = a->chcap;
		if (v->total < cap_limit(&in, a->ch) &&
		    cap_spend_ok(v, &in)) {
			v->used[a->ch]++;
			v->total++;
			*admitted = changed = 1;
		}
		return changed;
	case CAP_RECORD:
		v->ghosts += a->ghost != 0;
		usage_add(&v->tok, a->u);
		usage_add(&v->triage, a->tu);
		v->cost += POS(a->cost);
		v->month_cost += POS(a->cost);
		if (a->cost > v->week.top)
			v->week.top = a->cost;
		return 1;
	case CAP_RESET:
		memset(v->used, 0, sizeof v->used);
		v->total = v->ghosts = v->cost = 0;
		memset(&v->tok, 0, sizeof v->tok);
		memset(&v->triage, 0, sizeof v->triage);
		return 1;
	case CAP_PEEK:
		break;
	}
	return 0;
}

/* One transition in the store: what store_update asks cap_step. */
struct capx {
	const char *agent, *zone;
	time_t	 now;
	enum cap_op op;
	const struct cap_args *a;
	int	 admitted;
	struct cap_view v;
};

static int
capx_step(json_t *cur, json_t **next, long long *ttl, void *ctx, char *err)
{
	struct capx *x = ctx;

	if (parse_view(x->agent, cur, &x->v, err) == -1)
		return -1;
	if (cap_step(&x->v, x->op, x->a, x->zone, x->now, &x->admitted))
		*next = to_json(x->agent, &x->v, x->now);
	*ttl = KEEP;
	return 0;
}

static int
transition(const char *agent, enum cap_op op, const struct cap_args *a,
    const char *zone, time_t now, enum state_keep keep, struct capx *x,
    char *err)
{
	memset(x, 0, sizeof *x);
	x->agent = agent;
	x->zone = zone;
	x->now = now;
	x->op = op;
	x->a = a;
	return store_update(agent, CAPFILE, keep, capx_step, x, err);
}

/*
 * Admit one wake of chamber ch, atomically: *admitted is 1 when the
 * shared total was below the chamber's cap and the agent-wide cap.
 * caps: the soul's, kept with the counts; NULL: judge by the caps kept
 * (else the defaults) and leave them.  chcap >= 0 is this take's cap
 * of chamber ch instead, never kept.  vo->caps are the caps it was
 * judged by.  sync: durable before it returns; 0 only for a wake's,
 * whose claim's sync of the same directory follows before any request
 * (heart(7), State).
 */
int
cap_take(const char *agent, enum chamber ch, const struct caps *caps,
    long long chcap, const char *zone, time_t now, int sync, int *admitted,
    struct cap_view *vo, char *err)
{
	struct cap_args a = { ch, caps, chcap, 0, NULL, NULL, -1 };
	struct capx x;

	*admitted = 0;
	if (transition(agent, CAP_TAKE, &a, zone, now, sync ? STATE_SYNC :
	    STATE_WHOLE, &x, err) == -1)
		return -1;
	*admitted = x.admitted;
	if (chcap >= 0)
		x.v.caps.chamber[ch] = chcap;
	if (vo != NULL)
		*vo = x.v;
	return 0;
}

/* Add a wake's ghost flag, token usage of the main model (u) and of
 * the triage (tu; either may be NULL) and cost (nanodollars, both
 * models', -1: no price) to today's figures. */
int
cap_record(const char *agent, const char *zone, time_t now, int ghost,
    const struct usage *u, const struct usage *tu, long long cost,
    char *err)
{
	struct cap_args a = { CH_SCHEDULE, NULL, -1, ghost, u, tu, cost };
	struct capx x;

	if (transition(agent, CAP_RECORD, &a, zone, now, STATE_WHOLE, &x,
	    err) == -1)
		return -1;
	/* and the fleet's, with the same cost (budget.c), which holds no
	 * agent without a price */
	return cost < 0 ? 0 : budget_record(agent, now, cost, err);
}

/* Today's figures, without changing anything. */
int
cap_peek(const char *agent, const char *zone, time_t now,
    struct cap_view *v, char *err)
{
	json_t *j;
	int r;

	if (store_get(agent, CAPFILE, &j, err) == -1)
		return -1;
	r = parse_view(agent, j, v, err);
	json_decref(j);
	if (r == 0)
		cap_step(v, CAP_PEEK, NULL, zone, now, NULL);
	return r;
}

/* Zero today's counters (an operator's hand, or a test's). */
int
cap_reset(const char *agent, const char *zone, time_t now, char *err)
{
	struct capx x;

	return transition(agent, CAP_RESET, NULL, zone, now, STATE_SYNC, &x,
	    err);
}

/* When v's day ends: the local midnight after it, in its zone (a day
 * kept ahead of the clock, set back, ends later). */
time_t
cap_resets_at(const struct cap_view *v, time_t now)
{
	return clock_after(v->zone[0] ? v->zone : clock_tz_local(), v->day,
	    10, now);
}

/* When v's month ends: the first local midnight of a later month. */
static time_t
month_resets_at(const struct cap_view *v, time_t now)
{
	return clock_after(v->zone[0] ? v->zone : clock_tz_local(),
	    v->month[0] ? v->month : v->day, 7, now);
}

/* When a take refused by caps c may be admitted again: the month's
 * end once the monthly budget is reached, else the day's; 0 never (a
 * budget of $0). */
time_t
cap_open_at(const struct cap_view *v, const struct caps *c, time_t now)
{
	if (c->budget == 0 || c->monthly == 0)
		return 0;	/* a budget of $0 admits no wake, ever */
	if (c->monthly >= 0 && v->month_cost >= c->monthly)
		return month_resets_at(v, now);
	return cap_resets_at(v, now);
}

/* Today's cost in nanodollars; -1 (no price) for an agent that has
 * none and has spent nothing. */
long long
cap_cost(const struct cap_view *v)
{
	return v->caps.priced || v->cost > 0 ? v->cost : -1;
}

/*
 * Why a take of chamber ch was refused, as v stands after it: the
 * chamber's cap, the agent-wide cap (heart.daily_cap, when it is below
 * the chamber's: named as the agent's, never as the chamber's), the
 * monthly budget or the daily one, and when it resets.  Returns 1 when
 * a budget refused it.
 */
int
cap_why(const struct cap_view *v, enum chamber ch, time_t now, char *buf,
    size_t n)
{
	char reset[40], spent[32], budget[32];

	if (v->caps.monthly == 0 || v->caps.budget == 0) {
		snprintf(buf, n, v->caps.monthly == 0 ? "monthly budget $0.00 "
		    "reached: heart.monthly_budget is $0.00, which admits no "
		    "wake, this month or any" : "daily budget reached: "
		    "heart.daily_budget is $0.00, which admits no wake, today "
		    "or any day");
		return 1;
	}
	if (v->caps.monthly >= 0 && v->month_cost >= v->caps.monthly) {
		clock_utc(month_resets_at(v, now), reset, sizeof reset);
		snprintf(buf, n, "monthly budget %s reached: %s spent this "
		    "month (heart.monthly_budget); resets at %s",
		    price_format(v->caps.monthly, budget, sizeof budget),
		    price_format(v->month_cost, spent, sizeof spent), reset);
		return 1;
	}
	clock_utc(cap_resets_at(v, now), reset, sizeof reset);
	if (v->total < cap_limit(&v->caps, ch) && v->caps.budget >= 0 &&
	    v->cost >= v->caps.budget) {
		snprintf(buf, n, "daily budget reached: %s of %s spent today; "
		    "resets at %s", price_format(v->cost, spent,
		    sizeof spent), price_format(v->caps.budget, budget,
		    sizeof budget), reset);
		return 1;
	}
	if (v->caps.agent >= 0 && v->caps.agent < v->caps.chamber[ch])
		snprintf(buf, n, "agent: daily cap reached: %lld of %lld "
		    "today, every chamber's wakes together (heart.daily_cap; "
		    "the %s chamber's own is %lld); resets at %s", v->total,
		    v->caps.agent, soul_chamber_name(ch), v->caps.chamber[ch],
		    reset);
	else
		snprintf(buf, n, "%s: daily cap reached: %lld of %lld today; "
		    "resets at %s", soul_chamber_name(ch), v->total,
		    cap_limit(&v->caps, ch), reset);
	return 0;
}

/* Where v's spend goes at the last seven days' mean (budget.c). */
void
cap_forecast(const struct cap_view *v, time_t now, struct forecast *f)
{
	budget_forecast(&v->week, v->zone[0] ? v->zone : clock_tz_local(),
	    v->day, v->cost, v->month_cost, v->caps.budget, v->caps.monthly,
	    now, f);
}

/* The status object heart-cap prints, one per agent. */
json_t *
cap_json(const char *agent, const struct cap_view *v, time_t now)
{
	char reset[40];
	long long limit = cap_agent_limit(&v->caps);
	struct forecast f;
	json_t *ch, *j;
	int i;

	clock_utc(cap_resets_at(v, now), reset, sizeof reset);
	ch = json_object();
	for (i = 0; i < CH_NCHAMBERS; i++)
		json_object_set_new(ch, soul_chamber_name((enum chamber)i),
		    json_pack("{s:I,s:I}", "used", (json_int_t)v->used[i],
		    "cap", (json_int_t)cap_limit(&v->caps, (enum chamber)i)));
	j = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:o,s:I,s:o,s:o,"
	    "s:o,s:o,s:s,s:s,s:o,s:o}",
	    "agent", agent, "day", v->day, "zone", v->zone,
	    "used", (json_int_t)v->total, "cap", (json_int_t)limit,
	    "remaining", (json_int_t)(limit > v->total ? limit - v->total :
	    0), "chambers", ch, "ghosts", (json_int_t)v->ghosts,
	    "tokens", usage_json(&v->tok),
	    "triage_tokens", usage_json(&v->triage),
	    "cost", price_json(cap_cost(v)),
	    "budget", price_json(v->caps.budget), "resets_at", reset,
	    "month", v->month, "month_cost", price_json(v->caps.priced ||
	    v->month_cost > 0 ? v->month_cost : -1), "monthly_budget",
	    price_json(v->caps.monthly));
	cap_forecast(v, now, &f);
	json_object_update_new(j, budget_forecast_json(&f));
	return j;
}
