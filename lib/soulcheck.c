/*
 * soulcheck.c - the checks of a soul's values, one key of one mapping
 * at a time: each reads the key if it is there, and when it is wrong
 * fails with "file:line:col: path: what", pointing at the line and
 * column yj.c kept.  A warning (an unknown key and the like) is kept in
 * the soul for the program to print.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartsoul.h"

int
soul_hours_in(const struct hours *h, int minute)
{
	if (!h->set || h->start == h->end)
		return 1;
	if (h->start < h->end)
		return minute >= h->start && minute < h->end;
	return minute >= h->start || minute < h->end;
}

/* Whether t is outside hours h (set) in zone: the one test of a chamber
 * at rest, for heart-wake, the pulse and heart-cap status alike. */
int
soul_hours_out(const struct hours *h, const char *zone, time_t t)
{
	return h->set && !soul_hours_in(h, clock_minute_of_day(zone, t));
}

/* Warn "file:line:col: what" at obj[key]'s key; what is fmt with a
 * and b. */
void
soul_add_warning(struct soul_loading *v, const json_t *obj, const char *key,
    const char *fmt, const char *a, const char *b)
{
	struct soul *s = v->s;
	char msg[HEART_ERRLEN], full[HEART_ERRLEN + 300];
	int lc[2];

	yj_where(v->y, obj, key, 0, 1, lc);
	snprintf(msg, sizeof msg, fmt, a, b);
	snprintf(full, sizeof full, "%s:%d:%d: %s", v->file, lc[0], lc[1],
	    msg);
	s->warn = realloc(s->warn, (s->nwarn + 1) * sizeof *s->warn);
	if (s->warn == NULL)
		abort();
	s->warn[s->nwarn++] = xstrdup(full);
}

/* Fail with "file:line:col: path: what" at obj[key]: at the key
 * itself when atkey is set, else at its value. */
int
soul_bad_at(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, const char *what, int atkey)
{
	int lc[2];

	yj_where(v->y, obj, key, 0, atkey, lc);
	errf(v->err, "%s:%d:%d: %s: %s", v->file, lc[0], lc[1], path, what);
	return -1;
}

/* The same at the value, as most checks point. */
int
soul_bad(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, const char *what)
{
	return soul_bad_at(v, obj, key, path, what, 0);
}

int
soul_str(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, char **dst)
{
	json_t *j = json_object_get(obj, key);

	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return soul_bad(v, obj, key, path, "must be a string");
	free(*dst);
	*dst = xstrdup(json_string_value(j));
	return 0;
}

int
soul_dur(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, long long *dst)
{
	static const char zero[] = "must be longer than 0s (daily_cap: 0 "
	    "turns a chamber off)";
	json_t *j = json_object_get(obj, key);
	const char *str = json_string_value(j);
	char m[200], d[32];
	long long x = 0;
	double r;

	if (j == NULL || json_is_null(j))
		return 0;
	if (json_is_number(j)) {
		/* whole seconds (a YAML integer past 64 bits is a float) */
		r = json_number_value(j);
		if (r <= 0)
			return soul_bad(v, obj, key, path, zero);
		if (r < 0x1p63 && r != floor(r))
			return soul_bad(v, obj, key, path, "must be whole "
			    "seconds, or a duration such as 30m");
		if (r > (double)dur_max()) {
			snprintf(m, sizeof m, "too large (at most %s)",
			    dur_format(dur_max(), d, sizeof d));
			return soul_bad(v, obj, key, path, m);
		}
		*dst = (long long)r;
		return 0;
	}
	if (str == NULL)
		return soul_bad(v, obj, key, path, "must be a duration (write "
		    "e.g. 10s, 30m, 2h, 1d or 1h30m)");
	if (dur_parse(str, &x) == 0) {
		if (x == 0)
			return soul_bad(v, obj, key, path, zero);
		*dst = x;
		return 0;
	}
	if (errno == ERANGE)
		snprintf(m, sizeof m, "'%.40s' is too large (at most %s)", str,
		    dur_format(dur_max(), d, sizeof d));
	else
		snprintf(m, sizeof m, "bad duration '%.40s' (write e.g. 10s, "
		    "30m, 2h, 1d or 1h30m)", str);
	return soul_bad(v, obj, key, path, m);
}

int
soul_strlist(const json_t *j, int nonempty)
{
	size_t i;
	json_t *e;

	if (!json_is_array(j) || (nonempty && json_array_size(j) == 0))
		return 0;
	json_array_foreach(j, i, e)
		if (!json_is_string(e))
			return 0;
	return 1;
}

int
soul_need_map(struct soul_loading *v, const json_t *obj, const char *key,
    const char *path, json_t **out)
{
	json_t *j = json_object_get(obj, key);

	*out = NULL;
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_object(j))
		return soul_bad(v, obj, key, path, "must be a mapping of "
		    "keys");
	*out = j;
	return 0;
}
