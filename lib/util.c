/*
 * util.c - small helpers every module uses: error messages into the
 * caller's buffer (scrubbed of secrets and made one printable line,
 * since they quote text from outside), checked number parsing,
 * allocation that cannot return NULL (a tool this small has nothing
 * better to do than abort when memory is gone).
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
	secret_scrub(err, HEART_ERRLEN);
	text_line(err, HEART_ERRLEN, err, strlen(err));
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
