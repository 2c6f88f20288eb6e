/*
 * core-step - test driver for the pure rules (lib/heartstore.h):
 * cap_step, brk_step, budget_step, bucket_step and pause_rule over
 * tables of states, times and keys, DST days included, ask.c's bound of
 * a usage block, llmsend.c's account rate limit of a 429 and slot.c's
 * slot_missed (lib/heartwake.h), and the pulse's due time and overdue
 * rule (lib/heartpulse.h), with no store, no clock and no file.
 * Prints "ok N name" or "not ok N name: what differs" per case; exit 0
 * when every case held, 1 when one did not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heartpulse.h"
#include "heartstore.h"
#include "heartwake.h"

static int failed, n;

static time_t
utc(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof tm);
	if (strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) == NULL) {
		fprintf(stderr, "core-step: %s: not a time\n", s);
		exit(2);
	}
	return timegm(&tm);
}

static void
check(const char *name, int ok, const char *why)
{
	n++;
	if (ok)
		printf("ok %d %s\n", n, name);
	else {
		printf("not ok %d %s: %s\n", n, name, why);
		failed = 1;
	}
}

/* The counter: state before, one op at a time, and what must follow. */
static const struct capcase {
	const char *name;
	const char *day, *zone;		/* stored; "" day: none */
	long long total, sched, idle;	/* stored counts */
	long long capsched, capidle, capagent;	/* given caps; -2: none */
	enum cap_op op;
	enum chamber ch;
	long long chcap;
	const char *zonearg, *now;
	int	 write, admitted;
	const char *dayafter;
	long long totalafter;
} caps[] = {
	{ "a first take starts the local day (New York, 23:59:59 EST)",
	  "", "", 0, 0, 0, 48, 12, -1, CAP_TAKE, CH_SCHEDULE, -1,
	  "America/New_York", "2026-03-08T04:59:59Z", 1, 1, "2026-03-07", 1 },
	{ "local midnight rolls the day: the count starts again",
	  "2026-03-07", "America/New_York", 5, 5, 0, 48, 12, -1, CAP_TAKE,
	  CH_SCHEDULE, -1, NULL, "2026-03-08T05:00:00Z", 1, 1, "2026-03-08",
	  1 },
	{ "spring forward: the 23-hour day is still that day a second "
	  "before 04:00Z", "2026-03-08", "America/New_York", 3, 3, 0, 48, 12,
	  -1, CAP_TAKE, CH_SCHEDULE, -1, NULL, "2026-03-09T03:59:59Z", 1, 1,
	  "2026-03-08", 4 },
	{ "spring forward: the next day starts at 04:00Z (EDT)",
	  "2026-03-08", "America/New_York", 3, 3, 0, 48, 12, -1, CAP_TAKE,
	  CH_SCHEDULE, -1, NULL, "2026-03-09T04:00:00Z", 1, 1, "2026-03-09",
	  1 },
	{ "fall back: the 25-hour day is still that day at 04:59:59Z",
	  "2026-11-01", "America/New_York", 2, 2, 0, 48, 12, -1, CAP_TAKE,
	  CH_SCHEDULE, -1, NULL, "2026-11-02T04:59:59Z", 1, 1, "2026-11-01",
	  3 },
	{ "fall back: the next day starts at 05:00Z (EST)",
	  "2026-11-01", "America/New_York", 2, 2, 0, 48, 12, -1, CAP_TAKE,
	  CH_SCHEDULE, -1, NULL, "2026-11-02T05:00:00Z", 1, 1, "2026-11-02",
	  1 },
	{ "a clock set back never brings a fresh allowance",
	  "2026-11-02", "UTC", 48, 48, 0, 48, 12, -1, CAP_TAKE, CH_SCHEDULE,
	  -1, NULL, "2026-11-01T12:00:00Z", 0, 0, "2026-11-02", 48 },
	{ "the idle chamber stops at its cap; nothing is written",
	  "2026-11-22", "UTC", 12, 0, 12, 48, 12, -1, CAP_TAKE, CH_IDLE, -1,
	  NULL, "2026-11-22T10:00:00Z", 0, 0, "2026-11-22", 12 },
	{ "the schedule chamber still goes under the shared total",
	  "2026-11-22", "UTC", 12, 0, 12, 48, 12, -1, CAP_TAKE, CH_SCHEDULE,
	  -1, NULL, "2026-11-22T10:00:00Z", 1, 1, "2026-11-22", 13 },
	{ "the agent-wide cap binds below a chamber's",
	  "2026-11-22", "UTC", 10, 10, 0, 48, 12, 10, CAP_TAKE, CH_SCHEDULE,
	  -1, NULL, "2026-11-22T10:00:00Z", 0, 0, "2026-11-22", 10 },
	{ "a take's own chamber cap (0) refuses and is never kept",
	  "2026-11-22", "UTC", 1, 1, 0, -2, 0, 0, CAP_TAKE, CH_IDLE, 0,
	  NULL, "2026-11-22T10:00:00Z", 0, 0, "2026-11-22", 1 },
	{ "record adds to the day", "2026-11-22", "UTC", 1, 1, 0, -2, 0, 0,
	  CAP_RECORD, CH_SCHEDULE, -1, NULL, "2026-11-22T10:00:00Z", 1, 0,
	  "2026-11-22", 1 },
	{ "reset zeroes the day", "2026-11-22", "UTC", 7, 7, 0, -2, 0, 0,
	  CAP_RESET, CH_SCHEDULE, -1, NULL, "2026-11-22T10:00:00Z", 1, 0,
	  "2026-11-22", 0 },
	{ "peek rolls what it shows and writes nothing",
	  "2026-11-21", "UTC", 7, 7, 0, -2, 0, 0, CAP_PEEK, CH_SCHEDULE, -1,
	  NULL, "2026-11-22T00:00:00Z", 0, 0, "2026-11-22", 0 },
	{ "a zone given moves the day with it (Tokyo is a day ahead)",
	  "2026-11-22", "UTC", 7, 7, 0, 48, 12, -1, CAP_TAKE, CH_SCHEDULE, -1,
	  "Asia/Tokyo", "2026-11-22T20:00:00Z", 1, 1, "2026-11-23", 1 },
};

