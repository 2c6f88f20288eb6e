/*
 * prom.c - the figures of `heart-cap status' (with the outboxes of
 * heart-ghost(1)) and `heart-breaker status' in Prometheus' text
 * exposition format, for node_exporter's textfile
 * collector, and the .prom file that carries them, replaced whole.
 *
 * Every series is a gauge; all the samples of a family come together
 * under one HELP and one TYPE line, as the format requires.  Agent ids
 * need no escaping in a label (id.c allows no quote or backslash).
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"

static void
family(FILE *fp, const char *name, const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* One sample: name{agent="AGENT"} x, with label="value" after the
 * agent's when label is not NULL. */
static void
sample(FILE *fp, const char *name, const char *agent, const char *label,
    const char *value, long long x)
{
	fprintf(fp, "%s{agent=\"%s\"", name, agent);
	if (label != NULL)
		fprintf(fp, ",%s=\"%s\"", label, value);
	fprintf(fp, "} %lld\n", x);
}

/* A dollar figure, the decimal it is (price_text). */
static void
dollars(FILE *fp, const char *name, const char *agent, long long nano)
{
	char d[32];

	fprintf(fp, "%s{agent=\"%s\"} %s\n", name, agent,
	    price_text(nano, 0, d, sizeof d));
}

/* A text written to fp, into *out when fp is closed. */
static FILE *
text_open(char **out, size_t *len)
{
	FILE *fp;

	*out = NULL;
	*len = 0;
	if ((fp = open_memstream(out, len)) == NULL)
		abort();
	return fp;
}

/* The cached tokens, and the day's spend and budget of the agents that
 * have them (no price: no sample, never 0). */
static void
money(FILE *fp, char *const *agent, const struct cap_view *v, size_t n)
{
	size_t i, nc = 0, nb = 0;

	for (i = 0; i < n; i++) {
		sample(fp, "heart_cap_tokens", agent[i], "kind", "cached",
		    v[i].tok.cached);
		sample(fp, "heart_cap_tokens", agent[i], "kind", "cache_write",
		    v[i].tok.cache_write);
	}
	family(fp, "heart_cap_triage_tokens", "Tokens spent today by the "
	    "triage model (llm.triage), apart from heart_cap_tokens.");
	for (i = 0; i < n; i++) {
		sample(fp, "heart_cap_triage_tokens", agent[i], "kind",
		    "prompt", v[i].triage.prompt);
		sample(fp, "heart_cap_triage_tokens", agent[i], "kind",
		    "completion", v[i].triage.completion);
	}
	for (i = 0; i < n; i++) {
		nc += cap_cost(&v[i]) >= 0;
		nb += v[i].caps.budget >= 0;
	}
	if (nc > 0)
		family(fp, "heart_cap_cost_dollars", "Dollars spent today at "
		    "the soul's llm.price, ghosts included.");
	for (i = 0; i < n; i++)
		if (cap_cost(&v[i]) >= 0)
			dollars(fp, "heart_cap_cost_dollars", agent[i],
			    v[i].cost);
	if (nb > 0)
		family(fp, "heart_cap_budget_dollars", "The daily_budget: no "
		    "wake is admitted once the day's cost reaches it.");
	for (i = 0; i < n; i++)
		if (v[i].caps.budget >= 0)
			dollars(fp, "heart_cap_budget_dollars", agent[i],
			    v[i].caps.budget);
	if (nc > 0)
		family(fp, "heart_cap_month_cost_dollars", "Dollars spent this "
		    "local calendar month at the soul's llm.price, ghosts "
		    "included.");
	for (i = 0; i < n; i++)
		if (cap_cost(&v[i]) >= 0)
			dollars(fp, "heart_cap_month_cost_dollars", agent[i],
			    v[i].month_cost);
	for (i = 0, nb = 0; i < n; i++)
		nb += v[i].caps.monthly >= 0;
	if (nb > 0)
		family(fp, "heart_cap_monthly_budget_dollars", "The "
		    "monthly_budget: no wake is admitted once the month's cost "
		    "reaches it.");
	for (i = 0; i < n; i++)
		if (v[i].caps.monthly >= 0)
			dollars(fp, "heart_cap_monthly_budget_dollars",
			    agent[i], v[i].caps.monthly);
}

