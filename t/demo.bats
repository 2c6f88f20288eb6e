#!/usr/bin/env bats
# make demo's script (contrib/demo.sh): the whole path on this machine
# against the offline responder, twice, and nothing left running.

load helpers

setup() {
	# (contrib/demo.sh puts the tree first in PATH: make demo runs the
	# programs as built, never the sanitized ones)
	plain_only "make demo runs the tree's own programs: the plain pass runs it"
	heart_setup
	unset HEART_LLM_URL HEART_LLM_MODEL OPENAI_API_KEY ANTHROPIC_API_KEY
	[ -f "$T/../build/mizpah/mqtt.min.js" ] || skip "build/mizpah missing: run make mizpah"
	# the demo runs in build/demo: one at a time (make check runs its
	# passes at once)
	exec {DEMO_LOCK}> "$T/../build/demo.lock"
	flock -w 600 "$DEMO_LOCK"
}

@test "the demo runs the whole heartbeat offline, twice, and leaves nothing running" {
	for n in 1 2; do
		run timeout 120 env ROUNDS=2 bash "$T/../contrib/demo.sh" \
		    {DEMO_LOCK}>&-
		assert_success
		assert_output --partial 'model:     none configured; using the offline responder'
		assert_line --regexp '^dashboard: http://127\.0\.0\.1:[0-9]+/\?broker=ws://127\.0\.0\.1:[0-9]+&username=mizpah#password=[0-9a-f]+$'
		assert_output --partial '"agent":"travel_rescue","seq":'
		assert_line --regexp '^travel_rescue: [0-9]+/48 used today'
		assert_line 'github_scout: closed'
		assert_output --partial 'ALERT: the offline responder has something to report.'
	done
	top=$(cd "$T/.." && pwd)
	run pgrep -f "$top/build/demo/mosquitto.conf"
	assert_failure
	run pgrep -f "llm-double.py $top/build/demo/llm"
	assert_failure
}
