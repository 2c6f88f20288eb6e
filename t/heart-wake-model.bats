#!/usr/bin/env bats
# heart-wake: the model call, idle detection, failures and secrets.

load helpers

setup() {
	heart_setup
	llm_start
	unset OPENAI_API_KEY
	S=$BATS_TEST_TMPDIR/scout.yaml
	printf 'name: scout\nsystem: You are scout.\nheart: { schedule: { daily_cap: 1000 } }\nllm: { timeout: 2s }\n' > "$S"
}

teardown() {
	llm_stop
}

reply() {	# reply TEXT: the next answer; run a forced wake
	jq -nc --arg t "$1" '{replies: [{text: $t}]}' > "$LLM_DIR/script.json"
	run heart-wake --soul "$S" --force
}

@test "idle token variants are idle" {
	long=$(printf 'x%.0s' $(seq 250))
	while IFS= read -r v; do
		v=${v//LONG250/$long}
		reply "$(printf '%b' "$v")"
		assert_success
		echo "$output" | jq -e '.status == "idle"' >/dev/null ||
			{ echo "not idle: $v"; return 1; }
	done <<'EOF'
[IDLE]
  [IDLE]  \n
**[IDLE]**
`[IDLE]`
```\n[IDLE]\n```
[IDLE].
"[IDLE]"
> [IDLE]
[idle]
IDLE
HEARTBEAT_OK
**HEARTBEAT_OK**.
heartbeat_ok
[IDLE] Nothing new since the last check.
Nothing new since the last check. [IDLE]
All quiet on the travel front today.\n\n**[IDLE]**
[IDLE] LONG250
EOF
}

@test "graduated idle levels are idle with idle_level set" {
	for l in LOW MEDIUM HIGH; do
		reply "[IDLE:$l]"
		[ "$(echo "$output" | jq -r '.status + " " + .idle_level')" = "idle $l" ]
	done
	reply "**[IDLE:HIGH]** watching the storm closely."
	[ "$(echo "$output" | jq -r .idle_level)" = HIGH ]
	reply "[IDLE]"
	[ "$(echo "$output" | jq -r .idle_level)" = null ]
}

@test "a real answer that mentions the token, or a long remark, is not idle" {
	long=$(printf 'word %.0s' $(seq 80))
	for v in "Flight LH123 is cancelled; rebook now." \
		"I would normally say [IDLE] but the strike starts tomorrow at 6." \
		"[IDLE] $long" \
		"$long [IDLE]" \
		"IDLENESS is not an option: the storm is here." \
		"[IDLE:SOON] maybe"; do
		reply "$v"
		[ "$(echo "$output" | jq -r .status)" = ok ] || { echo "idle: $v"; return 1; }
		[ "$(echo "$output" | jq -r .response)" = "$v" ]
	done
}

@test "ghost.token and ghost.also from the soul replace the defaults" {
	printf 'name: scout\nheart: { ghost: { token: "[NOP]", also: [QUIET], ack_max_chars: 5 } }\n' > "$S"
	reply "[NOP]"
	[ "$(echo "$output" | jq -r .status)" = idle ]
	reply "quiet"
	[ "$(echo "$output" | jq -r .status)" = idle ]
	reply "[NOP] all good now"
	[ "$(echo "$output" | jq -r .status)" = ok ]
	reply "[IDLE]"
	[ "$(echo "$output" | jq -r .status)" = ok ]
}

@test "the request: system prompt, the last history.keep messages, the prompt with a meta line of local time and zone" {
	printf 'name: scout\nsystem: You are scout.\nheart:\n  timezone: Asia/Shanghai\n  history: { keep: 3 }\n  schedule: { prompt: "Look around." }\n' > "$S"
	mkdir -p "$HEART_STATE_DIR/agents/scout"
	for i in $(seq 12); do
		jq -nc --arg i "$i" '{role: (if ($i|tonumber) % 2 == 1 then "user" else "assistant" end), content: ("m" + $i), wake_id: ("w" + $i), chamber: "schedule", at: "2026-11-21T00:00:00Z"}'
	done > "$HEART_STATE_DIR/agents/scout/history.jsonl"
	printf '{"role":"user","content":"torn' >> "$HEART_STATE_DIR/agents/scout/history.jsonl"
	run at "2026-11-22 01:30:00 UTC" heart-wake --soul "$S" --force
	assert_success
	body=$(llm_last)
	echo "$body" | jq -e '.model == "double" and (.messages | length) == 5'
	echo "$body" | jq -e '.messages[0] == {"role":"system","content":"You are scout."}'
	echo "$body" | jq -e '[.messages[1:4][] | .content] == ["m10","m11","m12"]'
	echo "$body" | jq -e '.messages[1] | has("wake_id") | not'
	echo "$body" | jq -e '.messages[4].role == "user" and (.messages[4].content | startswith("Look around.\n\n[heart] local time: 2026-11-22T09:30:00+08:00 (Asia/Shanghai); chamber: schedule; last schedule wake: never; wakes left today: 47 of 48"))'
	echo "$output" | jq -e '.messages[0].content | test("Asia/Shanghai")'
}

@test "each failure (429, 500, timeout, malformed JSON, endless body) is an error, exit 75, a breaker failure, a readable message" {
	export OPENAI_API_KEY=sk-test-SECRET-1234
	for r in '{"status":429,"text":"rate limited"}' '{"status":500}' \
		'{"delay":4}' '{"raw":"{\"choices\": [ oops"}' '{"endless":true}' \
		'{"raw":"{\"choices\":[]}"}'; do
		heart-breaker reset scout
		llm_script "{\"replies\":[$r]}"
		run heart-wake --soul "$S" --force
		assert_failure 75
		echo "$output" | tail -1 | jq -e '.status == "error" and (.error | length > 5)'
		refute_output --partial sk-test-SECRET
		[ "$(jq .llm_fails "$HEART_STATE_DIR/agents/scout/breaker.json")" -eq 1 ]
	done
	llm_script '{"replies":[{"status":429,"text":"rate limited"}]}'
	run heart-wake --soul "$S" --force
	assert_output --partial 'model endpoint answered HTTP 429: rate limited'
	llm_script '{"replies":[{"delay":4}]}'
	run heart-wake --soul "$S" --force
	assert_output --partial 'no complete reply within 2s'
	heart-breaker reset scout
	# the 4 MiB limit comes before the timeout, on a busy machine too
	sed -i "s/timeout: 2s/timeout: $((5 * PATIENCE))s/" "$S"
	llm_script '{"replies":[{"endless":true}]}'
	run heart-wake --soul "$S" --force
	assert_output --partial 'reply larger than'
}

@test "three failures in a row open the breaker and the fourth run sends nothing" {
	llm_script '{"replies":[{"status":500}]}'
	for i in 1 2 3; do
		run heart-wake --soul "$S" --force
		assert_failure 75
	done
	echo "$output" | tail -1 | jq -e '.breaker == "open" and (.breaker_events[0].event == "open") and .breaker_events[0].trigger == "llm"'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(echo "$output" | jq -r .status)" = open ]
	assert_output --partial 'next probe at'
	run llm_count
	assert_output 3
}

@test "the API key is sent, and never appears in output, state, or argv" {
	export OPENAI_API_KEY=sk-test-SECRET-5678
	llm_script '{"replies":[{"text":"news","delay":1}]}'
	heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	wait_until 10 eval '[ "$(llm_count)" -ge 1 ]'	# in the model call
	run grep -c SECRET "/proc/$pid/cmdline"
	assert_output 0
	wait "$pid"
	grep -q 'Bearer sk-test-SECRET-5678' "$LLM_DIR/requests.jsonl"
	run grep -rl SECRET "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err" "$HEART_STATE_DIR"
	assert_output ""
	run heart-wake --soul "$S" --force --dry-run
	refute_output --partial SECRET
	assert_output --partial '"Authorization: Bearer [redacted]"'
}

@test "--dry-run prints the exact request and spends nothing" {
	run heart-wake --soul "$S" --dry-run
	assert_success
	echo "$output" | jq -e '.dry_run == true and .request.method == "POST" and (.request.url | endswith("/v1/chat/completions")) and .request.body.model == "double" and .request.body.messages[0].content == "You are scout."'
	run llm_count
	assert_output 0
	[ ! -e "$HEART_STATE_DIR/agents/scout/cap.json" ]
}

@test "--explain says why each chamber would not fire, and changes nothing" {
	heart-wake --soul "$S" --force >/dev/null
	snap=$(cat "$HEART_STATE_DIR"/agents/scout/*.json | md5sum)
	run heart-wake --explain --soul "$S"
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	echo "${lines[0]}" | jq -e '.chamber == "schedule" and .would == "not_due" and (.reason | test("last wake")) and (.next | length > 0)'
	echo "${lines[1]}" | jq -e '.chamber == "idle" and .would == "not_idle"'
	[ "$(cat "$HEART_STATE_DIR"/agents/scout/*.json | md5sum)" = "$snap" ]
	run script -qec "heart-wake --explain --soul $S" /dev/null
	assert_line --index 0 --regexp '^scout schedule: not_due: schedule: not due: last wake'
}

@test "a bad soul is refused with exit 78 and the good souls still wake" {
	printf 'heart: { schedule: { interval: soon } }\n' > "$BATS_TEST_TMPDIR/bad.yaml"
	run heart-wake --soul "$BATS_TEST_TMPDIR/bad.yaml" --soul "$S" --force
	assert_failure 78
	assert_output --partial 'bad.yaml:1:32: heart.schedule.interval: bad duration'
	assert_output --partial '"agent":"scout"'
	unset HEART_LLM_MODEL
	run heart-wake --soul "$S" --force
	assert_failure 78
	assert_output --partial 'no model: set llm.model'
	run llm_count
	assert_output 1
}

@test "bad usage exits 64" {
	run heart-wake
	assert_failure 64
	run heart-wake --soul "$S" --chamber nap
	assert_failure 64
	run heart-wake --touch ../x
	assert_failure 64
}
