/*
 * hist.c - fuzz target: the history, agents/ID/history.jsonl, read
 * backwards by hist_tail and hist_last_user, and by hist_commit, which
 * finds the torn tail and the wakes to keep before it writes.  A
 * commit that succeeds is read back whole, the last thing in the file.
 */
#include <string.h>

#include "fuzz.h"

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
	hist_last_user(FZ_AGENT, &at, err);
	commit_and_read(n % 3);
	return 0;
}
