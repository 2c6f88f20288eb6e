/*
 * state.c - fuzz target: the state files an agent keeps, read back
 * (cap.json, breaker.json, wake.json, activity.json), and the fleet's
 * budget.json.  Each input is written as all five; then every reader
 * reads it: the peeks, the pulse's lock-free read, the wake's gates
 * (with an adaptive schedule, so activity.json is used), and the
 * transitions that read, decide and write back (cap_take, budget_take,
 * cap_record, which records the fleet's too, brk_check, brk_record).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartstore.h"
#include "heartwake.h"
#include "heartpulse.h"

#define NOW	1795348800	/* 2026-11-22T12:00:00Z */

static const char soultext[] =
    "heart:\n"
    "  timezone: Europe/Paris\n"
    "  schedule:\n"
    "    interval: 30m\n"
    "    active_hours: \"08:00-20:00\"\n"
    "    adaptive: { min: 20m, max: 4h, window: 14 }\n"
    "  idle: { after: 2h }\n";

static const char fleettext[] =
    "budget: { daily: 0.01, monthly: 0.2, zone: Europe/Berlin }\n";

static struct soul *soul;

static void
load_soul(void)
{
	char err[HEART_ERRLEN], path[4200];

	fz_put(fz_dir(), "fz.yaml", (const uint8_t *)soultext,
	    sizeof soultext - 1);
	fz_put(fz_dir(), "fleet.yaml", (const uint8_t *)fleettext,
	    sizeof fleettext - 1);
	snprintf(path, sizeof path, "%s/fleet.yaml", fz_dir());
	setenv("HEART_FLEET", path, 1);
	snprintf(path, sizeof path, "%s/fz.yaml", fz_dir());
	if (soul_load(path, &soul, err) == -1) {
		fprintf(stderr, "fuzz: %s\n", err);
		abort();
	}
}

static void
readers(const char *dir)
{
	char err[HEART_ERRLEN];
	struct cap_view cv;
	struct budget_view fv;
	struct brk_view bv;
	struct brk_conf bc;
	struct caps caps;
	struct pulse_state ps;
	struct pulse_slots slots = { 3600, 0, NOW, 7200 };	/* both chambers */
	struct wake_state w;
	struct gate g;
	json_t *j;
	int c, force;

	cap_from_soul(soul, &caps);
	brk_from_soul(soul, &bc);
	if (cap_peek(FZ_AGENT, soul->timezone, NOW, &cv, err) == 0) {
		FZ_ASSERT(cv.total >= 0 && cv.ghosts >= 0 && cv.cost >= 0);
		j = cap_json(FZ_AGENT, &cv, NOW);
		FZ_ASSERT(j != NULL);
		json_decref(j);
	}
	if (budget_peek(NOW, &fv, err) == 0) {
		FZ_ASSERT(fv.cost >= 0 && fv.inflight >= 0);
		j = budget_json(&fv, NOW);
		FZ_ASSERT(j != NULL);
		json_decref(j);
	}
	if (brk_peek(FZ_AGENT, &bc, NOW, &bv, err) == 0) {
		j = brk_json(FZ_AGENT, &bv, NOW);
		FZ_ASSERT(j != NULL);
		json_decref(j);
	}
	memset(&ps, 0, sizeof ps);
	pulse_read(FZ_AGENT, soul->timezone, &caps, &slots, NOW,
	    PULSE_BREAKER | PULSE_WAKE | PULSE_CAP | PULSE_JOURNAL, &ps, err);
	pulse_clear(&ps);
	if (wake_load(dir, &w, err) == -1)
		return;
	for (c = 0; c < CH_NCHAMBERS; c++)
		for (force = 0; force < 2; force++) {
			wake_gates(soul, dir, &w, (enum chamber)c, NOW, force,
			    &g);
			wake_gate_free(&g);
			if (c == CH_IDLE)
				wake_input(soul, dir, &w);
			wake_admit(soul, &w, (enum chamber)c, NOW, NOW, force);
		}
	wake_free(&w);
}

static void
transitions(void)
{
	char err[HEART_ERRLEN];
	struct cap_view cv;
	struct brk_view bv;
	struct brk_conf bc;
	struct caps caps;
	struct usage u = { 10, 20, 5, 2 };
	json_t *ev = json_array();
	int ok, probe;

	cap_from_soul(soul, &caps);
	brk_from_soul(soul, &bc);
	budget_take(FZ_AGENT, NOW, &ok, NULL, err);
	cap_take(FZ_AGENT, CH_SCHEDULE, &caps, -1, soul->timezone, NOW, 1, &ok,
	    &cv, err);
	cap_record(FZ_AGENT, soul->timezone, NOW, 1, &u, &u, 1234, err);
	brk_check(FZ_AGENT, &bc, NOW, &ok, &probe, &bv, ev, err);
	brk_record(FZ_AGENT, &bc, NOW, BRK_LLM_FAIL | BRK_TOOL_OK, NOW + 60,
	    "fuzz", ev, err);
	json_decref(ev);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static const char *const files[] = {
		"cap.json", "breaker.json", "wake.json", "activity.json"
	};
	const char *dir = fz_agent_dir();
	size_t i;

	if (soul == NULL)
		load_soul();
	for (i = 0; i < sizeof files / sizeof files[0]; i++)
		fz_put(dir, files[i], data, n);
	fz_put(fz_dir(), "budget.json", data, n);
	readers(dir);
	transitions();
	return 0;
}