static void
cap_case(const struct capcase *c)
{
	struct usage u = { 10, 5, 0, 0 };
	struct cap_args a = { c->ch, NULL, c->chcap, 1, &u, NULL, -1 };
	struct caps given;
	struct cap_view v;
	char why[256];
	int adm = -1, w;

	memset(&v, 0, sizeof v);
	cap_from_soul(NULL, &v.caps);
	snprintf(v.day, sizeof v.day, "%s", c->day);
	snprintf(v.zone, sizeof v.zone, "%s", c->zone);
	v.total = c->total;
	v.used[CH_SCHEDULE] = c->sched;
	v.used[CH_IDLE] = c->idle;
	if (c->capsched != -2) {
		given.chamber[CH_SCHEDULE] = c->capsched;
		given.chamber[CH_IDLE] = c->capidle;
		given.agent = c->capagent;
		given.budget = given.monthly = -1;
		given.priced = 0;
		a.caps = &given;
		/* kept already, as after a first take */
		if (c->day[0] != '\0') {
			v.caps = given;
			v.have_caps = 1;
		}
	}
	w = cap_step(&v, c->op, &a, c->zonearg != NULL ? c->zonearg :
	    c->zone[0] ? c->zone : "UTC", utc(c->now), &adm);
	snprintf(why, sizeof why, "write %d admitted %d day %s total %lld",
	    w, adm, v.day, v.total);
	check(c->name, w == c->write && (c->op != CAP_TAKE ||
	    adm == c->admitted) && strcmp(v.day, c->dayafter) == 0 &&
	    v.total == c->totalafter && (c->op != CAP_RECORD ||
	    (v.ghosts == 1 && v.tok.prompt == 10 &&
	    v.tok.completion == 5)) && (c->chcap < 0 ||
	    v.caps.chamber[c->ch] != c->chcap), why);
}

/* The breaker: keys 3, 15 min, 2 h; we are pid 42 on h1. */
static const struct brkcase {
	const char *name;
	enum brk_state state;
	long long llm, tool, cooldown;
	long long until, probe_at;	/* from T; 0: none */
	long long probe_pid;
	const char *probe_host;
	enum brk_op op;
	int	 flags;
	long long hold, at;		/* from T */
	int	 write, probe;
	enum brk_state after;
	long long cdafter, untilafter;	/* untilafter from T; -1: any */
	const char *ev;			/* the names, joined by ' ' */
} brks[] = {
	{ "the third LLM failure opens it for the base cooldown",
	  BRK_CLOSED, 2, 0, 900, 0, 0, 0, "", BRK_RECORD, BRK_LLM_FAIL, 0, 0,
	  1, 0, BRK_OPEN, 900, 900, "open/closed" },
	{ "a tool failure under the threshold only counts",
	  BRK_CLOSED, 0, 1, 900, 0, 0, 0, "", BRK_RECORD,
	  BRK_LLM_OK | BRK_TOOL_FAIL, 0, 0, 1, 0, BRK_CLOSED, 900, 0, "" },
	{ "the third tool failure opens it, trigger tool",
	  BRK_CLOSED, 0, 2, 900, 0, 0, 0, "", BRK_RECORD,
	  BRK_LLM_OK | BRK_TOOL_FAIL, 0, 0, 1, 0, BRK_OPEN, 900, 900,
	  "open/closed" },
	{ "a check during the cooldown writes nothing and is refused",
	  BRK_OPEN, 3, 0, 900, 900, 0, 0, "", BRK_CHECK, 0, 0, 899, 0, 0,
	  BRK_OPEN, 900, 900, "" },
	{ "the cooldown over: half-open, and the probe is ours",
	  BRK_OPEN, 3, 0, 900, 900, 0, 0, "", BRK_CHECK, 0, 0, 900, 1, 1,
	  BRK_HALF_OPEN, 900, -1, "half_open" },
	{ "one probe: a second caller is refused",
	  BRK_HALF_OPEN, 3, 0, 900, 0, 1, 7, "h2", BRK_CHECK, 0, 0, 10, 0, 0,
	  BRK_HALF_OPEN, 900, -1, "" },
	{ "a probe that never reported is presumed dead after its lease",
	  BRK_HALF_OPEN, 3, 0, 900, 0, 1, 7, "h2", BRK_CHECK, 0, 0,
	  1 + BRK_PROBE_LEASE, 1, 1, BRK_HALF_OPEN, 900, -1, "" },
	{ "the probe answered: closed, counts and cooldown back to base",
	  BRK_HALF_OPEN, 3, 0, 1800, 0, 1, 42, "h1", BRK_RECORD,
	  BRK_LLM_OK | BRK_TOOL_OK, 0, 5, 1, 0, BRK_CLOSED, 900, 0,
	  "closed/probe" },
	{ "the probe failed: open again, the cooldown doubled",
	  BRK_HALF_OPEN, 3, 0, 900, 0, 1, 42, "h1", BRK_RECORD, BRK_LLM_FAIL,
	  0, 5, 1, 0, BRK_OPEN, 1800, 1805, "open/half_open" },
	{ "doubling stops at max_cooldown",
	  BRK_HALF_OPEN, 3, 0, 7200, 0, 1, 42, "h1", BRK_RECORD, BRK_LLM_FAIL,
	  0, 5, 1, 0, BRK_OPEN, 7200, 7205, "open/half_open" },
	{ "our probe handed back: the next caller may probe",
	  BRK_HALF_OPEN, 3, 0, 900, 0, 1, 42, "h1", BRK_GIVEBACK, 0, 0, 5, 1,
	  0, BRK_HALF_OPEN, 900, -1, "" },
	{ "another host's probe (same pid) is not ours to hand back",
	  BRK_HALF_OPEN, 3, 0, 900, 0, 1, 42, "h2", BRK_GIVEBACK, 0, 0, 5, 0,
	  0, BRK_HALF_OPEN, 900, -1, "" },
	{ "a clock set back never stretches a cooldown",
	  BRK_OPEN, 3, 0, 900, 5000, 0, 0, "", BRK_CHECK, 0, 0, 0, 1, 0,
	  BRK_OPEN, 900, 900, "" },
	{ "a failure only a person can fix opens it for max_cooldown",
	  BRK_CLOSED, 0, 0, 900, 0, 0, 0, "", BRK_RECORD,
	  BRK_LLM_FAIL | BRK_LLM_CONFIG, 0, 0, 1, 0, BRK_OPEN, 7200, 7200,
	  "open/closed" },
	{ "a provider's Retry-After holds it open that long, no longer",
	  BRK_CLOSED, 0, 0, 900, 0, 0, 0, "", BRK_RECORD, BRK_LLM_FAIL, 300,
	  0, 1, 0, BRK_OPEN, 300, 300, "open/closed" },
	{ "late news while open: counted, and a hold lengthens it",
	  BRK_OPEN, 3, 0, 900, 900, 0, 0, "", BRK_RECORD, BRK_LLM_FAIL, 2000,
	  10, 1, 0, BRK_OPEN, 1990, 2000, "" },
	{ "an operator's reset closes it",
	  BRK_OPEN, 3, 1, 1800, 1800, 0, 0, "", BRK_RESET, 0, 0, 10, 1, 0,
	  BRK_CLOSED, 900, 0, "closed/reset" },
	{ "peek brings it up to now and writes nothing",
	  BRK_OPEN, 3, 0, 900, 900, 0, 0, "", BRK_PEEK, 0, 0, 901, 0, 0,
	  BRK_HALF_OPEN, 900, -1, "half_open" },
};

