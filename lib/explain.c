/*
 * explain.c - heart-wake --explain: each chamber's gates asked as a
 * wake with the same options would meet them (the due, active-hours
 * and checklist gates, an operator's pause, dormancy, the account's
 * hold, a slot missed past schedule.catch_up, the gate program, the
 * breaker, the cap, the fleet's rate limit), each verdict whatever the
 * others say, and when a wake will next be admitted (heart-wake(1),
 * --explain).
 *
 * Invariant: nothing is changed, started or sent: the state is only
 * read (a breaker's probe is not claimed, the cap not taken), and the
 * gate program is named, never run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"
#include "heartstore.h"
#include "heartwake.h"

/* One gate's verdict, for --explain. */
static json_t *
verdict(int ok, const char *reason, time_t until)
{
	json_t *o = json_pack("{s:b,s:s}", "ok", ok, "reason", reason);
	char iso[40];

	if (!ok && until > 0) {
		clock_utc(until, iso, sizeof iso);
		json_object_set_new(o, "until", json_string(iso));
	}
	return o;
}

/* The gate program's verdict: named, never run (it may keep state). */
static json_t *
gate_verdict(const struct soul *s, enum chamber c)
{
	const json_t *g = s->ch[c].gate;
	char *argv, r[1024];

	if (g == NULL)
		return verdict(1, "no gate program", 0);
	argv = json_dumps(g, JSON_COMPACT);
	snprintf(r, sizeof r, "runs once the gates above pass, before the "
	    "breaker and the cap: %.800s (timeout %llds); --explain does "
	    "not run it", argv, s->ch[c].gate_timeout);
	free(argv);
	return verdict(1, r, 0);
}

/* The breaker's verdict: 1 when it lets a wake go now. */
static int
brk_verdict(const struct wake *k, char *r, size_t n)
{
	const struct brk_view *v = &k->bv;
	char at[40];

	clock_utc(v->until, at, sizeof at);
	if (v->state == BRK_CLOSED)
		snprintf(r, n, "closed (llm %lld/%lld, tool %lld/%lld "
		    "failures)", v->llm_fails, k->bc.threshold,
		    v->tool_fails, k->bc.threshold);
	else if (v->state == BRK_OPEN)
		snprintf(r, n, "open (%s trigger: %s); next probe at %s",
		    v->trigger[0] ? v->trigger : "?", v->reason, at);
	else if (v->until == 0)
		snprintf(r, n, "half_open: the next wake is its probe");
	else
		snprintf(r, n, "half_open: another wake holds the probe; free "
		    "at %s", at);
	return v->state == BRK_CLOSED || (v->state == BRK_HALF_OPEN &&
	    v->until == 0);
}

/* The cap's verdict for chamber c: 1 when it admits a wake now; else
 * *until is when it admits again (the month's end for the monthly
 * budget: cap_open_at), 0 for a chamber that is off. */
static int
cap_verdict(const struct wake *k, enum chamber c, char *r, size_t n,
    time_t *until)
{
	struct cap_view v = k->cv;
	long long lim;
	int ok;

	cap_from_soul(k->s, &v.caps);
	lim = cap_limit(&v.caps, c);
	ok = v.total < lim && cap_spend_ok(&v, &v.caps);
	*until = ok || k->s->ch[c].daily_cap == 0 ? 0 :
	    cap_open_at(&v, &v.caps, k->now);
	if (k->s->ch[c].daily_cap == 0)
		snprintf(r, n, "%s: the chamber is off (daily_cap: 0)",
		    soul_chamber_name(c));
	else if (ok)
		snprintf(r, n, "%lld of %lld used today", v.total, lim);
	else
		cap_why(&v, c, k->now, r, n);
	return ok;
}

/*
 * The account's hold a wake of s would meet now (hold.c, only read):
 * hv->held 0 when none, or when the probe is due (the wake would be
 * it); a soul whose model is not configured meets none here (its
 * wake says why).
 */
static int
hold_peek(const struct soul *s, time_t now, struct hold_view *hv,
    char *err)
{
	struct llm_conf lc[2];
	char e2[HEART_ERRLEN];
	const char *key;
	int i, n, r;

	memset(hv, 0, sizeof *hv);
	if (llm_conf(s, 0, &lc[0], e2) == -1)
		return 0;
	n = s->triage != NULL && llm_conf(s, 1, &lc[1], e2) == 0 ? 2 : 1;
	for (i = 0; i < n; i++) {
		if (lc[i].command != NULL)
			continue;
		key = lc[i].key_env[0] != '\0' ? getenv(lc[i].key_env) : NULL;
		if ((r = hold_admit(lc[i].base_url, key, now, 0, hv, err)) ==
		    -1)
			return -1;
		if (r == 1)
			return 0;
	}
	memset(hv, 0, sizeof *hv);
	return 0;
}

/*
 * --explain of chamber c: every gate's verdict, each whatever the
 * others say; the first that holds (what a wake now would report);
 * and when a wake will next be admitted, every gate counted.
 */
