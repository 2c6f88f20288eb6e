/*
 * brk-probe - test helper for the library side of the breaker that
 * heart-wake uses: brk-probe AGENT [giveback] checks the breaker with
 * the default keys and prints "closed", "probe" or "refused"; with
 * `giveback', a probe it was granted is handed back at once (as a wake
 * does when the cap then refuses it), and it prints "probe given back";
 * with `hold', it prints what it got and then waits for a signal with
 * the probe in hand (a wake that hangs, to be killed by a test).
 * brk-probe AGENT retry-after SECONDS records an LLM failure that asks
 * the breaker to stay open that long, brk-probe AGENT config one a
 * person must fix; each prints "recorded".
 * The store is $HEART_STORE's, as for the programs.
 * Exit 0 when allowed, 1 when refused, 74 on a state error (69: the
 * store is unreachable).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartstore.h"

static int
record(const char *agent, const struct brk_conf *c, time_t now,
    const char *how, const char *secs, char *err)
{
	long long n = 0;
	int flags = BRK_LLM_FAIL;

	if (strcmp(how, "config") == 0)
		flags |= BRK_LLM_CONFIG;
	else if (secs == NULL || num_parse(secs, 1, 86400, &n) == -1)
		return HX_USAGE;
	if (brk_record(agent, c, now, flags, n > 0 ? now + n : 0,
	    "brk-probe", NULL, err) == -1) {
		fprintf(stderr, "brk-probe: %s\n", err);
		return store_code(HX_IOERR);
	}
	puts("recorded");
	return 0;
}

int
main(int argc, char **argv)
{
	char err[HEART_ERRLEN];
	struct brk_conf c;
	int allowed, probe, r;
	time_t now = time(NULL);

	if (argc < 2 || argc > 4)
		return HX_USAGE;
	if ((r = redisstore_open(NULL, err)) != 0) {
		fprintf(stderr, "brk-probe: %s\n", err);
		return r;
	}
	brk_from_soul(NULL, &c);
	if (argc > 2 && (strcmp(argv[2], "retry-after") == 0 ||
	    strcmp(argv[2], "config") == 0))
		return record(argv[1], &c, now, argv[2], argv[3], err);
	if (argc > 3)
		return HX_USAGE;
	if (brk_check(argv[1], &c, now, &allowed, &probe, NULL, NULL,
	    err) == -1) {
		fprintf(stderr, "brk-probe: %s\n", err);
		return store_code(HX_IOERR);
	}
	if (probe && argc == 3 && strcmp(argv[2], "giveback") == 0) {
		if (brk_giveback(argv[1], now, err) == -1) {
			fprintf(stderr, "brk-probe: %s\n", err);
			return store_code(HX_IOERR);
		}
		puts("probe given back");
	} else
		puts(probe ? "probe" : allowed ? "closed" : "refused");
	fflush(stdout);
	if (argc == 3 && strcmp(argv[2], "hold") == 0)
		pause();
	return allowed ? HX_OK : 1;
}
