/*
 * heart-wake - the schedule and idle chambers, one-shot: at most one
 * wake per soul, exactly one wake-result JSON line per soul on stdout,
 * then exit.  Run it every minute from cron or a systemd timer; the
 * soul decides what actually happens.  Every rule is in lib/ (wake.c,
 * run.c); this file wires options to it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heart.h"
#include "prog.h"

const char progname[] = "heart-wake";
const char usage_text[] =
    "usage: heart-wake --soul FILE... [--chamber schedule|idle|auto]"
    " [--force] [--dry-run]\n"
    "       heart-wake --souls DIR [--jobs N] [--span DURATION]"
    " [--chamber C]\n"
    "                  [--force] [--dry-run]\n"
    "       heart-wake --explain --soul FILE... | --souls DIR"
    " [--chamber C] [--force]\n"
    "       heart-wake --list-tools --soul FILE...\n"
    "       heart-wake --touch AGENT [--soul FILE]\n"
    "       heart-wake --why AGENT [--soul FILE] [--since TIME] [--json]\n"
    "       (each with [--store redis://HOST:PORT[/DB]])\n";

/* A failed MCP server's standard error, a line at a time. */
static void
tell(const char *agent, const char *server, const char *text)
{
	char who[HEART_IDMAX + 80], *safe = secret_dup(text), *p, *nl;

	snprintf(who, sizeof who, "%s: mcp server %s: stderr", agent,
	    server);
	for (p = safe; *p != '\0'; p = nl) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		else
			nl = p + strlen(p);
		if (*p != '\0')
			say(who, p);
	}
	free(safe);
}

static void
tell_list(void *arg, const char *server, const char *text)
{
	tell(arg, server, text);
}

/* A round's cached lines, written whole in writes of many lines: an
 * idle round of thousands of souls is not a write(2) a soul. */
static char	pend[65536];
static size_t	npend;

static void
flush_pending(void)
{
	if (npend > 0) {
		fflush(stdout);
		state_write_all(STDOUT_FILENO, pend, npend);
		npend = 0;
	}
}

static void
print_json(json_t *j)
{
	char *line = json_line(j);

	flush_pending();
	puts(line);
	fflush(stdout);
	free(line);
}

/* A wake's result: a real answer is kept in the agent's outbox first,
 * until heart-ghost has it (heart-wake(1), THE WAKE RESULT). */
static int
print_result(const char *name, json_t *j)
{
	char *line = json_line(j), err[HEART_ERRLEN];
	char m[HEART_ERRLEN + 80];
	int rc = HX_OK;

	if (outbox_keep(j, line, err) == -1) {
		snprintf(m, sizeof m, "the answer is not kept for heart-ghost: "
		    "%s", err);
		say(name, m);
		rc = HX_IOERR;
	}
	flush_pending();
	puts(line);
	fflush(stdout);
	free(line);
	return rc;
}

/* A wake's result, then the breaker's notice it made, if any
 * (heart-wake(1), NOTICES): kept and printed as a result is. */
static int
print_wake(const char *name, json_t *j)
{
	json_t *n = notice_of(j);
	int rc = print_result(name, j);

	if (n != NULL) {
		rc = hx_worse(rc, print_result(name, n));
		json_decref(n);
	}
	return rc;
}

/* The MCP servers a wake would start, and their tools offered. */
static void
mcp_text(const json_t *plan)
{
	const json_t *srv, *t;
	size_t i, j;

	json_array_foreach(plan, i, srv) {
		printf("  mcp        %s:", json_string_value(json_object_get(
		    srv, "server")));
		json_array_foreach(json_object_get(srv, "tools"), j, t)
			printf("%s %s", j ? "," : "", json_string_value(t));
		printf("%s (not started)\n", json_array_size(json_object_get(
		    srv, "tools")) ? "" : " no tool allowed, never started;");
	}
}

/* --explain on a terminal: what a wake would say, when one will next
 * be admitted, and each gate's verdict. */
static void
explain_text(json_t *arr)
{
	const char *reason, *why, *next, *gate;
	json_t *o, *v;
	size_t i;

	json_array_foreach(arr, i, o) {
		reason = json_string_value(json_object_get(o, "reason"));
		why = json_string_value(json_object_get(json_object_get(o,
		    "adaptive"), "why"));
		next = json_string_value(json_object_get(o, "next"));
		printf("%s %s%s: %s%s%s\n",
		    json_string_value(json_object_get(o, "agent")),
		    json_string_value(json_object_get(o, "chamber")),
		    json_is_true(json_object_get(o, "force")) ? " (--force)" :
		    "", json_string_value(json_object_get(o, "would")),
		    reason ? ": " : " now", reason ? reason : "");
		printf("  next wake: %s\n", next ? next : "none foreseen");
		json_object_foreach(json_object_get(o, "gates"), gate, v)
			printf("  %-10s %-3s %s\n", gate,
			    json_is_true(json_object_get(v, "ok")) ? "yes" :
			    "no", json_string_value(json_object_get(v,
			    "reason")));
		if (why != NULL)
			printf("  adaptive: %s\n", why);
		mcp_text(json_object_get(o, "mcp"));
	}
}

