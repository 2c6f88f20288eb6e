/*
 * util.c - small helpers every module uses: error messages into the
 * caller's buffer, checked number parsing, allocation that cannot
 * return NULL (a tool this small has nothing better to do than abort
 * when memory is gone), and text from files made fit to show.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"

void
errf(char *err, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(err, HEART_ERRLEN, fmt, ap);
	va_end(ap);
}

/* Parse a whole decimal integer in [lo, hi]; 0 on success. */
int
num_parse(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if ((p = calloc(n ? n : 1, size ? size : 1)) == NULL)
		abort();
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		abort();
	return p;
}

/*
 * Copy at most n - 1 bytes of s into dst as valid UTF-8 on one line:
 * control characters become spaces, bytes that are not UTF-8 become
 * '?', and a character that does not fit whole is left out.
 */
void
text_copy(char *dst, size_t n, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, len, i;

	while (*p != '\0') {
		len = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 2 :
		    (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 &&
		    *p <= 0xf4 ? 4 : 0;
		for (i = 1; i < len; i++)
			if ((p[i] & 0xc0) != 0x80)
				len = 0;
		if (len == 3 && ((*p == 0xe0 && p[1] < 0xa0) ||
		    (*p == 0xed && p[1] >= 0xa0)))
			len = 0;	/* overlong, or a surrogate */
		if (len == 4 && ((*p == 0xf0 && p[1] < 0x90) ||
		    (*p == 0xf4 && p[1] >= 0x90)))
			len = 0;
		if (o + (len ? len : 1) >= n)
			break;
		if (len == 0)
			dst[o++] = '?';
		else if (len == 1)
			dst[o++] = *p < 0x20 || *p == 0x7f ? ' ' : (char)*p;
		else {
			memcpy(dst + o, p, len);
			o += len;
		}
		p += len ? len : 1;
	}
	dst[o] = '\0';
}
