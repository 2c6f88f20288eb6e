/* heartstore.h - private to libheart's stores (HACKING: stores).  The
 * rules (cap_step, brk_step, bucket_step...) are pure: no I/O, no clock;
 * each returns 1 when the state it changed is to be written back. */
#ifndef HEARTSTORE_H
#define HEARTSTORE_H

#include "heartint.h"

/* store.c; a server store (redisstore.c) plugs in its store_ops */
struct store_ops {		/* (agent, name...) -1 with err */
	/* *doc: the document as stored (NULL: none), to free */
	int	(*get)(const char *, const char *, char **doc, char *);
	/* doc in place of old (NULL: none), kept ttl s: 1, or 0 when
	 * someone changed it meanwhile */
	int	(*cas)(const char *, const char *, const char *old,
		    const char *doc, long long ttl, char *);
	/* "URL: KEY" of a document, for messages */
	void	(*where)(const char *, const char *, char *, size_t);
	int	(*lock)(const char *dir, const char *, int, char *);
	void	(*unlock)(int);
	int	(*write_json)(const char *dir, const char *, const json_t *,
		    char *);
	int	(*agents)(char ***, size_t *, char *);
	int	(*known)(const char *, char *);	/* 1: it has keys */
	/* agent's log `name': line appended, only the newest keep kept;
	 * read: the newest last (0: all), oldest first */
	int	(*log_add)(const char *, const char *, const char *line,
		    long long keep, char *);
	int	(*log_read)(const char *, const char *, long long last,
		    char ***lines, size_t *n, char *);
	void	(*forked)(void);	/* in a child: drop the connection */
};
typedef int (*store_step_fn)(json_t *cur, json_t **next, long long *ttl,
    void *ctx, char *err);
int	 store_known(const char *, char *);
int	 store_lock(const char *, const char *, int, char *);
void	 store_unlock(int);
int	 store_read_json(const char *, const char *, json_t **, char *);
int	 store_put_json(const char *, const char *, const json_t *,
	    enum state_keep, char *);
const struct store_ops *store_ops(void);	/* NULL: files */
int	 store_server_named(const char *);	/* not "file" */
void	 store_forked(void);
void	 store_use(const struct store_ops *);
void	 store_fail(int);	/* the exit code the last failure asks */
int	 store_get(const char *, const char *, json_t **, char *);
int	 store_update(const char *, const char *, enum state_keep,
	    store_step_fn, void *, char *);
void	 store_bad_field(const char *, const char *, const char *, char *);
/* journal.c */
int	 journal_add(const char *, time_t, const char *, const char *,
	    const char *, const char *, char *);
/* endpoint.c: endpoint_limits' are a minute, 0: no limit */
struct llm_conf;
int	 endpoint_limits(const char *, long long *, long long *, char *);
const char *endpoint_file(void);
int	 endpoint_of(const struct llm_conf *, char *, size_t, char *);
void	 endpoint_none_why(char *, size_t);
/* budget.c: the fleet's budget, and the week a counter keeps */
enum { BUDGET_ADMIT, BUDGET_REACHED, BUDGET_CROWDED };	/* a take's */
int	 budget_take(const char *, time_t, int *, struct budget_view *,
	    char *);
int	 budget_admits(const char *, time_t, int *, struct budget_view *,
	    char *);
int	 budget_give(const char *, time_t, char *);
int	 budget_record(const char *, time_t, long long, char *);
int	 budget_spent(const struct budget_view *);
void	 budget_why_at(const struct budget_view *, int, time_t, char *,
	    size_t, time_t *);
struct forecast {	/* at the last seven days' mean */
	int	 days;		/* days known of the seven; 0: no forecast */
	long long rate;		/* their mean spend a day, nanodollars */
	time_t	 daily_at;	/* the daily budget reached today; 0: not */
	time_t	 monthly_at;	/* the monthly this month; 0: not */
	char	 monthly_on[16];	/* monthly_at's local date */
};
void	 budget_forecast(const struct week *, const char *, const char *,
	    long long, long long, long long, long long, time_t,
	    struct forecast *);
json_t	*budget_forecast_json(const struct forecast *);
void	 week_roll(struct week *, const char *, long long, const char *);
int	 week_parse(const json_t *, struct week *);
void	 week_json(const struct week *, json_t *);
/* cap.c */
void	 cap_forecast(const struct cap_view *, time_t, struct forecast *);
int	 cap_record(const char *, const char *, time_t, int,
	    const struct usage *, const struct usage *, long long, char *);
time_t	 cap_open_at(const struct cap_view *, const struct caps *, time_t);
int	 cap_spend_ok(const struct cap_view *, const struct caps *);
long long cap_agent_limit(const struct caps *);
long long cap_cost(const struct cap_view *);
/* brk.c; brk_record's outcome flags */
#define BRK_LLM_OK	0x1
#define BRK_LLM_FAIL	0x2
#define BRK_TOOL_OK	0x4
#define BRK_TOOL_FAIL	0x8
#define BRK_LLM_CONFIG	0x10
#define BRK_TELL	0x20
struct brk {			/* as stored, whichever the store */
	enum brk_state state;
	long long llm_fails, tool_fails;
	long long cooldown;	/* open, half_open: the current one, s */
	struct brk_conf kept;	/* keys last written; 0: none, window -1: off */
	time_t	 failed[BRK_WINDOW_MAX];	/* times, oldest first */
	int	 nfailed;
	time_t	 until;		/* open: end of the cooldown */
	time_t	 probe_at;	/* half_open: probe granted; 0 if none */
	long long probe_pid;	/* the process it was granted to */
	char	 probe_host[64];	/* and its host */
	char	 trigger[8];
	char	 reason[256];
	int	 told;		/* its opening was told: its closing is */
	int	 exists;	/* it was stored before */
};
enum brk_op { BRK_CHECK, BRK_GIVEBACK, BRK_RECORD, BRK_PEEK, BRK_RESET };
struct brk_ask {		/* who asks a step, and BRK_RECORD's outcome */
	long long pid;		/* a probe is granted to one process */
	const char *host;
	int	 flags;
	time_t	 hold;
	const char *reason;	/* one line */
};
#define BRK_MAXEV	4
struct brk_out {		/* what a transition did */
	int	 probe;
	int	 nev;
	char	 ev[BRK_MAXEV][24];	/* "half_open", "open/FROM"... */
	const char *kind;	/* what opened it */
	int	 tell;		/* the outcome's BRK_TELL */
	int	 notice;
	struct brk_view view;	/* the breaker after it, as shown */
};
time_t	 brk_next_go(const struct brk *);
int	 brk_step(struct brk *, enum brk_op, const struct brk_conf *,
	    time_t, const struct brk_ask *, struct brk_out *);
