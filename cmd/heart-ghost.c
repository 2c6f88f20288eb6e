/*
 * heart-ghost - ghost mode and the keeper of the agents' histories: the
 * far end of `heart-wake ... | heart-ghost'.  It reads wake results, one
 * JSON object per line; an "ok" result is committed to its agent's
 * history and then delivered (printed, or handed to --exec), once per
 * wake id; anything else rolls back without a trace.  An "error" was
 * reported by heart-wake: it is not repeated, but its exit status
 * becomes ours.  Each answer goes out through its agent's outbox, in
 * wake order, and waits there while its delivery fails (--flush and
 * --outbox); only a line of a wake that ran, or --flush, takes an
 * outbox, and an answer is delivered only with the delivery options of
 * the run that took it.  The rules live in lib/ghost.c, lib/outbox.c
 * and lib/hist.c; this file reads lines and wires options to them.
 * Invariant: nothing is delivered that was not committed first.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heart.h"
#include "prog.h"

#define HEART_USERMAX	(1024 * 1024)	/* --user's text (heart(7), LIMITS) */

const char progname[] = "heart-ghost";
const char usage_text[] =
    "usage: heart-ghost [--text] [--alert-only] [--dedupe WINDOW]"
    " [--keep N]\n"
    "           [--retry-for TIME] [--exec-timeout TIME]"
    " [--flush [--now]]\n"
    "           [FILE...] [--exec CMD [ARG...]]\n"
    "       heart-ghost --outbox [AGENT...]\n"
    "       heart-ghost [--keep N] --user AGENT [--soul FILE] TEXT|-\n"
    "       heart-ghost --repair AGENT\n";

static int tflag, flushflag;
static struct ghost_opts gopts;
static char **execargv;
static long long exec_timeout = 60;	/* s: --exec-timeout */

/* What went wrong on the way, for the exit status: buried, an answer
 * given up; wakerc: the worst exit status heart-wake gave for the
 * wakes read; waiting: the answers left in the outboxes --flush took. */
static int ioerr, baddata, undelivered, buried, wakerc;
static long long waiting;

/* The agents whose outbox a line that rolls back looked at, and those
 * told of answers left to other options, once per run each: a replayed
 * log of a million lines costs and says no more for it. */
static void *looked, *told;

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Is agent new to the set? */
static int
first_in(void **set, const char *agent)
{
	char *k = xstrdup(agent), **p = tsearch(k, set, cmp_str);

	if (p == NULL)
		abort();
	if (*p == k)
		return 1;
	free(k);
	return 0;
}

/* Hand text to --exec or print it; 1 when delivered, else why says
 * what went wrong. */
static int
deliver(const struct ghost_result *r, const char *text, size_t len,
    char *why)
{
	if (execargv != NULL)
		return deliver_exec(execargv, text, len, r, exec_timeout,
		    why) == 0;
	if (fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0)
		return 1;
	snprintf(why, HEART_ERRLEN, "standard output: %s", strerror(errno));
	clearerr(stdout);
	return 0;
}

/* The deliverable of r: its answer with --text, else its line. */
static char *
deliverable(const struct ghost_result *r, size_t *leno)
{
	const char *s = tflag ? r->response : r->line;
	size_t n = tflag ? strlen(r->response) : r->len;
	char *t = malloc(n + 2);

	if (t == NULL)
		abort();
	memcpy(t, s, n);
	if (n == 0 || t[n - 1] != '\n')
		t[n++] = '\n';
	*leno = n;
	return t;
}

/* Deliver r, and say what became of it when it failed. */
static void
send_one(struct ghost_txn *t, const struct ghost_result *r)
{
	char err[HEART_ERRLEN], why[HEART_ERRLEN], m[3 * HEART_ERRLEN];
	size_t n;
	char *text = deliverable(r, &n);
	int ok = deliver(r, text, n, why);

	free(text);
	switch (ghost_done(t, ok, why, err)) {
	case GHOST_SENT:
		return;
	case GHOST_RETRY:
		snprintf(m, sizeof m, "%s: delivery of wake %s failed: %s; "
		    "it waits in the outbox, next try from %s", r->agent,
		    r->wake_id, why, err);
		break;
	case GHOST_DEAD:
		snprintf(m, sizeof m, "%s: delivery of wake %s failed: %s; "
		    "given up, a dead letter now: %s", r->agent, r->wake_id,
		    why, err);
		buried = 1;
		break;
	default:
		snprintf(m, sizeof m, "%s: wake %s: %s", r->agent,
		    r->wake_id, err);
		ioerr = 1;
	}
	say(NULL, m);
	undelivered = 1;
}