/* The fleet's budget's verdict on a take now (budget_admits), as bv
 * stands after it: 1 admitted, else 0 with why in buf and k->budget_at
 * when it admits again (its reset once reached; a minute on while the
 * wakes in flight could reach it, as a wake is deferred). */
static int
fleet_verdict(struct wake *k, const struct budget_view *bv, int verdict,
    char *buf, size_t n)
{
	k->budget_at = 0;
	if (bv->fb.set && verdict != BUDGET_ADMIT) {
		budget_why_at(bv, verdict, k->now, buf, n, &k->budget_at);
		if (k->budget_at == 0)
			k->budget_at = -1;	/* never */
		return 0;
	}
	snprintf(buf, n, "below the fleet's budget");
	return 1;
}

static json_t *
explain_chamber(struct wake *k, enum chamber c, int force,
    const struct pause_view *pv, const struct hold_view *hv,
    const struct budget_view *bv, int bverdict)
{
	static const char *const names[] = { "due", "hours", "checklist" };
	const struct soul *s = k->s;
	const char *would = NULL, *why = NULL;
	char br[400], cr[300], pr[160], dr[200], hr[1024], lr[300], fr[600];
	char iso[40], e2[HEART_ERRLEN];
	struct caps caps;
	struct gate g[3];
	json_t *o, *gates;
	time_t next, used, cat;
	int i, bok, cok, fok, dormant, late;

	wake_verdicts(s, k->dir, &k->w, c, k->now, force, g);
	bok = brk_verdict(k, br, sizeof br);
	cok = cap_verdict(k, c, cr, sizeof cr, &cat);
	gates = json_object();
	for (i = 0; i < 3; i++) {
		json_object_set_new(gates, names[i], verdict(
		    g[i].status[0] == '\0', g[i].reason, g[i].next));
		if (would == NULL && g[i].status[0] != '\0') {
			would = g[i].status;
			why = g[i].reason;
		}
	}
	pause_why(pv, pr, sizeof pr);
	json_object_set_new(gates, "pause", verdict(!pv->paused, pv->paused ?
	    pr : "not paused", pv->until));
	if (would == NULL && pv->paused) {
		would = status_name(ST_PAUSED);
		why = pr;
	}
	dormant = dormant_check(s, k->dir, &k->w, c, k->now, 0, NULL, dr,
	    sizeof dr, e2);
	json_object_set_new(gates, "dormant", verdict(!dormant, dormant ? dr :
	    "not dormant", 0));
	if (would == NULL && dormant) {
		would = status_name(ST_DORMANT);
		why = dr;
	}
	if (hv->held)
		hold_why(hv, hr, sizeof hr);
	json_object_set_new(gates, "hold", verdict(!hv->held, hv->held ? hr :
	    "not held", hv->probe));
	if (would == NULL && hv->held) {
		would = status_name(strcmp(hv->kind, "rate") == 0 ?
		    ST_THROTTLED : ST_HELD);
		why = hr;
	}
	/* the due slot's lateness, once the due gate passed (slot.c) */
	late = c == CH_SCHEDULE && !force && g[0].status[0] == '\0' &&
	    slot_missed(g[0].slot, k->now, s->catch_up);
	if (c != CH_SCHEDULE || force || g[0].status[0] != '\0')
		snprintf(lr, sizeof lr, "%s", force ? "skipped by --force" :
		    c != CH_SCHEDULE ? "the idle chamber has no slots" :
		    "no slot due");
	else
		slot_why(g[0].slot, k->now, s->catch_up, lr, sizeof lr);
	json_object_set_new(gates, "catch_up", verdict(!late, lr, 0));
	if (would == NULL && late) {
		would = status_name(ST_MISSED);
		why = lr;
	}
	json_object_set_new(gates, "gate", gate_verdict(s, c));
	json_object_set_new(gates, "breaker", verdict(bok, br,
	    bok ? 0 : k->bv.until));
	fok = fleet_verdict(k, bv, bverdict, fr, sizeof fr);
	if (bv->fb.set)		/* a gate only where the fleet file sets it */
		json_object_set_new(gates, "budget", verdict(fok, fr,
		    k->budget_at));
	json_object_set_new(gates, "cap", verdict(cok, cr, cat));
	if (s->ch[c].daily_cap != 0 && would == NULL && bok && !fok) {
		/* checked before the cap */
		would = status_name(bverdict == BUDGET_REACHED ? ST_CAPPED :
		    ST_THROTTLED);
		why = fr;
	} else if (s->ch[c].daily_cap == 0 || (would == NULL && bok &&
	    !cok)) {
		would = "capped";	/* off, like a wake would say */
		why = cr;
	} else if (would == NULL && !bok) {
		would = "open";
		why = br;
	}
	/* a missed slot is used: the next wake is at a slot after it */
	used = k->w.refused[c];
	if (late)
		k->w.refused[c] = k->now;
	next = wake_next(s, k->dir, &k->w, c, k->now, run_open_at(k, c),
	    force);
	k->w.refused[c] = used;
	/* a paused wake uses no slot: it waits for the pause's end */
	if (pv->paused && next != 0 && (pv->until == 0 || next < pv->until))
		next = pv->until;
	if (hv->held && next != 0 && next < hv->probe)
		next = hv->probe;
	/* a dormant agent wakes on a user message, at no time known */
	if (dormant)
		next = 0;
	cap_from_soul(s, &caps);
	o = json_pack("{s:s,s:s,s:s,s:s?,s:I,s:I,s:s,s:o,s:n,s:{s:I,s:I}}",
	    "agent", s->name, "chamber", soul_chamber_name(c), "would",
	    would ? would : "wake", "reason", why, "interval",
	    (json_int_t)(g[0].interval ? g[0].interval : s->ch[c].every),
	    "offset", (json_int_t)(c == CH_SCHEDULE ? (g[0].interval ?
	    g[0].offset : slot_offset(s->name, s->ch[c].every)) : 0),
	    "breaker", brk_state_name(k->bv.state), "gates", gates, "next",
	    "cap", "used", (json_int_t)k->cv.total, "cap",
	    (json_int_t)cap_limit(&caps, c));
	if (next > 0) {
		clock_utc(next, iso, sizeof iso);
		json_object_set_new(o, "next", json_string(iso));
	}
	if (force)
		json_object_set_new(o, "force", json_true());
	if (s->mcp != NULL)
		json_object_set_new(o, "mcp", mcp_plan(s));
	if (g[0].why != NULL)
		json_object_set(o, "adaptive", g[0].why);
	for (i = 0; i < 3; i++)
		wake_gate_free(&g[i]);
	return o;
}

