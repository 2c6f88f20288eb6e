/*
 * prog.h - what every program of heart says the same way (prog.c):
 * its usage, and its messages on standard error, "PROG: [WHO: ]MSG" on
 * one printable line whatever the text from outside in them holds,
 * the library's warnings among them (prog_warning, the sink each main
 * gives warning_sink first); and what the status commands (heart-cap,
 * heart-breaker) share: their common options, the agents they show,
 * --prom.  Each program defines progname and usage_text.
 */
extern const char progname[];
extern const char usage_text[];

void	 usage(void) __attribute__((noreturn));
void	 say(const char *, const char *);
void	 prog_warning(void *, const char *, const char *);
void	 die(int, const char *) __attribute__((noreturn));

/* the status commands' souls and agent operands (soulset.c) */
void	 prog_add_soul(struct soulset *, const char *);
const char *prog_check_agent(const char *);
int	 prog_unknown(const struct soulset *, const char *);
const char *prog_one_agent(const struct soulset *, int, char **);

/*
 * The options every status command takes, after its own: its
 * optstring ends in PROG_STATUS_SHORTOPTS, its table in
 * PROG_STATUS_LONGOPTS, and what its own cases do not take goes to
 * prog_status_opt.
 */
#define PROG_STATUS_SHORTOPTS	"s:jvh"
#define PROG_STATUS_LONGOPTS \
	{ "soul", required_argument, NULL, 's' }, \
	{ "json", no_argument, NULL, 'j' }, \
	{ "verbose", no_argument, NULL, 'v' }, \
	{ "store", required_argument, NULL, 'S' }, \
	{ "prom", optional_argument, NULL, 'P' }, \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, 'V' }, \
	{ NULL, 0, NULL, 0 }
struct prog_opts {
	struct soulset set;	/* the souls given */
	int	 jflag, vflag, pflag;
	const char *promfile;	/* --prom's; NULL: stdout */
	const char *store;	/* --store's, for redisstore_open */
};
void	 prog_status_opt(int, int, char **, struct prog_opts *);
void	 prog_no_cmd(const char *, const char *) __attribute__((noreturn));
const char *prog_status_cmd(int *, char ***, struct prog_opts *);

/* what a status command shows, agent by agent */
struct prog_status {
	char	**names;	/* the agents to show; then those read */
	size_t	  n;
	size_t	  nread;	/* set by prog_status_each */
	char	**list;		/* the store's agents, behind names */
	size_t	  nl;
	int	  idw;		/* the table's AGENT column */
	int	  ndefault;	/* rows shown with the defaults */
};
int	 prog_status_names(const struct soulset *, int, char **,
	    struct prog_status *, int *);
int	 prog_status_each(struct prog_status *,
	    int (*)(const char *, size_t, int, time_t), time_t, int);
void	 prog_status_free(struct prog_status *);
void	 prog_defaults_note(const struct prog_status *, const char *,
	    const char *);
const char *prog_whose(int, int);
char	*prog_whose_text(int, int, const char *, char *, size_t);

/* --prom (prom.c) */
const char *prog_prom_operand(int, char **);
void	 prog_prom_check(const char *, const struct prog_opts *);
int	 prog_prom_put(const char *, const char *, int);