/* Say, once a run per agent, that answers were left to the runs that
 * took them. */
static void
tell_others(const char *agent, size_t n, const char *first)
{
	char m[HEART_ERRLEN];

	if (n == 0 || !first_in(&told, agent))
		return;
	if (n == 1)
		snprintf(m, sizeof m, "%s: wake %s waits for the heart-ghost "
		    "that took it, with other delivery options (--exec, "
		    "--text, --alert-only, --dedupe) than this run's; left to "
		    "it (heart-ghost --outbox)", agent, first);
	else
		snprintf(m, sizeof m, "%s: wake %s and %zu more wait for the "
		    "heart-ghost that took them, with other delivery options "
		    "(--exec, --text, --alert-only, --dedupe) than this "
		    "run's; left to it (heart-ghost --outbox)", agent, first,
		    n - 1);
	say(NULL, m);
}

/*
 * Deliver what is due in the agent's outbox, in wake order.  given:
 * the wake of the line read, which is reported when it must wait.
 * The number of answers left waiting.
 */
static int
drain(struct ghost_txn *t, const char *agent, const char *given)
{
	char err[HEART_ERRLEN], m[HEART_ERRLEN + 200];
	const struct ghost_result *r;
	const char *first;
	int rc, waits, left;
	size_t n;

	while ((rc = ghost_next(t, &r, err)) != 0) {
		if (rc == GHOST_DEAD) {
			snprintf(m, sizeof m, "%s: %s", agent, err);
			say(NULL, m);
			buried = undelivered = 1;
			continue;
		}
		if (*err != '\0') {
			say(NULL, err);
			ioerr = 1;
		}
		if (rc == 1)
			send_one(t, r);
	}
	n = ghost_left(t, &first, &waits);
	tell_others(agent, n, first);
	if ((left = ghost_end(t, err)) == -1) {
		say(NULL, err);
		ioerr = 1;
		left = 1;
	}
	if (waits) {
		snprintf(m, sizeof m, "%s: wake %s waits in the outbox behind "
		    "an earlier answer (heart-ghost --outbox)", agent, given);
		say(NULL, m);
		undelivered = 1;
	}
	return left;
}

static void
commit(const struct ghost_result *r)
{
	char err[HEART_ERRLEN], m[HEART_ERRLEN + 300];
	struct ghost_txn *t;
	int rc;

	if ((rc = ghost_begin(r, &gopts, time(NULL), &t, err)) == -1) {
		snprintf(m, sizeof m, "%s: wake %s not kept, not delivered: %s",
		    r->agent, r->wake_id, err);
		say(NULL, m);
		ioerr = 1;
		return;
	}
	if (rc == 1) {
		say(NULL, err);
		ioerr = 1;
	}
	drain(t, r->agent, r->wake_id);
}

/* The agent's outbox alone, unless another process has it. */
static void
flush_agent(const char *agent)
{
	char err[HEART_ERRLEN];
	struct ghost_txn *t;
	int rc;

	if ((rc = ghost_open(agent, &gopts, time(NULL), &t, err)) == -1) {
		say(NULL, err);
		ioerr = 1;
	} else if (rc == 0)
		waiting += drain(t, agent, NULL);
}

static void
one_line(const char *line, size_t len, const char *name, unsigned long no)
{
	char err[HEART_ERRLEN], m[HEART_ERRLEN + 300];
	struct ghost_result r;
	size_t i;

	for (i = 0; i < len && strchr(" \t\r", line[i]) != NULL; i++)
		;
	if (i == len)
		return;			/* a blank line */
	if (ghost_parse(line, len, &r, err) == -1) {
		snprintf(m, sizeof m, "%s:%lu: %s", name, no, err);
		say(NULL, m);
		baddata = 1;
		return;
	}
	if (r.kind == GHOST_COMMIT)
		commit(&r);
	else if (r.ran && r.agent[0] != '\0' && first_in(&looked, r.agent))
		flush_agent(r.agent);	/* ghost_open: if an answer waits */
	wakerc = hx_worse(wakerc, r.exit);
	ghost_result_free(&r);
}

