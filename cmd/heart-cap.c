/*
 * heart-cap - the daily counter shared by the chambers, by hand or in
 * scripts: take one wake, show the day's budget, reset a counter; and
 * an operator's stop: pause and resume agents, or the whole fleet.
 * Every rule lives in lib/cap.c and lib/pause.c; this file only wires
 * options to them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"
#include "prog.h"

const char progname[] = "heart-cap";
const char usage_text[] =
    "usage: heart-cap take [AGENT] [--chamber schedule|idle] [--soul FILE]"
    " [--cap N] [-v]\n"
    "       heart-cap status [AGENT...] [--soul FILE]... [--json]\n"
    "       heart-cap status [AGENT...] [--soul FILE]... --prom[=FILE]\n"
    "       heart-cap reset [AGENT] [--soul FILE]\n"
    "       heart-cap pause [AGENT...|--all] [--soul FILE]... [--until TIME]"
    " [-v]\n"
    "       heart-cap resume [AGENT...|--all] [--soul FILE]... [-v]\n"
    "       (each with [--store redis://HOST:PORT[/DB]])\n";

static struct prog_opts o;	/* the souls given, the flags */
static struct prog_status st;	/* the agents status shows */
static struct cap_view *views;	/* theirs, as read */
static struct pause_view *pauses;	/* and their pauses */
static struct overdue_view *overdues;	/* and their schedules */
static json_t *holds;		/* the provider accounts held (hold.c) */

/* Does the fleet's budget, reached, refuse a take of agent?  1 refused. */
static int
fleet_refuses(const char *agent, const struct soul *s, enum chamber ch,
    time_t now)
{
	char err[HEART_ERRLEN], why[HEART_ERRLEN];

	switch (cap_fleet_refuses(agent, s, now, why, sizeof why, err)) {
	case -2:
		die(HX_CONFIG, err);
	case -1:
		die(store_code(HX_IOERR), err);
	case 0:
		return 0;
	}
	if (o.vflag)
		printf("%s: %s refused: %s\n", agent, soul_chamber_name(ch),
		    why);
	return 1;
}

static int
cmd_take(const char *agent, enum chamber ch, long long capflag, time_t now)
{
	char err[HEART_ERRLEN], whose[64], flag[64] = "";
	struct soul *s = soulset_find(&o.set, agent);
	struct pause_view pv;
	struct cap_view v;
	struct caps caps;
	int ok, r;

	if ((r = prog_unknown(&o.set, agent)) != 0)
		return r;	/* a misspelt name starts no agent */
	/* a paused agent's script is refused as its wakes are */
	if ((r = pause_peek(agent, now, &pv, err)) == -1)
		die(store_code(HX_IOERR), err);
	if (r == 1) {
		if (o.vflag) {
			pause_why(&pv, err, sizeof err);
			printf("%s: %s refused: %s\n", agent,
			    soul_chamber_name(ch), err);
		}
		return HX_NO;
	}
	if (fleet_refuses(agent, s, ch, now))
		return HX_NO;
	/* without a soul, the caps kept are left as they are */
	if (s != NULL)
		cap_from_soul(s, &caps);
	if (cap_take(agent, ch, s != NULL ? &caps : NULL, capflag,
	    soul_zone(s), now, 1, &ok, &v, err) == -1)
		die(store_code(HX_IOERR), err);
	/* --cap is this take's chamber cap, whoever's the others are */
	if (capflag >= 0)
		snprintf(flag, sizeof flag, "--cap %lld for this take; else ",
		    capflag);
	/* a budget's refusal says so, not the count it left below the cap */
	if (o.vflag && !ok && cap_why(&v, ch, now, err, sizeof err) == 1)
		printf("%s: %s refused: %s\n", agent, soul_chamber_name(ch),
		    err);
	else if (o.vflag)
		printf("%s: %s %s: %lld/%lld today (%s; %s%s)\n", agent,
		    soul_chamber_name(ch), ok ? "admitted" : "refused",
		    v.total, cap_limit(&v.caps, ch), v.day, flag,
		    prog_whose_text(s != NULL, v.have_caps, "caps", whose,
		    sizeof whose));
	return ok ? HX_OK : HX_NO;
}