static void
brk_case(const struct brkcase *c, time_t t)
{
	struct brk_conf conf = { 3, 900, 7200, 0, 3600 };	/* no window */
	struct brk_ask rec = { 42, "h1", c->flags, c->hold ? t + c->hold : 0,
	    "x" };
	struct brk_out o;
	struct brk b;
	char ev[128] = "", why[256];
	int w, i;

	memset(&b, 0, sizeof b);
	b.exists = 1;
	b.state = c->state;
	b.llm_fails = c->llm;
	b.tool_fails = c->tool;
	b.cooldown = c->cooldown;
	b.kept.cooldown = 900;
	b.kept.threshold = 3;
	b.kept.max_cooldown = 7200;
	b.until = c->until ? t + c->until : 0;
	b.probe_at = c->probe_at ? t + c->probe_at - 1 : 0;
	b.probe_pid = c->probe_pid;
	snprintf(b.probe_host, sizeof b.probe_host, "%s", c->probe_host);
	w = brk_step(&b, c->op, &conf, t + c->at, &rec, &o);
	for (i = 0; i < o.nev; i++)
		snprintf(ev + strlen(ev), sizeof ev - strlen(ev), "%s%s",
		    i ? " " : "", o.ev[i]);
	snprintf(why, sizeof why, "write %d probe %d state %s cooldown %lld "
	    "until T%+lld events '%s'", w, o.probe, brk_state_name(b.state),
	    b.cooldown, b.until ? (long long)(b.until - t) : 0, ev);
	check(c->name, w == c->write && o.probe == c->probe &&
	    b.state == c->after && (b.state == BRK_CLOSED ||
	    b.cooldown == c->cdafter) && (c->untilafter == -1 ||
	    (c->untilafter == 0 ? b.until == 0 :
	    b.until == t + c->untilafter)) && strcmp(ev, c->ev) == 0 &&
	    (!o.probe || (b.probe_pid == 42 &&
	    strcmp(b.probe_host, "h1") == 0)), why);
}

/*
 * The window: keys 3 in a row or 10 within 1h.  A breaker in state
 * `from' (half-open: our probe out) with `had' failures noted `ago'
 * seconds before T, each a second apart, then the outcome at T;
 * nothing counted in a row.
 */
static const struct wincase {
	const char *name;
	enum brk_state from;
	int	 had;
	long long ago;
	int	 flags;
	enum brk_state after;
	int	 nafter;		/* failures noted after */
} wins[] = {
	{ "window: the tenth failure within the hour opens it",
	  BRK_CLOSED, 9, 600, BRK_LLM_FAIL, BRK_OPEN, 10 },
	{ "window: the ninth only counts",
	  BRK_CLOSED, 8, 600, BRK_LLM_FAIL, BRK_CLOSED, 9 },
	{ "window: a success leaves the failures noted",
	  BRK_CLOSED, 9, 600, BRK_LLM_OK | BRK_TOOL_OK, BRK_CLOSED, 9 },
	{ "window: failures older than the hour do not count",
	  BRK_CLOSED, 9, 4000, BRK_LLM_FAIL, BRK_CLOSED, 1 },
	{ "window: a tool failure counts in it too",
	  BRK_CLOSED, 9, 600, BRK_LLM_OK | BRK_TOOL_FAIL, BRK_OPEN, 10 },
	{ "window: a clock set back notes the failure in its place",
	  BRK_CLOSED, 3, -600, BRK_LLM_FAIL, BRK_CLOSED, 4 },
	{ "window: the probe's success closes it and leaves them noted",
	  BRK_HALF_OPEN, 10, 1200, BRK_LLM_OK | BRK_TOOL_OK, BRK_CLOSED,
	  10 },
};

static void
win_case(const struct wincase *c, time_t t)
{
	struct brk_conf conf = { 3, 900, 7200, 10, 3600 };
	struct brk_ask rec = { 42, "h1", c->flags, 0, "HTTP 503" };
	struct brk_out o;
	struct brk b;
	char why[320];
	int i, sorted;

	memset(&b, 0, sizeof b);
	b.exists = 1;
	b.state = c->from;
	b.cooldown = 900;
	b.probe_at = c->from == BRK_HALF_OPEN ? t - 1 : 0;
	b.probe_pid = c->from == BRK_HALF_OPEN ? 42 : 0;
	for (i = 0; i < c->had; i++)
		b.failed[b.nfailed++] = t - c->ago + i;
	brk_step(&b, BRK_RECORD, &conf, t, &rec, &o);
	snprintf(why, sizeof why, "state %s, %d noted (oldest first?), "
	    "reason '%s'", brk_state_name(b.state), b.nfailed, b.reason);
	for (i = 1, sorted = 1; i < b.nfailed; i++)
		sorted &= b.failed[i] >= b.failed[i - 1];
	check(c->name, b.state == c->after && b.nfailed == c->nafter &&
	    sorted &&
	    (b.state != BRK_OPEN || (b.cooldown == 900 && strcmp(b.reason,
	    "10 failures within 1h: HTTP 503") == 0)), why);
}