/* The gates of each chamber (or of the one asked for) now, as a wake
 * with these options would meet them. */
static json_t *
gates_of(const struct soul *s, const struct run_opts *ro, time_t now,
    char *err)
{
	struct run_opts all = { -1, 0, 0, NULL, NULL, 0 };
	struct pause_view pv;
	struct hold_view hv;
	struct budget_view bv;
	struct wake k;
	json_t *arr = json_array();
	int c, bverdict;

	memset(&k, 0, sizeof k);
	k.s = s;
	k.o = ro != NULL ? ro : &all;
	k.now = now;
	brk_from_soul(s, &k.bc);
	if (state_agent_dir(s->name, 0, k.dir, sizeof k.dir, err) == -1 ||
	    wake_load(k.dir, &k.w, err) == -1 ||
	    brk_peek(s->name, &k.bc, now, &k.bv, err) == -1 ||
	    cap_peek(s->name, s->timezone, now, &k.cv, err) == -1 ||
	    pause_peek(s->name, now, &pv, err) == -1 ||
	    hold_peek(s, now, &hv, err) == -1 ||
	    budget_admits(s->name, now, &bverdict, &bv, err) == -1) {
		wake_free(&k.w);
		json_decref(arr);
		return NULL;
	}
	if (!s->llm.price.set)	/* the fleet's budget holds it not */
		bv.fb.set = 0;
	if (!bv.fb.set)
		bverdict = BUDGET_ADMIT;
	if (k.w.first_seen == 0)
		k.w.first_seen = now;
	k.loaded = 1;
	for (c = 0; c < CH_NCHAMBERS; c++)
		if (k.o->chamber < 0 || c == k.o->chamber)
			json_array_append_new(arr, explain_chamber(&k,
			    (enum chamber)c, k.o->force, &pv, &hv, &bv,
			    bverdict));
	wake_free(&k.w);
	return arr;
}

/*
 * To each chamber's verdict of s in arr, the fleet's rate limit as a
 * gate ("rate", with its bucket) and, when the wake is deferred, since
 * when.  dir is the souls' directory, whose soul cache knows the
 * deferred wakes.
 */
static int
rate_verdict(json_t *arr, const struct soul *s, const char *dir,
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
	if (llm_conf(s, s->triage != NULL, &lc, err) == 0 &&
	    endpoint_of(&lc, ep, sizeof ep, err) == -1)
		return -1;
	endpoint_none_why(why, sizeof why);
	if (ep[0] != '\0') {
		if (bucket_peek(ep, s->name, now, &v, err) == -1)
			return -1;
		rate = bucket_json(&v, now);
		ok = bucket_gate_ok(&v, now, why, sizeof why);
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
			clock_utc(since, iso, sizeof iso);
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

/*
 * --explain: the gates of each chamber (or of the one asked for) now,
 * as a wake with these options would meet them, changing nothing, the
 * fleet's rate limit among them; dir is the souls' directory (NULL:
 * the soul's own).  0 with *out, or the exit code with err.
 */
int
explain_soul(const struct soul *s, const struct run_opts *ro,
    const char *dir, time_t now, json_t **out, char *err)
{
	char sdir[4096], e2[HEART_ERRLEN];

	if ((*out = gates_of(s, ro, now, err)) == NULL)
		return HX_IOERR;
	if (dir == NULL)
		soul_dir(s, sdir, sizeof sdir);
	if (rate_verdict(*out, s, dir != NULL ? dir : sdir, now, e2) == -1) {
		errf(err, "%s: %s", s->name, e2);
		json_decref(*out);
		*out = NULL;
		return HX_CONFIG;
	}
	return 0;
}
