/*
 * jscan.c - a validating JSON scanner that builds no tree.
 *
 * jscan_object checks that a buffer holds exactly one JSON object
 * (RFC 8259 syntax, valid UTF-8, nesting at most JSCAN_DEPTH, the same
 * depth jansson allows) and reports where the top-level members asked
 * for are, as raw spans of the buffer.  It allocates nothing: it exists
 * so that the ghost path of heart-ghost, where most results are idle
 * and are dropped, costs one pass over the bytes and no more.
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"

#define JSCAN_DEPTH	2048

/* byte classes inside a string: 0 plain, 1 quote, 2 backslash, 3 control,
 * 4 start of a multi-byte UTF-8 sequence (or an invalid byte) */
static unsigned char strclass[256];

struct scan {
	const char *b, *p, *e;
	int	 depth;
	char	*err;
};

static void
init_classes(void)
{
	int c;

	if (strclass['"'] == 1)
		return;
	for (c = 0; c < 256; c++)
		strclass[c] = c < 0x20 ? 3 : c >= 0x80 ? 4 : 0;
	strclass['\\'] = 2;
	strclass['"'] = 1;
}

static int
fail(struct scan *s, const char *what)
{
	errf(s->err, "not JSON: %s at byte %zu", what,
	    (size_t)(s->p - s->b) + 1);
	return -1;
}

