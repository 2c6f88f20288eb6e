/*
 * idle.c - the one judge of replies: is a reply a ghost ("nothing to
 * do"), a finding to keep, or work to go on with?  Every reply is
 * judged here: token mode's answers, ghost.mode tool's first reply
 * and the triage model's (heart-soul(5), GHOSTS and TRIAGE), and the
 * one rule of what an alert looks like is here too (heart-ghost
 * --alert-only's).
 *
 * The rule errs on the side of a finding: a finding is never lost, and
 * a chatty ghost costs one delivered message.
 *   - An alert is ALERT, URGENT or CRITICAL, in any case, at the start
 *     of a line (after anything but a letter: blanks, digits, markdown,
 *     punctuation, emoji, HTML tags, a bracketed word such as [IDLE]),
 *     then closing emphasis, then ':' (or a full-width one), '!', a
 *     dash ("ALERT -", "ALERT —"), a blank and an emoji ("ALERT 🚨"),
 *     or the end of the line ("**ALERT**" on a line of its own); or
 *     the word emphasised alone ("**ALERT** web1 down"); or
 *     one of the words alone in brackets
 *     ("[CRITICAL] web1 down").  A reply holding one is never a
 *     ghost.
 *   - Token mode: a ghost is the token (default [IDLE]) or one of
 *     ghost.also (default HEARTBEAT_OK), wrapped in markdown or
 *     punctuation, on one line with a remark or beside one remark line
 *     (not a list item), blank lines and a fence around the whole reply
 *     aside; [IDLE:LOW], [IDLE:MEDIUM] and [IDLE:HIGH] with a level.
 *     The remark must be an acknowledgement: at most ghost.ack_max_chars
 *     characters, beginning with one of acks[] below and going on, if at all,
 *     in plain words (letters, blanks, apostrophes and hyphens inside
 *     words; no contrast word).  "Nothing new. [IDLE]" is a ghost,
 *     "[IDLE] The server room is flooding, evacuate now." is kept.
 *   - Asked for a decision (tool mode's first reply, triage): a reply
 *     whose first call is a readable heartbeat call with action run is
 *     work; one whose only call is heartbeat skip is a ghost when its
 *     text is blank, a ghost by the token rule, or an acknowledgement,
 *     and neither its text nor its arguments hold an alert, else a
 *     finding kept.  Anything else (plain text, another first call,
 *     arguments that are not a JSON object, an action that is neither
 *     skip nor run, a skip beside other calls) is no decision: why
 *     says so, and the reply is work when it makes calls, else its
 *     text is judged by the token rule.  The decision kept never
 *     claims an action the model did not give.
 *   - A reply cut at max_tokens (finish_reason length, stop_reason
 *     max_tokens) is never a ghost: its end, where the finding may
 *     have been, is missing.  Judged as above, a ghost is kept.
 *   - A reply with no text and no call is neither a ghost nor a
 *     finding: it says nothing at all, and the caller fails the wake.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "heartint.h"
#include "heartwake.h"

#define MAXLINES	4	/* content lines looked at; more is real */

struct span {
	const char *s;
	size_t	 len;
};