/* The prompt and completion tokens of j's usage object key. */
static long long
tokens(json_t *j, const char *key)
{
	json_t *u = json_object_get(j, key);

	return json_integer_value(json_object_get(u, "prompt")) +
	    json_integer_value(json_object_get(u, "completion"));
}

/* The forecast's columns of a status object j (cap.c, budget.c):
 * when the daily budget is reached at the last seven days' rate, and
 * on which date the monthly; "-" for a budget not set.  Then the
 * column due, if not NULL. */
static void
print_forecast(json_t *j, const char *due)
{
	json_t *at = json_object_get(j, "budget_at");
	json_t *on = json_object_get(j, "monthly_budget_on");
	int none = json_is_null(json_object_get(j, "rate"));
	const char *monthly = none ? "no forecast" : json_is_string(on) ?
	    json_string_value(on) : json_is_null(json_object_get(j,
	    "monthly_budget")) ? "-" : "not this month";

	printf("%-20s ", none ? "no forecast" : json_is_string(at) ?
	    json_string_value(at) : json_is_null(json_object_get(j,
	    "budget")) ? "-" : "not today");
	if (due != NULL)
		printf("%-14s %s\n", monthly, due);
	else
		printf("%s\n", monthly);
}

static void
print_row(json_t *j, int header)
{
	json_t *ch = json_object_get(j, "chambers");
	char sched[32], idle[32], cost[32];

	if (header)
		printf("%-*s %-10s %-20s %5s %5s %5s %9s %9s %6s %8s %8s %9s  "
		    "%-20s %9s  %-20s %-14s %s\n", st.idw, "AGENT", "DAY",
		    "ZONE", "USED", "CAP", "LEFT", "SCHEDULE", "IDLE", "GHOSTS",
		    "TOKENS", "TRIAGE", "COST", "RESETS", "MONTH", "BUDGET AT",
		    "MONTHLY ON", "DUE");
#define CH(n) json_integer_value(json_object_get(json_object_get(ch, n), \
	"used")), json_integer_value(json_object_get(json_object_get(ch, n), \
	"cap"))
	snprintf(sched, sizeof sched, "%lld/%lld", CH("schedule"));
	snprintf(idle, sizeof idle, "%lld/%lld", CH("idle"));
#undef CH
#define I(k) json_integer_value(json_object_get(j, k))
	price_format(json_is_number(json_object_get(j, "cost")) ?
	    price_nano(json_object_get(j, "cost")) : -1, cost, sizeof cost);
	printf("%-*s %-10s %-20s %5lld %5lld %5lld %9s %9s %6lld %8lld %8lld "
	    "%9s  %-20s ",
	    st.idw, json_string_value(json_object_get(j, "agent")),
	    json_string_value(json_object_get(j, "day")),
	    json_string_value(json_object_get(j, "zone")),
	    I("used"), I("cap"), I("remaining"), sched, idle, I("ghosts"),
	    tokens(j, "tokens"), tokens(j, "triage_tokens"), cost,
	    json_string_value(json_object_get(j, "resets_at")));
#undef I
	price_format(json_is_number(json_object_get(j, "month_cost")) ?
	    price_nano(json_object_get(j, "month_cost")) : -1, cost,
	    sizeof cost);
	printf("%9s  ", cost);
	print_forecast(j, json_is_true(json_object_get(j, "overdue")) ?
	    "overdue" : json_is_string(json_object_get(j, "due")) ?
	    json_string_value(json_object_get(j, "due")) : "-");
}

