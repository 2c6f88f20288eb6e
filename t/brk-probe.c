/*
 * brk-probe - test helper for the library side of the breaker that
 * heart-wake uses: brk-probe AGENT [giveback] checks the breaker with
 * the default keys and prints "closed", "probe" or "refused"; with
 * `giveback', a probe it was granted is handed back at once (as a wake
 * does when the cap then refuses it), and it prints "probe given back";
 * with `hold', it prints what it got and then waits for a signal with
 * the probe in hand (a wake that hangs, to be killed by a test).
 * The store is $HEART_STORE's, as for the programs.
 * Exit 0 when allowed, 1 when refused, 74 on a state error (69: the
 * store is unreachable).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heart.h"

int
main(int argc, char **argv)
{
	char err[HEART_ERRLEN];
	struct brk_conf c;
	int allowed, probe, r;
	time_t now = time(NULL);

	if (argc < 2 || argc > 3)
		return HX_USAGE;
	if ((r = rds_open(NULL, err)) != 0) {
		fprintf(stderr, "brk-probe: %s\n", err);
		return r;
	}
	brk_from_soul(NULL, &c);
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
