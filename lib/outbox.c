/*
 * outbox.c - real answers on their way to a person: agents/ID/outbox/,
 * one file per wake, WAKE_ID.json, {"line": the wake result as
 * heart-wake printed it, "at": the wake's time, and once heart-ghost
 * has had it "committed", "tries", "since", "next", "error", "via"};
 * and the dead letters, agents/ID/dead/WAKE_ID.json, the same with
 * "dead".
 * heart-ghost(1) says what each field means; ghost.c decides.
 *
 * Invariants: heart-wake creates an entry (a new wake id, known to no
 * one else yet) before it prints the result, holding outbox.lock
 * shared.  After that an entry is rewritten, moved or removed only
 * under the agent's delivered.lock.  The outbox directory is removed,
 * empty, only under outbox.lock exclusive, so it is there exactly
 * while an answer waits, and one stat says whether one does.  Every
 * write is state_write's: temporary file, fsync, rename.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartwake.h"

#define OBLOCK	"outbox.lock"

/* dir/sub of agent's state; with create, made 0700. */
static int
box_dir(const char *adir, const char *sub, int create, char *out,
    size_t n, char *err)
{
	if ((size_t)snprintf(out, n, "%s/%s", adir, sub) >= n) {
		errf(err, "%s: state directory path too long", adir);
		return -1;
	}
	if (create && mkdir(out, 0700) == -1 && errno != EEXIST) {
		errf(err, "%s: %s", out, strerror(errno));
		return -1;
	}
	return 0;
}

/* Write entry doc as adir/sub/WAKE_ID.json. */
int
outbox_put(const char *adir, const char *sub, const char *wake_id,
    const json_t *doc, char *err)
{
	char dir[4096], name[HEART_IDMAX + 8];

	snprintf(name, sizeof name, "%s.json", wake_id);
	if (box_dir(adir, sub, 1, dir, sizeof dir, err) == -1)
		return -1;
	return state_write_json(dir, name, doc, err);
}

/* Remove adir/sub/WAKE_ID.json; a missing one is gone already. */
int
outbox_drop(const char *adir, const char *sub, const char *wake_id,
    char *err)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/%s/%s.json", adir, sub, wake_id);
	if (unlink(path) == -1 && errno != ENOENT) {
		errf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * heart-wake: keep an "ok" result or a breaker's notice (line, as
 * printed) in its agent's outbox before it is printed; any other
 * result is not kept.
 */
int
outbox_keep(const json_t *res, const char *line, char *err)
{
	const char *agent = json_string_value(json_object_get(res, "agent"));
	const char *id = json_string_value(json_object_get(res, "wake_id"));
	const char *st = json_string_value(json_object_get(res, "status"));
	enum wake_status ws;
	char adir[4096];
	json_t *doc;
	int fd, rc;

	if (st == NULL || status_find(st, &ws) == -1 ||
	    status_kind(ws) != GHOST_COMMIT)
		return 0;
	if (!id_valid(id)) {
		errf(err, "wake id \"%s\" is not a file name", id ? id : "");
		return -1;
	}
	if (state_agent_dir(agent, 1, adir, sizeof adir, err) == -1 ||
	    (fd = state_lock(adir, OBLOCK, LOCK_SH, err)) < 0)
		return -1;
	doc = json_pack("{s:s,s:O}", "line", line, "at",
	    json_object_get(res, "at"));
	rc = outbox_put(adir, "outbox", id, doc, err);
	json_decref(doc);
	state_unlock(fd);
	return rc;
}

/* Does an answer of agent wait?  One stat; 0 also for a bad id. */
int
outbox_waiting(const char *agent)
{
	char adir[4096], dir[4200];
	struct stat st;

	if (state_agent_dir(agent, 0, adir, sizeof adir, NULL) == -1)
		return 0;
	snprintf(dir, sizeof dir, "%s/outbox", adir);
	return stat(dir, &st) == 0;
}

/* Remove the outbox directory if it is empty and heart-wake is not
 * writing to it.  Caller holds delivered.lock. */
static void
tidy(const char *adir)
{
	char dir[4200];
	int fd;

	if ((fd = state_lock(adir, OBLOCK, LOCK_EX | LOCK_NB, NULL)) < 0)
		return;
	snprintf(dir, sizeof dir, "%s/outbox", adir);
	rmdir(dir);
	state_unlock(fd);
}

/*
 * Write back the entries of v still waiting (not gone) that changed
 * (dirty); when none waits, tidy the outbox away.  Caller holds
 * delivered.lock.  The number still waiting, or -1 (err).
 */
int
outbox_save(const char *adir, struct outbox_entry *v, size_t n, char *err)
{
	int rc = 0, left = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i].gone)
			continue;
		left++;
		if (v[i].dirty && outbox_put(adir, "outbox", v[i].wake_id,
		    v[i].doc, err) == -1)
			rc = -1;
	}
	if (left == 0)
		tidy(adir);
	return rc == -1 ? -1 : left;
}

/* Wake order for qsort: the wake's time, then its id; entries that
 * do not read last. */
int
outbox_cmp(const void *a, const void *b)
{
	const struct outbox_entry *x = a, *y = b;
	int c;

	if ((x->doc == NULL) != (y->doc == NULL))
		return x->doc == NULL ? 1 : -1;
	if (x->doc != NULL && (c = strcmp(x->at, y->at)) != 0)
		return c;
	return strcmp(x->wake_id, y->wake_id);
}

/* The wake id of a directory entry WAKE_ID.json, or -1. */
static int
entry_name(const char *name, char *id)
{
	size_t n = strlen(name);

	if (n < 6 || n - 5 > HEART_IDMAX || strcmp(name + n - 5,
	    ".json") != 0)
		return -1;
	memcpy(id, name, n - 5);
	id[n - 5] = '\0';
	return id_valid(id) ? 0 : -1;
}

