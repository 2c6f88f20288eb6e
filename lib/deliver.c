/*
 * deliver.c - hand a deliverable to a program: mail, notify-send, curl
 * to a webhook, a chat bot's script.  No shell: argv is run as given,
 * found on PATH, with the text on its standard input and the wake's
 * agent, chamber, id and time in HEART_AGENT, HEART_CHAMBER,
 * HEART_WAKE_ID and HEART_AT.  Its standard output and error are the
 * caller's.  Success is exit status 0, nothing else.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heart.h"

extern char **environ;

static const char *envnames[] = {
	"HEART_AGENT=", "HEART_CHAMBER=", "HEART_WAKE_ID=", "HEART_AT="
};

/* environ without our four names, then ours. */
static char **
make_env(const struct deliver_env *de)
{
	const char *vals[4] = { de->agent, de->chamber, de->wake_id, de->at };
	size_t n = 0, o = 0, i, k;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + 5, sizeof *env);
	for (i = 0; i < n; i++) {
		for (k = 0; k < 4; k++)
			if (strncmp(environ[i], envnames[k],
			    strlen(envnames[k])) == 0)
				break;
		if (k == 4)
			env[o++] = xstrdup(environ[i]);
	}
	for (k = 0; k < 4; k++)
		if (asprintf(&env[o++], "%s%s", envnames[k],
		    vals[k] ? vals[k] : "") == -1)
			abort();
	return env;
}

static void
free_env(char **env)
{
	size_t i;

	for (i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
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
		free_env(env);
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
	free_env(env);
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
