#!/usr/bin/env bats
# heart-wake: spending less: the gate program, a checklist item's own
# interval, and the triage model (heart-soul(5)).

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	llm_start
	D=$BATS_TEST_TMPDIR
	S=$D/scout.yaml
	G=$BATS_TEST_DIRNAME/../share/heartbeat/gates
}

teardown() {
	if [ -n "${TRIAGE_PID:-}" ]; then
		kill "$TRIAGE_PID" 2>/dev/null
		wait "$TRIAGE_PID" 2>/dev/null || :
	fi
	llm_stop
	heart_teardown
}

# gate_soul ARGV [MORE]: a soul whose schedule chamber has this gate
gate_soul() {
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, gate: %s%s }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' "$1" "${2:+, $2}" > "$S"
}

# a gate script in the soul's directory: gate.sh, its body from stdin
gate_script() {
	{ echo '#!/bin/sh'; echo 'echo run >> "$0.runs"'; cat; } > "$D/gate.sh"
	chmod +x "$D/gate.sh"
}

gate_runs() {
	[ -f "$D/gate.sh.runs" ] && wc -l < "$D/gate.sh.runs" | tr -d ' ' || echo 0
}

@test "a gate that exits 1 skips the wake, --force or not: gated, zero requests, its first line the reason, its slot used" {
	gate_script <<'EOF2'
echo "no new mail"
echo "second line"
exit 1
EOF2
	gate_soul '[./gate.sh]'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(echo "$output" | jq -r .status)" = gated ]
	[ "$(echo "$output" | jq -r .reason)" = "schedule: gated: no new mail" ]
	[ "$(echo "$output" | jq .gate.exit)" = 1 ]
	[ "$(llm_count)" = 0 ]
	[ "$(gate_runs)" = 1 ]
	# the slot is used: the next run is not due and runs no gate
	run heart-wake --soul "$S"
	[ "$(echo "$output" | jq -r .status)" = not_due ]
	[ "$(gate_runs)" = 1 ]
	# a gated wake leaves no trace through heart-ghost
	heart-wake --soul "$S" --force | heart-ghost
	[ ! -s "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
}

@test "a gate that exits 0 wakes, its output in the prompt as what changed" {
	gate_script <<'EOF2'
echo "inbox: 2 new messages from the bank"
exit 0
EOF2
	gate_soul '[./gate.sh]'
	llm_script '{"replies":[{"text":"ALERT: the bank wrote."}]}'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(echo "$output" | jq -r .status)" = ok ]
	[ "$(llm_count)" = 1 ]
	llm_last | jq -e '.messages[-1].content | contains("What changed since your last wake (your gate'"'"'s output):\ninbox: 2 new messages from the bank")'
}

@test "a gate's output is bounded in the prompt" {
	gate_script <<'EOF2'
head -c 20000 /dev/zero | tr '\0' x
exit 0
EOF2
	gate_soul '[./gate.sh]'
	run heart-wake --soul "$S" --force
	assert_success
	llm_last | jq -e '.messages[-1].content | contains("[heart: the gate'"'"'s output cut at 4096 bytes]")'
	n=$(llm_last | jq -r '.messages[-1].content' | tr -cd x | wc -c)
	[ "$n" -eq 4096 ]
}

@test "a gate's environment: the chamber's last admitted wake, a scratch directory, never the model's key" {
	gate_script <<'EOF2'
env | grep -E '^(HEART_|SECRET_KEY)' | sort > "$0.env.$(cat "$0.runs" | wc -l)"
exit 0
EOF2
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, gate: [./gate.sh] }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s, api_key_env: SECRET_KEY }\n' > "$S"
	export SECRET_KEY=sk-very-secret-1234
	run at "2026-11-23 10:00:00" heart-wake --soul "$S" --force
	assert_success
	grep -qx 'HEART_LAST_WAKE=0' "$D/gate.sh.env.1"
	grep -qx 'HEART_LAST_WAKE_AT=' "$D/gate.sh.env.1"
	grep -qx "HEART_GATE_DIR=$HEART_STATE_DIR/agents/scout/gate" "$D/gate.sh.env.1"
	grep -qx 'HEART_AGENT=scout' "$D/gate.sh.env.1"
	grep -qx 'HEART_CHAMBER=schedule' "$D/gate.sh.env.1"
	[ -d "$HEART_STATE_DIR/agents/scout/gate" ]
	! grep -q SECRET_KEY "$D/gate.sh.env.1"
	run at "2026-11-23 11:00:00" heart-wake --soul "$S" --force
	assert_success
	grep -qx "HEART_LAST_WAKE=$(date -u -d '2026-11-23 10:00:00' +%s)" "$D/gate.sh.env.2"
	grep -qx 'HEART_LAST_WAKE_AT=2026-11-23T10:00:00Z' "$D/gate.sh.env.2"
}

