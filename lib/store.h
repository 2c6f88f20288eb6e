/*
 * store.h - private to libheart: what a server store (redis.c) plugs
 * into store.c, and the raw breaker it hands back to brk.c.  The file
 * store needs none of this: it is what cap.c, brk.c and state.c do when
 * no server store is in force.
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
	char	 probe_host[64];	/* and its host (server store) */
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
	long long ptok, ctok;		/* record */
};

/* An outcome for BRK_RECORD: flags, a time to stay open until (0:
 * none) and the reason kept, already one line. */
struct brk_rec {
	int	 flags;
	time_t	 hold;
	const char *reason;
};

#define STORE_MAXEV	4
/* What a server store did to a breaker: its state after, whether this
 * caller got the half-open probe, and the transitions, in order, as
 * "half_open", "open/FROM" or "closed/BY". */
struct brk_out {
	struct brk b;
	int	 probe;
	int	 nev;
	char	 ev[STORE_MAXEV][24];
};

struct store_ops {
	const char *name;	/* the URL, for messages */
	/* one transition of agent's counter; v is the day after it,
	 * with the caps kept (else the defaults) */
	int	(*cap)(const char *agent, enum cap_op, const struct cap_args *,
		    const char *zone, time_t now, int *admitted,
		    struct cap_view *v, char *err);
	/* one transition of agent's breaker; c is normalized, or NULL for
	 * the keys kept with it, else the defaults; rec the outcome of a
	 * record (zero for the other ops) */
	int	(*brk)(const char *agent, enum brk_op,
		    const struct brk_conf *c, time_t now,
		    const struct brk_rec *rec, struct brk_out *out,
		    char *err);
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
};

/* cap.c */
void	 cap_defaults(struct caps *);

/* store.c */
const struct store_ops *store_ops(void);	/* NULL: files */
void	 store_use(const struct store_ops *);
void	 store_fail(int);	/* the exit code the last failure asks for */

#endif
