#!/usr/bin/env bats
# heart-wake: the model call, idle detection, failures and secrets.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	model_setup
	S=$BATS_TEST_TMPDIR/scout.yaml
	printf 'name: scout\nsystem: You are scout.\nheart: { schedule: { daily_cap: 1000 } }\nllm: { timeout: 2s }\n' > "$S"
}

teardown() {
	model_teardown
}

# replies TEXT...: the double's answers to the next wakes, in order:
# a test's whole list in one script (reply i to request i), one jq for
# it, not one a wake
replies() {
	jq -nc '{replies: [$ARGS.positional[] | {text: .}]}' --args "$@" \
	    > "$LLM_DIR/script.json"
	: > "$LLM_DIR/requests.jsonl"	# from the first of them
	rm -f "$BATS_TEST_TMPDIR/results"
}

# wake_noted: a forced wake (run); its output is added to the results
wake_noted() {
	run -0 heart-wake --soul "$S" --force
	printf '%s\n' "$output" >> "$BATS_TEST_TMPDIR/results"
}

# wake_each [-s]: the texts $vs as the model's replies, and a forced
# wake_noted for each (-s: each wake must succeed)
wake_each() {
	local v

	replies "${vs[@]}"
	for v in "${vs[@]}"; do
		wake_noted
		[ "${1:-}" != -s ] || assert_success || return
	done
}