/* The forecast of n agents' spend (budget.c): the last seven days'
 * mean, of those that know a day; when each budget is reached at it,
 * of those that reach it today, this month. */
static void
forecasts(FILE *fp, char *const *agent, const struct cap_view *v,
    size_t n, time_t now)
{
	static const char *const name[] = { "heart_cap_rate_dollars",
	    "heart_cap_budget_reached_timestamp_seconds",
	    "heart_cap_monthly_budget_reached_timestamp_seconds" };
	static const char *const help[] = {
	    "Dollars a day: the mean spend of the last seven days known.",
	    "When the day's spend reaches the daily_budget at that rate.",
	    ("When the month's spend reaches the monthly_budget at that "
	    "rate.") };
	struct forecast *f = xcalloc(n + 1, sizeof *f);
	size_t i, m;
	int k;

	for (i = 0; i < n; i++)
		cap_forecast(&v[i], now, &f[i]);
	for (k = 0; k < 3; k++) {
		for (i = m = 0; i < n; i++)
			m += k == 0 ? f[i].days > 0 : k == 1 ?
			    f[i].daily_at != 0 : f[i].monthly_at != 0;
		if (m > 0)
			family(fp, name[k], help[k]);
		for (i = 0; i < n; i++)
			if (k == 0 && f[i].days > 0)
				dollars(fp, name[k], agent[i], f[i].rate);
			else if (k > 0 && (k == 1 ? f[i].daily_at :
			    f[i].monthly_at) != 0)
				sample(fp, name[k], agent[i], NULL, NULL,
				    (long long)(k == 1 ? f[i].daily_at :
				    f[i].monthly_at));
	}
	free(f);
}

/* The fleet's budget (budget.c), when the fleet file sets one; caller
 * frees. */
char *
prom_budget(const struct budget_view *v, time_t now)
{
	char *out, d[32];
	size_t len;
	struct forecast f;
	FILE *fp = text_open(&out, &len);

	if (!v->fb.set) {
		fclose(fp);
		return out;
	}
	budget_forecast(&v->week, v->zone, v->day, v->cost, v->month_cost,
	    v->fb.daily, v->fb.monthly, now, &f);
#define FLEET(name, help, fmt, x) do { \
	family(fp, name, help); \
	fprintf(fp, "%s " fmt "\n", name, x); \
} while (0)
	FLEET("heart_fleet_cost_dollars", "Dollars the fleet spent today, "
	    "in the budget's zone.", "%s", price_text(v->cost, 0, d,
	    sizeof d));
	FLEET("heart_fleet_month_cost_dollars", "Dollars the fleet spent "
	    "this calendar month, in the budget's zone.", "%s",
	    price_text(v->month_cost, 0, d, sizeof d));
	if (v->fb.daily >= 0)
		FLEET("heart_fleet_budget_dollars", "The fleet file's "
		    "budget.daily.", "%s", price_text(v->fb.daily, 0, d,
		    sizeof d));
	if (v->fb.monthly >= 0)
		FLEET("heart_fleet_monthly_budget_dollars", "The fleet file's "
		    "budget.monthly.", "%s", price_text(v->fb.monthly, 0, d,
		    sizeof d));
	FLEET("heart_fleet_wakes_in_flight", "Wakes admitted by the fleet's "
	    "budget and not yet recorded.", "%d", v->inflight);
	if (f.days > 0)
		FLEET("heart_fleet_rate_dollars", "Dollars a day: the fleet's "
		    "mean spend of the last seven days known.", "%s",
		    price_text(f.rate, 0, d, sizeof d));
	if (f.daily_at != 0)
		FLEET("heart_fleet_budget_reached_timestamp_seconds", "When "
		    "the day's spend reaches budget.daily at that rate.",
		    "%lld", (long long)f.daily_at);
	if (f.monthly_at != 0)
		FLEET("heart_fleet_monthly_budget_reached_timestamp_seconds",
		    "When the month's spend reaches budget.monthly at that "
		    "rate.", "%lld", (long long)f.monthly_at);