/* --list-tools on a terminal */
static void
list_text(const json_t *j)
{
	const json_t *srv, *t;
	const char *agent = json_string_value(json_object_get(j, "agent"));
	size_t i, k;

	json_array_foreach(json_object_get(j, "servers"), i, srv) {
		printf("%s %s: %s\n", agent, json_string_value(json_object_get(
		    srv, "server")), json_is_true(json_object_get(srv, "ok")) ?
		    json_string_value(json_object_get(srv, "protocol")) :
		    json_string_value(json_object_get(srv, "error")));
		json_array_foreach(json_object_get(srv, "tools"), k, t)
			printf("  %-3s %s%s%s\n", json_is_true(json_object_get(
			    t, "allowed")) ? "yes" : "no", json_string_value(
			    json_object_get(t, "name")), json_is_string(
			    json_object_get(t, "as")) ? "" : " (its name "
			    "cannot be offered)", "");
	}
}

/*
 * --list-tools: start every MCP server of the soul, allowed or not,
 * and list its tools (the allowed ones marked), then stop them.
 */
static int
list_tools(struct soul *s)
{
	const char *name = soul_name(s);
	struct tool_ctx ctx = { name, NULL, NULL, NULL, NULL };
	char err[HEART_ERRLEN];
	struct mcp *m;
	json_t *j;
	int nfail;

	nfail = mcp_open(s, &ctx, HEART_VERSION, 1, &m, err);
	j = json_pack("{s:s,s:o}", "agent", name, "servers", mcp_list(m));
	mcp_close(m, tell_list, (void *)name);
	if (nfail > 0)
		say(name, err);
	if (isatty(STDOUT_FILENO))
		list_text(j);
	else
		print_json(j);
	json_decref(j);
	return nfail > 0 ? HX_UNAVAILABLE : HX_OK;
}

/* A round's result: its messages, then the line, kept first when it
 * is a real answer. */
static void
round_line(void *arg, const char *agent, json_t *j, int rc, const char *err)
{
	char who[HEART_IDMAX + 16];

	(void)arg;
	if (json_is_string(json_object_get(j, "warning"))) {
		snprintf(who, sizeof who, "%s: warning", agent);
		say(who, json_string_value(json_object_get(j, "warning")));
	}
	if (rc != HX_OK && err != NULL && *err != '\0')
		say(agent, err);
	if (agent != NULL && rc == HX_OK)
		rc = print_wake(agent, j);
	else if (agent != NULL)
		print_wake(agent, j);
	else
		print_json(j);
}

/* A skip given again from the soul cache. */
static void
round_text(void *arg, const char *line)
{
	size_t n = strlen(line);

	(void)arg;
	if (npend + n + 1 > sizeof pend)
		flush_pending();
	if (n + 1 > sizeof pend) {
		puts(line);
		fflush(stdout);
		return;
	}
	memcpy(pend + npend, line, n);
	pend[npend + n] = '\n';
	npend += n + 1;
}

/* The round waits for a wake of its span. */
static void
round_flush(void *arg)
{
	(void)arg;
	flush_pending();
}

static int
one_soul(const char *path, const struct run_opts *o, int explain,
    const char *dir, time_t now)
{
	char err[HEART_ERRLEN], who[HEART_IDMAX + 16];
	char *const *warn;
	struct soul *s;
	json_t *j;
	size_t i, n;
	int rc;

	if (soul_load(path, &s, err) == -1) {
		say(NULL, err);
		if (!explain) {
			j = run_refused(HX_CONFIG, err, now);
			print_json(j);
			json_decref(j);
		}
		return HX_CONFIG;
	}
	for (warn = soul_warnings(s, &n), i = 0; i < n; i++)
		say("warning", warn[i]);
	if (explain == 2) {
		rc = list_tools(s);
		soul_free(s);
		return rc;
	}
	if (explain) {
		if ((rc = explain_soul(s, o, dir, now, &j, err)) != 0) {
			say(NULL, err);
			soul_free(s);
			return store_code(rc);
		}
		if (isatty(STDOUT_FILENO))
			explain_text(j);
		else
			for (i = 0; i < json_array_size(j); i++)
				print_json(json_array_get(j, i));
		json_decref(j);
		soul_free(s);
		return HX_OK;
	}
	rc = run_wake(s, o, now, &j, err);
	/* a warning first: it was found before the wake went */
	if (json_is_string(json_object_get(j, "warning"))) {
		snprintf(who, sizeof who, "%s: warning", soul_name(s));
		say(who, json_string_value(json_object_get(j, "warning")));
	}
	if (rc != HX_OK)
		say(soul_name(s), err);
	rc = hx_worse(rc, print_wake(soul_name(s), j));
	json_decref(j);
	soul_free(s);
	return rc;
}

