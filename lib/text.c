/*
 * text.c - text from outside made safe to show: one line of valid
 * UTF-8 in which no control character or escape sequence reaches a
 * terminal.  Every message the library writes (errf) and every message
 * a program prints on standard error goes through text_line.
 */
#include <string.h>

#include "heartint.h"

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
		k = p[i] == '\0' ? 1 : utf8_len(p + i, len - i);
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