# results_are WANT...: the results, in order, are results of those
# statuses (one jq reads them all); each that is not is named, with
# the reply it had ($vs, the texts given to replies)
results_are() {
	local got i=0 bad=0 want
	mapfile -t got < <(jq -r .status "$BATS_TEST_TMPDIR/results")
	[ "${#got[@]}" -eq $# ] || { echo "$# results wanted, ${#got[@]} read"; return 1; }
	for want; do
		if [ "${got[i]}" != "$want" ]; then
			echo "not $want but ${got[i]}: ${vs[i]}"
			bad=1
		fi
		i=$((i + 1))
	done
	return $bad
}

# responses: the results' responses are the texts of $vs, in order
responses() {
	diff <(jq -nc '$ARGS.positional[]' --args "${vs[@]}") \
	    <(jq -c .response "$BATS_TEST_TMPDIR/results")
}

@test "idle token variants are idle" {
	long=$(printf 'all quiet %.0s' $(seq 25))
	vs=()
	while IFS= read -r v; do
		vs+=("$(printf '%b' "${v//LONG250/$long}")")
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
	wake_each -s
	results_are $(printf 'idle %.0s' "${vs[@]}")
}

@test "graduated idle levels are idle with idle_level set" {
	replies "[IDLE:LOW]" "[IDLE:MEDIUM]" "[IDLE:HIGH]" \
	    "**[IDLE:HIGH]** nothing yet." "[IDLE]"
	for i in 1 2 3 4 5; do
		wake_noted
	done
	run jq -r '"\(.status) \(.idle_level)"' "$BATS_TEST_TMPDIR/results"
	assert_output "idle LOW
idle MEDIUM
idle HIGH
idle HIGH
idle null"
}

@test "a real answer that mentions the token, or a long remark, is not idle" {
	long=$(printf 'all quiet %.0s' $(seq 40))
	vs=("Flight LH123 is cancelled; rebook now."
		"I would normally say [IDLE] but the strike starts tomorrow at 6."
		"[IDLE] $long"
		"$long [IDLE]"
		"IDLENESS is not an option: the storm is here."
		"[IDLE:SOON] maybe")
	wake_each
	results_are ok ok ok ok ok ok
	responses
}

@test "a reply that carries an alert is never idle, whatever else it says" {
	vs=()
	while IFS= read -r v; do
		vs+=("$(printf '%b' "$v")")
	done <<'EOF'
ALERT: disk at 99% on web1, writes failing. Everything else: [IDLE]
[IDLE] ALERT: disk at 99% on web1
[IDLE]: ALERT: disk at 99% on web1
**ALERT**: disk at 99% on web1 [IDLE]
Alert: disk at 99% on web1. [IDLE]
[IDLE]\n\nALERT: disk at 99% on web1
All quiet.\n- ALERT: disk at 99% on web1\n[IDLE]
> ALERT: disk at 99% on web1\n\nHEARTBEAT_OK
1. ALERT: web1 down\n[IDLE:LOW]
HEARTBEAT_OK\n\n## ALERT: web1 down
EOF
	wake_each -s
	results_are $(printf 'ok %.0s' "${vs[@]}")
	responses
}

@test "the ghost rule: the token with one short remark is idle; a list, a code block, more lines are real" {
	vs=() wants=()
	while IFS='|' read -r want v; do
		wants+=("$want")
		vs+=("$(printf '%b' "$v")")
	done <<'EOF'
idle|Nothing new. [IDLE]
idle|[IDLE] all quiet
idle|HEARTBEAT_OK
idle|Nothing new since the last check.\n[IDLE]
idle|[IDLE]\n\nNothing new since the last check.
idle|- [IDLE]
idle|```\n[IDLE] nothing to report\n```
ok|Checked three hosts.\n- web1: disk at 99%\n[IDLE]
ok|[IDLE]\n- web1: disk at 99%
ok|[IDLE]\n1. web1: disk at 99%
ok|[IDLE]\n```\ndf: /var 99% full\n```
ok|```\ndf: /var 99% full\n```\n[IDLE]
ok|web1: disk at 99%\nweb2: down\n[IDLE]
ok|Checked web1.\n\nChecked web2.\n\n[IDLE]
ok|[IDLE]\n\nweb1: disk at 99%\n\nweb2: down
ok|Nothing new. [IDLE]\nweb2 answers slowly.
ok|Note: no ALERT: today. [IDLE]
EOF
	wake_each -s
	results_are "${wants[@]}"
}

@test "a remark beside the token is kept as a finding unless it only acknowledges" {
	vs=() wants=()
	while IFS='|' read -r want v; do
		wants+=("$want")
		vs+=("$(printf '%b' "$v")")
	done <<'EOF'
ok|[IDLE] The server room is flooding, evacuate now.
ok|The server room is flooding. [IDLE]
ok|[IDLE] web1 is down
ok|No trains are running today. [IDLE]
ok|Nothing new, but the disk is at 99%. [IDLE]
ok|Nothing new except the disk is full [IDLE]
ok|All quiet. The strike starts at 6. [IDLE]
ok|[IDLE] nothing new since 09:00
ok|Idle servers are burning money.
ok|**[IDLE:HIGH]** watching the storm closely.
idle|Nothing new. [IDLE]
idle|[IDLE] No new mail since the last check.
idle|[IDLE] All clear on the travel front today.
idle|[IDLE] nothing to report
idle|Everything looks good.\n\n[IDLE]
idle|[IDLE:LOW] still quiet
EOF
	wake_each -s
	results_are "${wants[@]}"
}

@test "an alert is recognised as models write it: any case, emphasis, an emoji, a dash, URGENT and CRITICAL" {
	vs=()
	while IFS= read -r v; do
		vs+=("$(printf '%b' "$v")")
	done <<'EOF'
⚠️ ALERT: disk full\n[IDLE]
[IDLE] ⚠️ ALERT: disk full
🚨 alert - disk full [IDLE]
**Alert** : disk full [IDLE]
<b>URGENT</b>: call the landlord [IDLE]
_urgent_ — call the landlord [IDLE]
CRITICAL – web1 down\n[IDLE]
[IDLE]\n12:00 [web1] critical: db down
[CRITICAL] web1 down [IDLE]
EOF
	wake_each -s
	results_are $(printf 'ok %.0s' "${vs[@]}")
	responses
	# heart-ghost --alert-only knows them by the same rule
	run heart-ghost --text --alert-only "$BATS_TEST_TMPDIR/results"
	assert_success
	for v in "${vs[@]}"; do
		assert_output --partial "$v"
	done
}

@test "a reply whose bytes are not UTF-8 is kept, decoded lossily, never an LLM failure" {
	# Latin-1 "café", and a character cut in the middle as a server
	# that stops at max_tokens sends it
	jq -nc '{replies: [{latin1: true, raw: ({choices: [{message: {role: "assistant", content: "ALERT: the caf\u00e9 is closed \u00e2\u0082"}}], usage: {prompt_tokens: 9, completion_tokens: 9}} | tojson)}]}' \
	    > "$LLM_DIR/script.json"
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.status == "ok" and .response == "ALERT: the caf\ufffd is closed \ufffd\ufffd"'
	echo "$output" | jq -e '.usage.completion_tokens == 9 and .error == null'
	run jq -c '[.llm_fails, .state]' "$(bfile scout)"
	assert_output '[0,"closed"]'
	heart-wake --soul "$S" --force | heart-ghost --text > "$BATS_TEST_TMPDIR/delivered"
	grep -q 'ALERT: the caf' "$BATS_TEST_TMPDIR/delivered"
}

@test "a reply holding a NUL character is kept, the NUL made U+FFFD, never an LLM failure; heart-ghost delivers it" {
	llm_script '{"replies":[{"text":"ALERT: the gate \u0000 changed"}]}'
	run -0 --separate-stderr heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "ok" and .response == "ALERT: the gate \ufffd changed"'
	run -0 heart-ghost --text < <(echo "$output")
	assert_output $'ALERT: the gate \xef\xbf\xbd changed'
}

@test "a reply cut at max_tokens or by a filter is never a ghost: what was cut off may be the finding; a warning says so" {
	local cut='[IDLE] Nothing new in the feeds'
	# OpenAI's finish_reason length; the same reply finished is a ghost
	jq -nc --arg t "$cut" '{replies: ([("length", "stop") | {raw: ({choices: [{message: {role: "assistant", content: $t}, finish_reason: .}], usage: {prompt_tokens: 9, completion_tokens: 1024}} | tojson)}])}' > "$LLM_DIR/script.json"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e --arg t "$cut" '.status == "ok" and .response == $t'
	[ "$stderr" = "heart-wake: scout: warning: the reply stopped at max_tokens (1024), unfinished: never taken for a ghost (heart-soul(5), GHOSTS)" ]
	run -0 --separate-stderr heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle"'
	[ -z "$stderr" ]
	# Anthropic's stop_reason max_tokens
	jq -nc --arg t "$cut" '{replies: [{raw: ({type: "message", role: "assistant", content: [{type: "text", text: $t}], stop_reason: "max_tokens", usage: {input_tokens: 9, output_tokens: 1024}} | tojson)}]}' > "$LLM_DIR/script.json"
	HEART_LLM_PROVIDER=anthropic run -0 --separate-stderr heart-wake --soul "$S" --force
	echo "$output" | jq -e --arg t "$cut" '.status == "ok" and .response == $t'
	# stopped by the provider's filter: OpenAI's content_filter
	jq -nc --arg t "$cut" '{replies: [{raw: ({choices: [{message: {role: "assistant", content: $t}, finish_reason: "content_filter"}]} | tojson)}]}' > "$LLM_DIR/script.json"
	run -0 --separate-stderr heart-wake --soul "$S" --force
	echo "$output" | jq -e --arg t "$cut" '.status == "ok" and .response == $t'
	[ "$stderr" = "heart-wake: scout: warning: the reply stopped at the provider's filter, unfinished: never taken for a ghost (heart-soul(5), GHOSTS)" ]
	# ghost.mode tool: a skip whose text was cut is a finding kept
	printf 'name: scout\nheart: { schedule: { daily_cap: 1000 }, ghost: { mode: tool } }\n' > "$S"
	jq -nc '{replies: [{raw: ({choices: [{message: {role: "assistant", content: "Nothing new", tool_calls: [{id: "c1", type: "function", function: {name: "heartbeat", arguments: "{\"action\":\"skip\"}"}}]}, finish_reason: "length"}]} | tojson)}]}' > "$LLM_DIR/script.json"
	run -0 --separate-stderr heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "ok" and .response == "Nothing new"'
}

@test "ghost.token and ghost.also from the soul replace the defaults" {
	printf 'name: scout\nheart: { ghost: { token: "[NOP]", also: [QUIET], ack_max_chars: 5 } }\n' > "$S"
	vs=("[NOP]" quiet "[NOP] all good now" "[IDLE]")
	wake_each
	results_are idle idle ok ok
}

@test "ghost.ack_max_chars counts characters, not bytes: a remark with a typographic apostrophe of that many characters is still an acknowledgement" {
	printf 'name: scout\nheart: { ghost: { ack_max_chars: 22 } }\n' > "$S"
	# 22 characters, 24 bytes (’ is three); two characters more are past
	vs=("[IDLE] Nothing new it’s quiet" "[IDLE] Nothing new it’s quieter")
	wake_each
	results_are idle ok
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
		heart-breaker reset --soul "$S"
		llm_script "{\"replies\":[$r]}"
		run heart-wake --soul "$S" --force
		assert_failure 75
		echo "$output" | tail -1 | jq -e '.status == "error" and (.error | length > 5)'
		refute_output --partial sk-test-SECRET
		[ "$(jq .llm_fails "$HEART_STATE_DIR/agents/scout/breaker.json")" -eq 1 ]
	done
	llm_script '{"replies":[{"status":429,"text":"rate limited"}]}'
	run -75 heart-wake --soul "$S" --force
	assert_output --partial 'model endpoint answered HTTP 429: rate limited'
	llm_script '{"replies":[{"delay":4}]}'
	run -75 heart-wake --soul "$S" --force
	assert_output --partial 'no complete reply within 2s'
	heart-breaker reset --soul "$S"
	# the 4 MiB limit comes before the timeout, on a busy machine too
	sed -i "s/timeout: 2s/timeout: $((5 * PATIENCE))s/" "$S"
	llm_script '{"replies":[{"endless":true}]}'
	run -75 heart-wake --soul "$S" --force
	assert_output --partial 'reply larger than'
}

@test "an empty reply is an LLM failure, its tokens counted, never an ok without an answer that heart-ghost cannot keep" {
	local r
	for r in '{"text":""}' '{"text":"  \n "}'; do
		heart-breaker reset --soul "$S"
		llm_script "{\"replies\":[$r]}"
		run --separate-stderr heart-wake --soul "$S" --force
		assert_failure 75
		echo "$output" | jq -e '.status == "error" and .error == "empty reply: no text and no tool call" and .usage.prompt_tokens > 0'
		[ "$(jq .llm_fails "$(bfile scout)")" -eq 1 ]
		run heart-ghost < <(echo "$output")
		assert_failure 75
	done
	# nothing waits in the outbox: the next answer goes out
	llm_script '{"replies":[{"text":"ALERT: back."}]}'
	run heart-wake --soul "$S" --force
	assert_success
	run heart-ghost --text < <(echo "$output")
	assert_success
	assert_output 'ALERT: back.'
	heart-cap status scout --json | jq -e '.tokens.prompt > 0'
}

@test "three failures in a row open the breaker and the fourth run sends nothing" {
	llm_script '{"replies":[{"status":500}]}'
	for i in 1 2 3; do
		run heart-wake --soul "$S" --force
		assert_failure 75
	done
	# the wake's line, then its notice
	[ "$(echo "$output" | grep -c '^{')" -eq 2 ]
	echo "$output" | tail -n 2 | head -n 1 | jq -e '.breaker == "open" and (.breaker_events[0].event == "open") and .breaker_events[0].trigger == "llm"'
	echo "$output" | tail -n 1 | jq -e '.status == "breaker_open"'
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
	run -0 heart-wake --soul "$S" --force --dry-run
	refute_output --partial SECRET
	assert_output --partial '"Authorization: Bearer [redacted]"'
}

# no_key FILE...: none of the key's forms is in the files (the key, a
# run of 12 of its bytes, its URL-encoded form)
no_key() {
	! grep -rlF -e "$KEY" -e "${KEY:0:12}" -e "${KEY:7:12}" -e "$KEY_URL" "$@"
}

@test "a provider that echoes the key back never brings it to stderr, the result, wake.json, breaker.json, heart-breaker status or an event" {
	export OPENAI_API_KEY='sk-test-ECHO/0123456789abcdef+XYZ'
	KEY=$OPENAI_API_KEY
	KEY_URL='sk-test-ECHO%2F0123456789abcdef%2BXYZ'
	D=$BATS_TEST_TMPDIR/out
	mkdir -p "$D"
	# a 401 quoting the header, a 500 quoting the key cut short and
	# URL-encoded, a 429 in a shape of its own
	for r in '{"status":401,"text":"Incorrect API key provided: {{authorization}}."}' \
		"{\"status\":500,\"text\":\"upstream refused key=$KEY_URL (${KEY:0:20}...)\"}" \
		'{"status":429,"raw":"{\"message\":\"slow down, {{authorization}}\"}"}'; do
		heart-breaker reset --soul "$S" > /dev/null
		hold_clear
		llm_script "{\"replies\":[$r]}"
		heart-wake --soul "$S" --force > "$D/stdout" 2> "$D/stderr" || true
		grep -q 'Bearer sk-test-ECHO' "$LLM_DIR/requests.jsonl"
		heart-breaker status scout > "$D/status" 2>&1
		heart-breaker status --json scout > "$D/status.json" 2>&1
		no_key "$D" "$HEART_STATE_DIR"
		grep -q 'redacted' "$D/stderr" "$D/stdout" "$D/status"
	done
	heart-breaker reset --soul "$S" > /dev/null
	hold_clear
	llm_script '{"replies":[{"status":401,"text":"Incorrect API key provided: {{authorization}}."}]}'
	run -78 heart-wake --soul "$S" --force
	assert_output --partial 'Incorrect API key provided: Bearer [redacted].'
	# the wake's line (after heart-wake's message), then its notice
	echo "$output" | tail -n 2 | head -n 1 | jq -e '.breaker_events[0].event == "open" and (.breaker_events[0].reason | test("HTTP 401"))'
	echo "$output" | tail -n 1 | jq -e '.status == "breaker_open" and .kind == "config"'
	refute_output --partial "${KEY:7:12}"
}

@test "a tool and a command provider that print the key: the history, the result and the messages keep none of it" {
	export OPENAI_API_KEY='sk-test-TOOL-9876543210fedcba'
	KEY=$OPENAI_API_KEY
	KEY_URL=$KEY
	D=$BATS_TEST_TMPDIR/out
	mkdir -p "$D"
	printf '%s\n' "$KEY" > "$BATS_TEST_TMPDIR/key.txt"
	printf '#!/bin/sh\ncat > /dev/null\necho "the key: $(cat key.txt)"\necho "denied for $(cat key.txt)" >&2\nexit 1\n' > "$BATS_TEST_TMPDIR/leaky"
	chmod +x "$BATS_TEST_TMPDIR/leaky"
	cat >> "$S" <<-'EOF'
	tools:
	  - name: leaky
	    parameters: { type: object }
	    command: [./leaky]
	EOF
	llm_script '{"cycle":true,"replies":[{"tool_calls":[{"name":"leaky","arguments":{}}]},{"text":"Done."}]}'
	heart-wake --soul "$S" --force > "$D/result" 2> "$D/stderr" || true
	[ "$(jq -r .status "$D/result")" = ok ]
	jq -e '.messages[2].content | test("the key: \\[redacted\\]") and test("denied for \\[redacted\\]")' "$D/result"
	# the answer is kept; heart-ghost's exit is heart-wake's (a tool failed)
	[ "$(jq -r .exit "$D/result")" = 75 ]
	run heart-ghost < "$D/result"
	assert_failure 75
	echo "$output" > "$D/delivered"
	[ "$(jq -s length "$HEART_STATE_DIR/agents/scout/history.jsonl")" -eq 4 ]
	no_key "$D" "$HEART_STATE_DIR"
	# the command provider's standard error, with the key of its
	# environment in it
	printf 'name: scout\nllm: { provider: command, command: [python3, %s/llm-double.py, --command, %s], timeout: 60s }\n' "$T" "$LLM_DIR" > "$S"
	llm_script '{"replies":[{"exit":1,"stderr":"401 for key {{env:OPENAI_API_KEY}}"}]}'
	run heart-wake --soul "$S" --force
	assert_failure 75
	assert_output --partial 'llm.command: exit status 1: 401 for key [redacted]'
	echo "$output" > "$D/command"
	no_key "$D" "$HEART_STATE_DIR"
}

@test "a tool call whose arguments echo the key keeps none of it in the result, the outbox or the history" {
	export OPENAI_API_KEY='sk-test-ARGS-0123456789abcdef'
	KEY=$OPENAI_API_KEY
	KEY_URL=$KEY
	D=$BATS_TEST_TMPDIR/out
	mkdir -p "$D"
	cat >> "$S" <<-'EOF'
	tools:
	  - name: look
	    parameters: { type: object }
	    command: [cat]
	EOF
	call='{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"look","arguments":"{\"q\":\"{{authorization}}\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}'
	llm_script "$(jq -nc --arg raw "$call" '{replies: [{raw: $raw}, {text: "ALERT: done."}]}')"
	run -0 heart-wake --soul "$S" --force
	echo "$output" > "$D/result"
	[ "$(jq -r .status "$D/result")" = ok ]
	grep -q 'Bearer sk-test-ARGS' "$LLM_DIR/requests.jsonl"
	jq -e '.messages[1].tool_calls[0].function.arguments | test("redacted")' "$D/result"
	run -0 heart-ghost < "$D/result"
	no_key "$D" "$HEART_STATE_DIR"
}

@test "a command provider gets the key it may need, never the store's or the broker's password" {
	export OPENAI_API_KEY='sk-test-CMD-0123456789abcdef'
	export HEART_REDIS_PASSWORD=redis-pw-for-store HEART_MQTT_PASSWORD=mqtt-pw-for-broker
	printf 'name: scout\nllm: { provider: command, command: [python3, %s/llm-double.py, --command, %s], timeout: 60s }\n' "$T" "$LLM_DIR" > "$S"
	llm_script '{"replies":[{"exit":1,"stderr":"r=[{{env:HEART_REDIS_PASSWORD}}] m=[{{env:HEART_MQTT_PASSWORD}}] k=[{{env:OPENAI_API_KEY}}]"}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(echo "$output" | jq -r .error)" = 'llm.command: exit status 1: r=[] m=[] k=[[redacted]]' ]
}

@test "the store's and the broker's passwords are scrubbed with the file store too: a provider that quotes them leaves none in the result" {
	export OPENAI_API_KEY='sk-test-CMD-0123456789abcdef'
	export HEART_REDIS_PASSWORD=redis-pw-for-store-4711 HEART_MQTT_PASSWORD=mqtt-pw-for-broker-4711
	printf 'name: scout\nllm: { provider: command, command: [python3, %s/llm-double.py, --command, %s], timeout: 60s }\n' "$T" "$LLM_DIR" > "$S"
	llm_script '{"replies":[{"exit":1,"stderr":"r=[redis-pw-for-store-4711] m=[mqtt-pw-for-broker-4711]"}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(echo "$output" | jq -r .error)" = 'llm.command: exit status 1: r=[[redacted]] m=[[redacted]]' ]
	[[ $stderr != *4711* ]]
}

@test "heart(7) says what a command provider gets, as it gets it: the environment and the key, not the store's, the broker's or the deliveries' variables" {
	export OPENAI_API_KEY='sk-test-CMD-0123456789abcdef' FOO=bar
	export HEART_REDIS_PASSWORD=redis-pw-for-store HEART_DELIVER_NTFY_URL=https://ntfy.example/topic
	printf 'name: scout\nllm: { provider: command, command: [python3, %s/llm-double.py, --command, %s], timeout: 60s }\n' "$T" "$LLM_DIR" > "$S"
	llm_script '{"replies":[{"exit":1,"stderr":"f=[{{env:FOO}}] r=[{{env:HEART_REDIS_PASSWORD}}] d=[{{env:HEART_DELIVER_NTFY_URL}}] k=[{{env:OPENAI_API_KEY}}]"}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(echo "$output" | jq -r .error)" = 'llm.command: exit status 1: f=[bar] r=[] d=[] k=[[redacted]]' ]
	run -0 bash -c "mandoc -Tascii '$T/../man/heart.7' | col -b | tr -s ' \t\n' '   '"
	assert_output --partial "a command provider (llm.provider: command) gets the environment heart-wake runs in, the model's key included (it is the model's client and may need it), but not HEART_REDIS_PASSWORD, HEART_MQTT_PASSWORD or the HEART_DELIVER_* variables"
	refute_output --partial "gets the environment whole"
}

@test "a connection error names the URL it tried, and never the key or a password in it" {
	export OPENAI_API_KEY='sk-test-URL-abcdefghijklmnop'
	port=$(free_port)
	export HEART_LLM_URL="http://127.0.0.1:$port/v1"
	run heart-wake --soul "$S" --force
	assert_failure 75
	assert_output --partial "heart-wake: scout: http://127.0.0.1:$port/v1/chat/completions: "
	# a key in the URL itself, as some providers take it
	export HEART_LLM_URL="http://127.0.0.1:$port/v1/$OPENAI_API_KEY"
	run heart-wake --soul "$S" --force
	assert_failure 75
	assert_output --partial "http://127.0.0.1:$port/v1/[redacted]/chat/completions: "
	refute_output --partial 'abcdefghijklmnop'
	# a user and password in the URL: the password is a secret
	export HEART_LLM_URL="http://bob:pw-s3cret%2Fxyz@127.0.0.1:$port/v1"
	run heart-wake --soul "$S" --force
	assert_failure 75
	assert_output --partial "http://bob:[redacted]@127.0.0.1:$port/v1/chat/completions: "
	refute_output --partial 's3cret'
}

@test "text from outside never reaches a terminal raw: escapes in a provider's error, a command provider's stderr, a wake result read by heart-ghost are neutralised" {
	esc=$'\e]0;owned\a\e[31mRED\e[0m\xc2\x9b2J'
	jq -nc --arg t "bad $esc news" '{replies: [{status: 500, text: $t}]}' > "$LLM_DIR/script.json"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[[ "$stderr" == *'bad  ]0;owned  [31mRED [0m 2J news'* ]]
	! printf '%s' "$stderr" | grep -q $'[\e\a]' || false
	! printf '%s' "$stderr" | grep -qF $'\xc2\x9b' || false
	echo "$output" | jq -e '.error | test("[\u001b\u0007\u009b]") | not'
	! grep -q 'u001b\|u0007\|u009b' "$HEART_STATE_DIR/agents/scout/breaker.json" "$HEART_STATE_DIR/agents/scout/wake.json" || false
	printf 'name: scout\nllm: { provider: command, command: [python3, %s/llm-double.py, --command, %s], timeout: 60s }\n' "$T" "$LLM_DIR" > "$S"
	jq -nc --arg t "no $esc model" '{replies: [{exit: 2, stderr: $t}]}' > "$LLM_DIR/script.json"
	heart-breaker reset --soul "$S" > /dev/null
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[[ "$stderr" == *'llm.command: exit status 2: no  ]0;owned'* ]]
	! printf '%s' "$stderr" | grep -q $'[\e\a]' || false
	# heart-ghost names a wake id from its input safely
	jq -cn '{v: 1, agent: "scout", chamber: "schedule",
	    wake_id: "w\u001b[2J\u0007", at: "2026-11-21T12:00:00Z",
	    status: "ok", reason: null, response: "ALERT: x", error: null,
	    messages: [{role: "user", content: "p"},
	    {role: "assistant", content: "ALERT: x"}]}' > "$BATS_TEST_TMPDIR/in"
	run --separate-stderr heart-ghost --exec false < "$BATS_TEST_TMPDIR/in"
	assert_failure 65
	[[ "$stderr" == *'<stdin>:1: wake_id "w [2J " is not 1 to 64 of'* ]]
	! printf '%s' "$stderr" | grep -q $'[\e\a]' || false
}

# history N BIG: N small messages of past wakes, then an answer of BIG
# bytes, then a last small user message
history() {
	local i
	mkdir -p "$HEART_STATE_DIR/agents/scout"
	{
		for i in $(seq "$1"); do
			jq -nc --arg i "$i" '{role: (if ($i|tonumber) % 2 == 1 then "user" else "assistant" end), content: ("m" + $i), wake_id: ("w" + $i), chamber: "schedule", at: "2026-11-21T00:00:00Z"}'
		done
		head -c "$2" /dev/zero | tr '\0' a | jq -Rc '{role: "assistant", content: ., wake_id: "big", chamber: "schedule", at: "2026-11-21T00:00:00Z"}'
		echo '{"role":"user","content":"the last word","wake_id":"u","chamber":"user","at":"2026-11-21T00:00:00Z"}'
	} > "$HEART_STATE_DIR/agents/scout/history.jsonl"
}

@test "a 1 MiB answer in the history does not wedge the agent: the context stays within llm.context_budget, the history on disk stays whole" {
	history 6 1048576
	sum=$(md5sum < "$HEART_STATE_DIR/agents/scout/history.jsonl")
	# a real server refuses a context past its window
	llm_script '{"max_context":100000,"replies":[{"text":"fine"}]}'
	for i in 1 2 3 4; do
		run heart-wake --soul "$S" --force
		assert_success
	done
	run llm_count
	assert_output 4
	body=$(llm_last)
	[ "$(echo "$body" | jq -c .messages | wc -c)" -le $((16000 * 4 + 1000)) ]
	# the big answer shortened, its head kept and a word said
	echo "$body" | jq -e '[.messages[] | select(.content | test("^aaaa"))] | length == 1'
	echo "$body" | jq -e '.messages[] | select(.content | test("^aaaa")) | .content | test("\n\\[heart: cut from 1048576 to [0-9]+ bytes to fit llm.context_budget; the history keeps it whole\\]$")'
	# the newest messages kept, the oldest dropped first
	echo "$body" | jq -e '.messages[-2].content == "the last word"'
	[ "$(md5sum < "$HEART_STATE_DIR/agents/scout/history.jsonl")" = "$sum" ]
	# --dry-run shows the request as it would go
	run -0 heart-wake --soul "$S" --dry-run
	[ "$(echo "$output" | jq -c .request.body.messages | wc -c)" -le $((16000 * 4 + 1000)) ]
}

@test "llm.context_budget: the oldest messages go first, a tool result never without its call" {
	printf 'name: scout\nheart: { history: { keep: 20 } }\nllm: { timeout: 2s, context_budget: 1000 }\n' > "$S"
	mkdir -p "$HEART_STATE_DIR/agents/scout"
	pad=$(head -c 600 /dev/zero | tr '\0' p)
	{
		jq -nc '{role: "user", content: "first", wake_id: "a", chamber: "schedule", at: "2026-11-21T00:00:00Z"}'
		jq -nc '{role: "assistant", content: null, tool_calls: [{id: "c1", type: "function", function: {name: "quote", arguments: "{}"}}], wake_id: "a", chamber: "schedule", at: "2026-11-21T00:00:00Z"}'
		for i in 1 2 3 4 5 6; do
			jq -nc --arg p "$pad$i" '{role: "tool", tool_call_id: "c1", content: $p, wake_id: "a", chamber: "schedule", at: "2026-11-21T00:00:00Z"}'
		done
		for i in 1 2 3 4; do
			jq -nc --arg p "$pad" --arg i "$i" '{role: "assistant", content: ("answer " + $i + " " + $p), wake_id: ("b" + $i), chamber: "schedule", at: "2026-11-21T00:00:00Z"}'
		done
	} > "$HEART_STATE_DIR/agents/scout/history.jsonl"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run heart-wake --soul "$S" --force
	assert_success
	body=$(llm_last)
	[ "$(echo "$body" | jq -c .messages | wc -c)" -le 4200 ]
	# the call went, and so did every one of its results
	echo "$body" | jq -e '[.messages[] | select(.role == "tool" or .tool_calls != null)] | length == 0'
	echo "$body" | jq -e '[.messages[] | .content | select(test("^answer"))] | length >= 1'
	echo "$body" | jq -e '.messages[-2].content | startswith("answer 4 ")'
	# a budget too large or too small is refused
	for b in 999 1000001; do
		printf 'name: scout\nllm: { context_budget: %s }\n' "$b" > "$S"
		run heart-wake --soul "$S" --force
		assert_failure 78
		assert_output --partial 'llm.context_budget: must be'
	done
}

@test "a remote base_url and no key in the environment warn once, before the request; a loopback URL, a key or a skipped wake do not" {
	warning='no API key: OPENAI_API_KEY is not set in the environment heart-wake runs in, and http://heart-test.invalid/v1 is not on this host, so the request will likely be refused (HTTP 401); set it where heart-wake runs (cron and systemd do not read a login shell'"'"'s profile), to any value if the server needs no key'
	export HEART_LLM_URL=http://heart-test.invalid/v1
	sed 's/^name: scout/name: scout2/' "$S" > "$BATS_TEST_TMPDIR/scout2.yaml"
	run --separate-stderr heart-wake --soul "$S" --soul "$BATS_TEST_TMPDIR/scout2.yaml" --force
	assert_failure 75
	# once per run, first: before the error of the request that went
	[ "${stderr_lines[0]}" = "heart-wake: scout: warning: $warning" ]
	[[ "${stderr_lines[1]}" == "heart-wake: scout: http://heart-test.invalid/v1/chat/completions: "* ]]
	[ "$(printf '%s\n' "$stderr" | grep -c 'no API key')" -eq 1 ]
	echo "${lines[0]}" | jq -e --arg w "$warning" '.warning == $w'
	# --dry-run shows it too
	run -0 --separate-stderr heart-wake --soul "$S" --dry-run --force
	[ "${stderr_lines[0]}" = "heart-wake: scout: warning: $warning" ]
	# a skipped wake sends nothing, and says nothing
	run --separate-stderr heart-wake --soul "$S" --chamber idle
	assert_success
	[ "$stderr" = "" ]
	# a key in the environment: no warning
	OPENAI_API_KEY=sk-x-1234 run --separate-stderr heart-wake --soul "$S" --force
	[ "$(printf '%s\n' "$stderr" | grep -c 'no API key')" -eq 0 ]
	# a server on this host (Ollama, the double) needs none
	for u in "http://127.0.0.1:$(cat "$LLM_DIR/port")/v1" "http://localhost:$(cat "$LLM_DIR/port")/v1"; do
		HEART_LLM_URL=$u run --separate-stderr heart-wake --soul "$S" --force
		assert_success
		[ "$stderr" = "" ]
	done
	# Anthropic's default endpoint, and its variable
	printf 'name: scout\nllm: { provider: anthropic, model: m, timeout: 2s }\n' > "$S"
	unset HEART_LLM_URL ANTHROPIC_API_KEY
	run -0 --separate-stderr heart-wake --soul "$S" --dry-run
	[[ "${stderr_lines[0]}" == "heart-wake: scout: warning: no API key: ANTHROPIC_API_KEY is not set in the environment heart-wake runs in, and https://api.anthropic.com/v1 is not on this host"* ]]
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
	run -0 script -qec "heart-wake --explain --soul $S" /dev/null
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

@test "a failure reaches cron mail once: heart-wake says it, heart-ghost exits with its status" {
	cd "$BATS_TEST_TMPDIR"
	pipeline() {	# pipeline ARGS: heart-wake ARGS | heart-ghost, as cron runs it
		run --separate-stderr bash -c 'heart-wake "$@" | heart-ghost --text' _ "$@"
	}
	jq -nc '{replies: [{status: 500}]}' > "$LLM_DIR/script.json"
	pipeline --soul "$S" --force
	assert_failure 75
	assert_output ""
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ ${stderr_lines[0]} == 'heart-wake: scout: '*'HTTP 500'* ]]
	# the same result kept in a log and replayed later says nothing more
	heart-wake --soul "$S" --force > log 2> /dev/null || true
	run --separate-stderr heart-ghost log
	assert_failure 75
	[ -z "$stderr" ]
	# heart-wake | jq: heart-wake's own line, once (the third failure
	# opens the breaker: its notice follows, exit 0)
	run --separate-stderr bash -c 'heart-wake --soul "$1" --force | jq -r "[.status, .exit] | @tsv"' _ "$S"
	assert_output "$(printf 'error\t75\nbreaker_open\t0')"
	[ "${#stderr_lines[@]}" -eq 1 ]
	# a configuration error: 78 at the end of the pipeline too
	HEART_LLM_MODEL= pipeline --soul "$S" --force
	assert_failure 78
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ ${stderr_lines[0]} == 'heart-wake: scout: '*'no model: set llm.model'* ]]
	printf 'heart: { schedule: { interval: soon } }\n' > bad.yaml
	pipeline --soul bad.yaml
	assert_failure 78
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ ${stderr_lines[0]} == 'heart-wake: bad.yaml:1:32: heart.schedule.interval: bad duration'* ]]
	# a store out of reach: 69
	HEART_STORE=redis://127.0.0.1:$(free_port) pipeline --soul "$S" --force
	assert_failure 69
	[ "${#stderr_lines[@]}" -eq 1 ]
	run llm_count
	assert_output 3
}

@test "bad usage exits 64" {
	run heart-wake
	assert_failure 64
	run heart-wake --soul "$S" --chamber nap
	assert_failure 64
	run heart-wake --touch ../x
	assert_failure 64
}
