/*
 * endpoint.c - the endpoints the fleet file declares (HEART_FLEET,
 * heart(7) THE FLEET FILE), read once per process: each a name, the
 * base_url and model it matches (none: any) and its limits a minute,
 * whose buckets bucket.c keeps.  A soul's endpoint is the first one
 * whose base_url and model match its own.  And the fleet's budget
 * (budget:), the dollars a day and a month in one zone that budget.c
 * keeps for every agent together.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

struct endpoint {
	char	 name[HEART_IDMAX + 1];
	char	*base_url, *model;	/* NULL: any */
	long long rpm, tpm;		/* 0: no limit */
};

static struct {
	int	 read;
	struct endpoint *e;
	size_t	 n;
	struct fleet_budget budget;
	char	 path[4096];
} fl;

static int
ep_num(const char *file, const char *name, json_t *o, const char *key,
    long long *v, char *err)
{
	json_t *j = json_object_get(o, key);

	*v = 0;
	if (j == NULL)
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < 0 ||
	    json_integer_value(j) > 1000000000) {
		errf(err, "%s: endpoints.%s.%s: not a whole number from 0 to "
		    "1000000000", file, name, key);
		return -1;
	}
	*v = json_integer_value(j);
	return 0;
}

static int
ep_str(const char *file, const char *name, json_t *o, const char *key,
    char **v, char *err)
{
	json_t *j = json_object_get(o, key);

	*v = NULL;
	if (j == NULL)
		return 0;
	if (!json_is_string(j) || json_string_length(j) == 0) {
		errf(err, "%s: endpoints.%s.%s: not a string", file, name,
		    key);
		return -1;
	}
	*v = xstrdup(json_string_value(j));
	return 0;
}

static int
ep_parse(const char *file, const char *name, json_t *o, struct endpoint *e,
    char *err)
{
	static const char *known[] = { "base_url", "model",
	    "requests_per_minute", "tokens_per_minute", NULL };
	const char *k;
	json_t *v;
	int i;

	memset(e, 0, sizeof *e);
	if (!id_valid(name)) {
		errf(err, "%s: endpoint name '%.64s': use 1 to 64 of A-Z a-z "
		    "0-9 _ . -, not starting with a dot", file, name);
		return -1;
	}
	snprintf(e->name, sizeof e->name, "%s", name);
	if (!json_is_object(o)) {
		errf(err, "%s: endpoints.%s: not a mapping", file, name);
		return -1;
	}
	json_object_foreach(o, k, v) {
		for (i = 0; known[i] != NULL && strcmp(known[i], k); i++)
			;
		if (known[i] == NULL) {
			errf(err, "%s: endpoints.%s.%.64s: unknown key", file,
			    name, k);
			return -1;
		}
	}
	return ep_str(file, name, o, "base_url", &e->base_url, err) == -1 ||
	    ep_str(file, name, o, "model", &e->model, err) == -1 ||
	    ep_num(file, name, o, "requests_per_minute", &e->rpm, err) ==
	    -1 || ep_num(file, name, o, "tokens_per_minute", &e->tpm, err) ==
	    -1 ? -1 : 0;
}

/* budget.KEY: dollars, as nanodollars into *v (-1: not given). */
static int
budget_dollars(const char *file, json_t *o, const char *key, long long *v,
    char *err)
{
	json_t *j = json_object_get(o, key);

	*v = -1;
	if (j == NULL || json_is_null(j))
		return 0;
	if ((*v = price_nano(j)) < 0) {
		errf(err, "%s: budget.%s: must be a number of dollars, 0 or "
		    "more and at most 9e9, such as 20.00", file, key);
		return -1;
	}
	return 0;
}

/* The fleet's budget: {daily, monthly, zone}, the zone required, for
 * every host must count the same days. */
static int
budget_parse(const char *file, json_t *o, struct fleet_budget *b,
    char *err)
{
	json_t *z = json_object_get(o, "zone"), *v;
	const char *k;

	memset(b, 0, sizeof *b);
	b->daily = b->monthly = -1;
	if (o == NULL)
		return 0;
	if (!json_is_object(o)) {
		errf(err, "%s: budget: not a mapping", file);
		return -1;
	}
	json_object_foreach(o, k, v)
		if (strcmp(k, "daily") && strcmp(k, "monthly") &&
		    strcmp(k, "zone")) {
			errf(err, "%s: budget.%.64s: unknown key (budget has "
			    "daily, monthly and zone)", file, k);
			return -1;
		}
	if (budget_dollars(file, o, "daily", &b->daily, err) == -1 ||
	    budget_dollars(file, o, "monthly", &b->monthly, err) == -1)
		return -1;
	if (b->daily < 0 && b->monthly < 0) {
		errf(err, "%s: budget: give daily:, monthly: or both", file);
		return -1;
	}
	if (!json_is_string(z) || !clock_tz_valid(json_string_value(z)) ||
	    json_string_length(z) >= sizeof b->zone) {
		errf(err, "%s: budget.zone: %s; name the zone its days and "
		    "months are counted in, such as Europe/Berlin", file,
		    z == NULL ? "missing" : "not a time zone");
		return -1;
	}
	snprintf(b->zone, sizeof b->zone, "%s", json_string_value(z));
	b->set = 1;
	return 0;
}

