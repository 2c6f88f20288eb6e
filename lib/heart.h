/*
 * heart.h - libheart's public header: what the programs (cmd/) call,
 * grouped by source file (HACKING).  A call that fails returns -1 (or a
 * code it documents) with one line in `err' (HEART_ERRLEN bytes).
 */
#ifndef HEART_H
#define HEART_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#define HEART_ERRLEN	512
#define HEART_IDMAX	64

/* limits: heart(7), LIMITS */
#define HEART_USERMAX	(1024 * 1024)	/* heart-ghost --user's text */

/* exit codes, shared by every program */
enum {
	HX_OK = 0,
	HX_NO = 1,
	HX_USAGE = 64,
	HX_DATA = 65,
	HX_UNAVAILABLE = 69,
	HX_IOERR = 74,
	HX_TEMPFAIL = 75,
	HX_CONFIG = 78
};

/* util.c */
int	 num_parse(const char *, long long, long long, long long *);
const char *num_why(const char *, long long, long long, char *, size_t);
long long mono_ms(void);	/* monotonic milliseconds */
void	*xcalloc(size_t, size_t);
char	*xstrdup(const char *);
/* the worse of two exit codes: 78, then 74, 69, 75, 0 (as EXIT STATUS) */
int	 hx_worse(int, int);
/* j as one line of JSON, to free */
char	*json_line(const json_t *);

/* warning.c: the sink is fn(arg, who or NULL, text) */
void	 warning_sink(void (*)(void *, const char *, const char *), void *);
void	 warning(const char *, const char *);

/* secret.c */
char	*secret_dup(const char *);

/* utf8.c */
char	*text_line(char *, size_t, const char *, size_t);

/* dur.c: durations such as 10s 30m 2h 1d 1h30m, in seconds */
int	 dur_parse(const char *, long long *);
const char *dur_why(const char *, long long, char *, size_t);
char	*dur_format(long long, char *, size_t);

/* id.c: agent ids, checked before they become paths or topics */
int	 id_valid(const char *);
int	 id_check(const char *, char *);

/* clock.c: local dates and hours in an IANA zone; every time printed */
void	 clock_utc(time_t, char *, size_t);

/* state.c: the state directory, atomic files, locks */
int	 state_agents(char ***, size_t *, char *);
void	 state_free_list(char **, size_t);
int	 state_write_all(int, const char *, size_t);

/* price.c: a cost is in nanodollars, -1 when there is no price */
struct price {
	int	 set;		/* 0: no price: no cost, no budget */
	double	 input, cached_input, cache_write, output;
};

struct usage {
	long long prompt;	/* every input token, cached ones included */
	long long completion;
	long long cached;	/* of prompt: read from a provider's cache */
	long long cache_write;	/* of prompt: written to it */
};
long long price_nano(const json_t *);
char	*price_format(long long, char *, size_t);

/* soul.c */
enum chamber { CH_SCHEDULE, CH_IDLE, CH_NCHAMBERS };

struct hours {
	int	 set;
	int	 start;		/* minute of day, inclusive */
	int	 end;		/* minute of day, exclusive; may wrap */
};

/* schedule.adaptive; see adapt.c and heart-soul(5) */
struct adapt_conf {
	int	 on;
	long long min, max;	/* the interval's bounds, s */
	long long window;	/* days of history looked at */
	double	 weight[3];	/* a LOW, MEDIUM, HIGH ghost's (plain: 1) */
};

/* an LLM endpoint of a soul, llm or llm.triage; NULL or -1: unset */
struct soul_llm {
	char	*provider;
	char	*base_url;
	char	*model;
	char	*api_key_env;
	long long timeout;
	long long max_tokens;
	long long context_budget;	/* tokens */
	int	 cache;		/* LLM_CACHE_*, -1: unset (off) */
	struct price price;	/* set 0: none */
	json_t	*command;	/* argv array, or NULL */
};

struct chamber_conf {
	long long every;	/* schedule.interval or idle.after, s */
	char	*prompt;
	long long daily_cap;
	long long seed_tool_cap;
	struct hours active;
	char	*checklist;
	json_t	*gate;		/* the gate program's argv, or NULL */
	long long gate_timeout;	/* s */
};

