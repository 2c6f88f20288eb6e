/*
 * prog.c - what every program of heart says the same way (prog.h), and
 * how the status commands (heart-cap, heart-breaker) answer for the
 * options they share, the souls and agent operands they are given
 * (soulset.c and store.c decide), go through the agents they show
 * and hand over --prom's text (prom.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heart.h"
#include "prog.h"

void
usage(void)
{
	fputs(usage_text, stderr);
	exit(HX_USAGE);
}

void
say(const char *who, const char *msg)
{
	char line[2 * HEART_ERRLEN + 300];

	text_line(line, sizeof line, msg, strlen(msg));
	fprintf(stderr, "%s: %s%s%s\n", progname, who ? who : "",
	    who ? ": " : "", line);
}

/* The library's warnings (warning.c), said as the program's own. */
void
prog_warning(void *arg, const char *who, const char *msg)
{
	(void)arg;
	say(who, msg);
}

void
die(int code, const char *msg)
{
	say(NULL, msg);
	exit(code);
}

/* Load a --soul FILE into set, or exit 78; its warnings are said. */
void
prog_add_soul(struct soulset *set, const char *path)
{
	char err[HEART_ERRLEN];
	char *const *warn;
	size_t i, n;

	if (soulset_add(set, path, err) == -1)
		die(HX_CONFIG, err);
	warn = soul_warnings(set->s[set->n - 1], &n);
	for (i = 0; i < n; i++)
		say("warning", warn[i]);
}

/* agent, or exit 64 when it is no agent id. */
const char *
prog_check_agent(const char *agent)
{
	char err[HEART_ERRLEN];

	if (id_check(agent, err) == -1)
		die(HX_USAGE, err);
	return agent;
}

/*
 * 0 when heart knows agent (or a soul given names it); else, having
 * said so, the exit code: a misspelt name is bad usage.
 */
int
prog_unknown(const struct soulset *set, const char *agent)
{
	char err[HEART_ERRLEN];
	int r;

	if ((r = soulset_known(set, agent, err)) == 1)
		return 0;
	say(NULL, err);
	return r == 0 ? HX_USAGE : store_code(HX_IOERR);
}

/* The one agent a take, check or reset is about, or exit 64. */
const char *
prog_one_agent(const struct soulset *set, int argc, char **argv)
{
	char err[HEART_ERRLEN];
	const char *agent;

	if ((agent = soulset_agent(set, argc, argv, err)) == NULL &&
	    *err == '\0')
		usage();
	if (agent == NULL)
		die(HX_USAGE, err);
	return agent;
}

/*
 * An option of those every status command takes (PROG_STATUS_LONGOPTS),
 * c as getopt_long returned it, into o: --help and --version end the
 * program, and an option not of those is bad usage.
 */
void
prog_status_opt(int c, int argc, char **argv, struct prog_opts *o)
{
	switch (c) {
	case 's':
		prog_add_soul(&o->set, optarg);
		break;
	case 'j':
		o->jflag = 1;
		break;
	case 'v':
		o->vflag = 1;
		break;
	case 'S':
		o->store = optarg;
		break;
	case 'P':
		o->pflag = 1;
		o->promfile = optarg != NULL ? optarg :
		    prog_prom_operand(argc, argv);
		break;
	case 'h':
		fputs(usage_text, stdout);
		exit(HX_OK);
	case 'V':
		printf("%s %s\n", progname, HEART_VERSION);
		exit(HX_OK);
	default:
		usage();
	}
}

/* A command word the program has not: said, with those it has (cmds,
 * "take, status or reset"), exit 64. */
void
prog_no_cmd(const char *cmd, const char *cmds)
{
	char m[300];

	snprintf(m, sizeof m, "%.40s: no such command (use %s; %s --help "
	    "shows each)", cmd, cmds, progname);
	die(HX_USAGE, m);
}

/*
 * The command word after the options, argc and argv moved past it;
 * exit 64 without one.  Off a terminal, status speaks JSON lines.
 */
const char *
prog_status_cmd(int *argc, char ***argv, struct prog_opts *o)
{
	*argc -= optind;
	*argv += optind;
	if (*argc < 1)
		usage();
	(*argc)--;
	if (!isatty(STDOUT_FILENO))
		o->jflag = 1;
	return *(*argv)++;
}

/*
 * The agents a status command shows, into st (prog_status_free): the
 * operands heart knows, each other said and *rc its exit code; with
 * none named, the souls' and every agent the store keeps.  -1 when
 * agents were named and heart knows none of them: show nothing.
 */
