/*
 * budget.c - the fleet's budget (heart(7), THE FLEET FILE: budget:),
 * dollars a day and a calendar month in one zone, spent by every agent
 * with a price together, on every host that shares the store; and the
 * last seven days' spend that the fleet's and each agent's counters
 * keep (struct week), and the forecast made of it.
 *
 * One document for the whole store, budget.json: a file in the state
 * directory, or the key heart:{*}:budget.json of a Redis store (store.c,
 * owner "*"):
 *
 *   {"v":1,"day":D,"zone":Z,"cost":$,"month":M,"month_cost":$,
 *    "since":D,"week":{D:{"cost":$,"top":$},...},"top":$,
 *    "wakes":{"ID":T,...},"updated":T}
 *
 * "wakes" are the wakes admitted and not yet recorded, one an agent (its
 * wake lock keeps its wakes apart): each counts as the costliest wake of
 * today and the seven days before ("top"), so that the spend passes the
 * budget by at most one wake's cost however many wakes run at once
 * (budget_step says how).  A wake not recorded within BUDGET_LEASE (its
 * process killed) counts no more.
 *
 * Invariants: the rule is budget_step's, a pure function of the
 * document, the budget and "now"; the day and the month only move
 * forward, as cap.c's; the document is only changed through
 * store_update (under its flock, or by compare-and-set).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

#define BUDGETDOC	"budget.json"
#define OWNER		"*"		/* the store's own (store.c) */
#define KEEP		(62 * 86400LL)	/* a server keeps it, s */

