/*
 * url.c - the authority of a URL, HOST[:PORT], as the broker's
 * (mqtt://) and the store's (redis://) URLs give it: HOST a name, an
 * IPv4 address or an [IPv6] address (with a %zone), PORT 1 to 65535.
 * The callers check the scheme and what follows, and word the errors
 * for their own URL.
 */
#include <string.h>

#include "heartint.h"

/* what a host may be made of (inside brackets too: v6 and %zone) */
#define HOSTCHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" \
	"0123456789.-_:%"

/*
 * HOST[:PORT] at the start of s, ending at a '/' or the end: the host
 * into host (hn bytes), the port into *port (left as it is when none
 * is given) and where the rest begins into *rest.  0; -1 when it is
 * not of that shape; -2 when the port is no port, with why ("port N:
 * too large ...") in why.
 */
int
url_hostport(const char *s, char *host, size_t hn, long long *port,
    const char **rest, char *why, size_t wn)
{
	const char *h, *e, *p;
	char num[24], nwhy[64];
	long long v;

	if (*s == '[') {
		h = s + 1;
		if ((e = strchr(h, ']')) == NULL)
			return -1;
		p = e + 1;
	} else {
		h = s;
		e = s + strcspn(s, ":/");
		p = e;
	}
	if (e == h || (size_t)(e - h) >= hn ||
	    strspn(h, HOSTCHARS) < (size_t)(e - h))
		return -1;
	memcpy(host, h, (size_t)(e - h));
	host[e - h] = '\0';
	if (*p == ':') {
		e = p + 1 + strcspn(p + 1, "/");
		if (e - p - 1 == 0 || (size_t)(e - p - 1) >= sizeof num)
			return -1;
		memcpy(num, p + 1, (size_t)(e - p - 1));
		num[e - p - 1] = '\0';
		if (num_parse(num, 1, 65535, &v) == -1) {
			snprintf(why, wn, "port %s: %s", num, num_why(num, 1,
			    65535, nwhy, sizeof nwhy));
			return -2;
		}
		*port = v;
		p = e;
	}
	if (*p != '\0' && *p != '/')
		return -1;
	*rest = p;
	return 0;
}
