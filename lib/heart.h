/* heart.h - what the programs (cmd/) call, by source file (HACKING); each
 * .c says what its calls do.  A call that fails returns -1 (or a code it
 * documents) with one line in `err' (HEART_ERRLEN bytes). */
#ifndef HEART_H
#define HEART_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#define HEART_ERRLEN	512
#define HEART_IDMAX	64
/* exit codes, shared by every program (heart(7), EXIT STATUS; the
 * suites read them one a line) */
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
long long mono_ms(void);
void	*xcalloc(size_t, size_t);
char	*xstrdup(const char *);
int	 hx_worse(int, int);
char	*json_line(const json_t *);
/* utf8.c */
char	*text_line(char *, size_t, const char *, size_t);
/* secret.c */
char	*secret_dup(const char *);
/* warning.c: the sink is fn(arg, who or NULL, text) */
void	 warning_sink(void (*)(void *, const char *, const char *), void *);
void	 warning(const char *, const char *);
/* dur.c: durations such as 10s 30m 2h 1d 1h30m, in seconds */
int	 dur_parse(const char *, long long *);
const char *dur_why(const char *, long long, char *, size_t);
char	*dur_format(long long, char *, size_t);
/* clock.c */
void	 clock_utc(time_t, char *, size_t);
/* id.c: agent ids, checked before they become paths or topics */
int	 id_valid(const char *);
int	 id_check(const char *, char *);
/* state.c */
int	 state_agents(char ***, size_t *, char *);
void	 state_free_list(char **, size_t);
int	 state_write_all(int, const char *, size_t);
/* price.c: a cost is in nanodollars, -1 when there is no price */
struct usage {
	long long prompt;	/* every input token, cached ones included */
	long long completion;
	long long cached;	/* of prompt: read from a provider's cache */
	long long cache_write;	/* of prompt: written to it */
};
long long price_nano(const json_t *);
char	*price_format(long long, char *, size_t);
/* status.c: what ghost mode does with a wake's status */
enum ghost_kind { GHOST_ROLLBACK, GHOST_COMMIT, GHOST_ERROR };

/* soul.c: a soul file loaded (heart-soul(5)) */
enum chamber { CH_SCHEDULE, CH_IDLE, CH_NCHAMBERS };
struct soul;
int	 soul_load(const char *, struct soul **, char *);
void	 soul_free(struct soul *);
/* soulfacts.c */
const char *soul_name(const struct soul *);
const char *soul_zone(const struct soul *);
char *const *soul_warnings(const struct soul *, size_t *);
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

/* store.c: where state lives, files or a server (redisstore_open) */
int	 store_status_names(char **, size_t, struct soul **, size_t,
	    char ***, size_t *, char ***, size_t *, char *);
int	 store_code(int);
/* redisstore.c */
int	 redisstore_open(const char *, char *);
/* journal.c: an agent's wakes' decisions (heart-wake --why) */
int	 journal_read(const char *, time_t, long long, json_t **, char *);
int	 journal_since(const char *, time_t, time_t *, char *);
/* endpoint.c: the endpoints of the fleet file, and its budget */
int	 endpoint_names(const char ***, size_t *, char *);
struct fleet_budget {
	int	 set;
	long long daily, monthly;	/* nanodollars; -1: none */
	char	 zone[64];
};
int	 endpoint_budget(struct fleet_budget *, char *);
/* budget.c: the fleet's budget (budget.json); the week a counter keeps */
#define WEEK_DAYS	7
struct week {
	char	 since[16];	/* the first day kept: days before unknown */
	struct {
		char	 day[16];
		long long cost, top;	/* its spend; its costliest wake */
	} d[WEEK_DAYS];
	int	 n;
	long long top;		/* today's costliest wake, nanodollars */
};
struct budget_view {
	struct fleet_budget fb;
	char	 day[16], zone[64], month[8];
	long long cost, month_cost;	/* nanodollars */
	struct week week;
	int	 inflight;	/* wakes admitted, not yet recorded */
};
int	 budget_peek(time_t, struct budget_view *, char *);
json_t	*budget_json(const struct budget_view *, time_t);
/* cap.c: the daily counter shared by the chambers; -1: none */
struct caps {
	long long chamber[CH_NCHAMBERS];
	long long agent;
	long long budget;	/* daily_budget, nanodollars */
	long long monthly;	/* monthly_budget, nanodollars */
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
	struct week week;	/* the days before, for the forecast */
};
void	 cap_from_soul(const struct soul *, struct caps *);
long long cap_limit(const struct caps *, enum chamber);
int	 cap_fleet_refuses(const char *, const struct soul *, time_t, char *,
	    size_t, char *);
