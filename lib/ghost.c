/*
 * ghost.c - ghost mode (paper section 4): which wake results leave a
 * trace, which are delivered, and which were delivered already.
 *
 * A result that is not "ok" rolls back: nothing of it is kept (the
 * statuses are status.c's table); ghostparse.c reads the result line.
 * A breaker's notice goes the way of an "ok" result, through the
 * outbox, but is never committed to the history.
 *
 * An "ok" result is handled under the agent's delivered.lock, held
 * from the commit to the record of the delivery: the wake id is the
 * key.  A wake id already in the history (hist_commit says so) is not
 * committed again.  Every answer passes through the agent's outbox
 * (outbox.c), one file per wake, and leaves it only once delivered or
 * no longer wanted, so delivery is at least once: a failed delivery,
 * or a heart-ghost that never ran or was killed, leaves the answer
 * there for the next run, tried in wake order with backoff until it is
 * delivered or dead.  agents/ID/delivered.json, replaced whole under
 * the lock, remembers for --dedupe the texts delivered (hash and time,
 * never the text).  So two processes given the same result commit it
 * once and deliver it once.
 *
 * An answer belongs to the pipeline that took it: the run given its
 * line, or else the first that tries it, writes "via", a hash of its
 * delivery options (ghost_via), into the entry, and a run with other
 * options leaves it, unless it is given the answer's own line (then it
 * takes it over) or that pipeline has not come back for it for
 * retry_for (then it is a dead letter).  A failing answer holds up the
 * ones after it for GHOST_HOLD from its first failed try, then they go
 * around it.
 */
#include <sys/file.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartwake.h"

#define GHOST_RETRY_FOR	(24 * 3600)	/* ghost_opts.retry_for's 0 */
#define GHOST_HOLD	(10 * 60)	/* a failing answer holds up the
					   later ones for this long */
#define GHOST_NOTICE_KEEP (30 * 86400)	/* a notice delivered is known
					   this long (delivered.json) */

#define DLVFILE	"delivered.json"
#define DLVLOCK	"delivered.lock"

/* From ghost_begin or ghost_open to ghost_end, which frees it. */
struct ghost_txn {
	int	 lockfd;
	char	 dir[4096];
	const struct ghost_opts *o;
	time_t	 now;
	json_t	*doc;		/* delivered.json, once read */
	int	 state;		/* 0 unread, 1 read, -1 unreadable */
	int	 dirty;		/* doc to be written */
	struct outbox_entry *box;	/* the outbox, in wake order */
	size_t	 nbox, cur;
	int	 stop;		/* the rest wait */
	struct ghost_result r;	/* what ghost_next handed out */
	char	 hash[17];
	char	 via[17];	/* the fingerprint of o's delivery */
	size_t	 others;	/* answers left to other options */
	char	 other[HEART_IDMAX + 1];	/* the first of them */
	char	 given[HEART_IDMAX + 1];	/* ghost_begin's wake, or "" */
	int	 tried;		/* ghost_next has handed it out */
};

static int
is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == '\f' || c == '\v';
}

/*
 * The hash (FNV-1a, 64 bits, 16 hex digits) of a text normalized the
 * way a reader compares: blanks at both ends dropped, every run of
 * blanks one space, ASCII letters in lower case.
 */
