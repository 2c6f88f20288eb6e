/*
 * fuzz.c - the helpers of fuzz.h: one private state directory per
 * fuzzing process, and the input written into it.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "heartint.h"

static char dir[256], adir[4096];

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(path);
}

static void
rm_dir(void)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *
fz_dir(void)
{
	char err[HEART_ERRLEN];
	const char *t;

	if (dir[0] != '\0')
		return dir;
	if (access("/dev/shm", W_OK) == 0)
		t = "/dev/shm";
	else if ((t = getenv("TMPDIR")) == NULL || *t == '\0')
		t = "/tmp";
	snprintf(dir, sizeof dir, "%s/heart-fuzz.XXXXXX", t);
	if (mkdtemp(dir) == NULL) {
		perror(dir);
		abort();
	}
	atexit(rm_dir);
	setenv("HEART_STATE_DIR", dir, 1);
	unsetenv("HEART_STORE");
	if (state_agent_dir(FZ_AGENT, 1, adir, sizeof adir, err) == -1) {
		fprintf(stderr, "fuzz: %s\n", err);
		abort();
	}
	return dir;
}

const char *
fz_agent_dir(void)
{
	fz_dir();
	return adir;
}

void
fz_put(const char *d, const char *name, const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN];

	if (state_write(d, name, (const char *)data, n, err) == -1) {
		fprintf(stderr, "fuzz: %s\n", err);
		abort();
	}
}

void
fz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: property broken: %s\n", file, line, what);
	abort();
}
