/*
 * store.h - private to libheart: what a server store (redis.c) plugs
 * into store.c, and the raw breaker it hands back to brk.c.  The file
 * store is in store.c itself: flock(2) around read-decide-write.
 */
#ifndef HEART_STORE_H
#define HEART_STORE_H

#include "heart.h"

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

/* An endpoint's bucket as stored (bucket.c owns the rules): requests
 * and tokens taken per second of the window, oldest first. */
#define BKT_SLOTS	62
struct bucket {
	long long rpm, tpm;	/* the limits in force; 0: none */
	struct {
		long long sec, req, tok;
	} e[BKT_SLOTS];
	int	 n;
	long long slow_until;	/* a 429 stops the endpoint until then */
	long long n429, throttled, taken;	/* counted since it began */
};

enum bkt_op { BKT_TAKE, BKT_GIVE, BKT_RECORD, BKT_SLOW, BKT_PEEK };

struct bkt_args {
	long long tokens;	/* record */
	time_t	 hold;		/* slow: Retry-After; 0: none given */
	time_t	 at;		/* give: when the request was taken */
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

/* cap.c */
void	 cap_defaults(struct caps *);

/* store.c */
const struct store_ops *store_ops(void);	/* NULL: files */
int	 store_owner_check(const char *, char *);	/* ID or @ENDPOINT */
void	 store_forked(void);
void	 store_use(const struct store_ops *);
void	 store_fail(int);	/* the exit code the last failure asks for */
int	 store_get(const char *agent, const char *name, json_t **,
	    char *err);
int	 store_update(const char *agent, const char *name, store_step_fn,
	    void *ctx, char *err);
const char *store_where(const char *agent, const char *name, char *,
	    size_t);		/* "DIR/NAME" or "URL: KEY"; "file" or "key" */
json_t	*store_parse(const char *where, const char *noun, const char *doc,
	    size_t, char *err);
void	 store_bad_field(const char *agent, const char *name,
	    const char *field, char *err);

#endif
