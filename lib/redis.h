/* redis.h - private to the Redis store (redisconn.c, redisstore.c,
 * redisupgrade.c): it brings in hiredis, which heartint.h must not
 * (heart-ghost links no client library: store.c). */
#ifndef REDIS_H
#define REDIS_H

#include <hiredis.h>

/* redisconn.c: the store's server and the connection, one a process;
 * a command is built with redisconn_aput and _anum (a.n = 0 to start) */
#define REDISCONN_MAXARGS	16
struct redisconn_args {
	int	 n;
	const char *v[REDISCONN_MAXARGS];
	size_t	 len[REDISCONN_MAXARGS];
	char	 buf[REDISCONN_MAXARGS][32];
};
int	 redisconn_parse_url(const char *, char *);
const char *redisconn_url(void);	/* as given, no password in it */
int	 redisconn_begin(char *);
void	 redisconn_disconnect(void);
void	 redisconn_aput(struct redisconn_args *, const char *);
void	 redisconn_anum(struct redisconn_args *, long long);
redisReply *redisconn_command(struct redisconn_args *, const char *, char *);
int	 redisconn_pipeline(struct redisconn_args *, int, redisReply **,
	    const char *, char *);
void	 redisconn_free_replies(redisReply **, int);
void	 redisconn_reply_error(const redisReply *, const char *, char *);
const char *redisconn_str(const redisReply *);
void	 redisconn_key(const char *, const char *, char *, size_t);
int	 redisconn_get(const char *, char **, char *);
/* redisupgrade.c */
int	 redisupgrade_doc(const char *, const char *, char **, char *);

#endif