/* brkstore.c */
int	 brk_giveback(const char *, time_t, char *);
/* hold.c: hold_admit 0 not held, 1 held, 2 held and the probe */
struct hold_view {
	int	 held;
	char	 endpoint[1024];
	char	 fp[17];	/* FNV-1a 64 of the key, hex */
	char	 kind[8];	/* "quota", "key" or "rate" */
	long	 http;
	time_t	 since, probe;
};
int	 hold_admit(const char *, const char *, time_t, int,
	    struct hold_view *, char *);
int	 hold_set(const char *, const char *, const char *, long, time_t,
	    time_t, char *);
int	 hold_giveback(const char *, const char *, time_t, char *);
int	 hold_lift(const char *, const char *, time_t, char *);
void	 hold_why(const struct hold_view *, char *, size_t);
/* bucket.c */
int	 bucket_give(const char *, time_t, time_t, char *);
int	 bucket_gate(const char *, const char *, time_t *, time_t, time_t *,
	    char *, size_t, char *);
int	 bucket_gate_ok(const struct rate_view *, time_t, char *, size_t);
int	 bucket_send(const char *, time_t, long long, char *);
void	 bucket_after(const char *, long, time_t, long long, time_t);
/* slot.c: the ladder of intervals, the agent's offset, its slots */
long long slot_offset(const char *, long long);
long long slot_rung(long long, long long, long long, double);
long long slot_rung_offset(const struct soul *, long long);
time_t	 slot_from(time_t, long long, long long);
time_t	 slot_before(time_t, long long, long long);
int	 slot_missed(time_t, time_t, long long);
void	 slot_why(time_t, time_t, long long, char *, size_t);
time_t	 slot_idle_due(time_t, time_t, time_t, long long);

/* for t/ and fuzz/ only */
/* budget.c: the document as budget_step sees it */
enum budget_op { BUDGET_TAKE, BUDGET_GIVE, BUDGET_RECORD, BUDGET_PEEK };
#define BUDGET_LEASE	900	/* s a wake in flight counts unrecorded */
#define BUDGET_RETRY	60	/* s a crowded wake is deferred */
#define BUDGET_WAKES	1024	/* wakes in flight kept (heart(7) LIMITS) */
struct budget {
	struct budget_view v;
	struct {
		char	 agent[HEART_IDMAX + 1];
		time_t	 at;
	} w[BUDGET_WAKES];
	int	 nw;
};
int	 budget_step(struct budget *, enum budget_op, const char *,
	    long long, const struct fleet_budget *, time_t, int *);
/* cap.c */
enum cap_op { CAP_TAKE, CAP_RECORD, CAP_PEEK, CAP_RESET };
struct cap_args {
	enum chamber ch;		/* take */
	const struct caps *caps;	/* take; NULL: those kept */
	long long chcap;		/* take: ch's cap instead, or -1 */
	int	 ghost;			/* record */
	const struct usage *u;		/* record: tokens, or NULL */
	const struct usage *tu;		/* record: the triage's, or NULL */
	long long cost;			/* record: nanodollars, or -1 */
};
int	 cap_step(struct cap_view *, enum cap_op, const struct cap_args *,
	    const char *, time_t, int *);
time_t	 cap_resets_at(const struct cap_view *, time_t);
/* pause.c: one pause (since 0: none; until 0: until resumed) */
struct pause_entry {
	time_t	 since, until;
};
void	 pause_rule(const struct pause_entry *, const struct pause_entry *,
	    time_t, struct pause_view *);
/* bucket.c: an endpoint's bucket as stored */
#define BKT_SLOTS	124	/* the window on either side of now */
#define BKT_LINE	512	/* wakes kept in line */
struct bucket {
	struct rate_view v;	/* the limits in force, the counts kept */
	struct {
		long long sec, req, tok;
	} e[BKT_SLOTS];
	int	 n;
	struct {
		char	 who[HEART_IDMAX + 1];	/* the agent */
		long long since, seen;	/* first deferred, last asked */
	} q[BKT_LINE];
	int	 nq;
};
enum bkt_op { BKT_TAKE, BKT_GIVE, BKT_MOVE, BKT_RECORD, BKT_SLOW, BKT_PEEK };
struct bkt_args {
	long long tokens;	/* record */
	time_t	 hold;		/* slow: Retry-After; 0: none given */
	time_t	 at;		/* give, move: when the request was taken */
	const char *who;	/* take: the wake's agent; NULL: a later ask */
};
int	 bucket_step(struct bucket *, enum bkt_op, const struct bkt_args *,
	    time_t, time_t *);

#endif
