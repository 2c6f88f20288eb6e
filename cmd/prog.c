/*
 * prog.c - what every program of heart says the same way (prog.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heart.h"
#include "prog.h"

void
usage(void)
{
	fputs(usage_text, stderr);
	exit(HX_USAGE);
}

void
warn(const char *who, const char *msg)
{
	char line[2 * HEART_ERRLEN + 300];

	text_line(line, sizeof line, msg, strlen(msg));
	fprintf(stderr, "%s: %s%s%s\n", progname, who ? who : "",
	    who ? ": " : "", line);
}

void
die(int code, const char *msg)
{
	warn(NULL, msg);
	exit(code);
}
