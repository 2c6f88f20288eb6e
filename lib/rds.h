/*
 * rds.h - private to the Redis store: what rds.c, its connection and
 * protocol, gives redis.c (the store's operations) and redisold.c (the
 * upgrade of heart 0.x's keys).  Only those three include it, after
 * heartint.h: it brings in hiredis, which heartint.h, included by every
 * file of the library, must not (a program that opens no store, heart-
 * ghost, links no client library: see store.c).
 */
#ifndef RDS_H
#define RDS_H

#include <hiredis.h>

#define RDS_MAXARGS	16

/* rds.c: the store's server and the connection to it, one a process */
struct rds_conn {
	char	 url[512];	/* as given; it never holds a password */
	char	 host[256];
	int	 port;
	long long db;
	char	 me[128];	/* host name, for the probe and the tokens */
	redisContext *c;
};
extern struct rds_conn rds;

/* A command, built with rds_aput and rds_anum (a.n = 0 to start one) */
struct rds_args {
	int	 n;
	const char *v[RDS_MAXARGS];
	size_t	 len[RDS_MAXARGS];
	char	 buf[RDS_MAXARGS][32];
};

/*
 * rds.c: rds_parse_url fills rds from a redis:// URL; rds_begin starts
 * each call (connected, store_fail cleared); rds_command and
 * rds_pipeline send (NULL or -1 with err: the connection is gone);
 * rds_reply_error and rds_any_error make an error reply err and the
 * exit code; rds_get reads a string key; rds_key makes heart:{ID}:NAME.
 */
int	 rds_parse_url(const char *, char *);
int	 rds_begin(char *);
void	 rds_disconnect(void);
void	 rds_aput(struct rds_args *, const char *);
void	 rds_anum(struct rds_args *, long long);
redisReply *rds_command(struct rds_args *, const char *, char *);
int	 rds_pipeline(struct rds_args *, int, redisReply **, const char *,
	    char *);
void	 rds_free_replies(redisReply **, int);
void	 rds_reply_error(const redisReply *, const char *, char *);
int	 rds_any_error(redisReply **, int, const char *, char *);
const char *rds_str(const redisReply *);
void	 rds_key(const char *, const char *, char *, size_t);
int	 rds_get(const char *, char **, char *);

/* redisold.c: document name of agent made from heart 0.x's keys (NULL:
 * none there); -1 with err */
int	 redisold_doc(const char *, const char *, char **, char *);

#endif
