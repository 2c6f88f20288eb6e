/*
 * round.c - one round over a directory of souls in one process
 * (heart-wake --souls DIR --jobs N): the gates of every soul first,
 * with no traffic, then the wakes they admit, at most N at once, by N
 * workers at most.
 *
 * Phase one, in this process and in soul order: a soul whose file is
 * as the soul cache (soulcache.c) knew it and whose time has not come
 * gives its kept skip; any other is read, and when no gate of it can
 * pass now (wake_admit, cap and breaker left out) its wake is run here:
 * a skip, never a request.  Phase two: the souls left are woken, those
 * whose wake was deferred by the fleet's rate limit first (oldest
 * first), then in soul order, by a pool of at most N workers forked
 * once each for the round: a worker is given one wake at a time over
 * a pipe, runs run_wake and hands its result back whole over another
 * (with N = 1, here, one after another).  A fork and an exit a wake
 * cost more CPU than the wake itself.
 *
 * Invariants: every soul gives exactly one result (a worker that dies
 * gives an error naming the agent it was waking, and another is forked
 * in its place); a result is handed to the caller whole, one at a
 * time, by this process alone; every rule of a wake (its lock, the
 * cap, the breaker's probe, the busy rule, the bucket) is the store's,
 * exact whatever N is.  A worker ends with _exit when its pipe of
 * wakes ends; this process never exits here.  A worker is forked and
 * ended through the runner (child.c: tool_fork, tool_end), so a signal
 * that ends the round stops the workers, each stopping its own
 * children; and a worker is sent SIGTERM if the round dies first.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

/* s: a round's wakes wait for the fleet's rate limit this long after
 * the round began; past it they are deferred to the next round */
#define ROUND_WAIT	50

struct cand {
	const char *path;
	struct soul *s;
	struct stat st;		/* the soul file's, before it was read */
	int	 stat_ok;
	size_t	 ord;		/* soul order */
	time_t	 deferred;	/* since; 0: not */
	time_t	 at;		/* not to be woken before then */
};

/* A worker of the pool: the wake it runs (NULL: idle), and what it
 * has said of it so far. */
struct worker {
	pid_t	 pid;		/* 0: none (not forked, or gone) */
	int	 to, from;	/* its jobs, its results */
	struct cand *c;
	char	*buf;
	size_t	 len, cap;
	time_t	 now;
};

/* A wake given to a worker: the candidate's index, its "now". */
struct job {
	size_t	 i;
	time_t	 now;
};

struct round {
	const struct run_opts *ro;
	const struct round_hooks *h;
	struct soulcache *cache;
	time_t	 now;		/* the round's: a wake deferred since */
	time_t	 horizon;	/* wakes due by then are the round's */
	int	 rc;
	char	*text;		/* a cached line put together */
	size_t	 tcap;
	char	 at[32];	/* its "at", of at_t */
	time_t	 at_t;
};

static time_t wake_now(void);

static int
gate_skip(const char *status)
{
	return strcmp(status, status_name(ST_NOT_DUE)) == 0 ||
	    strcmp(status, status_name(ST_NOT_IDLE)) == 0 ||
	    strcmp(status, status_name(ST_QUIET)) == 0;
}

struct pool {
	const struct round *r;
	struct cand *c;
	struct worker *w;
	size_t	 n;
	struct sigaction pipe;	/* SIGPIPE's own disposition */
};

/* Hand a result to the caller, and take its exit code into the round's. */
static void
hand(struct round *r, const char *agent, json_t *res, int rc,
    const char *err)
{
	r->rc = hx_worse(r->rc, rc);
	r->h->line(r->h->arg, agent, res, rc, err);
	json_decref(res);
}

/*
 * The first time at or after now when a gate of s may pass, the cap
 * and the breaker left out (they only hold a wake back longer): now
 * when it is due, 0 when no chamber ever is; *unseen is 1 when heart
 * has never seen the agent.  Read without the lock: a wake elsewhere
 * only moves it later.
 */