void
ghost_hash(const char *text, char *out)
{
	const unsigned char *p = (const unsigned char *)text;
	uint64_t h = FNV_BASIS;
	int gap = 0, any = 0;

	for (; *p != '\0'; p++) {
		if (is_space(*p)) {
			gap = any;
			continue;
		}
		if (gap) {
			h = fnv1a(h, ' ');
			gap = 0;
		}
		any = 1;
		h = fnv1a(h, *p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static uint64_t
hash_bytes(uint64_t h, const char *s, size_t n)
{
	while (n-- > 0)
		h = fnv1a(h, (unsigned char)*s++);
	return h;
}

/*
 * The fingerprint of how o delivers (FNV-1a, 64 bits, 16 hex digits):
 * --text, --alert-only, --dedupe's window and the --exec program's
 * words, each ended by a NUL; never the words themselves, which may
 * hold a secret.
 */
static void
ghost_via(const struct ghost_opts *o, char *out)
{
	char head[64];
	uint64_t h;
	size_t i;

	snprintf(head, sizeof head, "text=%d alert_only=%d dedupe=%lld "
	    "exec=%d", o->text, o->alert_only, o->dedupe, o->exec != NULL);
	h = hash_bytes(FNV_BASIS, head, strlen(head) + 1);
	for (i = 0; o->exec != NULL && o->exec[i] != NULL; i++)
		h = hash_bytes(h, o->exec[i], strlen(o->exec[i]) + 1);
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}


/*
 * Check delivered.json's shape: {"delivered":[{"hash","at"}...],
 * "notices":[{"wake_id","at"}...]} ("notices" may be missing); the
 * "undelivered" list an older heart-ghost kept is left as it is.
 */
static int
check_delivered(json_t *doc, const char *dir, char *err)
{
	json_t *a = json_object_get(doc, "delivered"), *e;
	time_t t;
	size_t i;

	if (!json_is_array(a))
		goto bad;
	json_array_foreach(a, i, e)
		if (!json_is_string(json_object_get(e, "hash")) ||
		    clock_parse_utc(json_string_value(json_object_get(e,
		    "at")), &t) == -1)
			goto bad;
	a = json_object_get(doc, "notices");
	if (a != NULL && !json_is_array(a))
		goto bad;
	json_array_foreach(a, i, e)
		if (!json_is_string(json_object_get(e, "wake_id")) ||
		    clock_parse_utc(json_string_value(json_object_get(e,
		    "at")), &t) == -1)
			goto bad;
	return 0;
bad:
	errf(err, "%s/%s: not a list of delivered texts; fix or remove it "
	    "by hand", dir, DLVFILE);
	return -1;
}

static time_t
entry_time(json_t *e, const char *key)
{
	time_t t = 0;

	clock_parse_utc(json_string_value(json_object_get(e, key)), &t);
	return t;
}

/* Read delivered.json, once; -1 when it cannot be (err says why). */
static int
txn_read(struct ghost_txn *t, char *err)
{
	if (t->state != 0)
		return t->state == 1 ? 0 : -1;
	if (state_read_json(t->dir, DLVFILE, &t->doc, err) == -1 ||
	    (t->doc != NULL && check_delivered(t->doc, t->dir, err) == -1)) {
		json_decref(t->doc);
		t->doc = NULL;
		t->state = -1;
		return -1;
	}
	if (t->doc == NULL)
		t->doc = json_pack("{s:[]}", "delivered");
	t->state = 1;
	return 0;
}

/* Was the same normalized text delivered within the window? */
static int
delivered_within(struct ghost_txn *t, const char *text)
{
	json_t *e;
	size_t i;

	ghost_hash(text, t->hash);
	json_array_foreach(json_object_get(t->doc, "delivered"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "hash")),
		    t->hash) == 0 && t->now - entry_time(e, "at") <
		    t->o->dedupe)
			return 1;
	return 0;
}

/*
 * Was the notice wake_id delivered (heart-wake(1), NOTICES)?  A notice
 * is in no history to say so: delivered.json's "notices" does, for
 * GHOST_NOTICE_KEEP.  Unreadable, it was not: better twice than never.
 */
static int
noticed(struct ghost_txn *t, const char *wake_id)
{
	char err[HEART_ERRLEN];
	json_t *e;
	size_t i;

	if (txn_read(t, err) == -1)
		return 0;
	json_array_foreach(json_object_get(t->doc, "notices"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "wake_id")),
		    wake_id) == 0)
			return 1;
	return 0;
}

/* Remember a delivered notice; forget those older than
 * GHOST_NOTICE_KEEP. */
static void
add_noticed(struct ghost_txn *t, const char *wake_id)
{
	json_t *keep = json_array(), *e;
	char at[32];
	size_t i;

	json_array_foreach(json_object_get(t->doc, "notices"), i, e)
		if (t->now - entry_time(e, "at") < GHOST_NOTICE_KEEP)
			json_array_append(keep, e);
	clock_utc(t->now, at, sizeof at);
	json_array_append_new(keep, json_pack("{s:s,s:s}", "wake_id",
	    wake_id, "at", at));
	json_object_set_new(t->doc, "notices", keep);
	t->dirty = 1;
}

