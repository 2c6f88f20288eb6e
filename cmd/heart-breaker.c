/*
 * heart-breaker - the dual-trigger circuit breaker, by hand or in
 * scripts: may a wake go now, feed it an outcome, show it, reset it.
 * Every rule lives in lib/brk.c; this file only wires options to it
 * and prints.  State transitions go to stdout as JSON lines, so a
 * pipeline can turn them into alerts.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"
#include "prog.h"

const char progname[] = "heart-breaker";
const char usage_text[] =
    "usage: heart-breaker check [AGENT] [--soul FILE] [-v]\n"
    "       heart-breaker record [AGENT] ok|llm-fail|tool-fail"
    " [--reason TEXT] [--soul FILE]\n"
    "       heart-breaker status [AGENT...] [--soul FILE]... [--json]\n"
    "       heart-breaker status [AGENT...] [--soul FILE]... --prom[=FILE]"
    "\n"
    "       heart-breaker reset [AGENT] [--soul FILE]\n"
    "       (each with [--store redis://HOST:PORT[/DB]])\n";

static struct prog_opts o;	/* the souls given, the flags */
static struct prog_status st;	/* the agents status shows */
static struct brk_view *views;	/* theirs, as read */

/* The breaker keys of agent's soul in c, or NULL without one: then
 * the breaker goes by the keys it kept, and keeps them. */
static const struct brk_conf *
conf_for(const char *agent, struct brk_conf *c)
{
	const struct soul *s;

	if ((s = soulset_find(&o.set, agent)) == NULL)
		return NULL;
	brk_from_soul(s, c);
	return c;
}

static void
print_events(json_t *events)
{
	size_t i;
	json_t *e;
	char *line;

	json_array_foreach(events, i, e) {
		line = json_dumps(e, JSON_COMPACT);
		puts(line);
		free(line);
	}
	fflush(stdout);
}

/* -v: why a check said what it said, and until when. */
static void
explain(const char *agent, const struct brk_view *v, int allowed,
    int probe, const struct brk_conf *given, time_t now)
{
	const struct brk_conf *c = &v->conf;
	char until[32], left[32], lease[32], whose[64], win[64], d[32];

	clock_utc(v->until, until, sizeof until);
	dur_format(v->until - now, left, sizeof left);
	dur_format(BRK_PROBE_LEASE, lease, sizeof lease);
	if (c->window_fails > 0)
		snprintf(win, sizeof win, "%lld/%lld within %s",
		    v->window_fails, c->window_fails,
		    dur_format(c->window_s, d, sizeof d));
	else
		snprintf(win, sizeof win, "no window");
	if (probe)
		fprintf(stderr, "%s: half_open: this caller holds the probe; "
		    "report it (record) within %s\n", agent, lease);
	else if (allowed)
		fprintf(stderr, "%s: closed: a wake may go (llm %lld/%lld, "
		    "tool %lld/%lld failures, %s; %s)\n", agent, v->llm_fails,
		    c->threshold, v->tool_fails, c->threshold, win,
		    prog_whose_text(given != NULL, v->kept, "keys", whose,
		    sizeof whose));
	else if (v->state == BRK_OPEN)
		fprintf(stderr, "%s: open (%s: %s): no wake until %s (%s)\n",
		    agent, v->trigger, v->reason, until, left);
	else
		fprintf(stderr, "%s: half_open: another caller holds the "
		    "probe; the next may go at %s (%s) if it does not "
		    "report\n", agent, until, left);
}

static int
cmd_check(const char *agent, time_t now)
{
	char err[HEART_ERRLEN];
	json_t *events;
	const struct brk_conf *given;
	struct brk_conf c;
	struct brk_view v;
	int allowed, probe, r;

	if ((r = prog_unknown(&o.set, agent)) != 0)
		return r;	/* a misspelt name is no breaker closed */
	events = json_array();
	given = conf_for(agent, &c);
	r = brk_check(agent, given, now, &allowed, &probe, &v, events, err);
	print_events(events);
	json_decref(events);
	if (r == -1)
		die(store_code(HX_IOERR), err);
	if (o.vflag)
		explain(agent, &v, allowed, probe, given, now);
	return allowed ? HX_OK : HX_NO;
}

static int
cmd_record(int argc, char **argv, const char *reason, time_t now)
{
	char err[HEART_ERRLEN], m[200];
	json_t *events;
	struct brk_conf c;
	const char *agent;
	int flags, r;

	if (argc < 1 || argc > 2)
		usage();
	if ((flags = brk_outcome(argv[argc - 1])) == -1) {
		snprintf(m, sizeof m, "unknown outcome '%.40s' (use ok, "
		    "llm-fail or tool-fail)", argv[argc - 1]);
		die(HX_USAGE, m);
	}
	agent = prog_one_agent(&o.set, argc - 1, argv);
	if ((r = prog_unknown(&o.set, agent)) != 0)
		return r;	/* a misspelt name starts no agent */
	events = json_array();
	r = brk_record(agent, conf_for(agent, &c), now, flags, 0, reason,
	    events, err);
	print_events(events);
	json_decref(events);
	if (r == -1)
		die(store_code(HX_IOERR), err);
	return HX_OK;
}