/* The days since 1970-01-01 of "YYYY-MM-DD"; -1 if it is not one. */
static long
days_of(const char *s)
{
	int y, m, d;
	long era, yoe, doy;

	if (s == NULL || strlen(s) != 10 || sscanf(s, "%4d-%2d-%2d", &y, &m,
	    &d) != 3 || m < 1 || m > 12 || d < 1 || d > 31)
		return -1;
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* Today (a day that only moves forward) moved to `today': the day
 * left, with its spend and costliest wake, joins the week, and days
 * more than seven before today leave it. */
void
week_roll(struct week *w, const char *left, long long cost,
    const char *today)
{
	long t = days_of(today);
	int i, n = 0;

	if (w->since[0] == '\0')
		snprintf(w->since, sizeof w->since, "%s", left[0] ? left :
		    today);
	if (left[0] != '\0' && (cost > 0 || w->top > 0) &&
	    days_of(left) < t) {
		for (i = w->n < WEEK_DAYS ? w->n : WEEK_DAYS - 1; i > 0; i--)
			w->d[i] = w->d[i - 1];
		snprintf(w->d[0].day, sizeof w->d[0].day, "%s", left);
		w->d[0].cost = cost;
		w->d[0].top = w->top;
		w->n += w->n < WEEK_DAYS;
	}
	for (i = 0; i < w->n; i++)
		if (t - days_of(w->d[i].day) <= WEEK_DAYS)
			w->d[n++] = w->d[i];
	w->n = n;
	w->top = 0;
}

/* The costliest wake of today and the week. */
static long long
week_top(const struct week *w)
{
	long long top = w->top;
	int i;

	for (i = 0; i < w->n; i++)
		if (w->d[i].top > top)
			top = w->d[i].top;
	return top;
}

/* "since" and "week" of a stored counter into w: -1 if they are not
 * sound; a counter kept before them has none (nothing known). */
int
week_parse(const json_t *j, struct week *w)
{
	json_t *since = json_object_get(j, "since");
	json_t *wk = json_object_get(j, "week"), *d, *top;
	const char *day;

	memset(w, 0, sizeof *w);
	if (since != NULL && (!json_is_string(since) ||
	    days_of(json_string_value(since)) < 0))
		return -1;
	if (since != NULL)
		snprintf(w->since, sizeof w->since, "%s",
		    json_string_value(since));
	top = json_object_get(j, "top");
	if (top != NULL && (w->top = price_nano(top)) < 0)
		return -1;
	if (wk == NULL)
		return 0;
	if (!json_is_object(wk) || json_object_size(wk) > WEEK_DAYS)
		return -1;
	json_object_foreach((json_t *)wk, day, d) {
		if (days_of(day) < 0 || !json_is_object(d) ||
		    (w->d[w->n].cost = price_nano(json_object_get(d,
		    "cost"))) < 0 || (w->d[w->n].top =
		    price_nano(json_object_get(d, "top"))) < 0)
			return -1;
		snprintf(w->d[w->n].day, sizeof w->d[w->n].day, "%s", day);
		w->n++;
	}
	return 0;
}

/* w's "since", "week" and "top" set in j. */
void
week_json(const struct week *w, json_t *j)
{
	json_t *wk = json_object();
	int i;

	for (i = w->n - 1; i >= 0; i--)
		json_object_set_new(wk, w->d[i].day, json_pack("{s:o,s:o}",
		    "cost", price_json(w->d[i].cost), "top",
		    price_json(w->d[i].top)));
	if (w->since[0] != '\0')	/* none: an older counter's, unknown */
		json_object_set_new(j, "since", json_string(w->since));
	json_object_set_new(j, "week", wk);
	json_object_set_new(j, "top", price_json(w->top));
}

/* The first local midnight of a month after today's, in zone. */
static time_t
month_end(const char *zone, const char *today, time_t now)
{
	return clock_after(zone, today, 7, now);
}

/*
 * The forecast of a counter whose day is `today' in zone, with cost
 * spent today and month_cost this month, against the budgets daily and
 * monthly (-1: none).  The rate is the mean spend a day of the seven
 * days before today that the counter knows: those from its `since' on,
 * a day with no spend kept counting as $0 (no wake, or none priced);
 * none known: no forecast.  At that rate, spread evenly over 24 hours
 * from now, the time today's spend reaches the daily budget, if it is
 * before the next local midnight, and the month's the monthly budget,
 * if before the month's end (now, for one already reached).
 */
void
budget_forecast(const struct week *w, const char *zone, const char *today,
    long long cost, long long month_cost, long long daily, long long monthly,
    time_t now, struct forecast *f)
{
	long t = days_of(today), s = days_of(w->since), ago;
	long double sum = 0;
	int i;

	memset(f, 0, sizeof *f);
	if (t < 0 || s < 0 || s >= t)
		return;
	f->days = t - s < WEEK_DAYS ? (int)(t - s) : WEEK_DAYS;
	for (i = 0; i < w->n; i++)
		if ((ago = t - days_of(w->d[i].day)) >= 1 && ago <= f->days)
			sum += w->d[i].cost;
	f->rate = (long long)(sum / f->days + 0.5);
	if (daily >= 0 && cost >= daily)
		f->daily_at = now;
	else if (daily >= 0 && f->rate > 0 && now + (long double)(daily -
	    cost) * 86400 / f->rate < clock_next_midnight(zone, now))
		f->daily_at = now + (time_t)((long double)(daily - cost) *
		    86400 / f->rate + 0.999);
	if (monthly >= 0 && month_cost >= monthly)
		f->monthly_at = now;
	else if (monthly >= 0 && f->rate > 0 && now + (long double)(monthly -
	    month_cost) * 86400 / f->rate < month_end(zone, today, now))
		f->monthly_at = now + (time_t)((long double)(monthly -
		    month_cost) * 86400 / f->rate + 0.999);
	if (f->monthly_at != 0)
		clock_day(zone, f->monthly_at, f->monthly_on,
		    sizeof f->monthly_on);
}

/* The forecast's fields of a status object: "rate" (dollars a day; null:
 * no forecast), "rate_days", "budget_at", "monthly_budget_on". */
json_t *
budget_forecast_json(const struct forecast *f)
{
	char at[40];

	clock_utc(f->daily_at, at, sizeof at);
	return json_pack("{s:o,s:i,s:o,s:o}", "rate", f->days ?
	    price_json(f->rate) : json_null(), "rate_days", f->days,
	    "budget_at", f->daily_at ? json_string(at) : json_null(),
	    "monthly_budget_on", f->monthly_on[0] ?
	    json_string(f->monthly_on) : json_null());
}

/* The agent's wake in flight, dropped. */
static int
drop(struct budget *b, const char *agent)
{
	int i;

	for (i = 0; i < b->nw; i++)
		if (strcmp(b->w[i].agent, agent) == 0) {
			b->w[i] = b->w[--b->nw];
			return 1;
		}
	return 0;
}

/* b moved to the local date of now in the budget's zone, only forward;
 * wakes in flight past their lease dropped.  1: b changed. */
static int
roll(struct budget *b, const struct fleet_budget *fb, time_t now)
{
	char today[16];
	int i, changed = 0;

	if (strcmp(b->v.zone, fb->zone) != 0) {
		snprintf(b->v.zone, sizeof b->v.zone, "%s", fb->zone);
		changed = 1;
	}
	clock_day(b->v.zone, now, today, sizeof today);
	if (strcmp(today, b->v.day) > 0) {
		week_roll(&b->v.week, b->v.day, b->v.cost, today);
		b->v.cost = 0;
		snprintf(b->v.day, sizeof b->v.day, "%s", today);
		changed = 1;
	}
	if (strncmp(b->v.day, b->v.month, 7) > 0) {
		snprintf(b->v.month, sizeof b->v.month, "%.7s", b->v.day);
		b->v.month_cost = 0;
		changed = 1;
	}
	for (i = 0; i < b->nw; i++)
		if (b->w[i].at + BUDGET_LEASE <= now ||
		    b->w[i].at > now + BUDGET_LEASE) {
			b->w[i--] = b->w[--b->nw];
			changed = 1;
		}
	b->v.inflight = b->nw;
	return changed;
}

/* Is the budget reached, by the day's spend or the month's? */
int
budget_spent(const struct budget_view *v)
{
	return (v->fb.daily >= 0 && v->cost >= v->fb.daily) ||
	    (v->fb.monthly >= 0 && v->month_cost >= v->fb.monthly);
}

/* Would n wakes in flight, each at top, reach a budget from v's spend? */
static int
crowded(const struct budget_view *v, int n, long long top)
{
	long double r = (long double)n * top;

	if (n == 0)
		return 0;
	return top == 0 || (v->fb.daily >= 0 && v->cost + r >= v->fb.daily) ||
	    (v->fb.monthly >= 0 && v->month_cost + r >= v->fb.monthly);
}

/*
 * One transition of the fleet's budget b under fb, rolled to now first.
 * take admits the agent's wake (*verdict BUDGET_ADMIT) while neither
 * the day's spend nor the month's has reached its budget (else
 * BUDGET_REACHED) and the wakes already in flight, each counted at the
 * costliest wake of today and the seven days before, could not reach
 * it either (else BUDGET_CROWDED; with no wake's cost known yet, only
 * while none is in flight): each wake admitted was admitted below the
 * budget with every other's cost counted, so the spend passes it by one
 * wake's cost at most, as long as no wake costs more than that.  give
 * drops the agent's wake in flight; record drops it and adds its cost.
 * peek only rolls.  Returns 1 when b is to be written back.
 */
int
budget_step(struct budget *b, enum budget_op op, const char *agent,
    long long cost, const struct fleet_budget *fb, time_t now, int *verdict)
{
	int changed;

	b->v.fb = *fb;
	changed = roll(b, fb, now);
	if (verdict != NULL)
		*verdict = BUDGET_ADMIT;
	switch (op) {
	case BUDGET_TAKE:
		changed |= drop(b, agent);	/* its last, ended unrecorded */
		if (budget_spent(&b->v))
			*verdict = BUDGET_REACHED;
		else if (b->nw >= BUDGET_WAKES || crowded(&b->v, b->nw,
		    week_top(&b->v.week)))
			*verdict = BUDGET_CROWDED;
		else {
			snprintf(b->w[b->nw].agent, sizeof b->w[b->nw].agent,
			    "%s", agent);
			b->w[b->nw++].at = now;
			changed = 1;
		}
		break;
	case BUDGET_GIVE:
		changed |= drop(b, agent);
		break;
	case BUDGET_RECORD:
		changed |= drop(b, agent);
		if (cost > 0) {
			b->v.cost += cost;
			b->v.month_cost += cost;
			if (cost > b->v.week.top)
				b->v.week.top = cost;
			changed = 1;
		}
		break;
	case BUDGET_PEEK:
		break;
	}
	b->v.inflight = b->nw;
	return changed;
}

static int
parse_wakes(json_t *j, struct budget *b)
{
	const char *agent;
	json_t *t;

	if (j == NULL)
		return 0;
	if (!json_is_object(j) || json_object_size(j) > BUDGET_WAKES)
		return -1;
	json_object_foreach(j, agent, t) {
		if (!id_valid(agent) || !json_is_string(t) ||
		    clock_parse_utc(json_string_value(t), &b->w[b->nw].at) ==
		    -1)
			return -1;
		snprintf(b->w[b->nw].agent, sizeof b->w[b->nw].agent, "%s",
		    agent);
		b->nw++;
	}
	return 0;
}

/* b from the stored document (NULL: none); -1 with err if unsound. */
static int
parse_budget(json_t *j, struct budget *b, char *err)
{
	json_t *day, *zone, *month;
	const char *bad = NULL;

	memset(b, 0, sizeof *b);
	if (j == NULL)
		return 0;
	day = json_object_get(j, "day");
	zone = json_object_get(j, "zone");
	month = json_object_get(j, "month");
	if (!json_is_string(day) || days_of(json_string_value(day)) < 0)
		bad = "day";
	else if (!json_is_string(zone) || json_string_length(zone) >=
	    sizeof b->v.zone)
		bad = "zone";
	else if (!json_is_string(month) || json_string_length(month) != 7)
		bad = "month";
	else if ((b->v.cost = price_nano(json_object_get(j, "cost"))) < 0)
		bad = "cost";
	else if ((b->v.month_cost = price_nano(json_object_get(j,
	    "month_cost"))) < 0)
		bad = "month_cost";
	else if (week_parse(j, &b->v.week) == -1)
		bad = "week";
	else if (parse_wakes(json_object_get(j, "wakes"), b) == -1)
		bad = "wakes";
	if (bad != NULL) {
		store_bad_field(OWNER, BUDGETDOC, bad, err);
		return -1;
	}
	snprintf(b->v.day, sizeof b->v.day, "%s", json_string_value(day));
	snprintf(b->v.zone, sizeof b->v.zone, "%s", json_string_value(zone));
	snprintf(b->v.month, sizeof b->v.month, "%s",
	    json_string_value(month));
	return 0;
}

static json_t *
budget_doc(const struct budget *b, time_t now)
{
	char ts[32];
	json_t *j, *w = json_object();
	int i;

	for (i = 0; i < b->nw; i++) {
		clock_utc(b->w[i].at, ts, sizeof ts);
		json_object_set_new(w, b->w[i].agent, json_string(ts));
	}
	clock_utc(now, ts, sizeof ts);
	j = json_pack("{s:i,s:s,s:s,s:o,s:s,s:o}", "v", 1, "day", b->v.day,
	    "zone", b->v.zone, "cost", price_json(b->v.cost), "month",
	    b->v.month, "month_cost", price_json(b->v.month_cost));
	week_json(&b->v.week, j);
	json_object_set_new(j, "wakes", w);
	json_object_set_new(j, "updated", json_string(ts));
	return j;
}

/* One transition in the store: what store_update asks budget_step. */
struct budgetx {
	enum budget_op op;
	const char *agent;
	long long cost;
	const struct fleet_budget *fb;
	time_t	 now;
	int	 verdict;
	struct budget b;
};

static int
budgetx_step(json_t *cur, json_t **next, long long *ttl, void *ctx,
    char *err)
{
	struct budgetx *x = ctx;

	if (parse_budget(cur, &x->b, err) == -1)
		return -1;
	if (budget_step(&x->b, x->op, x->agent, x->cost, x->fb, x->now,
	    &x->verdict))
		*next = budget_doc(&x->b, x->now);
	*ttl = KEEP;
	return 0;
}

/* A transition of the fleet's budget, when the fleet file sets one
 * (else *verdict BUDGET_ADMIT, nothing read); v, if not NULL, as it
 * stands after it. */
static int
transition(enum budget_op op, const char *agent, long long cost,
    time_t now, int *verdict, struct budget_view *v, char *err)
{
	struct fleet_budget fb;
	struct budgetx *x;
	int r = 0;

	if (verdict != NULL)
		*verdict = BUDGET_ADMIT;
	if (v != NULL)
		memset(v, 0, sizeof *v);
	if (endpoint_budget(&fb, err) == -1)
		return -1;
	if (!fb.set)
		return 0;
	x = xcalloc(1, sizeof *x);
	x->op = op;
	x->agent = agent;
	x->cost = cost;
	x->fb = &fb;
	x->now = now;
	r = store_update(OWNER, BUDGETDOC, STATE_WHOLE, budgetx_step, x,
	    err);
	if (r == 0 && verdict != NULL)
		*verdict = x->verdict;
	if (r == 0 && v != NULL)
		*v = x->b.v;
	free(x);
	return r;
}

/* Admit the agent's wake by the fleet's budget (*verdict, v as it
 * stands; budget_step says the rule). */
int
budget_take(const char *agent, time_t now, int *verdict,
    struct budget_view *v, char *err)
{
	return transition(BUDGET_TAKE, agent, 0, now, verdict, v, err);
}

/* The agent's wake admitted, then refused by its own counter: handed
 * back. */
int
budget_give(const char *agent, time_t now, char *err)
{
	return transition(BUDGET_GIVE, agent, 0, now, NULL, NULL, err);
}

/* The agent's wake ended: its cost (nanodollars, -1: no price) added,
 * ghosts, triage and cached tokens included, and its place freed. */
int
budget_record(const char *agent, time_t now, long long cost, char *err)
{
	return transition(BUDGET_RECORD, agent, cost, now, NULL, NULL, err);
}

/* The fleet's budget after op by agent (peek or take), read and not
 * written back (v->fb.set 0: none). */
static int
peek_as(enum budget_op op, const char *agent, time_t now,
    struct budget_view *v, int *verdict, char *err)
{
	struct fleet_budget fb;
	struct budget *b;
	json_t *j;
	int r;

	memset(v, 0, sizeof *v);
	if (verdict != NULL)
		*verdict = BUDGET_ADMIT;
	if (endpoint_budget(&fb, err) == -1)
		return -1;
	v->fb = fb;
	if (!fb.set)
		return 0;
	if (store_get(OWNER, BUDGETDOC, &j, err) == -1)
		return -1;
	b = xcalloc(1, sizeof *b);
	if ((r = parse_budget(j, b, err)) == 0) {
		budget_step(b, op, agent, 0, &fb, now, verdict);
		*v = b->v;
	}
	json_decref(j);
	free(b);
	return r;
}

/* The fleet's budget as it stands, unchanged (v->fb.set 0: none). */
int
budget_peek(time_t now, struct budget_view *v, char *err)
{
	return peek_as(BUDGET_PEEK, "", now, v, NULL, err);
}

/* What budget_take of the agent's wake would say now (*verdict, v as
 * it would stand), changing nothing: --explain's budget gate. */
int
budget_admits(const char *agent, time_t now, int *verdict,
    struct budget_view *v, char *err)
{
	return peek_as(BUDGET_TAKE, agent, now, v, verdict, err);
}

/* When v's day ends: the local midnight after it in its zone (a day
 * kept ahead of the clock, set back, ends later). */
static time_t
day_end(const struct budget_view *v, time_t now)
{
	return clock_after(v->zone, v->day, 10, now);
}

/* Why a wake was refused by the fleet's budget v (verdict: reached or
 * crowded), and when it may be admitted: *at (0: never, a budget of
 * $0). */
void
budget_why_at(const struct budget_view *v, int verdict, time_t now,
    char *buf, size_t n, time_t *at)
{
	char reset[40], spent[32], budget[32], top[32];
	int month = v->fb.monthly >= 0 && v->month_cost >= v->fb.monthly;

	if (verdict == BUDGET_CROWDED) {
		*at = now + BUDGET_RETRY;
		clock_utc(*at, reset, sizeof reset);
		price_format(v->cost, spent, sizeof spent);
		if (week_top(&v->week) <= 0) {	/* one at a time */
			snprintf(buf, n, "fleet budget: %s spent today, and no "
			    "wake's cost known this week: wakes go one at a "
			    "time, and %d %s in flight; deferred until %s",
			    spent, v->inflight, v->inflight == 1 ? "is" :
			    "are", reset);
			return;
		}
		snprintf(buf, n, "fleet budget: %s spent today, and %d %s in "
		    "flight at %s each (the costliest of the last seven "
		    "days) could reach it; deferred until %s", spent,
		    v->inflight, v->inflight == 1 ? "wake" : "wakes",
		    price_format(week_top(&v->week), top, sizeof top), reset);
		return;
	}
	if ((month ? v->fb.monthly : v->fb.daily) == 0) {
		*at = 0;	/* $0 admits no wake, ever */
		snprintf(buf, n, "fleet %s budget $0.00 reached: %s's "
		    "budget.%s is $0.00, which admits no wake", month ?
		    "monthly" : "daily", endpoint_file(), month ? "monthly" :
		    "daily");
		return;
	}
	*at = month ? month_end(v->zone, v->day, now) : day_end(v, now);
	clock_utc(*at, reset, sizeof reset);
	snprintf(buf, n, "fleet %s budget %s reached: %s spent %s (%s, "
	    "budget:); resets at %s", month ? "monthly" : "daily",
	    price_format(month ? v->fb.monthly : v->fb.daily, budget,
	    sizeof budget), price_format(month ? v->month_cost : v->cost,
	    spent, sizeof spent), month ? "this month" : "today",
	    endpoint_file(), reset);
}

/* The fleet's status object: {"fleet": {...}}. */
json_t *
budget_json(const struct budget_view *v, time_t now)
{
	struct forecast f;
	char reset[40], mreset[40];
	json_t *j;

	clock_utc(day_end(v, now), reset, sizeof reset);
	clock_utc(month_end(v->zone, v->day, now), mreset, sizeof mreset);
	budget_forecast(&v->week, v->zone, v->day, v->cost, v->month_cost,
	    v->fb.daily, v->fb.monthly, now, &f);
	j = json_pack("{s:s,s:s,s:o,s:o,s:s,s:s,s:o,s:o,s:s,s:i}",
	    "day", v->day, "zone", v->zone, "cost", price_json(v->cost),
	    "budget", price_json(v->fb.daily), "resets_at", reset,
	    "month", v->month, "month_cost", price_json(v->month_cost),
	    "monthly_budget", price_json(v->fb.monthly),
	    "month_resets_at", mreset, "wakes_in_flight", v->inflight);
	json_object_update_new(j, budget_forecast_json(&f));
	return json_pack("{s:o}", "fleet", j);
}
