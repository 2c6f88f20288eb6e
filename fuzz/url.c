/*
 * url.c - fuzz target: broker URLs (mqtt_url_parse, and through it
 * url_hostport, which the store's URL shares) as --broker gives them.
 * A URL that parses names a host of allowed characters and a port
 * from 1 to 65535, and its host and port written back as a URL parse
 * to the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartpulse.h"	/* mqtt_url_parse is the library's own */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct mqtt_url u, v;
	char *s, err[HEART_ERRLEN], back[300];

	s = malloc(n + 1);
	memcpy(s, data, n);
	s[n] = '\0';
	if (mqtt_url_parse(s, &u, err) == 0) {
		FZ_ASSERT(u.host[0] != '\0');
		FZ_ASSERT(u.port >= 1 && u.port <= 65535);
		FZ_ASSERT(strchr(u.host, '/') == NULL &&
		    strchr(u.host, '@') == NULL);
		snprintf(back, sizeof back, "%s://%s%s%s:%d", u.tls ? "mqtts" :
		    "mqtt", strchr(u.host, ':') ? "[" : "", u.host,
		    strchr(u.host, ':') ? "]" : "", u.port);
		FZ_ASSERT(mqtt_url_parse(back, &v, err) == 0);
		FZ_ASSERT(v.tls == u.tls && v.port == u.port &&
		    strcmp(v.host, u.host) == 0);
	} else
		FZ_ASSERT(err[0] != '\0');
	free(s);
	return 0;
}
