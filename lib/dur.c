/*
 * dur.c - durations as people write them in souls and on command
 * lines: a sequence of number+unit pairs (s, m, h, d), e.g. 10s, 30m,
 * 1h30m, 1d.  A bare number is seconds.  Values are whole seconds, at
 * most DUR_MAX (a hundred years): dur_parse sets errno to ERANGE for a
 * larger one, EINVAL for one it cannot read.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"

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

static int
fail(int e)
{
	errno = e;
	return -1;
}

int
dur_parse(const char *s, long long *out)
{
	long long total = 0, v, u;
	char *end;

	if (s == NULL || *s == '\0')
		return fail(EINVAL);
	while (*s != '\0') {
		if (!isdigit((unsigned char)*s))
			return fail(EINVAL);
		errno = 0;
		v = strtoll(s, &end, 10);
		if (*end == '\0' && total == 0 && end != s) {
			if (errno != 0 || v > DUR_MAX)
				return fail(ERANGE);
			*out = v;	/* bare seconds */
			return 0;
		}
		if ((u = unit_secs(*end)) == 0)
			return fail(EINVAL);
		if (errno != 0 || v > DUR_MAX / u || total + v * u > DUR_MAX)
			return fail(ERANGE);
		total += v * u;
		s = end + 1;
	}
	*out = total;
	return 0;
}

/*
 * Why s is not a duration of at least lo seconds, for a message; ""
 * when it is one.  A duration of 0 is named as such.
 */
const char *
dur_why(const char *s, long long lo, char *buf, size_t n)
{
	long long v;
	char d[32];

	if (dur_parse(s, &v) == -1 && errno == ERANGE)
		snprintf(buf, n, "too large (at most %s)",
		    dur_format(DUR_MAX, d, sizeof d));
	else if (dur_parse(s, &v) == -1)
		snprintf(buf, n, "not a duration (write e.g. 10s, 30m, 2h, "
		    "1d or 1h30m)");
	else if (v < lo)
		snprintf(buf, n, "%s is %s; it must be at least %s",
		    s, v == 0 ? "no time at all" : "too short",
		    dur_format(lo, d, sizeof d));
	else
		buf[0] = '\0';
	return buf;
}

/* The longest duration dur_parse takes. */
long long
dur_max(void)
{
	return DUR_MAX;
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