int
prog_status_names(const struct soulset *set, int argc, char **argv,
    struct prog_status *st, int *rc)
{
	char err[HEART_ERRLEN];
	size_t i, nk = 0;
	int r;

	*rc = HX_OK;
	for (i = 0; i < (size_t)argc; i++) {
		prog_check_agent(argv[i]);
		if ((r = prog_unknown(set, argv[i])) == 0)
			argv[nk++] = argv[i];
		else
			*rc = r;
	}
	if (argc > 0 && nk == 0)
		return -1;	/* not every agent: none of those named */
	if (store_status_names(argv, nk, set->s, set->n, &st->names,
	    &st->n, &st->list, &st->nl, err) == -1)
		die(store_code(HX_IOERR), err);
	st->nread = 0;
	st->ndefault = 0;
	st->idw = 20;
	for (i = 0; i < st->n; i++)
		if (strlen(st->names[i]) > (size_t)st->idw)
			st->idw = (int)strlen(st->names[i]);
	return 0;
}

/*
 * Show each agent of st: one(agent, k, header, now) is the exit code
 * of the agent it reads into its k-th view.  The agents read stay, in
 * order, the first st->nread names (for --prom); the exit code is
 * rc, or the last agent's that failed.
 */
int
prog_status_each(struct prog_status *st, int (*one)(const char *, size_t,
    int, time_t), time_t now, int rc)
{
	size_t i;
	int r;

	for (i = 0; i < st->n; i++)
		if ((r = one(st->names[i], st->nread, i == 0, now)) != HX_OK)
			rc = r;
		else
			st->names[st->nread++] = st->names[i];
	return rc;
}

void
prog_status_free(struct prog_status *st)
{
	free(st->names);
	state_free_list(st->list, st->nl);
}

/*
 * Whose settings an agent goes by: its soul's (one was given), else
 * those kept from its soul, else the defaults.  prog_whose says it in
 * a word for the status JSON; prog_whose_text as -v says it, `what'
 * being "caps" or "keys".
 */
const char *
prog_whose(int soul, int kept)
{
	return soul ? "soul" : kept ? "kept" : "default";
}

char *
prog_whose_text(int soul, int kept, const char *what, char *buf,
    size_t n)
{
	if (soul)
		snprintf(buf, n, "the soul's %s", what);
	else if (kept)
		snprintf(buf, n, "the %s kept from its soul", what);
	else
		snprintf(buf, n, "the default %s: no soul given, none kept",
		    what);
	return buf;
}

/* After a status table: the rows shown with the default `what'
 * (values, such as "schedule 48, idle 12"), for want of a soul. */
void
prog_defaults_note(const struct prog_status *st, const char *what,
    const char *values)
{
	int n = st->ndefault;

	if (n > 0)
		fprintf(stderr, "%s: %d agent%s shown with the default %s "
		    "(%s): no soul given, none kept; give --soul\n",
		    progname, n, n > 1 ? "s" : "", what, values);
}

/*
 * `--prom FILE': getopt takes an optional argument only as --prom=FILE,
 * so the next word is the file when it ends in .prom (the only files
 * node_exporter reads), taken as an option's argument is; a bare
 * ".prom" too, for prog_prom_check to refuse.
 */
const char *
prog_prom_operand(int argc, char **argv)
{
	const char *f;

	if (optind >= argc)
		return NULL;
	f = argv[optind];
	if (!prom_named(f) && strcmp(f, ".prom") != 0)
		return NULL;
	optind++;
	return f;
}

/* Exit 64 unless --prom goes with status, and its file, if one is
 * given, has a name the collector reads. */
void
prog_prom_check(const char *cmd, const struct prog_opts *o)
{
	if (o->pflag && strcmp(cmd, "status") != 0)
		die(HX_USAGE, "--prom goes with status only");
	if (o->promfile != NULL && !prom_named(o->promfile))
		die(HX_USAGE, "--prom: the file's name must end in .prom "
		    "(node_exporter's textfile collector reads no other)");
}

/* --prom's text on stdout, or in promfile (NULL: none), replaced whole
 * only when rc says every agent could be read; the exit code. */
int
prog_prom_put(const char *promfile, const char *text, int rc)
{
	char err[HEART_ERRLEN];

	if (promfile == NULL)
		fputs(text, stdout);
	else if (rc == HX_OK && prom_write(promfile, text, err) == -1) {
		say(NULL, err);
		rc = HX_IOERR;
	}
	return rc;
}