static void
too_long(const char *name, unsigned long no)
{
	char m[HEART_ERRLEN + 100];

	snprintf(m, sizeof m, "%s:%lu: line longer than %d bytes", name, no,
	    GHOST_LINEMAX);
	say(NULL, m);
	baddata = 1;
}

/*
 * Every line of fd.  Lines are handled in place in the read buffer; a
 * line longer than GHOST_LINEMAX is reported and skipped unread.
 */
static void
each_line(int fd, const char *name)
{
	size_t cap = 1 << 18, beg = 0, end = 0, scan = 0;
	char *buf = malloc(cap), *nl;
	unsigned long no = 0;
	int eof = 0, skipping = 0;
	ssize_t r;

	if (buf == NULL)
		abort();
	for (;;) {
		while ((nl = memchr(buf + scan, '\n', end - scan)) != NULL) {
			no++;
			if (skipping)
				too_long(name, no);
			else
				one_line(buf + beg, (size_t)(nl - buf) - beg,
				    name, no);
			skipping = 0;
			beg = scan = (size_t)(nl - buf) + 1;
		}
		scan = end;
		if (eof) {
			if (skipping)
				too_long(name, ++no);
			else if (beg < end)
				one_line(buf + beg, end - beg, name, ++no);
			break;
		}
		if (beg > 0) {
			memmove(buf, buf + beg, end - beg);
			end -= beg;
			scan -= beg;
			beg = 0;
		}
		if (end == cap && skipping)
			end = scan = 0;
		else if (end == cap && cap > GHOST_LINEMAX) {
			skipping = 1;
			end = scan = 0;
		} else if (end == cap) {
			cap = cap * 2 > GHOST_LINEMAX + 1 ? GHOST_LINEMAX + 1 :
			    cap * 2;
			if ((buf = realloc(buf, cap)) == NULL)
				abort();
		}
		if ((r = read(fd, buf + end, cap - end)) == -1) {
			if (errno == EINTR)
				continue;
			char m[HEART_ERRLEN];
			snprintf(m, sizeof m, "%s: read: %s", name,
			    strerror(errno));
			say(NULL, m);
			ioerr = 1;
			break;
		}
		if (r == 0)
			eof = 1;
		end += (size_t)r;
	}
	free(buf);
}

static int status(void);

static int
read_inputs(int argc, char **argv)
{
	char m[HEART_ERRLEN];
	int i, fd;

	if (argc == 0)
		each_line(STDIN_FILENO, "<stdin>");
	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-") == 0) {
			each_line(STDIN_FILENO, "<stdin>");
			continue;
		}
		if ((fd = open(argv[i], O_RDONLY | O_CLOEXEC)) == -1) {
			snprintf(m, sizeof m, "%s: %s", argv[i],
			    strerror(errno));
			say(NULL, m);
			ioerr = 1;
			continue;
		}
		each_line(fd, argv[i]);
		close(fd);
	}
	tdestroy(looked, free);
	tdestroy(told, free);
	return status();
}

/* --flush: every agent's outbox. */
static int
flush_all(void)
{
	char err[HEART_ERRLEN], **ids;
	size_t n, i;

	if (state_agents(&ids, &n, err) == -1)
		die(HX_IOERR, err);
	for (i = 0; i < n; i++)
		flush_agent(ids[i]);
	state_free_list(ids, n);
	tdestroy(told, free);
	return status();
}

static void
outbox_row(json_t *o, int tty)
{
	const char *when = json_string_value(json_object_get(o, "dead"));
	const char *err = json_string_value(json_object_get(o, "error"));
	char *line, e[HEART_ERRLEN];

	if (!tty) {
		line = json_dumps(o, JSON_COMPACT);
		puts(line);
		free(line);
		return;
	}
	if (when == NULL)
		when = json_string_value(json_object_get(o, "next"));
	text_line(e, sizeof e, err ? err : "-", strlen(err ? err : "-"));
	printf("%-16s %-28s %-7s %5lld %-20s %s\n",
	    json_string_value(json_object_get(o, "agent")),
	    json_string_value(json_object_get(o, "wake_id")),
	    json_string_value(json_object_get(o, "state")),
	    json_integer_value(json_object_get(o, "tries")),
	    when ? when : "-", e);
}

/*
 * --outbox: the answers waiting and the dead letters.  A misspelt
 * agent is said, exit 64, the others shown, as heart-cap status does:
 * an empty listing must mean that nothing waits.
 */
