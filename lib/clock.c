/*
 * clock.c - "the day" and "the hour" in an agent's IANA zone, and the
 * one form of every time heart prints.
 *
 * The day is the local calendar date, never "24 hours since": a
 * 23- or 25-hour DST day, or a zone whose DST change skips or repeats
 * midnight, is still one day.  The caller asks the clock once and
 * passes that time down, so every gate agrees on "now".
 *
 * Every time a program prints or writes (results, reasons, --explain,
 * statuses, events, state files) is clock_utc's, UTC as RFC 3339 has
 * it with a Z (heart(7), The times); clock_iso's local time with its offset
 * is for the model alone, in the wake's prompt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"

static char curzone[128];

/* A zone name is valid when it names a TZif file in the zone database. */
int
clock_tz_valid(const char *zone)
{
	char path[512], magic[4];
	const char *dir;
	FILE *fp;
	size_t n, i;

	if (zone == NULL || *zone == '\0' || *zone == '/' ||
	    strlen(zone) > 100 || strstr(zone, "..") != NULL)
		return 0;
	for (i = 0; zone[i] != '\0'; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-/", zone[i]))
			return 0;
	if ((dir = getenv("TZDIR")) == NULL || *dir == '\0')
		dir = "/usr/share/zoneinfo";
	snprintf(path, sizeof path, "%s/%s", dir, zone);
	if ((fp = fopen(path, "re")) == NULL)
		return 0;
	n = fread(magic, 1, sizeof magic, fp);
	fclose(fp);
	return n == 4 && memcmp(magic, "TZif", 4) == 0;
}

/*
 * The machine's own zone name: $TZ, /etc/localtime, /etc/timezone, UTC.
 * Found once, at the first call, and kept: clock_tz_use puts an agent's
 * zone in TZ, after which TZ no longer says the machine's (and the zone
 * files are not opened again for every local time).
 */
const char *
clock_tz_local(void)
{
	static char buf[128];
	char link[256], *p;
	const char *tz;
	ssize_t n;
	FILE *fp;

	if (buf[0] != '\0')
		return buf;
	if ((tz = getenv("TZ")) != NULL && *tz != '\0') {
		if (*tz == ':')
			tz++;
		if (clock_tz_valid(tz) && strlen(tz) < sizeof buf) {
			snprintf(buf, sizeof buf, "%s", tz);
			return buf;
		}
	}
	n = readlink("/etc/localtime", link, sizeof link - 1);
	if (n > 0) {
		link[n] = '\0';
		if ((p = strstr(link, "zoneinfo/")) != NULL &&
		    clock_tz_valid(p + 9)) {
			snprintf(buf, sizeof buf, "%s", p + 9);
			return buf;
		}
	}
	if ((fp = fopen("/etc/timezone", "re")) != NULL) {
		if (fgets(buf, sizeof buf, fp) != NULL) {
			buf[strcspn(buf, "\n")] = '\0';
			fclose(fp);
			if (clock_tz_valid(buf))
				return buf;
		} else
			fclose(fp);
	}
	snprintf(buf, sizeof buf, "UTC");	/* (and not a bad line read) */
	return buf;
}

/*
 * Make `zone' (NULL: the machine's) the zone of localtime_r(3) calls
 * that follow.  The machine's is found first, while TZ still says it.
 */
int
clock_tz_use(const char *zone)
{
	const char *local = clock_tz_local();

	if (zone == NULL)
		zone = local;
	if (strcmp(zone, curzone) == 0)
		return 0;
	snprintf(curzone, sizeof curzone, "%s", zone);
	if (setenv("TZ", zone, 1) == -1)
		return -1;
	tzset();
	return 0;
}

static void
local_tm(const char *zone, time_t t, struct tm *tm)
{
	clock_tz_use(zone);
	localtime_r(&t, tm);
}

void
clock_day(const char *zone, time_t t, char *buf, size_t n)
{
	struct tm tm;

	local_tm(zone, t, &tm);
	strftime(buf, n, "%Y-%m-%d", &tm);
}

/*
 * The first second after t whose local date is later than t's.  Found
 * by bisection over localtime, so DST rules, skipped and repeated
 * midnights need no special cases.
 */
time_t
clock_next_midnight(const char *zone, time_t t)
{
	char today[16], day[16];
	time_t lo = t, hi = t + 3 * 86400, mid;

	clock_day(zone, t, today, sizeof today);
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		clock_day(zone, mid, day, sizeof day);
		if (strcmp(day, today) > 0)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/*
 * When a counter kept for day (the first n characters of a date: 10 the
 * day, 7 its month) starts afresh: the first local midnight after t on
 * a later date.  A day kept ahead of the clock (a clock set back) ends
 * at the midnight after it, not at the clock's next; 400 days at most.
 */
time_t
clock_after(const char *zone, const char *day, size_t n, time_t t)
{
	time_t m = clock_next_midnight(zone, t);
	char d[16];
	int i;

	for (i = 0; i < 400; i++) {
		clock_day(zone, m, d, sizeof d);
		if (strncmp(d, day, n) > 0)
			break;
		m = clock_next_midnight(zone, m);
	}
	return m;
}

/* ISO 8601 local time with its offset, e.g. 2026-11-22T00:00:00-05:00:
 * the wake's prompt tells the model its time so; nothing else prints it */
void
clock_iso(const char *zone, time_t t, char *buf, size_t n)
{
	struct tm tm;
	char off[8];
	size_t len;

	local_tm(zone, t, &tm);
	len = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(off, sizeof off, "%z", &tm);
	if (len > 0 && strlen(off) == 5)
		snprintf(buf + len, n - len, "%.3s:%s", off, off + 3);
}

/* The time heart prints, e.g. 2026-11-22T05:00:00Z (heart(7), The times). */
void
clock_utc(time_t t, char *buf, size_t n)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * The inverse of clock_utc: 2026-11-21T12:00:00Z, optionally with a
 * fraction of a second (dropped).  0, or -1 when s is not that form.
 */
int
clock_parse_utc(const char *s, time_t *out)
{
	struct tm tm;
	const char *p;

	memset(&tm, 0, sizeof tm);
	if (s == NULL || (p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	if (*p == '.' && p[1] >= '0' && p[1] <= '9')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (strcmp(p, "Z") != 0)
		return -1;
	*out = timegm(&tm);
	return 0;
}

int
clock_minute_of_day(const char *zone, time_t t)
{
	struct tm tm;

	local_tm(zone, t, &tm);
	return tm.tm_hour * 60 + tm.tm_min;
}
