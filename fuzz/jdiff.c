/*
 * jdiff.c - differential fuzz target: jscan (the scanner heart-ghost
 * uses on every result line) against jansson (what the rest of heart
 * reads JSON with) on the same bytes.  An object one accepts the other
 * accepts, but for jansson's own limits: it refuses numbers out of its
 * range and \u0000 in a string or a key, which RFC 8259 allows, and
 * takes a raw NUL byte after a number or a literal for its end, which
 * RFC 8259 does not.  Every top-level member jscan finds has jansson's
 * type and, for a string, its value.
 */
#include <string.h>

#include "fuzz.h"
#include "heartint.h"

#define MAXKEYS	8

/* What jansson refuses that RFC 8259 allows. */
static int
jansson_limit(const json_error_t *je)
{
	return strstr(je->text, "too big") != NULL ||
	    strstr(je->text, "overflow") != NULL ||
	    strstr(je->text, "\\u0000") != NULL ||
	    strstr(je->text, "NUL byte in object key") != NULL;
}

static int
type_of(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return JSCAN_OBJECT;
	case JSON_ARRAY: return JSCAN_ARRAY;
	case JSON_STRING: return JSCAN_STRING;
	case JSON_INTEGER:
	case JSON_REAL: return JSCAN_NUMBER;
	case JSON_TRUE: return JSCAN_TRUE;
	case JSON_FALSE: return JSCAN_FALSE;
	case JSON_NULL: return JSCAN_NULL;
	}
	return JSCAN_NONE;
}

/* The top-level members, asked of jscan by key. */
static void
members(const char *b, size_t n, json_t *root)
{
	struct jscan_member m[MAXKEYS];
	char err[HEART_ERRLEN], out[4096];
	const char *k;
	json_t *v;
	size_t nm = 0, i;

	json_object_foreach(root, k, v) {
		if (nm == MAXKEYS)
			break;
		if (strlen(k) >= 64)
			continue;
		m[nm].key = k;
		nm++;
	}
	FZ_ASSERT(jscan_object(b, n, m, nm, err) == 0);
	for (i = 0; i < nm; i++) {
		v = json_object_get(root, m[i].key);
		FZ_ASSERT(m[i].val != NULL);
		FZ_ASSERT(m[i].type == type_of(v));
		if (m[i].type != JSCAN_STRING ||
		    json_string_length(v) >= sizeof out)
			continue;
		FZ_ASSERT(jscan_string(m[i].val, m[i].len, out,
		    sizeof out) == 0);
		FZ_ASSERT(strcmp(out, json_string_value(v)) == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	const char *b = (const char *)data;
	char err[HEART_ERRLEN];
	json_error_t je;
	json_t *root;
	int ok;

	ok = jscan_object(b, n, NULL, 0, err) == 0;
	root = json_loadb(b, n, 0, &je);
	if (root == NULL) {
		FZ_ASSERT(!ok || jansson_limit(&je));
		return 0;
	}
	/* jansson takes a raw NUL byte after a number or a literal
	   ({"a":1\0}) for the end of it; RFC 8259 and jscan do not */
	if (!ok && memchr(b, '\0', n) != NULL) {
		json_decref(root);
		return 0;
	}
	FZ_ASSERT(ok == json_is_object(root));
	json_decref(root);
	if (!ok)
		return 0;
	/* members only where no key is given twice (jansson keeps the
	   last, jscan refuses a wanted key given twice) */
	if ((root = json_loadb(b, n, JSON_REJECT_DUPLICATES, &je)) != NULL) {
		members(b, n, root);
		json_decref(root);
	}
	return 0;
}
