#!/usr/bin/env bats
# heart-wake's notices: a breaker that opens, or closes again, is told
# once, as a result line of its own (breaker_open, breaker_closed),
# which heart-ghost delivers as an answer, through the outbox, to a
# real receiver (t/deliver-receiver.py, by contrib/deliver/webhook),
# and never commits to the history.  Never one a failed wake.

load helpers

bats_require_minimum_version 1.5.0

setup() {
	model_setup
	cd "$BATS_TEST_TMPDIR"
	D=$T/../contrib/deliver
	unset "${!HEART_DELIVER_@}"
	T0=$(date -u -d '2026-11-21 12:00:00' +%s)
	rcv_start
	export HEART_DELIVER_WEBHOOK_URL=$RCV/hook
	: > wakes.jsonl
}

teardown() {
	rcv_stop
	model_teardown
}

# wake SOUL MINUTES [GHOST-OPTION...]: heart-wake --force for SOUL at
# T0 + MINUTES, its lines kept in wakes.jsonl and given to heart-ghost
# --text --exec webhook, each with the exit status its lines say
wake() {
	local s=$1 t=$((T0 + 60 * $2))
	shift 2
	run --separate-stderr at_epoch "$t" heart-wake --soul "$s" --force
	[ "$status" -eq "$(head -n 1 <<< "$output" | jq .exit)" ]
	printf '%s\n' "$output" > last.jsonl
	cat last.jsonl >> wakes.jsonl
	run --separate-stderr at_epoch "$t" heart-ghost "$@" --text \
	    --exec "$D/webhook" < last.jsonl
	[ "$status" -eq "$(jq -s 'map(.exit) | max' last.jsonl)" ]
}

# notices STATUS: how many lines of that status heart-wake printed
notices() {
	jq -r .status wakes.jsonl | grep -cx "$1" || true
}

# text N: the text of the receiver's Nth request
text() {
	sed -n "$1p" rcv/log | jq -r '.body | fromjson | .text'
}