/* An agent's row or line, read into views[k] (prog_status_each). */
static int
status_one(const char *agent, size_t k, int header, time_t now)
{
	char err[HEART_ERRLEN];
	struct soul *s = soulset_find(&o.set, agent);
	struct cap_view *v = &views[k];
	json_t *j, *dorm = NULL;

	if (cap_peek(agent, soul_zone(s), now, v, err) == -1) {
		say(NULL, err);
		return store_code(HX_IOERR);
	}
	if (s != NULL)
		cap_from_soul(s, &v->caps);
	if (pause_peek(agent, now, &pauses[k], err) == -1 ||
	    overdue_peek(s, now, &overdues[k], err) == -1) {
		say(NULL, err);
		return store_code(HX_IOERR);
	}
	if (o.pflag)
		return HX_OK;
	/* dormant: known only with the soul (its heart.dormant_after) */
	if (s != NULL && dormant_peek(s, now, &dorm, err) == -1) {
		say(NULL, err);
		return store_code(HX_IOERR);
	}
	j = cap_json(agent, v, now);
	json_object_set_new(j, "paused", pause_json(&pauses[k]));
	if (dorm != NULL)
		json_object_set_new(j, "dormant", dorm);
	overdue_json(&overdues[k], j);
	json_object_set_new(j, "caps_from", json_string(prog_whose(s != NULL,
	    v->have_caps)));
	if (s == NULL && !v->have_caps)
		st.ndefault++;
	if (o.jflag) {
		char *line = json_line(j);
		puts(line);
		free(line);
	} else
		print_row(j, header);
	json_decref(j);
	return HX_OK;
}

/* --prom: the figures, and each agent's outbox (heart-ghost(1)), then
 * the fleet's (its budget, its rate use), on stdout, or in the file,
 * replaced whole only when every agent could be read. */
static int
print_prom(char **names, const struct cap_view *v, size_t n, time_t now,
    const char *fleet, int rc)
{
	char err[HEART_ERRLEN], *agents, *text;
	struct outbox_count *c = xcalloc(n + 1, sizeof *c);
	size_t i;

	for (i = 0; i < n; i++)
		if (outbox_count(names[i], &c[i], err) == -1) {
			say(NULL, err);
			rc = HX_IOERR;
		}
	agents = prom_agents(names, n, v, c, pauses, overdues, holds, now);
	if (asprintf(&text, "%s%s", agents, fleet) == -1)
		abort();
	rc = prog_prom_put(o.promfile, text, rc);
	free(agents);
	free(text);
	free(c);
	return rc;
}

/*
 * The fleet's rate use, endpoint by endpoint (HEART_FLEET): printed
 * first, or its --prom text into *prom.
 */
static int
status_rates(time_t now, char **prom)
{
	char err[HEART_ERRLEN], slow[32];
	const char **ep;
	struct rate_view *v;
	size_t n, i;
	json_t *j;
	char *line;
	int rc = HX_OK;

	if (endpoint_names(&ep, &n, err) == -1) {
		say(NULL, err);
		return HX_CONFIG;
	}
	v = xcalloc(n + 1, sizeof *v);
	for (i = 0; i < n && rc == HX_OK; i++)
		if (bucket_peek(ep[i], NULL, now, &v[i], err) == -1) {
			say(NULL, err);
			rc = store_code(HX_IOERR);
		}
	if (rc == HX_OK && o.pflag)
		*prom = prom_rates(v, n, now);
	for (i = 0; rc == HX_OK && !o.pflag && i < n; i++) {
		j = bucket_json(&v[i], now);
		if (o.jflag) {
			line = json_line(j);
			puts(line);
			free(line);
		} else {
			if (i == 0)
				printf("%-20s %13s %17s %9s %7s %5s  %s\n",
				    "ENDPOINT", "REQUESTS/MIN", "TOKENS/MIN",
				    "THROTTLED", "WAITING", "429S",
				    "SLOWED UNTIL");
			snprintf(slow, sizeof slow, "%s", json_is_string(
			    json_object_get(j, "slow_until")) ?
			    json_string_value(json_object_get(j,
			    "slow_until")) : "-");
			printf("%-20s %6lld/%-6lld %8lld/%-8lld %9lld %7lld "
			    "%5lld  %s\n", v[i].endpoint, v[i].requests,
			    v[i].rpm, v[i].tokens, v[i].tpm, v[i].throttled,
			    v[i].waiting, v[i].n429, slow);
		}
		json_decref(j);
	}
	if (rc == HX_OK && n > 0 && !o.pflag && !o.jflag)
		putchar('\n');
	free(v);
	free(ep);
	return rc;
}

