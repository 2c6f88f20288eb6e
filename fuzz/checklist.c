/*
 * checklist.c - fuzz target: a chamber's checklist, HEARTBEAT.md, as
 * the user writes it (checklist_open_items).  The open items come back one a
 * line, none of them blank; an item's own interval (checklist_interval), when
 * it names one, is a positive duration dur.c reads back the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN], path[4200], *items, *line, *save = NULL;
	long long iv;
	size_t len;

	fz_put(fz_dir(), "HEARTBEAT.md", data, n);
	snprintf(path, sizeof path, "%s/HEARTBEAT.md", fz_dir());
	FZ_ASSERT(checklist_open_items(path, &items, err) == 0);
	if (items == NULL)
		return 0;
	len = strlen(items);
	FZ_ASSERT(len > 0 && items[0] != '\n' && items[len - 1] != '\n');
	FZ_ASSERT(strstr(items, "\n\n") == NULL);
	for (line = strtok_r(items, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (checklist_interval(line, &iv))
			FZ_ASSERT(iv > 0 && iv <= dur_max());
	free(items);
	return 0;
}