/*
 * The budget: a take is refused once the day's cost reached it, and
 * admitted below it by a nanodollar; a record adds its cost; a new day
 * starts at 0; no budget (-1) never refuses.
 */
static void
budget_cases(void)
{
	struct usage u = { 1000, 100, 600, 300 }, tu = { 50, 5, 0, 0 };
	struct cap_args a = { CH_SCHEDULE, NULL, -1, 0, &u, &tu, 935000 };
	struct caps caps;
	struct cap_view v;
	char why[128];
	int adm;

	memset(&v, 0, sizeof v);
	cap_from_soul(NULL, &caps);
	caps.budget = 2000000;	/* $0.002 */
	caps.priced = 1;
	a.caps = &caps;
	snprintf(v.day, sizeof v.day, "2026-11-22");
	snprintf(v.zone, sizeof v.zone, "UTC");
	v.cost = 1999999;
	cap_step(&v, CAP_TAKE, &a, "UTC", utc("2026-11-22T10:00:00Z"), &adm);
	check("budget: a nanodollar below it admits", adm == 1 &&
	    v.total == 1, "refused");
	cap_step(&v, CAP_RECORD, &a, "UTC", utc("2026-11-22T10:00:00Z"),
	    NULL);
	snprintf(why, sizeof why, "cost %lld cached %lld written %lld "
	    "prompt %lld triage %lld/%lld", v.cost, v.tok.cached,
	    v.tok.cache_write, v.tok.prompt, v.triage.prompt,
	    v.triage.completion);
	check("budget: a record adds its cost, cached and triage tokens "
	    "apart", v.cost == 2934999 && v.tok.cached == 600 &&
	    v.tok.cache_write == 300 && v.tok.prompt == 1000 &&
	    v.triage.prompt == 50 && v.triage.completion == 5, why);
	cap_step(&v, CAP_TAKE, &a, "UTC", utc("2026-11-22T10:00:00Z"), &adm);
	check("budget: reached, a take is refused and nothing counted",
	    adm == 0 && v.total == 1, "admitted");
	caps.budget = -1;
	cap_step(&v, CAP_TAKE, &a, "UTC", utc("2026-11-22T10:00:00Z"), &adm);
	check("budget: none never refuses", adm == 1, "refused");
	caps.budget = 2000000;
	cap_step(&v, CAP_TAKE, &a, "UTC", utc("2026-11-23T00:00:00Z"), &adm);
	check("budget: the next day starts at $0", adm == 1 &&
	    v.cost == 0 && v.total == 1, "refused");
}

/*
 * The monthly budget: the month's cost is kept beside the day's, added
 * by the same record, rolled at the local month's first midnight (New
 * York's, five hours after UTC's, and across a DST change), refuses at
 * the bound as the daily one does; a counter kept before it had a month
 * reads as nothing spent this month.
 */
static void
monthly_cases(void)
{
	struct usage u = { 1000, 100, 0, 0 };
	struct cap_args a = { CH_SCHEDULE, NULL, -1, 0, &u, NULL, 1000000 };
	const char *ny = "America/New_York";
	struct caps caps;
	struct cap_view v;
	char why[200];
	int adm;

	memset(&v, 0, sizeof v);
	cap_from_soul(NULL, &caps);
	caps.monthly = 3000000;	/* $0.003 */
	caps.priced = 1;
	a.caps = &caps;
	/* an old counter: a day, a day's cost, no month */
	snprintf(v.day, sizeof v.day, "2026-11-29");
	snprintf(v.zone, sizeof v.zone, "%s", ny);
	v.cost = 5000000;
	cap_step(&v, CAP_TAKE, &a, ny, utc("2026-11-29T15:00:00Z"), &adm);
	check("monthly: an old counter has spent nothing this month",
	    adm == 1 && strcmp(v.month, "2026-11") == 0 &&
	    v.month_cost == 0, v.month);
	v.month_cost = 2999999;
	cap_step(&v, CAP_TAKE, &a, ny, utc("2026-11-29T15:00:00Z"), &adm);
	check("monthly: a nanodollar below it admits", adm == 1, "refused");
	cap_step(&v, CAP_RECORD, &a, ny, utc("2026-11-29T15:00:00Z"), NULL);
	check("monthly: a record adds to the day's and the month's cost",
	    v.month_cost == 3999999 && v.cost == 6000000, "not added");
	cap_step(&v, CAP_TAKE, &a, ny, utc("2026-12-01T04:59:59Z"), &adm);
	snprintf(why, sizeof why, "adm %d day %s month %s cost %lld/%lld",
	    adm, v.day, v.month, v.cost, v.month_cost);
	check("monthly: reached, refused on the month's last local second "
	    "though the day rolled", adm == 0 && v.cost == 0 &&
	    strcmp(v.month, "2026-11") == 0, why);
	cap_why(&v, CH_SCHEDULE, utc("2026-12-01T04:59:59Z"), why,
	    sizeof why);
	check("monthly: the reason names the monthly budget and its end",
	    strstr(why, "monthly budget $0.003 reached: $0.003999999 spent "
	    "this month (heart.monthly_budget); resets at "
	    "2026-12-01T05:00:00Z")
	    != NULL, why);
	check("monthly: a refused take waits for the month's end",
	    cap_open_at(&v, &caps, utc("2026-11-30T12:00:00Z")) ==
	    utc("2026-12-01T05:00:00Z"), "not the month's end");
	cap_step(&v, CAP_TAKE, &a, ny, utc("2026-12-01T05:00:00Z"), &adm);
	check("monthly: the local month's first second starts at $0",
	    adm == 1 && strcmp(v.month, "2026-12") == 0 &&
	    v.month_cost == 0, v.month);
	/* March 2027: DST starts on the 14th; April starts at 04:00Z */
	snprintf(v.day, sizeof v.day, "2027-03-31");
	snprintf(v.month, sizeof v.month, "2027-03");
	v.month_cost = 3000000;
	check("monthly: after a DST change the month ends at 04:00Z",
	    cap_open_at(&v, &caps, utc("2027-03-31T12:00:00Z")) ==
	    utc("2027-04-01T04:00:00Z"), "not 04:00Z");
	cap_step(&v, CAP_TAKE, &a, ny, utc("2027-04-01T03:59:59Z"), &adm);
	check("monthly: refused until then", adm == 0, "admitted");
	cap_step(&v, CAP_TAKE, &a, ny, utc("2027-04-01T04:00:00Z"), &adm);
	check("monthly: admitted from then", adm == 1 &&
	    strcmp(v.month, "2027-04") == 0, v.month);
	caps.monthly = -1;
	caps.budget = 1000000;
	v.cost = 1000000;
	cap_step(&v, CAP_TAKE, &a, ny, utc("2027-04-01T12:00:00Z"), &adm);
	check("monthly: none leaves the daily budget to refuse", adm == 0,
	    "admitted");
}

