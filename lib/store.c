/*
 * store.c - where an agent's caps, breaker, wake lock and wake.json
 * live: in files beside the agent (the default), or in a server shared
 * by a fleet (redisstore.c plugs itself in with store_use; journal.c's
 * log goes through its store_ops too).  Chosen once per process, before
 * the first call.
 *
 * A store only keeps bytes.  cap.c and brk.c decide (cap_step,
 * brk_step) and store_update does the read-decide-write: for files
 * under the document's flock(2), for a server by compare-and-set,
 * decided again from what another writer left, until it holds.
 *
 * This file names no server: a program that never opens one (heart-
 * ghost) links no client library.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"

/* Compare-and-set rounds lost to other writers before a store_update
 * gives up (heart(7) LIMITS): each round lost is another's won. */
#define STORE_ROUNDS	1000

static const struct store_ops *cur;
static int failcode;

/* Whether u (--store, or $HEART_STORE) names a server: none, empty or
 * "file" is the files. */
int
store_server_named(const char *u)
{
	return u != NULL && *u != '\0' && strcmp(u, "file") != 0;
}

const struct store_ops *
store_ops(void)
{
	return cur;
}

void
store_use(const struct store_ops *o)
{
	cur = o;
}

/* In a child just forked: let go of the parent's connection, if any,
 * so that the child makes its own at its first call. */
void
store_forked(void)
{
	if (cur != NULL && cur->forked != NULL)
		cur->forked();
}

void
store_fail(int code)
{
	failcode = code;
}

/*
 * The exit code for a failed store call: HX_UNAVAILABLE when the
 * server could not be reached, HX_CONFIG when it refused us (a wrong
 * password), else `code' (a state error, HX_IOERR).
 */
int
store_code(int code)
{
	return cur != NULL && failcode != 0 ? failcode : code;
}

/*
 * Lock `name' of the agent whose directory is `dir' (state_lock's
 * contract: the descriptor, -1 on error, -2 when LOCK_NB was asked and
 * someone holds it).  A server store takes the local lock too, so a
 * chat front end holding it with flock(1) still keeps wakes away.
 */
int
store_lock(const char *dir, const char *name, int flags, char *err)
{
	if (cur != NULL)
		return cur->lock(dir, name, flags, err);
	return state_lock(dir, name, flags, err);
}

void
store_unlock(int fd)
{
	if (cur != NULL)
		cur->unlock(fd);
	else
		state_unlock(fd);
}

/* state_swap_json's; a server store writes only while the caller
 * still holds the agent's wake lock, if it holds one, and keeps it as
 * the server keeps everything. */
int
store_put_json(const char *dir, const char *name, const json_t *j,
    enum state_keep keep, char *err)
{
	if (cur != NULL)
		return cur->write_json(dir, name, j, err);
	return state_swap_json(dir, name, j, keep, err);
}

/* Every agent the store knows, sorted (state_agents' contract). */
static int
store_agents(char ***listo, size_t *no, char *err)
{
	if (cur != NULL)
		return cur->agents(listo, no, err);
	return state_agents(listo, no, err);
}

/*
 * Does heart know agent id?  1 when it has a directory in the state
 * directory, or keys of its own in a server store; 0 when neither (a
 * misspelt name); -1 with err, as when the state directory cannot be
 * looked in (it is not a misspelt name that is wrong then).
 */
