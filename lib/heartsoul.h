/* heartsoul.h - the soul loader's own (HACKING: soul), after heartint.h,
 * by file in its order; each .c says what its calls do. */
#ifndef HEARTSOUL_H
#define HEARTSOUL_H

/* soulcheck.c: one load of a soul, and the checks of its values */
struct soul_loading {
	const struct yj *y;
	const char *file;
	struct soul *s;
	char	*err;
};
void	 soul_add_warning(struct soul_loading *, const json_t *, const char *,
	    const char *, const char *, const char *);
int	 soul_bad_at(struct soul_loading *, const json_t *, const char *,
	    const char *, const char *, int);
int	 soul_bad(struct soul_loading *, const json_t *, const char *,
	    const char *, const char *);
int	 soul_str(struct soul_loading *, const json_t *, const char *,
	    const char *, char **);
int	 soul_dur(struct soul_loading *, const json_t *, const char *,
	    const char *, long long *);
int	 soul_strlist(const json_t *, int);
int	 soul_need_map(struct soul_loading *, const json_t *, const char *,
	    const char *, json_t **);
/* soulkey.c: the mappings of a soul whose keys its table holds */
enum soul_map {
	M_TOP = 1 << 0,		/* the soul itself: struct soul */
	M_HEART = 1 << 1,	/* heart: struct soul */
	M_SCHED = 1 << 2,	/* heart.schedule: struct chamber_conf */
	M_IDLE = 1 << 3,	/* heart.idle: struct chamber_conf */
	M_ADAPT = 1 << 4,	/* heart.schedule.adaptive: adapt_conf */
	M_LEVELS = 1 << 5,	/* its levels: struct adapt_conf */
	M_PULSE = 1 << 6,	/* heart.pulse: struct soul */
	M_BRK = 1 << 7,		/* heart.breaker: struct soul */
	M_HIST = 1 << 8,	/* heart.history: struct soul */
	M_GHOST = 1 << 9,	/* heart.ghost: struct soul */
	M_LLM = 1 << 10,	/* llm: struct soul_llm */
	M_TRIAGE = 1 << 11,	/* llm.triage: struct soul_llm */
	M_TOOL = 1 << 12,	/* an item of tools (its own code) */
	M_SERVER = 1 << 13	/* a server of mcp_servers (its own code) */
};
const char *soul_map_path(unsigned);
void	*soul_map_base(struct soul *, unsigned);
const char *soul_key_path(char *, size_t, const char *, const char *);
void	 soul_unknown_keys(struct soul_loading *, const json_t *, unsigned,
	    const char *);
int	 soul_walk(struct soul_loading *, const json_t *, unsigned);
int	 soul_load_map(struct soul_loading *, const json_t *, unsigned,
	    json_t **);
json_t	*soul_keys_json(unsigned, const void *);
/* soultool.c: a soul's tools: and mcp_servers: */
int	 soul_load_tools(struct soul_loading *, const json_t *);
/* soul.c: the loader */
void	 soul_unread(const char *, char *);

#endif