/*
 * The one agent of --touch or --why (opt), named or of the one soul
 * given: 0, or the exit code of a misspelt name (a misspelt name must
 * not start a new agent).
 */
static int
known_agent(const char *opt, char **agent, char **paths, int n)
{
	struct soulset set = { NULL, 0 };
	char msg[64];
	int r;

	if (n > 1) {
		snprintf(msg, sizeof msg, "%s: one agent, one soul at most",
		    opt);
		die(HX_USAGE, msg);
	}
	if (n == 1)
		prog_add_soul(&set, paths[0]);
	prog_one_agent(&set, 1, agent);
	r = prog_unknown(&set, *agent);
	soulset_free(&set);
	return r;
}

/* --touch: the user's input now, of an agent heart knows or whose soul
 * is given (before its first wake). */
static int
touch_input(char *agent, char **paths, int n, time_t now)
{
	char err[HEART_ERRLEN];
	int r;

	if ((r = known_agent("--touch", &agent, paths, n)) != 0)
		return r;
	if (hist_touch_input(agent, now, err) == -1)
		die(HX_IOERR, err);
	return HX_OK;
}

/* --why: one entry of the journal, for a person. */
static void
why_text(const json_t *e)
{
	const char *reason = json_string_value(json_object_get(e, "reason"));

	printf("%s %s %s: %s  [%s]\n",
	    json_string_value(json_object_get(e, "at")),
	    json_string_value(json_object_get(e, "chamber")),
	    json_string_value(json_object_get(e, "status")),
	    reason ? reason : "-",
	    json_string_value(json_object_get(e, "wake_id")));
}

/*
 * --why: the agent's journal (heart-wake(1), THE JOURNAL), its entries
 * from since on, oldest first: text for a person, JSON lines with
 * --json or when stdout is not a terminal.  A misspelt agent is bad
 * usage, as --touch has it.
 */