#undef FLEET
	fclose(fp);
	return out;
}

/* Each chamber's figures: used, and the total that stops it. */
static void
chambers(FILE *fp, char *const *agent, const struct cap_view *v,
    size_t n)
{
	static const char *const name[] = { "heart_cap_chamber_used",
	    "heart_cap_chamber_limit" };
	static const char *const help[] = {
	    "Wakes admitted today, by chamber.",
	    "The shared total at which a chamber stops being admitted." };
	enum chamber c;
	size_t i;
	int k;

	for (k = 0; k < 2; k++) {
		family(fp, name[k], help[k]);
		for (i = 0; i < n; i++)
			for (c = 0; c < CH_NCHAMBERS; c++)
				sample(fp, name[k], agent[i], "chamber",
				    soul_chamber_name(c), k == 0 ?
				    v[i].used[c] : cap_limit(&v[i].caps, c));
	}
}

/* The caps of n agents. */
static void
caps(FILE *fp, char *const *agent, const struct cap_view *v, size_t n,
    time_t now)
{
	size_t i;
	long long l;

	family(fp, "heart_cap_used", "Wakes admitted today, all chambers.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_cap_used", agent[i], NULL, NULL, v[i].total);
	family(fp, "heart_cap_limit", "The most wakes today can admit.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_cap_limit", agent[i], NULL, NULL,
		    cap_agent_limit(&v[i].caps));
	family(fp, "heart_cap_remaining", "Wakes left today.");
	for (i = 0; i < n; i++) {
		l = cap_agent_limit(&v[i].caps);
		sample(fp, "heart_cap_remaining", agent[i], NULL, NULL,
		    l > v[i].total ? l - v[i].total : 0);
	}
	chambers(fp, agent, v, n);
	family(fp, "heart_cap_ghosts", "Idle (ghost) wakes today.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_cap_ghosts", agent[i], NULL, NULL,
		    v[i].ghosts);
	family(fp, "heart_cap_tokens", "Tokens spent today.");
	for (i = 0; i < n; i++) {
		sample(fp, "heart_cap_tokens", agent[i], "kind", "prompt",
		    v[i].tok.prompt);
		sample(fp, "heart_cap_tokens", agent[i], "kind", "completion",
		    v[i].tok.completion);
	}
	money(fp, agent, v, n);
	forecasts(fp, agent, v, n, now);
	family(fp, "heart_cap_reset_timestamp_seconds", "When the counter "
	    "starts afresh: the next local midnight.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_cap_reset_timestamp_seconds", agent[i], NULL,
		    NULL, (long long)clock_next_midnight(v[i].zone[0] ?
		    v[i].zone : clock_tz_local(), now));
}

/* The outboxes of n agents: answers waiting, dead letters. */
static void
outbox(FILE *fp, char *const *agent, const struct outbox_count *c, size_t n)
{
	size_t i;

	family(fp, "heart_outbox_waiting", "Answers waiting in the outbox "
	    "for their delivery.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_outbox_waiting", agent[i], NULL, NULL,
		    c[i].waiting);
	family(fp, "heart_outbox_dead", "Dead letters: answers given up, "
	    "kept in dead/.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_outbox_dead", agent[i], NULL, NULL,
		    c[i].dead);
}

/* The pauses of n agents (heart-cap pause): paused or not, and until
 * when, for those paused until a time. */
