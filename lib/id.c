/*
 * id.c - agent ids.  An id becomes a directory name and an MQTT topic
 * level, so it is checked before either: [A-Za-z0-9_.-]{1,64}, no
 * leading dot (which also rules out "." and "..").
 */
#include <string.h>

#include "heartint.h"

int
id_valid(const char *id)
{
	size_t i;

	if (id == NULL || id[0] == '\0' || id[0] == '.')
		return 0;
	for (i = 0; id[i] != '\0'; i++) {
		if (i >= HEART_IDMAX)
			return 0;
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", id[i]))
			return 0;
	}
	return 1;
}

/* 0 when id is valid; else -1, and err says why, the same everywhere. */
int
id_check(const char *id, char *err)
{
	if (id_valid(id))
		return 0;
	errf(err, "invalid agent id '%.64s' (use 1 to 64 of A-Z a-z 0-9 _ . "
	    "-, not starting with a dot)", id != NULL ? id : "");
	return -1;
}