static time_t
due_from(const struct soul *s, const struct run_opts *ro, time_t now,
    int *unseen, char *err)
{
	struct wake_state w;
	char dir[4096];
	time_t t, best = 0;
	int c;

	*unseen = 0;
	if (state_agent_dir(s->name, 0, dir, sizeof dir, err) == -1 ||
	    wake_load(dir, &w, err) == -1)
		return -1;
	if (w.first_seen == 0) {
		w.first_seen = now;
		*unseen = 1;
	}
	for (c = 0; c < CH_NCHAMBERS; c++) {
		if (ro->chamber >= 0 && c != ro->chamber)
			continue;
		/* an idle chamber that is off has no clock to read (as in
		 * run.c's next_wake): wake_admit never looks at it */
		if (c == CH_IDLE && s->ch[c].daily_cap != 0)
			wake_input(s, dir, &w);
		t = ro->force ? now : wake_admit(s, &w, (enum chamber)c, now,
		    now, 0);
		if (t > 0 && (best == 0 || t < best))
			best = t;
	}
	wake_free(&w);
	return best;
}

/* Keep res, the skip of the soul at path (st) at now, until its gates
 * may next pass, if it is a skip of the gates and says nothing new. */
static void
keep(struct round *r, const char *path, const struct stat *st,
    time_t until, time_t now, const json_t *res, int rc)
{
	if (r->cache != NULL && rc == HX_OK && until > now && gate_skip(
	    json_string_value(json_object_get(res, "status"))) &&
	    !json_is_string(json_object_get(res, "warning")))
		soulcache_put(r->cache, path, st, until, res);
}

/* A soul's wake run here: it is sure to be a skip. */
static void
wake_here(struct round *r, const char *path, const struct stat *st,
    struct soul *s, time_t until, time_t now)
{
	char err[HEART_ERRLEN];
	json_t *res;
	int rc;

	err[0] = '\0';
	rc = run_wake(s, r->ro, now, &res, err);
	keep(r, path, st, until, now, res, rc);
	hand(r, s->name, res, rc, rc != HX_OK ? err : NULL);
}

/*
 * After the wake of c, its skip until it is next due, kept at once
 * (its soul is read, its files are fresh): the next round gives it from
 * the cache, as every soul not due, rather than reading the soul again
 * (heart-wake(1), ROUNDS, The soul cache).  Given to no one.
 */
static void
keep_next(struct round *r, const struct cand *c)
{
	char err[HEART_ERRLEN];
	json_t *res;
	time_t now, until;
	int rc, unseen;

	if (r->cache == NULL || r->ro->force || r->ro->dry_run || !c->stat_ok)
		return;
	now = wake_now();
	if ((until = due_from(c->s, r->ro, now, &unseen, err)) <= now)
		return;		/* due again, or never; or unread */
	err[0] = '\0';
	rc = run_wake(c->s, r->ro, now, &res, err);
	keep(r, c->path, &c->st, until, now, res, rc);
	json_decref(res);
}

/*
 * A kept skip given again: its line with a fresh wake_id and at, a
 * duration_ms of 0 and cached true, put together as text (the line
 * ends with its object's brace), never through a JSON tree.
 */
static void
cached(struct round *r, const char *line, time_t now)
{
	char id[40], tail[160];
	size_t n = strlen(line) - 1, k;

	run_id(now, id, sizeof id);
	if (now != r->at_t) {
		clock_utc(now, r->at, sizeof r->at);
		r->at_t = now;
	}
	k = (size_t)snprintf(tail, sizeof tail, ",\"wake_id\":\"%s\",\"at\":"
	    "\"%s\",\"duration_ms\":0,\"cached\":true}", id, r->at);
	if (r->tcap < n + k + 1) {
		r->tcap = (n + k + 1) * 2;
		if ((r->text = realloc(r->text, r->tcap)) == NULL)
			abort();
	}
	memcpy(r->text, line, n);
	memcpy(r->text + n, tail, k + 1);
	r->h->text(r->h->arg, r->text);
}

