/*
 * jscan.c - fuzz target: the result-line scanner (jscan_object, and
 * jscan_string on the members it found), as heart-ghost uses it on
 * every line a wake prints.
 */
#include <string.h>

#include "fuzz.h"
#include "heartint.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct jscan_member m[5] = {
		{ "v", NULL, 0, 0 }, { "status", NULL, 0, 0 },
		{ "agent", NULL, 0, 0 }, { "a\"b", NULL, 0, 0 },
		{ "", NULL, 0, 0 },
	};
	char err[HEART_ERRLEN], small[8], big[4096];
	const char *b = (const char *)data;
	size_t i;

	if (jscan_object(b, n, m, 5, err) == -1) {
		FZ_ASSERT(err[0] != '\0');
		return 0;
	}
	for (i = 0; i < 5; i++) {
		if (m[i].val == NULL) {
			FZ_ASSERT(m[i].type == JSCAN_NONE);
			continue;
		}
		FZ_ASSERT(m[i].val >= b && m[i].val + m[i].len <= b + n);
		FZ_ASSERT(m[i].len > 0 && m[i].type != JSCAN_NONE);
		if (m[i].type != JSCAN_STRING)
			continue;
		FZ_ASSERT(m[i].len >= 2 && m[i].val[0] == '"' &&
		    m[i].val[m[i].len - 1] == '"');
		if (jscan_string(m[i].val, m[i].len, small, sizeof small) == 0)
			FZ_ASSERT(strlen(small) < sizeof small);
		if (jscan_string(m[i].val, m[i].len, big, sizeof big) == 0)
			FZ_ASSERT(strlen(big) <= m[i].len);
	}
	return 0;
}