/* The fleet's budget: wakes in flight counted at the week's costliest,
 * the zone's day, a lease; and the forecast of a week. */
static void
fleet_cases(void)
{
	struct fleet_budget fb = { 1, 3500000, -1, "Europe/Berlin" };
	struct budget *b = calloc(1, sizeof *b);
	time_t t = utc("2026-11-22T10:00:00Z");
	struct forecast f;
	char why[300];
	int vd, i;

	budget_step(b, BUDGET_TAKE, "a", 0, &fb, t, &vd);
	check("fleet: a first wake is admitted, in flight", vd ==
	    BUDGET_ADMIT && b->nw == 1 && strcmp(b->v.week.since, "2026-11-22") == 0 &&
	    strcmp(b->v.day, "2026-11-22") == 0, b->v.day);
	budget_step(b, BUDGET_TAKE, "b", 0, &fb, t, &vd);
	check("fleet: no wake's cost known: one at a time", vd ==
	    BUDGET_CROWDED && b->nw == 1, "admitted");
	budget_why_at(&b->v, vd, t, why, sizeof why, &b->w[1].at);
	check("fleet: one at a time, and told so (one wake is in flight)",
	    strstr(why, "no wake's cost known this week: wakes go one at a "
	    "time, and 1 is in flight") != NULL, why);
	budget_step(b, BUDGET_RECORD, "a", 1000000, &fb, t, &vd);
	check("fleet: a record adds its cost and frees its place",
	    b->v.cost == 1000000 && b->v.month_cost == 1000000 &&
	    b->nw == 0 && b->v.week.top == 1000000, "not added");
	budget_step(b, BUDGET_TAKE, "a", 0, &fb, t, &vd);
	budget_step(b, BUDGET_TAKE, "b", 0, &fb, t, &i);
	budget_step(b, BUDGET_TAKE, "c", 0, &fb, t, &vd);
	check("fleet: $1 spent, $1 a wake, budget $3.5: three in flight",
	    vd == BUDGET_ADMIT && i == BUDGET_ADMIT && b->nw == 3, "refused");
	budget_step(b, BUDGET_TAKE, "d", 0, &fb, t, &vd);
	check("fleet: a fourth in flight could reach it: crowded", vd ==
	    BUDGET_CROWDED && b->nw == 3, "admitted");
	budget_why_at(&b->v, vd, t, why, sizeof why, &b->w[3].at);
	check("fleet: a crowded wake is deferred a minute, and told why",
	    strstr(why, "fleet budget: $0.001 spent today, and 3 wakes in "
	    "flight at $0.001 each") != NULL && b->w[3].at == t +
	    BUDGET_RETRY, why);
	budget_step(b, BUDGET_TAKE, "c", 0, &fb, t, &vd);
	check("fleet: an agent's next wake takes its last one's place",
	    vd == BUDGET_ADMIT && b->nw == 3, "two places");
	budget_step(b, BUDGET_GIVE, "c", 0, &fb, t, &vd);
	check("fleet: a wake handed back frees its place", b->nw == 2,
	    "kept");
	budget_step(b, BUDGET_PEEK, "", 0, &fb, t + BUDGET_LEASE, &vd);
	check("fleet: a wake unrecorded past its lease counts no more",
	    b->nw == 0, "kept");
	budget_step(b, BUDGET_RECORD, "a", 2500000, &fb, t, &vd);
	budget_step(b, BUDGET_TAKE, "e", 0, &fb, t, &vd);
	budget_why_at(&b->v, vd, t, why, sizeof why, &b->w[0].at);
	check("fleet: reached, refused till Berlin's midnight", vd ==
	    BUDGET_REACHED && strstr(why, "fleet daily budget $0.0035 "
	    "reached: $0.0035 spent today") != NULL && b->w[0].at ==
	    utc("2026-11-22T23:00:00Z"), why);
	budget_step(b, BUDGET_TAKE, "e", 0, &fb, utc("2026-11-22T23:00:00Z"),
	    &vd);
	check("fleet: Berlin's midnight starts a day, the last one kept",
	    vd == BUDGET_ADMIT && b->v.cost == 0 && b->v.month_cost ==
	    3500000 && b->v.week.n == 1 && b->v.week.d[0].cost == 3500000 &&
	    strcmp(b->v.week.d[0].day, "2026-11-22") == 0, b->v.day);
	budget_forecast(&b->v.week, "Europe/Berlin", "2026-11-23", 0,
	    3500000, 3500000, 10000000, utc("2026-11-23T00:00:00Z"), &f);
	check("fleet: one day known, $3.5 a day: the daily budget at "
	    "the day's end, the monthly on the 24th", f.days == 1 &&
	    f.rate == 3500000 && f.daily_at == 0 &&
	    strcmp(f.monthly_on, "2026-11-24") == 0, f.monthly_on);
	for (i = 0; i < 10; i++) {
		snprintf(b->v.day, sizeof b->v.day, "2026-12-%02d",
		    (i + 1) % 100);
		week_roll(&b->v.week, b->v.day, 1000000, i < 9 ? "2026-12-10" :
		    "2026-12-11");
	}
	check("fleet: the week keeps seven days at most, the latest",
	    b->v.week.n == 7 && strcmp(b->v.week.d[0].day, "2026-12-10") ==
	    0 && strcmp(b->v.week.d[6].day, "2026-12-04") == 0,
	    b->v.week.d[0].day);
	budget_forecast(&b->v.week, "UTC", "2026-12-11", 0, 0, 4000000, -1,
	    utc("2026-12-11T00:00:00Z"), &f);
	check("fleet: $1 a day for seven days, $4 left: not today",
	    f.days == 7 && f.rate == 1000000 && f.daily_at == 0, "reached");
	budget_forecast(&b->v.week, "UTC", "2026-12-11", 3600000, 0, 4000000,
	    -1, utc("2026-12-11T12:00:00Z"), &f);
	check("fleet: $0.4 left at $1 a day from noon: reached at 21:36",
	    f.daily_at == utc("2026-12-11T21:36:00Z"), "not then");
	memset(&b->v.week, 0, sizeof b->v.week);
	budget_forecast(&b->v.week, "UTC", "2026-12-11", 0, 0, 1, 1,
	    utc("2026-12-11T12:00:00Z"), &f);
	check("fleet: a week that knows no day makes no forecast",
	    f.days == 0 && f.daily_at == 0 && f.monthly_on[0] == '\0',
	    "a forecast");
	free(b);
}

