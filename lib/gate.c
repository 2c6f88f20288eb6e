/*
 * gate.c - a chamber's gate program: a free pre-check that says
 * whether a due wake has anything to look at (heart-soul(5), gate).
 *
 * It runs through child.c's runner, as a tool does: argv, no shell, the
 * soul's directory, its own process group killed at gate_timeout, the
 * tools' environment (never the model's key).  Exit 0: wake, its
 * output (GATE_MAXOUT bytes at most) going into the prompt; exit 1:
 * skip; anything else, a signal or the timeout: a tool failure.  It
 * costs no request whatever it says; run.c tells the breaker.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

#define GATE_MAXOUT	(4 * 1024)	/* a gate's output, for the prompt */

/* The agent's scratch directory, made if need be. */
static int
scratch(const char *dir, char *buf, size_t n, char *err)
{
	snprintf(buf, n, "%s/gate", dir);
	if (mkdir(buf, 0700) == -1 && errno != EEXIST) {
		errf(err, "%s: %s", buf, strerror(errno));
		return -1;
	}
	return 0;
}

/* Its output as the prompt shows it: clean, bounded, no secret. */
static char *
shown(const struct tool_out *o)
{
	char *t = tool_text(NULL, o->out, o->len, 0), *more = NULL;

	if (!o->cut)
		return t;
	if (asprintf(&more, "%s\n[heart: the gate's output cut at %d "
	    "bytes]", t, GATE_MAXOUT) == -1)
		abort();
	free(t);
	return more;
}

/* Its first line, for a skip's reason. */
static char *
first_line(const struct tool_out *o)
{
	char line[300], *t = tool_text(NULL, o->out, o->len, 0);
	size_t n = strcspn(t, "\n");

	text_line(line, sizeof line, t, n);
	free(t);
	return xstrdup(line);
}

/*
 * Run chamber c's gate in dir, after the cheap gates and before the
 * breaker and the cap, with the tools' environment and
 *   HEART_LAST_WAKE	the chamber's last admitted wake, epoch seconds
 *			(0: never), and HEART_LAST_WAKE_AT, in UTC ("")
 *   HEART_GATE_DIR	agents/ID/gate/, the agent's scratch directory.
 * 1 to wake (*text: its output, at most GATE_MAXOUT bytes, for the
 * prompt), 0 to skip (*text: its first line), or -1 (err: why, a tool
 * failure); its exit status and time go into res's "gate".
 */
int
gate_run(const struct soul *s, enum chamber c, const struct tool_ctx *ctx,
    const char *dir, time_t last, json_t *res, char **text, char *err)
{
	const json_t *argv = s->ch[c].gate;
	char sd[4200], at[32] = "", *more[4] = { NULL }, **av, **env;
	char sdir[4096], e2[HEART_ERRLEN];
	struct tool_proc p;
	struct tool_out o;
	long long ms = 0;
	size_t i;
	int rc = -1, code = -1;

	*text = NULL;
	if (scratch(dir, sd, sizeof sd, err) == -1)
		goto out;
	if (last > 0)
		clock_utc(last, at, sizeof at);
	if (asprintf(&more[0], "HEART_LAST_WAKE=%lld", (long long)last) ==
	    -1 || asprintf(&more[1], "HEART_LAST_WAKE_AT=%s", at) == -1 ||
	    asprintf(&more[2], "HEART_GATE_DIR=%s", sd) == -1)
		abort();
	env = tool_env(ctx, "gate", more);
	av = xcalloc(json_array_size(argv) + 1, sizeof *av);
	for (i = 0; i < json_array_size(argv); i++)
		av[i] = (char *)json_string_value(json_array_get(argv, i));
	soul_dir(s, sdir, sizeof sdir);
	memset(&p, 0, sizeof p);
	p.argv = av;
	p.dir = sdir;
	p.env = env;
	p.timeout = s->ch[c].gate_timeout;
	p.maxout = GATE_MAXOUT;
	if (tool_exec(&p, &o, e2) == -1)
		errf(err, "%s: gate: %.300s", soul_chamber_name(c), e2);
	else {
		ms = o.ms;
		if (!o.timedout && WIFEXITED(o.status))
			code = WEXITSTATUS(o.status);
		if (code == 0) {
			*text = shown(&o);
			rc = 1;
		} else if (code == 1) {
			*text = first_line(&o);
			rc = 0;
		} else {
			char what[64];
			snprintf(what, sizeof what, "%s: gate",
			    soul_chamber_name(c));
			tool_status(what, &p, &o, err);
		}
	}
	tool_out_free(&o);
	env_free(env);
	free(av);
	for (i = 0; i < 3; i++)
		free(more[i]);
out:
	json_object_set_new(res, "gate", json_pack("{s:o,s:I}", "exit",
	    code >= 0 ? json_integer(code) : json_null(), "ms",
	    (json_int_t)ms));
	return rc;
}
