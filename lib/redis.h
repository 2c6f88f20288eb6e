/*
 * redis.h - private to the Redis store: what redisconn.c, its
 * connection and protocol, gives redisstore.c (the store's operations)
 * and redisupgrade.c (the upgrade of heart 0.x's keys).  Only those
 * three include it, after heartint.h: it brings in hiredis, which
 * heartint.h, included by every file of the library, must not (a
 * program that opens no store, heart-ghost, links no client library:
 * see store.c).
 */
#ifndef REDIS_H
#define REDIS_H

#include <hiredis.h>

#define REDISCONN_MAXARGS	16

/* redisconn.c: the store's server and the connection, one a process */
struct redisconn {
	char	 url[512];	/* as given; it never holds a password */
	char	 host[256];
	int	 port;
	long long db;
	char	 me[128];	/* host name, for the probe and the tokens */
	redisContext *ctx;
};
extern struct redisconn redis_conn;

/* A command, built with redisconn_aput and redisconn_anum (a.n = 0
 * to start one) */
struct redisconn_args {
	int	 n;
	const char *v[REDISCONN_MAXARGS];
	size_t	 len[REDISCONN_MAXARGS];
	char	 buf[REDISCONN_MAXARGS][32];
};

/*
 * redisconn.c: redisconn_parse_url fills redis_conn from a redis://
 * URL; redisconn_begin starts each call (connected, store_fail
 * cleared); redisconn_command and redisconn_pipeline send (NULL or -1
 * with err: the connection is gone); redisconn_reply_error and
 * redisconn_any_error make an error reply err and the exit code;
 * redisconn_get reads a string key; redisconn_key makes
 * heart:{ID}:NAME.
 */
int	 redisconn_parse_url(const char *, char *);
int	 redisconn_begin(char *);
void	 redisconn_disconnect(void);
void	 redisconn_aput(struct redisconn_args *, const char *);
void	 redisconn_anum(struct redisconn_args *, long long);
redisReply *redisconn_command(struct redisconn_args *, const char *, char *);
int	 redisconn_pipeline(struct redisconn_args *, int, redisReply **,
	    const char *, char *);
void	 redisconn_free_replies(redisReply **, int);
void	 redisconn_reply_error(const redisReply *, const char *, char *);
int	 redisconn_any_error(redisReply **, int, const char *, char *);
const char *redisconn_str(const redisReply *);
void	 redisconn_key(const char *, const char *, char *, size_t);
int	 redisconn_get(const char *, char **, char *);

/* redisupgrade.c: document name of agent made from heart 0.x's keys (NULL:
 * none there); -1 with err */
int	 redisupgrade_doc(const char *, const char *, char **, char *);

#endif
