/*
 * heartpulse.h - private to libheart's pulse side (HACKING: pulse), by
 * file in its order; each .c says what its calls do.
 */
#ifndef HEARTPULSE_H
#define HEARTPULSE_H

#include "heartint.h"

/* pulse.c: what a pulse says, read from state without locks */
#define PULSE_BREAKER	1
#define PULSE_WAKE	2
#define PULSE_CAP	4
#define PULSE_JOURNAL	8
#define PULSE_INPUT	16	/* the user's last sign: the idle chamber's */
struct pulse_state {		/* one per agent: keep it small */
	char	 breaker[10];	/* closed, open, half_open; "": unknown */
	signed char waking;	/* 1, 0, or -1: unknown */
	char	 chamber[9];	/* of the running wake, if known */
	char	 last_status[16];	/* the last admitted wake's, or "" */
	signed char last_chamber;	/* its enum chamber */
	char	 brk_trigger[5];	/* "llm", "tool" or "" */
	char	 quiet;		/* outside every chamber's active hours */
	signed char skip;	/* the journal's last entry's enum
				   wake_status, when a skip; -1 */
	char	 overdue;	/* due passed, not looked at (pulse_overdue) */
	long long pid;		/* of the running wake, 0 if not given */
	long long cap_used;	/* -1: unknown */
	long long cap_max;
	time_t	 cap_until;	/* cap_used holds until this time */
	long long tokens;	/* today's, prompt and completion */
	long long cost;		/* today's, nanodollars; -1: no price */
	time_t	 brk_until;	/* not closed: the next probe; 0: none */
	char	*brk_reason;	/* not closed: why it opened; pulse_clear's */
	time_t	 last_ts;	/* when the last admitted wake began */
	char	*last_error;	/* its error, or NULL; pulse_clear's */
	time_t	 answer;	/* the last real answer seen; 0: none */
	time_t	 due;		/* the schedule next due; 0: off */
	time_t	 idle_due;	/* the idle chamber next due; 0: off */
	time_t	 idle_used;	/* its slot last used; 0: none */
	time_t	 seen;		/* the agent's first sight (wake.json) */
	time_t	 input;		/* the user's last sign; 0: none */
	time_t	 looked;	/* the journal's last entry; 0: none */
	char	*skip_reason;	/* its reason, when a skip; pulse_clear's */
};
/* the schedule's slots, for pulse_read's due (every 0: off), and when
 * to count them from while wake.json has no slot used or first sight */
struct pulse_slots {
	long long every, off;
	time_t	 from;
	long long idle;		/* the idle chamber's after; 0: off */
};
void	 pulse_docs(json_t *, json_t *, const struct pulse_slots *,
	    struct pulse_state *);
void	 pulse_slots_of(const struct soul *, long long *, long long *);
int	 pulse_overdue(time_t, long long, time_t, time_t);
int	 pulse_read(const char *, const char *, const struct caps *,
	    const struct pulse_slots *, time_t, unsigned, struct pulse_state *,
	    char *);
void	 pulse_unknown(const struct pulse_slots *, unsigned,
	    struct pulse_state *);
void	 pulse_clear(struct pulse_state *);
int	 pulse_changed(const struct pulse_state *, const struct pulse_state *);
int	 pulse_quiet(const char *, const struct caps *, const struct hours *,
	    time_t);
int	 pulse_format(char *, size_t, const char *, unsigned long long,
	    long long, const struct timespec *, const char *,
	    const struct pulse_state *);
int	 pulse_topic(char *, size_t, const char *, const char *,
	    const char *);
