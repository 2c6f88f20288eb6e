/*
 * ghost.c - fuzz target: heart-ghost's reader of wake results
 * (ghost_parse), the error text it prints for an error result, and
 * --alert-only's test of a response.
 */
#include <string.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN], text[1024];
	struct ghost_result r;

	if (ghost_parse((const char *)data, n, &r, err) == -1) {
		FZ_ASSERT(err[0] != '\0');
		FZ_ASSERT(r.doc == NULL);
		return 0;
	}
	FZ_ASSERT(r.kind == GHOST_ERROR || r.agent[0] != '\0');
	FZ_ASSERT(r.agent[0] == '\0' || id_valid(r.agent));
	switch (r.kind) {
	case GHOST_COMMIT:
		FZ_ASSERT(r.doc != NULL && r.response != NULL);
		FZ_ASSERT(json_array_size(r.messages) > 0);
		FZ_ASSERT(strcmp(r.chamber, "user") != 0);
		ghost_is_alert(r.response);
		break;
	case GHOST_ERROR:
		FZ_ASSERT(r.doc != NULL);
		ghost_error_text(&r, text, sizeof text);
		FZ_ASSERT(strlen(text) < sizeof text);
		break;
	case GHOST_ROLLBACK:
		FZ_ASSERT(r.doc == NULL);
		break;
	}
	ghost_result_free(&r);
	return 0;
}