@test "a gate that fails or times out is a tool failure: zero requests, the breaker told, never an LLM failure" {
	gate_script <<'EOF2'
echo "cannot reach the mail server" >&2
exit 3
EOF2
	gate_soul '[./gate.sh]' 'gate_timeout: 1s'
	run --separate-stderr heart-wake --soul "$S" --force
	[ "$status" -eq 75 ]
	[ "$(echo "$output" | jq -r .status)" = error ]
	echo "$output" | jq -e '.error == "schedule: gate: exit status 3: cannot reach the mail server"'
	[ "$(llm_count)" = 0 ]
	run jq -c '[.state, .tool_fails, .llm_fails]' "$(bfile scout)"
	[ "$output" = '["closed",1,0]' ]
	# a timeout: killed, the same failure
	gate_script <<'EOF2'
exec sleep 60
EOF2
	run --separate-stderr heart-wake --soul "$S" --force
	[ "$status" -eq 75 ]
	echo "$output" | jq -e '.error | test("^schedule: gate: no result within 1s")'
	[ "$(echo "$output" | jq .gate.exit)" = null ]
	[ "$(llm_count)" = 0 ]
	run jq -c '[.state, .tool_fails, .llm_fails]' "$(bfile scout)"
	[ "$output" = '["closed",2,0]' ]
	# a program that is not there
	gate_soul '[./no-such-gate]'
	run --separate-stderr heart-wake --soul "$S" --force
	[ "$status" -eq 75 ]
	[ "$(llm_count)" = 0 ]
	run jq -c '[.state, .trigger, .tool_fails, .llm_fails]' "$(bfile scout)"
	[ "$output" = '["open","tool",3,0]' ]
	# a gate that works again ends the run of failures
	state_clear
	gate_script <<'EOF2'
exit 3
EOF2
	gate_soul '[./gate.sh]'
	heart-wake --soul "$S" --force || :
	gate_script <<'EOF2'
echo quiet; exit 1
EOF2
	run heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = gated ]
	[ "$(jq .tool_fails "$(bfile scout)")" = 0 ]
}

@test "the gate runs only once the cheap gates pass: not due, quiet, empty checklist cost no gate" {
	gate_script <<'EOF2'
exit 0
EOF2
	printf '# nothing open\n- [x] done\n' > "$D/HEARTBEAT.md"
	gate_soul '[./gate.sh]' 'checklist: HEARTBEAT.md'
	run heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = empty ]
	[ "$(gate_runs)" = 0 ]
	# not due (the first slot is ahead): no gate
	state_clear
	gate_soul '[./gate.sh]'
	run at "2026-11-23 10:00:00" heart-wake --soul "$S"
	[ "$(echo "$output" | jq -r .status)" = not_due ]
	[ "$(gate_runs)" = 0 ]
	next=$(echo "$output" | jq -r .next)
	run at "$next" heart-wake --soul "$S"
	[ "$(echo "$output" | jq -r .status)" = idle ]
	[ "$(gate_runs)" = 1 ]
	gate_soul '[./gate.sh]' 'active_hours: "00:00-00:01"'
	run at "2026-11-23 12:00:00" heart-wake --soul "$S"
	[ "$(echo "$output" | jq -r .status)" = quiet ]
	[ "$(gate_runs)" = 1 ]
}