static int
cmd_outbox(int argc, char **argv)
{
	char err[HEART_ERRLEN];
	struct soulset none = { NULL, 0 };
	json_t *arr = json_array(), *o;
	int i, r, rc = HX_OK, tty = isatty(STDOUT_FILENO);
	size_t k;

	for (i = 0; i < argc; i++)
		if (id_check(argv[i], err) == -1)
			die(HX_USAGE, err);
	if (argc == 0 && outbox_list(NULL, arr, err) == -1)
		die(HX_IOERR, err);
	for (i = 0; i < argc; i++)
		if ((r = prog_unknown(&none, argv[i])) != 0)
			rc = r;
		else if (outbox_list(argv[i], arr, err) == -1)
			die(HX_IOERR, err);
	if (tty && json_array_size(arr) > 0)
		printf("%-16s %-28s %-7s %5s %-20s %s\n", "AGENT", "WAKE_ID",
		    "STATE", "TRIES", "NEXT/DEAD", "ERROR");
	json_array_foreach(arr, k, o)
		outbox_row(o, tty);
	json_decref(arr);
	return rc;
}

/* The exit status; --flush: 69 for an answer given up, else 75 while
 * answers wait. */
static int
status(void)
{
	if (ioerr)
		return HX_IOERR;
	if (baddata)
		return HX_DATA;
	if (flushflag)
		return buried ? HX_UNAVAILABLE : waiting > 0 ? HX_TEMPFAIL :
		    HX_OK;
	if (undelivered)
		return HX_UNAVAILABLE;
	return wakerc;
}

static void
too_big(void)
{
	char m[200];

	snprintf(m, sizeof m, "<stdin>: the message is longer than %d bytes "
	    "(1 MiB), the most a user message may be; see LIMITS in "
	    "heart(7)", HEART_USERMAX);
	die(HX_DATA, m);
}

/* The user's message: TEXT, or all of stdin for "-" (trailing newlines
 * dropped); at most HEART_USERMAX bytes. */
