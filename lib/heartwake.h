/* heartwake.h - private to libheart's runner and judge, heart-ghost's
 * side and heart-wake's (HACKING), by file in its order.  Each .c says
 * what its calls do. */
#ifndef HEARTWAKE_H
#define HEARTWAKE_H

#include "heartint.h"

/* child.c: programs run on the model's behalf */
#define TOOL_MAXOUT	(32 * 1024)	/* a tool's output read back */
#define TOOL_GRACE	2000		/* ms from SIGTERM to SIGKILL */
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
struct tool_child {		/* from tool_spawn or tool_fork; -1: none */
	int	 pid, sentinel;
	int	 in, out, err;
};
int	 tool_spawn(const struct tool_proc *, struct tool_child *, char *);
int	 tool_fork(struct tool_child *, char *);
int	 tool_gone(int);
void	 tool_end(struct tool_child *, size_t, long long, int *);
int	 tool_exec(const struct tool_proc *, struct tool_out *, char *);
void	 tool_out_free(struct tool_out *);
int	 tool_status(const char *, const struct tool_proc *,
	    const struct tool_out *, char *);
/* childgroup.c */
int	 tool_groups_run(const struct tool_child *, size_t);
/* idle.c: the one judge of replies (heart-soul(5), GHOSTS) */
enum { IDLE_GHOST, IDLE_KEEP, IDLE_RUN, IDLE_EMPTY };
struct idle_verdict {
	int	 what;		/* IDLE_*; IDLE_EMPTY: no text, no call */
	const char *level;	/* a ghost's: "LOW", "MEDIUM", "HIGH", NULL */
	const char *keep;	/* IDLE_KEEP: the answer, never NULL */
	json_t	*decision;	/* asked: the heartbeat call, or NULL */
	char	 why[256];	/* asked: why there is no decision, or "" */
	char	*own;		/* private */
};
void	 idle_judge(const struct soul *, const char *, const json_t *, int,
	    int, struct idle_verdict *);
json_t	*idle_heartbeat_tool(void);
void	 idle_verdict_free(struct idle_verdict *);
int	 idle_alert(const char *);	/* heart-ghost --alert-only */

/* hist.c */
int	 hist_commit(const char *, const json_t *, const char *,
	    const char *, const char *, long long, char *);
int	 hist_last_sign(const char *, const char *, int, time_t *, char *);
/* histwalk.c: the history read back to front, a whole wake at a time */
#define HISTFILE	"history.jsonl"
#define HISTLOCK	"history.lock"
int	 hist_ioerr(const char *, const char *, char *);
int	 hist_ends(int, const char *, const char *, long long, off_t *,
	    off_t *, char *);
int	 hist_tail(const char *, size_t, json_t **, char *);
int	 hist_last_user(const char *, int, time_t *, char *);
/* ghost.c */
void	 ghost_hash(const char *, char *);
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
int	 outbox_put(const char *, const char *, const char *, const json_t *,
	    char *);
int	 outbox_drop(const char *, const char *, const char *, char *);
int	 outbox_waiting(const char *);
int	 outbox_save(const char *, struct outbox_entry *, size_t, char *);
int	 outbox_cmp(const void *, const void *);
int	 outbox_load(const char *, const char *, struct outbox_entry **,
	    size_t *, char *);
void	 outbox_free(struct outbox_entry *, size_t);

/* wake.c: the chambers' gates and agents/ID/wake.json */
struct wake_state {
	int	 exists;
	time_t	 first_seen;
	time_t	 last[CH_NCHAMBERS];	/* last wake admitted */
	char	 last_status[CH_NCHAMBERS][16];
	time_t	 refused[CH_NCHAMBERS];	/* refused by breaker or cap */
	char	 refused_status[CH_NCHAMBERS][16];
	time_t	 input;			/* the user's last sign, 0: none */
	int	 input_read;		/* input is known (wake_input) */
	time_t	 error_at;
	char	 error[256];
	int	 checklist_warned;
	time_t	 dormant_told;		/* the input time whose dormancy
					   was told (dormant.c), 0: none */
	struct adapt *act;		/* activity.json, or NULL */
	json_t	*carried;		/* checklist.json, once read */
	int	 carried_read;
};
struct gate {
	enum chamber chamber;
	char	 status[16];		/* the skip status, "" if open */
	char	 reason[1024];
	char	 warning[512];		/* to print once, or "" */
	time_t	 next;			/* when this gate opens */
	time_t	 slot;			/* due: the newest slot passed */
	long long interval, offset;	/* in force, s */
	char	*items;			/* open checklist items, or NULL */
	size_t	 left;			/* items left out of the prompt */
	int	 unread;		/* the checklist's end was not read */
	json_t	*why;			/* adaptive: the figures, or NULL */
};
int	 wake_load(const char *, struct wake_state *, char *);
void	 wake_free(struct wake_state *);
int	 wake_gates(const struct soul *, const char *, struct wake_state *,
	    enum chamber, time_t, int, struct gate *);