@test "--explain names the gate without running it; --dry-run does not run it" {
	gate_script <<'EOF2'
exit 0
EOF2
	gate_soul '[./gate.sh, --since-last]' 'gate_timeout: 20s'
	run heart-wake --soul "$S" --explain --chamber schedule
	assert_success
	echo "$output" | jq -e '.gates.gate.ok == true'
	echo "$output" | jq -e '.gates.gate.reason | contains("[\"./gate.sh\",\"--since-last\"] (timeout 20s)")'
	run heart-wake --soul "$S" --dry-run
	assert_success
	[ "$(gate_runs)" = 0 ]
	run soul-dump "$S"
	echo "$output" | jq -e '.schedule.gate == {"command": ["./gate.sh", "--since-last"], "timeout": 20}'
	echo "$output" | jq -e '.idle.gate == null and .llm.triage == null'
}

@test "a bad gate key is a configuration error" {
	gate_soul '"./gate.sh"'
	run heart-wake --soul "$S"
	[ "$status" -eq 78 ]
	[[ $output == *"heart.schedule.gate: must be a list of strings"* ]] || [[ $stderr == *"heart.schedule.gate"* ]] || { echo "$output"; false; }
}

@test "the shipped gate changed-files wakes only when a file changed since the last admitted wake" {
	mkdir "$D/notes"
	echo a > "$D/notes/a.txt"
	touch -d '2026-11-23 09:00:00' "$D/notes/a.txt" "$D/notes"
	gate_soul "[$G/changed-files, notes]"
	run at "2026-11-23 10:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("first wake")'
	run at "2026-11-23 11:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = gated ]
	echo "$output" | jq -e '.reason == "schedule: gated: nothing under notes changed since 2026-11-23T10:00:00Z"'
	echo b > "$D/notes/b.txt"
	touch -d '2026-11-23 11:30:00' "$D/notes/b.txt"
	run at "2026-11-23 12:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("notes/b.txt")'
	[ "$(llm_count)" = 2 ]
}

@test "the shipped gate changed-output wakes on a change of a command's output, and keeps a change a refused wake did not see" {
	echo "price 10" > "$D/world"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 2, gate: [%s/changed-output, cat, world] }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' "$G" > "$S"
	run at "2026-11-23 10:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("(first look):\nprice 10")'
	run at "2026-11-23 11:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = gated ]
	[ "$(echo "$output" | jq -r .reason)" = "schedule: gated: no change in the output of cat world" ]
	echo "price 12" > "$D/world"
	run at "2026-11-23 12:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("changed:\n< price 10\n> price 12")'
	[ "$(llm_count)" = 2 ]
	# the cap (2) refuses the next wake: the change it would have seen waits
	echo "price 15" > "$D/world"
	run at "2026-11-23 13:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = capped ]
	heart-cap reset scout
	run at "2026-11-23 14:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("< price 12\n> price 15")'
}

@test "an item's own interval: open only once it has passed since the last wake that carried it; none due is empty at zero requests" {
	printf -- '- [ ] check the backups (every 6h)\n- [ ] read the news\n' > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	run at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("- [ ] check the backups (every 6h)\n- [ ] read the news")'
	run at "2026-11-23 09:00:00" heart-wake --soul "$S" --force
	llm_last | jq -e '.messages[-1].content | (contains("read the news") and (contains("backups") | not))'
	# with only the interval item, nothing is due: empty, no request
	printf -- '- [ ] check the backups (every 6h)\n' > "$D/HEARTBEAT.md"
	run at "2026-11-23 13:59:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = empty ]
	echo "$output" | jq -e '.reason | contains("has no item due; the next one is at 2026-11-23T14:00:00")'
	[ "$(llm_count)" = 2 ]
	run at "2026-11-23 14:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	[ "$(llm_count)" = 3 ]
	run at "2026-11-23 15:00:00" heart-wake --soul "$S" --explain --chamber schedule
	echo "$output" | jq -e '.gates.checklist.ok == false'
	echo "$output" | jq -e '.would == "empty"'
}