struct soul {
	char	*path;
	char	*name;
	char	*system;
	char	*timezone;	/* never NULL after soul_load */
	long long daily_cap;	/* agent-wide; -1 when unset */
	long long daily_budget;	/* agent-wide, nanodollars; -1: unset */
	long long monthly_budget; /* the same for the local month */
	long long dormant_after;	/* s; 0 off; -1 unset (dormant.c) */
	long long pulse_interval;
	long long pulse_misses;
	struct chamber_conf ch[CH_NCHAMBERS];
	struct adapt_conf adapt;	/* the schedule chamber's */
	long long brk_threshold;
	long long brk_cooldown;
	long long brk_max_cooldown;
	long long brk_window_fails;	/* breaker.window.failures; 0: off */
	long long brk_window;		/* breaker.window.within, s */
	char	*ghost_token;
	json_t	*ghost_also;	/* array of strings */
	char	*ghost_mode;
	long long ghost_ack_max;
	long long history_keep;
	struct soul_llm llm;	/* the main model */
	struct soul_llm *triage;	/* or NULL; a key unset: llm's */
	json_t	*tools;		/* array, or NULL */
	json_t	*mcp;		/* mcp_servers: name -> server, or NULL */
	json_t	*doc;		/* the whole soul as JSON */
	char	**warn;		/* unknown keys and the like */
	size_t	 nwarn;
};
int	 soul_load(const char *, struct soul **, char *);
void	 soul_free(struct soul *);
/* soulfacts.c: what a loaded soul says */
const char *soul_chamber_name(enum chamber);
int	 soul_chamber_parse(const char *, enum chamber *);
void	 soul_dir(const struct soul *, char *, size_t);

/* soulset.c: the souls given (--soul FILE...) or a directory's */
struct soulset {
	struct soul **s;
	size_t	 n;
};
int	 soulset_add(struct soulset *, const char *, char *);
struct soul *soulset_find(const struct soulset *, const char *);
const char *soulset_agent(const struct soulset *, int, char **, char *);
int	 soulset_known(const struct soulset *, const char *, char *);
void	 soulset_free(struct soulset *);
int	 soulset_dir(const char *, char ***, size_t *, char *);

/* status.c: what ghost mode does with a wake's status */
enum ghost_kind { GHOST_ROLLBACK, GHOST_COMMIT, GHOST_ERROR };

/* store.c: where state lives, files or a server (redisstore_open) */
int	 store_status_names(char **, size_t, struct soul **, size_t,
	    char ***, size_t *, char ***, size_t *, char *);
int	 store_code(int);

/* redisstore.c */
int	 redisstore_open(const char *, char *);

/* journal.c: an agent's journal of its wakes' decisions (heart-wake
 * --why): a file holds at most JOURNAL_MAX bytes (then the newest half
 * is kept), a server the newest JOURNAL_KEEP entries */
#define JOURNAL_MAX	(128 * 1024)
#define JOURNAL_KEEP	500
#define JOURNAL_REASON	240	/* bytes of a reason, at most */
int	 journal_add(const char *, time_t, const char *, const char *,
	    const char *, const char *, char *);
int	 journal_read(const char *, time_t, long long, json_t **, char *);
int	 journal_since(const char *, time_t, time_t *, char *);

/* hold.c: one hold per provider account (heart-cap status) */
int	 hold_list(json_t **, char *);

/* cap.c: the daily counter shared by the chambers */
struct caps {
	long long chamber[CH_NCHAMBERS];
	long long agent;	/* -1: none */
	long long budget;	/* daily_budget, nanodollars; -1: none */
	long long monthly;	/* monthly_budget, nanodollars; -1: none */
	long long priced;	/* 1: the agent has a price (a cost) */
};

struct cap_view {
	char	 day[16];
	char	 zone[64];
	long long total;
	long long used[CH_NCHAMBERS];
	long long ghosts;
	struct usage tok;	/* the main model's tokens today */
	struct usage triage;	/* llm.triage's, apart */
	long long cost;		/* today's, both models', nanodollars */
	char	 month[8];	/* the local month, YYYY-MM */
	long long month_cost;	/* this month's, nanodollars */
	struct caps caps;
	int	 have_caps;	/* caps were kept: else the defaults */
};
void	 cap_from_soul(const struct soul *, struct caps *);
void	 cap_defaults(struct caps *);	/* no soul at hand */
long long cap_limit(const struct caps *, enum chamber);
int	 cap_take(const char *, enum chamber, const struct caps *,
	    long long, const char *, time_t, int, int *, struct cap_view *,
	    char *);
int	 cap_peek(const char *, const char *, time_t, struct cap_view *,
	    char *);
