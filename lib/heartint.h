/* heartint.h - private to libheart: the ground every wing stands on
 * (HACKING), by file in its order, with the documented defaults; it
 * includes heart.h.  Each .c says what its calls do. */
#ifndef HEARTINT_H
#define HEARTINT_H

#include <limits.h>
#include <stdint.h>

#include "heart.h"

/* util.c */
#define FNV_BASIS	0xcbf29ce484222325ULL	/* FNV-1a, 64 bits */
uint64_t fnv1a(uint64_t, unsigned char);
uint64_t fnv1a_str(uint64_t, const char *);
struct stat;
int	 file_open_regular(const char *, int, mode_t, struct stat *);
int	 file_read(const char *, size_t, char **, size_t *);
char	**env_make(int (*)(const char *, const void *), const void *,
	    char *const *);
void	 env_free(char **);
long long wall_ms(void);
/* utf8.c */
size_t	 utf8_len(const unsigned char *, size_t);
char	*utf8_clean(const char *, size_t, size_t *);
/* secret.c: the secrets heart holds, scrubbed from what it says */
void	 secret_add(const char *);
void	 secret_add_passwords(void);
void	 secret_json(json_t *);
int	 secret_held(const char *);
int	 secret_password_var(const char *);
void	 errf(char *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
/* warning.c */
void	 warningf(const char *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
/* dur.c */
long long dur_max(void);
/* clock.c */
void	 clock_day(const char *, time_t, char *, size_t);
int	 clock_tz_valid(const char *);
const char *clock_tz_local(void);
int	 clock_tz_use(const char *);
time_t	 clock_next_midnight(const char *, time_t);
time_t	 clock_after(const char *, const char *, size_t, time_t);
void	 clock_iso(const char *, time_t, char *, size_t);
int	 clock_parse_utc(const char *, time_t *);
int	 clock_minute_of_day(const char *, time_t);
/* url.c */
int	 url_hostport(const char *, char *, size_t, long long *,
	    const char **, char *, size_t);
/* state.c; how a replaced file is kept (heart(7), State) */
enum state_keep {
	STATE_SYNC,	/* at once: fdatasync, rename, fsync of the dir */
	STATE_WHOLE,	/* at the next sync of its directory */
	STATE_CACHE	/* never synced: rebuilt when it does not read */
};
int	 state_agent_dir(const char *, int, char *, size_t, char *);
int	 state_write(const char *, const char *, const char *, size_t, char *);
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
int	 state_put(const char *, const char *, const char *, size_t,
	    enum state_keep, char *);
int	 state_swap_json(const char *, const char *, const json_t *,
	    enum state_keep, char *);
int	 state_count(const json_t *, const char *, long long *);
/* jscan.c: a validating JSON scanner that builds no tree */
enum {
	JSCAN_NONE, JSCAN_STRING, JSCAN_NUMBER, JSCAN_OBJECT, JSCAN_ARRAY,
	JSCAN_TRUE, JSCAN_FALSE, JSCAN_NULL
};
struct jscan_member {
	const char *key;	/* in: the top-level key wanted */
	const char *val;	/* out: its raw value, NULL when absent */
	size_t	 len;
	int	 type;		/* out: JSCAN_* */
};
int	 jscan_object(const char *, size_t, struct jscan_member *, size_t,
	    char *);
int	 jscan_string(const char *, size_t, char *, size_t);
/* yj.c: YAML into JSON, each key's and value's place kept */
struct yj {
	json_t	*root;
	struct yj_pos *pos;
	size_t	 npos;
	int	 nodoc;	/* no document (blank, or comments): root is {} */
};
int	yj_load(const char *, size_t, int, const char *, struct yj *,
	    char *);
void	yj_free(struct yj *);
void	yj_where(const struct yj *, const json_t *, const char *, size_t, int,
	    int *);
/* price.c */
struct price {
	int	 set;		/* 0: no price: no cost, no budget */
	double	 input, cached_input, cache_write, output;
};
char	*price_text(long long, int, char *, size_t);
int	 price_parse(const json_t *, struct price *, char *);
long long price_cost(const struct price *, const struct usage *);
json_t	*price_json(long long);
/* status.c: the statuses of a wake result, one table */
enum wake_status {
	ST_OK, ST_IDLE, ST_CAPPED, ST_OPEN, ST_NOT_DUE, ST_QUIET,
	ST_NOT_IDLE, ST_BUSY, ST_EMPTY, ST_TOOL_CAP, ST_DRY_RUN, ST_ERROR,
	ST_GATED, ST_THROTTLED, ST_PAUSED, ST_DORMANT, ST_HELD, ST_MISSED,
	ST_BREAKER_OPEN, ST_BREAKER_CLOSED, ST_DORMANT_NOTICE, ST_NSTATUS
};
const char *status_name(enum wake_status);
enum ghost_kind status_kind(enum wake_status);
int	 status_ran(enum wake_status);
void	 status_ghost(enum wake_status, struct ghost_result *);
int	 status_journal(enum wake_status);
int	 status_find(const char *, enum wake_status *);
/* soulfacts.c */
const struct price *soul_price(const struct soul *, int);
int	 soul_triage_same_provider(const struct soul *);

/* soul.c: a soul file loaded (heart-soul(5)); NULL or -1: unset */
#define HEART_SOULMAX	(1024 * 1024)	/* a soul file (heart(7), LIMITS) */
struct hours {
	int	 set;
	int	 start;		/* minute of day, inclusive */
	int	 end;		/* minute of day, exclusive; may wrap */
};
struct adapt_conf {		/* schedule.adaptive (adapt.c) */
	int	 on;
	long long min, max;	/* the interval's bounds, s */
	long long window;	/* days of history looked at */
	double	 weight[3];	/* a LOW, MEDIUM, HIGH ghost's (plain: 1) */
};
struct soul_llm {		/* llm or llm.triage */
	char	*provider, *base_url, *model, *api_key_env;
	long long timeout, max_tokens;
	long long context_budget;	/* tokens */
	int	 cache;		/* LLM_CACHE_*, -1: unset (off) */
	struct price price;	/* set 0: none */
	json_t	*command;	/* argv array, or NULL */
};
struct chamber_conf {
	long long every;	/* schedule.interval or idle.after, s */
	char	*prompt;
	long long daily_cap, seed_tool_cap;
	struct hours active;
	char	*checklist;
	json_t	*gate;		/* the gate program's argv, or NULL */
	long long gate_timeout;	/* s */
};
struct soul {
	char	*path, *name, *system;
	char	*timezone;	/* never NULL after soul_load */
	long long daily_cap;	/* agent-wide */
	long long daily_budget;	/* agent-wide, nanodollars */
	long long monthly_budget; /* the same for the local month */
	long long dormant_after;	/* s; 0 off (dormant.c) */
	long long catch_up;	/* s; 0 never; -1 unset: always (slot.c) */
	long long pulse_interval, pulse_misses;
	struct chamber_conf ch[CH_NCHAMBERS];
	struct adapt_conf adapt;	/* the schedule chamber's */
	long long brk_threshold, brk_cooldown, brk_max_cooldown;
	long long brk_window_fails;	/* breaker.window.failures; 0: off */
	long long brk_window;		/* breaker.window.within, s */
	char	*ghost_token;
	json_t	*ghost_also;	/* array of strings */
	char	*ghost_mode;
	long long ghost_ack_max, history_keep;
	struct soul_llm llm;	/* the main model */
	struct soul_llm *triage;	/* or NULL; a key unset: llm's */
	json_t	*tools;		/* array, or NULL */
	json_t	*mcp;		/* mcp_servers: name -> server, or NULL */
	json_t	*doc;		/* the whole soul as JSON */
	char	**warn;		/* unknown keys and the like */
	size_t	 nwarn;
};
/* soulcheck.c */
int	 soul_hours_in(const struct hours *, int);
int	 soul_hours_out(const struct hours *, const char *, time_t);
/* soulkey.c: the documented defaults (heart-soul(5)) */
#define DEF_SCHEDULE_CAP	48
#define DEF_IDLE_CAP		12
#define DEF_BRK_THRESHOLD	3
#define DEF_BRK_COOLDOWN	(15 * 60)
#define DEF_BRK_MAX_COOLDOWN	(2 * 3600)
#define DEF_BRK_WINDOW_FAILS	10
#define DEF_BRK_WINDOW		3600
#define BRK_WINDOW_MAX		100	/* breaker.window.failures at most */
/* a wake this long after its slot is on time (slot.c, slot_missed) */
#define SLOT_ON_TIME		60
enum { LLM_CACHE_OFF, LLM_CACHE_5M, LLM_CACHE_1H };	/* llm.cache */
void	 soul_defaults(struct soul *);
/* soultool.c */
#define MCP_SEP		"__"	/* a server's tool NAME is SERVER__NAME */
#define MCP_SERVERMAX	16	/* servers in a soul */
int	 soul_tool_name_ok(const char *);

/* for t/ and fuzz/ only */
/* souljson.c */
json_t	*soul_json(const struct soul *);
/* soul.c */
struct soul *soul_new(const char *);

#endif
