/*
 * heart.h - the public header of libheart: what the programs (cmd/)
 * call, and the types they hold.  What only the library's own files,
 * the test drivers (t/) and the fuzz targets (fuzz/) use is in
 * heartint.h and the wings' headers (heartstore.h, heartwake.h,
 * heartpulse.h).
 *
 * Grouped by source file.  Every function that can fail returns -1 (or
 * a documented non-zero code) and writes a readable message into the
 * caller's buffer `err' of size HEART_ERRLEN (one printable line, with
 * no registered secret); the library never prints and never exits.
 * Exit codes are the toolkit's table (heart(7), EXIT STATUS).
 */
#ifndef HEART_H
#define HEART_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#define HEART_ERRLEN	512
#define HEART_IDMAX	64

/*
 * Limits, each defined once and agreeing with the others; heart(7),
 * LIMITS, is their table.  A person's text (a soul, a user message) and
 * a model's reply are at most 1 MiB; the context sent is bounded by the
 * soul's llm.context_budget; a wake's messages are at most half a
 * result line, so that every wake result heart-wake prints is a line
 * heart-ghost reads (GHOST_LINEMAX); a tool's output is TOOL_MAXOUT
 * (heartwake.h).
 */
#define HEART_SOULMAX	(1024 * 1024)	/* a soul file */
#define HEART_CHECKMAX	(256 * 1024)	/* a checklist read */
#define HEART_USERMAX	(1024 * 1024)	/* heart-ghost --user's text */
#define HEART_REPLYMAX	(1024 * 1024)	/* a model's reply, as sent */
#define HEART_BUDGET	16000		/* llm.context_budget's default, */
#define HEART_BUDGET_MIN 1000		/* and its bounds, in tokens */
#define HEART_BUDGET_MAX 1000000	/* estimated as bytes / 4 */
#define WAKE_MSGMAX	(GHOST_LINEMAX / 2)	/* a wake's messages */

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
/* j as one line of JSON, as heart prints it (to free): a cost reads as
 * the decimal it is (price.c) */
char	*json_line(const json_t *);

/* warning.c: the library's warnings, to the sink the program registers:
 * fn(arg, who or NULL, text) */
