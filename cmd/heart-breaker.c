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
#include <unistd.h>

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

static struct soulset set;	/* the souls given */
static int jflag, vflag, pflag;
static int idw = 20;		/* the table's AGENT column */
static int ndefault;		/* rows shown with the default keys */
static const char *promfile;

/* The breaker keys of agent's soul in c, or NULL without one: then
 * the breaker goes by the keys it kept, and keeps them. */
static const struct brk_conf *
conf_for(const char *agent, struct brk_conf *c)
{
	const struct soul *s;

	if ((s = soulset_find(&set, agent)) == NULL)
		return NULL;
	brk_from_soul(s, c);
	return c;
}

/* Whose keys: the soul's, those kept from its soul, or the defaults. */
static const char *
keys_from(const struct brk_conf *given, const struct brk_view *v)
{
	if (given != NULL)
		return "the soul's keys";
	return v->kept ? "the keys kept from its soul" : "the default keys: "
	    "no soul given, none kept";
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
	char until[32], left[32], lease[32];

	clock_utc(v->until, until, sizeof until);
	dur_format(v->until - now, left, sizeof left);
	dur_format(BRK_PROBE_LEASE, lease, sizeof lease);
	if (probe)
		fprintf(stderr, "%s: half_open: this caller holds the probe; "
		    "report it (record) within %s\n", agent, lease);
	else if (allowed)
		fprintf(stderr, "%s: closed: a wake may go (llm %lld/%lld, "
		    "tool %lld/%lld failures; %s)\n", agent, v->llm_fails,
		    c->threshold, v->tool_fails, c->threshold,
		    keys_from(given, v));
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
	json_t *events = json_array();
	const struct brk_conf *given;
	struct brk_conf c;
	struct brk_view v;
	int allowed, probe, r;

	given = conf_for(agent, &c);
	r = brk_check(agent, given, now, &allowed, &probe, &v, events, err);
	print_events(events);
	json_decref(events);
	if (r == -1)
		die(store_code(HX_IOERR), err);
	if (vflag)
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
	agent = prog_one_agent(&set, argc - 1, argv);
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
		    idw, "AGENT", "STATE", "LLM", "TOOL", "COOLDOWN", "UNTIL",
		    "LEFT", "TRIGGER", "REASON");
	dur_format(v->cooldown, cool, sizeof cool);
	snprintf(until, sizeof until, "-");
	snprintf(left, sizeof left, "-");
	if (v->until > 0) {
		clock_utc(v->until, until, sizeof until);
		dur_format(v->until - now, left, sizeof left);
	}
	printf("%-*s %-9s %4lld %4lld %8s  %-20s %8s  %-7s %s\n", idw, agent,
	    brk_state_name(v->state), v->llm_fails, v->tool_fails, cool,
	    until, left, v->trigger[0] ? v->trigger : "-",
	    v->reason[0] ? v->reason : "-");
}

static int
status_one(const char *agent, time_t now, int header, struct brk_view *v)
{
	char err[HEART_ERRLEN], *line;
	const struct brk_conf *given;
	struct brk_conf c;
	json_t *j;

	given = conf_for(agent, &c);
	if (brk_peek(agent, given, now, v, err) == -1) {
		warn(NULL, err);
		return store_code(HX_IOERR);
	}
	if (pflag)
		return HX_OK;
	if (!jflag) {
		print_row(agent, v, now, header);
		if (given == NULL && !v->kept)
			ndefault++;
		return HX_OK;
	}
	j = brk_json(agent, v, now);
	json_object_set_new(j, "keys_from", json_string(given != NULL ?
	    "soul" : v->kept ? "kept" : "default"));
	line = json_dumps(j, JSON_COMPACT);
	puts(line);
	free(line);
	json_decref(j);
	return HX_OK;
}

/* --prom: the figures on stdout, or in the file, replaced whole only
 * when every agent could be read. */
static int
print_prom(char **names, const struct brk_view *v, size_t n, time_t now,
    int rc)
{
	char err[HEART_ERRLEN], *text;

	text = prom_breakers(names, v, n, now);
	if (promfile == NULL)
		fputs(text, stdout);
	else if (rc == HX_OK && prom_write(promfile, text, err) == -1) {
		warn(NULL, err);
		rc = HX_IOERR;
	}
	free(text);
	return rc;
}

