/*
 * dur.c - fuzz target: durations (dur_parse) as souls and options
 * give them.  A duration that parses prints (dur_format) as one that
 * parses back to the same seconds.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *s, buf[64];
	long long v, w;

	s = malloc(n + 1);
	memcpy(s, data, n);
	s[n] = '\0';
	if (dur_parse(s, &v) == 0) {
		FZ_ASSERT(v >= 0);
		dur_format(v, buf, sizeof buf);
		FZ_ASSERT(dur_parse(buf, &w) == 0);
		FZ_ASSERT(w == v);
	}
	free(s);
	return 0;
}