int	 pulse_pid_gone(long long);
/* mqtt.c: one broker connection (only heart-pulse links it) */
#define MQTT_EV_UP	1	/* connected (CONNACK accepted) */
#define MQTT_EV_DOWN	2	/* a working connection went */
#define MQTT_EV_FAIL	4	/* an attempt failed */
#define MQTT_EV_DENIED	8	/* it was refused our credentials */
#define MQTT_EV_TAKEN	16	/* another client took our client id */
struct mqtt_url {
	int	 tls;
	char	 host[256];
	int	 port;
};
struct mqtt_conf {
	struct mqtt_url url;
	const char *client_id;	/* NULL: one is made up */
	const char *username, *password;
	const char *cafile, *certfile, *keyfile;
	int	 keepalive;	/* s */
	long long backoff_max;	/* ms */
};
struct mqtt;
int	 mqtt_url_parse(const char *, struct mqtt_url *, char *);
struct mqtt *mqtt_new(const struct mqtt_conf *, char *);
void	 mqtt_free(struct mqtt *);
void	 mqtt_on_message(struct mqtt *, void (*)(void *, const char *,
	    const void *, int, int), void *);
void	 mqtt_subscribe(struct mqtt *, const char *);
int	 mqtt_will(struct mqtt *, const char *, const char *, int, char *);
void	 mqtt_dial(struct mqtt *, long long);
int	 mqtt_up(const struct mqtt *);
long long mqtt_retry_at(const struct mqtt *);
void	 mqtt_pollfd(const struct mqtt *, struct pollfd *);
int	 mqtt_busy(const struct mqtt *);
const char *mqtt_why(const struct mqtt *);
int	 mqtt_v5(const struct mqtt *);
int	 mqtt_unacked(const struct mqtt *);
int	 mqtt_window(const struct mqtt *);
unsigned mqtt_io(struct mqtt *, short, long long);
int	 mqtt_publish(struct mqtt *, const char *, const void *, int, int,
	    int, int);
int	 mqtt_refused(struct mqtt *, char *, size_t, char *, size_t);
void	 mqtt_cork(struct mqtt *, int);
void	 mqtt_disconnect(struct mqtt *);
/* broker.c: the broker connection of heart-pulse's two ends */
struct broker {
	const struct pulse_opts *o;
	struct mqtt *q;
	struct mqtt_conf mc;
	const char *url;	/* the broker */
	const char *prefix;
	char	 host[256];
	char	 client_id[HEART_IDMAX + 1];
	int	 watcher;
	int	 said_down;	/* an outage was said; quiet until it ends */
	int	 connects, fatal;
	char	 why[HEART_ERRLEN];
};
void	 broker_init(struct broker *, const struct pulse_opts *, int);
int	 broker_prefix_check(const struct broker *, char *);
int	 broker_open(struct broker *, char *);
void	 broker_close(struct broker *);
void	 broker_report(struct broker *, unsigned);
void	 broker_rival(struct broker *);
int	 broker_timeout(const struct broker *, long long, long long);
void	 broker_flush(struct broker *, long long, int);
int	 broker_failed(const struct broker *, char *);
/* sdnotify.c: READY=1 and WATCHDOG=1 to $NOTIFY_SOCKET */
int	 sdnotify_send(const char *, char *);
long long sdnotify_watchdog(void);
/* pubagents.c: the agents of one publisher, their schedule and the
 * state their pulses carry */
struct pubagents;
struct pubagent;
struct pulse_agentinfo {
	const char *id;
	long long interval;	/* s */
	long long misses;
};
struct pubagents *pubagents_new(long long, int);
void	 pubagents_free(struct pubagents *);
void	 pubagents_rebase(struct pubagents *, long long);
struct pubagent *pubagents_due(struct pubagents *, long long, long long *);
void	 pubagent_info(const struct pubagent *, struct pulse_agentinfo *);
size_t	 pubagents_overdue(const struct pubagents *);
void	 pubagents_read(struct pubagents *, time_t);
struct pubagent *pubagents_changed(struct pubagents *);
int	 pubagents_pulse(struct pubagents *, struct pubagent *, int,
	    const char *, long long, const struct timespec *, char *, size_t);
void	 pubagents_unborn_all(struct pubagents *);
struct pubagent *pubagents_unborn(struct pubagents *);
long long pubagents_poll(struct pubagents *, struct pollfd *, int *);
struct pubagent *pubagents_gone(struct pubagents *);
long long pubagents_load(struct pubagents *, char *const *, size_t,
	    const char *, long long, size_t *, char *);

/* for t/ and fuzz/ only */
/* pulse.c */
time_t	 pulse_due(long long, long long, time_t);

#endif
