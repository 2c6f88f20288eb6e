/*
 * dormant.c - agents nobody reads stop spending: an agent whose person
 * has not spoken to it (no user input, as the idle chamber counts it:
 * the later of agents/ID/input's mtime and the last user message in
 * the history; before any, since heart first saw the agent) for
 * heart.dormant_after is dormant, and its wake ends as "dormant" at
 * its admission (run.c), beside a pause: nothing run, nothing sent,
 * nothing taken.  The first user input wakes it again: the rule is a
 * pure function of the input time and now.
 *
 * The defaults (heart-soul(5)): on for the idle chamber, after 14d,
 * since exploring with nobody there for two weeks is pointless; off for
 * the schedule chamber, which may monitor for a person who reads only
 * alerts, unless heart.dormant_after is set, which holds for both;
 * heart.dormant_after: 0 (or false) turns it off for both.
 *
 * One notice says so (notice.c): the first dormant wake of a stretch
 * with no input tells it, and wake.json's "dormant_told" keeps the
 * input time it told of, written under the wake lock, so that no other
 * wake, on any host that shares the store, tells it again; the next
 * stretch, after the user has spoken, is told anew.  Its end is told
 * by nothing: the person who spoke knows (heart-soul(5)).
 */
#include <stdio.h>

#include "heartint.h"
#include "heartwake.h"

#define DEF_DORMANT	(14 * 86400LL)	/* the idle chamber's default */

/* After how long with no input chamber c is dormant: 0 never. */
static long long
dormant_after(const struct soul *s, enum chamber c)
{
	if (s->dormant_after >= 0)
		return s->dormant_after;
	return c == CH_IDLE ? DEF_DORMANT : 0;
}

/*
 * Is chamber c dormant at now, with w's input read (wake_input)?  1
 * with *since the last input (or first sight), 0 not.
 */
static int
dormant_at(const struct soul *s, const struct wake_state *w, enum chamber c,
    time_t now, time_t *since)
{
	long long after = dormant_after(s, c);
	time_t t = w->input ? w->input : w->first_seen;

	*since = t;
	return after > 0 && t != 0 && now - t >= after;
}

/*
 * heart-cap status: *j {"since":T,"chambers":[...]} when a chamber of
 * s that is on is dormant at now, else NULL; 0, or -1 with err.
 */
int
dormant_peek(const struct soul *s, time_t now, json_t **j, char *err)
{
	struct wake_state w;
	char dir[4096], at[40];
	time_t since = 0;
	int c;

	*j = NULL;
	if (state_agent_dir(s->name, 0, dir, sizeof dir, err) == -1 ||
	    wake_load(dir, &w, err) == -1)
		return -1;
	wake_input(s, dir, &w);
	for (c = 0; c < CH_NCHAMBERS; c++) {
		if (s->ch[c].daily_cap == 0 ||
		    !dormant_at(s, &w, (enum chamber)c, now, &since))
			continue;
		if (*j == NULL) {
			clock_utc(since, at, sizeof at);
			*j = json_pack("{s:s,s:[]}", "since", at, "chambers");
		}
		json_array_append_new(json_object_get(*j, "chambers"),
		    json_string(soul_chamber_name((enum chamber)c)));
	}
	wake_free(&w);
	return 0;
}

/* The reason a dormant wake gives. */
static void
dormant_why(const struct soul *s, enum chamber c, time_t since, char *buf,
    size_t n)
{
	char at[40], d[32];

	clock_utc(since, at, sizeof at);
	snprintf(buf, n, "dormant: no user input since %s "
	    "(heart.dormant_after %s%s); a user message wakes it", at,
	    dur_format(dormant_after(s, c), d, sizeof d),
	    s->dormant_after < 0 ? ", the idle chamber's default" : "");
}

/*
 * A dormant wake's "dormant" object: {"since":T,"after":D,"chambers":
 * [...]}, the chambers of s that are on and dormant at now; w's input
 * read (wake_input).
 */
static json_t *
dormant_json(const struct soul *s, const struct wake_state *w,
    enum chamber c, time_t now, time_t since)
{
	char at[40], d[32];
	json_t *j, *chs = json_array();
	time_t t;
	int i;

	for (i = 0; i < CH_NCHAMBERS; i++)
		if (s->ch[i].daily_cap != 0 &&
		    dormant_at(s, w, (enum chamber)i, now, &t))
			json_array_append_new(chs, json_string(
			    soul_chamber_name((enum chamber)i)));
	clock_utc(since, at, sizeof at);
	j = json_pack("{s:s,s:s,s:o}", "since", at, "after",
	    dur_format(dormant_after(s, c), d, sizeof d), "chambers", chs);
	return j;
}

/*
 * Is a wake of chamber c dormant at now (w's input read here)?  1 with
 * its reason in why (n bytes) and, unless d is NULL, its "dormant"
 * object in *d; the first dormant wake of a stretch, when it tells
 * (tell), keeps in w, and in wake.json under the caller's wake lock,
 * that the stretch is told, and *d says "notice": true.  0 not
 * dormant; -1 with err (only when it tells).
 */
int
dormant_check(const struct soul *s, const char *dir, struct wake_state *w,
    enum chamber c, time_t now, int tell, json_t **d, char *why, size_t n,
    char *err)
{
	time_t since;

	wake_input(s, dir, w);
	if (!dormant_at(s, w, c, now, &since))
		return 0;
	dormant_why(s, c, since, why, n);
	if (d == NULL)
		return 1;
	*d = dormant_json(s, w, c, now, since);
	if (tell && w->dormant_told != since) {
		w->dormant_told = since;
		if (wake_save(dir, s->name, w, -1, STATE_SYNC, now, err) ==
		    -1) {
			json_decref(*d);
			*d = NULL;
			return -1;
		}
		json_object_set_new(*d, "notice", json_true());
	}
	return 1;
}