static void
pauses(FILE *fp, char *const *agent, const struct pause_view *v, size_t n)
{
	size_t i;

	family(fp, "heart_paused", "1 while the agent is paused (heart-cap "
	    "pause), by its own pause or the whole fleet's.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_paused", agent[i], NULL, NULL, v[i].paused);
	family(fp, "heart_paused_until_timestamp_seconds", "When the "
	    "agent's pause ends; no sample while it lasts until resumed.");
	for (i = 0; i < n; i++)
		if (v[i].paused && v[i].until != 0)
			sample(fp, "heart_paused_until_timestamp_seconds",
			    agent[i], NULL, NULL, (long long)v[i].until);
}

/* The schedules of n agents read with their souls (overdue.c):
 * overdue or not, and when next due; nothing when no soul was given. */
static void
schedules(FILE *fp, char *const *agent, const struct overdue_view *v,
    size_t n)
{
	size_t i, nread = 0;

	for (i = 0; i < n; i++)
		nread += v[i].read != 0;
	if (nread == 0)
		return;
	family(fp, "heart_overdue", "1 while the agent's schedule is overdue: "
	    "due a grace ago and no heart-wake has looked at it since.");
	for (i = 0; i < n; i++)
		if (v[i].read && v[i].on)
			sample(fp, "heart_overdue", agent[i], NULL, NULL,
			    v[i].overdue);
	family(fp, "heart_schedule_due_timestamp_seconds", "When the "
	    "agent's schedule is next due; no sample before heart-wake has "
	    "seen it.");
	for (i = 0; i < n; i++)
		if (v[i].read && v[i].due > 0)
			sample(fp, "heart_schedule_due_timestamp_seconds",
			    agent[i], NULL, NULL, (long long)v[i].due);
}

/* s as a label's value: backslash, quote and newline escaped. */
static void
label(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++)
		if (*s == '\\' || *s == '"')
			fprintf(fp, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", fp);
		else
			fputc(*s, fp);
}

/* The provider accounts held (hold_list's array): one sample each of
 * heart_account_held, and of when its next probe is. */
static void
accounts(FILE *fp, const json_t *holds)
{
	static const char *const name[] = { "heart_account_held",
	    "heart_account_probe_timestamp_seconds" };
	size_t i;
	time_t t;
	json_t *h;
	int k;

	for (k = 0; json_array_size(holds) > 0 && k < 2; k++) {
		family(fp, name[k], k == 0 ? "1 while the provider account "
		    "is held after a quota, key or rate-limit error "
		    "(heart(7), Holds)." : "When the held account's next "
		    "probe may go (a rate limit's: its reset).");
		json_array_foreach(holds, i, h) {
			fprintf(fp, "%s{endpoint=\"", name[k]);
			label(fp, json_string_value(json_object_get(h,
			    "endpoint")));
			fprintf(fp, "\",fingerprint=\"%s\",kind=\"%s\"} ",
			    json_string_value(json_object_get(h,
			    "fingerprint")), json_string_value(
			    json_object_get(h, "kind")));
			if (k == 0 || clock_parse_utc(json_string_value(
			    json_object_get(h, "probe")), &t) == -1)
				t = 1;
			fprintf(fp, "%lld\n", (long long)t);
		}
	}
}

/* heart-cap status's text of n agents: their caps, outboxes
 * (heart-ghost(1)), pauses and schedules; and the accounts held
 * (hold_list's array).  Caller frees. */
char *
prom_agents(char *const *agent, size_t n, const struct cap_view *v,
    const struct outbox_count *c, const struct pause_view *p,
    const struct overdue_view *d, const json_t *holds, time_t now)
{
	char *out;
	size_t len;
	FILE *fp = text_open(&out, &len);

	caps(fp, agent, v, n, now);
	outbox(fp, agent, c, n);
	pauses(fp, agent, p, n);
	schedules(fp, agent, d, n);
	accounts(fp, holds);
	fclose(fp);
	return out;
}

