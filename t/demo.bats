#!/usr/bin/env bats
# make demo's script (contrib/demo.sh): the whole path on this machine
# against the offline responder, twice, and nothing left running.

load helpers
bats_require_minimum_version 1.5.0

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

# error_lines: the lines of standard input that look like an error: a
# program's message ("heart-wake: ...", "demo: ...", "curl: (6) ...",
# "mosquitto[42]: ...", a shell's "demo.sh: line 9: ..."), or a line
# that says error, warning, failure, a Python traceback, a crash, a
# refusal or something missing; grep's status: 1 when there is none
error_lines() {
	grep -E -i \
	    -e '^(heart(-[a-z]+)?|demo|make|npm|sh|bash|python3?|node|jq|curl|mosquitto[a-z_]*|changed-(output|files)|price)(\[[0-9]+\])?: ' \
	    -e ': line [0-9]+: ' \
	    -e 'error|warn|fail|fatal|traceback|exception|abort|segmentation|killed|terminated|core dumped' \
	    -e 'denied|refused|cannot|can.t |no such|not found|missing|unbound|did not|unable|\(no '
}

@test "the demo prints no error line: every example soul works offline, and every example agent's breaker ends closed" {
	run -0 timeout 120 bash "$T/../contrib/demo.sh" {DEMO_LOCK}>&-
	demo=$output
	# what an error line is: the line of each kind is one
	run -0 error_lines <<< "$(printf '%s\n' "heart-wake: notes_keeper: tool mcp server notes: mcp-server-filesystem: cannot run: No such file or directory" \
	    "curl: (6) Could not resolve host: www.githubstatus.com" \
	    "demo: mosquitto did not start" "Traceback (most recent call last):" \
	    "contrib/demo.sh: line 9: x: unbound variable" "(no pulse within 15 s)")"
	[ "${#lines[@]}" -eq 6 ]
	run -1 error_lines <<< "$demo"
	# the last lines: each example agent's breaker, closed
	souls=$T/../share/heartbeat/souls
	want=$(for s in "$souls"/*.yaml "$souls"/*.md; do
		a=${s##*/}
		echo "${a%.*}: closed"
	done | sort)
	[ "$(echo "$want" | wc -l)" -eq 6 ]
	run -0 sed -n '/^--- heart-breaker status$/,$p' <<< "$demo"
	assert_output "$(printf -- '--- heart-breaker status\n%s' "$want")"
	# notes_keeper was offered its MCP server's two tools at each wake
	top=$(cd "$T/.." && pwd)
	run -0 grep -c '"notes__read_text_file"' "$top/build/demo/llm/requests.jsonl"
	assert_output 3
	# page_watch woke at its first look and when its page changed, and
	# its gate held the round between, at zero requests
	run -0 grep -c 'Partial outage: webhooks delayed' "$top/build/demo/llm/requests.jsonl"
	assert_output 1
	run -0 grep -x 'page_watch: 2/24 used today, .*' <<< "$demo"
}