json_t	*cap_json(const char *, const struct cap_view *, time_t);
int	 cap_reset(const char *, const char *, time_t, char *);

/* brk.c: the dual-trigger circuit breaker, agents/ID/breaker.json */
enum brk_state { BRK_CLOSED, BRK_OPEN, BRK_HALF_OPEN };
/* a half-open probe unreported this long is presumed dead, s */
#define BRK_PROBE_LEASE	600
/* window_fails failures within window_s open it too; 0: no window */
struct brk_conf {
	long long threshold, cooldown, max_cooldown;
	long long window_fails, window_s;
};
struct brk_view {
	enum brk_state state;
	long long llm_fails, tool_fails;
	long long window_fails;	/* failures within the window now */
	long long cooldown;	/* current cooldown, s */
	time_t	 until;		/* open: the next probe's time; 0: none */
	time_t	 probe_at;	/* half-open: when granted; 0: none */
	char	 trigger[8];	/* "llm", "tool" or "" */
	char	 reason[256];
	struct brk_conf conf;	/* the keys in force */
	int	 kept;		/* they were kept with the breaker */
};
void	 brk_from_soul(const struct soul *, struct brk_conf *);
/* "closed" "open" "half_open" */
const char *brk_state_name(enum brk_state);
/* "ok" "llm-fail" "tool-fail" as flags; -1 for any other word */
int	 brk_outcome(const char *);
int	 brk_check(const char *agent, const struct brk_conf *, time_t now,
	    int *allowed, int *probe, struct brk_view *, json_t *events,
	    char *err);
int	 brk_record(const char *agent, const struct brk_conf *, time_t now,
	    int flags, time_t hold, const char *reason, json_t *events,
	    char *err);
int	 brk_peek(const char *agent, const struct brk_conf *, time_t now,
	    struct brk_view *, char *err);	/* no change */
int	 brk_reset(const char *agent, json_t *events, char *err);
/* the status object */
json_t	*brk_json(const char *agent, const struct brk_view *, time_t now);

/* pause.c: an operator's stop (heart-cap pause, resume) */
struct pause_view {
	int	 paused;
	int	 all;		/* by the fleet's pause, not the agent's own */
	time_t	 since;
	time_t	 until;		/* 0: until resumed */
};
int	 pause_peek(const char *, time_t, struct pause_view *, char *);
int	 pause_set(char *const *, size_t, time_t, time_t, char *);
int	 pause_clear(char *const *, size_t, time_t, char *);
int	 pause_until(const char *, time_t, time_t *, char *);
void	 pause_why(const struct pause_view *, char *, size_t);
json_t	*pause_json(const struct pause_view *);

/* dormant.c: an agent nobody reads (heart.dormant_after); the status
 * object's "dormant", or NULL when it is not */
int	 dormant_peek(const struct soul *, time_t, json_t **, char *);

/* endpoint.c: the endpoints the fleet file declares */
int	 endpoint_names(const char ***, size_t *, char *);

/* bucket.c: the fleet-wide rate limit, per endpoint (HEART_FLEET) */
struct rate_view {
	char	 endpoint[HEART_IDMAX + 1];
	long long rpm, tpm;		/* its limits; 0: none */
	long long requests, tokens;	/* taken in the window */
	time_t	 slow_until;		/* a 429 stops it until then */
	long long n429, throttled, taken;	/* counted since it began */
	long long waiting;		/* wakes deferred, in line */
	long long ahead;		/* of them before the agent asked of */
};
int	 bucket_peek(const char *, const char *, time_t, struct rate_view *,
	    char *);
json_t	*bucket_json(const struct rate_view *, time_t);

/* hist.c: the agent's history, agents/ID/history.jsonl */
int	 hist_touch_input(const char *, time_t, char *);
int	 hist_user(const char *, const char *, time_t, long long, char *);
int	 hist_user_text(const char *, char *);
int	 hist_repair(const char *, time_t, json_t **, char *, size_t,
	    char *);

/* ghost.c: ghost mode: what leaves a trace, what is delivered */
#define GHOST_LINEMAX	(16 * 1024 * 1024)

struct ghost_result {
	enum ghost_kind kind;
	int	 ran;		/* the model answered: ok, idle, tool_cap */
	int	 hist;		/* kept in the history: ok, not a notice */
	int	 alert;		/* an alert whatever its text: breaker_open */
	char	 status[16];
	char	 agent[HEART_IDMAX + 1];	/* "" if an error names none */
	int	 exit;		/* heart-wake's exit status for this wake */
	json_t	*doc;		/* ok and error only: the whole result */
	json_t	*messages;	/* ok: borrowed from doc */
	const char *wake_id;	/* ok: borrowed from doc */
	const char *chamber;
	const char *at;
	const char *response;
	const char *line;	/* the line read, borrowed; len bytes */
	size_t	 len;
};

