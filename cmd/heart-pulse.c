/*
 * heart-pulse - the pulse chamber: one process, one MQTT connection,
 * any number of agents, each published alive every interval with the
 * state the dashboard draws; never a model.  With --watch, the other
 * end: a subscriber that prints each change of the liveness map.
 *
 * One poll loop over a signalfd and what the library's end asks to be
 * polled; each end's policy lives in lib/ (publisher.c: births,
 * pulses, the watchdog, the goodbye; watcher.c: the map and what a
 * snapshot says; broker.c: the connection).  This file parses the
 * options, wires the signals, prints and exits.
 */
#include <sys/signalfd.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "heart.h"
#include "prog.h"

const char progname[] = "heart-pulse";
const char usage_text[] =
    "usage: heart-pulse --soul FILE... | --souls DIR [--broker URL]"
    " [--prefix P]\n"
    "           [--interval DUR] [--client-id ID] [--keepalive DUR]\n"
    "           [--backoff-max DUR] [--username NAME]"
    " [--password-file FILE]\n"
    "           [--cafile FILE] [--cert FILE --key FILE] [--no-inotify]"
    " [-v]\n"
    "       heart-pulse --acl --soul FILE... | --souls DIR [--prefix P]"
    " [--username NAME]\n"
    "       heart-pulse --watch [--snapshot] [--misses N]"
    " [--interval DUR]\n"
    "           [--broker URL] [--prefix P] [connection options]\n";

static struct {
	struct pulse_opts c;
	int	 watch, acl;
} o = { .c = { .interval = -1, .misses = -1 } };

/* held here until the exit, whatever ends it */
static struct publisher *pub;
static struct watcher *wat;

static long long
dur_opt(const char *name, const char *arg)
{
	char m[128], why[96];
	long long v;

	if (*dur_why(arg, 1, why, sizeof why) != '\0') {
		snprintf(m, sizeof m, "--%s: %s", name, why);
		die(HX_USAGE, m);
	}
	dur_parse(arg, &v);
	return v;
}

static int
signals(void)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		die(HX_IOERR, "signalfd failed");
	return fd;
}

static int
next_signal(int fd)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof si) != (ssize_t)sizeof si)
		return 0;
	return (int)si.ssi_signo;
}

/* --- the publisher --- */

static void
print_stats(void)
{
	json_t *st = publisher_stats(pub);
	char *s = json_dumps(st, JSON_COMPACT);

	if (s != NULL)
		puts(s);
	free(s);
	json_decref(st);
	fflush(stdout);
}

static int
on_signal(int sfd, long long now)
{
	int sig;

	while ((sig = next_signal(sfd)) != 0) {
		if (sig == SIGTERM || sig == SIGINT)
			return 1;
		if (sig == SIGUSR1)
			print_stats();
		if (sig == SIGHUP)
			publisher_reload(pub, now);
	}
	return 0;
}

static int
publisher(void)
{
	char err[HEART_ERRLEN];
	struct pollfd p[3];
	long long now;
	int sfd, r, t;

	sfd = signals();	/* before the souls: a reload may come */
	if ((r = publisher_open(&o.c, &pub, err)) != 0)
		die(r, err);
	for (;;) {
		now = mono_ms();
		if (publisher_work(pub, now, err) == -1)
			die(HX_CONFIG, err);
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		t = publisher_poll(pub, now, p + 1);
		if (poll(p, 3, t) == -1 && errno != EINTR)
			die(HX_IOERR, "poll failed");
		now = mono_ms();
		if (publisher_ready(pub, p + 1, now, err) == -1)
			die(HX_CONFIG, err);
		if (p[0].revents && on_signal(sfd, now))
			break;
	}
	if (publisher_goodbye(pub, err) == -1)
		die(HX_CONFIG, err);
	publisher_free(pub);
	close(sfd);
	return HX_OK;
}

/* --- the watcher --- */

static void
print_events(json_t *events)
{
	size_t i;
	json_t *e;
	char *s;

	json_array_foreach(events, i, e) {
		if ((s = json_dumps(e, JSON_COMPACT)) != NULL)
			puts(s);
		free(s);
	}
	json_array_clear(events);
	fflush(stdout);
}

/* --snapshot: the map, once; the exit code says whether all is well. */
static int
print_snapshot(void)
{
	char err[HEART_ERRLEN];
	json_t *map;
	int r;

	if ((r = watcher_snapshot(wat, &map, err)) == -1) {
		say(NULL, err);
		return HX_UNAVAILABLE;
	}
	if (*err != '\0')
		say(NULL, err);
	print_events(map);
	json_decref(map);
	return r == 0 ? HX_OK : HX_NO;
}