/* The fleet's budget as a table of one row (j: budget_json's). */
static void
print_fleet(const struct budget_view *v, json_t *j)
{
	char cost[32], budget[32], mcost[32], monthly[32];

	printf("%-10s %-20s %9s %9s %9s %9s %9s  %-20s %s\n", "FLEET DAY",
	    "ZONE", "COST", "BUDGET", "MONTH", "MONTHLY", "IN FLIGHT",
	    "BUDGET AT", "MONTHLY ON");
	printf("%-10s %-20s %9s %9s %9s %9s %9d  ", v->day, v->zone,
	    price_format(v->cost, cost, sizeof cost), v->fb.daily < 0 ? "-" :
	    price_format(v->fb.daily, budget, sizeof budget),
	    price_format(v->month_cost, mcost, sizeof mcost),
	    v->fb.monthly < 0 ? "-" : price_format(v->fb.monthly, monthly,
	    sizeof monthly), v->inflight);
	print_forecast(json_object_get(j, "fleet"), NULL);
	putchar('\n');
}

/*
 * The fleet's budget (HEART_FLEET's budget:), when it sets one, with
 * no agent named: a JSON line {"fleet":{...}} or a table of one row,
 * printed first, or its --prom text into *prom.
 */
static int
status_fleet(time_t now, char **prom)
{
	char err[HEART_ERRLEN], *line;
	struct budget_view v;
	json_t *j;

	if (endpoint_budget(&v.fb, err) == -1) {
		say(NULL, err);
		return HX_CONFIG;
	}
	if (budget_peek(now, &v, err) == -1) {
		say(NULL, err);
		return store_code(HX_IOERR);
	}
	if (!v.fb.set)
		return HX_OK;
	if (o.pflag) {
		*prom = prom_budget(&v, now);
		return HX_OK;
	}
	j = budget_json(&v, now);
	if (o.jflag) {
		line = json_line(j);
		puts(line);
		free(line);
	} else
		print_fleet(&v, j);
	json_decref(j);
	return HX_OK;
}

/*
 * The provider accounts held, with no agent named: a JSON line
 * {"hold":{...}} each before the agents, or, kept in holds, a line
 * each after the table or --prom's figures.  An exit code.
 */
static int
status_holds(void)
{
	char err[HEART_ERRLEN], *line;
	json_t *h, *j;
	size_t i;

	if (hold_list(&holds, time(NULL), err) == -1) {
		say(NULL, err);
		return store_code(HX_IOERR);
	}
	json_array_foreach(o.jflag && !o.pflag ? holds : NULL, i, h) {
		j = json_pack("{s:O}", "hold", h);
		line = json_line(j);
		puts(line);
		free(line);
		json_decref(j);
	}
	return HX_OK;
}

/* The holds, after the table: a line each. */
static void
print_holds(void)
{
	json_t *h;
	size_t i;

	const char *kind;

	json_array_foreach(holds, i, h) {
		kind = json_string_value(json_object_get(h, "kind"));
		printf("held: %s (key %s): %s (HTTP %lld), since %s, %s %s\n",
		    json_string_value(json_object_get(h, "endpoint")),
		    json_string_value(json_object_get(h, "fingerprint")),
		    strcmp(kind, "quota") == 0 ? "out of credit" :
		    strcmp(kind, "rate") == 0 ? "rate limit" : "key refused",
		    json_integer_value(json_object_get(h, "http")),
		    json_string_value(json_object_get(h, "since")),
		    strcmp(kind, "rate") == 0 ? "until its reset" :
		    "next probe", json_string_value(json_object_get(h,
		    "probe")));
	}
}

/* A pause, after the table: whose (agent; NULL: the whole fleet's),
 * since and until when. */
static void
print_pause(const char *agent, const struct pause_view *v)
{
	char since[32], until[32];

	clock_utc(v->since, since, sizeof since);
	clock_utc(v->until, until, sizeof until);
	printf("paused: %s%s, since %s, until %s\n", agent ? agent :
	    "the whole fleet", agent && v->all ? " (the whole fleet)" : "",
	    since, v->until ? until : "resumed");
}

/*
 * The fleet's pause, before the agents (with none named): a JSON line
 * {"pause":"all","since","until"}, or its line after the table (1:
 * the fleet is paused).  -1 when it cannot be read.
 */
