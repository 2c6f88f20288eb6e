/*
 * soul.c - fuzz target: the soul loader (soul_load: YAML through yj.c,
 * or Markdown with YAML frontmatter, then every key's checks).  An
 * input that starts with a "---" line is loaded as fz.md, any other as
 * fz.yaml.  A soul that loads must also print (soul_json).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartint.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN], path[4200];
	const char *name;
	struct soul *s;
	json_t *j;

	name = (n >= 4 && memcmp(data, "---\n", 4) == 0) ||
	    (n >= 5 && memcmp(data, "---\r\n", 5) == 0) ? "fz.md" : "fz.yaml";
	fz_put(fz_dir(), name, data, n);
	snprintf(path, sizeof path, "%s/%s", fz_dir(), name);
	if (soul_load(path, &s, err) == -1) {
		FZ_ASSERT(err[0] != '\0');
		return 0;
	}
	FZ_ASSERT(s->name != NULL && id_valid(s->name));
	FZ_ASSERT(s->timezone != NULL);
	j = soul_json(s);
	FZ_ASSERT(j != NULL);
	json_decref(j);
	soul_free(s);
	return 0;
}
