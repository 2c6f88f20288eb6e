/*
 * pubwarn.c - the publisher's warnings, queued as its agents are
 * loaded and watched (pubagents.c, pubstate.c) and said by publisher.c
 * between its own messages, in the order they came.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "heartint.h"
#include "heartpulse.h"

/* Queue a warning, to be said in order (pubagents_warning). */
void
pubagents_warnf(struct pubagents *f, const char *fmt, ...)
{
	char buf[HEART_ERRLEN + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	f->warn = realloc(f->warn, (f->nwarn + 1) * sizeof *f->warn);
	if (f->warn == NULL)
		abort();
	f->warn[f->nwarn++] = xstrdup(buf);
}

/* The next message for stderr, or NULL; the caller frees it. */
char *
pubagents_warning(struct pubagents *f)
{
	char *m;

	if (f->warnhead == f->nwarn) {
		free(f->warn);
		f->warn = NULL;
		f->nwarn = f->warnhead = 0;
		return NULL;
	}
	m = f->warn[f->warnhead];
	f->warn[f->warnhead++] = NULL;
	return m;
}