/* Remember a delivered text, and forget those older than the window. */
static void
add_delivered(struct ghost_txn *t)
{
	json_t *keep = json_array(), *e;
	char at[32];
	size_t i;

	json_array_foreach(json_object_get(t->doc, "delivered"), i, e)
		if (t->now - entry_time(e, "at") < t->o->dedupe)
			json_array_append(keep, e);
	clock_utc(t->now, at, sizeof at);
	json_array_append_new(keep, json_pack("{s:s,s:s}", "hash", t->hash,
	    "at", at));
	json_object_set_new(t->doc, "delivered", keep);
	t->dirty = 1;
}

/*
 * Does this run want r delivered: --alert-only and --dedupe.  -1 when
 * delivered.json cannot be read (err): deliver all the same, better
 * twice than never.
 */
static int
wanted(struct ghost_txn *t, const struct ghost_result *r, char *err)
{
	if (t->o->alert_only && !r->alert)
		return 0;
	if (t->o->dedupe > 0) {
		if (txn_read(t, err) == -1)
			return -1;
		if (delivered_within(t, r->response))
			return 0;
	}
	return 1;
}

static struct outbox_entry *
find(const struct ghost_txn *t, const char *wake_id)
{
	size_t i;

	for (i = 0; i < t->nbox; i++)
		if (strcmp(t->box[i].wake_id, wake_id) == 0)
			return &t->box[i];
	return NULL;
}

/* The result an entry holds, into t->r; -1 when it is not one. */
static int
entry_result(struct ghost_txn *t, const struct outbox_entry *e, char *err)
{
	json_t *l = json_object_get(e->doc, "line");
	char m[HEART_ERRLEN];

	ghost_result_free(&t->r);
	if (ghost_parse(json_string_value(l), json_string_length(l), &t->r,
	    m) == 0 && t->r.kind == GHOST_COMMIT &&
	    strcmp(t->r.wake_id, e->wake_id) == 0)
		return 0;
	if (t->r.doc != NULL && t->r.kind != GHOST_COMMIT)
		snprintf(m, sizeof m, "not an \"ok\" result");
	else if (t->r.doc != NULL)
		snprintf(m, sizeof m, "the result is of another wake");
	ghost_result_free(&t->r);
	errf(err, "%s/outbox/%s.json: %s; fix or remove it by hand", t->dir,
	    e->wake_id, m);
	return -1;
}

/*
 * Commit, in wake order, the answers heart-wake kept that no
 * heart-ghost has committed yet.  Idempotent (hist_commit knows the
 * wake ids it has); -1 at the first that cannot be.
 */
static int
commit_waiting(struct ghost_txn *t, char *err)
{
	struct outbox_entry *e;
	size_t i;

	for (i = 0; i < t->nbox; i++) {
		e = &t->box[i];
		if (e->doc == NULL || json_is_true(json_object_get(e->doc,
		    "committed")))
			continue;
		if (entry_result(t, e, err) == -1) {
			json_decref(e->doc);	/* named by ghost_next */
			e->doc = NULL;
			snprintf(e->err, sizeof e->err, "%s", err);
			continue;
		}
		if (t->r.hist && hist_commit(t->r.agent, t->r.messages,
		    t->r.wake_id, t->r.chamber, t->r.at, t->o->keep,
		    err) == -1)
			return -1;
		json_object_set_new(e->doc, "committed", json_true());
		e->dirty = 1;
	}
	return 0;
}

static void
txn_free(struct ghost_txn *t)
{
	outbox_free(t->box, t->nbox);
	ghost_result_free(&t->r);
	json_decref(t->doc);
	state_unlock(t->lockfd);
	memset(t, 0, sizeof *t);
	t->lockfd = -1;
}

/* No transaction after all: *tp freed (its lock let go), rc. */
static int
txn_none(struct ghost_txn **tp, int rc)
{
	free(*tp);
	*tp = NULL;
	return rc;
}

