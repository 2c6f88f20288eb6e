/*
 * price.c - money: a model's prices (heart-soul(5), llm.price) and
 * what a wake's usage of it cost.
 *
 * A price is dollars per million tokens of each kind; a cost is kept
 * in whole nanodollars (1e-9 $), so that a day's sum is exact whatever
 * the order of its wakes and reads back the same from any store.  An
 * endpoint with no price has no cost (-1), never $0.
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"

#define PRICE_MAX	1e6	/* $ per million tokens: a typo past it */

/* One price field: a number of dollars, 0 to PRICE_MAX; -1 if absent. */
static int
field(const json_t *j, const char *key, double *v, char *err)
{
	const json_t *f = json_object_get(j, key);
	double d = json_number_value(f);

	*v = -1;
	if (f == NULL || json_is_null(f))
		return 0;
	if (!json_is_number(f) || !(d >= 0 && d <= PRICE_MAX)) {
		errf(err, "%s: must be a number of dollars per million "
		    "tokens, 0 to %g", key, PRICE_MAX);
		return -1;
	}
	*v = json_number_value(f);
	return 0;
}

/*
 * Read a price, {input: 0.15, cached_input: 0.075, cache_write: 0.19,
 * output: 0.60}, into p: input and output are needed, a missing
 * cached_input or cache_write is input's.  NULL or null is no price
 * (p->set = 0).  -1, with what is wrong in err (a field's name first),
 * when j is not a price.
 */
int
price_parse(const json_t *j, struct price *p, char *err)
{
	static const char *const known[] = { "input", "cached_input",
	    "cache_write", "output", NULL };
	const char *key;
	json_t *val;
	int i;

	memset(p, 0, sizeof *p);
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_object(j)) {
		errf(err, "must be a mapping such as {input: 0.15, output: "
		    "0.60} (dollars per million tokens)");
		return -1;
	}
	json_object_foreach((json_t *)j, key, val) {
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(key, known[i]) == 0)
				break;
		if (known[i] == NULL) {
			errf(err, "unknown key '%.40s' (a price has input, "
			    "cached_input, cache_write and output)", key);
			return -1;
		}
	}
	if (field(j, "input", &p->input, err) == -1 ||
	    field(j, "cached_input", &p->cached_input, err) == -1 ||
	    field(j, "cache_write", &p->cache_write, err) == -1 ||
	    field(j, "output", &p->output, err) == -1)
		return -1;
	if (p->input < 0 || p->output < 0) {
		errf(err, "needs both input and output (dollars per million "
		    "tokens)");
		return -1;
	}
	if (p->cached_input < 0)
		p->cached_input = p->input;
	if (p->cache_write < 0)
		p->cache_write = p->input;
	p->set = 1;
	return 0;
}

/*
 * What usage u cost at price p, in nanodollars; -1 when there is no
 * price.  u->prompt counts every input token, those read from the
 * provider's cache (u->cached) and written to it (u->cache_write)
 * included.
 */
long long
price_cost(const struct price *p, const struct usage *u)
{
	long long plain;
	double c;

	if (p == NULL || !p->set)
		return -1;
	plain = u->prompt - u->cached - u->cache_write;
	if (plain < 0)
		plain = 0;
	/* $/M tokens is 1000 nanodollars a token */
	c = ((double)plain * p->input + (double)u->cached * p->cached_input +
	    (double)u->cache_write * p->cache_write +
	    (double)u->completion * p->output) * 1000.0;
	return c > 9e18 ? (long long)9e18 : (long long)(c + 0.5);
}

/*
 * A cost (nanodollars) in dollars, for JSON: null when -1.  The real is
 * the double nearest the decimal; json_line writes it back as that
 * decimal (0.00212, never 0.0021199999999999999), exactly up to a
 * million dollars, to 15 significant digits past it.
 */
json_t *
price_json(long long nano)
{
	return nano < 0 ? json_null() : json_real((double)nano / 1e9);
}

/* Dollars from JSON (a number >= 0) as nanodollars; -1 if not one. */
long long
price_nano(const json_t *j)
{
	double d;

	if (!json_is_number(j) || (d = json_number_value(j)) < 0 ||
	    d != d || d > 9e9)
		return -1;
	return (long long)(d * 1e9 + 0.5);
}

/*
 * A cost (nanodollars, >= 0) as the decimal it is, in dollars, with
 * no trailing zero but at least `places' decimals: 0.00212, 12, 1.50
 * (places 2).  The one way a cost becomes text (price_format, the
 * metrics, the pulse).
 */
char *
price_text(long long nano, int places, char *buf, size_t n)
{
	char frac[10];
	int i, k = 9;
	long long f;

	if (nano < 0)
		nano = 0;
	for (i = 8, f = nano % 1000000000; i >= 0; i--, f /= 10)
		frac[i] = (char)('0' + f % 10);
	while (k > places && frac[k - 1] == '0')
		k--;
	snprintf(buf, n, "%lld%s%.*s", nano / 1000000000, k > 0 ? "." : "",
	    k, frac);
	return buf;
}

/* A cost for people: "$0.00212", "$1.50", or "no price". */
char *
price_format(long long nano, char *buf, size_t n)
{
	if (nano < 0)
		snprintf(buf, n, "no price");
	else if (n > 1) {
		buf[0] = '$';
		price_text(nano, 2, buf + 1, n - 1);
	}
	return buf;
}