static int
why(char *agent, char **paths, int n, const char *sinceflag, int jflag,
    time_t now)
{
	char err[HEART_ERRLEN];
	time_t since = 0;
	json_t *arr, *e;
	size_t i;
	int r;

	if (sinceflag != NULL && journal_since(sinceflag, now, &since,
	    err) == -1)
		die(HX_USAGE, err);
	if ((r = known_agent("--why", &agent, paths, n)) != 0)
		return r;
	if (journal_read(agent, since, 0, &arr, err) == -1)
		die(store_code(HX_IOERR), err);
	json_array_foreach(arr, i, e) {
		if (jflag || !isatty(STDOUT_FILENO)) {
			json_object_set_new(e, "agent", json_string(agent));
			print_json(e);
		} else
			why_text(e);
	}
	json_decref(arr);
	return HX_OK;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "soul", required_argument, NULL, 's' },
		{ "chamber", required_argument, NULL, 'c' },
		{ "force", no_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "explain", no_argument, NULL, 'e' },
		{ "list-tools", no_argument, NULL, 'L' },
		{ "touch", required_argument, NULL, 't' },
		{ "why", required_argument, NULL, 'w' },
		{ "since", required_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'J' },
		{ "store", required_argument, NULL, 'S' },
		{ "souls", required_argument, NULL, 'D' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "span", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct run_opts o = { -1, 0, 0, HEART_VERSION, tell, 0 };
	struct round_hooks hooks = { round_line, round_text, round_flush,
	    NULL };
	char err[HEART_ERRLEN], **souls = NULL, **found = NULL;
	const char *store = NULL, *dir = NULL;
	char *touch = NULL, *whyagent = NULL;
	const char *sinceflag = NULL;
	int jflag = 0;
	int c, explain = 0, rc = HX_OK, n = 0, i, jobs = 0;
	size_t nfound = 0, k;
	long long x, span = -1;
	enum chamber ch;
	time_t now;

	warning_sink(prog_warning, NULL);
	souls = xcalloc((size_t)argc + 1, sizeof *souls);
	while ((c = getopt_long(argc, argv, "s:j:c:fneLt:h", longopts,
	    NULL)) != -1) {
		switch (c) {
		case 's':
			souls[n++] = optarg;
			break;
		case 'c':
			if (strcmp(optarg, "auto") == 0)
				o.chamber = -1;
			else if (soul_chamber_parse(optarg, &ch) == 0)
				o.chamber = (int)ch;
			else
				die(HX_USAGE, "--chamber: use schedule, idle "
				    "or auto");
			break;
		case 'f':
			o.force = 1;
			break;
		case 'n':
			o.dry_run = 1;
			break;
		case 'e':
			if (explain == 2)
				die(HX_USAGE, "--explain or --list-tools: "
				    "one of them");
			explain = 1;
			break;
		case 'L':
			if (explain == 1)
				die(HX_USAGE, "--explain or --list-tools: "
				    "one of them");
			explain = 2;
			break;
		case 't':
			touch = optarg;
			break;
		case 'w':
			whyagent = optarg;
			break;
		case 'I':
			sinceflag = optarg;
			break;
		case 'J':
			jflag = 1;
			break;
		case 'S':
			store = optarg;
			break;
		case 'D':
			if (dir != NULL)
				die(HX_USAGE, "--souls: one directory");
			dir = optarg;
			break;
		case 'j':
			if (num_parse(optarg, 1, 1024, &x) == -1)
				die(HX_USAGE, "--jobs: a number from 1 to 1024");
			jobs = (int)x;
			break;
		case 'P':
			if (dur_parse(optarg, &span) == -1 || span < 0 ||
			    span > 3600)
				die(HX_USAGE, "--span: a duration from 0s to 1h, "
				    "such as 50s");
			break;
		case 'h':
			fputs(usage_text, stdout);
			free(souls);
			return HX_OK;
		case 'V':
			puts("heart-wake " HEART_VERSION);
			free(souls);
			return HX_OK;
		default:
			usage();
		}
	}
	for (i = optind; i < argc; i++)
		souls[n++] = argv[i];
	if (explain && o.dry_run)
		die(HX_USAGE, explain == 1 ? "--explain changes nothing and "
		    "sends nothing already: leave out --dry-run" :
		    "--list-tools sends nothing already: leave out --dry-run");
	if ((rc = redisstore_open(store, err)) != 0)
		die(rc, err);
	now = time(NULL);
	if ((sinceflag != NULL || jflag) && whyagent == NULL)
		die(HX_USAGE, "--since and --json go with --why only");
	if (whyagent != NULL) {
		if (touch != NULL || explain || o.dry_run || dir != NULL)
			die(HX_USAGE, "--why reads the journal: it goes with "
			    "--soul, --since and --json only");
		rc = why(whyagent, souls, n, sinceflag, jflag, now);
		free(souls);
		return rc;
	}
	if (touch != NULL) {
		rc = touch_input(touch, souls, n, now);
		free(souls);
		return rc;
	}
	if (dir != NULL && soulset_dir(dir, &found, &nfound, err) == -1)
		die(HX_USAGE, err);
	if (dir != NULL && n > 0)
		die(HX_USAGE, "--souls or --soul: one of them");
	if (n == 0 && dir == NULL)
		usage();
	if (explain == 2 && dir != NULL)
		die(HX_USAGE, "--list-tools: give the souls with --soul");
	if (explain && span >= 0)
		die(HX_USAGE, "--span: a round's; --explain and --list-tools "
		    "wake nothing");
	if (!explain && (dir != NULL || jobs > 0 || span >= 0)) {
		rc = round_run(dir != NULL ? found : souls, dir != NULL ?
		    nfound : (size_t)n, dir, &o, jobs > 0 ? jobs : 1,
		    span > 0 ? (time_t)span : 0, now, &hooks);
		flush_pending();
	} else if (dir != NULL) {
		/* "why did it not fire?" of a directory it finds no soul in */
		if (nfound == 0)
			say(dir, "no soul here to explain (souls are *.yaml, "
			    "*.yml, and *.md files that open with a --- line; "
			    "see ROUNDS in heart-wake(1))");
		for (k = 0; k < nfound; k++)
			rc = hx_worse(rc, one_soul(found[k], &o, explain, dir,
			    now));
	} else
		for (i = 0; i < n; i++)
			rc = hx_worse(rc, one_soul(souls[i], &o, explain, NULL,
			    now));
	state_free_list(found, nfound);
	free(souls);
	return rc;
}