void	 warning_sink(void (*)(void *, const char *, const char *), void *);
void	 warning(const char *, const char *);
void	 warningf(const char *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/* secret.c: a copy of a text scrubbed of every secret heart holds (the
 * model's API key, the Redis and MQTT passwords), to free */
char	*secret_dup(const char *);

/* utf8.c: the one UTF-8 check; bytes decoded lossily (U+FFFD, to
 * free); text from outside as one printable line of UTF-8, control
 * characters and escape sequences neutralised (dst may be src) */
size_t	 utf8_len(const unsigned char *, size_t);
char	*utf8_clean(const char *, size_t, size_t *);
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

/*
 * price.c: money.  A price is dollars per million tokens of each kind
 * (heart-soul(5), llm.price); a cost is in nanodollars (1e-9 $), -1
 * when there is no price (never $0).
 *   price_nano(j)		a cost from dollars in JSON
 *   price_text(nano, places, buf, n)	"0.00212": the decimal it is
 *   price_format(nano, buf, n)	"$0.00212", or "no price"
 */
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
	double	 weight[3];	/* a ghost's weight by idle level: LOW,
				   MEDIUM, HIGH (a plain one weighs 1) */
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
	struct soul_llm *triage;	/* llm.triage, or NULL: keys it
					   leaves out are llm's */
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

/*
 * soulset.c: the souls a status command was given (--soul FILE...),
 * and the soul files of a directory (--souls DIR).
 *   soulset_add(set, path, err)	load one; -1 with err
 *   soulset_find(set, agent)	the soul named agent, or NULL
 *   soulset_agent(set, argc, argv, err)  the one agent a command is
 *	about: the operand, else the one soul's name; NULL with err
 *	empty for bad usage, else err says why
 *   soulset_known(set, agent, err)	1 a soul names it or the store
 *	keeps state for it, 0 not (err says so), -1 store error
 */
struct soulset {
	struct soul **s;
	size_t	 n;
};
int	 soulset_add(struct soulset *, const char *, char *);
struct soul *soulset_find(const struct soulset *, const char *);
const char *soulset_agent(const struct soulset *, int, char **, char *);
int	 soulset_known(const struct soulset *, const char *, char *);
void	 soulset_free(struct soulset *);
/* the soul files of dir (*.yaml, *.yml, *.md opening with "---"),
 * sorted, in *out (n of them, each to free): 0, or -1 with err */
int	 soulset_dir(const char *, char ***, size_t *, char *);

/* status.c: what ghost mode does with a wake's status */
enum ghost_kind { GHOST_ROLLBACK, GHOST_COMMIT, GHOST_ERROR };

/*
 * store.c: where caps, breakers, wake locks and wake.json live: in
 * files beside the agent (the default), or in a server a fleet shares
 * (redisstore_open), chosen once per process.  cap_* and brk_* follow it by
 * themselves; these are the rest, with state.c's contracts.
 */
int	 store_status_names(char **, size_t, struct soul **, size_t,
	    char ***, size_t *, char ***, size_t *, char *);
/* the exit code of a failed store call: HX_UNAVAILABLE (server not
 * reached), HX_CONFIG (refused us), else the code given (HX_IOERR) */
int	 store_code(int);

/*
 * pause.c: an operator's stop (heart-cap pause, resume), for one agent
 * or the whole fleet, until a time or until resumed; one document of
 * the store, read at each wake's admission.  pause_peek: 1 paused, 0
 * not, -1 err (agent NULL: the fleet's pause alone).
 */
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

/* cap.c: the daily counter shared by the chambers */
struct caps {
	long long chamber[CH_NCHAMBERS];
	long long agent;	/* -1: none */
	long long budget;	/* daily_budget, nanodollars; -1: none */
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
/* outcome flags for brk_record; combine one LLM and one tool flag */
#define BRK_LLM_OK	0x1	/* the model answered: resets the LLM count */
#define BRK_LLM_FAIL	0x2	/* HTTP error, timeout, unreadable reply */
#define BRK_TOOL_OK	0x4	/* the wake's tool calls all succeeded:
				   resets the tool count */
#define BRK_TOOL_FAIL	0x8	/* a tool failed, or seed_tool_cap was
				   passed */
#define BRK_LLM_CONFIG	0x10	/* with BRK_LLM_FAIL: a failure only a
				   person can fix (the key, the model,
				   the URL, the account's quota): the
				   breaker opens now, whatever the
				   count, for max_cooldown */
#define BRK_TELL	0x20	/* a wake's outcome, whose notice heart-wake
				   prints: its opening or closing is told */
/*
 * A granted half-open probe that has not reported (brk_record) or been
 * handed back (brk_giveback) this many seconds later is presumed dead,
 * and the next caller may probe.
 */
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
	time_t	 until;		/* open: when the next probe may go;
				   0 if none */
	time_t	 probe_at;	/* half-open: when the probe was
				   granted; 0 if none */
	char	 trigger[8];	/* "llm", "tool" or "" */
	char	 reason[256];
	struct brk_conf conf;	/* the keys in force */
	int	 kept;		/* they were kept with the breaker */
};
/* the soul's breaker keys; a NULL soul gives the defaults 3, 15m, 2h,
 * and a window of 10 failures within 1h.
 * A breaker keeps the keys it was last given; a call given a NULL conf
 * goes by those (else the defaults) and leaves them as they are. */
void	 brk_from_soul(const struct soul *, struct brk_conf *);
/* "closed" "open" "half_open" */
const char *brk_state_name(enum brk_state);
/* "ok" "llm-fail" "tool-fail" as flags; -1 for any other word */
int	 brk_outcome(const char *);
/* May a wake go now?  *allowed = 1 when closed, or when this caller was
 * granted the half-open probe (then *probe = 1).  Transitions (open ->
 * half_open) are appended to `events' (a JSON array, may be NULL). */
int	 brk_check(const char *agent, const struct brk_conf *, time_t now,
	    int *allowed, int *probe, struct brk_view *, json_t *events,
	    char *err);
/* Feed an outcome (flags above) with a human reason (may be NULL);
 * with BRK_LLM_FAIL, a hold later than now keeps the breaker open at
 * least until then (a provider's Retry-After), opening it now if need
 * be (0: none); transitions are appended to `events'. */
int	 brk_record(const char *agent, const struct brk_conf *, time_t now,
	    int flags, time_t hold, const char *reason, json_t *events,
	    char *err);
int	 brk_peek(const char *agent, const struct brk_conf *, time_t now,
	    struct brk_view *, char *err);	/* no change */
int	 brk_reset(const char *agent, json_t *events, char *err);
/* the status object */
json_t	*brk_json(const char *agent, const struct brk_view *, time_t now);

/* redisstore.c: the Redis store.  redisstore_open(flag, err) chooses
 * the store of this process from --store (flag, may be NULL), else
 * $HEART_STORE: 0, or HX_USAGE (bad flag) / HX_CONFIG (bad variable)
 * with err. */
int	 redisstore_open(const char *, char *);

/* prom.c: status figures for node_exporter's textfile collector;
 * the texts are the caller's to free */
char	*prom_caps(char *const *, const struct cap_view *, size_t, time_t);
struct outbox_count;
char	*prom_outbox(char *const *, const struct outbox_count *, size_t);
struct rate_view;
char	*prom_rates(const struct rate_view *, size_t, time_t);
char	*prom_pauses(char *const *, const struct pause_view *, size_t);
char	*prom_breakers(char *const *, const struct brk_view *, size_t,
	    time_t);
int	 prom_named(const char *);	/* a name the collector reads */
int	 prom_write(const char *, const char *, char *);

/*
 * hist.c: the agent's history, agents/ID/history.jsonl, one message a
 * line with its wake's wake_id, chamber and at.
 *   hist_touch_input(agent, now, err)	agents/ID/input's mtime = now
 *   hist_user(agent, text, now, keep, err)  record the user, touch input
 *   hist_user_text(text, err)  whether text may be recorded as the user's
 *   hist_repair(agent, now, &runs, where, n, err)  set aside what is
 *				not a whole wake (heart-ghost --repair)
 */
int	 hist_touch_input(const char *, time_t, char *);
int	 hist_user(const char *, const char *, time_t, long long, char *);
int	 hist_user_text(const char *, char *);
int	 hist_repair(const char *, time_t, json_t **, char *, size_t,
	    char *);

/* ghost.c: ghost mode: which wake results leave a trace, which are
 * delivered, and which were delivered already */
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
	long long retry_for;	/* s: a failing answer is retried; 0:
				   GHOST_RETRY_FOR, a day */
	int	 text;		/* the answer alone is delivered */
	char *const *exec;	/* the delivery program's argv; NULL:
				   standard output */
	int	 try_now;	/* each answer is due now, whatever its
				   "next" */
};

/* outbox.c: answers waiting for their delivery, and dead letters */
struct outbox_entry;
int	 outbox_keep(const json_t *, const char *, char *);
int	 outbox_waiting(const char *);
int	 outbox_list(const char *, json_t *, char *);
struct outbox_count {
	long long waiting;	/* in agents/ID/outbox/ */
	long long dead;		/* in agents/ID/dead/ */
};
int	 outbox_count(const char *, struct outbox_count *, char *);

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

/* ghostparse.c: a wake result line read */
int	 ghost_parse(const char *, size_t, struct ghost_result *, char *);
void	 ghost_result_free(struct ghost_result *);
/*
 * One agent's deliveries, under its delivered.lock:
 *   ghost_begin(r, o, now, &t, err)	commit an "ok" result and put it
 *	in the outbox (a replayed one waiting or dead: due now); 0, 1
 *	(err: a warning, go on), -1 (err: not kept, nothing held)
 *   ghost_open(agent, o, now, &t, err)	the outbox alone (--flush): 0;
 *	1 when nothing waits or another process has the agent; -1 (err)
 *   ghost_next(&t, &r, err)	1: deliver *r now (err may warn); 0: no
 *	more now; -1: an entry is skipped (err), call again; GHOST_DEAD:
 *	an answer left to other options was given up (err), call again
 *   ghost_done(&t, delivered, why, err)	GHOST_SENT; GHOST_RETRY (err:
 *	the next try's time); GHOST_DEAD (err: the dead letter); -1
 *   ghost_waits(&t, wake_id)	does that wake's answer still wait?
 *   ghost_others(&t, &wake_id)	how many answers were left to other
 *	delivery options, and the first of them
 *   ghost_end(&t, err)	the number of answers still waiting, or -1
 */
int	 ghost_begin(const struct ghost_result *, const struct ghost_opts *,
	    time_t, struct ghost_txn *, char *);
int	 ghost_open(const char *, const struct ghost_opts *, time_t,
	    struct ghost_txn *, char *);
int	 ghost_next(struct ghost_txn *, const struct ghost_result **, char *);
int	 ghost_done(struct ghost_txn *, int, const char *, char *);
int	 ghost_waits(const struct ghost_txn *, const char *);
size_t	 ghost_others(const struct ghost_txn *, const char **);
int	 ghost_end(struct ghost_txn *, char *);

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

/*
 * mcp.c: tools from MCP servers (heart-soul(5), mcp_servers), spoken
 * to over stdio; server SERVER's tool NAME is offered as SERVER__NAME.
 *   mcp_open(s, ctx, version, all, &m, err)	start, initialize, list
 *	the servers with a tool allowed (all: every one); returns how
 *	many failed, the first one's message in err; m is always set
 *   mcp_close(m, tell, arg)	end every server started; tell(arg,
 *	server, text) hears the end of each failed one's stderr
 *   mcp_list(m)	--list-tools
 */

struct mcp;

int	 mcp_open(const struct soul *, const struct tool_ctx *,
	    const char *, int, struct mcp **, char *);
void	 mcp_close(struct mcp *, void (*)(void *, const char *,
	    const char *), void *);
json_t	*mcp_list(const struct mcp *);

/* bucket.c: the fleet-wide rate limit, per endpoint (HEART_FLEET) */
/* An endpoint's rate use over the last minute. */
struct rate_view {
	char	 endpoint[HEART_IDMAX + 1];
	long long rpm, tpm;		/* its limits; 0: none */
	long long requests, tokens;	/* taken in the window */
	time_t	 slow_until;		/* a 429 stops it until then */
	long long n429, throttled, taken;	/* counted since it began */
	long long waiting;		/* wakes deferred, in line */
	long long ahead;		/* of them before the agent asked of */
};
/* endpoint.c: the endpoints the fleet file declares */
int	 endpoint_names(const char ***, size_t *, char *);
/* bucket.c */
int	 bucket_peek(const char *, const char *, time_t, struct rate_view *,
	    char *);
json_t	*bucket_json(const struct rate_view *, time_t);

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

/*
 * publisher.c, watcher.c: heart-pulse's two ends (heart-pulse(1)), each
 * over one broker connection, in the caller's poll loop: _work before
 * each poll, _poll for what to poll and how long, _ready after it.  A
 * -1 from _work or _ready is a failure retrying cannot mend (the broker
 * refused our credentials, another process has our client id): the
 * end, with err.  Messages (an outage, a refused topic, an unreadable
 * soul) go to warning.c's sink, warning(who or NULL, text), as they
 * happen.
 */
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

/*
 * publisher.c: publisher_open and publisher_acl return 0, or HX_USAGE
 * or HX_CONFIG with err; *out is set either way, for publisher_free.
 *   publisher_poll(p, now, fd[2])	fills fd, returns the timeout, ms
 *   publisher_reload(p, now)	the souls again (SIGHUP)
 *   publisher_goodbye(p, err)	offline said, a clean disconnect
 *   publisher_acl(o, &text, err)	--acl's ACL block, to free
 */
struct publisher;

struct publisher_stats {	/* SIGUSR1 */
	size_t	 agents;
	unsigned long long sent, extra, skipped, births;
	int	 connects;
	long long lag_max;	/* ms */
	int	 connected;
	int	 window;
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

/*
 * watcher.c: watcher_open as publisher_open; watcher_work returns 1
 * when --snapshot's map is due: watcher_snapshot(w, &map, err) gives it
 * (0 all online, 1 not, or none seen; -1 never connected).
 * watcher_events(w) is the changes since, to print and empty.
 */
struct watcher;

int	 watcher_open(const struct pulse_opts *, struct watcher **, char *);
int	 watcher_work(struct watcher *, long long, char *);
int	 watcher_poll(const struct watcher *, long long, struct pollfd *);
int	 watcher_ready(struct watcher *, const struct pollfd *, char *);
json_t	*watcher_events(struct watcher *);
int	 watcher_snapshot(struct watcher *, json_t **, char *);
void	 watcher_free(struct watcher *);

#endif