static void
fleet_clear(void)
{
	size_t i;

	for (i = 0; i < fl.n; i++) {
		free(fl.e[i].base_url);
		free(fl.e[i].model);
	}
	free(fl.e);
	fl.e = NULL;
	fl.n = 0;
	memset(&fl.budget, 0, sizeof fl.budget);
}

static int
fleet_parse(const char *file, const char *buf, size_t len, char *err)
{
	struct yj y;
	json_t *eps, *o;
	const char *name, *k;
	int rc = -1;

	if (yj_load(buf, len, 0, file, &y, err) == -1)
		return -1;
	eps = json_object_get(y.root, "endpoints");
	json_object_foreach(y.root, k, o)
		if (strcmp(k, "endpoints") != 0 && strcmp(k, "budget") != 0) {
			errf(err, "%s: %.64s: unknown key (the fleet file has "
			    "endpoints: and budget:)", file, k);
			goto out;
		}
	if (budget_parse(file, json_object_get(y.root, "budget"),
	    &fl.budget, err) == -1)
		goto out;
	if (eps != NULL && !json_is_object(eps)) {
		errf(err, "%s: endpoints: not a mapping", file);
		goto out;
	}
	fl.e = xcalloc(json_object_size(eps) + 1, sizeof *fl.e);
	json_object_foreach(eps, name, o)
		if (ep_parse(file, name, o, &fl.e[fl.n++], err) == -1)
			goto out;
	rc = 0;
out:
	yj_free(&y);
	return rc;
}

/* The fleet file, read once per process: 0, or -1 with err. */
static int
fleet_read(char *err)
{
	const char *file = getenv("HEART_FLEET");
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (fl.read)
		return 0;
	if (file == NULL || *file == '\0') {
		fl.read = 1;
		return 0;
	}
	snprintf(fl.path, sizeof fl.path, "%s", file);
	if (file_read(file, HEART_SOULMAX, &buf, &len) == -1) {
		if (errno == EFBIG)
			errf(err, "%s: larger than %d bytes", file,
			    HEART_SOULMAX);
		else
			errf(err, "HEART_FLEET: %s: %s", file,
			    strerror(errno));
		return -1;
	}
	rc = fleet_parse(file, buf, len, err);
	free(buf);
	if (rc == -1)
		fleet_clear();
	else
		fl.read = 1;
	return rc;
}

/* The fleet file's name, for messages. */
const char *
endpoint_file(void)
{
	return fl.path[0] ? fl.path : "HEART_FLEET";
}

/*
 * The limits a minute of the endpoint `name' (0: none): 1, or 0 with
 * err when the fleet file declares no such endpoint, or -1 with err
 * when it is unsound.
 */
int
endpoint_limits(const char *name, long long *rpm, long long *tpm, char *err)
{
	size_t i;

	*rpm = *tpm = 0;
	if (fleet_read(err) == -1)
		return -1;
	for (i = 0; i < fl.n; i++)
		if (strcmp(fl.e[i].name, name) == 0) {
			*rpm = fl.e[i].rpm;
			*tpm = fl.e[i].tpm;
			return 1;
		}
	errf(err, "%s: no endpoint '%.64s'", endpoint_file(), name);
	return 0;
}

/*
 * The endpoint of a model's settings into name (n bytes): 1 when the
 * fleet file declares one for its base_url and model, 0 when none
 * (name is ""), -1 with err when the fleet file is unsound.
 */
int
endpoint_of(const struct llm_conf *lc, char *name, size_t n, char *err)
{
	size_t i;

	name[0] = '\0';
	if (fleet_read(err) == -1)
		return -1;
	for (i = 0; i < fl.n; i++)
		if ((fl.e[i].base_url == NULL || strcmp(fl.e[i].base_url,
		    lc->base_url) == 0) && (fl.e[i].model == NULL ||
		    strcmp(fl.e[i].model, lc->model) == 0)) {
			snprintf(name, n, "%s", fl.e[i].name);
			return 1;
		}
	return 0;
}

/*
 * Why a soul has no endpoint, and so no rate limit, into buf (n
 * bytes): there is no fleet file, or none of its endpoints matches.
 */
void
endpoint_none_why(char *buf, size_t n)
{
	const char *file = getenv("HEART_FLEET");

	if (file == NULL || *file == '\0')
		snprintf(buf, n, "no fleet file (HEART_FLEET is unset): no "
		    "rate limit");
	else
		snprintf(buf, n, "no endpoint of %s matches the soul's "
		    "base_url and model (no rate limit)", file);
}

/* The endpoints the fleet file declares, in its order (free *names,
 * not the strings, which stay the process's). */
int
endpoint_names(const char ***names, size_t *n, char *err)
{
	size_t i;

	*names = NULL;
	*n = 0;
	if (fleet_read(err) == -1)
		return -1;
	*names = xcalloc(fl.n + 1, sizeof **names);
	for (i = 0; i < fl.n; i++)
		(*names)[i] = fl.e[i].name;
	*n = fl.n;
	return 0;
}

/* The fleet's budget into b (b->set 0: none): 0, or -1 with err. */
int
endpoint_budget(struct fleet_budget *b, char *err)
{
	memset(b, 0, sizeof *b);
	b->daily = b->monthly = -1;
	if (fleet_read(err) == -1)
		return -1;
	*b = fl.budget;
	if (!b->set)
		b->daily = b->monthly = -1;
	return 0;
}