/* Phase one for one soul: 1 with *cp filled when it is to be woken. */
static int
gate(struct round *r, const char *path, size_t ord, time_t now,
    struct cand *cp)
{
	char err[HEART_ERRLEN];
	const char *line;
	struct stat st;
	struct soul *s;
	time_t until;
	size_t i;
	int stat_ok, unseen;

	stat_ok = stat(path, &st) == 0;
	if (stat_ok && r->cache != NULL && !r->ro->force &&
	    !r->ro->dry_run && (line = soulcache_get(r->cache, path, &st,
	    r->horizon)) != NULL) {
		cached(r, line, now);
		return 0;
	}
	if (soul_load(path, &s, err) == -1) {
		if (r->cache != NULL)
			soulcache_drop(r->cache, path);
		hand(r, NULL, run_refused(HX_CONFIG, err, now), HX_CONFIG,
		    err);
		return 0;
	}
	for (i = 0; i < s->nwarn; i++)
		warning("warning", s->warn[i]);
	if (r->cache != NULL)
		soulcache_drop(r->cache, path);
	if ((until = due_from(s, r->ro, now, &unseen, err)) == -1) {
		warning(s->name, err);
		until = now;	/* run_wake will say it again */
	}
	/*
	 * An agent never seen, not due at once, is seen now, by its skip:
	 * a wake begun later in the span would see it first then, and
	 * find its first slot one after (heart-wake(1), ROUNDS).
	 */
	if (until == 0 || until > r->horizon || (unseen && until > now)) {
		wake_here(r, path, &st, s, until, now);
		soul_free(s);
		return 0;
	}
	cp->path = path;
	cp->s = s;
	cp->st = st;
	cp->stat_ok = stat_ok;
	cp->ord = ord;
	cp->at = until;
	cp->deferred = r->cache != NULL ? soulcache_deferred(r->cache, path) :
	    0;
	return 1;
}

/* Deferred wakes first, the oldest first; then by the time each is
 * due, then soul order. */