/* Lock the agent (flags as for state_lock) and read its outbox. */
static int
txn_open(const char *agent, int flags, const struct ghost_opts *o,
    time_t now, struct ghost_txn *t, char *err)
{
	memset(t, 0, sizeof *t);
	t->o = o;
	t->now = now;
	ghost_via(o, t->via);
	if (state_agent_dir(agent, 1, t->dir, sizeof t->dir, err) == -1 ||
	    (t->lockfd = state_lock(t->dir, DLVLOCK, flags, err)) < 0) {
		int rc = t->lockfd == -2 ? -2 : -1;
		t->lockfd = -1;
		return rc;
	}
	if (outbox_load(t->dir, "outbox", &t->box, &t->nbox, err) == -1 ||
	    commit_waiting(t, err) == -1) {
		txn_free(t);
		return -1;
	}
	return 0;
}

/* Add a new entry for r to the outbox, this run's, on disk first. */
static int
box_add(struct ghost_txn *t, const struct ghost_result *r, json_t *doc,
    char *err)
{
	struct outbox_entry *e;
	int rc;

	json_object_set_new(doc, "via", json_string(t->via));
	rc = outbox_put(t->dir, "outbox", r->wake_id, doc, err);
	t->box = realloc(t->box, (t->nbox + 1) * sizeof *t->box);
	if (t->box == NULL)
		abort();
	e = &t->box[t->nbox++];
	memset(e, 0, sizeof *e);
	snprintf(e->wake_id, sizeof e->wake_id, "%s", r->wake_id);
	snprintf(e->at, sizeof e->at, "%s", r->at);
	e->doc = doc;
	e->due = 1;
	return rc;
}

/* A dead letter of r given again: back into the outbox, due now. */
static int
revive(struct ghost_txn *t, const struct ghost_result *r, char *err)
{
	char name[HEART_IDMAX + 8], dir[4200];
	json_t *doc;

	snprintf(name, sizeof name, "%s.json", r->wake_id);
	snprintf(dir, sizeof dir, "%s/dead", t->dir);
	if (state_read_json(dir, name, &doc, err) == -1 || doc == NULL)
		return doc == NULL ? 0 : -1;
	json_object_del(doc, "dead");
	json_object_del(doc, "next");
	if (box_add(t, r, doc, err) == -1)
		return -1;
	return outbox_drop(t->dir, "dead", r->wake_id, err);
}

/*
 * One agent's deliveries, from ghost_begin or ghost_open (*tp) to
 * ghost_end, which frees *tp, under its delivered.lock.  Commit an "ok"
 * result and put it in the outbox (a replayed one waiting or dead: due
 * now): 0; 1 (err: a warning, go on); -1 (err: not kept, nothing held,
 * *tp NULL).
 */
int
ghost_begin(const struct ghost_result *r, const struct ghost_opts *o,
    time_t now, struct ghost_txn **tp, char *err)
{
	struct ghost_txn *t = *tp = xcalloc(1, sizeof *t);
	struct outbox_entry *e;
	json_t *doc;
	int rc;

	if (txn_open(r->agent, LOCK_EX, o, now, t, err) == -1)
		return txn_none(tp, -1);
	snprintf(t->given, sizeof t->given, "%s", r->wake_id);
	if ((e = find(t, r->wake_id)) != NULL) {
		e->due = 1;
		if (e->doc != NULL) {	/* given: this run's to deliver */
			json_object_set_new(e->doc, "via",
			    json_string(t->via));
			e->dirty = 1;
		}
		return 0;
	}
	/* a breaker's notice is delivered, never kept (status.c): once
	 * delivered, delivered.json says so */
	if (!r->hist)
		rc = noticed(t, r->wake_id);
	else if ((rc = hist_commit(r->agent, r->messages, r->wake_id,
	    r->chamber, r->at, o->keep, err)) == -1) {
		txn_free(t);
		return txn_none(tp, -1);
	}
	if (rc == 1)
		rc = revive(t, r, err);
	else {
		doc = json_pack("{s:s%,s:s,s:b}", "line", r->line, r->len,
		    "at", r->at, "committed", 1);
		rc = box_add(t, r, doc, err);
	}
	if (t->nbox > 1)
		qsort(t->box, t->nbox, sizeof *t->box, outbox_cmp);
	return rc == -1 ? 1 : 0;
}