struct ghost_opts {
	int	 alert_only;	/* deliver only answers with an alert */
	long long dedupe;	/* s: the same text not again within; 0 */
	long long keep;		/* the history's last wakes kept; 0: all */
	long long retry_for;	/* s: a failing answer retried; 0: a day */
	int	 text;		/* the answer alone is delivered */
	char *const *exec;	/* delivery program's argv; NULL: stdout */
	int	 try_now;	/* each answer due now, whatever "next" */
};
struct outbox_entry;
struct ghost_txn {		/* from _begin or _open to _end; private */
	int	 lockfd;
	char	 dir[4096];
	const struct ghost_opts *o;
	time_t	 now;
	json_t	*doc;		/* delivered.json, once read */
	int	 state;		/* 0 unread, 1 read, -1 unreadable */
	int	 dirty;		/* doc to be written */
	struct outbox_entry *box;	/* the outbox, in wake order */
	size_t	 nbox, cur;
	int	 stop;		/* the rest wait */
	struct ghost_result r;	/* what ghost_next handed out */
	char	 hash[17];
	char	 via[17];	/* the fingerprint of o's delivery */
	size_t	 others;	/* answers left to other options */
	char	 other[HEART_IDMAX + 1];	/* the first of them */
};
enum { GHOST_SENT = 1, GHOST_RETRY, GHOST_DEAD };

/* one agent's deliveries, from ghost_begin or ghost_open to ghost_end */
int	 ghost_begin(const struct ghost_result *, const struct ghost_opts *,
	    time_t, struct ghost_txn *, char *);
int	 ghost_open(const char *, const struct ghost_opts *, time_t,
	    struct ghost_txn *, char *);
int	 ghost_next(struct ghost_txn *, const struct ghost_result **, char *);
int	 ghost_done(struct ghost_txn *, int, const char *, char *);
int	 ghost_waits(const struct ghost_txn *, const char *);
size_t	 ghost_others(const struct ghost_txn *, const char **);
int	 ghost_end(struct ghost_txn *, char *);

/* ghostparse.c: a wake result line read */
int	 ghost_parse(const char *, size_t, struct ghost_result *, char *);
void	 ghost_result_free(struct ghost_result *);

/* outbox.c: answers waiting for their delivery, and dead letters */
int	 outbox_keep(const json_t *, const char *, char *);
int	 outbox_waiting(const char *);
int	 outbox_list(const char *, json_t *, char *);
struct outbox_count {
	long long waiting;	/* in agents/ID/outbox/ */
	long long dead;		/* in agents/ID/dead/ */
};
int	 outbox_count(const char *, struct outbox_count *, char *);

/* deliver.c: hand a deliverable to a program, no shell */
struct deliver_env {
	const char *agent;
	const char *chamber;
	const char *wake_id;
	const char *at;
	int	 alert;		/* the answer carries an alert: HEART_ALERT=1 */
	long long timeout;	/* s: then killed with its process group */
};
int	 deliver_exec(char *const *, const char *, size_t,
	    const struct deliver_env *, char *);

/* idle.c: does a text carry an alert (heart-ghost --alert-only)? */
int	 idle_alert(const char *);

/* tool.c: what a wake's tools and MCP servers are told of it */
struct tool_ctx {		/* HEART_AGENT, HEART_CHAMBER, HEART_WAKE_ID */
	const char *agent;
	const char *chamber;
	const char *wake_id;
	const char *hide;	/* a variable tools must not see (the key) */
	const json_t *offer;	/* the tools offered, or NULL */
};

/* mcp.c: tools from MCP servers, over stdio */
struct mcp;
int	 mcp_open(const struct soul *, const struct tool_ctx *,
	    const char *, int, struct mcp **, char *);
void	 mcp_close(struct mcp *, void (*)(void *, const char *,
	    const char *), void *);
json_t	*mcp_list(const struct mcp *);