static int
cmpcand(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	if ((a->deferred != 0) != (b->deferred != 0))
		return a->deferred != 0 ? -1 : 1;
	if (a->deferred != b->deferred)
		return a->deferred < b->deferred ? -1 : 1;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* ms from t (wall_ms) to the second at; 0 when it has come */
static int
ms_to(time_t at, long long t)
{
	long long ms = (long long)at * 1000 - t;

	return ms <= 0 ? 0 : ms > 3600000 ? 3600000 : (int)ms;
}

/* The "now" a wake of the round is given: the second of wall_ms, so
 * that a wake begun when ms_to(at) came to 0 is at or after at. */
static time_t
wake_now(void)
{
	return (time_t)(wall_ms() / 1000);
}

/* The round is to wait for its next wake: what it has so far goes out. */
static void
flush(struct round *r)
{
	if (r->h->flush != NULL)
		r->h->flush(r->h->arg);
}

/* Sleep until the second at (a wake of the span). */
static void
sleep_to(struct round *r, time_t at)
{
	struct timespec ts;
	int ms;

	if ((ms = ms_to(at, wall_ms())) == 0)
		return;
	flush(r);
	while ((ms = ms_to(at, wall_ms())) > 0) {
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (long)(ms % 1000) * 1000000;
		nanosleep(&ts, NULL);
	}
}

/* Read all of len bytes from fd: 0, or -1 at its end. */
static int
get_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		if ((n = read(fd, p, len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A worker: the wakes it is given, one at a time, until its pipe in
 * ends; for each, on its pipe out, "RC ERRLEN LEN\n", the message and
 * the result.
 */
static void
serve(const struct round *r, const struct cand *c, int in, int out)
{
	char err[HEART_ERRLEN], head[64], *line, *p;
	struct job j;
	json_t *res;
	size_t el;
	int rc;

	store_forked();
	while (get_all(in, &j, sizeof j) == 0) {
		err[0] = '\0';
		rc = run_wake(c[j.i].s, r->ro, j.now, &res, err);
		for (p = err; *p != '\0'; p++)
			if (*p == '\n')
				*p = ' ';
		el = rc != HX_OK ? strlen(err) : 0;
		line = json_line(res);
		json_decref(res);
		snprintf(head, sizeof head, "%d %zu %zu\n", rc, el,
		    line != NULL ? strlen(line) : 0);
		if (state_write_all(out, head, strlen(head)) == -1 ||
		    state_write_all(out, err, el) == -1 || (line != NULL &&
		    state_write_all(out, line, strlen(line)) == -1))
			_exit(1);
		free(line);
	}
	_exit(0);
}

/* Fork worker k of the pool. */
static int
spawn(struct pool *pl, size_t k, char *err)
{
	struct worker *w = &pl->w[k];
	struct tool_child ch;
	int in[2], out[2];
	size_t i;

	if (pipe2(in, O_CLOEXEC) == -1 || (pipe2(out, O_CLOEXEC) == -1 &&
	    (close(in[0]), close(in[1]), 1))) {
		errf(err, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);	/* nothing buffered is written twice */
	if (tool_fork(&ch, err) == -1) {
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		w->pid = 0;
		return -1;
	}
	if ((w->pid = ch.pid) == 0) {
		sigaction(SIGPIPE, &pl->pipe, NULL);
		for (i = 0; i < pl->n; i++)	/* the others' ends */
			if (i != k && pl->w[i].pid != 0) {
				close(pl->w[i].to);
				close(pl->w[i].from);
			}
		close(in[1]);
		close(out[0]);
		serve(pl->r, pl->c, in[0], out[1]);
	}
	close(in[0]);
	close(out[1]);
	w->to = in[1];
	w->from = out[0];
	w->len = 0;
	return 0;
}

/* Hand wake i to worker k (forked if it is not there): -1 with err. */
static int
give(struct pool *pl, size_t k, size_t i, char *err)
{
	struct worker *w = &pl->w[k];
	struct job j;

	if (w->pid == 0 && spawn(pl, k, err) == -1)
		return -1;
	j.i = i;
	j.now = wake_now();
	w->c = &pl->c[i];
	w->now = j.now;
	/* a worker gone says so at its end, on its pipe out */
	(void)state_write_all(w->to, (const char *)&j, sizeof j);
	return 0;
}

/*
 * Worker w's end, through the runner (tool_end): its pipe of wakes
 * closed, which an idle worker ends at; one in a wake (only after a
 * failure) stopped at once, which stops the wake's own children; its
 * exit status in *status.
 */
static void
reap(struct worker *w, int *status)
{
	struct tool_child ch = { .pid = w->pid, .sentinel = -1, .in = w->to,
	    .out = w->from, .err = -1 };

	*status = 0;
	tool_end(&ch, 1, w->c != NULL ? 0 : TOOL_GRACE, status);
	w->pid = 0;
}

/* The result of worker k's wake to the caller; its own failure as an
 * error result naming the agent, when it died. */
static void
finish(struct round *r, struct worker *w, json_t *res, int rc,
    const char *msg, int status)
{
	char err[HEART_ERRLEN];
	const char *st;

	snprintf(err, sizeof err, "%s", msg);
	if (res == NULL) {	/* the agent is named by who says it */
		if (WIFSIGNALED(status))
			errf(err, "its wake's worker was killed by signal %d",
			    WTERMSIG(status));
		else
			errf(err, "its wake's worker ended without a result "
			    "(exit %d)", WIFEXITED(status) ?
			    WEXITSTATUS(status) : -1);
		rc = HX_IOERR;
		res = run_refused(rc, err, w->now);
		json_object_set_new(res, "agent", json_string(w->c->s->name));
	}
	st = json_string_value(json_object_get(res, "status"));
	if (r->cache != NULL && st != NULL)
		soulcache_defer(r->cache, w->c->path, strcmp(st,
		    status_name(ST_THROTTLED)) == 0, r->now);
	hand(r, w->c->s->name, res, rc, rc != HX_OK ? err : NULL);
	keep_next(r, w->c);
	w->c = NULL;
}

/* A whole result in w's buffer: taken out and handed on; 1 if so. */
static int
frame(struct round *r, struct worker *w)
{
	char msg[HEART_ERRLEN], *nl, *end;
	unsigned long long el, jl;
	json_t *res;
	size_t used;
	long rc;

	if ((nl = memchr(w->buf, '\n', w->len)) == NULL)
		return 0;
	rc = strtol(w->buf, &end, 10);
	el = strtoull(end, &end, 10);
	jl = strtoull(end, &end, 10);
	if (end != nl || el >= sizeof msg || (size_t)(nl + 1 - w->buf) +
	    el + jl > w->len)
		return 0;
	memcpy(msg, nl + 1, el);
	msg[el] = '\0';
	res = json_loadb(nl + 1 + el, jl, 0, NULL);
	used = (size_t)(nl + 1 - w->buf) + el + jl;
	memmove(w->buf, w->buf + used, w->len - used);
	w->len -= used;
	finish(r, w, res, res != NULL ? (int)rc : HX_IOERR, msg, 0);
	return 1;
}

/* Read what is there from worker w: 0, or -1 at its end. */
static int
drain(struct worker *w)
{
	ssize_t n;

	if (w->cap - w->len < 65536) {
		w->cap = w->cap ? w->cap * 2 : 131072;
		if ((w->buf = realloc(w->buf, w->cap)) == NULL)
			abort();
	}
	n = read(w->from, w->buf + w->len, w->cap - w->len);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	w->len += (size_t)n;
	return 0;
}

/* --jobs 1: the wakes one after another, in this process (a worker
 * of its own would only cost each wake a fork). */
static void
wake_here_all(struct round *r, struct cand *c, size_t n)
{
	char err[HEART_ERRLEN];
	const char *st;
	json_t *res;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		sleep_to(r, c[i].at);
		err[0] = '\0';
		rc = run_wake(c[i].s, r->ro, wake_now(), &res, err);
		st = json_string_value(json_object_get(res, "status"));
		if (r->cache != NULL && st != NULL)
			soulcache_defer(r->cache, c[i].path, strcmp(st,
			    status_name(ST_THROTTLED)) == 0, r->now);
		hand(r, c[i].s->name, res, rc, rc != HX_OK ? err : NULL);
		keep_next(r, &c[i]);
	}
}

/* The wakes that could not be started: an error result each. */
static void
unstarted(struct round *r, struct cand *c, size_t n, const char *why)
{
	json_t *res;
	size_t i;

	for (i = 0; i < n; i++) {
		res = run_refused(HX_TEMPFAIL, why, time(NULL));
		json_object_set_new(res, "agent", json_string(c[i].s->name));
		hand(r, c[i].s->name, res, HX_TEMPFAIL, why);
	}
}

/*
 * Phase two: the wakes of c[0..n), at most jobs at once, by a pool of
 * at most jobs workers forked once each (a fork and an exit a wake
 * cost more than the wake itself); -1 (with err, each wake not started
 * given an error result) when a worker could not be started.
 */
static int
wake_all(struct round *r, struct cand *c, size_t n, int jobs, char *err)
{
	struct pool pl;
	struct pollfd *pf;
	struct sigaction ign;
	size_t next = 0, busy = 0, k, m, *who;
	int rc = 0, status, wait;
	long long t;

	memset(&pl, 0, sizeof pl);
	pl.r = r;
	pl.c = c;
	pl.n = (size_t)jobs < n ? (size_t)jobs : n;
	pl.w = xcalloc(pl.n, sizeof *pl.w);
	pf = xcalloc(pl.n, sizeof *pf);
	who = xcalloc(pl.n, sizeof *who);
	/* a worker gone while idle is an EPIPE here, not our death */
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &pl.pipe);
	while (next < n || busy > 0) {
		t = wall_ms();
		for (k = 0; k < pl.n && next < n && rc == 0; k++)
			if (pl.w[k].c == NULL && ms_to(c[next].at, t) == 0) {
				if (give(&pl, k, next, err) == -1) {
					unstarted(r, c + next, n - next, err);
					next = n;
					rc = -1;
					break;
				}
				next++;
				busy++;
			}
		if (busy == 0 && next == n)
			break;
		/* a worker free and the next wake not yet due: until then */
		wait = busy < pl.n && next < n ? ms_to(c[next].at, t) : -1;
		if (wait > 0 && busy == 0)
			flush(r);
		for (k = 0, m = 0; k < pl.n; k++)
			if (pl.w[k].c != NULL) {
				pf[m].fd = pl.w[k].from;
				pf[m].events = POLLIN;
				pf[m].revents = 0;
				who[m++] = k;
			}
		if (poll(pf, m, wait) == -1) {
			if (errno == EINTR)
				continue;
			errf(err, "poll: %s", strerror(errno));
			rc = -1;
			break;
		}
		for (k = 0; k < m; k++) {
			struct worker *w = &pl.w[who[k]];

			if (pf[k].revents == 0)
				continue;
			if (drain(w) == -1) {
				reap(w, &status);
				finish(r, w, NULL, HX_IOERR, "", status);
				busy--;
			} else if (frame(r, w))
				busy--;
		}
	}
	for (k = 0; k < pl.n; k++)
		if (pl.w[k].pid != 0) {
			reap(&pl.w[k], &status);
			if (pl.w[k].c != NULL)
				finish(r, &pl.w[k], NULL, HX_IOERR, "",
				    status);
		}
	sigaction(SIGPIPE, &pl.pipe, NULL);
	for (k = 0; k < pl.n; k++)
		free(pl.w[k].buf);
	free(pl.w);
	free(pf);
	free(who);
	return rc;
}

/*
 * One round for the souls paths[0..n), at now: every soul's result to
 * h->line, whole, one at a time (phase one's in soul order as they are
 * decided, then each wake's as it ends); warnings to warning.c.  dir,
 * when not NULL, is the souls' directory: its soul cache serves the
 * round (and paths are all its souls).  A wake falling due within span
 * seconds of now is the round's too, begun at its second (not with
 * --dry-run: nothing is waited for).  Returns the worst exit code of
 * the round's results.
 */
int
round_run(char *const *paths, size_t n, const char *dir,
    const struct run_opts *ro, int jobs, time_t span, time_t now,
    const struct round_hooks *h)
{
	struct round r;
	struct run_opts ro2;
	struct cand *c = xcalloc(n + 1, sizeof *c);
	char e2[HEART_ERRLEN];
	size_t i, nc = 0;
	int rc = 0;

	memset(&r, 0, sizeof r);
	ro2 = *ro;
	if (ro2.wait == 0)	/* within the round's minute */
		ro2.wait = now + ROUND_WAIT;
	ro = &ro2;
	r.ro = ro;
	r.h = h;
	r.now = now;
	r.horizon = ro->dry_run ? now : now + span;
	if (dir != NULL && (r.cache = soulcache_open(dir, e2)) == NULL)
		warning("soul cache", e2);
	for (i = 0; i < n; i++)
		nc += gate(&r, paths[i], i, now, &c[nc]);
	if (nc > 0)
		qsort(c, nc, sizeof *c, cmpcand);
	/* libcurl once, here, rather than in every worker; a wake that
	 * then cannot load it says so itself */
	if (nc > 0 && !ro->dry_run)
		llm_preload(e2);
	if (jobs <= 1)
		wake_here_all(&r, c, nc);
	else if ((rc = wake_all(&r, c, nc, jobs, e2)) == -1)
		warning(NULL, e2);
	for (i = 0; i < nc; i++)
		soul_free(c[i].s);
	free(c);
	if (r.cache != NULL && soulcache_save(r.cache, 1, e2) == -1)
		warning("soul cache", e2);
	soulcache_free(r.cache);
	free(r.text);
	return rc == -1 ? hx_worse(r.rc, HX_TEMPFAIL) : r.rc;
}
