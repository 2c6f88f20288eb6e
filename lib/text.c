/*
 * text.c - text from outside made safe to show: one line of valid
 * UTF-8 in which no control character or escape sequence reaches a
 * terminal.  Every message the library writes (errf) and every message
 * a program prints on standard error goes through text_line.
 */
#include <string.h>

#include "heart.h"

/* The length of the UTF-8 character at p (n bytes left), or 0 when it
 * is not valid (overlong, a surrogate, past U+10FFFF, cut short). */
static size_t
char_len(const unsigned char *p, size_t n)
{
	size_t len, i;

	len = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 2 :
	    (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 && *p <= 0xf4 ?
	    4 : 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if (len == 3 && ((*p == 0xe0 && p[1] < 0xa0) ||
	    (*p == 0xed && p[1] >= 0xa0)))
		return 0;
	if (len == 4 && ((*p == 0xf0 && p[1] < 0x90) ||
	    (*p == 0xf4 && p[1] >= 0x90)))
		return 0;
	return len;
}

/* A control character: C0, DEL, or C1 (U+0080 to U+009F, which some
 * terminals take as ESC [ and the like). */
static int
control(const unsigned char *p, size_t len)
{
	if (len == 1)
		return *p < 0x20 || *p == 0x7f;
	return len == 2 && *p == 0xc2 && p[1] < 0xa0;
}

/*
 * Copy s[0..len) into dst (of size n) as one line of valid UTF-8: a
 * control character (a tab, a newline, ESC, NUL...) becomes a space, a
 * byte that is not UTF-8 a '?', and a character that does not fit
 * whole is left out.  dst may be s: the copy is never longer.
 * Returns dst.
 */
char *
text_line(char *dst, size_t n, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, k;

	if (n == 0)
		return dst;
	while (i < len) {
		k = char_len(p + i, len - i);
		if (o + (k > 1 && !control(p + i, k) ? k : 1) >= n)
			break;
		if (k == 0)
			dst[o++] = '?';
		else if (control(p + i, k))
			dst[o++] = ' ';
		else {
			memmove(dst + o, p + i, k);
			o += k;
		}
		i += k ? k : 1;
	}
	dst[o] = '\0';
	return dst;
}