@test "an item's interval: a wake refused by the cap does not carry it" {
	printf -- '- [ ] check the backups (every 6h)\n' > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	heart-cap take --soul "$S" > /dev/null
	run at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = capped ]
	heart-cap reset scout
	run at "2026-11-23 08:01:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	[ "$(llm_count)" = 1 ]
}

# triage_start: a second double for the triage endpoint; TRIAGE_URL
triage_start() {
	TRIAGE_DIR=$D/triage
	mkdir -p "$TRIAGE_DIR"
	: > "$TRIAGE_DIR/requests.jsonl"
	python3 "$T/llm-double.py" "$TRIAGE_DIR" 3>&- &
	TRIAGE_PID=$!
	wait_until 10 test -s "$TRIAGE_DIR/port"
	TRIAGE_URL="http://127.0.0.1:$(cat "$TRIAGE_DIR/port")/v1"
}

triage_count() {
	wc -l < "$TRIAGE_DIR/requests.jsonl" | tr -d ' '
}

triage_soul() {
	printf 'name: scout\nsystem: You are scout.\nheart:\n  schedule: { daily_cap: 1000%s }\n  idle: { daily_cap: 0 }\nllm:\n  timeout: 5s\n  triage: { base_url: "%s", model: cheap, timeout: 5s }\n' "${1:+, $1}" "$TRIAGE_URL" > "$S"
}

decide() {	# decide ACTION REASON: the triage's next answer
	printf '{"replies":[{"tool_calls":[{"name":"heartbeat","arguments":{"action":"%s","reason":"%s"}}],"usage":{"prompt_tokens":50,"completion_tokens":5}}]}\n' "$1" "$2" > "$TRIAGE_DIR/script.json"
}