void	 wake_input(const struct soul *, const char *, struct wake_state *);
time_t	 wake_admit(const struct soul *, const struct wake_state *,
	    enum chamber, time_t, time_t, int);
void	 wake_gate_free(struct gate *);
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
/* adapt.c: the adaptive schedule, agents/ID/activity.json */
struct adapt;
int	 adapt_load(const char *, struct adapt **, char *);
void	 adapt_free(struct adapt *);
long long adapt_interval(const struct soul *, struct adapt *, time_t,
	    json_t **);
time_t	 adapt_next(const struct soul *, struct adapt *, time_t, time_t,
	    time_t);
int	 adapt_record(const char *, const struct soul *, struct adapt **,
	    const char *, const char *, time_t, char *);
/* checklist.c: HEARTBEAT.md, its open items */
#define HEART_CHECKMAX	(256 * 1024)	/* a checklist (heart(7) LIMITS) */
struct checklist_item {		/* an item due, as checklist_fit weighs it */
	const char *line;
	size_t	 cost;		/* its bytes in the request */
	int	 every;		/* it has its own interval */
	time_t	 carried;	/* when last carried; 0: never */
	int	 keep;		/* out: the prompt carries it */
};
int	 checklist_open_items(const char *, char **, char *);
int	 checklist_interval(const char *, long long *);
size_t	 checklist_fit(struct checklist_item *, size_t, size_t);
/* gate.c: a chamber's gate program (heart-soul(5), gate) */
int	 gate_run(const struct soul *, enum chamber, const struct tool_ctx *,
	    const char *, time_t, json_t *, char **, char *);
/* dormant.c: agents nobody reads stop spending */
int	 dormant_check(const struct soul *, const char *, struct wake_state *,
	    enum chamber, time_t, int, json_t **, char *, size_t, char *);
/* tool.c */
char	*tool_text(const char *, const char *, size_t, int);
char	**tool_env(const struct tool_ctx *, const char *, char *const *);
json_t	*tool_offer(const json_t *);
json_t	*tool_args(const json_t *, char *);
int	 tool_call(const struct soul *, const struct tool_ctx *,
	    const json_t *, char **, char *);
/* mcp.c */
const json_t *mcp_offer(const struct mcp *, const json_t **);
int	 mcp_call(struct mcp *, const json_t *, char **, char *);
json_t	*mcp_plan(const struct soul *);
/* mcpserver.c: one MCP server, its process and its messages */
struct mcp_server;
int	 mcp_start(const struct soul *, const struct tool_ctx *, const char *,
	    const json_t *, const char *, struct mcp_server **, char *);
const json_t *mcp_listed(const struct mcp_server *);
int	 mcp_tool_call(struct mcp_server *, const char *, json_t *, char **,
	    size_t *, int *, char *);
json_t	*mcp_server_json(const struct mcp_server *);
void	 mcp_stop(struct mcp_server **, size_t, void (*)(void *,
	    const char *, const char *), void *);
/* llm.c: the model endpoint */
struct llm_conf {
	char	 provider[16];
	char	 base_url[1024];
	char	 model[256];
	char	 key_env[128];
	long long timeout, max_tokens;
	long long budget;		/* llm.context_budget, tokens */
	int	 cache;			/* llm.cache: LLM_CACHE_* */
	const char *soul;		/* the soul's path, for messages */
	const json_t *command;		/* command provider: the soul's argv */
	char	 dir[4096];		/* where the command runs */
};
enum {				/* what a failure asks of a person */
	LLM_TEMP = 1,	/* nothing: it may pass (5xx, 429, timeout...) */
	LLM_CONFIG,	/* fix the key, the model or the URL */
	LLM_QUOTA	/* add credit: the account's quota is used up */
};
struct llm_reply {
	char	*text;
	json_t	*tool_calls;		/* OpenAI form, or NULL */
	struct usage u;			/* its tokens; ask.c bounds them */
	const char *cut;		/* what stopped it unfinished:
					   "max_tokens", a filter; or NULL */
	long long cost;			/* ask.c's price of u, nano$; -1:
					   no price */
	int	 fail;			/* failed: LLM_*; else 0 */
	time_t	 hold;			/* failed: Retry-After, or 0 */
	time_t	 account;		/* failed: a 429 of the account's
					   rate limit, its reset; or 0 */
	long	 status;		/* failed: the HTTP status, or 0 */
};
int	 llm_conf(const struct soul *, int, struct llm_conf *, char *);
json_t	*llm_dry(const struct llm_conf *, json_t *);
int	 llm_key_warning(const struct llm_conf *, char *, size_t);
#define LLM_TOKENS_MAX	(1LL << 50)	/* a usage count read, at most */
void	 llm_headers(const struct llm_conf *, const char *, char [][512],
	    size_t *, char *, size_t);