static int
status_pause(struct pause_view *v, time_t now)
{
	char err[HEART_ERRLEN];
	json_t *j, *pj;
	char *line;

	if (pause_peek(NULL, now, v, err) == -1) {
		say(NULL, err);
		return -1;
	}
	if (!v->paused || !o.jflag || o.pflag)
		return v->paused;
	pj = pause_json(v);
	j = json_pack("{s:s,s:O,s:O}", "pause", "all", "since",
	    json_object_get(pj, "since"), "until", json_object_get(pj,
	    "until"));
	json_decref(pj);
	line = json_line(j);
	puts(line);
	free(line);
	json_decref(j);
	return 1;
}

static int
cmd_status(int argc, char **argv, time_t now)
{
	struct pause_view all;
	size_t i;
	int fleet = 0;
	char *rates = NULL, *budget = NULL, *fleetprom, def[64];
	struct caps c;
	int rc, r;

	if (prog_status_names(&o.set, argc, argv, &st, &rc) == -1)
		return rc;
	if (argc == 0 && (r = status_fleet(now, &budget)) != HX_OK)
		rc = r;
	if (argc == 0 && (r = status_rates(now, &rates)) != HX_OK)
		rc = r;
	if (argc == 0 && (fleet = status_pause(&all, now)) == -1)
		rc = store_code(HX_IOERR);
	if (argc == 0 && (r = status_holds()) != HX_OK)
		rc = r;
	views = xcalloc(st.n + 1, sizeof *views);
	pauses = xcalloc(st.n + 1, sizeof *pauses);
	overdues = xcalloc(st.n + 1, sizeof *overdues);
	rc = prog_status_each(&st, status_one, now, rc);
	if (fleet == 1 && !o.jflag && !o.pflag)
		print_pause(NULL, &all);
	for (i = 0; i < st.nread && !o.jflag && !o.pflag; i++)
		if (pauses[i].paused && (!pauses[i].all || fleet != 1))
			print_pause(st.names[i], &pauses[i]);
	if (!o.jflag && !o.pflag)
		print_holds();
	if (asprintf(&fleetprom, "%s%s", budget ? budget : "", rates ? rates :
	    "") == -1)
		abort();
	if (o.pflag)
		rc = print_prom(st.names, views, st.nread, now, fleetprom, rc);
	free(fleetprom);
	free(budget);
	cap_from_soul(NULL, &c);
	snprintf(def, sizeof def, "schedule %lld, idle %lld",
	    c.chamber[CH_SCHEDULE], c.chamber[CH_IDLE]);
	if (!o.jflag && !o.pflag)
		prog_defaults_note(&st, "caps", def);
	free(views);
	free(pauses);
	free(overdues);
	json_decref(holds);
	free(rates);
	prog_status_free(&st);
	return rc;
}

static int
cmd_reset(const char *agent, time_t now)
{
	char err[HEART_ERRLEN];
	struct soul *s = soulset_find(&o.set, agent);
	int r;

	if ((r = prog_unknown(&o.set, agent)) != 0)
		return r;
	if (cap_reset(agent, soul_zone(s), now, err) == -1)
		die(store_code(HX_IOERR), err);
	return HX_OK;
}

/*
 * The agents a pause or resume is for: the operands, else the souls
 * given; none with --all (the fleet).  A misspelt name, or one with
 * --all, changes nothing: the exit code.
 */
static int
pause_names(int argc, char **argv, int all, char ***names, size_t *n,
    const char *cmd)
{
	char m[200];
	size_t i;
	int r;

	*names = NULL;
	*n = 0;
	if (all && (argc > 0 || o.set.n > 0))
		die(HX_USAGE, "--all is the whole fleet: name no agent and "
		    "no soul with it");
	if (!all && argc == 0 && o.set.n == 0) {
		snprintf(m, sizeof m, "%s: which agents? name them, give "
		    "their souls (--soul), or --all for the whole fleet", cmd);
		die(HX_USAGE, m);
	}
	if (all)
		return HX_OK;
	*names = xcalloc((size_t)argc + o.set.n + 1, sizeof **names);
	for (i = 0; i < (size_t)argc; i++)
		(*names)[(*n)++] = (char *)prog_check_agent(argv[i]);
	for (i = 0; argc == 0 && i < o.set.n; i++)
		(*names)[(*n)++] = (char *)soul_name(o.set.s[i]);
	for (i = 0; i < *n; i++)
		if ((r = prog_unknown(&o.set, (*names)[i])) != 0)
			return r;
	return HX_OK;
}

