/*
 * soul.c - soul files: YAML, or Markdown whose YAML frontmatter sits
 * between "---" lines and whose body is the system prompt.  The text
 * is read into JSON (yj.c), then every key is checked into struct
 * soul.  Each key is spelt once, in the table keys[] (soulkey.c): what
 * the loader reads, in what order, and what soul_defaults fills in;
 * soulcheck.c checks the values, soultool.c the tools and servers.
 * Errors name file:line:column (a file that cannot be read, or holds
 * nothing, is named alone); unknown keys become warnings the program
 * prints.  Every program reads a soul file here and only here.  After
 * soul_load every field holds a value: caps are never unbounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartsoul.h"

/* llm.context_budget's most, in tokens (heart(7), LIMITS) */
#define HEART_BUDGET_MAX 1000000

static int
load_ghost(struct soul_loading *v, const json_t *heart)
{
	struct soul *s = v->s;
	const char *path = soul_map_path(M_GHOST);
	json_t *m, *also;
	char p[64];

	if (soul_load_map(v, heart, M_GHOST, &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (s->ghost_token != NULL && s->ghost_token[0] == '\0')
		return soul_bad(v, m, "token", soul_key_path(p, sizeof p, path,
		    "token"), "must not be empty");
	if (s->ghost_mode != NULL && strcmp(s->ghost_mode, "token") != 0 &&
	    strcmp(s->ghost_mode, "tool") != 0)
		return soul_bad(v, m, "mode", soul_key_path(p, sizeof p, path,
		    "mode"), "must be 'token' or 'tool'");
	if ((also = json_object_get(m, "also")) == NULL)
		return 0;
	if (!json_is_string(also) && !soul_strlist(also, 0))
		return soul_bad(v, m, "also", soul_key_path(p, sizeof p, path,
		    "also"), "must be a string or a list of strings");
	json_decref(s->ghost_also);
	s->ghost_also = json_is_string(also) ? json_pack("[O]", also) :
	    json_incref(also);
	return 0;
}

static int
load_heart(struct soul_loading *v, const json_t *root)
{
	static const unsigned maps[] = { M_SCHED, M_IDLE, M_PULSE, M_BRK,
	    M_HIST };
	json_t *heart, *m;
	char msg[200], p[64];
	size_t i;

	if (soul_need_map(v, root, "heart", "heart", &heart) == -1)
		return -1;
	if (heart == NULL)
		return 0;
	if (soul_walk(v, heart, M_HEART) == -1)
		return -1;
	if (v->s->timezone != NULL && !clock_tz_valid(v->s->timezone)) {
		snprintf(msg, sizeof msg, "unknown timezone '%.60s' (use an "
		    "IANA name such as Europe/Paris)", v->s->timezone);
		return soul_bad(v, heart, "timezone",
		    soul_key_path(p, sizeof p, "heart", "timezone"), msg);
	}
	for (i = 0; i < sizeof maps / sizeof maps[0]; i++)
		if (soul_load_map(v, heart, maps[i], &m) == -1)
			return -1;
	if (load_ghost(v, heart) == -1)
		return -1;
	soul_unknown_keys(v, heart, M_HEART, "heart");
	return 0;
}

/* llm.price (price.c reads it) and llm.cache of one endpoint. */
static int
load_money(struct soul_loading *v, const json_t *m, const char *path,
    struct soul_llm *e)
{
	static const char *const caches[] = { "off", "5m", "1h", NULL };
	char err[HEART_ERRLEN], p2[64];
	char *cache = NULL;
	int i;

	if (price_parse(json_object_get(m, "price"), &e->price, err) == -1)
		return soul_bad(v, m, "price", soul_key_path(p2, sizeof p2,
		    path, "price"), err);
	soul_key_path(p2, sizeof p2, path, "cache");
	if (soul_str(v, m, "cache", p2, &cache) == -1)
		return -1;
	if (cache == NULL)
		return 0;
	for (i = 0; caches[i] != NULL && strcmp(cache, caches[i]); i++)
		;
	free(cache);
	if (caches[i] == NULL)
		return soul_bad(v, m, "cache", p2, "must be off, 5m or 1h "
		    "(Anthropic's prompt cache and how long it keeps)");
	e->cache = i;	/* LLM_CACHE_OFF, _5M, _1H in that order */
	return 0;
}

/*
 * The keys of one endpoint, llm or llm.triage (map), from the map m
 * into its struct: one parser for both.
 */
static int
load_endpoint(struct soul_loading *v, json_t *m, unsigned map)
{
	struct soul_llm *e = soul_map_base(v->s, map);
	const char *path = soul_map_path(map);
	char p2[64];
	json_t *cmd;

#define P(k) soul_key_path(p2, sizeof p2, path, k)
	if (soul_walk(v, m, map) == -1)
		return -1;
	if (e->context_budget > HEART_BUDGET_MAX)
		return soul_bad(v, m, "context_budget", P("context_budget"),
		    "must be at most 1000000 (tokens)");
	if (e->provider != NULL && strcmp(e->provider, "openai") &&
	    strcmp(e->provider, "anthropic") &&
	    strcmp(e->provider, "command"))
		return soul_bad(v, m, "provider", P("provider"),
		    "must be openai, anthropic or command");
	if ((cmd = json_object_get(m, "command")) != NULL) {
		if (!soul_strlist(cmd, 1))
			return soul_bad(v, m, "command", P("command"), "must "
			    "be a list of strings: the program and its "
			    "arguments");
		e->command = json_incref(cmd);
	}
#undef P
	return load_money(v, m, path, e);
}

static void
endpoint_init(struct soul_llm *e)
{
	memset(e, 0, sizeof *e);
	e->timeout = e->max_tokens = e->context_budget = e->cache = -1;
}

static void
endpoint_free(struct soul_llm *e)
{
	free(e->provider);
	free(e->base_url);
	free(e->model);
	free(e->api_key_env);
	json_decref(e->command);
}

static int
load_llm(struct soul_loading *v, const json_t *root)
{
	struct soul *s = v->s;
	json_t *m, *t;

	if (soul_need_map(v, root, "llm", "llm", &m) == -1)
		return -1;
	if (m == NULL)
		return 0;
	if (load_endpoint(v, m, M_LLM) == -1)
		return -1;
	if (soul_need_map(v, m, "triage", soul_map_path(M_TRIAGE), &t) == -1)
		return -1;
	if (t != NULL) {
		s->triage = xcalloc(1, sizeof *s->triage);
		endpoint_init(s->triage);
		if (load_endpoint(v, t, M_TRIAGE) == -1)
			return -1;
		soul_unknown_keys(v, t, M_TRIAGE, soul_map_path(M_TRIAGE));
	}
	soul_unknown_keys(v, m, M_LLM, soul_map_path(M_LLM));
	return 0;
}
static int
load_top(struct soul_loading *v, const json_t *root)
{
	struct soul *s = v->s;
	json_t *heart = json_object_get(root, "heart");
	const char *key;
	long long budget;
	char m[200], p[64];
	int i;

	if (soul_walk(v, root, M_TOP) == -1)
		return -1;
	if (s->name != NULL && !id_valid(s->name)) {
		snprintf(m, sizeof m, "bad agent id '%.70s' (use 1 to 64 of "
		    "A-Z a-z 0-9 _ . -, not starting with a dot)", s->name);
		return soul_bad(v, root, "name", "name", m);
	}
	if (load_heart(v, root) == -1 || load_llm(v, root) == -1 ||
	    soul_load_tools(v, root) == -1)
		return -1;
	/* a budget counts dollars: without a price there are none */
	for (i = 0; i < 2; i++) {
		key = i == 0 ? "daily_budget" : "monthly_budget";
		budget = i == 0 ? s->daily_budget : s->monthly_budget;
		soul_key_path(p, sizeof p, soul_map_path(M_HEART), key);
		if (budget >= 0 && !s->llm.price.set)
			return soul_bad_at(v, heart, key, p, "needs llm.price: "
			    "heart counts dollars from the model's price per "
			    "million tokens (heart-soul(5)); without one a "
			    "budget would never be reached", 1);
		if (budget >= 0 && s->triage != NULL &&
		    !soul_price(s, 1)->set)
			return soul_bad_at(v, heart, key, p, "needs "
			    "llm.triage.price too: the triage model is not "
			    "llm's, so llm.price is not its price", 1);
	}
	soul_unknown_keys(v, root, M_TOP, "the soul");
	return 0;
}

/* A soul is UTF-8 text: else file:line:column of the first stray byte. */
static int
utf8_text(const char *path, const char *buf, size_t n, char *err)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0, c;
	int line = 1, col = 1;

	for (; i < n; i += c, col++) {
		if ((c = utf8_len(p + i, n - i)) == 0) {
			errf(err, "%s:%d:%d: byte 0x%02x is not UTF-8 (a soul "
			    "is UTF-8 text: convert it, e.g. with iconv -t "
			    "UTF-8)", path, line, col, p[i]);
			return -1;
		}
		if (p[i] == '\n') {
			line++;
			col = 0;
		}
	}
	return 0;
}

/* Why path, a soul or a directory of souls, cannot be read (errno): a
 * link to nowhere is named so. */
void
soul_unread(const char *path, char *err)
{
	char to[256];
	ssize_t n;
	int e = errno;

	if (e == ENOENT && (n = readlink(path, to, sizeof to - 1)) > 0) {
		to[n] = '\0';
		errf(err, "%s: a symbolic link to %s, which is not there",
		    path, to);
	} else
		errf(err, "%s: %s", path, e == EFBIG ? "larger than 1 MiB" :
		    strerror(e));
}

static int
read_file(const char *path, char **bufo, size_t *leno, char *err)
{
	char *buf;
	size_t n;

	if (file_read(path, HEART_SOULMAX, &buf, &n) == -1) {
		soul_unread(path, err);
		return -1;
	}
	if (memchr(buf, '\0', n) != NULL) {
		errf(err, "%s: contains a NUL byte; not a text file", path);
		free(buf);
		return -1;
	}
	if (utf8_text(path, buf, n, err) == -1) {
		free(buf);
		return -1;
	}
	*bufo = buf;
	*leno = n;
	return 0;
}

static int
is_markdown(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot && (!strcmp(dot, ".md") || !strcmp(dot, ".markdown"));
}

/*
 * Split Markdown into frontmatter (*yo, *ylen, starting on line 2) and
 * body.  Without a leading "---" line the whole file is the body.
 */
static int
split_markdown(char *buf, char **yo, size_t *ylen, char **body, char *err,
    const char *file)
{
	char *p, *nl;

	*yo = NULL;
	*ylen = 0;
	*body = buf;
	if (strncmp(buf, "---\n", 4) != 0 && strncmp(buf, "---\r\n", 5))
		return 0;
	*yo = strchr(buf, '\n') + 1;
	for (p = *yo; *p != '\0'; p = strchr(p, '\n') + 1) {
		if ((!strncmp(p, "---", 3) || !strncmp(p, "...", 3)) &&
		    (p[3] == '\n' || p[3] == '\r' || p[3] == '\0')) {
			*ylen = (size_t)(p - *yo);
			/* the closing line may be the last, without \n */
			nl = strchr(p, '\n');
			*body = nl != NULL ? nl + 1 : p + strlen(p);
			return 0;
		}
		if (strchr(p, '\n') == NULL)
			break;
	}
	errf(err, "%s:1:1: frontmatter opened with --- is never closed",
	    file);
	return -1;
}

static char *
trimmed(const char *s)
{
	size_t len;

	while (*s == '\n' || *s == '\r' || *s == ' ' || *s == '\t')
		s++;
	len = strlen(s);
	while (len > 0 && strchr("\n\r \t", s[len - 1]))
		len--;
	return len ? strndup(s, len) : NULL;
}

static int
name_from_path(struct soul *s, char *err)
{
	const char *base = strrchr(s->path, '/');
	char *dot;

	base = base ? base + 1 : s->path;
	s->name = xstrdup(base);
	if ((dot = strrchr(s->name, '.')) != NULL && dot != s->name)
		*dot = '\0';
	if (!id_valid(s->name)) {
		errf(err, "%s:1:1: bad agent id '%.70s' from the file name "
		    "(set name: to 1 to 64 of A-Z a-z 0-9 _ . -)", s->path,
		    s->name);
		return -1;
	}
	return 0;
}

struct soul *
soul_new(const char *path)
{
	struct soul *s = xcalloc(1, sizeof *s);
	int c;

	s->path = xstrdup(path ? path : "-");
	s->daily_cap = s->pulse_interval = s->pulse_misses = -1;
	s->daily_budget = s->monthly_budget = s->dormant_after = -1;
	s->catch_up = -1;
	s->brk_threshold = s->brk_cooldown = s->brk_max_cooldown = -1;
	s->brk_window_fails = s->brk_window = -1;
	s->ghost_ack_max = s->history_keep = -1;
	endpoint_init(&s->llm);
	for (c = 0; c < CH_NCHAMBERS; c++) {
		s->ch[c].every = s->ch[c].daily_cap = -1;
		s->ch[c].seed_tool_cap = -1;
		s->ch[c].gate_timeout = -1;
	}
	return s;
}

static int
parse_soul(struct soul *s, char *buf, size_t len, char *err)
{
	struct yj y;
	struct soul_loading v = { &y, s->path, s, err };
	char *yaml = buf, *body = NULL, *sys = NULL;
	size_t ylen = len;
	int lineoff = 0, r;

	if (is_markdown(s->path)) {
		if (split_markdown(buf, &yaml, &ylen, &body, err,
		    s->path) == -1)
			return -1;
		lineoff = 1;
	}
	if (yaml == NULL) {
		yaml = "";
		ylen = 0;
	}
	if (yj_load(yaml, ylen, lineoff, s->path, &y, err) == -1)
		return -1;
	if (!json_is_object(y.root)) {
		errf(err, "%s:%d:1: a soul must be a mapping of keys",
		    s->path, 1 + lineoff);
		yj_free(&y);
		return -1;
	}
	/* utf8_text has checked the body too */
	sys = body != NULL ? trimmed(body) : NULL;
	if (y.nodoc && sys == NULL) {	/* nothing in it */
		errf(err, "%s: empty: a soul holds its keys (heart: {} for "
		    "every default); see heart-soul(5)", s->path);
		yj_free(&y);
		return -1;
	}
	if ((r = load_top(&v, y.root)) == 0 && sys != NULL) {
		free(s->system);
		s->system = sys;
	} else
		free(sys);
	s->doc = json_incref(y.root);
	yj_free(&y);
	return r;
}

/* Load, check and complete the soul at path. */
int
soul_load(const char *path, struct soul **out, char *err)
{
	struct soul *s;
	size_t len;
	char *buf;

	*out = NULL;
	if (read_file(path, &buf, &len, err) == -1)
		return -1;
	s = soul_new(path);
	if (parse_soul(s, buf, len, err) == -1 ||
	    (s->name == NULL && name_from_path(s, err) == -1)) {
		free(buf);
		soul_free(s);
		return -1;
	}
	free(buf);
	soul_defaults(s);
	*out = s;
	return 0;
}

void
soul_free(struct soul *s)
{
	size_t i;
	int c;

	if (s == NULL)
		return;
	for (c = 0; c < CH_NCHAMBERS; c++) {
		free(s->ch[c].prompt);
		free(s->ch[c].checklist);
		json_decref(s->ch[c].gate);
	}
	for (i = 0; i < s->nwarn; i++)
		free(s->warn[i]);
	free(s->warn);
	free(s->path);
	free(s->name);
	free(s->system);
	free(s->timezone);
	free(s->ghost_token);
	free(s->ghost_mode);
	endpoint_free(&s->llm);
	if (s->triage != NULL)
		endpoint_free(s->triage);
	free(s->triage);
	json_decref(s->ghost_also);
	json_decref(s->tools);
	json_decref(s->mcp);
	json_decref(s->doc);
	free(s);
}