/* The breakers text of n agents; caller frees. */
char *
prom_breakers(char *const *agent, const struct brk_view *v, size_t n)
{
	char *out;
	size_t len, i;
	FILE *fp = text_open(&out, &len);
	int s;

	family(fp, "heart_breaker_state", "1 for the state the breaker is "
	    "in.");
	for (i = 0; i < n; i++)
		for (s = BRK_CLOSED; s <= BRK_HALF_OPEN; s++)
			sample(fp, "heart_breaker_state", agent[i], "state",
			    brk_state_name((enum brk_state)s),
			    v[i].state == (enum brk_state)s);
	family(fp, "heart_breaker_failures", "Consecutive failures, by "
	    "trigger.");
	for (i = 0; i < n; i++) {
		sample(fp, "heart_breaker_failures", agent[i], "trigger",
		    "llm", v[i].llm_fails);
		sample(fp, "heart_breaker_failures", agent[i], "trigger",
		    "tool", v[i].tool_fails);
	}
	family(fp, "heart_breaker_cooldown_seconds", "The cooldown in "
	    "force.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_breaker_cooldown_seconds", agent[i], NULL,
		    NULL, v[i].cooldown);
	family(fp, "heart_breaker_next_probe_timestamp_seconds", "When the "
	    "next wake may go; 0 when it may go now.");
	for (i = 0; i < n; i++)
		sample(fp, "heart_breaker_next_probe_timestamp_seconds",
		    agent[i], NULL, NULL, (long long)v[i].until);
	fclose(fp);
	return out;
}

/* Does path end in .prom, after one character at least: a name the
 * collector reads (it reads no other)? */
int
prom_named(const char *path)
{
	size_t n = strlen(path);

	return n >= 6 && strcmp(path + n - 5, ".prom") == 0;
}

/*
 * Replace path with text, whole: a temporary file beside it (a name
 * the collector skips), fsync, mode 0644 (the collector runs as
 * another user), rename, fsync of the directory.  The file's own name
 * must end in .prom: the collector reads no other.
 */
int
prom_write(const char *path, const char *text, char *err)
{
	if (!prom_named(path) || path[strlen(path) - 6] == '/') {
		errf(err, "%s: the name must end in .prom (node_exporter's "
		    "textfile collector reads no other)", path);
		return -1;
	}
	return state_replace(path, ".heart-prom.", text, strlen(text), 0644,
	    err);
}

/* The fleet's rate use: n endpoints' buckets (bucket.c); caller frees.
 * Endpoint names need no escaping either (the agent id rule). */
char *
prom_rates(const struct rate_view *v, size_t n, time_t now)
{
	static const char *const name[] = { "requests", "requests_limit",
	    "tokens", "tokens_limit", "throttled", "429s", "slowed",
	    "waiting" };
	static const char *const help[] = {
	    "Requests taken in the last minute.",
	    "Requests a minute allowed; 0: no limit.",
	    "Tokens counted in the last minute.",
	    "Tokens a minute allowed; 0: no limit.",
	    "Wakes and requests the limit held back, ever.",
	    "Answers 429 (too many requests) the provider gave, ever.",
	    "1 while a 429 stops the endpoint.",
	    "Wakes deferred, in line for their turn (heart(7))." };
	char *out, full[64];
	size_t len, i;
	long long x;
	FILE *fp = text_open(&out, &len);
	int k;

	for (k = 0; n > 0 && k < 8; k++) {
		snprintf(full, sizeof full, "heart_rate_%s", name[k]);
		family(fp, full, help[k]);
		for (i = 0; i < n; i++) {
			x = k == 0 ? v[i].requests : k == 1 ? v[i].rpm :
			    k == 2 ? v[i].tokens : k == 3 ? v[i].tpm : k == 4 ?
			    v[i].throttled : k == 5 ? v[i].n429 : k == 6 ?
			    v[i].slow_until > now : v[i].waiting;
			fprintf(fp, "%s{endpoint=\"%s\"} %lld\n", full,
			    v[i].endpoint, x);
		}
	}
	fclose(fp);
	return out;
}
