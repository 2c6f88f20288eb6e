/*
 * fuzz.h - what the libFuzzer targets in fuzz/ share.
 *
 * A target whose parser reads a file gets a private state directory
 * (HEART_STATE_DIR, on tmpfs when there is one, removed at exit) and
 * writes each input there with the library's own atomic write.  A
 * target checks a property with FZ_ASSERT: a failure aborts, and
 * libFuzzer keeps the input that made it.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "heart.h"

#define FZ_AGENT	"fz"

#define FZ_ASSERT(c) do {						\
	if (!(c))							\
		fz_fail(__FILE__, __LINE__, #c);			\
} while (0)

/* the state directory, made at the first call */
const char *fz_dir(void);
/* the agent FZ_AGENT's directory in it */
const char *fz_agent_dir(void);
/* replace dir/name with the input */
void	 fz_put(const char *, const char *, const uint8_t *, size_t);
void	 fz_fail(const char *, int, const char *)
	    __attribute__((noreturn));

#endif