/* The fleet's bucket serves the wakes it deferred in line. */
static void
bucket_cases(time_t t)
{
	static struct bucket b;
	struct bkt_args x = { 0, 0, 0, "x" }, y = { 0, 0, 0, "y" },
	    z = { 0, 0, 0, "z" }, later = { 0, 0, 0, NULL };
	time_t until;

	memset(&b, 0, sizeof b);
	b.v.rpm = 2;
	bucket_step(&b, BKT_TAKE, &x, t - 70, &until);
	bucket_step(&b, BKT_TAKE, &y, t - 70, &until);
	bucket_step(&b, BKT_TAKE, &z, t - 70, &until);
	bucket_step(&b, BKT_TAKE, &x, t - 69, &until);
	check("bucket: a refused wake is put in line once, in order",
	    b.nq == 2 && strcmp(b.q[0].who, "z") == 0 && b.q[0].since ==
	    t - 70 && strcmp(b.q[1].who, "x") == 0 && b.q[1].seen ==
	    t - 69, "line");
	bucket_step(&b, BKT_TAKE, &y, t, &until);
	check("bucket: a wake not in line waits for those in it",
	    until == t + 61 && b.v.ahead == 2 && b.nq == 3, "admitted");
	bucket_step(&b, BKT_TAKE, &later, t, &until);
	check("bucket: a wake's later request takes the minute's room, in "
	    "no line", until == 0 && b.nq == 3, "refused");
	bucket_step(&b, BKT_TAKE, &x, t, &until);
	check("bucket: the second in line waits for the first's turn "
	    "when one request is free", until == t + 61 && b.v.ahead == 1,
	    "admitted");
	bucket_step(&b, BKT_TAKE, &z, t, &until);
	check("bucket: the first in line is admitted, and leaves it",
	    until == 0 && b.nq == 2 && strcmp(b.q[0].who, "x") == 0,
	    "refused");
	bucket_step(&b, BKT_TAKE, &x, t + 1, &until);
	check("bucket: in line, told when its turn comes if those before "
	    "take theirs", until == t + 61 && b.v.ahead == 0, "until");
	bucket_step(&b, BKT_PEEK, NULL, t + 182, &until);
	check("bucket: a place not asked for within 3 minutes is dropped",
	    b.nq == 0, "kept");
}

/* A usage block past what its request could produce is bounded. */
static void
usage_cases(void)
{
	struct usage u = { 50000000, 1000000, 60000000, 7 };
	char note[384];

	ask_usage_bound(&u, 1000, 6, 1024, note, sizeof note);
	check("usage: each count past its bound is counted at it, and said",
	    u.prompt == 1000 + USAGE_SLACK && u.completion == 1024 +
	    USAGE_SLACK && u.cached == u.prompt && u.cache_write == 0 &&
	    strstr(note, "prompt_tokens 50000000 counted as 5096") != NULL,
	    note);
	u = (struct usage){ -5, 2000, 100, 200 };
	ask_usage_bound(&u, 100, 9000, 1024, note, sizeof note);
	check("usage: below zero is 0; a reply's bytes bound too",
	    u.prompt == 0 && u.completion == 2000 && u.cached == 0 &&
	    u.cache_write == 0, note);
	u = (struct usage){ 900, 40, 500, 400 };
	ask_usage_bound(&u, 1000, 6, 1024, note, sizeof note);
	check("usage: a sound block is read as it is", u.prompt == 900 &&
	    u.completion == 40 && u.cached == 500 && u.cache_write == 400 &&
	    note[0] == '\0', note);
}

/* A 429's rate-limit headers (name, value pairs), its Retry-After (s
 * from now, 0: none), and the account's hold that must follow: s from
 * now until its reset, 0 when the 429 is the request's. */
static const struct ratecase {
	const char *name;
	const char *h[10];
	long	 retry, want;
} rates[] = {
	{ "rate: a Retry-After alone is the request's", { NULL }, 20, 0 },
	{ "rate: every window with room left is the request's",
	  { "x-ratelimit-remaining-requests", "5",
	    "x-ratelimit-remaining-tokens", "3000", NULL }, 30, 0 },
	{ "rate: OpenAI's spent window, until its reset",
	  { "x-ratelimit-remaining-requests", "0",
	    "x-ratelimit-reset-requests", "6m0s",
	    "x-ratelimit-remaining-tokens", "5120",
	    "x-ratelimit-reset-tokens", "2s", NULL }, 20, 360 },
	{ "rate: of Anthropic's spent windows, the latest reset",
	  { "anthropic-ratelimit-input-tokens-remaining", "0",
	    "anthropic-ratelimit-input-tokens-reset", "2026-11-22T10:01:30Z",
	    "anthropic-ratelimit-requests-remaining", "0",
	    "anthropic-ratelimit-requests-reset",
	    "2026-11-22T10:03:10.250Z", NULL }, 5, 190 },
	{ "rate: a reset in milliseconds is a second on",
	  { "x-ratelimit-remaining-tokens", "0",
	    "x-ratelimit-reset-tokens", "120ms", NULL }, 0, 1 },
	{ "rate: no reset said: the Retry-After",
	  { "x-ratelimit-remaining-requests", "0", NULL }, 20, 20 },
	{ "rate: no reset and no Retry-After: a minute",
	  { "x-ratelimit-remaining-requests", "0",
	    "x-ratelimit-reset-requests", "soon", NULL }, 0, 60 },
	{ "rate: a reset past the hour is cut to it",
	  { "x-ratelimit-remaining-tokens", "0",
	    "x-ratelimit-reset-tokens", "5h0m0s", NULL }, 0, 3600 },
};