/* The outbox alone (--flush): 0; 1 when nothing waits or another
 * process has the agent; -1 (err); *tp NULL unless 0. */
int
ghost_open(const char *agent, const struct ghost_opts *o, time_t now,
    struct ghost_txn **tp, char *err)
{
	int rc;

	*tp = NULL;
	if (!outbox_waiting(agent))
		return 1;
	*tp = xcalloc(1, sizeof **tp);
	if ((rc = txn_open(agent, LOCK_EX | LOCK_NB, o, now, *tp, err)) == -2)
		return txn_none(tp, 1);
	return rc == 0 ? 0 : txn_none(tp, rc);
}

/* Is e taken by a run with other delivery options than t's? */
static int
other_via(const struct ghost_txn *t, const struct outbox_entry *e)
{
	const char *v = json_string_value(json_object_get(e->doc, "via"));

	return v != NULL && strcmp(v, t->via) != 0;
}

/* Is e to be tried now? */
static int
due(const struct ghost_txn *t, const struct outbox_entry *e)
{
	return e->due || t->o->try_now || entry_time(e->doc, "next") <= t->now;
}

/* Does e, failing, hold up the answers after it?  For GHOST_HOLD from
 * its first failed try. */
static int
holds(const struct ghost_txn *t, const struct outbox_entry *e)
{
	return t->now - entry_time(e->doc, "since") < GHOST_HOLD;
}

static long long
retry_for(const struct ghost_txn *t)
{
	return t->o->retry_for > 0 ? t->o->retry_for : GHOST_RETRY_FOR;
}

/* e, given up, to dead/ (why: its last error, if not NULL); GHOST_DEAD
 * (err: the dead letter) or -1. */
static int
bury(struct ghost_txn *t, struct outbox_entry *e, const char *why, char *err)
{
	char at[32];

	clock_utc(t->now, at, sizeof at);
	json_object_del(e->doc, "next");
	json_object_set_new(e->doc, "dead", json_string(at));
	if (why != NULL)
		json_object_set_new(e->doc, "error", json_string(why));
	e->gone = 1;
	if (outbox_put(t->dir, "dead", e->wake_id, e->doc, err) == -1 ||
	    outbox_drop(t->dir, "outbox", e->wake_id, err) == -1)
		return -1;
	errf(err, "%s/dead/%s.json", t->dir, e->wake_id);
	return GHOST_DEAD;
}

/* When e is due: its "next", or when not tried yet, its wake's "at". */
static const char *
next_key(const struct outbox_entry *e)
{
	return json_object_get(e->doc, "next") != NULL ? "next" : "at";
}

/*
 * An answer another run took: left to it, unless it has been due for
 * retry_for (that run no longer comes): then a dead letter.  0, or as
 * bury with err the whole report.
 */
static int
leave(struct ghost_txn *t, struct outbox_entry *e, char *err)
{
	time_t next = entry_time(e->doc, next_key(e));
	char d[HEART_ERRLEN], at[32];
	int rc;

	if (t->now - next < retry_for(t)) {
		if (t->others++ == 0)
			snprintf(t->other, sizeof t->other, "%s", e->wake_id);
		return 0;
	}
	snprintf(at, sizeof at, "%s", json_string_value(json_object_get(
	    e->doc, next_key(e))));
	if ((rc = bury(t, e, NULL, d)) == -1) {
		errf(err, "%s", d);
		return -1;
	}
	errf(err, "wake %s: taken by other delivery options than this "
	    "run's, and due since %s without a try; given up, a dead letter "
	    "now: %s", e->wake_id, at, d);
	return rc;
}

/*
 * 1: deliver *r now (err may warn); 0: no more now; -1: an entry is
 * skipped (err), call again; GHOST_DEAD: an answer left to other
 * options was given up (err), call again.
 */