static int
watcher(void)
{
	char err[HEART_ERRLEN];
	struct pollfd p[2];
	long long now;
	int sfd, r, sig, t;

	sfd = signals();
	if ((r = watcher_open(&o.c, &wat, err)) != 0)
		die(r, err);
	for (;;) {
		now = mono_ms();
		if ((r = watcher_work(wat, now, err)) == -1)
			die(HX_CONFIG, err);
		if (!o.c.snapshot)
			print_events(watcher_events(wat));
		if (r == 1) {
			r = print_snapshot();
			break;
		}
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		t = watcher_poll(wat, now, p + 1);
		if (poll(p, 2, t) == -1 && errno != EINTR)
			die(HX_IOERR, "poll failed");
		if (watcher_ready(wat, p + 1, err) == -1)
			die(HX_CONFIG, err);
		if (!o.c.snapshot)
			print_events(watcher_events(wat));
		if (p[0].revents && ((sig = next_signal(sfd)) == SIGTERM ||
		    sig == SIGINT)) {
			r = HX_OK;
			break;
		}
	}
	watcher_free(wat);
	close(sfd);
	return r;
}

/* --acl: the broker ACL block of this host's account, for its souls. */
static int
acl(void)
{
	char err[HEART_ERRLEN], *s;
	int r;

	r = publisher_acl(&o.c, &s, err);
	if (s != NULL)
		fputs(s, stdout);
	free(s);
	if (r != 0)
		die(r, err);
	return HX_OK;
}

static char **souls;

static void
add_soul(const char *path)
{
	if ((souls = realloc(souls, (o.c.nsouls + 1) * sizeof *souls)) ==
	    NULL)
		abort();
	souls[o.c.nsouls++] = (char *)path;
	o.c.souls = souls;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "soul", required_argument, NULL, 's' },
		{ "souls", required_argument, NULL, 'S' },
		{ "broker", required_argument, NULL, 'b' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "keepalive", required_argument, NULL, 'k' },
		{ "backoff-max", required_argument, NULL, 'B' },
		{ "username", required_argument, NULL, 'u' },
		{ "password-file", required_argument, NULL, 'P' },
		{ "password", required_argument, NULL, 'X' },
		{ "cafile", required_argument, NULL, 'C' },
		{ "cert", required_argument, NULL, 'E' },
		{ "key", required_argument, NULL, 'K' },
		{ "watch", no_argument, NULL, 'w' },
		{ "snapshot", no_argument, NULL, 'n' },
		{ "acl", no_argument, NULL, 'A' },
		{ "misses", required_argument, NULL, 'm' },
		{ "no-inotify", no_argument, NULL, 'N' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rc;

	warning_sink(prog_warning, NULL);
	while ((c = getopt_long(argc, argv, "s:S:b:p:i:c:k:B:u:P:C:E:K:wnm:"
	    "Nvh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': add_soul(optarg); break;
		case 'S': o.c.dir = optarg; break;
		case 'b': o.c.broker = optarg; break;
		case 'p': o.c.prefix = optarg; break;
		case 'i': o.c.interval = dur_opt("interval", optarg); break;
		case 'c':
			if (!id_valid(optarg))
				die(HX_USAGE, "--client-id: use 1 to 64 of "
				    "A-Z a-z 0-9 _ . -");
			o.c.client_id = optarg;
			break;
		case 'k':
			o.c.keepalive = (int)dur_opt("keepalive", optarg);
			if (o.c.keepalive < 5 || o.c.keepalive > 65535)
				die(HX_USAGE, "--keepalive: from 5s to 18h");
			break;
		case 'B':
			o.c.backoff_max = dur_opt("backoff-max", optarg);
			break;
		case 'u': o.c.username = optarg; break;
		case 'P': o.c.pwfile = optarg; break;
		case 'X':
			die(HX_USAGE, "--password: a password is never taken "
			    "on the command line (ps shows it); use "
			    "HEART_MQTT_PASSWORD or --password-file");
		case 'C': o.c.cafile = optarg; break;
		case 'E': o.c.certfile = optarg; break;
		case 'K': o.c.keyfile = optarg; break;
		case 'w': o.watch = 1; break;
		case 'n': o.c.snapshot = o.watch = 1; break;
		case 'A': o.acl = 1; break;
		case 'm':
			if (num_parse(optarg, 1, 1000, &o.c.misses) == -1) {
				char m[96], why[64];
				snprintf(m, sizeof m, "--misses: %s", num_why(
				    optarg, 1, 1000, why, sizeof why));
				die(HX_USAGE, m);
			}
			break;
		case 'N': o.c.noinotify = 1; break;
		case 'v': o.c.verbose = 1; break;
		case 'h':
			fputs(usage_text, stdout);
			return HX_OK;
		case 'V':
			puts("heart-pulse " HEART_VERSION);
			return HX_OK;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (o.watch && (o.c.nsouls > 0 || o.c.dir != NULL))
		die(HX_USAGE, "--watch takes no souls");
	if (!o.watch && o.c.nsouls == 0 && o.c.dir == NULL)
		usage();
	if (o.acl && o.watch)
		die(HX_USAGE, "--acl is for the publisher's souls, not --watch");
	rc = o.watch ? watcher() : o.acl ? acl() : publisher();
	free(souls);
	return rc;
}
