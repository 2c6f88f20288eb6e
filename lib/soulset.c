/*
 * soulset.c - lists of souls: the soul files of a directory (--souls
 * DIR, heart-wake(1) and heart-pulse(1)), and the souls a status
 * command was given (--soul FILE..., heart-cap(1), heart-breaker(1))
 * with the agent operands they answer for: which one agent a take,
 * check or reset is about, and whether heart knows an agent at all.
 *
 * Invariant: every soul in a set loaded; a set's souls are the set's
 * to free.  A directory's list is sorted by name, and names every file
 * that may be a soul, loaded or not.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartsoul.h"
#include "heartstore.h"

/* Load the soul at path into set: 0, or -1 with err. */
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

/* The soul of set named agent, or NULL. */
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

static int
cmpstr(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* A Markdown file is a soul only when it opens with a "---" line: a
 * checklist such as HEARTBEAT.md beside the souls is not one. */
static int
soul_file(const char *dir, const char *name)
{
	const char *dot = strrchr(name, '.');
	char path[4096], head[4];
	size_t n;
	FILE *fp;
	int md;

	if (name[0] == '.' || dot == NULL || (strcmp(dot, ".yaml") != 0 &&
	    strcmp(dot, ".yml") != 0 && strcmp(dot, ".md") != 0))
		return 0;
	if (!(md = strcmp(dot, ".md") == 0))
		return 1;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fp = fopen(path, "r")) == NULL)
		return 1;	/* soul_load will say why */
	n = fread(head, 1, sizeof head, fp);
	md = n >= 3 && memcmp(head, "---", 3) == 0 && (n == 3 ||
	    head[3] == '\n' || head[3] == '\r');
	fclose(fp);
	return md;
}

/*
 * The soul files of dir, sorted: *.yaml, *.yml, and *.md that open
 * with "---"; not a dot file, not a directory, not a FIFO.  The one
 * rule of a soul directory (heart-pulse --souls, heart-wake --souls).
 * A name that cannot be followed (a link to nowhere, a file it may
 * not read) is listed: soul_load says why it is no soul, rather than
 * the soul vanishing without a word.
 */
int
soulset_dir(const char *dir, char ***out, size_t *no, char *err)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	char **v = NULL;
	size_t n = 0;
	DIR *dp;

	if ((dp = opendir(dir)) == NULL) {
		soul_unread(dir, err);
		return -1;
	}
	while ((de = readdir(dp)) != NULL) {
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		/* the directory's word for it, when it has one (a
		 * symbolic link is followed); before soul_file reads an
		 * .md file's head, which for a FIFO would wait for ever */
		if (de->d_type != DT_REG && ((de->d_type != DT_UNKNOWN &&
		    de->d_type != DT_LNK) || (stat(path, &st) == 0 &&
		    !S_ISREG(st.st_mode))))
			continue;
		if (!soul_file(dir, de->d_name))
			continue;
		if ((v = realloc(v, (n + 1) * sizeof *v)) == NULL)
			abort();
		v[n++] = xstrdup(path);
	}
	closedir(dp);
	if (n > 0)
		qsort(v, n, sizeof *v, cmpstr);
	*out = v;
	*no = n;
	return 0;
}
