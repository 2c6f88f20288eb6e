/*
 * util.c - small helpers every module uses: checked number parsing,
 * allocation that cannot return NULL (a tool this small has nothing
 * better to do than abort when memory is gone), the order of exit
 * codes, the environment of a child program (a tool, a delivery), a
 * whole small file read at its own size, the one way a JSON line heart
 * prints is written, the one hash and the clocks in milliseconds.  It
 * calls no other file of the library: every other may call it.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heartint.h"

/* Parse a whole decimal integer in [lo, hi]; 0 on success. */
int
num_parse(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/*
 * Why s is not a whole number in [lo, hi], for a message: "too large
 * (at most HI)", "too small (at least LO)" or "not a whole number";
 * "" when it is one.
 */
const char *
num_why(const char *s, long long lo, long long hi, char *buf, size_t n)
{
	const char *d = s != NULL && (*s == '-' || *s == '+') ? s + 1 : s;
	char *end;
	long long v;

	if (d == NULL || *d < '0' || *d > '9' || d[strspn(d,
	    "0123456789")] != '\0') {
		snprintf(buf, n, "not a whole number");
		return buf;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (v > hi || (errno == ERANGE && *s != '-'))
		snprintf(buf, n, "too large (at most %lld)", hi);
	else if (v < lo || errno == ERANGE)
		snprintf(buf, n, "too small (at least %lld)", lo);
	else
		buf[0] = '\0';
	return buf;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if ((p = calloc(n ? n : 1, size ? size : 1)) == NULL)
		abort();
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		abort();
	return p;
}

/*
 * j as one line of compact JSON, to free; NULL only when it cannot be
 * encoded.  A real is written to 15 significant digits, the most a
 * double keeps of any decimal: a decimal of 15 digits or fewer, such
 * as a cost in dollars to the nanodollar under a million (price_json),
 * reads as itself, 0.00212, not jansson's 17 digits of the double,
 * 0.0021199999999999999.  Every result, status and outbox line goes
 * through here.
 */
char *
json_line(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
}

/*
 * The worse of two exit codes, as every EXIT STATUS says: a bad
 * configuration (78) beats an I/O error (74), which beats a store or
 * program out of reach (69), which beats a temporary failure (75);
 * any other failure beats success only.
 */
int
hx_worse(int a, int b)
{
	static const int order[] = { HX_OK, HX_TEMPFAIL, HX_UNAVAILABLE,
	    HX_IOERR, HX_CONFIG };
	int i, ra = a != HX_OK, rb = b != HX_OK;

	for (i = 1; i < 5; i++) {
		if (order[i] == a)
			ra = i + 1;
		if (order[i] == b)
			rb = i + 1;
	}
	return rb > ra ? b : a;
}

/* Is entry ("NAME=value") one of set's names? */
static int
env_in(const char *entry, char *const *set)
{
	size_t n;

	for (; *set != NULL; set++) {
		n = strcspn(*set, "=");
		if (strncmp(entry, *set, n) == 0 && entry[n] == '=')
			return 1;
	}
	return 0;
}

/*
 * A child's environment: the entries of environ that keep(entry, arg)
 * accepts (all when keep is NULL), without the names of set, then set
 * ("NAME=value" each, NULL-ended).  Free it with env_free.
 */
char **
env_make(int (*keep)(const char *, const void *), const void *arg,
    char *const *set)
{
	extern char **environ;
	size_t n = 0, k = 0, o = 0, i;
	char **env;

	while (environ[n] != NULL)
		n++;
	while (set[k] != NULL)
		k++;
	env = xcalloc(n + k + 1, sizeof *env);
	for (i = 0; i < n; i++)
		if (strchr(environ[i], '=') != NULL &&
		    !env_in(environ[i], set) &&
		    (keep == NULL || keep(environ[i], arg)))
			env[o++] = xstrdup(environ[i]);
	for (i = 0; i < k; i++)
		env[o++] = xstrdup(set[i]);
	return env;
}

void
env_free(char **env)
{
	size_t i;

	if (env == NULL)
		return;
	for (i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/*
 * Open path as open(2) does (flags, mode), O_CLOEXEC added, without
 * waiting for a FIFO's writer (O_NONBLOCK, which a regular file does
 * not heed), and keep it only if it is a regular file, its stat into
 * *st: the fd; -2 for a FIFO, a directory or a device (closed); -1
 * with errno.
 */
int
file_open_regular(const char *path, int flags, mode_t mode, struct stat *st)
{
	int fd, e;

	if ((fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, mode)) == -1)
		return -1;
	if (fstat(fd, st) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (S_ISREG(st->st_mode))
		return fd;
	close(fd);
	return -2;
}

/*
 * The whole of file path, NUL ended (len bytes before the NUL), in a
 * buffer of its size: 0, or -1 with errno (EFBIG: more than max
 * bytes).  The size is the file's own, never a worst case: a soul is
 * a few hundred bytes, and a round reads hundreds of them.  A FIFO
 * that nobody writes to reads as empty: the open does not wait for a
 * writer (O_NONBLOCK, for the open only).
 */
int
file_read(const char *path, size_t max, char **out, size_t *leno)
{
	struct stat st;
	size_t len = 0, cap;
	ssize_t r;
	char *b;
	int fd, e;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1 ||
	    fcntl(fd, F_SETFL, 0) == -1) {
		e = errno;
		if (fd != -1)
			close(fd);
		errno = e;
		return -1;
	}
	cap = fstat(fd, &st) == 0 && st.st_size > 0 && (size_t)st.st_size <
	    max ? (size_t)st.st_size + 2 : 4096;
	if ((b = malloc(cap)) == NULL)
		abort();
	for (;;) {
		if (len + 1 == cap) {
			cap = cap > max ? cap + 1 : 2 * cap;
			if ((b = realloc(b, cap)) == NULL)
				abort();
		}
		if ((r = read(fd, b + len, cap - len - 1)) == -1 &&
		    errno == EINTR)
			continue;
		if (r <= 0 || (len += (size_t)r) > max)
			break;
	}
	e = r == -1 ? errno : len > max ? EFBIG : 0;
	close(fd);
	if (e != 0) {
		free(b);
		errno = e;
		return -1;
	}
	b[len] = '\0';
	*out = b;
	*leno = len;
	return 0;
}

/* FNV-1a, 64 bits: h (FNV_BASIS to start) with one byte more. */
uint64_t
fnv1a(uint64_t h, unsigned char c)
{
	return (h ^ c) * 0x100000001b3ULL;
}

/* h with the bytes of s more. */
uint64_t
fnv1a_str(uint64_t h, const char *s)
{
	while (*s != '\0')
		h = fnv1a(h, (unsigned char)*s++);
	return h;
}

static long long
clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds of the monotonic clock: durations, never dates. */
long long
mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* Milliseconds of the wall clock (CLOCK_REALTIME): a date to the
 * millisecond; time(2) may lag it by a tick. */
long long
wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}
