/*
 * store.c - where an agent's caps, breaker, wake lock and wake.json
 * live: in files beside the agent (the default), or in a server shared
 * by a fleet (redis.c plugs itself in with store_use).  Chosen once per
 * process, before the first call; cap.c and brk.c ask store_ops() and
 * go to the server when one is in force.
 *
 * This file names no server: a program that never opens one (heart-
 * ghost) links no client library.
 */
#include <sys/stat.h>

#include "store.h"

static const struct store_ops *cur;
static int failcode;

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

void
store_fail(int code)
{
	failcode = code;
}

/* "files", or the server's URL. */
const char *
store_name(void)
{
	return cur != NULL ? cur->name : "files";
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

/* state_read_json's contract, for dir/name in whichever store. */
int
store_read_json(const char *dir, const char *name, json_t **out, char *err)
{
	if (cur != NULL)
		return cur->read_json(dir, name, out, err);
	return state_read_json(dir, name, out, err);
}

/* state_write_json's; a server store writes only while the caller
 * still holds the agent's wake lock, if it holds one. */
int
store_write_json(const char *dir, const char *name, const json_t *j,
    char *err)
{
	if (cur != NULL)
		return cur->write_json(dir, name, j, err);
	return state_write_json(dir, name, j, err);
}

/* Every agent the store knows, sorted (state_agents' contract). */
int
store_agents(char ***listo, size_t *no, char *err)
{
	if (cur != NULL)
		return cur->agents(listo, no, err);
	return state_agents(listo, no, err);
}

/*
 * Does heart know agent id?  1 when it has a directory in the state
 * directory, or keys of its own in a server store; 0 when neither (a
 * misspelt name); -1 with err.
 */
int
store_known(const char *id, char *err)
{
	char dir[4096];
	struct stat st;

	if (state_agent_dir(id, 0, dir, sizeof dir, err) == -1)
		return -1;
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 1;
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