/* What a pause or resume did, with -v; and an agent resumed that the
 * fleet's pause still holds, always. */
static void
say_pause(char **names, size_t n, time_t now)
{
	char err[HEART_ERRLEN], why[160];
	struct pause_view v;
	size_t i;

	for (i = 0; i < (n > 0 ? n : 1); i++) {
		if (pause_peek(n > 0 ? names[i] : NULL, now, &v, err) == -1)
			die(store_code(HX_IOERR), err);
		pause_why(&v, why, sizeof why);
		if (v.paused && o.vflag)
			printf("%s: %s\n", n > 0 ? names[i] :
			    "the whole fleet", why);
		else if (v.paused)
			say(names[i], why);	/* resumed, but the fleet's
						   pause still holds it */
		else if (o.vflag)
			printf("%s: not paused\n", n > 0 ? names[i] :
			    "the whole fleet");
	}
}

static int
cmd_pause(int argc, char **argv, int resume, int all, time_t until,
    time_t now)
{
	char err[HEART_ERRLEN], **names;
	size_t n;
	int r;

	if ((r = pause_names(argc, argv, all, &names, &n, resume ? "resume" :
	    "pause")) != HX_OK) {
		free(names);
		return r;
	}
	if ((resume ? pause_clear(names, n, now, err) : pause_set(names, n,
	    until, now, err)) == -1)
		die(store_code(HX_IOERR), err);
	if (o.vflag || resume)
		say_pause(names, n, now);
	free(names);
	return HX_OK;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "chamber", required_argument, NULL, 'c' },
		{ "cap", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'A' },
		{ "until", required_argument, NULL, 'U' },
		PROG_STATUS_LONGOPTS
	};
	enum chamber ch = CH_SCHEDULE;
	long long capflag = -1;
	const char *cmd, *untilflag = NULL;
	time_t until = 0;
	int allflag = 0;
	char err[HEART_ERRLEN], why[64];
	time_t now;
	int c, rc;

	warning_sink(prog_warning, NULL);
	while ((c = getopt_long(argc, argv, "c:n:" PROG_STATUS_SHORTOPTS,
	    longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (soul_chamber_parse(optarg, &ch) == -1)
				die(HX_USAGE, "--chamber: use schedule or "
				    "idle");
			break;
		case 'n':
			if (num_parse(optarg, 0, 1000000000, &capflag) == -1) {
				snprintf(err, sizeof err, "--cap: %s", num_why(
				    optarg, 0, 1000000000, why, sizeof why));
				die(HX_USAGE, err);
			}
			break;
		case 'A':
			allflag = 1;
			break;
		case 'U':
			untilflag = optarg;
			break;
		default:
			prog_status_opt(c, argc, argv, &o);
		}
	}
	cmd = prog_status_cmd(&argc, &argv, &o);
	prog_prom_check(cmd, &o);
	if ((rc = redisstore_open(o.store, err)) != 0)
		die(rc, err);
	now = time(NULL);
	if ((allflag || untilflag) && strcmp(cmd, "pause") != 0 &&
	    (untilflag || strcmp(cmd, "resume") != 0))
		die(HX_USAGE, allflag && !untilflag ? "--all goes with pause "
		    "and resume only" : "--until goes with pause only");
	if (untilflag != NULL && pause_until(untilflag, now, &until,
	    err) == -1)
		die(HX_USAGE, err);
	if (strcmp(cmd, "take") == 0)
		rc = cmd_take(prog_one_agent(&o.set, argc, argv), ch, capflag,
		    now);
	else if (strcmp(cmd, "status") == 0)
		rc = cmd_status(argc, argv, now);
	else if (strcmp(cmd, "reset") == 0)
		rc = cmd_reset(prog_one_agent(&o.set, argc, argv), now);
	else if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0)
		rc = cmd_pause(argc, argv, cmd[0] == 'r', allflag, until,
		    now);
	else
		prog_no_cmd(cmd, "take, status, reset, pause or resume");
	soulset_free(&o.set);
	return rc;
}