static int
letter(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
alnum(int c)
{
	return letter(c) || (c >= '0' && c <= '9');
}

/* Characters that wrap a token: markdown, quotes, punctuation. */
static int
wrapper(int c)
{
	return c != '\0' && (isspace(c) || strchr("*_`~\"'.,!;:>-#()", c));
}

/* Peel wrappers off both ends of s[0..len); returns the new bounds. */
static void
peel(const char **s, size_t *len)
{
	while (*len > 0 && wrapper((unsigned char)**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && wrapper((unsigned char)(*s)[*len - 1]))
		(*len)--;
}

static const char *alert_words[] = { "ALERT", "URGENT", "CRITICAL" };

/* Is s[0..len) an alert word, as a whole word?  Its length, else 0. */
static size_t
alert_word(const char *s, size_t len)
{
	size_t i, n;

	for (i = 0; i < sizeof alert_words / sizeof *alert_words; i++) {
		n = strlen(alert_words[i]);
		if (len >= n && strncasecmp(s, alert_words[i], n) == 0 &&
		    (len == n || !alnum((unsigned char)s[n])))
			return n;
	}
	return 0;
}

/* An HTML tag at s, <b> or </strong>: its length, else 0. */
static size_t
html_tag(const char *s, size_t len)
{
	size_t i = 1;

	if (len < 3 || s[0] != '<')
		return 0;
	if (s[i] == '/')
		i++;
	if (i >= len || !letter((unsigned char)s[i]))
		return 0;
	while (i < len && i < 64 && s[i] != '>' && s[i] != '<')
		i++;
	return i < len && s[i] == '>' ? i + 1 : 0;
}

/* A bracketed word at s, [IDLE] or [web1]: its length, else 0. */
static size_t
bracket(const char *s, size_t len)
{
	size_t i = 1;

	if (len < 2 || s[0] != '[')
		return 0;
	while (i < len && i < 40 && s[i] != ']' && s[i] != '[')
		i++;
	return i < len && s[i] == ']' ? i + 1 : 0;
}

/* After an alert's word: closing emphasis or tags, then ':', '!' or a
 * dash ("ALERT:", "**ALERT**:", "ALERT :", "ALERT!", "ALERT -",
 * "ALERT —"), or nothing more on the line ("**ALERT**", "# Urgent"). */
static int
alert_sep(const char *s, size_t len)
{
	size_t i = 0, n;
	int blank = 0, shut = 0;

	for (;;) {
		if (i < len && s[i] != '\0' && strchr("*_~`", s[i]) != NULL) {
			shut |= !blank && s[i] != '`';
			i++;
		} else if (i < len && (n = html_tag(s + i, len - i)) > 0) {
			shut |= !blank;
			i += n;
		} else if (i < len && (s[i] == ' ' || s[i] == '\t' ||
		    s[i] == '\r')) {
			blank = 1;
			i++;
		} else
			break;
	}
	if (i >= len || s[i] == ':' || s[i] == '!' || (shut && blank))
		return 1;	/* and the word bold alone: "**ALERT** web1" */
	if (blank && len - i >= 3 && (memcmp(s + i, "\xf0\x9f", 2) == 0 ||
	    memcmp(s + i, "\xe2\x9a\xa0", 3) == 0))
		return 1;	/* an emoji, or a warning sign: "ALERT 🚨" */
	if (len - i >= 3 && (memcmp(s + i, "\xef\xbc\x9a", 3) == 0 ||
	    memcmp(s + i, "\xe2\x80\x93", 3) == 0 ||
	    memcmp(s + i, "\xe2\x80\x94", 3) == 0))
		return 1;	/* a full-width colon, an en or em dash */
	return s[i] == '-' && (blank || i + 1 == len || s[i + 1] == ' ' ||
	    s[i + 1] == '\t' || s[i + 1] == '-');
}

/* Does the line s[0..len) start with an alert? */
static int
alert_at(const char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		if (letter((unsigned char)s[i]))
			return (n = alert_word(s + i, len - i)) > 0 &&
			    alert_sep(s + i + n, len - i - n);
		if ((n = html_tag(s + i, len - i)) > 0)
			i += n;
		else if ((n = bracket(s + i, len - i)) > 0) {
			if (alert_word(s + i + 1, n - 2) == n - 2)
				return 1;	/* [ALERT] */
			i += n;
		} else
			i++;
	}
	return 0;
}

/*
 * Does the text carry an alert on any of its lines?  Used by the judge
 * below and by heart-ghost --alert-only.
 */
int
idle_alert(const char *text)
{
	const char *p = text, *nl;

	if (text == NULL)
		return 0;
	for (;;) {
		nl = strchr(p, '\n');
		if (alert_at(p, nl ? (size_t)(nl - p) : strlen(p)))
			return 1;
		if (nl == NULL)
			return 0;
		p = nl + 1;
	}
}

/* The ways of saying nothing happened that begin an acknowledgement
 * (heart-soul(5), GHOSTS), and the words alone that are one too. */
static const char *acks[] = {
	"nothing new", "nothing to", "nothing needs", "nothing changed",
	"nothing has changed", "nothing happened", "nothing pending",
	"nothing yet", "nothing else", "nothing further", "nothing more",
	"nothing of note", "nothing notable", "nothing important",
	"nothing urgent", "nothing worth", "no news", "no new", "no change",
	"no changes", "no update", "no updates", "no action", "no issues",
	"no problems", "no activity", "no alerts", "all quiet", "all clear",
	"all good", "all fine", "all normal", "all ok", "all okay",
	"all well", "all calm", "all is well", "all is quiet", "still quiet",
	"still nothing", "quiet so far", "as usual", "as before",
	"same as before", "unchanged", "everything is fine",
	"everything looks good", "everything is normal", NULL
};
static const char *ack_alone[] = { "nothing", "none", "no", "ok", "okay",
	"fine", "quiet", NULL };
static const char *contrast[] = { "but", "except", "excepting", "however",
	"although", "though", "unless", "apart", "besides", "while",
	"whereas", "save", NULL };

/* Is s[0..len) one of the words of list? */
static int
one_of(const char *const *list, const char *s, size_t len)
{
	for (; *list != NULL; list++)
		if (strlen(*list) == len && strncasecmp(s, *list, len) == 0)
			return 1;
	return 0;
}

/* An apostrophe or a hyphen inside a word at s[i]: its length, else 0 */
static size_t
joiner(const char *s, size_t len, size_t i)
{
	size_t n = s[i] == '\'' || s[i] == '-' ? 1 : len - i >= 3 &&
	    memcmp(s + i, "\xe2\x80\x99", 3) == 0 ? 3 : 0;

	return n > 0 && i > 0 && letter((unsigned char)s[i - 1]) &&
	    i + n < len && letter((unsigned char)s[i + n]) ? n : 0;
}

/* Plain words, and no contrast word among them? */
static int
plain(const char *s, size_t len)
{
	size_t i = 0, w, n;

	while (i < len) {
		if (s[i] == ' ' || s[i] == '\t') {
			i++;
			continue;
		}
		if (!letter((unsigned char)s[i]))
			return 0;
		for (w = i; w < len; w++)
			if ((n = joiner(s, len, w)) > 0)
				w += n - 1;
			else if (!letter((unsigned char)s[w]))
				break;
		if (one_of(contrast, s + i, w - i))
			return 0;
		i = w;
	}
	return 1;
}

/* Is the peeled remark s[0..len) an acknowledgement? */
static int
ack(const char *s, size_t len)
{
	size_t i, n;

	if (one_of(ack_alone, s, len))
		return 1;
	for (i = 0; acks[i] != NULL; i++) {
		n = strlen(acks[i]);
		if (n <= len && strncasecmp(s, acks[i], n) == 0 &&
		    (n == len || !alnum((unsigned char)s[n])))
			return plain(s + n, len - n);
	}
	return 0;
}

/* How many characters (UTF-8 sequences) the len bytes at s hold. */
static size_t
chars(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

/* A remark that may come with the token: none, or an acknowledgement
 * of at most maxrem characters. */
static int
remark(const char *s, size_t len, size_t maxrem)
{
	peel(&s, &len);
	return len == 0 || (chars(s, len) <= maxrem && ack(s, len));
}

/* A code fence: ``` or ~~~ after blanks and quote markers. */
static int
fence(const struct span *l)
{
	size_t i = 0;

	while (i < l->len && (l->s[i] == ' ' || l->s[i] == '\t' ||
	    l->s[i] == '>'))
		i++;
	return l->len - i >= 3 && (strncmp(l->s + i, "```", 3) == 0 ||
	    strncmp(l->s + i, "~~~", 3) == 0);
}

/* A list item: - * + or N. N) then a blank, after blanks and quotes. */
static int
list_item(const struct span *l)
{
	size_t i = 0, d;

	while (i < l->len && (l->s[i] == ' ' || l->s[i] == '\t' ||
	    l->s[i] == '>'))
		i++;
	if (i + 1 < l->len && strchr("-*+", l->s[i]) != NULL &&
	    (l->s[i + 1] == ' ' || l->s[i + 1] == '\t'))
		return 1;
	for (d = i; d < l->len && isdigit((unsigned char)l->s[d]); d++)
		;
	return d > i && d + 1 < l->len && (l->s[d] == '.' ||
	    l->s[d] == ')') && (l->s[d + 1] == ' ' || l->s[d + 1] == '\t');
}

static const char *levels[] = { "LOW", "MEDIUM", "HIGH" };

/*
 * Does tok occur at s (case-insensitively)?  Returns its length in s,
 * 0 if not.  A bracketed token also matches its graduated form
 * "[TOK:LEVEL]" (level into *lvl) and its bare word "TOK".
 */
static size_t
token_at(const char *s, size_t len, const char *tok, const char **lvl)
{
	size_t tl = strlen(tok), core, i, n;

	if (tl <= len && strncasecmp(s, tok, tl) == 0)
		return tl;
	if (tl < 3 || tok[0] != '[' || tok[tl - 1] != ']')
		return 0;
	core = tl - 2;
	if (len >= core + 2 && s[0] == '[' &&
	    strncasecmp(s + 1, tok + 1, core) == 0 && s[core + 1] == ':')
		for (i = 0; i < 3; i++) {
			n = strlen(levels[i]);
			if (len >= core + 3 + n && strncasecmp(s + core + 2,
			    levels[i], n) == 0 && s[core + 2 + n] == ']') {
				*lvl = levels[i];
				return core + 3 + n;
			}
		}
	if (len >= core && strncasecmp(s, tok + 1, core) == 0 &&
	    (len == core || !isalnum((unsigned char)s[core])))
		return core;
	return 0;
}

/* Is the line tok, or tok then a remark? */
static int
starts_idle(const char *s, size_t len, const char *tok, size_t maxrem,
    const char **lvl)
{
	size_t n = token_at(s, len, tok, lvl);

	return n > 0 && remark(s + n, len - n, maxrem);
}

/* Is the line a remark then tok? */
static int
ends_idle(const char *s, size_t len, const char *tok, size_t maxrem,
    const char **lvl)
{
	size_t i;

	for (i = len; i-- > 0;) {
		if (len - i > strlen(tok) + 10)
			break;
		if (token_at(s + i, len - i, tok, lvl) != len - i)
			continue;
		if (i > 0 && isalnum((unsigned char)s[i - 1]))
			continue;
		return remark(s, i, maxrem);
	}
	return 0;
}

/* Is the line tok alone, wrapped or not? */
static int
alone(const struct span *l, const char *tok, const char **lvl)
{
	const char *s = l->s;
	size_t len = l->len;

	peel(&s, &len);
	return len > 0 && token_at(s, len, tok, lvl) == len;
}

/*
 * The reply's lines with something on them, at most MAXLINES + 1, a
 * code block around them all taken off; their number.
 */
static size_t
content_lines(const char *reply, struct span *l, struct span **c)
{
	const char *p = reply, *nl;
	size_t n = 0, len, i;

	while (n <= MAXLINES) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		for (i = 0; i < len && isspace((unsigned char)p[i]); i++)
			;
		if (i < len) {
			l[n].s = p;
			l[n++].len = len;
		}
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	*c = l;
	if (n >= 3 && fence(&l[0]) && fence(&l[n - 1])) {
		*c = l + 1;	/* one code block around the whole reply */
		n -= 2;
	}
	for (i = 0; i < n; i++)
		if (fence(&(*c)[i]))
			return MAXLINES + 1;
	return n;
}

/* The rule above for one token, on the content lines l[0..n). */
static int
idle_token(const struct span *l, size_t n, const char *tok, size_t maxrem,
    const char **lvl)
{
	const char *s;
	size_t len, i;

	*lvl = NULL;
	if (n == 1) {
		s = l[0].s;
		len = l[0].len;
		peel(&s, &len);
		return len > 0 && (starts_idle(s, len, tok, maxrem, lvl) ||
		    ends_idle(s, len, tok, maxrem, lvl));
	}
	for (i = 0; i < 2; i++)
		if (alone(&l[i], tok, lvl) && !list_item(&l[1 - i]) &&
		    remark(l[1 - i].s, l[1 - i].len, maxrem))
			return 1;
	*lvl = NULL;
	return 0;
}

/*
 * The token rule: is `reply' a ghost for soul s?  *level is set to
 * "LOW", "MEDIUM" or "HIGH" for a graduated token, else NULL.
 */
int
idle_detect(const struct soul *s, const char *reply, const char **level)
{
	struct span l[MAXLINES + 1], *c;
	size_t n, i, max = (size_t)s->ghost_ack_max;
	json_t *a;

	*level = NULL;
	if (reply == NULL || idle_alert(reply))
		return 0;
	n = content_lines(reply, l, &c);
	if (n == 0 || n > 2)
		return 0;
	if (idle_token(c, n, s->ghost_token, max, level))
		return 1;
	json_array_foreach(s->ghost_also, i, a)
		if (idle_token(c, n, json_string_value(a), max, level))
			return 1;
	return 0;
}

static int
blank(const char *s)
{
	if (s == NULL)
		return 1;
	while (*s != '\0' && isspace((unsigned char)*s))
		s++;
	return *s == '\0';
}

/* Is the text beside a skip nothing: blank, a ghost by the token rule,
 * or one acknowledgement on one line? */
static int
skip_text(const struct soul *s, const char *text, const char **level)
{
	struct span l[MAXLINES + 1], *c;

	if (blank(text) || idle_detect(s, text, level))
		return 1;
	return !idle_alert(text) && content_lines(text, l, &c) == 1 &&
	    remark(c[0].s, c[0].len, (size_t)s->ghost_ack_max);
}

/* Does a string anywhere in v carry an alert? */
static int
json_alert(const json_t *v)
{
	const char *k;
	json_t *m;
	size_t i;

	if (json_is_string(v))
		return idle_alert(json_string_value(v));
	json_object_foreach((json_t *)v, k, m)
		if (json_alert(m))
			return 1;
	json_array_foreach(v, i, m)
		if (json_alert(m))
			return 1;
	return 0;
}

/* A model's word quoted in a message: one printable line, short, no
 * secret of heart's. */
static const char *
quoted(const char *s, char *buf, size_t n)
{
	char *safe;

	if (s == NULL)
		return "(none)";
	safe = secret_dup(s);
	text_line(buf, n, safe, strlen(safe));
	free(safe);
	return buf;
}

/* A model's string as a JSON string, scrubbed of heart's secrets. */
static json_t *
scrubbed(const char *s)
{
	char *safe = secret_dup(s);
	json_t *j = json_string(safe);

	free(safe);
	return j;
}

enum { HB_NONE, HB_SKIP, HB_RUN };

/*
 * The decision the calls carry: HB_RUN, HB_SKIP, or HB_NONE with why.
 * v->decision is the heartbeat call as given: its action when it is
 * skip or run, its reason when it is a string.  *args, to free, are
 * its arguments when they are a JSON object.
 */
static int
hb_read(const json_t *calls, struct idle_verdict *v, json_t **args)
{
	const json_t *fn = json_object_get(json_array_get(calls, 0),
	    "function");
	const char *name = json_string_value(json_object_get(fn, "name"));
	const char *a = json_string_value(json_object_get(fn, "arguments"));
	const char *act, *why;
	char q[64];

	v->decision = json_object();
	*args = NULL;
	if (json_array_size(calls) == 0) {
		snprintf(v->why, sizeof v->why, "no heartbeat call (a reply "
		    "in plain text)");
		return HB_NONE;
	}
	if (name == NULL || strcmp(name, "heartbeat") != 0) {
		snprintf(v->why, sizeof v->why, "the first call was \"%s\", "
		    "not heartbeat", quoted(name, q, sizeof q));
		return HB_NONE;
	}
	*args = json_loads(a ? a : "", JSON_DECODE_ANY, NULL);
	if (!json_is_object(*args)) {
		snprintf(v->why, sizeof v->why, "the heartbeat call's "
		    "arguments are not a JSON object");
		return HB_NONE;
	}
	act = json_string_value(json_object_get(*args, "action"));
	why = json_string_value(json_object_get(*args, "reason"));
	if (act != NULL && (strcmp(act, "skip") == 0 ||
	    strcmp(act, "run") == 0))
		json_object_set_new(v->decision, "action", json_string(act));
	if (why != NULL)
		json_object_set_new(v->decision, "reason", scrubbed(why));
	if (act != NULL && strcmp(act, "run") == 0)
		return HB_RUN;
	if (act != NULL && strcmp(act, "skip") == 0 &&
	    json_array_size(calls) == 1)
		return HB_SKIP;
	if (act == NULL)
		snprintf(v->why, sizeof v->why, "the heartbeat call gives no "
		    "action");
	else if (strcmp(act, "skip") == 0)
		snprintf(v->why, sizeof v->why, "a heartbeat skip beside "
		    "other calls");
	else
		snprintf(v->why, sizeof v->why, "the heartbeat action \"%s\" "
		    "is neither skip nor run", quoted(act, q, sizeof q));
	return HB_NONE;
}

/* A skip's verdict: a ghost, or the finding beside it kept. */
static void
judge_skip(const struct soul *s, const char *text, const json_t *args,
    int cut, struct idle_verdict *v)
{
	const char *reason;
	char *all;

	if (!cut && !json_alert(args) && skip_text(s, text, &v->level)) {
		v->what = IDLE_GHOST;
		return;
	}
	v->what = IDLE_KEEP;
	v->level = NULL;
	reason = json_string_value(json_object_get(v->decision, "reason"));
	if (!blank(v->keep))
		return;
	/* the finding is in the arguments: the reason, or them all */
	if (reason != NULL && !blank(reason))
		v->keep = reason;
	else if ((all = json_dumps(args, JSON_COMPACT)) != NULL) {
		v->keep = v->own = secret_dup(all);
		free(all);
	}
}

/* No decision to read, or none asked for: work if there are calls,
 * nothing at all if there is no text either, else the text by the
 * token rule. */
static void
judge_text(const struct soul *s, const char *text, const json_t *calls,
    int cut, struct idle_verdict *v)
{
	v->what = json_array_size(calls) > 0 ? IDLE_RUN : blank(text) ?
	    IDLE_EMPTY : !cut && idle_detect(s, text, &v->level) ?
	    IDLE_GHOST : IDLE_KEEP;
}

/*
 * Judge a reply of soul s: its text (may be NULL) and its calls (OpenAI
 * form, may be NULL).  asked: the heartbeat decision was asked for (tool
 * mode's first reply, the triage's).  cut: the reply stopped at
 * max_tokens (llm_reply's cut).  Fills v; free it with
 * idle_verdict_free.
 */
void
idle_judge(const struct soul *s, const char *text, const json_t *calls,
    int asked, int cut, struct idle_verdict *v)
{
	json_t *args;

	memset(v, 0, sizeof *v);
	v->keep = text != NULL ? text : "";
	if (!asked) {
		judge_text(s, text, calls, cut, v);
		return;
	}
	switch (hb_read(calls, v, &args)) {
	case HB_RUN:
		v->what = IDLE_RUN;
		break;
	case HB_SKIP:
		judge_skip(s, text, args, cut, v);
		break;
	default:
		judge_text(s, text, calls, cut, v);
		if (v->what == IDLE_EMPTY)
			snprintf(v->why, sizeof v->why, "an empty reply (no "
			    "text, no call)");
	}
	json_decref(args);
}

void
idle_verdict_free(struct idle_verdict *v)
{
	json_decref(v->decision);
	free(v->own);
	v->decision = NULL;
	v->own = NULL;
}

/* The heartbeat tool the judge reads a decision from (tool mode and
 * triage offer it), OpenAI form. */
static const char heartbeat_tool[] =
    "{\"type\":\"function\",\"function\":{\"name\":\"heartbeat\","
    "\"description\":\"Call this first, before anything else: does this "
    "wake have work? skip: nothing needs doing or telling now. run: "
    "there is work; go on with it.\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"action\":{\"type\":\"string\","
    "\"enum\":[\"skip\",\"run\"]},\"reason\":{\"type\":\"string\","
    "\"description\":\"why, in a few words\"}},\"required\":"
    "[\"action\"]}}}";

json_t *
idle_heartbeat_tool(void)
{
	return json_loads(heartbeat_tool, 0, NULL);
}
