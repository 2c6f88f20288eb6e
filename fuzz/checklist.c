/*
 * checklist.c - fuzz target: a chamber's checklist, HEARTBEAT.md, as
 * the user writes it (checklist_open_items).  The open items come back one a
 * line, none of them blank, in valid UTF-8 with no control character; an
 * item's own interval (checklist_interval), when it names one, is a positive
 * duration dur.c reads back the same.  Fitted to a room (checklist_fit), the
 * items kept cost no more than it, and those left out are counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartint.h"	/* checklist_fit is the library's own */
#include "heartwake.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN], path[4200], *items, *line, *save = NULL;
	struct checklist_item it[512];
	long long iv;
	size_t len, k = 0, i, room, cost = 0, kept = 0, left;
	char *p;
	int r;

	fz_put(fz_dir(), "HEARTBEAT.md", data, n);
	snprintf(path, sizeof path, "%s/HEARTBEAT.md", fz_dir());
	r = checklist_open_items(path, &items, err);
	FZ_ASSERT(r == 0 || (r == 1 && n > HEART_CHECKMAX));
	if (items == NULL)
		return 0;
	len = strlen(items);
	FZ_ASSERT(len > 0 && items[0] != '\n' && items[len - 1] != '\n');
	FZ_ASSERT(strstr(items, "\n\n") == NULL);
	for (p = items; *p != '\0'; p += utf8_len((unsigned char *)p,
	    strlen(p)))
		FZ_ASSERT(utf8_len((unsigned char *)p, strlen(p)) > 0 &&
		    (*p == '\n' || ((unsigned char)*p >= 0x20 && *p != 0x7f)));
	room = n > 0 ? data[0] * 4 : 0;
	for (line = strtok_r(items, "\n", &save); line != NULL && k < 512;
	    line = strtok_r(NULL, "\n", &save), k++) {
		memset(&it[k], 0, sizeof it[k]);
		it[k].line = line;
		it[k].cost = strlen(line);
		if ((it[k].every = checklist_interval(line, &iv))) {
			FZ_ASSERT(iv > 0 && iv <= dur_max());
			it[k].carried = (time_t)(k % 3);
		}
	}
	left = checklist_fit(it, k, room);
	for (i = 0; i < k; i++)
		if (it[i].keep) {
			cost += it[i].cost;
			kept++;
		}
	FZ_ASSERT(cost <= room && kept + left == k);
	free(items);
	return 0;
}