/* run.c: one wake, start to end */
struct run_opts {
	int	 chamber;	/* a chamber, or -1 for either */
	int	 force;		/* skip the due and quiet gates */
	int	 dry_run;	/* print the request, spend nothing */
	const char *version;	/* heart's, told to MCP servers */
	/* hears (agent, server, text): a failed MCP server's stderr */
	void	(*tell)(const char *, const char *, const char *);
	/* a round's: wait for the fleet's rate limit until then; 0: not */
	time_t	 wait;
};
int	 run_wake(const struct soul *, const struct run_opts *, time_t,
	    json_t **, char *);
json_t	*run_refused(int, const char *, time_t);

/* notice.c: a breaker's notice, after the wake result that made it */
json_t	*notice_of(const json_t *);

/* explain.c: --explain, each chamber's gates, changing nothing */
json_t	*explain_soul(const struct soul *, const struct run_opts *, time_t,
	    char *);

/* round.c: one round over a directory of souls, N wakes at once */
struct round_hooks {
	/* a result, whole: (arg, agent or NULL, result, exit code, the
	 * failure's message or NULL) */
	void	(*line)(void *, const char *, json_t *, int, const char *);
	/* a skip given again from the soul cache, a whole line of JSON
	 * text (no newline): (arg, line) */
	void	(*text)(void *, const char *);
	/* the round waits for a wake of its span: out with what it has
	 * (arg); may be NULL */
	void	(*flush)(void *);
	void	*arg;
};
int	 round_run(char *const *, size_t, const char *,
	    const struct run_opts *, int, time_t, time_t,
	    const struct round_hooks *);
int	 round_explain(json_t *, const struct soul *, const char *, time_t,
	    char *);

/* publisher.c, watcher.c: heart-pulse's two ends (heart-pulse(1)) */
struct pollfd;

struct pulse_opts {		/* NULL, 0 or -1: the default */
	char	*const *souls;	/* the publisher's: --soul FILE... */
	size_t	 nsouls;
	const char *dir;	/* --souls DIR */
	const char *broker;	/* NULL: $HEART_BROKER, else localhost */
	const char *prefix;	/* NULL: "heart" */
	long long interval;	/* s; -1: the souls' (a watcher's: 10 s) */
	long long misses;	/* the watcher's; -1: each agent's */
	const char *client_id;	/* NULL: pulse_node_name's */
	const char *username;
	const char *pwfile;	/* NULL: $HEART_MQTT_PASSWORD */
	const char *cafile, *certfile, *keyfile;
	int	 keepalive;	/* s */
	long long backoff_max;	/* s */
	int	 noinotify, verbose, snapshot;
};

/* publisher.c */
struct publisher;

struct publisher_stats {	/* SIGUSR1 */
	size_t	 agents;
	unsigned long long sent, extra, skipped, births;
	int	 connects;
	long long lag_max;	/* ms */
	int	 connected;
	int	 window;
	size_t	 overdue;	/* agents whose schedule is overdue now */
};
int	 publisher_open(const struct pulse_opts *, struct publisher **,
	    char *);
int	 publisher_work(struct publisher *, long long, char *);
int	 publisher_poll(const struct publisher *, long long, struct pollfd *);
int	 publisher_ready(struct publisher *, const struct pollfd *, long long,
	    char *);
void	 publisher_reload(struct publisher *, long long);
void	 publisher_stats(const struct publisher *, struct publisher_stats *);
int	 publisher_goodbye(struct publisher *, char *);
void	 publisher_free(struct publisher *);
int	 publisher_acl(const struct pulse_opts *, char **, char *);

/* watcher.c */
struct watcher;
int	 watcher_open(const struct pulse_opts *, struct watcher **, char *);
int	 watcher_work(struct watcher *, long long, char *);
int	 watcher_poll(const struct watcher *, long long, struct pollfd *);
int	 watcher_ready(struct watcher *, const struct pollfd *, char *);
json_t	*watcher_events(struct watcher *);
int	 watcher_snapshot(struct watcher *, json_t **, char *);
void	 watcher_free(struct watcher *);

/* prom.c: node_exporter's textfile collector (texts to free) */
char	*prom_caps(char *const *, const struct cap_view *, size_t, time_t);
char	*prom_outbox(char *const *, const struct outbox_count *, size_t);
char	*prom_rates(const struct rate_view *, size_t, time_t);
char	*prom_pauses(char *const *, const struct pause_view *, size_t);
char	*prom_holds(const json_t *);
char	*prom_breakers(char *const *, const struct brk_view *, size_t,
	    time_t);
int	 prom_named(const char *);	/* a name the collector reads */
int	 prom_write(const char *, const char *, char *);

#endif
