/*
 * deliver.c - hand a deliverable to a program: mail, notify-send, curl
 * to a webhook, a chat bot's script.  No shell: argv is run as given,
 * found on PATH, with the text on its standard input and the wake's
 * agent, chamber, id and time in HEART_AGENT, HEART_CHAMBER,
 * HEART_WAKE_ID and HEART_AT, and HEART_ALERT (1 when the answer
 * carries an alert, else 0).  Its standard output and error are the
 * caller's.  Success is exit status 0, nothing else; it runs as a tool
 * does (child.c), in a process group of its own, killed with it when it
 * has not ended within its time.
 *
 * Invariant: the program's environment holds only the variables named
 * below (heart-ghost(1) lists them), never a provider key or a store
 * password, whatever heart-ghost's own environment holds; the
 * HEART_DELIVER_* variables are the delivery's own settings and
 * secrets (the recipes of contrib/deliver read them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

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
make_env(const struct ghost_result *r)
{
	const char *names[5] = { "HEART_AGENT", "HEART_CHAMBER",
	    "HEART_WAKE_ID", "HEART_AT", "HEART_ALERT" };
	const char *vals[5] = { r->agent, r->chamber, r->wake_id, r->at,
	    r->alert ? "1" : "0" };
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

/*
 * Run argv with text, r's deliverable, on its stdin, as a tool runs
 * (child.c: its own process group, killed with it after timeout
 * seconds or when heart-ghost is ended); 0 when it exits 0, else -1
 * and why in err, worded as a tool's failure.
 */
int
deliver_exec(char *const *argv, const char *text, size_t len,
    const struct ghost_result *r, long long timeout, char *err)
{
	struct tool_proc p;
	struct tool_out o;
	char **env = make_env(r);
	int rc;

	memset(&p, 0, sizeof p);
	p.argv = argv;
	p.env = env;
	p.in = text;
	p.inlen = len;
	p.timeout = timeout;
	p.inherit = 1;
	rc = tool_exec(&p, &o, err);
	env_free(env);
	if (rc == 0)
		rc = tool_status(argv[0], &p, &o, err);
	tool_out_free(&o);
	return rc;
}