static void
rate_case(const struct ratecase *c, time_t t)
{
	char limit[HTTP_LIMITS][2][64];
	time_t got;
	char why[64];
	size_t i, n = 0;

	memset(limit, 0, sizeof limit);
	for (i = 0; c->h[i] != NULL; i += 2, n++) {
		snprintf(limit[n][0], sizeof limit[0][0], "%s", c->h[i]);
		snprintf(limit[n][1], sizeof limit[0][1], "%s", c->h[i + 1]);
	}
	got = llm_rate_account(limit, n, t, c->retry ? t + c->retry : 0);
	snprintf(why, sizeof why, "held %lld s on, want %ld",
	    got ? (long long)(got - t) : 0LL, c->want);
	check(c->name, got == (c->want ? t + c->want : 0), why);
}

/* An agent's own pause and the fleet's, at a time: paused, by which,
 * until when. */
static const struct pausecase {
	const char *name;
	const char *own0, *own1, *all0, *all1;	/* since, until; "": none,
						   "-" until: resumed */
	const char *now;
	int	 paused, all;
	const char *until;	/* "": until resumed */
} pauses[] = {
	{ "pause: none holds", "", "", "", "", "2026-11-22T10:00:00Z", 0, 0,
	  "" },
	{ "pause: its own, until resumed", "2026-11-22T09:00:00Z", "-", "",
	  "", "2026-11-22T10:00:00Z", 1, 0, "" },
	{ "pause: its own ends at its until, not a second later",
	  "2026-11-22T09:00:00Z", "2026-11-22T10:00:00Z", "", "",
	  "2026-11-22T10:00:00Z", 0, 0, "" },
	{ "pause: the fleet's holds an agent with none of its own", "", "",
	  "2026-11-22T09:00:00Z", "2026-11-22T11:00:00Z",
	  "2026-11-22T10:00:00Z", 1, 1, "2026-11-22T11:00:00Z" },
	{ "pause: of two, the one that ends later is shown",
	  "2026-11-22T09:00:00Z", "-", "2026-11-22T09:30:00Z",
	  "2026-11-22T11:00:00Z", "2026-11-22T10:00:00Z", 1, 0, "" },
	{ "pause: its own outlives the fleet's, which has ended",
	  "2026-11-22T09:00:00Z", "2026-11-22T12:00:00Z",
	  "2026-11-22T09:30:00Z", "2026-11-22T09:45:00Z",
	  "2026-11-22T10:00:00Z", 1, 0, "2026-11-22T12:00:00Z" },
};

/* A wake at a time for a slot, as schedule.catch_up judges it
 * (slot.c, slot_missed). */
static const struct latecase {
	const char *name;
	const char *slot, *now;
	long long catch_up;	/* -1: unset, 0: false */
	int	 missed;
} lates[] = {
	{ "catch_up: unset, a slot five hours late is caught up",
	  "2026-11-22T05:00:00Z", "2026-11-22T10:00:00Z", -1, 0 },
	{ "catch_up: a wake in the minute of its slot is on time, even with "
	  "false", "2026-11-22T09:59:01Z", "2026-11-22T10:00:00Z", 0, 0 },
	{ "catch_up: false, a wake a minute late is missed",
	  "2026-11-22T09:59:00Z", "2026-11-22T10:00:00Z", 0, 1 },
	{ "catch_up: 10m, a wake 10m late still goes",
	  "2026-11-22T09:50:00Z", "2026-11-22T10:00:00Z", 600, 0 },
	{ "catch_up: 10m, a wake a second past it is missed",
	  "2026-11-22T09:49:59Z", "2026-11-22T10:00:00Z", 600, 1 },
	{ "catch_up: 1m, a wake 61s late is missed",
	  "2026-11-22T09:58:59Z", "2026-11-22T10:00:00Z", 60, 1 },
	{ "catch_up: 6h, a slot five hours late is caught up",
	  "2026-11-22T05:00:00Z", "2026-11-22T10:00:00Z", 6 * 3600, 0 },
};

static void
late_case(const struct latecase *c)
{
	check(c->name, slot_missed(utc(c->slot), utc(c->now), c->catch_up) ==
	    c->missed, c->missed ? "caught up, not missed" :
	    "missed, not caught up");
}

static time_t
utc_or(const char *s, time_t none)
{
	return s[0] == '\0' || s[0] == '-' ? none : utc(s);
}

static void
pause_case(const struct pausecase *c)
{
	struct pause_entry own = { utc_or(c->own0, 0), utc_or(c->own1, 0) };
	struct pause_entry all = { utc_or(c->all0, 0), utc_or(c->all1, 0) };
	struct pause_view v;

	pause_rule(&own, &all, utc(c->now), &v);
	check(c->name, v.paused == c->paused && v.all == c->all &&
	    v.until == utc_or(c->until, 0), "paused, all or until");
}

/* A schedule overdue: due passed more than its grace ago, and nothing
 * looked at since. */
