/*
 * tool.c - the soul's tools, called on the model's behalf: offered to
 * the model (OpenAI form), a call's arguments checked, its program run
 * by the runner (child.c) with the arguments as JSON on its standard
 * input, and what the model reads back (tool_text).  A tool never sees
 * the model's API key (tool_env).  What a program writes is outside
 * text: its standard error reaches messages through errf, its output
 * the model and the history through secret_dup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

#define TOOL_ENVMORE	8	/* names tool_env adds for a caller */

/* The soul's tools as the model is offered them (OpenAI form). */
json_t *
tool_offer(const json_t *tools)
{
	json_t *arr = json_array(), *t;
	size_t i;

	json_array_foreach(tools, i, t)
		json_array_append_new(arr, json_pack("{s:s,s:{s:O,s:s,s:O}}",
		    "type", "function", "function", "name",
		    json_object_get(t, "name"), "description",
		    json_is_string(json_object_get(t, "description")) ?
		    json_string_value(json_object_get(t, "description")) : "",
		    "parameters", json_object_get(t, "parameters")));
	return arr;
}

static const json_t *
find_tool(const json_t *tools, const char *name)
{
	json_t *t;
	size_t i;

	json_array_foreach(tools, i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")),
		    name) == 0)
			return t;
	return NULL;
}

/* "NAME: no such tool (the tools are: a, b)": the tools offered
 * (OpenAI form) when known, else the soul's; heartbeat is heart's own */
static void
unknown(const json_t *tools, const json_t *offer, const char *name,
    char *err)
{
	char list[300] = "";
	const char *tn;
	json_t *t;
	size_t i, n;

	json_array_foreach(offer ? offer : tools, i, t) {
		tn = json_string_value(json_object_get(offer ?
		    json_object_get(t, "function") : t, "name"));
		if (tn == NULL || (offer && strcmp(tn, "heartbeat") == 0))
			continue;
		n = strlen(list);
		snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
		    tn);
	}
	errf(err, "%.64s: no such tool (%s%s)", name && *name ? name :
	    "(no name)", list[0] ? "the tools are: " : "there are no tools",
	    list);
}

/*
 * Does entry ("NAME=value") pass to a tool?  Not the soul's key
 * variable (hide), not a store or broker password, and not any
 * variable whose value is a secret heart holds (another provider's
 * key): a tool gets what it needs from its own configuration.
 */
static int
not_hidden(const char *entry, const void *hide)
{
	const char *eq = strchr(entry, '=');
	size_t hl = hide ? strlen(hide) : 0;

	if (hl > 0 && strncmp(entry, hide, hl) == 0 && entry[hl] == '=')
		return 0;
	return !secret_password_var(entry) && (eq == NULL ||
	    !secret_held(eq + 1));
}

/*
 * environ without the secrets (not_hidden), then our names, then more
 * ("NAME=value" each, NULL-ended; may be NULL): a tool's environment,
 * and a gate program's (gate.c).
 */
char **
tool_env(const struct tool_ctx *c, const char *tool, char *const *more)
{
	const char *names[4] = { "HEART_AGENT", "HEART_CHAMBER",
	    "HEART_WAKE_ID", "HEART_TOOL" };
	const char *vals[4] = { c->agent, c->chamber, c->wake_id, tool };
	char *set[4 + TOOL_ENVMORE + 1] = { NULL }, **env;
	int k, n;

	for (k = 0; k < 4; k++)
		if (asprintf(&set[k], "%s=%s", names[k], vals[k] ? vals[k] :
		    "") == -1)
			abort();
	for (n = 0; more != NULL && more[n] != NULL && n < TOOL_ENVMORE; n++)
		set[k + n] = more[n];
	env = env_make(not_hidden, c->hide, set);
	for (k = 0; k < 4; k++)
		free(set[k]);
	return env;
}

/*
 * What the model reads back of a program's or a server's output: head
 * (may be NULL) and the len bytes of out, cut at TOOL_MAXOUT with a
 * word if they were cut (or were already, cut), UTF-8 cleaned, never a
 * secret of heart's (it is kept in the history).
 */
