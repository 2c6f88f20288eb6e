/*
 * fleetsouls.c - a fleet's agents from their souls (fleet.c keeps
 * them): the soul files of a directory, and the fleet loaded, and
 * loaded again on demand, from those and the files given: agents
 * added, changed and removed.
 *
 * Invariants: one agent per id, from the first soul that names it (the
 * directory's in name order, then the files given); a soul that does
 * not load leaves its agent as it was; an agent loaded again keeps its
 * slot, its seq and its state; an agent no soul names any more leaves
 * the schedule and the watches and goes to fleet_gone.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"

static int
cmpagent(const void *x, const void *y)
{
	const struct fleet_agent *a = *(struct fleet_agent *const *)x;
	const struct fleet_agent *b = *(struct fleet_agent *const *)y;
	int c = strcmp(a->id, b->id);

	if (c != 0)
		return c;
	return a->ord < b->ord ? -1 : a->ord > b->ord;
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
 * with "---"; not a dot file, not a directory.  The one rule of a soul
 * directory (heart-pulse --souls, heart-wake --souls).  A name that
 * cannot be followed (a link to nowhere, a file it may not read) is
 * listed: soul_load says why it is no soul, rather than the soul
 * vanishing without a word.
 */
int
fleetsouls_list(const char *dir, char ***out, size_t *no, char *err)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	char **v = NULL;
	size_t n = 0;
	DIR *dp;

	if ((dp = opendir(dir)) == NULL) {
		errf(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(dp)) != NULL) {
		if (!soul_file(dir, de->d_name))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		/* the directory's word for it, when it has one (a
		 * symbolic link is followed) */
		if (de->d_type != DT_REG && ((de->d_type != DT_UNKNOWN &&
		    de->d_type != DT_LNK) || (stat(path, &st) == 0 &&
		    !S_ISREG(st.st_mode))))
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

static struct fleet_agent *
find(struct fleet_agent **v, size_t n, const char *id)
{
	size_t lo = 0, hi = n, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if ((c = strcmp(id, v[mid]->id)) == 0)
			return v[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static struct fleet_agent *
from_soul(const struct fleet *f, const struct soul *s)
{
	struct fleet_agent *a = xcalloc(1, sizeof *a);
	int c;

	snprintf(a->id, sizeof a->id, "%s", s->name);
	a->zone = xstrdup(s->timezone);
	a->path = xstrdup(s->path);
	cap_from_soul(s, &a->caps);
	for (c = 0; c < CH_NCHAMBERS; c++)
		a->active[c] = s->ch[c].active;
	a->quiet_min = -1;
	a->interval = f->interval > 0 ? f->interval : s->pulse_interval;
	if (a->interval < 1)
		a->interval = 1;
	a->misses = s->pulse_misses;
	a->wd = -1;
	a->dirty = PS_ALL;
	a->st.waking = -1;
	a->st.cap_used = a->st.cap_max = -1;
	return a;
}

/* Take over what a reloaded soul says; keep schedule, seq and state. */
static void
update(struct fleet_agent *old, struct fleet_agent *new)
{
	char *t;

	if (old->interval != new->interval || old->misses != new->misses)
		old->born = 0;	/* announce the new cadence */
	old->interval = new->interval;
	old->misses = new->misses;
	old->caps = new->caps;
	memcpy(old->active, new->active, sizeof old->active);
	old->quiet_min = -1;
	if (strcmp(old->zone, new->zone) != 0)
		old->dirty |= PULSE_CAP;
	t = old->zone, old->zone = new->zone, new->zone = t;
	t = old->path, old->path = new->path, new->path = t;
	old->keep = 1;
	fleet_agent_free(new);
}

/* Take a out of the watches (the schedule: fleet_heap_keep); its
   offline is due. */
static void
drop(struct fleet *f, struct fleet_agent *a)
{
	size_t i;

	fleetwatch_stop(f, a);
	for (i = 0; i < f->nchg; i++)
		if (f->chg[i] == a) {
			f->chg[i] = f->chg[--f->nchg];
			a->queued = 0;
			break;
		}
	f->gone = realloc(f->gone, (f->ngone + 1) * sizeof *f->gone);
	if (f->gone == NULL)
		abort();
	f->gone[f->ngone++] = a;
}

/* Load the agents nv[] (sorted) into f, diffing with what it had. */
static void
merge(struct fleet *f, struct fleet_agent **nv, size_t nn, char **failed,
    size_t nfailed, long long now)
{
	struct fleet_agent **v, *a;
	size_t i, j, k = 0, m = 0;
	int first = f->n == 0;
	long long due;

	v = xcalloc(f->n + nn, sizeof *v);
	for (i = 0; i < f->n; i++)
		f->a[i]->keep = 0;
	for (i = 0; i < nn; i++) {
		if ((a = find(f->a, f->n, nv[i]->id)) != NULL)
			update(a, nv[i]);
		else
			nv[k++] = nv[i];	/* a new agent */
	}
	nn = k;
	for (i = 0; i < f->n; i++) {	/* a broken soul keeps its agent */
		a = f->a[i];
		for (j = 0; !a->keep && j < nfailed; j++)
			if (strcmp(a->path, failed[j]) == 0)
				a->keep = 1;
		if (a->keep)
			v[m++] = a;
		else
			drop(f, a);
	}
	fleet_heap_keep(f);
	f->heap = realloc(f->heap, (m + nn + 1) * sizeof *f->heap);
	if (f->heap == NULL)
		abort();
	for (i = 0; i < nn; i++) {
		a = nv[i];
		for (j = 0; j < f->ngone; j++)	/* back before its goodbye */
			if (strcmp(f->gone[j]->id, a->id) == 0) {
				fleet_agent_free(f->gone[j]);
				f->gone[j--] = f->gone[--f->ngone];
			}
		if (first)
			due = now + (long long)i * a->interval * 1000 /
			    (long long)nn;
		else
			due = now + (long long)(fnv1a_str(FNV_BASIS, a->id) %
			    (uint64_t)(a->interval * 1000));
		v[m++] = a;
		fleet_heap_add(f, a, due);
		fleetwatch_start(f, a, 0);
	}
	qsort(v, m, sizeof *v, cmpagent);
	free(f->a);
	f->a = v;
	f->n = m;
	f->cursor = 0;
}

/*
 * Load (or load again) the souls named by files[] and those found in
 * dir (either may be empty).  A soul that does not load is reported
 * (fleet_warning), counted (f->nbad) and skipped; if its agent was
 * loaded before, it is kept as it was.  Agents no soul names any more
 * go to fleet_gone.
 * Returns the number of agents, or -1 when dir cannot be read.
 */
long long
fleetsouls_load(struct fleet *f, char *const *files, size_t nfiles,
    const char *dir, long long now, char *err)
{
	char **paths = NULL, **failed = NULL, e[HEART_ERRLEN];
	struct fleet_agent **nv = NULL, *a;
	size_t np = 0, nn = 0, nfailed = 0, i, j;
	struct soul *s;

	if (dir != NULL && fleetsouls_list(dir, &paths, &np, err) == -1)
		return -1;
	paths = realloc(paths, (np + nfiles + 1) * sizeof *paths);
	if (paths == NULL)
		abort();
	for (i = 0; i < nfiles; i++)
		paths[np++] = xstrdup(files[i]);
	nv = xcalloc(np, sizeof *nv);
	failed = xcalloc(np, sizeof *failed);
	for (i = 0; i < np; i++) {
		if (soul_load(paths[i], &s, e) == -1) {
			fleet_warnf(f, "%s", e);
			failed[nfailed++] = paths[i];
			continue;
		}
		for (j = 0; j < s->nwarn; j++)
			fleet_warnf(f, "warning: %s", s->warn[j]);
		a = from_soul(f, s);
		a->ord = i;
		soul_free(s);
		nv[nn++] = a;
	}
	if (nn > 0)
		qsort(nv, nn, sizeof *nv, cmpagent);
	for (i = 1, j = 1; i < nn; i++) {	/* one soul per agent */
		if (strcmp(nv[i]->id, nv[j - 1]->id) == 0) {
			fleet_warnf(f, "%s: agent %s is already defined by %s; "
			    "skipped", nv[i]->path, nv[i]->id,
			    nv[j - 1]->path);
			fleet_agent_free(nv[i]);
		} else
			nv[j++] = nv[i];
	}
	if (nn > 0)
		nn = j;
	merge(f, nv, nn, failed, nfailed, now);
	f->nbad = nfailed;
	for (i = 0; i < np; i++)
		free(paths[i]);
	free(paths);
	free(failed);
	free(nv);
	return (long long)f->n;
}