@test "triage skip: a ghost decided by the triage model, zero requests to the main model" {
	triage_start
	triage_soul
	decide skip "nothing new"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(triage_count)" = 1 ]
	[ "$(llm_count)" = 0 ]
	echo "$output" | jq -e '.status == "idle" and .reason == "triage: skip: nothing new"'
	echo "$output" | jq -e '.triage == {"provider": "openai", "model": "cheap", "action": "skip", "reason": "nothing new", "usage": {"prompt_tokens": 50, "completion_tokens": 5, "cached_tokens": 0, "cache_write_tokens": 0}, "cost": null}'
	echo "$output" | jq -e '.usage == {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "cache_write_tokens": 0}'
	# the triage request: system and prompt, no history, heartbeat alone, forced
	tail -n 1 "$TRIAGE_DIR/requests.jsonl" | jq -e '.body | .model == "cheap" and (.messages | length) == 2 and .messages[0].role == "system" and (.tools | map(.function.name)) == ["heartbeat"] and .tool_choice.function.name == "heartbeat"'
	tail -n 1 "$TRIAGE_DIR/requests.jsonl" | jq -e '.body.messages[1].content | contains("[heart] local time:") and contains("First call heartbeat")'
	# counted as a ghost; the breaker heard a working model
	heart-cap status scout --json | jq -e '.ghosts == 1'
	# heart-ghost: no trace
	heart-wake --soul "$S" --force | heart-ghost
	[ ! -s "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
}

@test "triage run: one request to each, the triage's reason passed on, tokens kept apart" {
	triage_start
	printf -- '- [ ] watch the bank account\n' > "$D/HEARTBEAT.md"
	triage_soul 'checklist: HEARTBEAT.md'
	decide run "a payment bounced"
	llm_script '{"replies":[{"text":"ALERT: a payment bounced.","usage":{"prompt_tokens":900,"completion_tokens":40}}]}'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(triage_count)" = 1 ]
	[ "$(llm_count)" = 1 ]
	echo "$output" | jq -e '.status == "ok"'
	echo "$output" | jq -e '.usage == {"prompt_tokens": 900, "completion_tokens": 40, "cached_tokens": 0, "cache_write_tokens": 0}'
	echo "$output" | jq -e '.triage.action == "run" and .triage.usage.prompt_tokens == 50 and .triage.usage.completion_tokens == 5'
	tail -n 1 "$TRIAGE_DIR/requests.jsonl" | jq -e '.body.messages[1].content | contains("watch the bank account")'
	llm_last | jq -e '.model == "double" and (.messages[-1].content | contains("A first look found work: a payment bounced"))'
	# the day's counters: the main model's tokens and the triage's apart
	heart-cap status scout --json | jq -e '.tokens.prompt == 900 and .tokens.completion == 40 and .triage_tokens.prompt == 50 and .triage_tokens.completion == 5'
	jq -e '.tokens.prompt == 900 and .triage_tokens.prompt == 50' "$HEART_STATE_DIR/agents/scout/cap.json"
	run script -qec "heart-cap status scout" /dev/null
	assert_line --regexp '^scout .* +940 +55 +no price '
	heart-cap status --prom scout | grep -Fx 'heart_cap_triage_tokens{agent="scout",kind="prompt"} 50'
}

@test "triage price: the triage's cost apart and in the wake's; a budget needs a price for each model" {
	triage_start
	printf 'name: scout\nheart:\n  daily_budget: 1.0\n  schedule: { daily_cap: 1000 }\nllm:\n  timeout: 5s\n  price: { input: 1.0, output: 4.0 }\n  triage: { base_url: "%s", model: cheap, timeout: 5s, price: { input: 2.0, output: 10.0 } }\n' "$TRIAGE_URL" > "$S"
	decide skip "nothing new"
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.triage.cost == 0.00015 and .cost == 0.00015'
	decide run "a payment bounced"
	llm_script '{"replies":[{"text":"ALERT: a payment bounced.","usage":{"prompt_tokens":900,"completion_tokens":40}}]}'
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.triage.cost == 0.00015 and .cost == 0.00121'
	heart-cap status scout --json | jq -e '.cost == 0.00136 and .triage_tokens.prompt == 100'
	# another model without a price of its own: none, and a budget is refused
	sed -i 's/, price: { input: 2.0, output: 10.0 }//' "$S"
	run --separate-stderr heart-wake --soul "$S" --force
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"heart.daily_budget: needs llm.triage.price too"* ]]
	# the same model as llm's: llm's price is the triage's
	sed -i 's/model: cheap, //' "$S"
	decide skip "nothing new"
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.triage.cost == 0.00007'
}

@test "triage and the fleet's rate limit: a wake's first request is the triage's, taken from the triage endpoint's bucket" {
	triage_start
	triage_soul
	export HEART_FLEET=$BATS_TEST_TMPDIR/fleet.yaml
	printf 'endpoints:\n  cheap:\n    base_url: %s\n    model: cheap\n    requests_per_minute: 1\n' \
	    "$TRIAGE_URL" > "$HEART_FLEET"
	decide skip "nothing new"
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.status == "idle"'
	# the bucket of one a minute is spent: deferred, no request to either
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.status == "throttled" and (.reason | contains("cheap"))'
	[ "$(triage_count)" = 1 ]
	[ "$(llm_count)" = 0 ]
	heart-wake --soul "$S" --explain --chamber schedule | jq -e '.gates.rate.ok == false'
	# the main endpoint has no limit: a run reaches it once the bucket refills
	printf 'endpoints:\n  cheap:\n    base_url: %s\n    model: cheap\n    requests_per_minute: 100\n' \
	    "$TRIAGE_URL" > "$HEART_FLEET"
	decide run "a payment bounced"
	llm_script '{"replies":[{"text":"ALERT: a payment bounced."}]}'
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.status == "ok"'
	[ "$(triage_count)" = 2 ]
	[ "$(llm_count)" = 1 ]
}