static void
skip_ws(struct scan *s)
{
	while (s->p < s->e && (*s->p == ' ' || *s->p == '\t' ||
	    *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int
hex4(const char *p, const char *e, unsigned *u)
{
	int i;

	*u = 0;
	if (e - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		unsigned c = (unsigned char)p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			return -1;
		*u = *u << 4 | d;
	}
	return 0;
}

/* One UTF-8 sequence of two to four bytes at s->p. */
static int
utf8_seq(struct scan *s)
{
	size_t n;

	if ((n = utf8_len((const unsigned char *)s->p,
	    (size_t)(s->e - s->p))) == 0)
		return fail(s, "invalid UTF-8");
	s->p += n;
	return 0;
}

static int
escape(struct scan *s)
{
	unsigned u, lo;

	s->p++;				/* the backslash */
	if (s->p >= s->e)
		return fail(s, "unfinished escape");
	if (strchr("\"\\/bfnrt", *s->p) != NULL && *s->p != '\0') {
		s->p++;
		return 0;
	}
	if (*s->p != 'u' || hex4(s->p + 1, s->e, &u) == -1)
		return fail(s, "invalid escape");
	s->p += 5;
	if (u >= 0xdc00 && u <= 0xdfff)
		return fail(s, "invalid Unicode escape");
	if (u < 0xd800 || u > 0xdbff)
		return 0;
	if (s->e - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' ||
	    hex4(s->p + 2, s->e, &lo) == -1 || lo < 0xdc00 || lo > 0xdfff)
		return fail(s, "invalid Unicode escape");
	s->p += 6;
	return 0;
}

static int
string(struct scan *s)
{
	s->p++;				/* the opening quote */
	for (;;) {
		while (s->p < s->e && strclass[(unsigned char)*s->p] == 0)
			s->p++;
		if (s->p >= s->e)
			return fail(s, "unterminated string");
		switch (strclass[(unsigned char)*s->p]) {
		case 1:
			s->p++;
			return 0;
		case 2:
			if (escape(s) == -1)
				return -1;
			break;
		case 3:
			return fail(s, "control character in string");
		default:
			if (utf8_seq(s) == -1)
				return -1;
		}
	}
}

static int
digits(struct scan *s)
{
	const char *q = s->p;

	while (s->p < s->e && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > q ? 0 : fail(s, "invalid number");
}

static int
number(struct scan *s)
{
	if (*s->p == '-')
		s->p++;
	if (s->p < s->e && *s->p == '0')
		s->p++;
	else if (digits(s) == -1)
		return -1;
	if (s->p < s->e && *s->p == '.') {
		s->p++;
		if (digits(s) == -1)
			return -1;
	}
	if (s->p < s->e && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->e && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (digits(s) == -1)
			return -1;
	}
	return 0;
}

static int
literal(struct scan *s, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(s->e - s->p) < n || memcmp(s->p, word, n) != 0)
		return fail(s, "invalid literal");
	s->p += n;
	return 0;
}

static int value(struct scan *, int *);
static int object(struct scan *, struct jscan_member *, size_t);

/* Past the opening [ or { of an array or object that `close' ends: 1
 * when it is empty (the close passed too), else 0. */
static int
open_items(struct scan *s, char close)
{
	s->p++;
	skip_ws(s);
	if (s->p < s->e && *s->p == close) {
		s->p++;
		return 1;
	}
	return 0;
}

/*
 * After an item of an array or object that `close' ends: 1 at the
 * close, 0 at a comma (both passed), -1 with the error at anything
 * else.
 */
static int
next_item(struct scan *s, char close)
{
	int arr = close == ']';

	skip_ws(s);
	if (s->p >= s->e)
		return fail(s, arr ? "unterminated array" :
		    "unterminated object");
	if (*s->p == close) {
		s->p++;
		return 1;
	}
	if (*s->p++ != ',')
		return s->p--, fail(s, arr ? "expected , or ]" :
		    "expected , or }");
	skip_ws(s);
	return 0;
}

static int
array(struct scan *s)
{
	int type, r;

	if (open_items(s, ']'))
		return 0;
	for (;;) {
		if (value(s, &type) == -1)
			return -1;
		if ((r = next_item(s, ']')) != 0)
			return r == 1 ? 0 : -1;
	}
}

static int
value(struct scan *s, int *type)
{
	int r;

	if (s->p >= s->e)
		return fail(s, "value expected");
	switch (*s->p) {
	case '"':
		*type = JSCAN_STRING;
		return string(s);
	case '{':
	case '[':
		if (++s->depth > JSCAN_DEPTH)
			return fail(s, "nested too deep");
		*type = *s->p == '{' ? JSCAN_OBJECT : JSCAN_ARRAY;
		r = *s->p == '{' ? object(s, NULL, 0) : array(s);
		s->depth--;
		return r;
	case 't':
		*type = JSCAN_TRUE;
		return literal(s, "true");
	case 'f':
		*type = JSCAN_FALSE;
		return literal(s, "false");
	case 'n':
		*type = JSCAN_NULL;
		return literal(s, "null");
	default:
		if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) {
			*type = JSCAN_NUMBER;
			return number(s);
		}
		return fail(s, "unexpected character");
	}
}

/* Which wanted member the key token [k, e) names, or NULL. */
static struct jscan_member *
wanted(const char *k, const char *e, struct jscan_member *m, size_t nm)
{
	char key[64];
	size_t i, n;

	if (nm == 0)
		return NULL;
	if (memchr(k, '\\', (size_t)(e - k)) == NULL) {
		n = (size_t)(e - k) - 2;
		for (i = 0; i < nm; i++)
			if (strlen(m[i].key) == n &&
			    memcmp(m[i].key, k + 1, n) == 0)
				return &m[i];
		return NULL;
	}
	if (jscan_string(k, (size_t)(e - k), key, sizeof key) == -1)
		return NULL;
	for (i = 0; i < nm; i++)
		if (strcmp(m[i].key, key) == 0)
			return &m[i];
	return NULL;
}

static int
member(struct scan *s, struct jscan_member *m, size_t nm)
{
	const char *k = s->p, *v;
	struct jscan_member *w;
	int type;

	if (s->p >= s->e || *s->p != '"')
		return fail(s, "expected a key");
	if (string(s) == -1)
		return -1;
	w = wanted(k, s->p, m, nm);
	skip_ws(s);
	if (s->p >= s->e || *s->p != ':')
		return fail(s, "expected :");
	s->p++;
	skip_ws(s);
	v = s->p;
	if (value(s, &type) == -1)
		return -1;
	if (w == NULL)
		return 0;
	if (w->val != NULL) {
		errf(s->err, "duplicate key \"%s\"", w->key);
		return -1;
	}
	w->val = v;
	w->len = (size_t)(s->p - v);
	w->type = type;
	return 0;
}

static int
object(struct scan *s, struct jscan_member *m, size_t nm)
{
	int r;

	if (open_items(s, '}'))
		return 0;
	for (;;) {
		if (member(s, m, nm) == -1)
			return -1;
		if ((r = next_item(s, '}')) != 0)
			return r == 1 ? 0 : -1;
	}
}

/*
 * Check that buf[0..n) is one JSON object, with only whitespace around
 * it, and fill in the members m[0..nm) asked for by key (val NULL when
 * absent).  A wanted key given twice is an error.
 */
int
jscan_object(const char *buf, size_t n, struct jscan_member *m, size_t nm,
    char *err)
{
	struct scan s = { buf, buf, buf + n, 1, err };
	size_t i;

	init_classes();
	for (i = 0; i < nm; i++) {
		m[i].val = NULL;
		m[i].len = 0;
		m[i].type = JSCAN_NONE;
	}
	skip_ws(&s);
	if (s.p >= s.e)
		return fail(&s, "empty");
	if (*s.p != '{') {
		int type;
		if (value(&s, &type) == -1)
			return -1;
		errf(err, "not a JSON object");
		return -1;
	}
	if (object(&s, m, nm) == -1)
		return -1;
	skip_ws(&s);
	if (s.p != s.e)
		return fail(&s, "text after the object");
	return 0;
}

static size_t
put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Decode a string token (quotes included) that jscan_object has
 * checked into out, NUL-terminated.  -1 when it does not fit or holds
 * a NUL character.
 */
int
jscan_string(const char *tok, size_t n, char *out, size_t outsz)
{
	const char *p = tok + 1, *e = tok + n - 1;
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	size_t o = 0;
	unsigned u, lo;

	if (n < 2 || outsz == 0)
		return -1;
	while (p < e) {
		char buf[4];
		size_t k;

		if (*p != '\\') {
			buf[0] = *p++;
			k = 1;
		} else if (p[1] != 'u') {
			buf[0] = to[strchr(from, p[1]) - from];
			p += 2;
			k = 1;
		} else {
			hex4(p + 2, e, &u);
			p += 6;
			if (u >= 0xd800 && u <= 0xdbff) {
				hex4(p + 2, e, &lo);
				p += 6;
				u = 0x10000 + ((u - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			if (u == 0)
				return -1;
			k = put_utf8(buf, u);
		}
		if (o + k >= outsz)
			return -1;
		memcpy(out + o, buf, k);
		o += k;
	}
	out[o] = '\0';
	return 0;
}
