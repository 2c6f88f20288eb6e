/*
 * heartint.h - private to libheart: the ground every wing stands on
 * (HACKING), with the documented defaults; it includes heart.h.  Each
 * wing has its own header, included only where used.  "(tests)" marks
 * what outside its file only t/ or fuzz/ calls.
 */
#ifndef HEARTINT_H
#define HEARTINT_H

#include <limits.h>
#include <stdint.h>

#include "heart.h"

/* util.c */
/* FNV-1a, 64 bits (hashes that are kept or shape a schedule) */
#define FNV_BASIS	0xcbf29ce484222325ULL
uint64_t fnv1a(uint64_t, unsigned char);
uint64_t fnv1a_str(uint64_t, const char *);
int	 file_read(const char *, size_t, char **, size_t *);
/* a child's environment, to free with env_free */
char	**env_make(int (*)(const char *, const void *), const void *,
	    char *const *);
void	 env_free(char **);
/* The wall clock in ms (round.c: a second to the tick) */
long long wall_ms(void);

/* utf8.c */
size_t	 utf8_len(const unsigned char *, size_t);
char	*utf8_clean(const char *, size_t, size_t *);

/* secret.c: the secrets heart holds, scrubbed from what it says */
void	 secret_add(const char *);
void	 secret_json(json_t *);
int	 secret_held(const char *);
int	 secret_password_var(const char *);
/* errf: a message, scrubbed of secrets, one line */
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
void	 clock_iso(const char *, time_t, char *, size_t);
int	 clock_parse_utc(const char *, time_t *);
int	 clock_minute_of_day(const char *, time_t);

/* url.c: HOST[:PORT] of a broker's or a store's URL */
int	 url_hostport(const char *, char *, size_t, long long *,
	    const char **, char *, size_t);

/* state.c */
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
/* how a replaced file is kept (state.c; heart(7), State) */
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

/* yj.c: YAML into JSON, each key's and value's place kept */
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

/* price.c */
char	*price_text(long long, int, char *, size_t);
int	 price_parse(const json_t *, struct price *, char *);
long long price_cost(const struct price *, const struct usage *);
json_t	*price_json(long long);

/* soul.c */
#define HEART_SOULMAX	(1024 * 1024)	/* a soul file (heart(7), LIMITS) */
/* (tests) fuzz/llm.c fuzz/judge.c */
void	 soul_defaults(struct soul *);
/* (tests) fuzz/llm.c fuzz/judge.c */
struct soul *soul_new(const char *);
/* (tests) t/soul-dump.c fuzz/soul.c */
json_t	*soul_json(const struct soul *);
/* the documented defaults (heart-soul(5)) of the caps and the breaker */
#define DEF_SCHEDULE_CAP	48
#define DEF_IDLE_CAP		12
#define DEF_BRK_THRESHOLD	3
#define DEF_BRK_COOLDOWN	(15 * 60)
#define DEF_BRK_MAX_COOLDOWN	(2 * 3600)
#define DEF_BRK_WINDOW_FAILS	10
#define DEF_BRK_WINDOW		3600
#define BRK_WINDOW_MAX		100	/* breaker.window.failures at most */
/* llm.cache: Anthropic's prompt cache */
enum { LLM_CACHE_OFF, LLM_CACHE_5M, LLM_CACHE_1H };
/* mcp_servers: a server's tool NAME is offered as SERVER__NAME */
#define MCP_SEP		"__"
#define MCP_SERVERMAX	16		/* servers in a soul */
/* soulfacts.c */
const struct price *soul_price(const struct soul *, int);
int	 soul_triage_same_provider(const struct soul *);
/* soultool.c, soulcheck.c */
int	 soul_tool_name_ok(const char *);
int	 soul_hours_in(const struct hours *, int);

/* status.c: the statuses of a wake result, one table */
enum wake_status {
	ST_OK, ST_IDLE, ST_CAPPED, ST_OPEN, ST_NOT_DUE, ST_QUIET,
	ST_NOT_IDLE, ST_BUSY, ST_EMPTY, ST_TOOL_CAP, ST_DRY_RUN, ST_ERROR,
	ST_GATED,
	ST_THROTTLED,
	ST_PAUSED,
	ST_DORMANT,
	ST_HELD,
	ST_BREAKER_OPEN, ST_BREAKER_CLOSED,
	ST_NSTATUS
};
const char *status_name(enum wake_status);
enum ghost_kind status_kind(enum wake_status);
int	 status_ran(enum wake_status);
int	 status_hist(enum wake_status);
int	 status_alert(enum wake_status);
int	 status_journal(enum wake_status);
int	 status_find(const char *, enum wake_status *);

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

#endif
