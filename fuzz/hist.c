/*
 * hist.c - fuzz target: the history, agents/ID/history.jsonl, read
 * backwards by hist_tail and hist_last_user, and by hist_commit, which
 * finds the torn tail and the wakes to keep before it writes.  A
 * commit that succeeds is read back whole, the last thing in the file.
 * hist_repair (heart-ghost --repair) of the same bytes sets aside
 * exactly the bytes it does not keep, leaves a history that reads
 * whole, and a second repair finds nothing.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "heartwake.h"

static void
commit_and_read(long long keep)
{
	char err[HEART_ERRLEN];
	json_t *msgs, *tail;
	const char *role;

	msgs = json_pack("[{s:s,s:s},{s:s,s:s}]", "role", "user", "content",
	    "ping", "role", "assistant", "content", "pong");
	if (hist_commit(FZ_AGENT, msgs, "w-fuzz", "schedule",
	    "2026-11-22T12:00:00Z", keep, err) == 0) {
		FZ_ASSERT(hist_tail(FZ_AGENT, 2, &tail, err) == 0);
		FZ_ASSERT(json_array_size(tail) == 2);
		role = json_string_value(json_object_get(json_array_get(tail,
		    1), "role"));
		FZ_ASSERT(role != NULL && strcmp(role, "assistant") == 0);
		json_decref(tail);
	}
	json_decref(msgs);
}

/* The bytes set aside by runs. */
static size_t
aside(const json_t *runs)
{
	size_t i, sum = 0;
	json_t *r;

	json_array_foreach(runs, i, r)
		sum += (size_t)json_integer_value(json_object_get(r, "bytes"));
	return sum;
}

static void
repair_and_read(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN], where[4200], path[4200];
	json_t *runs, *tail;
	struct stat st;

	fz_put(fz_agent_dir(), "history.jsonl", data, n);
	FZ_ASSERT(hist_repair(FZ_AGENT, 1795348800, &runs, where,
	    sizeof where, err) == 0);
	snprintf(path, sizeof path, "%s/history.jsonl", fz_agent_dir());
	FZ_ASSERT(stat(path, &st) == 0 && (size_t)st.st_size + aside(runs) ==
	    n);
	FZ_ASSERT(json_array_size(runs) == 0 || access(where, F_OK) == 0);
	json_decref(runs);
	FZ_ASSERT(hist_tail(FZ_AGENT, 1 << 20, &tail, err) == 0);
	json_decref(tail);
	FZ_ASSERT(hist_repair(FZ_AGENT, 1795348800, &runs, where,
	    sizeof where, err) == 0 && json_array_size(runs) == 0);
	json_decref(runs);
	unlink(where);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN];
	json_t *tail;
	time_t at;
	size_t k;

	fz_put(fz_agent_dir(), "history.jsonl", data, n);
	for (k = 1; k <= 64; k *= 4)
		if (hist_tail(FZ_AGENT, k, &tail, err) == 0) {
			FZ_ASSERT(json_array_size(tail) <= k);
			json_decref(tail);
		}
	hist_last_user(FZ_AGENT, 1, &at, err);
	commit_and_read(n % 3);
	repair_and_read(data, n);
	return 0;
}