int	 llm_parse(const char *, const char *, size_t, struct llm_reply *,
	    char *);
void	 llm_reply_free(struct llm_reply *);
json_t	*llm_body(const struct llm_conf *, json_t *, json_t *,
	    const char *);
/* llmsend.c: a request sent, by HTTP or to the command provider */
int	 llm_preload(char *);
int	 llm_send(const struct llm_conf *, json_t *, time_t,
	    struct llm_reply *, char *);
/* llmfit.c */
size_t	 llm_cost(const json_t *);
json_t	*llm_fit(const json_t *, size_t, size_t, long long);
size_t	 llm_items_room(size_t, long long);
/* ask.c: one request to a model, every one heart sends */
#define USAGE_SLACK	4096	/* tokens a provider may add on its side */
struct wake;
int	 ask_send(struct wake *, const struct llm_conf *, int, json_t *,
	    struct llm_reply *, char *);
/* triage.c */
json_t	*triage_dry(struct wake *, const char *);
int	 triage_wake(struct wake *, const char *, int *, char *);
/* talk.c: an admitted wake's conversation with the model and its tools */
int	 talk_wake(struct wake *, const struct llm_conf *, char *);
json_t	*talk_dry(struct wake *, const struct llm_conf *, char *);
/* outcome.c: the wake's outcome, as its result says it */
struct outcome {
	enum wake_status status;	/* ST_ERROR until decided */
	char	 reason[1024];		/* "" when none */
	const char *idle_level;		/* idle.c's, or NULL */
	char	 warning[2048];		/* the warnings, "; " between, or "" */
};
void	 outcome_set(struct wake *, const char *, const char *);
void	 outcome_status(struct wake *, enum wake_status);
void	 outcome_reason(struct wake *, const char *);
void	 outcome_reply(struct wake *, enum wake_status, const char *,
	    const char *);
void	 outcome_warn(struct wake *, const char *);
/* admit.c */
int	 admit_held(struct wake *, const struct llm_conf *, int, char *,
	    size_t, const char **, char *);
int	 admit_wake(struct wake *, const struct llm_conf *, char *, size_t,
	    const char **, char *);
/* run.c: one wake of one agent, from its lock to its result */
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
	json_t	*events, *res;
	json_t	*said;			/* res's messages */
	struct outcome out;		/* what res says of the outcome */
	long long t0;
	int	 loaded;		/* w was read */
	char	*gate_out;		/* the gate program's output, or NULL */
	struct llm_conf tc;		/* the triage endpoint, */
	int	 triage;		/* when the soul names one */
	char	*found;			/* the triage's finding, or NULL */
	int	 tfail;			/* the triage failed: LLM_* */
	struct usage tu;		/* the triage's tokens */
	long long tcost;		/* and their cost, nano$; -1: none */
	time_t	 thold;
	char	 terr[HEART_ERRLEN];
	char	 ep[HEART_IDMAX + 1];	/* its endpoint (bucket.c), or "" */
	char	 tep[HEART_IDMAX + 1];	/* the triage's, or "" */
	time_t	 taken;			/* when its first request was admitted */
	time_t	 budget_at;	/* the fleet's budget, reached, admits again
				   then (budget.c); 0: it admits; -1: it
				   never does (a budget of $0) */
	time_t	 held_until;	/* a hold its requests set lets a wake
				   go then (hold.c); 0: none */
};
void	 run_id(time_t, char *, size_t);
time_t	 run_open_at(const struct wake *, enum chamber);
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
int	 soulcache_save(struct soulcache *, int, char *);

/* for t/ and fuzz/ only */
/* idle.c */
int	 idle_detect(const struct soul *, const char *, const char **);
/* mcpserver.c: the parsers of what a server sends (pure) */
enum { MCP_RESULT, MCP_ERROR, MCP_NOTE, MCP_REQUEST, MCP_STRAY };
int	 mcp_message(const char *, size_t, long long, json_t **, char *);
int	 mcp_tools(const json_t *, json_t *, const char **, char *);
int	 mcp_result(const json_t *, char **, size_t *, int *, char *);
/* llmsend.c: a 429 read by its rate-limit headers */
#define HTTP_LIMITS	16	/* rate-limit headers kept, at most */
time_t	 llm_rate_account(char [][2][64], size_t, time_t, time_t);
/* ask.c */
void	 ask_usage_bound(struct usage *, long long, long long, long long,
	    char *, size_t);

#endif
