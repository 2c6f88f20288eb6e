/*
 * idle.c - is a reply "nothing to do"?  Ghost mode's trigger.
 *
 * In token mode a reply is idle when, once markdown and punctuation
 * around it are peeled off, it is the ghost token (default [IDLE]) or
 * one of ghost.also (default HEARTBEAT_OK), or it starts or ends with
 * one and the rest is a short remark (at most ghost.ack_max_chars).
 * [IDLE:LOW], [IDLE:MEDIUM] and [IDLE:HIGH] are idle with a level.  A
 * real answer that merely mentions the token inside is not idle.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "heart.h"

/* Characters that wrap a token: markdown, quotes, punctuation. */
static int
wrapper(int c)
{
	return c != '\0' && (isspace(c) || strchr("*_`~\"'.,!;:>-#()", c));
}

/* Peel wrappers off both ends of s[0..len); returns the new bounds. */
static void
peel(const char **s, size_t *len)
{
	while (*len > 0 && wrapper((unsigned char)**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && wrapper((unsigned char)(*s)[*len - 1]))
		(*len)--;
}

static const char *levels[] = { "LOW", "MEDIUM", "HIGH" };

/*
 * Does tok occur at s (case-insensitively)?  Returns its length in s,
 * 0 if not.  A bracketed token also matches its graduated form
 * "[TOK:LEVEL]" (level into *lvl) and its bare word "TOK".
 */
static size_t
token_at(const char *s, size_t len, const char *tok, const char **lvl)
{
	size_t tl = strlen(tok), core, i, n;

	if (tl <= len && strncasecmp(s, tok, tl) == 0)
		return tl;
	if (tl < 3 || tok[0] != '[' || tok[tl - 1] != ']')
		return 0;
	core = tl - 2;
	if (len >= core + 2 && s[0] == '[' &&
	    strncasecmp(s + 1, tok + 1, core) == 0 && s[core + 1] == ':')
		for (i = 0; i < 3; i++) {
			n = strlen(levels[i]);
			if (len >= core + 3 + n && strncasecmp(s + core + 2,
			    levels[i], n) == 0 && s[core + 2 + n] == ']') {
				*lvl = levels[i];
				return core + 3 + n;
			}
		}
	if (len >= core && strncasecmp(s, tok + 1, core) == 0 &&
	    (len == core || !isalnum((unsigned char)s[core])))
		return core;
	return 0;
}

/* Is the whole of s (after peeling) tok, or tok then a short remark? */
static int
starts_idle(const char *s, size_t len, const char *tok, size_t maxrem,
    const char **lvl)
{
	size_t n = token_at(s, len, tok, lvl);
	const char *rest;
	size_t rlen;

	if (n == 0)
		return 0;
	rest = s + n;
	rlen = len - n;
	peel(&rest, &rlen);
	return rlen <= maxrem;
}

static int
ends_idle(const char *s, size_t len, const char *tok, size_t maxrem,
    const char **lvl)
{
	size_t i, n;
	const char *head;
	size_t hlen;

	for (i = len; i-- > 0;) {
		if (len - i > strlen(tok) + 10)
			break;
		if ((n = token_at(s + i, len - i, tok, lvl)) != len - i)
			continue;
		if (i > 0 && isalnum((unsigned char)s[i - 1]))
			continue;
		head = s;
		hlen = i;
		peel(&head, &hlen);
		return hlen <= maxrem;
	}
	return 0;
}

static int
one_token(const char *s, size_t len, const char *tok, size_t maxrem,
    const char **lvl)
{
	*lvl = NULL;
	return starts_idle(s, len, tok, maxrem, lvl) ||
	    ends_idle(s, len, tok, maxrem, lvl);
}

/*
 * Is `reply' idle for soul s?  *level is set to "LOW", "MEDIUM" or
 * "HIGH" for a graduated token, else NULL.
 */
int
idle_detect(const struct soul *s, const char *reply, const char **level)
{
	const char *p = reply;
	size_t len = reply ? strlen(reply) : 0, i;
	json_t *a;

	*level = NULL;
	peel(&p, &len);
	if (len == 0)
		return 0;
	if (one_token(p, len, s->ghost_token, (size_t)s->ghost_ack_max,
	    level))
		return 1;
	json_array_foreach(s->ghost_also, i, a)
		if (one_token(p, len, json_string_value(a),
		    (size_t)s->ghost_ack_max, level))
			return 1;
	return 0;
}