int	 cap_take(const char *, enum chamber, const struct caps *,
	    long long, const char *, time_t, int, int *, struct cap_view *,
	    char *);
int	 cap_peek(const char *, const char *, time_t, struct cap_view *,
	    char *);
json_t	*cap_json(const char *, const struct cap_view *, time_t);
int	 cap_why(const struct cap_view *, enum chamber, time_t, char *,
	    size_t);
int	 cap_reset(const char *, const char *, time_t, char *);
/* brk.c: the dual-trigger circuit breaker, agents/ID/breaker.json */
enum brk_state { BRK_CLOSED, BRK_OPEN, BRK_HALF_OPEN };
#define BRK_PROBE_LEASE	600	/* s: a half-open probe presumed dead */
struct brk_conf {		/* window_fails within window_s open it too */
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
const char *brk_state_name(enum brk_state);	/* "closed", "open"... */
int	 brk_outcome(const char *);
/* brkstore.c: (agent, conf, now...); brk_peek changes nothing */
int	 brk_check(const char *, const struct brk_conf *, time_t, int *,
	    int *, struct brk_view *, json_t *, char *);
int	 brk_record(const char *, const struct brk_conf *, time_t, int,
	    time_t, const char *, json_t *, char *);
int	 brk_peek(const char *, const struct brk_conf *, time_t,
	    struct brk_view *, char *);
int	 brk_reset(const char *, json_t *, char *);
json_t	*brk_json(const char *, const struct brk_view *, time_t);
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
/* hold.c: one hold per provider account (heart-cap status) */
int	 hold_list(json_t **, time_t, char *);
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
/* histwalk.c */
int	 hist_repair(const char *, time_t, json_t **, char *, size_t,
	    char *);
/* ghost.c: ghost mode: what leaves a trace, what is delivered */
#define GHOST_LINEMAX	(16 * 1024 * 1024)
struct ghost_result {
	enum ghost_kind kind;
	int	 ran;		/* the model answered: ok, idle, tool_cap */
	int	 hist;		/* kept in the history: ok, not a notice */
	int	 alert;		/* an alert: its status's, or its text's */
	char	 agent[HEART_IDMAX + 1];	/* "" if an error names none */
	int	 exit;		/* heart-wake's exit status for this wake */
	json_t	*doc;		/* ok and error only: the whole result */
	json_t	*messages;	/* ok: borrowed from doc, as the rest */
	const char *wake_id, *chamber, *at, *response;
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
struct ghost_txn;		/* one agent's deliveries (ghost.c) */
enum { GHOST_SENT = 1, GHOST_RETRY, GHOST_DEAD };
int	 ghost_begin(const struct ghost_result *, const struct ghost_opts *,
	    time_t, struct ghost_txn **, char *);
int	 ghost_open(const char *, const struct ghost_opts *, time_t,
	    struct ghost_txn **, char *);
int	 ghost_next(struct ghost_txn *, const struct ghost_result **, char *);
int	 ghost_done(struct ghost_txn *, int, const char *, char *);
size_t	 ghost_left(const struct ghost_txn *, const char **, int *);
int	 ghost_end(struct ghost_txn *, char *);
/* ghostparse.c */
int	 ghost_parse(const char *, size_t, struct ghost_result *, char *);
void	 ghost_result_free(struct ghost_result *);
/* outbox.c: answers waiting for their delivery, and dead letters */
struct outbox_count {
	long long waiting;	/* in agents/ID/outbox/ */
	long long dead;		/* in agents/ID/dead/ */
};
int	 outbox_keep(const json_t *, const char *, char *);
int	 outbox_list(const char *, json_t *, char *);
int	 outbox_count(const char *, struct outbox_count *, char *);
/* deliver.c: hand a deliverable of a result to a program, no shell */
int	 deliver_exec(char *const *, const char *, size_t,
	    const struct ghost_result *, long long, char *);

/* dormant.c */
int	 dormant_peek(const struct soul *, time_t, json_t **, char *);
/* tool.c: what a wake's tools and MCP servers are told of it */
struct tool_ctx {		/* HEART_AGENT, HEART_CHAMBER, HEART_WAKE_ID */
	const char *agent, *chamber, *wake_id;
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
	time_t	 wait;		/* a round's: wait for a turn until; 0: not */
};
int	 run_wake(const struct soul *, const struct run_opts *, time_t,
	    json_t **, char *);
json_t	*run_refused(int, const char *, time_t);
/* explain.c: --explain, each chamber's gates, changing nothing */
int	 explain_soul(const struct soul *, const struct run_opts *,
	    const char *, time_t, json_t **, char *);
/* notice.c: a breaker's notice, after the wake result that made it */
json_t	*notice_of(const json_t *);
/* round.c: one round over a directory of souls, N wakes at once */
struct round_hooks {
	/* (arg, agent or NULL, result, exit code, message or NULL) */
	void	(*line)(void *, const char *, json_t *, int, const char *);
	/* (arg, line): a skip given again from the soul cache, no \n */
	void	(*text)(void *, const char *);
	/* (arg): the round waits for a wake: out with what it has */
	void	(*flush)(void *);
	void	*arg;
};
int	 round_run(char *const *, size_t, const char *,
	    const struct run_opts *, int, time_t, time_t,
	    const struct round_hooks *);

/* publisher.c: heart-pulse's publishing end (heart-pulse(1)) */
struct pollfd;
struct pulse_opts {		/* both ends'; NULL, 0 or -1: the default */
	char	*const *souls;	/* the publisher's: --soul FILE... */
	size_t	 nsouls;
	const char *dir;	/* --souls DIR */
	const char *broker;	/* NULL: $HEART_BROKER, else localhost */
	const char *prefix;	/* NULL: "heart" */
	long long interval;	/* s; -1: the souls' (a watcher's: 10 s) */
	long long misses;	/* the watcher's; -1: each agent's */
	const char *client_id;	/* NULL: the node's name (broker.c) */
	const char *username;
	const char *pwfile;	/* NULL: $HEART_MQTT_PASSWORD */
	const char *cafile, *certfile, *keyfile;
	int	 keepalive;	/* s */
	long long backoff_max;	/* s */
	int	 noinotify, verbose, snapshot;
};
struct publisher;
int	 publisher_open(const struct pulse_opts *, struct publisher **,
	    char *);
int	 publisher_work(struct publisher *, long long, char *);
int	 publisher_poll(const struct publisher *, long long, struct pollfd *);
int	 publisher_ready(struct publisher *, const struct pollfd *, long long,
	    char *);
void	 publisher_reload(struct publisher *, long long);
json_t	*publisher_stats(const struct publisher *);
int	 publisher_goodbye(struct publisher *, char *);
void	 publisher_free(struct publisher *);
int	 publisher_acl(const struct pulse_opts *, char **, char *);
/* watcher.c: the watching end */
struct watcher;
int	 watcher_open(const struct pulse_opts *, struct watcher **, char *);
int	 watcher_work(struct watcher *, long long, char *);
int	 watcher_poll(const struct watcher *, long long, struct pollfd *);
int	 watcher_ready(struct watcher *, const struct pollfd *, char *);
json_t	*watcher_events(struct watcher *);
int	 watcher_snapshot(struct watcher *, json_t **, char *);
void	 watcher_free(struct watcher *);
/* overdue.c: the schedule's due time, overdue or not, and the last
 * skip, read through the store (heart-cap status) */
struct overdue_view {
	int	 read;		/* 0: no soul given, nothing known */
	int	 on;		/* the schedule chamber is on */
	time_t	 due;		/* next due; 0: off, or never seen */
	int	 overdue;	/* 1, 0 */
	char	 skip[16];	/* the last skip's status; "": none */
	time_t	 skip_at;
	char	 reason[121];	/* its reason; "": none */
};
int	 overdue_peek(const struct soul *, time_t, struct overdue_view *,
	    char *);
void	 overdue_json(const struct overdue_view *, json_t *);
/* prom.c: node_exporter's textfile collector (texts to free) */
char	*prom_agents(char *const *, size_t, const struct cap_view *,
	    const struct outbox_count *, const struct pause_view *,
	    const struct overdue_view *, const json_t *, time_t);
char	*prom_rates(const struct rate_view *, size_t, time_t);
char	*prom_budget(const struct budget_view *, time_t);
char	*prom_breakers(char *const *, const struct brk_view *, size_t);
int	 prom_named(const char *);
int	 prom_write(const char *, const char *, char *);

#endif
