/*
 * heartint.h - private to libheart: the structs and helpers only the
 * library's own files use, and the pure rules the stores share (and a
 * test driver, t/core-step.c, tests).  It includes heart.h, the public
 * header, and is grouped by source file the same way.  The programs
 * include heart.h alone.
 */
#ifndef HEARTINT_H
#define HEARTINT_H

#include <limits.h>
#include <stdint.h>

#include "heart.h"

/* util.c: FNV-1a, 64 bits (hashes that are kept or shape a schedule) */
#define FNV_BASIS	0xcbf29ce484222325ULL
uint64_t fnv1a(uint64_t, unsigned char);
uint64_t fnv1a_str(uint64_t, const char *);

/* util.c; errf's message is scrubbed of secrets and made one line
 * (secret_scrub, text_line) */
void	 errf(char *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 file_read(const char *, size_t, char **, size_t *);
/*
 * A child's environment: the entries of environ that keep(entry, arg)
 * accepts (all when keep is NULL), without the names of set, then set
 * ("NAME=value" each, NULL-ended).  Free it with env_free.
 */
char	**env_make(int (*)(const char *, const void *), const void *,
	    char *const *);
void	 env_free(char **);

/*
 * secret.c: the secrets heart holds (the model's API key, the Redis and
 * MQTT passwords), registered where they are read; text from outside
 * is scrubbed of them before it is printed or stored: every message by
 * errf, any other text by secret_dup.
 *   secret_add(value)		register (NULL or under 4 bytes: none)
 *   secret_scrub(buf, size)	scrub a string in place, cut to fit
 *   secret_dup(s)		a scrubbed copy, to free
 *   secret_json(j)		every string of j scrubbed in place
 *   secret_held(v)		1 if v is a secret held, in any form
 *   secret_password_var(e)	1 if e ("NAME=value") holds a password,
 *				or is a delivery's setting (HEART_DELIVER_*)
 */
void	 secret_add(const char *);
void	 secret_scrub(char *, size_t);
void	 secret_json(json_t *);
int	 secret_held(const char *);
int	 secret_password_var(const char *);

/* clock.c */
int	 clock_tz_valid(const char *);
const char *clock_tz_local(void);
int	 clock_tz_use(const char *);
time_t	 clock_next_midnight(const char *, time_t);
void	 clock_iso(const char *, time_t, char *, size_t);
int	 clock_parse_utc(const char *, time_t *);
int	 clock_minute_of_day(const char *, time_t);

/* url.c: HOST[:PORT] of a broker's or a store's URL */
int	 url_hostport(const char *, char *, size_t, long long *,
	    const char **, char *, size_t);
/* util.c: the wall clock in ms (round.c: a second to the tick) */
long long wall_ms(void);
/* state.c */
int	 state_dir(char *, size_t, char *);
int	 state_subdir(const char *, char *, size_t, char *);
int	 state_lock(const char *, const char *, int, char *);
void	 state_unlock(int);
int	 state_sync_dir(const char *);
int	 state_replace(const char *, const char *, const char *, size_t,
	    mode_t, char *);
int	 state_read_json(const char *, const char *, json_t **, char *);
int	 state_read_doc(const char *, const char *, json_t **, char *);
int	 state_write_json(const char *, const char *, const json_t *, char *);
/*
 * How a replaced file is kept (heart(7), State).  Every one is whole
 * whenever a process is killed and, but a STATE_CACHE, after a power
 * cut too; they differ in when the new version is also durable.
 */
enum state_keep {
	STATE_SYNC,	/* at once: fdatasync, rename, fsync of the dir */
	STATE_WHOLE,	/* at the next sync of its directory, or the
			 * kernel's writeback */
	STATE_CACHE	/* never synced: rebuilt when it does not read */
};
int	 state_put(const char *, const char *, const char *, size_t,
	    enum state_keep, char *);
int	 state_swap_json(const char *, const char *, const json_t *,
	    enum state_keep, char *);
int	 state_count(const json_t *, const char *, long long *);

/*
 * The documented defaults of the caps and the breaker (heart-soul(5)),
 * for a soul that leaves them out and for an agent whose soul is not
 * at hand (heart-cap take AGENT, heart-breaker check AGENT).
 */
#define DEF_SCHEDULE_CAP	48
#define DEF_IDLE_CAP		12
#define DEF_BRK_THRESHOLD	3
#define DEF_BRK_COOLDOWN	(15 * 60)
#define DEF_BRK_MAX_COOLDOWN	(2 * 3600)
#define DEF_BRK_WINDOW_FAILS	10
#define DEF_BRK_WINDOW		3600
#define BRK_WINDOW_MAX		100	/* breaker.window.failures at most */
#define GATE_TIMEOUT		10	/* a gate program's, s */

/*
 * price.c
 *   price_parse(j, &p, err)	read a price; NULL or null: p.set = 0
 *   price_cost(&p, &u)		what usage u cost at p
 *   price_json(nano)		a cost as dollars in JSON
 */
int	 price_parse(const json_t *, struct price *, char *);
long long price_cost(const struct price *, const struct usage *);
json_t	*price_json(long long);

/* soul.c */
const struct price *soul_price(const struct soul *, int);
int	 soul_triage_same_provider(const struct soul *);

/*
 * soulcheck.c: one load of a soul (soul.c) and the checks of its
 * values: soul_TYPE(v, obj, key, path, ..., &dst) reads obj[key] into
 * dst when it is there; a fault is -1 and "file:line:col: path: what"
 * in v->err.
 */
struct soul_loading {
	const struct yj *y;
	const char *file;
	struct soul *s;
	char	*err;
};
int	 soul_hours_in(const struct hours *, int);
void	 soul_add_warning(struct soul_loading *, int, int, const char *,
	    const char *, const char *);
int	 soul_bad_at(struct soul_loading *, const json_t *, const char *,
	    const char *, const char *, int);
int	 soul_bad(struct soul_loading *, const json_t *, const char *,
	    const char *, const char *);
int	 soul_str(struct soul_loading *, const json_t *, const char *,
	    const char *, char **);
int	 soul_int(struct soul_loading *, const json_t *, const char *,
	    const char *, long long, long long *);
int	 soul_dur(struct soul_loading *, const json_t *, const char *,
	    const char *, long long *);
int	 soul_hours(struct soul_loading *, const json_t *, const char *,
	    const char *, struct hours *);
int	 soul_strlist(const json_t *, int);
int	 soul_need_map(struct soul_loading *, const json_t *, const char *,
	    const char *, json_t **);
int	 soul_weight(struct soul_loading *, const json_t *, const char *,
	    const char *, double *);
int	 soul_days(struct soul_loading *, const json_t *, const char *,
	    const char *, long long *);

/* soulkey.c: the mappings of a soul whose keys its table holds */
enum soul_map {
	M_TOP = 1 << 0,		/* the soul itself: struct soul */
	M_HEART = 1 << 1,	/* heart: struct soul */
	M_SCHED = 1 << 2,	/* heart.schedule: struct chamber_conf */
	M_IDLE = 1 << 3,	/* heart.idle: struct chamber_conf */
	M_ADAPT = 1 << 4,	/* heart.schedule.adaptive: adapt_conf */
	M_LEVELS = 1 << 5,	/* its levels: struct adapt_conf */
	M_PULSE = 1 << 6,	/* heart.pulse: struct soul */
	M_BRK = 1 << 7,		/* heart.breaker: struct soul */
	M_HIST = 1 << 8,	/* heart.history: struct soul */
	M_GHOST = 1 << 9,	/* heart.ghost: struct soul */
	M_LLM = 1 << 10,	/* llm: struct soul_llm */
	M_TRIAGE = 1 << 11,	/* llm.triage: struct soul_llm */
	M_TOOL = 1 << 12,	/* an item of tools (its own code) */
	M_SERVER = 1 << 13	/* a server of mcp_servers (its own code) */
};
#define M_CH	(M_SCHED | M_IDLE)
#define M_EP	(M_LLM | M_TRIAGE)
const char *soul_map_path(unsigned);
void	*soul_map_base(struct soul *, unsigned);
const char *soul_key_path(char *, size_t, const char *, const char *);
int	 soul_known(unsigned, const char *);
void	 soul_unknown_keys(struct soul_loading *, const json_t *, unsigned,
	    const char *);
int	 soul_walk(struct soul_loading *, const json_t *, unsigned);
int	 soul_load_map(struct soul_loading *, const json_t *, unsigned,
	    json_t **);
json_t	*soul_keys_json(unsigned, const void *);

/* soultool.c: a soul's tools: and mcp_servers: */
int	 soul_tool_name_ok(const char *);
int	 soul_load_tools(struct soul_loading *, const json_t *);
int	 soul_load_mcp(struct soul_loading *, const json_t *);

/* cap.c */
long long cap_agent_limit(const struct caps *);
long long cap_cost(const struct cap_view *);
int	 cap_why(const struct cap_view *, enum chamber, time_t, char *,
	    size_t);

/* store.c */
int	 store_lock(const char *, const char *, int, char *);
void	 store_unlock(int);
int	 store_read_json(const char *, const char *, json_t **, char *);
int	 store_put_json(const char *, const char *, const json_t *,
	    enum state_keep, char *);

/*
 * status.c: the statuses of a wake result and what ghost mode does with
 * each (roll back, commit, an error): one table for heart-wake, which
 * names statuses only through it, and heart-ghost.
 */
enum wake_status {
	ST_OK, ST_IDLE, ST_CAPPED, ST_OPEN, ST_NOT_DUE, ST_QUIET,
	ST_NOT_IDLE, ST_BUSY, ST_EMPTY, ST_TOOL_CAP, ST_DRY_RUN, ST_ERROR,
	ST_GATED,
	ST_THROTTLED,
	ST_PAUSED,
	ST_NSTATUS
};

const char *status_name(enum wake_status);
enum ghost_kind status_kind(enum wake_status);
int	 status_ran(enum wake_status);
int	 status_find(const char *, enum wake_status *);

/* ghost.c */
#define GHOST_RETRY_FOR	(24 * 3600)	/* ghost_opts.retry_for's 0 */
#define GHOST_HOLD	(10 * 60)	/* a failing answer holds up the
					   later ones for this long */
void	 ghost_hash(const char *, char *);
void	 ghost_via(const struct ghost_opts *, char *);

/* outbox.c */
struct outbox_entry {
	char	 wake_id[HEART_IDMAX + 1];
	char	 at[32];
	json_t	*doc;		/* the file; NULL: it does not read (err) */
	char	 err[HEART_ERRLEN];
	int	 due;		/* given again: tried now */
	int	 dirty;		/* to be written back */
	int	 gone;		/* delivered, not wanted, or dead */
};

long long outbox_backoff(long long);
int	 outbox_put(const char *, const char *, const char *, const json_t *,
	    char *);
int	 outbox_drop(const char *, const char *, const char *, char *);
void	 outbox_tidy(const char *);
int	 outbox_cmp(const void *, const void *);
int	 outbox_load(const char *, const char *, struct outbox_entry **,
	    size_t *, char *);
void	 outbox_free(struct outbox_entry *, size_t);

/* http.c: one POST through libcurl, loaded only when needed */
struct http_req {
	const char *url;
	const char *const *headers;	/* NULL-terminated */
	const char *body;
	long	 timeout;		/* s */
	size_t	 maxbytes;
};

struct http_resp {
	long	 status;
	char	*body;
	size_t	 len;
	char	 retry_after[64];	/* the header's value, or "" */
};

/* A Retry-After is honoured for a day at most. */
#define HTTP_HOLDMAX	86400

int	 http_preload(char *);
int	 http_post(const struct http_req *, struct http_resp *, char *);
int	 http_retry_after(const char *, time_t, time_t *);

/* checklist.c: an item due, as checklist_fit weighs it for a prompt */
struct checklist_item {
	const char *line;
	size_t	 cost;		/* its bytes in the request */
	int	 every;		/* it has its own interval */
	time_t	 carried;	/* when last carried; 0: never */
	int	 keep;		/* out: the prompt carries it */
};

size_t	 checklist_fit(struct checklist_item *, size_t, size_t);

/* llm.c */
#define LLM_TOKENS_MAX	(1LL << 50)	/* a usage count read, at most */
/* llm.cache: Anthropic's prompt cache */
enum { LLM_CACHE_OFF, LLM_CACHE_5M, LLM_CACHE_1H };

struct llm_conf {
	char	 provider[16];
	char	 base_url[1024];
	char	 model[256];
	char	 key_env[128];
	long long timeout;
	long long max_tokens;
	long long budget;		/* llm.context_budget, tokens */
	int	 cache;			/* llm.cache: LLM_CACHE_* */
	const char *soul;		/* the soul's path, for messages */
	const json_t *command;		/* command provider: the soul's argv */
	char	 dir[4096];		/* where the command runs */
};

/* what a failure asks of a person (llm_reply.fail) */
enum {
	LLM_TEMP = 1,	/* nothing: it may pass (5xx, 429, timeout...) */
	LLM_CONFIG,	/* fix the key, the model or the URL (401, 403,
			   404, a 400 that names no such model) */
	LLM_QUOTA	/* add credit: the account's quota is used up */
};

int	 llm_conf(const struct soul *, struct llm_conf *, char *);
int	 llm_triage_conf(const struct soul *, struct llm_conf *, char *);
json_t	*llm_dry(const struct llm_conf *, json_t *);
int	 llm_send(const struct llm_conf *, json_t *, time_t,
	    struct llm_reply *, char *);
int	 llm_key_warning(const struct llm_conf *, char *, size_t);

/* llmprovider.c: a provider's request and reply, by its row */
struct llm_provider {
	const char *name;
	const char *url;	/* default base URL; NULL: not HTTP */
	const char *path;	/* appended to the base URL */
	const char *key_env;	/* default key variable */
	json_t	*(*body)(const struct llm_conf *, json_t *, json_t *,
		    const char *);
	void	 (*headers)(const char *, char [][512], size_t *);
	int	 (*parse)(json_t *, struct llm_reply *, char *);
};
const struct llm_provider *llm_provider_find(const char *);
void	 llm_provider_secrets(void);
int	 llm_reply_read(const struct llm_provider *, const char *, size_t,
	    struct llm_reply *, char *);
json_t	*llm_body(const struct llm_conf *, json_t *, json_t *,
	    const char *);

/* llmfail.c: an HTTP answer outside 2xx, its class (LLM_*) and why */
int	 llm_http_fail(const struct llm_conf *, const char *, long,
	    const char *, char *);

/* llmfit.c: the bytes of a message (or any value) in a request; msgs as sent
 * within a budget of tokens: system before h0, history [h0, h1), the
 * wake's prompt at h1 */
size_t	 llm_cost(const json_t *);
json_t	*llm_fit(const json_t *, size_t, size_t, long long);
/* the bytes a prompt's checklist items may take, beside the rest */
size_t	 llm_items_room(size_t, long long);

/* slot.c: the ladder of intervals, the agent's offset, its slots */
long long slot_offset(const char *, long long);
long long slot_rung(long long, long long, long long, double);
long long slot_rung_offset(const struct soul *, long long);
time_t	 slot_from(time_t, long long, long long);
time_t	 slot_before(time_t, long long, long long);

/*
 * adapt.c: the adaptive schedule, an activity estimator kept in
 * agents/ID/activity.json (opaque; NULL is an agent with no history).
 *   adapt_load(dir, &a, err)	read it; *a = NULL when there is none
 *   adapt_interval(s, a, t, &fig)	the interval in force at t, and why
 *   adapt_next(s, a, last, first, now, &fig)  when the chamber is next
 *	due, its last wake being at last (0: none; first sight at first);
 *	a time <= now means due now
 *   adapt_record(dir, s, &a, status, level, now, err)	add one wake's
 *	outcome ("ok" or "idle", level "LOW" "MEDIUM" "HIGH" or NULL)
 *	and write the file; the caller holds wake.lock
 *   adapt_json(s, &fig)	the figures, for --explain and the result
 */
struct adapt;

enum { ADAPT_BUSY_HERE = 1, ADAPT_BUSY_ELSEWHERE };

struct adapt_fig {
	int	 how;		/* hour of the week, 0: Monday 00:00 */
	time_t	 hour;		/* when that hour began */
	long long real;		/* real answers in it over the window */
	long long ghosts[4];	/* ghosts: plain, LOW, MEDIUM, HIGH */
	double	 gweight;	/* the ghosts, weighted */
	long long dreal;	/* the same, for the same hour of the day */
	double	 dgweight;	/* on the other days of the week */
	long long run;		/* ghosts in a row since the last real one */
	double	 runweight;
	int	 busy;		/* ADAPT_BUSY_HERE, ADAPT_BUSY_ELSEWHERE,
				   or 0 */
	int	 unseen;	/* not seen in an earlier week */
	int	 turned;	/* real answers at this hour on another
				   day, quiet at it before, since then */
	double	 evidence;	/* else the doublings the ghosts allow */
	double	 exponent;	/* interval = schedule.interval * 2^exponent */
	long long interval;	/* the rung in force */
};

int	 adapt_load(const char *, struct adapt **, char *);
void	 adapt_free(struct adapt *);
long long adapt_interval(const struct soul *, struct adapt *, time_t,
	    struct adapt_fig *);
time_t	 adapt_next(const struct soul *, struct adapt *, time_t, time_t,
	    time_t, struct adapt_fig *);
int	 adapt_record(const char *, const struct soul *, struct adapt **,
	    const char *, const char *, time_t, char *);
json_t	*adapt_json(const struct soul *, const struct adapt_fig *);

/* wake.c */
int	 wake_save(const char *, const char *, const struct wake_state *,
	    int, enum state_keep, time_t, char *);
void	 wake_verdicts(const struct soul *, const char *,
	    struct wake_state *, enum chamber, time_t, int, struct gate [3]);
int	 wake_carry(const char *, struct wake_state *, enum chamber,
	    const char *, time_t, char *);
time_t	 wake_next(const struct soul *, const char *, struct wake_state *,
	    enum chamber, time_t, time_t, int);
time_t	 wake_carried(const char *, struct wake_state *, enum chamber,
	    const char *);

/* tool.c */
struct tool_proc {
	char	*const *argv;
	const char *dir;	/* working directory, or NULL */
	char	*const *env;	/* NULL: heart-wake's own */
	const char *in;		/* standard input */
	size_t	 inlen;
	long long timeout;	/* s */
	size_t	 maxout;	/* stdout kept; the rest is read and dropped */
	int	 inherit;	/* stdout and stderr are the caller's */
};

struct tool_out {
	char	*out;		/* stdout, at most maxout bytes, NUL-ended */
	size_t	 len;
	int	 cut;		/* stdout had more than maxout */
	char	 errout[1024];	/* the start of stderr */
	int	 status;	/* as from wait(2) */
	int	 timedout;	/* killed at the timeout */
	long long ms;		/* wall time */
};

/* a child started by tool_spawn or tool_fork: its group's leader, the
 * group's sentinel (-1: none), and our ends of its standard input,
 * output and error (non-blocking; -1: none) */
struct tool_child {
	int	 pid;
	int	 sentinel;
	int	 in, out, err;
};

#define TOOL_ENVMORE	8	/* names tool_env adds for a caller */
#define TOOL_LIVEMAX	1100	/* children of one process at once: a
				   round's workers, a wake's servers */
char	**tool_env(const struct tool_ctx *, const char *, char *const *);
int	 tool_spawn(const struct tool_proc *, struct tool_child *, char *);
int	 tool_fork(struct tool_child *, char *);
int	 tool_gone(int);
void	 tool_end(struct tool_child *, size_t, long long, int *);
int	 tool_exec(const struct tool_proc *, struct tool_out *, char *);
void	 tool_out_free(struct tool_out *);
int	 tool_status(const char *, const struct tool_proc *,
	    const struct tool_out *, char *);
json_t	*tool_offer(const json_t *);
json_t	*tool_args(const json_t *, char *);
int	 tool_call(const struct soul *, const struct tool_ctx *,
	    const json_t *, char **, char *);

/*
 * mcp.c
 *   mcp_offer(m), mcp_warnings(m)	the tools offered (OpenAI form);
 *	what opening found worth a word (strings)
 *   mcp_has(m, name), mcp_call(m, call, &text, err)	as tool_call
 *   mcp_plan(s)	--explain and --dry-run
 */
#define MCP_SEP		"__"
#define MCP_NAMEMAX	32		/* a server's name */
#define MCP_SERVERMAX	16		/* servers in a soul */
#define MCP_LINEMAX	(4 * 1024 * 1024)	/* one message */
#define MCP_READMAX	(16 * 1024 * 1024)	/* read for one answer */
#define MCP_TOOLMAX	1024		/* tools a server lists */
#define MCP_PAGEMAX	64		/* pages of tools/list */

const json_t *mcp_offer(const struct mcp *);
const json_t *mcp_warnings(const struct mcp *);
int	 mcp_has(struct mcp *, const char *);
int	 mcp_call(struct mcp *, const json_t *, char **, char *);
json_t	*mcp_plan(const struct soul *);

/*
 * gate.c: a chamber's gate program (heart-soul(5), gate), run after
 * the cheap gates and before the breaker and the cap, in the soul's
 * directory, through tool.c, with the tools' environment and
 *   HEART_LAST_WAKE	the chamber's last admitted wake, epoch seconds
 *			(0: never), and HEART_LAST_WAKE_AT, in UTC ("")
 *   HEART_GATE_DIR	agents/ID/gate/, the agent's scratch directory
 * gate_run(s, c, ctx, dir, last, &g, err): GATE_WAKE (g.text: its
 * output, at most GATE_MAXOUT bytes, for the prompt), GATE_SKIP (g.text:
 * its first line), or GATE_FAIL (err: why, a tool failure).
 */
#define GATE_MAXOUT	(4 * 1024)
enum { GATE_WAKE, GATE_SKIP, GATE_FAIL };

struct gate_out {
	char	*text;		/* to free */
	int	 exit;		/* its exit status, or -1 */
	long long ms;
};

int	 gate_run(const struct soul *, enum chamber, const struct tool_ctx *,
	    const char *, time_t, struct gate_out *, char *);

/* triage.c: the skip/run decision (the heartbeat tool) and the triage
 * model that asks it alone (llm.triage) */
struct triage {
	char	*text;		/* its reply, to judge (idle_judge), */
	json_t	*calls;		/* or NULL */
	json_t	*decision;	/* as judged: {"action"?, "reason"?}, or NULL */
	struct usage u;		/* its tokens, apart from the main model's */
	int	 fail;		/* failed: LLM_* */
	long	 status;	/* its HTTP status, 0: none */
	time_t	 hold;
};

json_t	*triage_hb_tool(void);
json_t	*triage_body(const struct llm_conf *, const char *, const char *);
struct ask;
int	 triage_ask(struct ask *, const char *, const char *, time_t,
	    struct triage *, char *);
json_t	*triage_json(const struct llm_conf *, const struct triage *,
	    long long, const char *);
void	 triage_free(struct triage *);
/* a wake's triage, asked its prompt: 1 to go on to the main model */
struct wake;
int	 triage_wake(struct wake *, const char *, int *, char *);

/* bucket.c */
int	 bucket_endpoint(const struct llm_conf *, char *, size_t, char *);
int	 bucket_give(const char *, time_t, time_t, char *);
int	 bucket_gate(const char *, const char *, time_t *, time_t, time_t *,
	    char *, size_t, char *);
int	 bucket_gate_ok(const struct rate_view *, time_t, char *, size_t);
int	 bucket_wait(const char *, long long, char *);
int	 bucket_send(const char *, time_t, long long, char *);
void	 bucket_after(const char *, long, time_t, long long, time_t);

/*
 * ask.c: one request to a model, every one heart sends: its turn in
 * the endpoint's bucket, the request, the bucket told, the usage read
 * within what the request could produce (USAGE_SLACK tokens more than
 * its bytes, or than max_tokens or the reply's bytes), and its cost.
 */
#define USAGE_SLACK	4096	/* tokens a provider may add on its side */

struct ask {
	const struct llm_conf *lc;	/* the endpoint's settings */
	const char *ep;		/* its bucket (bucket.c), or "" */
	time_t	 taken;		/* the wake's first request, taken by
				   bucket_gate then; 0: wait for a turn */
	const struct price *price;	/* NULL or unset: no price */
	struct usage u;		/* its tokens, as counted */
	long long cost;		/* and their cost, nano$; -1: no price */
	char	 note[384];	/* what of the usage was mended, or "" */
};

int	 ask_send(struct ask *, json_t *, time_t, struct llm_reply *,
	    char *);
void	 ask_usage_bound(struct usage *, long long, long long, long long,
	    char *, size_t);

/* run.c: one wake, its orchestration; the conversation is talk.c's */
/* The wake's outcome as its result says it, set with the result by
 * outcome.c's outcome_status, outcome_reply (the answer, its idle
 * level and the status they decide) and outcome_warn (one more
 * warning), and read from here: nothing reads the result back. */
struct outcome {
	enum wake_status status;	/* ST_ERROR until decided */
	char	 reason[1024];		/* "" when none */
	const char *idle_level;		/* idle.c's, or NULL */
	char	 warning[2048];		/* the warnings, "; " between, or "" */
};

/* One wake of one agent, from its lock to its result. */
struct wake {
	const struct soul *s;
	const struct run_opts *o;
	time_t	 now;
	char	 dir[4096];
	char	 id[40];
	struct wake_state w;
	struct wake_state prev;		/* w as it was before this wake */
	struct gate g;
	struct brk_conf bc;
	struct brk_view bv;
	struct cap_view cv;
	json_t	*events;
	json_t	*res;
	json_t	*said;			/* res's messages */
	struct outcome out;		/* what res says of the outcome */
	long long t0;
	int	 loaded;		/* w was read */
	char	*gate_out;		/* the gate program's output, or NULL */
	struct llm_conf tc;		/* the triage endpoint, */
	int	 triage;		/* when the soul names one */
	char	*found;			/* what the prompt says the triage
					   found, or NULL */
	int	 tfail;			/* the triage failed: LLM_* */
	struct usage tu;		/* the triage's tokens */
	long long tcost;		/* and their cost, nano$; -1: none */
	time_t	 thold;
	char	 terr[HEART_ERRLEN];
	char	 ep[HEART_IDMAX + 1];	/* its endpoint (bucket.c), or "" */
	char	 tep[HEART_IDMAX + 1];	/* the triage's, or "" */
	time_t	 taken;			/* when its first request was admitted */
};

void	 run_id(time_t, char *, size_t);
/* outcome.c: the wake's outcome, into the wake and its result */
void	 outcome_set(struct wake *, const char *, const char *);
void	 outcome_status(struct wake *, enum wake_status);
void	 outcome_reason(struct wake *, const char *);
void	 outcome_reply(struct wake *, enum wake_status, const char *,
	    const char *);
void	 outcome_warn(struct wake *, const char *);
/* run.c */
/* from when the breaker and the cap both admit a wake of a chamber */
time_t	 run_open_at(const struct wake *, enum chamber);

/* talk.c: an admitted wake's conversation with the model and its tools */
struct talk {
	json_t	*msgs;		/* the request's messages, growing */
	size_t	 h0, h1;	/* the history in msgs: [h0, h1) */
	size_t	 bytes;		/* of the result's messages */
	int	 overflow;	/* they would pass WAKE_MSGMAX */
	int	 empty;		/* the reply said nothing (IDLE_EMPTY) */
	int	 fail;		/* the model's failure: LLM_* */
	time_t	 hold;		/* and how long it asks to be let be */
	json_t	*offer;		/* the tools offered, or NULL */
	const char *force;	/* the tool the next reply must call */
	const char *hide;	/* the key's variable, kept from tools */
	enum chamber c;
	long long ptok, ctok;
	long long cached, cwrite;	/* of ptok: read from, written to a
					   provider's cache */
	long long cost;		/* its requests', nano$; -1: no price */
	int	 calls, failed;	/* tool calls run, and failed */
	struct mcp *mcp;	/* the MCP servers started, or NULL */
	int	 servers, sfailed;	/* MCP servers started, and failed */
	int	 capped;	/* the model asked for one past the cap */
	int	 ids;		/* call ids given by heart */
	char	 toolerr[HEART_ERRLEN];	/* the first tool failure */
};

char	*talk_prompt(struct wake *, enum chamber, int);
void	 talk_fit(struct wake *, const struct llm_conf *);
int	 talk_begin(struct wake *, struct talk *, char *);
json_t	*talk_request(const struct llm_conf *, const struct talk *);
void	 talk_warn_key(struct wake *, const struct llm_conf *);
int	 talk_run(struct wake *, const struct llm_conf *, struct talk *,
	    char *);
long long talk_spent(struct wake *, const struct talk *, struct usage *);
void	 talk_end(struct talk *);

/* pulse.c */
#define PULSE_TEXTMAX	121	/* a reason in a pulse: 120 bytes at most */
int	 pulse_changed(const struct pulse_state *, const struct pulse_state *);
int	 pulse_quiet(const char *, const struct caps *, const struct hours *,
	    time_t);
int	 pulse_format(char *, size_t, const char *, unsigned long long,
	    long long, const struct timespec *, const char *,
	    const struct pulse_state *);

/* topics, status messages, the birth sequence, the rival rule */
struct pulse_node {		/* one publishing process and connection */
	const char *id;		/* the client id */
	const char *host;
	long	 pid;
	time_t	 since;		/* when the process started */
	long long bdseq;	/* birth sequence of this connection */
	long long agents;	/* -1: do not say */
};

struct pulse_agentinfo {
	const char *id;
	long long interval;	/* seconds */
	long long misses;
};

int	 pulse_prefix_valid(const char *);
int	 pulse_topic(char *, size_t, const char *, const char *,
	    const char *);
char	*pulse_status(const struct pulse_node *,
	    const struct pulse_agentinfo *, const char *, const char *,
	    time_t);
int	 pulse_bdseq_next(const char *, long long, long long *, char *);
int	 pulse_bdseq_save(const char *, long long, char *);
void	 pulse_node_name(const char *, long, char *, size_t);
char	*pulse_acl(const char *, const char *, const char *const *, size_t);
int	 pulse_rival(const struct pulse_node *, const char *, int);

/*
 * pubagents.c: the agents of one publisher and their schedule (a binary
 * min-heap on `due'), loaded from their souls; pubstate.c keeps the
 * state their pulses carry
 */
#define PS_ALL	(PULSE_BREAKER | PULSE_WAKE | PULSE_CAP)

struct pubagent {
	char	 id[HEART_IDMAX + 1];
	char	*zone;
	char	*path;		/* the soul file */
	struct caps caps;
	struct hours active[CH_NCHAMBERS];
	long long quiet_min;	/* the minute `st.quiet' was found for */
	long long interval;	/* seconds */
	long long misses;
	long long due;		/* monotonic ms of the next slot */
	unsigned long long seq;
	size_t	 hpos;
	int	 wd;		/* inotify watch; -1: polled */
	unsigned dirty;		/* PS_* parts to read again */
	unsigned reported;	/* PS_* parts whose failure was told */
	int	 born;		/* birth sent on this connection */
	int	 queued;	/* in the changed queue */
	int	 keep;		/* reload: still wanted */
	int	 rewatch;	/* its directory went away: watch again */
	size_t	 ord;		/* reload: order of its soul */
	struct pulse_state st;
};

struct pubagents {
	struct pubagent **a;	/* sorted by id */
	size_t	 n;
	struct pubagent **heap;
	size_t	 hn;		/* agents in the heap (== n between calls) */
	struct pubagent **wdmap;
	size_t	 nwd;
	int	 ifd;
	int	 watchfull;	/* watch limit reported */
	char	**warn;
	size_t	 nwarn, warnhead;
	struct pubagent **gone, **chg;
	size_t	 ngone, nchg;
	size_t	 cursor;	/* births */
	long long interval;	/* override, s; -1: the souls' */
	size_t	 nbad;		/* souls that did not load, last load */
};

struct pubagents *pubagents_new(long long, int);
void	 pubagents_free(struct pubagents *);
size_t	 pubagents_size(const struct pubagents *);
void	 pubagents_warnf(struct pubagents *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
char	*pubagents_warning(struct pubagents *);
long long pubagents_next_due(const struct pubagents *);
void	 pubagents_rebase(struct pubagents *, long long);
struct pubagent *pubagents_due(struct pubagents *, long long, long long *);
void	 pubagent_info(const struct pubagent *,
	    struct pulse_agentinfo *);
void	 pubagents_unborn_all(struct pubagents *);
struct pubagent *pubagents_unborn(struct pubagents *);
int	 pubagents_unborn_pending(struct pubagents *);
struct pubagent *pubagents_gone(struct pubagents *);
void	 pubagent_free(struct pubagent *);
long long pubagents_load(struct pubagents *, char *const *, size_t,
	    const char *, long long, char *);

/* pubstate.c: the state the publisher's pulses carry, kept fresh */
void	 pubstate_start(struct pubagents *, struct pubagent *, int);
void	 pubstate_stop(struct pubagents *, struct pubagent *);
int	 pubstate_fd(const struct pubagents *);
void	 pubstate_read(struct pubagents *, time_t);
struct pubagent *pubstate_changed(struct pubagents *);
int	 pubstate_pulse(struct pubagents *, struct pubagent *, int,
	    const char *, const char *, long long, const struct timespec *,
	    char *, size_t, char *, size_t);

/* mqtt.c: one broker connection, our poll loop, our reconnect policy
   (only heart-pulse links it, and libmosquitto with it) */
enum { MQTT_DOWN, MQTT_CONNECTING, MQTT_UP };
#define MQTT_EV_UP	1	/* connected (CONNACK accepted) */
#define MQTT_EV_DOWN	2	/* a working connection went */
#define MQTT_EV_FAIL	4	/* an attempt failed */
#define MQTT_EV_DENIED	8	/* it was refused our credentials */
#define MQTT_EV_TAKEN	16	/* another client took our client id */

struct mqtt_url {
	int	 tls;
	char	 host[256];
	int	 port;
};

struct mqtt_conf {
	struct mqtt_url url;
	const char *client_id;	/* NULL: one is made up */
	const char *username;
	const char *password;
	const char *cafile;
	const char *certfile;
	const char *keyfile;
	int	 keepalive;	/* seconds */
	long long backoff_max;	/* ms */
};

struct mqtt;

int	 mqtt_url_parse(const char *, struct mqtt_url *, char *);
int	 mqtt_password(const char *, char **, char *);
struct mqtt *mqtt_new(const struct mqtt_conf *, char *);
void	 mqtt_free(struct mqtt *);
void	 mqtt_on_message(struct mqtt *, void (*)(void *, const char *,
	    const void *, int, int), void *);
void	 mqtt_subscribe(struct mqtt *, const char *);
int	 mqtt_will(struct mqtt *, const char *, const char *, int, char *);
void	 mqtt_dial(struct mqtt *, long long);
int	 mqtt_state(const struct mqtt *);
long long mqtt_retry_at(const struct mqtt *);
int	 mqtt_fd(const struct mqtt *);
short	 mqtt_events(const struct mqtt *);
int	 mqtt_busy(const struct mqtt *);
const char *mqtt_why(const struct mqtt *);
int	 mqtt_v5(const struct mqtt *);
int	 mqtt_unacked(const struct mqtt *);
int	 mqtt_window(const struct mqtt *);
unsigned mqtt_io(struct mqtt *, short, long long);
int	 mqtt_publish(struct mqtt *, const char *, const void *, int, int,
	    int, int);
int	 mqtt_refused(struct mqtt *, char *, size_t, char *, size_t);
void	 mqtt_cork(struct mqtt *, int);
void	 mqtt_disconnect(struct mqtt *);

/* sdnotify.c: READY=1 and WATCHDOG=1 to $NOTIFY_SOCKET */
int	 sdnotify_send(const char *, char *);
long long sdnotify_watchdog(void);

/* watchmap.c: the watcher's liveness map, and its changes */
struct watchmap;

struct watchmap *watchmap_new(const char *, long long, long long);
void	 watchmap_free(struct watchmap *);
void	 watchmap_message(struct watchmap *, const char *, const char *, int,
	    int, long long, time_t, json_t *);
void	 watchmap_tick(struct watchmap *, long long, time_t, json_t *);
void	 watchmap_link(struct watchmap *, int, const char *, long long, time_t,
	    json_t *);
int	 watchmap_settled(const struct watchmap *, long long, long long);
json_t	*watchmap_snapshot(struct watchmap *, long long, size_t *);

/*
 * broker.c: the broker connection of heart-pulse's two ends: its
 * defaults, name, credentials, and what its events say (messages to
 * the hooks; a failure retrying cannot mend kept in fatal and why).
 *   broker_init(b, o, h, watcher)	the name on the broker, no I/O
 *   broker_open(b, err)	the connection, not yet dialled: 0, or
 *	HX_USAGE or HX_CONFIG with err
 *   broker_report(b, ev)	mqtt_io's events said
 *   broker_timeout(b, now, until)	a poll's timeout, ms
 *   broker_flush(b, deadline, acked)	what is queued, written
 *   broker_failed(b, err)	b->why into err: -1
 */
struct broker {
	const struct pulse_opts *o;
	struct pulse_hooks h;
	struct mqtt *q;
	struct mqtt_conf mc;
	const char *url;	/* the broker */
	const char *prefix;
	char	 host[256];
	char	 client_id[HEART_IDMAX + 1];
	int	 watcher;
	int	 said_down;	/* an outage was said; quiet until it ends */
	int	 connects;
	int	 fatal;
	char	 why[HEART_ERRLEN];
};

void	 broker_init(struct broker *, const struct pulse_opts *,
	    const struct pulse_hooks *, int);
int	 broker_prefix_check(const struct broker *, char *);
int	 broker_open(struct broker *, char *);
void	 broker_close(struct broker *);
void	 broker_say(struct broker *, const char *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	 broker_fatal(struct broker *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 broker_report(struct broker *, unsigned);
int	 broker_timeout(const struct broker *, long long, long long);
void	 broker_flush(struct broker *, long long, int);
int	 broker_failed(const struct broker *, char *);

/* soulcache.c: what a round learnt of each soul of a directory */
struct soulcache;
struct stat;
struct soulcache *soulcache_open(const char *, char *);
void	 soulcache_free(struct soulcache *);
const char *soulcache_get(struct soulcache *, const char *,
	    const struct stat *, time_t);
void	 soulcache_put(struct soulcache *, const char *, const struct stat *,
	    time_t, const json_t *);
void	 soulcache_drop(struct soulcache *, const char *);
time_t	 soulcache_deferred(struct soulcache *, const char *);
void	 soulcache_defer(struct soulcache *, const char *, int, time_t);

/* soulcache.c, soulcachesave.c: the cache's insides */
#define SOULCACHE_NID	7	/* a file's identity: dev, ino, size, times */
/*
 * The version written.  A version 2 cache still reads, its skips
 * dropped and their souls read again: before 3, a soul without a
 * timezone was judged in the zone of the soul before it in the round.
 * Version 3 had no GEN and no delta; it reads, and is written again.
 */
#define SOULCACHE_VERSION	4

struct soulcache_ent {
	char	*name;		/* the file's name in the directory */
	long long id[SOULCACHE_NID];	/* soulcache_identity's */
	long long until;	/* no gate passes before; with line */
	long long deferred;	/* since; 0: not */
	char	*line;		/* the kept skip; NULL: none */
	int	 own;		/* 1: line is malloc'd, 2: name too */
	int	 seen;		/* met in this round */
	int	 chg;		/* changed since it was read */
};

struct soulcache {
	char	 dir[4096];	/* STATE/rounds */
	char	 name[40];	/* HASH.jsonl */
	char	 real[PATH_MAX];	/* the souls' directory */
	char	*buf;		/* the base as read: names and lines */
	char	*dbuf;		/* the delta as read */
	struct soulcache_ent *e;
	size_t	 n, cap;
	size_t	*tab;		/* open addressing: index + 1; 0 empty */
	size_t	 tcap;
	size_t	 blen;		/* the base's length */
	long long gen;		/* the base's GEN; 0: none read */
	long long bid[SOULCACHE_NID];	/* the base's, before it was read */
	int	 dirty;
	int	 whole;		/* write the base again at the next save */
};

void	 soulcache_identity(const struct stat *, long long *);
void	 soulcache_index(struct soulcache *, size_t);
void	 soulcache_path(const struct soulcache *, const char *, char *,
	    size_t);
void	 soulcache_line_drop(struct soulcache_ent *);
int	 soulcache_save(struct soulcache *, int, char *);

/*
 * yj.c: YAML read into jansson JSON, with the source position of every
 * key and value kept beside the tree so that validation can say
 * file:line:column.
 */
struct yj_pos {
	const json_t *parent;	/* object or array holding the item */
	char	*key;		/* object key, or NULL for array items */
	size_t	 index;
	int	 kline, kcol;	/* where the key is */
	int	 vline, vcol;	/* where the value starts */
};

struct yj {
	json_t	*root;
	struct yj_pos *pos;
	size_t	 npos;
	int	 nodoc;	/* no document (blank, or comments): root is {} */
};

int	yj_load(const char *, size_t, int, const char *, struct yj *,
	    char *);
void	yj_free(struct yj *);
const struct yj_pos *yj_key(const struct yj *, const json_t *, const char *);
const struct yj_pos *yj_item(const struct yj *, const json_t *, size_t);

/*
 * The stores: what a server store (redisstore.c) plugs into store.c, and
 * the raw breaker it hands back to brk.c.  The file store is in store.c
 * itself: flock(2) around read-decide-write.
 */

/*
 * A wake lock held in a server store is leased: a holder killed before
 * it lets go blocks its agent for at most this many seconds.  Longer
 * than any wake: the model's timeout (60s by default) times its rounds
 * of tool calls.
 */
#define STORE_WAKE_LEASE	900

/* The breaker as stored, whichever the store (brk.c owns the rules). */
struct brk {
	enum brk_state state;
	long long llm_fails, tool_fails;
	long long cooldown;	/* open, half_open: the current one, s */
	long long base;		/* the base cooldown last written */
	long long threshold, max;	/* and the threshold, max cooldown */
	long long wfails, wsecs;	/* and the window: 0 none kept;
					   wfails -1: the window off */
	time_t	 failed[BRK_WINDOW_MAX];	/* the last failures' times,
						   oldest first */
	int	 nfailed;
	time_t	 until;		/* open: end of the cooldown */
	time_t	 probe_at;	/* half_open: probe granted; 0 if none */
	long long probe_pid;	/* the process it was granted to */
	char	 probe_host[64];	/* and its host */
	char	 trigger[8];
	char	 reason[256];
	int	 exists;	/* it was stored before */
};

enum cap_op { CAP_TAKE, CAP_RECORD, CAP_PEEK, CAP_RESET };
enum brk_op { BRK_CHECK, BRK_GIVEBACK, BRK_RECORD, BRK_PEEK, BRK_RESET };

struct cap_args {
	enum chamber ch;		/* take */
	const struct caps *caps;	/* take; NULL: those kept */
	long long chcap;		/* take: ch's cap instead, or -1 */
	int	 ghost;			/* record */
	const struct usage *u;		/* record: tokens, or NULL */
	const struct usage *tu;		/* record: the triage's, or NULL */
	long long cost;			/* record: nanodollars, or -1 */
};

/* An outcome for BRK_RECORD: flags, a time to stay open until (0:
 * none) and the reason kept, already one line. */
struct brk_rec {
	int	 flags;
	time_t	 hold;
	const char *reason;
};

/* Who asks: a half-open probe is granted to one process of one host. */
struct brk_who {
	long long pid;
	const char *host;
};

#define BRK_MAXEV	4
/* What a transition did: whether this caller got the half-open probe,
 * and the transitions, in order, as "half_open", "open/FROM" or
 * "closed/BY". */
struct brk_out {
	int	 probe;
	int	 nev;
	char	 ev[BRK_MAXEV][24];
};

/* brk.c: when the breaker next lets a wake go (0: now, closed or a
 * half-open probe free); whether a check has to write; the view of a
 * breaker at now, with the keys given (NULL: those kept) */
time_t	 brk_next_go(const struct brk *);
int	 brk_check_writes(const struct brk *, time_t);
void	 brk_view_of(const struct brk *, const struct brk_conf *, time_t,
	    struct brk_view *);

/*
 * brkjson.c: the breaker's document, agents/ID/BRKFILE, and the events
 * of a transition done (brk.c does the transitions, brkstore.c the
 * reads and writes)
 *   brkjson_parse(agent, j, &b, err)	b from the document (NULL: none)
 *   brkjson_of(agent, &b, now)		the document to write
 *   brkjson_events(agent, &b, &o, events, now)
 *					o's transitions as events
 *   brkjson_put_time(o, key, t)	a time in UTC (0: null)
 */
#define BRKFILE	"breaker.json"
int	 brkjson_parse(const char *, json_t *, struct brk *, char *);
json_t	*brkjson_of(const char *, const struct brk *, time_t);
void	 brkjson_events(const char *, const struct brk *,
	    const struct brk_out *, json_t *, time_t);
void	 brkjson_put_time(json_t *, const char *, time_t);

/* An endpoint's bucket as stored (bucket.c owns the rules): requests
 * and tokens taken per second of the window, oldest first, and the
 * wakes it deferred, in line in the order they were first deferred. */
#define BKT_SLOTS	124	/* the window on either side of now */
#define BKT_LINE	512	/* wakes kept in line */
struct bucket {
	long long rpm, tpm;	/* the limits in force; 0: none */
	struct {
		long long sec, req, tok;
	} e[BKT_SLOTS];
	int	 n;
	struct {
		char	 who[HEART_IDMAX + 1];	/* the agent */
		long long since, seen;	/* first deferred, last asked */
	} q[BKT_LINE];
	int	 nq;
	long long slow_until;	/* a 429 stops the endpoint until then */
	long long n429, throttled, taken;	/* counted since it began */
	long long ahead;	/* the last take's: wakes in line before it */
};

enum bkt_op { BKT_TAKE, BKT_GIVE, BKT_MOVE, BKT_RECORD, BKT_SLOW, BKT_PEEK };

struct bkt_args {
	long long tokens;	/* record */
	time_t	 hold;		/* slow: Retry-After; 0: none given */
	time_t	 at;		/* give, move: when the request was taken */
	const char *who;	/* take: the agent whose wake asks, in line;
				   NULL: a later request of a wake admitted */
};

/*
 * The rules, as pure functions of (state, now, configuration): no I/O,
 * no clock.  Each changes the state it is given into the state after
 * and returns 1 when that is to be written back, 0 when not.
 */
int	 cap_step(struct cap_view *, enum cap_op, const struct cap_args *,
	    const char *zone, time_t now, int *admitted);
int	 brk_step(struct brk *, enum brk_op, const struct brk_conf *given,
	    time_t now, const struct brk_rec *, const struct brk_who *,
	    struct brk_out *);
int	 bucket_step(struct bucket *, enum bkt_op, const struct bkt_args *,
	    time_t now, time_t *until);

/*
 * A store keeps bytes: an agent's documents (cap.json, breaker.json,
 * wake.json) and its wake lock.  It knows nothing of caps and breakers.
 */
struct store_ops {
	const char *name;	/* the URL, for messages */
	/* *doc: agent's document `name' as stored (NULL: none); free it */
	int	(*get)(const char *agent, const char *name, char **doc,
		    char *err);
	/* replace it with doc, kept ttl seconds, only if it still is old
	 * (NULL: none): 1 done, 0 someone changed it meanwhile, -1 err */
	int	(*cas)(const char *agent, const char *name, const char *old,
		    const char *doc, long long ttl, char *err);
	/* "URL: KEY" of a document, for messages */
	void	(*where)(const char *agent, const char *name, char *buf,
		    size_t n);
	int	(*lock)(const char *dir, const char *name, int flags,
		    char *err);
	void	(*unlock)(int);
	int	(*read_json)(const char *dir, const char *name, json_t **,
		    char *err);
	int	(*write_json)(const char *dir, const char *name,
		    const json_t *, char *err);
	int	(*agents)(char ***, size_t *, char *err);
	/* 1: agent has keys in the store, 0: none, -1: err */
	int	(*known)(const char *agent, char *err);
	/* in a forked child: drop the parent's connection, unused */
	void	(*forked)(void);
};

/*
 * A read-decide-write of one document: step is given what is stored
 * (NULL: nothing) and sets *next to what is to be written instead
 * (NULL: nothing) and *ttl to how long a server keeps it (seconds).
 * It may be called again, with what another writer left, and must
 * decide afresh each time.
 */
typedef int (*store_step_fn)(json_t *cur, json_t **next, long long *ttl,
    void *ctx, char *err);

/* store.c */
const struct store_ops *store_ops(void);	/* NULL: files */
int	 store_owner_check(const char *, char *);	/* ID, @ENDPOINT or * */
void	 store_forked(void);
void	 store_use(const struct store_ops *);
void	 store_fail(int);	/* the exit code the last failure asks for */
int	 store_get(const char *agent, const char *name, json_t **,
	    char *err);
int	 store_update(const char *agent, const char *name, enum state_keep,
	    store_step_fn, void *ctx, char *err);
json_t	*store_parse(const char *where, const char *noun, const char *doc,
	    size_t, char *err);
void	 store_bad_field(const char *agent, const char *name,
	    const char *field, char *err);

#endif
