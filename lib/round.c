/*
 * round.c - one round for a fleet in one process (heart-wake --souls
 * DIR --jobs N): the gates of every soul first, with no traffic, then
 * the wakes they admit, at most N at once, each in a worker of its own.
 *
 * Phase one, in this process and in soul order: a soul whose file is
 * as the soul cache (soulcache.c) knew it and whose time has not come
 * gives its kept skip; any other is read, and when no gate of it can
 * pass now (wake_admit, cap and breaker left out) its wake is run here:
 * a skip, never a request.  Phase two: the souls left are woken, those
 * whose wake was deferred by the fleet's rate limit first (oldest
 * first), then in soul order; each in a forked worker that runs
 * run_wake and hands its result back whole over a pipe (with N = 1,
 * here, one after another).
 *
 * Invariants: every soul gives exactly one result (a worker that dies
 * gives an error naming its agent); a result is handed to the caller
 * whole, one at a time, by this process alone; every rule of a wake
 * (its lock, the cap, the breaker's probe, the busy rule, the bucket)
 * is the store's, exact whatever N is.  A worker ends with _exit after
 * its one result; this process never exits here.
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

#include "store.h"

/* s: a round's wakes wait for the fleet's rate limit this long after
 * the round began; past it they are deferred to the next round */
#define ROUND_WAIT	50

struct cand {
	const char *path;
	struct soul *s;
	size_t	 ord;		/* soul order */
	time_t	 deferred;	/* since; 0: not */
};

struct worker {
	pid_t	 pid;
	int	 fd;
	struct cand *c;
	char	*buf;
	size_t	 len, cap;
	time_t	 now;
};

struct round {
	const struct run_opts *ro;
	const struct round_hooks *h;
	struct soulcache *cache;
	time_t	 now;		/* the round's: a wake deferred since */
	int	 rc;
	char	*text;		/* a cached line put together */
	size_t	 tcap;
	char	 at[32];	/* its "at", of at_t */
	time_t	 at_t;
};

static int
gate_skip(const char *status)
{
	return strcmp(status, status_name(ST_NOT_DUE)) == 0 ||
	    strcmp(status, status_name(ST_NOT_IDLE)) == 0 ||
	    strcmp(status, status_name(ST_QUIET)) == 0;
}

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
 * when it is due, 0 when no chamber ever is.  Read without the lock: a
 * wake elsewhere only moves it later.
 */
static time_t
due_from(const struct soul *s, const struct run_opts *ro, time_t now,
    char *err)
{
	struct wake_state w;
	char dir[4096];
	time_t t, best = 0;
	int c;

	if (state_agent_dir(s->name, 0, dir, sizeof dir, err) == -1 ||
	    wake_load(dir, &w, err) == -1)
		return -1;
	if (w.first_seen == 0)
		w.first_seen = now;
	for (c = 0; c < CH_NCHAMBERS; c++) {
		if (ro->chamber >= 0 && c != ro->chamber)
			continue;
		if (c == CH_IDLE)
			wake_input(s, dir, &w);
		t = ro->force ? now : wake_admit(s, &w, (enum chamber)c, now,
		    now, 0);
		if (t > 0 && (best == 0 || t < best))
			best = t;
	}
	wake_free(&w);
	return best;
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
	if (r->cache != NULL && rc == HX_OK && until > now && gate_skip(
	    json_string_value(json_object_get(res, "status"))) &&
	    !json_is_string(json_object_get(res, "warning")))
		soulcache_put(r->cache, path, st, until, res);
	hand(r, s->name, res, rc, rc != HX_OK ? err : NULL);
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

	if (stat(path, &st) == 0 && r->cache != NULL && !r->ro->force &&
	    !r->ro->dry_run && (line = soulcache_get(r->cache, path, &st,
	    now)) != NULL) {
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
		r->h->warn(r->h->arg, "warning", s->warn[i]);
	if (r->cache != NULL)
		soulcache_drop(r->cache, path);
	if ((until = due_from(s, r->ro, now, err)) == -1) {
		r->h->warn(r->h->arg, s->name, err);
		until = now;	/* run_wake will say it again */
	}
	if (until != now) {
		wake_here(r, path, &st, s, until, now);
		soul_free(s);
		return 0;
	}
	cp->path = path;
	cp->s = s;
	cp->ord = ord;
	cp->deferred = r->cache != NULL ? soulcache_deferred(r->cache, path) :
	    0;
	return 1;
}

/* Deferred wakes first, the oldest first; then soul order. */
static int
cmpcand(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	if ((a->deferred != 0) != (b->deferred != 0))
		return a->deferred != 0 ? -1 : 1;
	if (a->deferred != b->deferred)
		return a->deferred < b->deferred ? -1 : 1;
	return a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* Write all of buf to fd (a worker's pipe). */
static void
put_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, buf, len)) == -1) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* The worker: one wake, its exit code, its message and its result. */
static void
work(const struct round *r, const struct cand *c, time_t now, int fd)
{
	char err[HEART_ERRLEN], head[32], *line, *p;
	json_t *res;
	int rc;

	store_forked();
	err[0] = '\0';
	rc = run_wake(c->s, r->ro, now, &res, err);
	for (p = err; *p != '\0'; p++)
		if (*p == '\n')
			*p = ' ';
	snprintf(head, sizeof head, "%d\n", rc);
	line = json_dumps(res, JSON_COMPACT);
	put_all(fd, head, strlen(head));
	put_all(fd, rc != HX_OK ? err : "", rc != HX_OK ? strlen(err) : 0);
	put_all(fd, "\n", 1);
	if (line != NULL)
		put_all(fd, line, strlen(line));
	_exit(0);
}