int
store_known(const char *id, char *err)
{
	char dir[4096];
	struct stat st;

	if (state_agent_dir(id, 0, dir, sizeof dir, err) == -1)
		return -1;
	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 1;
	} else if (errno != ENOENT) {
		errf(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	return cur != NULL ? cur->known(id, err) : 0;
}

/*
 * The agents a status command covers: the ids named, else the souls
 * given, else every agent the store knows.  *names points into ids,
 * souls' names and *listo (free that with state_free_list, *names with
 * free); *n is how many.
 */
int
store_status_names(char **ids, size_t nids, struct soul **souls,
    size_t nsouls, char ***names, size_t *n, char ***listo, size_t *nl,
    char *err)
{
	size_t i, m = 0;

	*listo = NULL;
	*nl = 0;
	if (nids == 0 && nsouls == 0 && store_agents(listo, nl, err) == -1)
		return -1;
	*names = xcalloc(nids + nsouls + *nl + 1, sizeof **names);
	for (i = 0; nids == 0 && i < nsouls; i++)
		(*names)[m++] = souls[i]->name;
	for (i = 0; i < nids; i++)
		(*names)[m++] = ids[i];
	for (i = 0; i < *nl; i++)
		(*names)[m++] = (*listo)[i];
	*n = m;
	return 0;
}

/* 0 when owner is an agent id, "@" and an endpoint name (the same
 * rule) or "*", else -1 with err. */
static int
owner_check(const char *owner, char *err)
{
	if ((owner[0] == '@' && id_valid(owner + 1)) || strcmp(owner,
	    "*") == 0)
		return 0;
	return id_check(owner, err);
}

/*
 * The directory of an owner of documents: an agent id (agents/ID),
 * "@" and an endpoint's name (endpoints/NAME, bucket.c), or "*", the
 * store's own (the state directory: pause.c), created when `create'
 * is set.
 */
static int
owner_dir(const char *owner, int create, char *dir, size_t n, char *err)
{
	char sub[HEART_IDMAX + 16];

	if (strcmp(owner, "*") == 0)
		return create && state_subdir(".", dir, n, err) == -1 ? -1 :
		    state_dir(dir, n, err);
	if (owner[0] != '@')
		return state_agent_dir(owner, create, dir, n, err);
	if (owner_check(owner, err) == -1)
		return -1;
	snprintf(sub, sizeof sub, "endpoints/%s", owner + 1);
	if (create)
		return state_subdir(sub, dir, n, err);
	if (state_dir(dir, n, err) == -1)
		return -1;
	strncat(dir, "/", n - strlen(dir) - 1);
	strncat(dir, sub, n - strlen(dir) - 1);
	return 0;
}

/* "DIR/NAME" or "URL: KEY" of agent's document name, in buf, for
 * messages; returns what to fix or remove by hand: "file" or "key". */
static const char *
store_where(const char *agent, const char *name, char *buf, size_t n)
{
	char dir[4096], err[HEART_ERRLEN];

	if (cur != NULL) {
		cur->where(agent, name, buf, n);
		return "key";
	}
	if (owner_dir(agent, 0, dir, sizeof dir, err) == -1)
		snprintf(dir, sizeof dir, "%s", agent);
	snprintf(buf, n, "%s/%s", dir, name);
	return "file";
}

/* err: field of agent's document name is not sound, and what to do. */
void
store_bad_field(const char *agent, const char *name, const char *field,
    char *err)
{
	char where[4200];
	const char *noun = store_where(agent, name, where, sizeof where);

	errf(err, "%s: field '%s' is missing or not valid; fix or %s the %s "
	    "by hand", where, field, noun[0] == 'f' ? "remove" : "delete",
	    noun);
}

/* A stored document's JSON object, or NULL with err naming where. */
static json_t *
store_parse(const char *where, const char *noun, const char *doc,
    size_t len, char *err)
{
	json_error_t je;
	json_t *j;

	if ((j = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &je)) == NULL)
		errf(err, "%s: not valid JSON: %s; fix or delete the %s by "
		    "hand", where, je.text, noun);
	else if (!json_is_object(j)) {
		errf(err, "%s: not a JSON object; fix or delete the %s by "
		    "hand", where, noun);
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* Agent's document name from the server: *raw as stored (NULL: none)
 * and *out parsed.  The owner is checked here, before the server's get
 * and cas (store_update's) see it. */
static int
server_get(const char *agent, const char *name, json_t **out, char **raw,
    char *err)
{
	char where[4200];
	const char *noun;

	*out = NULL;
	*raw = NULL;
	if (owner_check(agent, err) == -1 || cur->get(agent, name, raw,
	    err) == -1)
		return -1;
	if (*raw == NULL)
		return 0;
	noun = store_where(agent, name, where, sizeof where);
	if ((*out = store_parse(where, noun, *raw, strlen(*raw), err)) ==
	    NULL) {
		free(*raw);
		*raw = NULL;
		return -1;
	}
	return 0;
}

/* Agent's document name as stored (NULL: none), read without a lock:
 * a writer only ever replaces it whole. */
int
store_get(const char *agent, const char *name, json_t **out, char *err)
{
	char dir[4096], *raw;
	int r;

	if (cur == NULL)
		return owner_dir(agent, 0, dir, sizeof dir, err) == -1 ?
		    -1 : state_read_doc(dir, name, out, err);
	r = server_get(agent, name, out, &raw, err);
	free(raw);
	return r;
}

/* state_read_doc's contract (a document of the store is swapped), for
 * dir/name in whichever store: a server's of the agent of dir,
 * agents/ID. */
int
store_read_json(const char *dir, const char *name, json_t **out, char *err)
{
	const char *agent = strrchr(dir, '/');

	if (cur == NULL)
		return state_read_doc(dir, name, out, err);
	return store_get(agent != NULL ? agent + 1 : dir, name, out, err);
}

/* The file store's read-decide-write: under NAME.lock (for x.json). */
static int
file_update(const char *agent, const char *name, enum state_keep keep,
    store_step_fn step, void *ctx, char *err)
{
	char dir[4096], lock[64];
	json_t *j, *next = NULL;
	long long ttl;
	int fd, r;

	snprintf(lock, sizeof lock, "%.*s.lock", (int)strcspn(name, "."),
	    name);
	if (owner_dir(agent, 1, dir, sizeof dir, err) == -1 ||
	    (fd = state_lock(dir, lock, LOCK_EX, err)) < 0)
		return -1;
	if ((r = state_read_doc(dir, name, &j, err)) == 0 &&
	    (r = step(j, &next, &ttl, ctx, err)) == 0 && next != NULL)
		r = state_swap_json(dir, name, next, keep, err);
	json_decref(j);
	json_decref(next);
	state_unlock(fd);
	return r;
}

/*
 * A read-decide-write of agent's document name: step is given what is
 * stored (NULL: nothing) and sets *next to what is to be written
 * instead (NULL: nothing) and *ttl to how long a server keeps it
 * (seconds).  It may be called again, with what another writer left,
 * and must decide afresh each time.
 */
int
store_update(const char *agent, const char *name, enum state_keep keep,
    store_step_fn step, void *ctx, char *err)
{
	char where[4200], *old, *doc;
	json_t *j, *next;
	long long ttl;
	int round, r;

	if (cur == NULL)
		return file_update(agent, name, keep, step, ctx, err);
	for (round = 0; round < STORE_ROUNDS; round++) {
		next = NULL;
		ttl = 0;
		if (server_get(agent, name, &j, &old, err) == -1)
			return -1;
		r = step(j, &next, &ttl, ctx, err);
		json_decref(j);
		if (r == 0 && next != NULL) {
			if ((doc = json_dumps(next, JSON_COMPACT)) == NULL) {
				errf(err, "%s: cannot encode JSON", name);
				r = -1;
			} else
				r = cur->cas(agent, name, old, doc, ttl, err);
			free(doc);
		} else if (r == 0)
			r = 1;
		free(old);
		json_decref(next);
		if (r != 0)
			return r == 1 ? 0 : -1;
	}
	store_where(agent, name, where, sizeof where);
	errf(err, "%s: changed by others %d times while we decided; try "
	    "again", where, STORE_ROUNDS);
	store_fail(HX_TEMPFAIL);
	return -1;
}
