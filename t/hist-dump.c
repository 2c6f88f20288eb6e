/*
 * hist-dump - the history as heart-wake reads it, for the tests:
 *   hist-dump AGENT N     the last N messages (hist_tail), one JSON array
 *   hist-dump -u AGENT    when the user last spoke (hist_last_user), epoch
 * Exit 74 with the library's message when the history cannot be read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartwake.h"

int
main(int argc, char **argv)
{
	char err[HEART_ERRLEN];
	long long n;
	json_t *a;
	time_t t;

	if (argc == 3 && strcmp(argv[1], "-u") == 0) {
		if (hist_last_user(argv[2], 1, &t, err) == -1)
			goto fail;
		printf("%lld\n", (long long)t);
		return 0;
	}
	if (argc != 3 || num_parse(argv[2], 0, 1000000000, &n) == -1) {
		fputs("usage: hist-dump AGENT N | -u AGENT\n", stderr);
		return HX_USAGE;
	}
	if (hist_tail(argv[1], (size_t)n, &a, err) == -1)
		goto fail;
	char *s = json_dumps(a, JSON_COMPACT);
	puts(s);
	free(s);
	json_decref(a);
	return 0;
fail:
	fprintf(stderr, "hist-dump: %s\n", err);
	return HX_IOERR;
}