static int
cmd_status(int argc, char **argv, time_t now)
{
	char err[HEART_ERRLEN];
	char **list, **names;
	struct brk_view *v;
	size_t nl, i, m, n = 0, nk = 0;
	int rc = HX_OK, r;

	for (i = 0; i < (size_t)argc; i++) {
		prog_check_agent(argv[i]);
		if ((r = prog_unknown(&set, argv[i])) == 0)
			argv[nk++] = argv[i];
		else
			rc = r;
	}
	if (argc > 0 && nk == 0)
		return rc;	/* not every agent: none of those named */
	if (store_status_names(argv, nk, set.s, set.n, &names, &m, &list,
	    &nl, err) == -1)
		die(store_code(HX_IOERR), err);
	for (i = 0; i < m; i++)
		if (strlen(names[i]) > (size_t)idw)
			idw = (int)strlen(names[i]);
	v = xcalloc(m + 1, sizeof *v);
	for (i = 0; i < m; i++)
		if ((r = status_one(names[i], now, i == 0, &v[n])) != HX_OK)
			rc = r;
		else
			names[n++] = names[i];	/* the readable, for --prom */
	if (pflag)
		rc = print_prom(names, v, n, now, rc);
	if (ndefault > 0)
		fprintf(stderr, "heart-breaker: %d agent%s shown with the "
		    "default keys (3 failures, 15m, 2h): no soul given, none "
		    "kept; give --soul\n", ndefault, ndefault > 1 ? "s" : "");
	free(v);
	free(names);
	state_free_list(list, nl);
	return rc;
}

static int
cmd_reset(const char *agent)
{
	char err[HEART_ERRLEN];
	json_t *events;
	int r;

	if ((r = prog_unknown(&set, agent)) != 0)
		return r;
	events = json_array();
	r = brk_reset(agent, events, err);
	print_events(events);
	json_decref(events);
	if (r == -1)
		die(store_code(HX_IOERR), err);
	return HX_OK;
}

/*
 * `--prom FILE': getopt takes an optional argument only as --prom=FILE,
 * so the next word is the file when it ends in .prom (the only files
 * node_exporter reads), taken as an option's argument is.
 */
static const char *
prom_operand(int argc, char **argv)
{
	const char *f;
	size_t n;

	if (optind >= argc)
		return NULL;
	f = argv[optind];
	n = strlen(f);
	if (n < 5 || strcmp(f + n - 5, ".prom") != 0)
		return NULL;
	optind++;
	return f;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "soul", required_argument, NULL, 's' },
		{ "reason", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "store", required_argument, NULL, 'S' },
		{ "prom", optional_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd, *reason = NULL, *store = NULL;
	char err[HEART_ERRLEN];
	time_t now;
	int c, rc;

	while ((c = getopt_long(argc, argv, "s:r:jvh", longopts,
	    NULL)) != -1) {
		switch (c) {
		case 's':
			prog_add_soul(&set, optarg);
			break;
		case 'r':
			reason = optarg;
			break;
		case 'j':
			jflag = 1;
			break;
		case 'v':
			vflag = 1;
			break;
		case 'S':
			store = optarg;
			break;
		case 'P':
			pflag = 1;
			promfile = optarg != NULL ? optarg :
			    prom_operand(argc, argv);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return HX_OK;
		case 'V':
			puts("heart-breaker " HEART_VERSION);
			return HX_OK;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	cmd = *argv++;
	argc--;
	if (!isatty(STDOUT_FILENO))
		jflag = 1;
	if (reason != NULL && strcmp(cmd, "record") != 0)
		die(HX_USAGE, "--reason goes with record only");
	if (pflag && strcmp(cmd, "status") != 0)
		die(HX_USAGE, "--prom goes with status only");
	if (promfile != NULL && (strlen(promfile) < 6 || strcmp(promfile +
	    strlen(promfile) - 5, ".prom") != 0))
		die(HX_USAGE, "--prom: the file's name must end in .prom "
		    "(node_exporter's textfile collector reads no other)");
	if ((rc = redis_open(store, err)) != 0)
		die(rc, err);
	now = time(NULL);
	if (strcmp(cmd, "check") == 0)
		rc = cmd_check(prog_one_agent(&set, argc, argv), now);
	else if (strcmp(cmd, "record") == 0)
		rc = cmd_record(argc, argv, reason, now);
	else if (strcmp(cmd, "status") == 0)
		rc = cmd_status(argc, argv, now);
	else if (strcmp(cmd, "reset") == 0)
		rc = cmd_reset(prog_one_agent(&set, argc, argv));
	else
		usage();
	soulset_free(&set);
	return rc;
}
