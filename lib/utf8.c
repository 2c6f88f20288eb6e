/*
 * utf8.c - text from outside, as UTF-8: the one check of a character
 * (utf8_len), bytes decoded lossily into valid UTF-8 (utf8_clean), and
 * text made safe to show: one line of valid UTF-8 in which no control
 * character or escape sequence reaches a terminal (text_line).  Every
 * message the library writes (errf) and every message a program prints
 * on standard error goes through text_line.
 */
#include <string.h>

#include "heartint.h"

/* The length of the valid UTF-8 character at p, n bytes left; 0 for
 * an invalid one, and for NUL. */
size_t
utf8_len(const unsigned char *p, size_t n)
{
	size_t len, k;
	unsigned cp;

	if (p[0] < 0x80)
		return p[0] != 0;
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && (cp < 0x800 ||
	    (cp >= 0xd800 && cp < 0xe000))) || (len == 4 &&
	    (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/*
 * Bytes as a JSON-safe string, decoded lossily: invalid UTF-8 (a
 * binary tool, a reply cut in the middle of a character) and NUL
 * become U+FFFD.  The copy, to free, of *outlen bytes.
 */
char *
utf8_clean(const char *s, size_t len, size_t *outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	char *o = xcalloc(1, len * 3 + 1);
	size_t i = 0, n = 0, c;

	while (i < len) {
		if ((c = utf8_len(p + i, len - i)) == 0) {
			memcpy(o + n, "\xef\xbf\xbd", 3);
			n += 3;
			i++;
		} else {
			memcpy(o + n, s + i, c);
			n += c;
			i += c;
		}
	}
	*outlen = n;
	return o;
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
