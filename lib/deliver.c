/*
 * deliver.c - hand a deliverable to a program: mail, notify-send, curl
 * to a webhook, a chat bot's script.  No shell: argv is run as given,
 * found on PATH, with the text on its standard input and the wake's
 * agent, chamber, id and time in HEART_AGENT, HEART_CHAMBER,
 * HEART_WAKE_ID and HEART_AT, and HEART_ALERT (1 when the answer
 * carries an alert, else 0).  Its standard output and error are the
 * caller's.  Success is exit status 0, nothing else.
 *
 * Invariant: the program's environment holds only the variables named
 * below (heart-ghost(1) lists them), never a provider key or a store
 * password, whatever heart-ghost's own environment holds; the
 * HEART_DELIVER_* variables are the delivery's own settings and
 * secrets (the recipes of contrib/deliver read them).
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"

/* What a mailer, notify-send, curl or a script needs, and no more. */
static const char *const passed[] = {
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR",
	"LANG", "LANGUAGE", "DISPLAY", "WAYLAND_DISPLAY",
	"DBUS_SESSION_BUS_ADDRESS", "MAIL", "MAILRC", "http_proxy",
	"https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
	"ALL_PROXY", "no_proxy", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"CURL_CA_BUNDLE", "HEART_STATE_DIR", NULL
};
static const char *const passed_prefix[] = { "LC_", "XDG_", "HEART_DELIVER_",
    NULL };

/* Is entry ("NAME=value") a variable a delivery program gets? */
static int
passes(const char *entry, const void *arg)
{
	size_t n = strcspn(entry, "="), i;

	(void)arg;
	for (i = 0; passed[i] != NULL; i++)
		if (strlen(passed[i]) == n && strncmp(entry, passed[i],
		    n) == 0)
			return 1;
	for (i = 0; passed_prefix[i] != NULL; i++)
		if (strncmp(entry, passed_prefix[i],
		    strlen(passed_prefix[i])) == 0)
			return 1;
	return 0;
}

/* The variables above, then the wake's five. */
static char **
make_env(const struct deliver_env *de)
{
	const char *names[5] = { "HEART_AGENT", "HEART_CHAMBER",
	    "HEART_WAKE_ID", "HEART_AT", "HEART_ALERT" };
	const char *vals[5] = { de->agent, de->chamber, de->wake_id, de->at,
	    de->alert ? "1" : "0" };
	char *set[6] = { NULL }, **env;
	int k;

	for (k = 0; k < 5; k++)
		if (asprintf(&set[k], "%s=%s", names[k], vals[k] ? vals[k] :
		    "") == -1)
			abort();
	env = env_make(passes, NULL, set);
	for (k = 0; k < 5; k++)
		free(set[k]);
	return env;
}

/* Write all of text to fd; a reader that stops early is not an error. */
static void
feed(int fd, const char *text, size_t len)
{
	struct sigaction ign, old;
	ssize_t w;

	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	while (len > 0) {
		if ((w = write(fd, text, len)) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		text += w;
		len -= (size_t)w;
	}
	sigaction(SIGPIPE, &old, NULL);
}

static int
status_error(const char *cmd, int st, char *err)
{
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st))
		errf(err, "%s: exit %d", cmd, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		errf(err, "%s: killed by signal %d", cmd, WTERMSIG(st));
	else
		errf(err, "%s: stopped", cmd);
	return -1;
}

/* Run argv with text on its stdin; 0 when it exits 0. */
int
deliver_exec(char *const *argv, const char *text, size_t len,
    const struct deliver_env *de, char *err)
{
	int in[2], ep[2], st, e = 0;
	char **env;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) == -1)
		goto syserr;
	if (pipe2(ep, O_CLOEXEC) == -1) {
		close(in[0]);
		close(in[1]);
		goto syserr;
	}
	env = make_env(de);
	if ((pid = fork()) == -1) {
		env_free(env);
		close(in[0]);
		close(in[1]);
		close(ep[0]);
		close(ep[1]);
		goto syserr;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if (in[0] == STDIN_FILENO)
			fcntl(in[0], F_SETFD, 0);
		if (in[0] == STDIN_FILENO ||
		    dup2(in[0], STDIN_FILENO) != -1)
			execvpe(argv[0], argv, env);
		e = errno;
		(void)!write(ep[1], &e, sizeof e);
		_exit(127);
	}
	env_free(env);
	close(in[0]);
	close(ep[1]);
	feed(in[1], text, len);
	close(in[1]);
	while (read(ep[0], &e, sizeof e) == -1 && errno == EINTR)
		;
	close(ep[0]);
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR) {
			errf(err, "%s: wait: %s", argv[0], strerror(errno));
			return -1;
		}
	if (e != 0) {
		errf(err, "%s: %s", argv[0], strerror(e));
		return -1;
	}
	return status_error(argv[0], st, err);
syserr:
	errf(err, "%s: cannot start: %s", argv[0], strerror(errno));
	return -1;
}