@test "a provider down for hours is one notice, and one recovery when it answers again, delivered to a real receiver and kept in no history" {
	s=$(soul_file scout.yaml 'heart: {}')
	llm_script '{"replies":[{"status":500,"text":"upstream is down"}]}'
	# every 20 minutes for 8 hours: 3 failures open it, then each
	# probe fails and reopens it, for ever longer
	for ((m = 0; m < 480; m += 20)); do
		wake "$s" "$m"
	done
	[ "$(notices error)" -ge 8 ]
	[ "$(notices open)" -ge 10 ]
	[ "$(notices breaker_open)" -eq 1 ]
	[ "$(notices breaker_closed)" -eq 0 ]
	[ "$(wc -l < rcv/log)" -eq 1 ]
	# the notice follows the wake that opened it, the third
	jq -e -s '.[2].status == "error" and .[3].status == "breaker_open" and
	    .[3].wake_id == .[2].wake_id + "-breaker" and
	    .[3].agent == "scout" and .[3].chamber == "schedule" and
	    .[3].at == "2026-11-21T12:40:00Z" and .[3].exit == 0 and
	    .[3].trigger == "llm" and .[3].kind == "failures" and
	    .[3].until == "2026-11-21T12:55:00Z" and
	    (.[3].error | test("HTTP 500")) and (.[3] | has("messages") | not)' \
	    wakes.jsonl
	sed -n 1p rcv/log | jq -e '.body | fromjson |
	    .alert == true and .agent == "scout" and
	    (.wake_id | endswith("-breaker"))'
	[[ $(text 1) == "heart: scout's model is failing (3 failures in a row): "*"HTTP 500"*". No wake until 2026-11-21T12:55:00Z; heart tries again then." ]]
	# the model answers again: the next probe closes it, told once
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	for ((m = 600; m < 700; m += 20)); do
		wake "$s" "$m"
	done
	[ "$(notices breaker_open)" -eq 1 ]
	[ "$(notices breaker_closed)" -eq 1 ]
	[ "$(notices idle)" -eq 5 ]
	[ "$(wc -l < rcv/log)" -eq 2 ]
	[ "$(text 2)" = "heart: scout's model answers again." ]
	sed -n 2p rcv/log | jq -e '.body | fromjson | .alert == false'
	jq -e -s 'map(select(.status == "breaker_closed")) | .[0] |
	    .at == "2026-11-21T22:00:00Z" and .exit == 0' wakes.jsonl
	# nothing was committed, nothing waits
	[ ! -e "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
	run -0 heart-ghost --outbox scout
	assert_output ""
	# a notice given again is not delivered again
	grep '"status":"breaker_' wakes.jsonl > again
	run -0 at_epoch $((T0 + 60 * 700)) heart-ghost --text \
	    --exec "$D/webhook" again
	[ "$(wc -l < rcv/log)" -eq 2 ]
}

@test "a refused key is one notice that names a configuration error, and the key the server echoes is in no line" {
	export OPENAI_API_KEY=sk-test-SECRET-0123456789abcdef
	s=$(soul_file scout.yaml 'heart: {}')
	llm_script '{"replies":[{"status":401,"text":"Incorrect API key provided: {{authorization}}"}]}'
	wake "$s" 0
	jq -e -s 'length == 2 and .[0].status == "error" and
	    .[0].exit == 78 and .[1].status == "breaker_open" and
	    .[1].kind == "config" and .[1].until == "2026-11-21T14:00:00Z"' \
	    wakes.jsonl
	[[ $(text 1) == "heart: scout's model is failing (a configuration error a person must fix): "*"401"*"; heart tries again then." ]]
	# the probes after max_cooldown fail again: no more notices
	for m in 60 121 250 370 500; do
		wake "$s" "$m"
	done
	[ "$(notices breaker_open)" -eq 1 ]
	[ "$(wc -l < rcv/log)" -eq 1 ]
	# the double did echo the key; heart told it to no one
	grep -q 'SECRET-0123456789abcdef' "$LLM_DIR/requests.jsonl"
	! grep -q 'SECRET-0123456789abcdef' rcv/log wakes.jsonl
}

@test "--alert-only delivers the opening, an alert, and not the recovery" {
	s=$(soul_file scout.yaml 'heart: { breaker: { threshold: 1, cooldown: 10m } }')
	llm_script '{"replies":[{"status":503,"text":"overloaded"}]}'
	wake "$s" 0 --alert-only
	wake "$s" 5 --alert-only
	[ "$(notices breaker_open)" -eq 1 ]
	[ "$(wc -l < rcv/log)" -eq 1 ]
	[ "$(text 1)" = "heart: scout's model is failing (1 failure): model endpoint answered HTTP 503: overloaded. No wake until 2026-11-21T12:10:00Z; heart tries again then." ]
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	wake "$s" 11 --alert-only
	[ "$(notices breaker_closed)" -eq 1 ]
	[ "$(wc -l < rcv/log)" -eq 1 ]
	run -0 heart-ghost --outbox scout
	assert_output ""
}

@test "a round prints the notice after the wake that made it, and only that one" {
	mkdir souls
	for a in alpha beta; do
		printf 'heart: { breaker: { threshold: 2 } }\n' > "souls/$a.yaml"
	done
	llm_script '{"replies":[{"status":500,"text":"down"}]}'
	# two failures open both breakers; the third round finds them open
	for m in 0 1 2; do
		run --separate-stderr at_epoch $((T0 + 60 * m)) heart-wake \
		    --souls souls --force --jobs 2
		[ "$status" -eq $((m < 2 ? 75 : 0)) ]
		printf '%s\n' "$output" >> wakes.jsonl
	done
	[ "$(notices open)" -eq 2 ]
	[ "$(notices breaker_open)" -eq 2 ]
	jq -e -s '[.[] | select(.status == "breaker_open") | .agent] | sort ==
	    ["alpha", "beta"]' wakes.jsonl
	# each right after its own wake's line
	jq -e -s '. as $l | [range(1; length) | select($l[.].status ==
	    "breaker_open") | $l[. - 1].wake_id + "-breaker" ==
	    $l[.].wake_id] | length == 2 and all' wakes.jsonl
}

@test "a Retry-After alone is no notice, nor its end; an opening heart-breaker record made is told by the first wake that fails" {
	s=$(soul_file scout.yaml 'heart: {}')
	# a 429 that holds the breaker a minute, then answers
	llm_script '{"replies":[{"status":429,"text":"slow down","headers":{"Retry-After":"60"}},{"text":"[IDLE]"}]}'
	wake "$s" 0
	wake "$s" 2
	jq -e -s 'map(.status) == ["error", "idle"]' wakes.jsonl
	[ ! -s rcv/log ]
	# a script's own records open it: events, no notice
	for i in 1 2 3; do
		run -0 at_epoch $((T0 + 600)) heart-breaker record --soul "$s" llm-fail
	done
	assert_output --partial '"event":"open"'
	# the probe fails: this wake is the first to tell it
	llm_script '{"replies":[{"status":500,"text":"down"}]}'
	: > wakes.jsonl
	wake "$s" 26
	jq -e -s 'map(.status) == ["error", "breaker_open"] and
	    .[1].kind == "failures"' wakes.jsonl
	[ "$(wc -l < rcv/log)" -eq 1 ]
	[[ $(text 1) == "heart: scout's model is failing (4 failures in a row): "* ]]
	# a reset closes it: no notice; opened again by records, a wake's
	# good probe closes it and tells nothing either
	run -0 at_epoch $((T0 + 60 * 60)) heart-breaker reset --soul "$s"
	for i in 1 2 3; do
		run -0 at_epoch $((T0 + 60 * 61)) heart-breaker record --soul "$s" llm-fail
	done
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	: > wakes.jsonl
	wake "$s" 80
	jq -e -s 'map(.status) == ["idle"]' wakes.jsonl
	[ "$(wc -l < rcv/log)" -eq 1 ]
}