@test "triage failure: the main model is asked in its place, and the breaker hears an LLM failure" {
	triage_start
	triage_soul
	printf '{"replies":[{"status":503,"text":"overloaded"}]}\n' > "$TRIAGE_DIR/script.json"
	llm_script '{"replies":[{"text":"ALERT: found it."}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	[ "$status" -eq 75 ]
	[ "$(triage_count)" = 1 ]
	[ "$(llm_count)" = 1 ]
	echo "$output" | jq -e '.status == "ok" and .response == "ALERT: found it."'
	echo "$output" | jq -e '.triage.error | test("503")'
	echo "$output" | jq -e '.warning | contains("the main model was asked in its place")'
	run jq -c '[.state, .llm_fails, .tool_fails]' "$(bfile scout)"
	[ "$output" = '["closed",1,0]' ]
	# the answer is delivered all the same
	heart-wake --soul "$S" --force > "$D/r" || :
	run heart-ghost < "$D/r"
	[ -s "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
}

@test "triage: a soul's llm.triage keys are checked, and --dry-run shows its request" {
	triage_start
	triage_soul
	run heart-wake --soul "$S" --dry-run
	assert_success
	echo "$output" | jq -e '.triage_request.body.model == "cheap" and .triage_request.url == "'"$TRIAGE_URL"'/chat/completions"'
	[ "$(triage_count)" = 0 ]
	printf 'name: scout\nllm: { triage: { provider: gemini } }\n' > "$S"
	run heart-wake --soul "$S"
	[ "$status" -eq 78 ]
	[[ $output == *"llm.triage.provider: must be openai, anthropic or command"* ]]
}

@test "triage from the double's world: run inside an event's window, skip outside it, the main model asked only for the event" {
	triage_start
	triage_soul
	w='"windows": [{"from": "09:00", "to": "09:01", "text": "ALERT: the storm is here."}], "span": true'
	printf '{%s, "decide": true}\n' "$w" > "$TRIAGE_DIR/script.json"
	llm_script "{$w}"
	run at "2026-11-23 08:45:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle" and .triage.action == "skip"'
	run at "2026-11-23 09:15:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "ok" and .triage.action == "run" and .response == "ALERT: the storm is here."'
	run at "2026-11-23 10:15:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle" and .triage.action == "skip"'
	[ "$(triage_count)" = 3 ]
	[ "$(llm_count)" = 1 ]
}

@test "triage on another provider: its own URL, key and model, none of llm's" {
	triage_start
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000 }\n  idle: { daily_cap: 0 }\nllm:\n  provider: openai\n  model: big\n  triage: { provider: anthropic, base_url: "%s", model: small-and-cheap }\n' "$TRIAGE_URL" > "$S"
	export ANTHROPIC_API_KEY=sk-ant-test-5678
	decide skip "quiet"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.triage.provider == "anthropic" and .triage.model == "small-and-cheap" and .triage.action == "skip"'
	tail -n 1 "$TRIAGE_DIR/requests.jsonl" | jq -e '(.path | endswith("/messages")) and .body.model == "small-and-cheap" and .headers["x-api-key"] == "sk-ant-test-5678"'
	[ "$(llm_count)" = 0 ]
	# a provider of its own needs a model of its own
	printf 'name: scout\nllm:\n  model: big\n  triage: { provider: anthropic, base_url: "%s" }\n' "$TRIAGE_URL" > "$S"
	unset HEART_LLM_MODEL
	run --separate-stderr heart-wake --soul "$S" --force
	[ "$status" -eq 78 ]
	[[ $stderr == *"no model"* ]]
}