static char *
user_text(const char *arg)
{
	size_t len = 0, cap = 4096;
	char *t;
	ssize_t r;

	if (strcmp(arg, "-") != 0)	/* the kernel keeps it under 128 KiB */
		return xstrdup(arg);
	if ((t = malloc(cap)) == NULL)
		abort();
	for (;;) {
		if (len > HEART_USERMAX + 4096)	/* room for newlines */
			too_big();
		if (len + 1 == cap && (t = realloc(t, cap *= 2)) == NULL)
			abort();
		if ((r = read(STDIN_FILENO, t + len, cap - len - 1)) == -1) {
			if (errno == EINTR)
				continue;
			die(HX_IOERR, "<stdin>: cannot read the message");
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	while (len > 0 && t[len - 1] == '\n')
		len--;
	if (len > HEART_USERMAX)
		too_big();
	t[len] = '\0';
	return t;
}

/*
 * --user: the user's message into the agent's history.  Only of an
 * agent heart knows here, where its history is, or whose soul is given
 * (before its first wake): a misspelt name must not start a new agent.
 */
static int
cmd_user(char *agent, const char *soul, int argc, char **argv)
{
	char err[HEART_ERRLEN];
	struct soulset set = { NULL, 0 };
	char *text;
	int r;

	if (argc != 1 || tflag || gopts.alert_only || gopts.dedupe > 0 ||
	    execargv != NULL || flushflag || gopts.retry_for > 0)
		usage();
	if (soul != NULL)
		prog_add_soul(&set, soul);
	prog_one_agent(&set, 1, &agent);
	r = prog_unknown(&set, agent);
	soulset_free(&set);
	if (r != 0)
		return r;
	text = user_text(argv[0]);
	if ((r = hist_user(agent, text, time(NULL), gopts.keep, err)) < 0)
		die(r == -2 ? HX_DATA : HX_IOERR, err);
	free(text);
	return HX_OK;
}

/*
 * --repair: set aside what is not a whole wake in the agent's history
 * (hist_repair), and say what went where.
 */
static int
cmd_repair(char *agent)
{
	char err[HEART_ERRLEN], where[4200];
	struct soulset none = { NULL, 0 };
	json_t *runs, *r;
	size_t i;
	int rc;

	prog_one_agent(&none, 1, &agent);
	if ((rc = prog_unknown(&none, agent)) != 0)
		return rc;
	if (hist_repair(agent, time(NULL), &runs, where, sizeof where,
	    err) == -1)
		die(HX_IOERR, err);
	if (json_array_size(runs) == 0)
		printf("%s: nothing damaged in its history\n", agent);
	json_array_foreach(runs, i, r)
		printf("%s: history.jsonl line %lld (%lld line%s from byte "
		    "%lld): %s: set aside in %s\n", agent,
		    json_integer_value(json_object_get(r, "line")),
		    json_integer_value(json_object_get(r, "lines")),
		    json_integer_value(json_object_get(r, "lines")) > 1 ?
		    "s" : "", json_integer_value(json_object_get(r, "byte")),
		    json_string_value(json_object_get(r, "why")), where);
	json_decref(runs);
	return HX_OK;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "text", no_argument, NULL, 't' },
		{ "alert-only", no_argument, NULL, 'a' },
		{ "dedupe", required_argument, NULL, 'd' },
		{ "keep", required_argument, NULL, 'k' },
		{ "user", required_argument, NULL, 'u' },
		{ "soul", required_argument, NULL, 's' },
		{ "repair", required_argument, NULL, 'R' },
		{ "exec", no_argument, NULL, 'e' },
		{ "retry-for", required_argument, NULL, 'r' },
		{ "exec-timeout", required_argument, NULL, 'T' },
		{ "flush", no_argument, NULL, 'F' },
		{ "now", no_argument, NULL, 'N' },
		{ "outbox", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *soul = NULL;
	char m[160], why[96], *user = NULL, *repair = NULL;
	int c, oflag = 0;

	warning_sink(prog_warning, NULL);
	while (execargv == NULL && (c = getopt_long(argc, argv,
	    "+tad:k:u:s:er:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			tflag = 1;
			break;
		case 'a':
			gopts.alert_only = 1;
			break;
		case 'd':
			if (*dur_why(optarg, 1, why, sizeof why) != '\0') {
				snprintf(m, sizeof m, "--dedupe: %s", why);
				die(HX_USAGE, m);
			}
			dur_parse(optarg, &gopts.dedupe);
			break;
		case 'k':
			if (num_parse(optarg, 1, 1000000000, &gopts.keep) ==
			    -1) {
				snprintf(m, sizeof m, "--keep: %s", num_why(
				    optarg, 1, 1000000000, why, sizeof why));
				die(HX_USAGE, m);
			}
			break;
		case 'u':
			user = optarg;
			break;
		case 's':
			soul = optarg;
			break;
		case 'R':
			repair = optarg;
			break;
		case 'r':
			if (*dur_why(optarg, 1, why, sizeof why) != '\0') {
				snprintf(m, sizeof m, "--retry-for: %s", why);
				die(HX_USAGE, m);
			}
			dur_parse(optarg, &gopts.retry_for);
			break;
		case 'T':
			if (dur_parse(optarg, &exec_timeout) == -1 ||
			    exec_timeout < 1 || exec_timeout > 86400)
				die(HX_USAGE, "--exec-timeout: a duration from "
				    "1s to 1d, such as 30s or 5m");
			break;
		case 'F':
			flushflag = 1;
			break;
		case 'N':
			gopts.try_now = 1;
			break;
		case 'O':
			oflag = 1;
			break;
		case 'e':
			execargv = argv + optind;
			if (*execargv == NULL)
				die(HX_USAGE, "--exec: which program?");
			break;
		case 'h':
			fputs(usage_text, stdout);
			return HX_OK;
		case 'V':
			puts("heart-ghost " HEART_VERSION);
			return HX_OK;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (soul != NULL && user == NULL)
		die(HX_USAGE, "--soul goes with --user only");
	if ((gopts.try_now && !flushflag) || (user != NULL && repair != NULL))
		usage();
	if (user != NULL)
		return cmd_user(user, soul, argc, argv);
	if (repair != NULL) {
		if (argc > 0 || oflag || flushflag || execargv != NULL)
			usage();
		return cmd_repair(repair);
	}
	if (oflag) {
		if (execargv != NULL || flushflag)
			usage();
		return cmd_outbox(argc, argv);
	}
	if (flushflag && argc > 0 && execargv == NULL)
		usage();
	gopts.text = tflag;
	gopts.exec = execargv;
	if (execargv != NULL)
		argc = 0;
	signal(SIGPIPE, SIG_IGN);
	if (flushflag)
		return flush_all();
	return read_inputs(argc, argv);
}
