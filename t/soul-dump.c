/*
 * soul-dump - test helper: load each soul named and print the effective
 * soul (defaults filled in) as one JSON line, warnings on stderr.  It
 * is what the soul tests read; exit 78 on a bad soul, like every
 * program.
 */
#include <stdio.h>
#include <stdlib.h>

#include "heartint.h"

int
main(int argc, char **argv)
{
	char err[HEART_ERRLEN], *line;
	struct soul *s;
	size_t i;
	json_t *j;
	int a;

	for (a = 1; a < argc; a++) {
		if (soul_load(argv[a], &s, err) == -1) {
			fprintf(stderr, "soul-dump: %s\n", err);
			return HX_CONFIG;
		}
		for (i = 0; i < s->nwarn; i++)
			fprintf(stderr, "soul-dump: warning: %s\n",
			    s->warn[i]);
		j = soul_json(s);
		line = json_dumps(j, JSON_COMPACT);
		puts(line);
		free(line);
		json_decref(j);
		soul_free(s);
	}
	return HX_OK;
}
