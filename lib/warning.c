/*
 * warning.c - the library's one channel for warnings to the program:
 * what it has to tell while it goes on (a state document read from
 * the version before it, a soul of a round that warns or did not
 * load, a broker's outage) goes to warning(who, text), and from there
 * to the sink the program registered, once, with warning_sink.  The
 * library never prints; with no sink a warning is dropped.  A wake's
 * own warnings are its result's (outcome.c), and a soul's are kept
 * with it (soul.c) for its loader to pass on.
 */
#include <stdarg.h>
#include <stdio.h>

#include "heartint.h"

static void	(*sink)(void *, const char *, const char *);
static void	*sink_arg;

/* Where the warnings go from now on: fn(arg, who or NULL, text). */
void
warning_sink(void (*fn)(void *, const char *, const char *), void *arg)
{
	sink = fn;
	sink_arg = arg;
}

/* A warning from who (NULL: none) to the program. */
void
warning(const char *who, const char *text)
{
	if (sink != NULL)
		sink(sink_arg, who, text);
}

/* The same, with text from a format. */
void
warningf(const char *who, const char *fmt, ...)
{
	char m[2 * HEART_ERRLEN + 4400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	warning(who, m);
}