static void
entry_load(const char *dir, struct outbox_entry *e)
{
	char name[HEART_IDMAX + 8];
	const char *at;

	snprintf(name, sizeof name, "%s.json", e->wake_id);
	if (state_read_json(dir, name, &e->doc, e->err) == -1)
		return;
	at = json_string_value(json_object_get(e->doc, "at"));
	if (e->doc == NULL || !json_is_string(json_object_get(e->doc,
	    "line")) || at == NULL) {
		if (e->doc != NULL)
			errf(e->err, "%s/%s: not an outbox entry; fix or "
			    "remove it by hand", dir, name);
		json_decref(e->doc);
		e->doc = NULL;
		return;
	}
	snprintf(e->at, sizeof e->at, "%s", at);
}

/* Open adir/sub into *dp (dir: its path): 1 open, 0 no such directory
 * (nothing in it), -1 with err. */
static int
box_open(const char *adir, const char *sub, char *dir, size_t dirn, DIR **dp,
    char *err)
{
	if (box_dir(adir, sub, 0, dir, dirn, err) == -1)
		return -1;
	if ((*dp = opendir(dir)) != NULL)
		return 1;
	if (errno == ENOENT)
		return 0;
	errf(err, "%s: %s", dir, strerror(errno));
	return -1;
}

/*
 * The entries of adir/sub in wake order (time, then wake id); those
 * that do not read come last, with doc NULL and err saying why.  No
 * directory: none.
 */
int
outbox_load(const char *adir, const char *sub, struct outbox_entry **out,
    size_t *no, char *err)
{
	struct outbox_entry *v = NULL;
	char dir[4096];
	struct dirent *de;
	size_t n = 0;
	DIR *dp;
	int r;

	*out = NULL;
	*no = 0;
	if ((r = box_open(adir, sub, dir, sizeof dir, &dp, err)) != 1)
		return r;
	while ((de = readdir(dp)) != NULL) {
		if ((v = realloc(v, (n + 1) * sizeof *v)) == NULL)
			abort();
		memset(&v[n], 0, sizeof v[n]);
		if (entry_name(de->d_name, v[n].wake_id) == -1)
			continue;
		entry_load(dir, &v[n++]);
	}
	closedir(dp);
	if (n > 1)
		qsort(v, n, sizeof *v, outbox_cmp);
	*out = v;
	*no = n;
	return 0;
}

void
outbox_free(struct outbox_entry *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		json_decref(v[i].doc);
	free(v);
}

/* One row of outbox_list. */
static json_t *
row(const char *agent, const char *state, const struct outbox_entry *e)
{
	json_t *r = json_pack("{s:s,s:s,s:s}", "agent", agent, "wake_id",
	    e->wake_id, "state", state);
	const char *keys[] = { "at", "tries", "since", "next", "dead",
	    "error", "via", NULL };
	json_t *v;
	int i;

	if (e->doc == NULL) {
		json_object_set_new(r, "error", json_string(e->err));
		return r;
	}
	for (i = 0; keys[i] != NULL; i++)
		if ((v = json_object_get(e->doc, keys[i])) != NULL)
			json_object_set(r, keys[i], v);
	if (json_object_get(r, "tries") == NULL)
		json_object_set_new(r, "tries", json_integer(0));
	return r;
}

/* How many entries adir/sub holds (no directory: none). */
static int
count_dir(const char *adir, const char *sub, long long *no, char *err)
{
	char dir[4096], id[HEART_IDMAX + 1];
	struct dirent *de;
	DIR *dp;
	int r;

	*no = 0;
	if ((r = box_open(adir, sub, dir, sizeof dir, &dp, err)) != 1)
		return r;
	while ((de = readdir(dp)) != NULL)
		if (entry_name(de->d_name, id) == 0)
			(*no)++;
	closedir(dp);
	return 0;
}

/* How many answers of agent wait, and how many are dead letters; the
 * files are counted, not read. */
int
outbox_count(const char *agent, struct outbox_count *c, char *err)
{
	char adir[4096];

	c->waiting = c->dead = 0;
	if (state_agent_dir(agent, 0, adir, sizeof adir, err) == -1)
		return -1;
	if (count_dir(adir, "outbox", &c->waiting, err) == -1 ||
	    count_dir(adir, "dead", &c->dead, err) == -1)
		return -1;
	return 0;
}

/*
 * Every answer waiting and every dead letter of agent (NULL: of every
 * agent), as JSON objects appended to arr: agent, wake_id, state
 * ("waiting" or "dead"), at, tries, since, next, dead, error.
 */
int
outbox_list(const char *agent, json_t *arr, char *err)
{
	static const char *subs[] = { "outbox", "dead" };
	static const char *states[] = { "waiting", "dead" };
	struct outbox_entry *v;
	char adir[4096], **ids = NULL;
	size_t n, nid = 1, i, k;
	int s;

	if (agent == NULL && state_agents(&ids, &nid, err) == -1)
		return -1;
	for (i = 0; i < nid; i++) {
		const char *a = ids != NULL ? ids[i] : agent;
		if (state_agent_dir(a, 0, adir, sizeof adir, err) == -1)
			goto fail;
		for (s = 0; s < 2; s++) {
			if (outbox_load(adir, subs[s], &v, &n, err) == -1)
				goto fail;
			for (k = 0; k < n; k++)
				json_array_append_new(arr, row(a, states[s],
				    &v[k]));
			outbox_free(v, n);
		}
	}
	state_free_list(ids, ids != NULL ? nid : 0);
	return 0;
fail:
	state_free_list(ids, ids != NULL ? nid : 0);
	return -1;
}
