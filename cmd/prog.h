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