static const struct overcase {
	const char *name;
	const char *used;	/* the slot last used */
	long long every, off;
	const char *due;	/* pulse_due's */
	const char *looked, *now;	/* "": none */
	int	 overdue;
} overs[] = {
	{ "a slot used: due at the next slot; within the grace, not overdue",
	  "2026-11-22T10:01:30Z", 3600, 60, "2026-11-22T11:01:00Z", "",
	  "2026-11-22T12:00:59Z", 0 },
	{ "an interval past due, and nobody looked: overdue",
	  "2026-11-22T10:01:30Z", 3600, 60, "2026-11-22T11:01:00Z", "",
	  "2026-11-22T12:01:00Z", 1 },
	{ "a skip looked at it after due (paused, held...): not overdue",
	  "2026-11-22T10:01:30Z", 3600, 60, "2026-11-22T11:01:00Z",
	  "2026-11-22T11:01:00Z", "2026-11-22T15:00:00Z", 0 },
	{ "a skip before due is no look at it",
	  "2026-11-22T10:01:30Z", 3600, 60, "2026-11-22T11:01:00Z",
	  "2026-11-22T11:00:59Z", "2026-11-22T15:00:00Z", 1 },
	{ "a one-minute schedule has two minutes of grace",
	  "2026-11-22T10:00:00Z", 60, 0, "2026-11-22T10:01:00Z", "",
	  "2026-11-22T10:02:59Z", 0 },
	{ "and is overdue after them",
	  "2026-11-22T10:00:00Z", 60, 0, "2026-11-22T10:01:00Z", "",
	  "2026-11-22T10:03:00Z", 1 },
	{ "a schedule that is off is never due",
	  "2026-11-22T10:00:00Z", 0, 0, "", "", "2026-12-22T10:00:00Z", 0 },
};

static void
over_case(const struct overcase *c)
{
	time_t due = pulse_due(c->every, c->off, utc(c->used));

	check(c->name, due == utc_or(c->due, 0) && pulse_overdue(due,
	    c->every, utc_or(c->looked, 0), utc(c->now)) == c->overdue,
	    "due or overdue");
}

/* The idle chamber's due time (slot_idle_due, heart-wake's and the
 * pulse's one rule), and overdue with its grace. */
static const struct idlecase {
	const char *name;
	const char *input, *seen, *used;	/* "": none */
	long long after;
	const char *due, *looked, *now;
	int	 overdue;
} idles[] = {
	{ "the user spoke: due after idle.after",
	  "2026-11-22T10:00:00Z", "2026-11-01T00:00:00Z", "", 3600,
	  "2026-11-22T11:00:00Z", "", "2026-11-22T11:30:00Z", 0 },
	{ "an interval past it, and nobody looked: overdue",
	  "2026-11-22T10:00:00Z", "2026-11-01T00:00:00Z", "", 3600,
	  "2026-11-22T11:00:00Z", "", "2026-11-22T12:00:00Z", 1 },
	{ "no sign of the user: after counts from the first sight",
	  "", "2026-11-22T10:00:00Z", "", 60,
	  "2026-11-22T10:01:00Z", "", "2026-11-22T10:03:00Z", 1 },
	{ "an idle wake since: not again before after past it",
	  "2026-11-22T10:00:00Z", "2026-11-01T00:00:00Z",
	  "2026-11-22T11:00:05Z", 3600, "2026-11-22T12:00:05Z", "",
	  "2026-11-22T12:30:00Z", 0 },
	{ "a wake before the user's last sign counts from the sign",
	  "2026-11-22T10:00:00Z", "2026-11-01T00:00:00Z",
	  "2026-11-22T09:30:00Z", 3600, "2026-11-22T11:00:00Z", "",
	  "2026-11-22T11:30:00Z", 0 },
	{ "a heart-wake looked at it after due: not overdue",
	  "2026-11-22T10:00:00Z", "2026-11-01T00:00:00Z", "", 60,
	  "2026-11-22T10:01:00Z", "2026-11-22T10:01:00Z",
	  "2026-11-22T10:09:00Z", 0 },
};

static void
idle_case(const struct idlecase *c)
{
	time_t due = slot_idle_due(utc_or(c->input, 0), utc_or(c->seen, 0),
	    utc_or(c->used, 0), c->after);

	check(c->name, due == utc(c->due) && pulse_overdue(due, c->after,
	    utc_or(c->looked, 0), utc(c->now)) == c->overdue,
	    "due or overdue");
}

int
main(void)
{
	char day[16];
	time_t t = utc("2026-11-22T10:00:00Z");
	struct cap_view v;
	size_t i;

	for (i = 0; i < sizeof caps / sizeof caps[0]; i++)
		cap_case(&caps[i]);
	for (i = 0; i < sizeof brks / sizeof brks[0]; i++)
		brk_case(&brks[i], t);
	for (i = 0; i < sizeof pauses / sizeof pauses[0]; i++)
		pause_case(&pauses[i]);
	for (i = 0; i < sizeof wins / sizeof wins[0]; i++)
		win_case(&wins[i], t);
	for (i = 0; i < sizeof lates / sizeof lates[0]; i++)
		late_case(&lates[i]);
	for (i = 0; i < sizeof overs / sizeof overs[0]; i++)
		over_case(&overs[i]);
	for (i = 0; i < sizeof idles / sizeof idles[0]; i++)
		idle_case(&idles[i]);
	budget_cases();
	monthly_cases();
	fleet_cases();
	bucket_cases(t);
	usage_cases();
	for (i = 0; i < sizeof rates / sizeof rates[0]; i++)
		rate_case(&rates[i], t);
	/* the day's end on DST days: midnight in the zone, 23 h and 25 h */
	memset(&v, 0, sizeof v);
	snprintf(v.zone, sizeof v.zone, "America/New_York");
	snprintf(v.day, sizeof v.day, "2026-03-08");
	check("the 23-hour day resets at 04:00Z",
	    cap_resets_at(&v, utc("2026-03-08T12:00:00Z")) ==
	    utc("2026-03-09T04:00:00Z"), "resets_at");
	snprintf(v.day, sizeof v.day, "2026-11-01");
	check("the 25-hour day resets at 05:00Z",
	    cap_resets_at(&v, utc("2026-11-01T12:00:00Z")) ==
	    utc("2026-11-02T05:00:00Z"), "resets_at");
	clock_day("Europe/London", utc("2026-03-29T00:59:59Z"), day,
	    sizeof day);
	check("London's spring-forward day is that day before 01:00Z",
	    strcmp(day, "2026-03-29") == 0, day);
	printf("1..%d\n", n);
	return failed;
}