char *
tool_text(const char *head, const char *out, size_t len, int cut)
{
	char *clean, *text = NULL, *safe, note[64] = "";
	size_t n;

	if (len > TOOL_MAXOUT) {
		len = TOOL_MAXOUT;
		cut = 1;
	}
	if (cut)
		snprintf(note, sizeof note, "\n[heart: output cut at %d "
		    "bytes]", TOOL_MAXOUT);
	clean = utf8_clean(out, len, &n);
	if (asprintf(&text, "%s%s%.*s%s", head ? head : "",
	    head && n ? "\n" : "", (int)n, clean, note) == -1)
		abort();
	free(clean);
	safe = secret_dup(text);
	free(text);
	return safe;
}

static char *
content(const char *head, const struct tool_out *o)
{
	return tool_text(head, o->out, o->len, o->cut);
}

static char *
error_text(const char *msg)
{
	char *text = NULL;

	if (asprintf(&text, "error: %s", msg) == -1)
		abort();
	return text;
}

/* The arguments of a call (OpenAI form): a JSON object, or NULL and
 * why in err. */
json_t *
tool_args(const json_t *call, char *err)
{
	const json_t *fn = json_object_get(call, "function");
	const char *name = json_string_value(json_object_get(fn, "name"));
	const char *args = json_string_value(json_object_get(fn,
	    "arguments"));
	json_error_t je;
	json_t *a;

	if ((a = json_loads(args ? args : "", JSON_DECODE_ANY, &je)) ==
	    NULL || !json_is_object(a)) {
		errf(err, "%s: arguments are not a JSON object%s%.200s",
		    name ? name : "(no name)", a ? "" : ": ", a ? "" :
		    je.text);
		json_decref(a);
		return NULL;
	}
	return a;
}

/*
 * Run one tool call (OpenAI form: {id, function: {name, arguments}}).
 * Always sets *text to what the model reads back.  Returns 0 when the
 * tool succeeded; -1 with why in err when it failed: an unknown name,
 * arguments that are not a JSON object, a program that cannot start,
 * exits non-zero, or runs past its timeout.
 */
int
tool_call(const struct soul *s, const struct tool_ctx *c,
    const json_t *call, char **text, char *err)
{
	const json_t *fn = json_object_get(call, "function"), *t;
	const char *name = json_string_value(json_object_get(fn, "name"));
	struct tool_proc p;
	struct tool_out o;
	json_t *a, *argv;
	char dir[4096], *in, **av, **env, e2[HEART_ERRLEN];
	size_t i;
	int rc;

	*text = NULL;
	if (name == NULL || (t = find_tool(s->tools, name)) == NULL) {
		unknown(s->tools, c->offer, name, err);
		*text = error_text(err);
		return -1;
	}
	if ((a = tool_args(call, err)) == NULL) {
		*text = error_text(err);
		return -1;
	}
	in = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	argv = json_object_get(t, "command");
	av = xcalloc(json_array_size(argv) + 1, sizeof *av);
	for (i = 0; i < json_array_size(argv); i++)
		av[i] = (char *)json_string_value(json_array_get(argv, i));
	env = tool_env(c, name, NULL);
	soul_dir(s, dir, sizeof dir);
	memset(&p, 0, sizeof p);
	p.argv = av;
	p.dir = dir;
	p.env = env;
	p.in = in;
	p.inlen = strlen(in);
	p.timeout = json_integer_value(json_object_get(t, "timeout"));
	p.maxout = TOOL_MAXOUT;
	if (tool_exec(&p, &o, e2) == -1) {
		errf(err, "%s: %s", name, e2);
		*text = error_text(err);
		rc = -1;
	} else if ((rc = tool_status(name, &p, &o, err)) == -1) {
		*text = error_text(err);
		if (o.len > 0) {
			char *more = content(*text, &o);
			free(*text);
			*text = more;
		}
	} else
		*text = content(NULL, &o);
	tool_out_free(&o);
	env_free(env);
	free(av);
	free(in);
	return rc;
}
