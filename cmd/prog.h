/*
 * prog.h - what every program of heart says the same way (prog.c):
 * its usage, and its messages on standard error, "PROG: [WHO: ]MSG" on
 * one printable line whatever the text from outside in them holds.
 * Each program defines progname and usage_text.
 */
extern const char progname[];
extern const char usage_text[];

void	 usage(void) __attribute__((noreturn));
void	 warn(const char *, const char *);
void	 die(int, const char *) __attribute__((noreturn));

/* the status commands' souls and agent operands (soulset.c) */
void	 prog_add_soul(struct soulset *, const char *);
const char *prog_check_agent(const char *);
int	 prog_unknown(const struct soulset *, const char *);
const char *prog_one_agent(const struct soulset *, int, char **);

/* what a status command shows, agent by agent */
struct prog_status {
	char	**names;	/* the agents to show; then those read */
	size_t	  n;
	size_t	  nread;	/* set by prog_status_each */
	char	**list;		/* the store's agents, behind names */
	size_t	  nl;
	int	  idw;		/* the table's AGENT column */
};
int	 prog_status_names(const struct soulset *, int, char **,
	    struct prog_status *, int *);
int	 prog_status_each(struct prog_status *,
	    int (*)(const char *, size_t, int, time_t), time_t, int);
void	 prog_status_free(struct prog_status *);
void	 prog_defaults_note(int, const char *, const char *);

/* --prom (prom.c) */
const char *prog_prom_operand(int, char **);
void	 prog_prom_check(const char *, int, const char *);
int	 prog_prom_put(const char *, const char *, int);
