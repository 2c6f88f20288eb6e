/*
 * idle.c - is a reply "nothing to do"?  Ghost mode's trigger, and the
 * one rule of what an alert looks like.
 *
 * The rule (heart-soul(5), GHOSTS): a reply is idle only when it is the
 * ghost token (default [IDLE]) or one of ghost.also (default
 * HEARTBEAT_OK), wrapped in markdown or punctuation, with at most one
 * short remark (ghost.ack_max_chars) and no alert:
 *   - a reply that has ALERT: at the start of a line (after blanks and
 *     markdown quote, list, heading and emphasis markers; in any case;
 *     also **ALERT**:) is never idle, nor one whose remark starts so;
 *   - blank lines aside, and a code fence around the whole reply
 *     aside, the reply is one line holding the token at its start or
 *     end, the rest of the line the remark; or two lines, one the token
 *     alone and the other the remark, which is then not a list item;
 *   - anything more (three lines, a list of items beside the token, a
 *     code block, a remark longer than ack_max_chars) is a real answer.
 * [IDLE:LOW], [IDLE:MEDIUM] and [IDLE:HIGH] are idle with a level.  A
 * real answer that merely mentions the token inside is not idle.  The
 * rule errs on the side of a real answer: a finding is never lost, and
 * a chatty ghost costs one delivered message.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "heartint.h"

#define MAXLINES	4	/* content lines looked at; more is real */

struct span {
	const char *s;
	size_t	 len;
};

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

/* Skip blanks and markdown markers at the start of a line: quotes,
 * bullets, ordered-list numbers, headings, emphasis. */
static size_t
markers(const char *s, size_t len)
{
	size_t i = 0, d;

	for (;;) {
		while (i < len && strchr(" \t>-*+#_`~", s[i]) != NULL &&
		    s[i] != '\0')
			i++;
		for (d = i; d < len && isdigit((unsigned char)s[d]); d++)
			;
		if (d == i || d == len || (s[d] != '.' && s[d] != ')'))
			return i;
		i = d + 1;
	}
}

/* Does s start (after markers) with the alert marker ALERT: ? */
static int
alert_at(const char *s, size_t len)
{
	size_t i = markers(s, len);

	if (len - i < 6 || strncasecmp(s + i, "ALERT", 5) != 0)
		return 0;
	for (i += 5; i < len && strchr("*_`", s[i]) != NULL && s[i] != '\0';
	    i++)
		;
	return i < len && s[i] == ':';
}

/*
 * Does the text carry an alert: ALERT: at the start of some line,
 * after blanks and markdown markers, in any case?  Used for idle
 * detection and for heart-ghost --alert-only.
 */
int
idle_alert(const char *text)
{
	const char *p = text, *nl;

	if (text == NULL)
		return 0;
	for (;;) {
		nl = strchr(p, '\n');
		if (alert_at(p, nl ? (size_t)(nl - p) : strlen(p)))
			return 1;
		if (nl == NULL)
			return 0;
		p = nl + 1;
	}
}

/* A code fence: ``` or ~~~ after blanks and quote markers. */
static int
fence(const struct span *l)
{
	size_t i = 0;

	while (i < l->len && (l->s[i] == ' ' || l->s[i] == '\t' ||
	    l->s[i] == '>'))
		i++;
	return l->len - i >= 3 && (strncmp(l->s + i, "```", 3) == 0 ||
	    strncmp(l->s + i, "~~~", 3) == 0);
}

/* A list item: - * + or N. N) then a blank, after blanks and quotes. */
static int
list_item(const struct span *l)
{
	size_t i = 0, d;

	while (i < l->len && (l->s[i] == ' ' || l->s[i] == '\t' ||
	    l->s[i] == '>'))
		i++;
	if (i + 1 < l->len && strchr("-*+", l->s[i]) != NULL &&
	    (l->s[i + 1] == ' ' || l->s[i + 1] == '\t'))
		return 1;
	for (d = i; d < l->len && isdigit((unsigned char)l->s[d]); d++)
		;
	return d > i && d + 1 < l->len && (l->s[d] == '.' ||
	    l->s[d] == ')') && (l->s[d + 1] == ' ' || l->s[d + 1] == '\t');
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

/* A remark that may come with the token: short, and no alert. */
static int
remark(const char *s, size_t len, size_t maxrem)
{
	peel(&s, &len);
	return len <= maxrem && !alert_at(s, len);
}

/* Is the line tok, or tok then a remark? */
static int
starts_idle(const char *s, size_t len, const char *tok, size_t maxrem,
    const char **lvl)
{
	size_t n = token_at(s, len, tok, lvl);

	return n > 0 && remark(s + n, len - n, maxrem);
}

/* Is the line a remark then tok? */
static int
ends_idle(const char *s, size_t len, const char *tok, size_t maxrem,
    const char **lvl)
{
	size_t i;

	for (i = len; i-- > 0;) {
		if (len - i > strlen(tok) + 10)
			break;
		if (token_at(s + i, len - i, tok, lvl) != len - i)
			continue;
		if (i > 0 && isalnum((unsigned char)s[i - 1]))
			continue;
		return remark(s, i, maxrem);
	}
	return 0;
}

/* Is the line tok alone, wrapped or not? */
static int
alone(const struct span *l, const char *tok, const char **lvl)
{
	const char *s = l->s;
	size_t len = l->len;

	peel(&s, &len);
	return len > 0 && token_at(s, len, tok, lvl) == len;
}

/* The reply's lines with something on them, at most MAXLINES + 1. */
static size_t
content_lines(const char *reply, struct span *l)
{
	const char *p = reply, *nl;
	size_t n = 0, len, i;

	while (n <= MAXLINES) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		for (i = 0; i < len && isspace((unsigned char)p[i]); i++)
			;
		if (i < len) {
			l[n].s = p;
			l[n++].len = len;
		}
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	return n;
}

/* The rule above for one token, on the content lines l[0..n). */
static int
idle_token(const struct span *l, size_t n, const char *tok, size_t maxrem,
    const char **lvl)
{
	const char *s;
	size_t len, i;

	*lvl = NULL;
	if (n == 1) {
		s = l[0].s;
		len = l[0].len;
		peel(&s, &len);
		return len > 0 && (starts_idle(s, len, tok, maxrem, lvl) ||
		    ends_idle(s, len, tok, maxrem, lvl));
	}
	for (i = 0; i < 2; i++)
		if (alone(&l[i], tok, lvl) && !list_item(&l[1 - i]) &&
		    remark(l[1 - i].s, l[1 - i].len, maxrem))
			return 1;
	*lvl = NULL;
	return 0;
}

/*
 * Is `reply' idle for soul s?  *level is set to "LOW", "MEDIUM" or
 * "HIGH" for a graduated token, else NULL.
 */
int
idle_detect(const struct soul *s, const char *reply, const char **level)
{
	struct span l[MAXLINES + 1], *c = l;
	size_t n, i, max = (size_t)s->ghost_ack_max;
	json_t *a;

	*level = NULL;
	if (reply == NULL || idle_alert(reply))
		return 0;
	n = content_lines(reply, l);
	if (n >= 3 && fence(&l[0]) && fence(&l[n - 1])) {
		c = l + 1;	/* one code block around the whole reply */
		n -= 2;
	}
	if (n == 0 || n > 2)
		return 0;
	for (i = 0; i < n; i++)
		if (fence(&c[i]))
			return 0;
	if (idle_token(c, n, s->ghost_token, max, level))
		return 1;
	json_array_foreach(s->ghost_also, i, a)
		if (idle_token(c, n, json_string_value(a), max, level))
			return 1;
	return 0;
}