static int
start(struct round *r, struct cand *c, struct worker *w, char *err)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) == -1) {
		errf(err, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);	/* nothing buffered is written twice */
	memset(w, 0, sizeof *w);
	w->now = time(NULL);
	if ((w->pid = fork()) == -1) {
		errf(err, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (w->pid == 0) {
		close(p[0]);
		work(r, c, w->now, p[1]);
	}
	close(p[1]);
	w->fd = p[0];
	w->c = c;
	return 0;
}

/* A worker's pipe ended: its result to the caller. */
static void
finish(struct round *r, struct worker *w)
{
	char err[HEART_ERRLEN], *nl, *nl2;
	const char *st;
	json_t *res = NULL;
	int status, rc = HX_IOERR;
	long code;

	close(w->fd);
	while (waitpid(w->pid, &status, 0) == -1 && errno == EINTR)
		;
	if (w->len > 0)
		w->buf[w->len] = '\0';
	if (w->len > 0 && (nl = strchr(w->buf, '\n')) != NULL &&
	    (nl2 = strchr(nl + 1, '\n')) != NULL) {
		code = strtol(w->buf, NULL, 10);
		*nl2 = '\0';
		snprintf(err, sizeof err, "%s", nl + 1);
		if ((res = json_loads(nl2 + 1, 0, NULL)) != NULL)
			rc = (int)code;
	}
	if (res == NULL) {
		if (WIFSIGNALED(status))
			errf(err, "%s: its wake's worker was killed by signal "
			    "%d", w->c->s->name, WTERMSIG(status));
		else
			errf(err, "%s: its wake's worker ended without a "
			    "result (exit %d)", w->c->s->name,
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		res = run_refused(rc, err, w->now);
		json_object_set_new(res, "agent", json_string(w->c->s->name));
	}
	st = json_string_value(json_object_get(res, "status"));
	if (r->cache != NULL && st != NULL)
		soulcache_defer(r->cache, w->c->path, strcmp(st,
		    status_name(ST_THROTTLED)) == 0, r->now);
	hand(r, w->c->s->name, res, rc, rc != HX_OK ? err : NULL);
	free(w->buf);
	w->buf = NULL;
}

/* Read what is there from a worker: 0, or 1 at its end. */
static int
drain(struct worker *w)
{
	ssize_t n;

	if (w->cap - w->len < 65536 + 1) {
		w->cap = w->cap ? w->cap * 2 : 131072;
		if ((w->buf = realloc(w->buf, w->cap)) == NULL)
			abort();
	}
	n = read(w->fd, w->buf + w->len, w->cap - w->len - 1);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return 1;
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
		err[0] = '\0';
		rc = run_wake(c[i].s, r->ro, time(NULL), &res, err);
		st = json_string_value(json_object_get(res, "status"));
		if (r->cache != NULL && st != NULL)
			soulcache_defer(r->cache, c[i].path, strcmp(st,
			    status_name(ST_THROTTLED)) == 0, r->now);
		hand(r, c[i].s->name, res, rc, rc != HX_OK ? err : NULL);
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

/* Phase two: the wakes of c[0..n), at most jobs at once; -1 (with err,
 * each wake not started given an error result) when a worker could
 * not be started. */
static int
wake_all(struct round *r, struct cand *c, size_t n, int jobs, char *err)
{
	struct worker *w = xcalloc((size_t)jobs, sizeof *w);
	struct pollfd *pf = xcalloc((size_t)jobs, sizeof *pf);
	size_t next = 0, running = 0, i, k, max = (size_t)jobs;
	int rc = 0;

	while (next < n || running > 0) {
		while (next < n && running < max) {
			if (start(r, &c[next], &w[running], err) == -1) {
				unstarted(r, c + next, n - next, err);
				next = n;
				rc = -1;
				break;
			}
			next++;
			running++;
		}
		if (running == 0)
			break;
		for (i = 0; i < running; i++) {
			pf[i].fd = w[i].fd;
			pf[i].events = POLLIN;
			pf[i].revents = 0;
		}
		if (poll(pf, running, -1) == -1 && errno != EINTR) {
			errf(err, "poll: %s", strerror(errno));
			rc = -1;
			break;
		}
		for (i = 0, k = 0; i < running; i++) {
			if (pf[i].revents != 0 && drain(&w[i]))
				finish(r, &w[i]);
			else
				w[k++] = w[i];
		}
		running = k;
	}
	for (i = 0; i < running; i++)	/* only after a failure */
		finish(r, &w[i]);
	free(w);
	free(pf);
	return rc;
}

/*
 * One round for the souls paths[0..n), at now: every soul's result to
 * h->line, whole, one at a time (phase one's in soul order as they are
 * decided, then each wake's as it ends); messages to h->warn.  dir,
 * when not NULL, is the souls' directory: its soul cache serves the
 * round (and paths are all its souls).  Returns the worst exit code of
 * the round's results.
 */
int
round_run(char *const *paths, size_t n, const char *dir,
    const struct run_opts *ro, int jobs, time_t now,
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
	if (dir != NULL && (r.cache = soulcache_open(dir, e2)) == NULL)
		h->warn(h->arg, "soul cache", e2);
	for (i = 0; i < n; i++)
		nc += gate(&r, paths[i], i, now, &c[nc]);
	qsort(c, nc, sizeof *c, cmpcand);
	/* libcurl once, here, rather than in every worker; a wake that
	 * then cannot load it says so itself */
	if (nc > 0 && !ro->dry_run)
		http_preload(e2);
	if (jobs <= 1)
		wake_here_all(&r, c, nc);
	else if ((rc = wake_all(&r, c, nc, jobs, e2)) == -1)
		h->warn(h->arg, NULL, e2);
	for (i = 0; i < nc; i++)
		soul_free(c[i].s);
	free(c);
	if (r.cache != NULL && soulcache_save(r.cache, 1, e2) == -1)
		h->warn(h->arg, "soul cache", e2);
	soulcache_free(r.cache);
	free(r.text);
	return rc == -1 ? hx_worse(r.rc, HX_TEMPFAIL) : r.rc;
}

/*
 * --explain: to each chamber's verdict of s in arr (run_explain's),
 * the fleet's rate limit as a gate ("rate", with its bucket) and,
 * when the wake is deferred, since when.  dir is the souls' directory,
 * whose soul cache knows the deferred wakes.
 */
int
round_explain(json_t *arr, const struct soul *s, const char *dir,
    time_t now, char *err)
{
	struct soulcache *c;
	struct llm_conf lc;
	struct rate_view v;
	char ep[HEART_IDMAX + 1], why[400], iso[40];
	json_t *o, *rate = NULL;
	time_t since = 0;
	size_t i;
	int ok = 1;

	/* a soul with no model yet has no endpoint; a wake's first request
	 * goes to the triage endpoint when there is one */
	ep[0] = '\0';
	if ((s->triage != NULL ? llm_triage_conf(s, &lc, err) :
	    llm_conf(s, &lc, err)) == 0 && bucket_endpoint(&lc, ep,
	    sizeof ep, err) == -1)
		return -1;
	snprintf(why, sizeof why, "no endpoint of the fleet file matches "
	    "(no rate limit)");
	if (ep[0] != '\0') {
		if (bucket_peek(ep, now, &v, err) == -1)
			return -1;
		rate = bucket_json(&v, now);
		ok = bucket_gate_ok(&v, now, s->timezone, why, sizeof why);
	}
	if ((c = soulcache_open(dir, err)) != NULL) {
		since = soulcache_deferred(c, s->path);
		soulcache_free(c);
	}
	json_array_foreach(arr, i, o) {
		json_object_set_new(json_object_get(o, "gates"), "rate",
		    json_pack("{s:b,s:s}", "ok", ok, "reason", why));
		if (rate != NULL)
			json_object_set(o, "rate", rate);
		if (since != 0) {
			clock_iso(s->timezone, since, iso, sizeof iso);
			json_object_set_new(o, "deferred", json_string(iso));
		}
		if (!ok && strcmp(json_string_value(json_object_get(o,
		    "would")), "wake") == 0) {
			json_object_set_new(o, "would", json_string(
			    status_name(ST_THROTTLED)));
			json_object_set_new(o, "reason", json_string(why));
		}
	}
	json_decref(rate);
	return 0;
}
