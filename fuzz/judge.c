/*
 * judge.c - fuzz target: the one judge of replies (idle_judge), in
 * every form a reply takes: token mode's answer, the answer to the
 * heartbeat question (tool mode's first reply, the triage's) with a
 * heartbeat call, with no call, or with another first call.
 *
 * An input is FORM MARK TEXT \0 ARGS \0 NAME: FORM's low two bits the
 * form (0 token, 1 a heartbeat call with ARGS as its arguments, 2 plain
 * text to the question, 3 a first call named NAME), its bit 2 a second
 * call, its bit 3 a reply cut at max_tokens; MARK picks an alert as
 * models write it (marks[]).  The property is alert-safety: a reply
 * holding an alert marker is never a ghost, whether the alert is found
 * in it (idle_alert) or put there: on a line of its own after the
 * text, at the start of the text, or as a skip's reason; and a reply
 * cut short is never a ghost.  And the decision kept never claims an
 * action the model did not give, and only a reply with no call and no
 * text is nothing at all (IDLE_EMPTY).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartwake.h"

static struct soul *soul;	/* every default */

static const char *marks[] = {
	"ALERT: x", "\xe2\x9a\xa0\xef\xb8\x8f ALERT: disk full",
	"**Alert** - x", "<b>URGENT</b>: x",
	"\xf0\x9f\x9a\xa8 critical \xe2\x80\x94 x", "[IDLE] urgent : x",
	"[CRITICAL] x",
	"> 1. _Alert_ \xe2\x80\x93 x", "12:00 [web1] CRITICAL: x",
	"alert\xef\xbc\x9ax", "- **URGENT:** x", "[IDLE:HIGH] ALERT: x"
};
#define NMARKS	(sizeof marks / sizeof *marks)

struct reply {
	char	*text;
	json_t	*calls;		/* or NULL */
	int	 asked;
	int	 cut;		/* stopped at max_tokens */
};

/* A call named name with arguments args (bytes, made UTF-8). */
static json_t *
call(const char *name, const char *args)
{
	size_t n;
	char *a = utf8_clean(args, strlen(args), &n);
	char *nm = utf8_clean(name, strlen(name), &n);
	json_t *c = json_pack("{s:s,s:{s:s,s:s}}", "type", "function",
	    "function", "name", nm, "arguments", a);

	free(a);
	free(nm);
	FZ_ASSERT(c != NULL);
	return c;
}

static void
build(struct reply *r, int form, const char *text, const char *args,
    const char *name)
{
	r->text = strdup(text);
	r->asked = (form & 3) != 0;
	r->cut = (form & 8) != 0;
	r->calls = NULL;
	if ((form & 3) == 1 || (form & 3) == 3) {
		r->calls = json_array();
		json_array_append_new(r->calls, call((form & 3) == 1 ?
		    "heartbeat" : name, args));
		if (form & 4)
			json_array_append_new(r->calls, call("quote", "{}"));
	}
}

/* Does the first call's arguments, read as JSON, hold an alert string
 * at its top level? */
static int
args_alert(const json_t *calls)
{
	const char *a = json_string_value(json_object_get(json_object_get(
	    json_array_get(calls, 0), "function"), "arguments"));
	json_t *j = a ? json_loads(a, 0, NULL) : NULL, *v;
	const char *k;
	int alert = 0;

	json_object_foreach(j, k, v)
		if (json_is_string(v) && idle_alert(json_string_value(v)))
			alert = 1;
	json_decref(j);
	return alert;
}

/* Judge r and check what must hold of any verdict; its kind. */
static int
judge(const struct reply *r)
{
	struct idle_verdict v;
	const char *act;
	int what, alert;

	idle_judge(soul, r->text, r->calls, r->asked, r->cut, &v);
	what = v.what;
	FZ_ASSERT(!r->cut || what != IDLE_GHOST);
	FZ_ASSERT(what == IDLE_GHOST || what == IDLE_KEEP || what == IDLE_RUN ||
	    what == IDLE_EMPTY);
	FZ_ASSERT(v.level == NULL || what == IDLE_GHOST);
	FZ_ASSERT(v.keep != NULL);
	FZ_ASSERT(what != IDLE_RUN || json_array_size(r->calls) > 0);
	/* nothing at all: no call, and blanks for text */
	FZ_ASSERT(what != IDLE_EMPTY || (json_array_size(r->calls) == 0 &&
	    r->text[strspn(r->text, " \t\n\v\f\r")] == '\0'));
	FZ_ASSERT(what == IDLE_EMPTY || json_array_size(r->calls) > 0 ||
	    r->text[strspn(r->text, " \t\n\v\f\r")] != '\0');
	FZ_ASSERT(r->asked == (v.decision != NULL));
	act = json_string_value(json_object_get(v.decision, "action"));
	FZ_ASSERT(act == NULL || strcmp(act, "skip") == 0 ||
	    strcmp(act, "run") == 0);
	/* no readable decision: no action claimed, but a skip that came
	 * with other calls, which the model did give */
	FZ_ASSERT(v.why[0] == '\0' || act == NULL || (strcmp(act, "skip") ==
	    0 && json_array_size(r->calls) > 1));
	FZ_ASSERT(!r->asked || v.why[0] != '\0' || act != NULL);
	alert = idle_alert(r->text) || (r->asked && args_alert(r->calls));
	FZ_ASSERT(!alert || what != IDLE_GHOST);
	idle_verdict_free(&v);
	return what;
}

static void
reply_free(struct reply *r)
{
	free(r->text);
	json_decref(r->calls);
}

/* The reply again with an alert put in: never a ghost. */
static void
marked(int form, const char *text, const char *args, const char *name,
    const char *mark)
{
	struct reply r;
	char *t, *reason;
	size_t n = strlen(text) + strlen(mark) + 2;
	json_t *skip;

	t = malloc(n);
	FZ_ASSERT(t != NULL);
	snprintf(t, n, "%s\n%s", text, mark);
	FZ_ASSERT(idle_alert(t));
	build(&r, form, t, args, name);
	FZ_ASSERT(judge(&r) != IDLE_GHOST);
	reply_free(&r);
	snprintf(t, n, "%s%s", mark, text);
	FZ_ASSERT(idle_alert(t));
	build(&r, form, t, args, name);
	FZ_ASSERT(judge(&r) != IDLE_GHOST);
	reply_free(&r);
	free(t);
	if ((form & 3) != 1)
		return;
	skip = json_pack("{s:s,s:s}", "action", "skip", "reason", mark);
	reason = json_dumps(skip, JSON_COMPACT);
	json_decref(skip);
	FZ_ASSERT(reason != NULL);
	build(&r, form, text, reason, name);
	FZ_ASSERT(judge(&r) != IDLE_GHOST);
	reply_free(&r);
	free(reason);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct reply r;
	char *buf, *text, *args, *name;
	int form, mark;

	if (soul == NULL) {
		soul = soul_new(NULL);
		soul_defaults(soul);
	}
	if (n < 2)
		return 0;
	form = data[0];
	mark = data[1] % NMARKS;
	/* the bytes and three NULs: TEXT, ARGS and NAME each end in one */
	buf = calloc(1, n + 1);
	FZ_ASSERT(buf != NULL);
	memcpy(buf, data + 2, n - 2);
	text = buf;
	args = text + strlen(text) + 1;
	name = args + strlen(args) + 1;
	build(&r, form, text, args, name);
	judge(&r);
	reply_free(&r);
	marked(form, text, args, name, marks[mark]);
	free(buf);
	return 0;
}
