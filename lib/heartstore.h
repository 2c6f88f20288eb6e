/*
 * heartstore.h - private to libheart's stores (HACKING: stores).  The
 * rules (cap_step, brk_step, bucket_step) are pure: no I/O, no clock;
 * each returns 1 when the state it changed is to be written back.
 */
#ifndef HEARTSTORE_H
#define HEARTSTORE_H

#include "heartint.h"

/* store.c */
int	 store_known(const char *, char *);
int	 store_lock(const char *, const char *, int, char *);
void	 store_unlock(int);
int	 store_read_json(const char *, const char *, json_t **, char *);
int	 store_put_json(const char *, const char *, const json_t *,
	    enum state_keep, char *);
/* an agent's log: lines of at most STORE_LOGLINE bytes, appended whole
 * (journal.c's); files hold at most max bytes, a server keep lines */
#define STORE_LOGLINE	1024
int	 store_log_add(const char *agent, const char *name, const char *line,
	    size_t max, long long keep, char *err);
int	 store_log_read(const char *agent, const char *name, long long last,
	    char ***lines, size_t *n, char *err);
/* a server store (redisstore.c), plugged into store.c: it keeps bytes */
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
	/* agent's log `name': line appended, only the newest keep kept;
	 * read: the newest last (0: all), oldest first */
	int	(*log_add)(const char *agent, const char *name,
		    const char *line, long long keep, char *err);
	int	(*log_read)(const char *agent, const char *name,
		    long long last, char ***lines, size_t *n, char *err);
	/* in a forked child: drop the parent's connection, unused */
	void	(*forked)(void);
};
typedef int (*store_step_fn)(json_t *cur, json_t **next, long long *ttl,
    void *ctx, char *err);
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

/* cap.c */
int	 cap_record(const char *, const char *, time_t, int,
	    const struct usage *, const struct usage *, long long, char *);
time_t	 cap_resets_at(const struct cap_view *, time_t);
time_t	 cap_month_resets_at(const struct cap_view *, time_t);
time_t	 cap_open_at(const struct cap_view *, const struct caps *, time_t);
int	 cap_spend_ok(const struct cap_view *, const struct caps *);
long long cap_agent_limit(const struct caps *);
long long cap_cost(const struct cap_view *);
int	 cap_why(const struct cap_view *, enum chamber, time_t, char *,
	    size_t);
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
/* (tests) t/core-step.c */
int	 cap_step(struct cap_view *, enum cap_op, const struct cap_args *,
	    const char *zone, time_t now, int *admitted);

/* brk.c */
/* outcome flags for brk_record (brk.c says each) */
#define BRK_LLM_OK	0x1
#define BRK_LLM_FAIL	0x2
#define BRK_TOOL_OK	0x4
#define BRK_TOOL_FAIL	0x8
#define BRK_LLM_CONFIG	0x10
#define BRK_TELL	0x20
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
	int	 told;		/* its opening was told: its closing is */
	int	 exists;	/* it was stored before */
};
enum brk_op { BRK_CHECK, BRK_GIVEBACK, BRK_RECORD, BRK_PEEK, BRK_RESET };
/* an outcome for BRK_RECORD; the reason already one line */
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
/* what a transition did: the probe, and "half_open", "open/FROM"...;
 * what opened it, and whether it is told (brk.c) */
struct brk_out {
	int	 probe;
	int	 nev;
	char	 ev[BRK_MAXEV][24];
	const char *kind;
	int	 tell;		/* the outcome's BRK_TELL */
	int	 notice;
};
time_t	 brk_next_go(const struct brk *);
int	 brk_check_writes(const struct brk *, time_t);
void	 brk_view_of(const struct brk *, const struct brk_conf *, time_t,
	    struct brk_view *);
/* (tests) t/core-step.c */
int	 brk_step(struct brk *, enum brk_op, const struct brk_conf *given,
	    time_t now, const struct brk_rec *, const struct brk_who *,
	    struct brk_out *);

/* brkjson.c: the breaker's document, and a transition's events */
#define BRKFILE	"breaker.json"
int	 brkjson_parse(const char *, json_t *, struct brk *, char *);
json_t	*brkjson_of(const char *, const struct brk *, time_t);
void	 brkjson_events(const char *, const struct brk *,
	    const struct brk_out *, json_t *, time_t);

/* brkstore.c */
int	 brk_giveback(const char *agent, time_t now, char *err);

/* hold.c: one hold per provider account; hold_admit 0 not held, 1
 * held, 2 held and this wake is the probe */
#define HOLD_PROBE	900	/* s between probes, unless told */
struct hold_view {
	int	 held;
	char	 endpoint[1024];
	char	 fp[17];	/* FNV-1a 64 of the key, hex */
	char	 kind[8];	/* "quota" or "key" */
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

/* slot.c: the ladder of intervals, the agent's offset, its slots */
long long slot_offset(const char *, long long);
long long slot_rung(long long, long long, long long, double);
long long slot_rung_offset(const struct soul *, long long);
time_t	 slot_from(time_t, long long, long long);
time_t	 slot_before(time_t, long long, long long);

/* pause.c: one pause (since 0: none; until 0: until resumed) */
struct pause_entry {
	time_t	 since, until;
};
/* (tests) t/core-step.c */
void	 pause_rule(const struct pause_entry *, const struct pause_entry *,
	    time_t now, struct pause_view *);

/* bucket.c: an endpoint's bucket as stored (bucket.c owns the rules) */
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
/* (tests) t/core-step.c */
int	 bucket_step(struct bucket *, enum bkt_op, const struct bkt_args *,
	    time_t now, time_t *until);

#endif
