/*
 * soulset.c - the souls a status command was given (--soul FILE...,
 * heart-cap(1), heart-breaker(1)) and the agent operands they answer
 * for: which one agent a take, check or reset is about, and whether
 * heart knows an agent at all.
 *
 * Invariant: every soul in a set loaded; a set's souls are the set's
 * to free.
 */
#include <stdlib.h>
#include <string.h>

#include "heartint.h"

int
soulset_add(struct soulset *set, const char *path, char *err)
{
	struct soul *s, **v;

	if (soul_load(path, &s, err) == -1)
		return -1;
	if ((v = realloc(set->s, (set->n + 1) * sizeof *v)) == NULL)
		abort();
	set->s = v;
	set->s[set->n++] = s;
	return 0;
}

struct soul *
soulset_find(const struct soulset *set, const char *agent)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (strcmp(set->s[i]->name, agent) == 0)
			return set->s[i];
	return NULL;
}

/*
 * The one agent a command is about: the operand, else the one soul's
 * name.  NULL when the words cannot name one: with err empty, the
 * command's usage is wrong; else err says why.
 */
const char *
soulset_agent(const struct soulset *set, int argc, char **argv, char *err)
{
	*err = '\0';
	if (argc > 1 || set->n > 1 || (argc == 0 && set->n == 0))
		return NULL;
	if (argc == 0)
		return set->s[0]->name;
	if (set->n == 1 && strcmp(set->s[0]->name, argv[0]) != 0) {
		errf(err, "the AGENT operand and the soul's name differ");
		return NULL;
	}
	return id_check(argv[0], err) == -1 ? NULL : argv[0];
}

/*
 * Does heart know agent: a soul given names it, or the store keeps
 * state for it?  1 yes; 0 no, err saying so (a misspelt name); -1 the
 * store failed, with err.
 */
int
soulset_known(const struct soulset *set, const char *agent, char *err)
{
	int r;

	if (soulset_find(set, agent) != NULL)
		return 1;
	if ((r = store_known(agent, err)) == 0)
		errf(err, "%s: no such agent (heart has no state for it: "
		    "check the name, or give its soul with --soul)", agent);
	return r;
}

void
soulset_free(struct soulset *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		soul_free(set->s[i]);
	free(set->s);
	set->s = NULL;
	set->n = 0;
}
