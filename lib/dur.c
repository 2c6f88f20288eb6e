/*
 * dur.c - durations as people write them in souls and on command
 * lines: a sequence of number+unit pairs (s, m, h, d), e.g. 10s, 30m,
 * 1h30m, 1d.  A bare number is seconds.  Values are whole seconds.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "heart.h"

#define DUR_MAX	(366LL * 86400 * 100)

static long long
unit_secs(char c)
{
	switch (c) {
	case 's': return 1;
	case 'm': return 60;
	case 'h': return 3600;
	case 'd': return 86400;
	}
	return 0;
}

int
dur_parse(const char *s, long long *out)
{
	long long total = 0, v, u;
	char *end;

	if (s == NULL || *s == '\0')
		return -1;
	while (*s != '\0') {
		if (!isdigit((unsigned char)*s))
			return -1;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno != 0 || v > DUR_MAX)
			return -1;
		if (*end == '\0' && total == 0 && end != s) {
			*out = v;	/* bare seconds */
			return 0;
		}
		if ((u = unit_secs(*end)) == 0)
			return -1;
		total += v * u;
		if (total > DUR_MAX)
			return -1;
		s = end + 1;
	}
	*out = total;
	return 0;
}

char *
dur_format(long long secs, char *buf, size_t n)
{
	static const struct { char c; long long s; } u[] = {
		{ 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 }
	};
	size_t i, len = 0;

	if (secs <= 0) {
		snprintf(buf, n, "0s");
		return buf;
	}
	buf[0] = '\0';
	for (i = 0; i < 4 && len < n; i++) {
		if (secs / u[i].s == 0)
			continue;
		len += snprintf(buf + len, n - len, "%lld%c",
		    secs / u[i].s, u[i].c);
		secs %= u[i].s;
	}
	return buf;
}
