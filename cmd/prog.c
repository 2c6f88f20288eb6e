/*
 * prog.c - what every program of heart says the same way (prog.h), and
 * how the status commands (heart-cap, heart-breaker) answer for the
 * souls and agent operands they are given (soulset.c decides).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"
#include "prog.h"

void
usage(void)
{
	fputs(usage_text, stderr);
	exit(HX_USAGE);
}

void
warn(const char *who, const char *msg)
{
	char line[2 * HEART_ERRLEN + 300];

	text_line(line, sizeof line, msg, strlen(msg));
	fprintf(stderr, "%s: %s%s%s\n", progname, who ? who : "",
	    who ? ": " : "", line);
}

void
die(int code, const char *msg)
{
	warn(NULL, msg);
	exit(code);
}

/* Load a --soul FILE into set, or exit 78; its warnings are said. */
void
prog_add_soul(struct soulset *set, const char *path)
{
	char err[HEART_ERRLEN];
	size_t i;

	if (soulset_add(set, path, err) == -1)
		die(HX_CONFIG, err);
	for (i = 0; i < set->s[set->n - 1]->nwarn; i++)
		warn("warning", set->s[set->n - 1]->warn[i]);
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
	warn(NULL, err);
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