static void
print_row(const char *agent, const struct brk_view *v, time_t now,
    int header)
{
	char cool[32], until[32], left[32];

	if (header)
		printf("%-*s %-9s %4s %4s %8s  %-20s %8s  %-7s %s\n",
		    st.idw, "AGENT", "STATE", "LLM", "TOOL", "COOLDOWN",
		    "UNTIL", "LEFT", "TRIGGER", "REASON");
	dur_format(v->cooldown, cool, sizeof cool);
	snprintf(until, sizeof until, "-");
	snprintf(left, sizeof left, "-");
	if (v->until > 0) {
		clock_utc(v->until, until, sizeof until);
		dur_format(v->until - now, left, sizeof left);
	}
	printf("%-*s %-9s %4lld %4lld %8s  %-20s %8s  %-7s %s\n", st.idw,
	    agent, brk_state_name(v->state), v->llm_fails, v->tool_fails,
	    cool, until, left, v->trigger[0] ? v->trigger : "-",
	    v->reason[0] ? v->reason : "-");
}

/* An agent's row or line, read into views[k] (prog_status_each). */
static int
status_one(const char *agent, size_t k, int header, time_t now)
{
	char err[HEART_ERRLEN], *line;
	const struct brk_conf *given;
	struct brk_conf c;
	struct brk_view *v = &views[k];
	json_t *j;

	given = conf_for(agent, &c);
	if (brk_peek(agent, given, now, v, err) == -1) {
		say(NULL, err);
		return store_code(HX_IOERR);
	}
	if (o.pflag)
		return HX_OK;
	if (!o.jflag) {
		print_row(agent, v, now, header);
		if (given == NULL && !v->kept)
			st.ndefault++;
		return HX_OK;
	}
	j = brk_json(agent, v, now);
	json_object_set_new(j, "keys_from", json_string(prog_whose(given !=
	    NULL, v->kept)));
	line = json_dumps(j, JSON_COMPACT);
	puts(line);
	free(line);
	json_decref(j);
	return HX_OK;
}

/* The default keys, as the note after a table says them. */
static void
default_keys(char *buf, size_t n)
{
	struct brk_conf c;
	char cool[32], max[32];

	brk_from_soul(NULL, &c);
	snprintf(buf, n, "%lld failures, %s, %s", c.threshold,
	    dur_format(c.cooldown, cool, sizeof cool),
	    dur_format(c.max_cooldown, max, sizeof max));
}

static int
cmd_status(int argc, char **argv, time_t now)
{
	char *text, def[128];
	int rc;

	if (prog_status_names(&o.set, argc, argv, &st, &rc) == -1)
		return rc;
	views = xcalloc(st.n + 1, sizeof *views);
	rc = prog_status_each(&st, status_one, now, rc);
	if (o.pflag) {	/* the figures of the agents read */
		text = prom_breakers(st.names, views, st.nread);
		rc = prog_prom_put(o.promfile, text, rc);
		free(text);
	}
	default_keys(def, sizeof def);
	prog_defaults_note(&st, "keys", def);
	free(views);
	prog_status_free(&st);
	return rc;
}

static int
cmd_reset(const char *agent)
{
	char err[HEART_ERRLEN];
	json_t *events;
	int r;

	if ((r = prog_unknown(&o.set, agent)) != 0)
		return r;
	events = json_array();
	r = brk_reset(agent, events, err);
	print_events(events);
	json_decref(events);
	if (r == -1)
		die(store_code(HX_IOERR), err);
	return HX_OK;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "reason", required_argument, NULL, 'r' },
		PROG_STATUS_LONGOPTS
	};
	const char *cmd, *reason = NULL;
	char err[HEART_ERRLEN];
	time_t now;
	int c, rc;

	warning_sink(prog_warning, NULL);
	while ((c = getopt_long(argc, argv, "r:" PROG_STATUS_SHORTOPTS,
	    longopts, NULL)) != -1) {
		if (c == 'r')
			reason = optarg;
		else
			prog_status_opt(c, argc, argv, &o);
	}
	cmd = prog_status_cmd(&argc, &argv, &o);
	if (reason != NULL && strcmp(cmd, "record") != 0)
		die(HX_USAGE, "--reason goes with record only");
	prog_prom_check(cmd, &o);
	if ((rc = redisstore_open(o.store, err)) != 0)
		die(rc, err);
	now = time(NULL);
	if (strcmp(cmd, "check") == 0)
		rc = cmd_check(prog_one_agent(&o.set, argc, argv), now);
	else if (strcmp(cmd, "record") == 0)
		rc = cmd_record(argc, argv, reason, now);
	else if (strcmp(cmd, "status") == 0)
		rc = cmd_status(argc, argv, now);
	else if (strcmp(cmd, "reset") == 0)
		rc = cmd_reset(prog_one_agent(&o.set, argc, argv));
	else
		prog_no_cmd(cmd, "check, record, status or reset");
	soulset_free(&o.set);
	return rc;
}