int
ghost_next(struct ghost_txn *t, const struct ghost_result **r, char *err)
{
	struct outbox_entry *e;
	int w;

	*err = '\0';
	for (; t->cur < t->nbox && !t->stop; t->cur++) {
		e = &t->box[t->cur];
		if (e->gone)
			continue;
		if (e->doc == NULL) {
			errf(err, "%s", e->err);
			t->cur++;
			return -1;
		}
		if (other_via(t, e)) {
			if ((w = leave(t, e, err)) != 0) {
				t->cur++;
				return w;
			}
			continue;
		}
		if (!due(t, e)) {
			if (holds(t, e))
				break;
			continue;
		}
		if (entry_result(t, e, err) == -1) {
			t->cur++;
			return -1;
		}
		if ((w = wanted(t, &t->r, err)) == 0) {
			e->gone = 1;
			if (outbox_drop(t->dir, "outbox", e->wake_id,
			    err) == -1) {
				t->cur++;
				return -1;
			}
			continue;
		}
		json_object_set_new(e->doc, "via", json_string(t->via));
		if (strcmp(e->wake_id, t->given) == 0)
			t->tried = 1;
		*r = &t->r;
		return 1;
	}
	t->stop = 1;
	return 0;
}

/*
 * The wait before try n+1 after n failed tries: a minute, doubled
 * each time, at most an hour.
 */
static long long
backoff(long long tries)
{
	long long s = 60;

	while (--tries > 0 && s < 3600)
		s *= 2;
	return s < 3600 ? s : 3600;
}

/* A failed try of e: retry later, or a dead letter when it has
 * failed for retry_for.  While it holds, the answers after it wait. */
static int
failed(struct ghost_txn *t, struct outbox_entry *e, const char *why,
    char *err)
{
	long long tries = json_integer_value(json_object_get(e->doc,
	    "tries")) + 1;
	time_t since = entry_time(e->doc, "since");
	char at[32];

	if (since == 0) {
		since = t->now;
		clock_utc(t->now, at, sizeof at);
		json_object_set_new(e->doc, "since", json_string(at));
	}
	json_object_set_new(e->doc, "tries", json_integer(tries));
	json_object_set_new(e->doc, "error", json_string(why));
	e->dirty = 0;
	if (t->now - since >= retry_for(t))
		return bury(t, e, why, err);
	clock_utc(t->now + backoff(tries), at, sizeof at);
	json_object_set_new(e->doc, "next", json_string(at));
	if (holds(t, e))
		t->stop = 1;
	if (outbox_put(t->dir, "outbox", e->wake_id, e->doc, err) == -1)
		return -1;
	errf(err, "%s", at);
	return GHOST_RETRY;
}

/* The delivery of the answer ghost_next gave: GHOST_SENT; GHOST_RETRY
 * (err: the next try's time); GHOST_DEAD (err: the dead letter); -1. */
int
ghost_done(struct ghost_txn *t, int delivered, const char *why, char *err)
{
	struct outbox_entry *e = &t->box[t->cur++];

	if (!delivered)
		return failed(t, e, why, err);
	e->gone = 1;
	if (t->o->dedupe > 0 && t->state == 1)
		add_delivered(t);
	if (!t->r.hist && txn_read(t, err) == 0)
		add_noticed(t, e->wake_id);
	if (outbox_drop(t->dir, "outbox", e->wake_id, err) == -1)
		return -1;
	return GHOST_SENT;
}

/*
 * What ghost_next left: the number of answers left to other delivery
 * options (*first: the wake id of the first); *waits: 1 when the answer
 * given to ghost_begin still waits in the outbox, never tried.
 */
size_t
ghost_left(const struct ghost_txn *t, const char **first, int *waits)
{
	const struct outbox_entry *e = find(t, t->given);

	*first = t->other;
	*waits = !t->tried && e != NULL && !e->gone;
	return t->others;
}

/*
 * Write back what is left to write, tidy an empty outbox and unlock.
 * The number of answers still waiting, or -1 (err).
 */
int
ghost_end(struct ghost_txn *t, char *err)
{
	int left;

	if (t->lockfd < 0)
		return txn_none(&t, 0);
	left = outbox_save(t->dir, t->box, t->nbox, err);
	if (t->dirty && state_write_json(t->dir, DLVFILE, t->doc, err) == -1)
		left = -1;
	txn_free(t);
	txn_none(&t, 0);
	return left;
}
