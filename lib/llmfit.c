/*
 * llmfit.c - the context a request carries, fitted to the soul's
 * budget of tokens (llm_fit), and the room a prompt's checklist items
 * may take (llm_items_room).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"

/*
 * The context budget.  A message costs the bytes of its JSON; a token
 * is estimated at 4 bytes.  The system messages (before h0) and the
 * wake's prompt (at h1) are sent whole, the prompt's checklist items
 * fitted first (llm_items_room); the history [h0, h1) and the wake's
 * own messages after h1 share the rest: a history message larger than
 * half of it is first shortened to that half, then the oldest history
 * messages are dropped (a tool result never without its call), then
 * the largest messages left are shortened until all fits.  A
 * shortened message keeps its head and says so.
 */
#define FIT_FLOOR	512	/* bytes a shortened message keeps */

struct fit {
	json_t	*m;
	size_t	 cost;
	int	 gone;		/* dropped */
	int	 floor;	/* cut as short as it goes */
};

static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The bytes of a message (or any value) in a request. */
size_t
llm_cost(const json_t *m)
{
	return json_dumpb(m, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* The budget of tokens in bytes. */
static size_t
budget_bytes(long long budget)
{
	return (size_t)budget * 4;
}

/*
 * The bytes the checklist's items may take in a wake's prompt, when the
 * system prompt and the rest of the prompt cost fixed: half of what
 * they leave of the budget, so that the history and the wake's own
 * messages keep the other half.
 */
size_t
llm_items_room(size_t fixed, long long budget)
{
	size_t b = budget_bytes(budget);

	return b > fixed ? (b - fixed) / 2 : 0;
}

static const char *
role(const json_t *m)
{
	const char *r = str(m, "role");

	return r != NULL ? r : "";
}

/* f's message with its content cut to cost at most target bytes (or
 * as near as its other fields let it); 0 when nothing could be cut. */
static int
cut(struct fit *f, size_t target)
{
	const char *text = str(f->m, "content");
	size_t len, keep, c;
	json_t *m;
	char *t;

	if (text == NULL || f->cost <= target)
		return 0;
	len = strlen(text);
	keep = len;
	m = json_copy(f->m);
	for (c = f->cost; c > target && keep > 0;) {
		keep = c - target < keep ? keep - (c - target) : 0;
		while (keep > 0 && (text[keep] & 0xc0) == 0x80)
			keep--;		/* a whole UTF-8 character */
		if (asprintf(&t, "%.*s\n[heart: cut from %zu to %zu bytes to "
		    "fit llm.context_budget; the history keeps it whole]",
		    (int)keep, text, len, keep) == -1)
			abort();
		json_object_set_new(m, "content", json_string(t));
		free(t);
		c = llm_cost(m);
	}
	if (c >= f->cost) {		/* nothing left to cut */
		json_decref(m);
		return 0;
	}
	json_decref(f->m);
	f->m = m;
	f->cost = c;
	return 1;
}

/* What the messages that share the room cost. */
static size_t
movable(const struct fit *f, size_t n, size_t h0, size_t h1)
{
	size_t i, sum = 0;

	for (i = h0; i < n; i++)
		if (i != h1 && !f[i].gone)
			sum += f[i].cost;
	return sum;
}

/* The largest message after h0 that may still be shortened, or n. */
static size_t
largest(const struct fit *f, size_t n, size_t h0, size_t h1)
{
	size_t i, best = n;

	for (i = h0; i < n; i++)
		if (i != h1 && !f[i].gone && !f[i].floor &&
		    str(f[i].m, "content") != NULL && (best == n ||
		    f[i].cost > f[best].cost))
			best = i;
	return best;
}

/*
 * msgs as sent within a budget of tokens: a new array (its messages
 * shared with msgs, but for the shortened ones).
 */
json_t *
llm_fit(const json_t *msgs, size_t h0, size_t h1, long long budget)
{
	size_t n = json_array_size(msgs), i, fixed = 0, room, half, b;
	struct fit *f = xcalloc(n, sizeof *f);
	json_t *out = json_array();

	for (i = 0; i < n; i++) {
		f[i].m = json_incref(json_array_get(msgs, i));
		f[i].cost = llm_cost(f[i].m);
		if (i < h0 || i == h1)
			fixed += f[i].cost;
	}
	b = budget_bytes(budget);
	room = b > fixed ? b - fixed : 0;
	half = room / 2 > FIT_FLOOR ? room / 2 : FIT_FLOOR;
	for (i = h0; i < h1 && i < n; i++)
		cut(&f[i], half);
	for (i = h0; i < h1 && movable(f, n, h0, h1) > room; i++) {
		f[i].gone = 1;
		while (i + 1 < h1 && strcmp(role(f[i + 1].m), "tool") == 0)
			f[++i].gone = 1;
	}
	while ((b = movable(f, n, h0, h1)) > room &&
	    (i = largest(f, n, h0, h1)) < n) {
		half = b - room < f[i].cost ? f[i].cost - (b - room) : 0;
		if (half <= FIT_FLOOR) {
			half = FIT_FLOOR;
			f[i].floor = 1;
		}
		if (!cut(&f[i], half))
			f[i].floor = 1;
	}
	for (i = 0; i < n; i++) {
		if (!f[i].gone)
			json_array_append(out, f[i].m);
		json_decref(f[i].m);
	}
	free(f);
	return out;
}
