/*
 * ghost.c - fuzz target: heart-ghost's reader of wake results
 * (ghost_parse), and the alert test of a response (--alert-only's,
 * and ghost mode's).
 */
#include <string.h>

#include "fuzz.h"
#include "heartwake.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN];
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
		FZ_ASSERT(r.alert || !idle_alert(r.response));
		break;
	case GHOST_ERROR:
		FZ_ASSERT(r.doc != NULL);
		FZ_ASSERT(r.exit > 0 && r.exit <= 255);
		break;
	case GHOST_ROLLBACK:
		FZ_ASSERT(r.doc == NULL);
		break;
	}
	ghost_result_free(&r);
	return 0;
}
