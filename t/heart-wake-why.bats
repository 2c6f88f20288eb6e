#!/usr/bin/env bats
# heart-wake --why: the agent's journal (heart-wake(1), THE JOURNAL):
# every admitted wake and every skip for a reason kept, one entry a
# wake, bounded; a wake only not due writes nothing.

load helpers
bats_require_minimum_version 1.5.0

T0=$(date -u -d '2026-11-22 09:00:00' +%s)

setup() {
	model_setup
	S=$(soul_file scout.yaml 'heart: { schedule: { interval: 1h, daily_cap: 1 }, idle: { daily_cap: 0 } }
llm: { timeout: 10s }')
}

teardown() {
	model_teardown
}

# statuses AGENT [ARGS]: the statuses of its journal, one a line
statuses() {
	heart-wake --why "$@" --json | jq -r .status
}

# journal_state AGENT: the journal as kept, to compare
journal_state() {
	if redis_store; then
		rcli LRANGE "heart:{$1}:journal.jsonl" 0 -1
	else
		cat "$HEART_STATE_DIR/agents/$1/journal.jsonl"
	fi
}

@test "--why: an admitted wake, capped, paused and busy each leave an entry, in order; a not_due wake leaves none" {
	run -0 at_epoch "$T0" heart-wake --soul "$S"
	[ "$(output_field status)" = not_due ]
	run -0 heart-wake --why scout --json
	assert_output ''
	run -0 at_epoch "$T0" heart-wake --soul "$S" --force
	[ "$(output_field status)" = idle ]
	id=$(output_field wake_id)
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$S" --force
	[ "$(output_field status)" = capped ]
	run -0 heart-cap pause scout
	run -0 at_epoch $((T0 + 120)) heart-wake --soul "$S" --force
	[ "$(output_field status)" = paused ]
	run -0 heart-cap resume scout
	hold_lock "$HEART_STATE_DIR/agents/scout/wake.lock"
	run -0 at_epoch $((T0 + 180)) heart-wake --soul "$S" --force
	[ "$(output_field status)" = busy ]
	release_lock
	run -0 statuses scout
	assert_output "$(printf 'idle\ncapped\npaused\nbusy')"
	run -0 heart-wake --why scout --json
	echo "${lines[0]}" | jq -e --arg id "$id" '.agent == "scout" and .at == "2026-11-22T09:00:00Z" and .chamber == "schedule" and .wake_id == $id'
	echo "${lines[1]}" | jq -e '.at == "2026-11-22T09:01:00Z" and (.reason | startswith("schedule: daily cap reached: 1 of 1 today"))'
	echo "${lines[2]}" | jq -e '.reason | startswith("paused by heart-cap pause since")'
	echo "${lines[3]}" | jq -e '.reason | startswith("a wake of this agent is running")'
	# for a person, on a terminal: one line an entry
	run -0 script -qec "heart-wake --why scout" /dev/null
	[ "$(printf '%s\n' "$output" | tr -d '\r' | grep -c .)" -eq 4 ]
	assert_line --index 1 --regexp '^2026-11-22T09:01:00Z schedule capped: schedule: daily cap reached: 1 of 1 today; .* \[20261122T090100Z-[0-9a-f]{8}\].?$'
	# a wake not due changes nothing kept
	before=$(journal_state scout)
	run -0 at_epoch $((T0 + 240)) heart-wake --soul "$S"
	[ "$(output_field status)" = not_due ]
	[ "$(journal_state scout)" = "$before" ]
	redis_store || [ ! -e "$HEART_STATE_DIR/agents/scout/.journal.jsonl.tmp" ]
}

@test "--why: quiet, gated and dormant skips have their reason" {
	q=$(soul_file quiet.yaml 'name: quiet
heart: { schedule: { interval: 10m, active_hours: "22:00-06:00" }, idle: { daily_cap: 0 } }')
	run -0 at_epoch "$T0" heart-wake --soul "$q" --chamber schedule
	[ "$(output_field status)" = not_due ]
	run -0 at_epoch $((T0 + 3600)) heart-wake --soul "$q" --chamber schedule
	[ "$(output_field status)" = quiet ]
	run -0 heart-wake --why quiet --json
	echo "$output" | jq -e '.status == "quiet" and (.reason | test("outside active hours 22:00-06:00"))'
	printf '#!/bin/sh\necho no new mail\nexit 1\n' > "$BATS_TEST_TMPDIR/gate.sh"
	chmod +x "$BATS_TEST_TMPDIR/gate.sh"
	g=$(soul_file gated.yaml 'name: gated
heart: { schedule: { gate: [./gate.sh] }, idle: { daily_cap: 0 } }')
	run -0 at_epoch "$T0" heart-wake --soul "$g" --force
	run -0 heart-wake --why gated --json
	echo "$output" | jq -e '.status == "gated" and .reason == "schedule: gated: no new mail"'
	d=$(soul_file dormant.yaml 'name: dormant
heart: { schedule: { daily_cap: 0 }, idle: { after: 2h } }')
	run -0 at_epoch "$T0" heart-wake --soul "$d" --chamber idle
	[ "$(output_field status)" = not_idle ]
	run -0 at_epoch $((T0 + 20 * 86400)) heart-wake --soul "$d" --chamber idle
	# the wake's line, then its notice, which the journal does not keep
	run -0 jq -r .status <<< "$output"
	assert_output "$(printf 'dormant\ndormant_notice')"
	run -0 statuses dormant
	assert_output dormant
	run -0 llm_count
	assert_output 0
}

@test "--why: the breaker's failures, its open skips and an account held are kept with their reason" {
	b=$(soul_file brk.yaml 'name: brk
heart: { schedule: { interval: 1m }, idle: { daily_cap: 0 } }
llm: { timeout: 10s }')
	llm_script '{"replies":[{"status":500}]}'
	for i in 1 2 3; do
		run -75 at_epoch $((T0 + i)) heart-wake --soul "$b" --force
	done
	run -0 at_epoch $((T0 + 10)) heart-wake --soul "$b" --force
	[ "$(echo "$output" | jq -r .status)" = open ]
	run -0 statuses brk
	assert_output "$(printf 'error\nerror\nerror\nopen')"
	run -0 heart-wake --why brk --json
	echo "${lines[0]}" | jq -e '.reason | test("HTTP 500")'
	echo "${lines[3]}" | jq -e '.reason | test("next probe at")'
	export OPENAI_API_KEY=sk-test-WHY-0123456789abcdef
	h=$(soul_file held.yaml 'name: held
heart: { schedule: { interval: 1m }, idle: { daily_cap: 0 } }
llm: { timeout: 10s }')
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	run -75 at_epoch "$T0" heart-wake --soul "$h" --force
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$h" --force
	run -0 heart-wake --why held --json
	echo "${lines[1]}" | jq -e '.status == "held" and (.reason | test("out of credit"))'
	# the key is never kept
	refute_output --partial 0123456789abcdef
}

@test "--why: a wake throttled by its account's rate limit is kept with the account and the reset" {
	export OPENAI_API_KEY=sk-test-RATE-0123456789abcdef
	a=$(soul_file ra.yaml 'name: ra
heart: { schedule: { interval: 1m }, idle: { daily_cap: 0 } }')
	b=$(soul_file rb.yaml 'name: rb
heart: { schedule: { interval: 1m }, idle: { daily_cap: 0 } }')
	llm_script '{"replies":[{"status":429,"text":"Rate limit reached","headers":{"x-ratelimit-remaining-requests":"0","x-ratelimit-reset-requests":"6m0s"}}]}'
	run -75 at_epoch "$T0" heart-wake --soul "$a" --force
	run -0 at_epoch $((T0 + 30)) heart-wake --soul "$b" --force
	[ "$(output_field status)" = throttled ]
	run -0 heart-wake --why rb --json
	[ "${#lines[@]}" -eq 1 ]
	echo "${lines[0]}" | jq -e '.status == "throttled" and (.reason |
	    test("is at its rate limit \\(HTTP 429\\) .* until its reset at"))'
	refute_output --partial 0123456789abcdef
	run -0 llm_count
	assert_output 1
}

@test "--why --since: a time, or a duration ago" {
	for i in 0 1 2; do
		run -0 at_epoch $((T0 + i * 3600)) heart-wake --soul "$S" --force
	done
	run -0 heart-wake --why scout --json --since 2026-11-22T10:00:00Z
	[ "${#lines[@]}" -eq 2 ]
	echo "${lines[0]}" | jq -e '.at == "2026-11-22T10:00:00Z"'
	run -0 at_epoch $((T0 + 2 * 3600 + 1800)) heart-wake --why scout --json --since 1h
	[ "${#lines[@]}" -eq 1 ]
	echo "${lines[0]}" | jq -e '.at == "2026-11-22T11:00:00Z"'
	run -64 heart-wake --why scout --since yesterday
	assert_output --partial '--since: yesterday: neither a time'
	run -64 heart-wake --soul "$S" --since 1h
	assert_output --partial '--since and --json go with --why only'
}

@test "--why: a misspelt agent is no such agent, exit 64" {
	run -0 at_epoch "$T0" heart-wake --soul "$S" --force
	run -64 heart-wake --why scoot
	assert_output --partial 'scoot: no such agent'
}

@test "a journal that is a FIFO is refused, named, by the wake (a warning) and by --why (exit 74): neither waits on it" {
	file_only
	run -0 at_epoch "$T0" heart-wake --soul "$S" --force
	f=$HEART_STATE_DIR/agents/scout/journal.jsonl
	rm "$f" && mkfifo "$f"
	run -0 at_epoch $((T0 + 1)) timeout $((10 * PATIENCE)) heart-wake --soul "$S" --force
	assert_output --partial "warning: $f: not a regular file; remove it by hand"
	run -74 timeout $((10 * PATIENCE)) heart-wake --why scout
	assert_output "heart-wake: $f: not a regular file; remove it by hand"
}

@test "the journal stays within its size: the oldest entries go first" {
	run -0 at_epoch "$T0" heart-wake --soul "$S"
	run -0 at_epoch "$T0" heart-cap pause scout
	line='{"at":"2026-11-21T00:00:00Z","chamber":"schedule","status":"paused","reason":"'$(printf '%0200d' 0)'","wake_id":"old"}'
	if redis_store; then
		args=()
		for ((i = 0; i < 600; i++)); do args+=("$line"); done
		rcli RPUSH 'heart:{scout}:journal.jsonl' "${args[@]}" > /dev/null
	else
		mkdir -p "$HEART_STATE_DIR/agents/scout"
		for ((i = 0; i < 560; i++)); do echo "$line"; done \
		    > "$HEART_STATE_DIR/agents/scout/journal.jsonl"
		# a line torn by a kill: left out, and ended by the next entry
		printf '{"at":"2026-11-21T00:00:00Z","chamber":"sch' \
		    >> "$HEART_STATE_DIR/agents/scout/journal.jsonl"
	fi
	for i in 1 2 3; do
		run -0 at_epoch $((T0 + i)) heart-wake --soul "$S" --force
		[ "$(output_field status)" = paused ]
	done
	run -0 heart-wake --why scout --json
	echo "${lines[-1]}" | jq -e '.at == "2026-11-22T09:00:03Z" and .wake_id != "old"'
	echo "${lines[-3]}" | jq -e '.at == "2026-11-22T09:00:01Z"'
	if redis_store; then
		[ "$(rcli LLEN 'heart:{scout}:journal.jsonl')" -eq 500 ]
		[ "${#lines[@]}" -eq 500 ]
	else
		f=$HEART_STATE_DIR/agents/scout/journal.jsonl
		size=$(stat -c %s "$f")
		[ "$size" -le $((128 * 1024)) ]
		[ "$size" -ge $((60 * 1024)) ]
		[ "${#lines[@]}" -lt 560 ]
		[ "$(wc -l < "$f")" -eq "${#lines[@]}" ]
	fi
}
