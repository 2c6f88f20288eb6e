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
	run -0 heart-wake --soul "$S"
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
	! grep -q -e SECRET_KEY -e "$SECRET_KEY" "$D/gate.sh.env.1" || false
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
	run -0 heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = gated ]
	[ "$(jq .tool_fails "$(bfile scout)")" = 0 ]
}

@test "a gate program named without a path and not in PATH is said so, not as a file that is missing" {
	gate_soul '[no-such-gate-program]'
	run --separate-stderr heart-wake --soul "$S" --force
	[ "$status" -eq 75 ]
	echo "$output" | jq -e '.error == "schedule: gate: no-such-gate-program: cannot run: no such program in PATH"'
	[ "$(llm_count)" = 0 ]
	# with a path, the system's word for it
	gate_soul '[./no-such-gate]'
	run -75 --separate-stderr heart-wake --soul "$S" --force
	echo "$output" | jq -e '.error == "schedule: gate: ./no-such-gate: cannot run: No such file or directory"'
}

@test "the gate runs only once the cheap gates pass: not due, quiet, empty checklist cost no gate" {
	gate_script <<'EOF2'
exit 0
EOF2
	printf '# nothing open\n- [x] done\n' > "$D/HEARTBEAT.md"
	gate_soul '[./gate.sh]' 'checklist: HEARTBEAT.md'
	run -0 heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = empty ]
	[ "$(gate_runs)" = 0 ]
	# not due (the first slot is ahead): no gate
	state_clear
	gate_soul '[./gate.sh]'
	run -0 at "2026-11-23 10:00:00" heart-wake --soul "$S"
	[ "$(echo "$output" | jq -r .status)" = not_due ]
	[ "$(gate_runs)" = 0 ]
	next=$(echo "$output" | jq -r .next)
	run -0 at "$next" heart-wake --soul "$S"
	[ "$(echo "$output" | jq -r .status)" = idle ]
	[ "$(gate_runs)" = 1 ]
	gate_soul '[./gate.sh]' 'active_hours: "00:00-00:01"'
	run -0 at "2026-11-23 12:00:00" heart-wake --soul "$S"
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
	run -0 soul-dump "$S"
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
	run -0 at "2026-11-23 10:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("first wake")'
	run -0 at "2026-11-23 11:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = gated ]
	echo "$output" | jq -e '.reason == "schedule: gated: nothing under notes changed since 2026-11-23T10:00:00Z"'
	echo b > "$D/notes/b.txt"
	touch -d '2026-11-23 11:30:00' "$D/notes/b.txt"
	run -0 at "2026-11-23 12:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("notes/b.txt")'
	[ "$(llm_count)" = 2 ]
}

@test "the shipped gate changed-output wakes on a change of a command's output, and keeps a change a refused wake did not see" {
	echo "price 10" > "$D/world"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 2, gate: [%s/changed-output, cat, world] }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' "$G" > "$S"
	run -0 at "2026-11-23 10:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("(first look):\nprice 10")'
	run -0 at "2026-11-23 11:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = gated ]
	[ "$(echo "$output" | jq -r .reason)" = "schedule: gated: no change in the output of cat world" ]
	echo "price 12" > "$D/world"
	run -0 at "2026-11-23 12:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("changed:\n< price 10\n> price 12")'
	[ "$(llm_count)" = 2 ]
	# the cap (2) refuses the next wake: the change it would have seen waits
	echo "price 15" > "$D/world"
	run -0 at "2026-11-23 13:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = capped ]
	heart-cap reset scout
	run -0 at "2026-11-23 14:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("< price 12\n> price 15")'
}

@test "an item's own interval: open only once it has passed since the last wake that carried it; none due is empty at zero requests" {
	printf -- '- [ ] check the backups (every 6h)\n- [ ] read the news\n' > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	run -0 at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	llm_last | jq -e '.messages[-1].content | contains("- [ ] check the backups (every 6h)\n- [ ] read the news")'
	run -0 at "2026-11-23 09:00:00" heart-wake --soul "$S" --force
	llm_last | jq -e '.messages[-1].content | (contains("read the news") and (contains("backups") | not))'
	# with only the interval item, nothing is due: empty, no request
	printf -- '- [ ] check the backups (every 6h)\n' > "$D/HEARTBEAT.md"
	run -0 at "2026-11-23 13:59:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = empty ]
	echo "$output" | jq -e '.reason | contains("has no item due; the next one is at 2026-11-23T14:00:00")'
	[ "$(llm_count)" = 2 ]
	run -0 at "2026-11-23 14:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	[ "$(llm_count)" = 3 ]
	run -0 at "2026-11-23 15:00:00" heart-wake --soul "$S" --explain --chamber schedule
	echo "$output" | jq -e '.gates.checklist.ok == false'
	echo "$output" | jq -e '.would == "empty"'
}

@test "an item's interval: a wake refused by the cap does not carry it" {
	printf -- '- [ ] check the backups (every 6h)\n' > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	heart-cap take --soul "$S" > /dev/null
	run -0 at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = capped ]
	heart-cap reset scout
	run -0 at "2026-11-23 08:01:00" heart-wake --soul "$S" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	[ "$(llm_count)" = 1 ]
}

# carry_soul [SCHEDULE_EXTRA]: scout with a weekly item and a tool,
# a breaker that stays closed through a test's failures
carry_soul() {
	printf -- '- [ ] renew the certificates (every 7d)\n' > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, seed_tool_cap: 1, checklist: HEARTBEAT.md%s }\n  idle: { daily_cap: 0 }\n  breaker: { threshold: 100 }\nllm: { timeout: 5s }\ntools:\n  - name: quote\n    description: a price\n    parameters: { type: object }\n    command: [%s]\n' "${1:+, $1}" "$T/tools/quote" > "$S"
}

# due_at TIME: the weekly item is due at TIME (--explain's checklist gate)
due_at() {
	at "$1" heart-wake --soul "$S" --explain --chamber schedule |
	    jq -e '.gates.checklist == {"ok": true, "reason": "1 open item"}'
}

@test "an item's interval: only a wake a model answered carries it; refused, 5xx, 413 and tool_cap leave it due" {
	carry_soul
	llm_script '{"replies":[{"status":500,"text":"overloaded"}]}'
	run -75 --separate-stderr at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "error"'
	due_at "2026-11-23 08:01:00"
	llm_script '{"replies":[{"status":413,"text":"request too large"}]}'
	run -75 --separate-stderr at "2026-11-23 08:02:00" heart-wake --soul "$S" --force
	due_at "2026-11-23 08:03:00"
	llm_script '{"replies":[{"tool_calls":[{"name":"quote","arguments":{}}]}]}'
	run -75 --separate-stderr at "2026-11-23 08:04:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "tool_cap"'
	due_at "2026-11-23 08:05:00"
	[ "$(llm_count)" = 4 ]
	# a refused connection: nothing listens there
	url=$HEART_LLM_URL
	HEART_LLM_URL="http://127.0.0.1:$(free_port)/v1"
	run -75 --separate-stderr at "2026-11-23 08:06:00" heart-wake --soul "$S" --force
	HEART_LLM_URL=$url
	echo "$output" | jq -e '.status == "error"'
	due_at "2026-11-23 08:07:00"
	# the answer carries it: not due again for a week
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 at "2026-11-23 08:08:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle"'
	llm_last | jq -e '.messages[-1].content | contains("renew the certificates")'
	run -0 at "2026-11-23 08:09:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "empty" and (.reason | contains("the next one is at 2026-11-30T08:08:00"))'
	[ "$(llm_count)" = 5 ]
}

@test "an item's interval: a wake killed mid-request leaves it due" {
	carry_soul
	llm_script '{"replies":[{"text":"late","delay":10}]}'
	# (heart-wake itself in the background, so that $! is its pid)
	( at "2026-11-23 08:00:00" exec heart-wake --soul "$S" --force ) > /dev/null &
	pid=$!
	wait_until 5 eval '[ "$(llm_count)" -eq 1 ]'
	kill -KILL "$pid"
	wait "$pid" || :
	due_at "2026-11-23 08:01:00"
}

@test "next counts the items' intervals: the first to come due, or the chamber's slot or hours, whichever is later" {
	printf -- '- [ ] renew the certificates (every 7d)\n- [x] done\n' > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { interval: 1h, active_hours: "09:00-17:00", checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	run -0 at "2026-11-23 10:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle" and .next == "2026-11-30T10:00:00Z"'
	# the slots between are skipped as empty, and say the same
	run -0 at "2026-11-23 12:00:00" heart-wake --soul "$S"
	echo "$output" | jq -e '.status == "empty" and .next == "2026-11-30T10:00:00Z"'
	run -0 at "2026-11-23 12:00:00" heart-wake --soul "$S" --explain --chamber schedule
	echo "$output" | jq -e '.would == "empty" and .next == "2026-11-30T10:00:00Z" and .gates.checklist.until == "2026-11-30T10:00:00Z"'
	run -0 at "2026-11-23 12:00:00" heart-wake --soul "$S" --explain --force --chamber schedule
	echo "$output" | jq -e '.next == "2026-11-30T10:00:00Z"'
	# due outside the active hours: when they begin
	run -0 at "2026-11-30 18:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle" and .next == "2026-12-08T09:00:00Z"'
	run -0 at "2026-12-07 18:00:00" heart-wake --soul "$S" --explain --chamber schedule
	echo "$output" | jq -e '.would == "quiet" and .next == "2026-12-08T09:00:00Z"'
	# due before the chamber's next slot: the slot
	sed -i 's/interval: 1h, active_hours: "09:00-17:00"/interval: 1d/' "$S"
	sed -i 's/every 7d/every 6h/' "$D/HEARTBEAT.md"
	run -0 at "2026-12-08 10:00:00" heart-wake --soul "$S" --force
	slot=$(at "2026-12-08 10:01:00" heart-wake --soul "$S" --explain --chamber schedule | jq -r .gates.due.until)
	echo "$output" | jq -e --arg slot "$slot" '.status == "idle" and .next == ([$slot, "2026-12-08T16:00:00Z"] | max)'
	# no open item: no wake is foreseen until one is added
	printf -- '- [x] done\n' > "$D/HEARTBEAT.md"
	run -0 at "2026-12-09 10:00:00" heart-wake --soul "$S"
	echo "$output" | jq -e '.status == "empty" and .next == null'
	run -0 at "2026-12-09 10:00:00" heart-wake --soul "$S" --explain --chamber schedule
	echo "$output" | jq -e '.next == null'
}

# prompt_items: the checklist items in the last request's prompt
prompt_items() {
	llm_last | jq -r '.messages[-1].content' | grep -c '^- \[ \] ' || :
}

@test "a checklist past the context budget: the prompt keeps within it, says how many it left out, and they stay due" {
	# 5,000 items, some 100 KB: more than the default budget (64 KB),
	# which a server that holds to it refuses
	seq -f '- [ ] check the mirror number %g' 5000 > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	llm_script '{"max_context": 66000, "replies":[{"text":"[IDLE]"}]}'
	run -0 --separate-stderr at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle" and .checklist.left_out > 0 and .checklist.items + .checklist.left_out == 5000 and .checklist.unread == false'
	n=$(echo "$output" | jq .checklist.items)
	left=$(echo "$output" | jq .checklist.left_out)
	[ "$(prompt_items)" = "$n" ]
	[ "$(llm_last | jq '.messages | tojson | length')" -le 64000 ]
	# the first items of the file, and the count of the rest
	llm_last | jq -e --arg left "$left" '.messages[-1].content | contains("- [ ] check the mirror number 1\n") and contains("[heart: \($left) open items left out to fit llm.context_budget; they stay open for a later wake]")'
	echo "$output" | jq -e --arg left "$left" '.warning | contains("checklist: \($left) of 5000 due items left out to fit llm.context_budget (16000 tokens); they stay due")'
	[[ "$stderr" == *"of 5000 due items left out"* ]]
}

@test "a checklist item that is not UTF-8 reaches the prompt, a '?' for the bad byte, and is carried" {
	printf -- '- [ ] caf\xe9 au lait (every 1d)\n' > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	llm_last | jq -e '.messages[-1].content | contains("Open items of your checklist:\n- [ ] caf? au lait (every 1d)\n")'
	run -0 at "2026-11-23 09:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "empty" and .next == "2026-11-24T08:00:00Z"'
}

@test "a checklist item longer than 4 KiB is one item, its interval kept" {
	{ printf -- '- [ ] '; head -c 10000 /dev/zero | tr '\0' y; printf ' (every 1d)\n- [ ] read the news\n'; } > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.checklist == {"items": 2, "left_out": 0, "unread": false}'
	run -0 at "2026-11-23 09:00:00" heart-wake --soul "$S" --force
	llm_last | jq -e '.messages[-1].content | contains("Open items of your checklist:\n- [ ] read the news\n")'
}

@test "a checklist longer than 256 KiB: the rest is not read, and the prompt, the result and a warning say so" {
	seq -f '- [ ] check the mirror number %g' 10000 > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s }\n' > "$S"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 --separate-stderr heart-wake --soul "$S" --force
	echo "$output" | jq -e '.checklist.unread == true and .checklist.items + .checklist.left_out < 10000'
	echo "$output" | jq -e '.warning | contains("checklist: longer than 256 KiB; the rest of it was not read")'
	llm_last | jq -e '.messages[-1].content | contains("[heart: the checklist is longer than 256 KiB; the rest of it was not read]")'
}

@test "items left out for the budget stay due: the next wake carries those left out, those with an interval first" {
	# 10 items without an interval first in the file, then 60 weekly
	# ones, no longer; a budget of 1,000 tokens (4 KB) carries some 40
	{ seq -f '- [ ] read the morning feed number %g now' 10
	  seq -f '- [ ] renew certificate %g (every 7d)' 60; } > "$D/HEARTBEAT.md"
	printf 'name: scout\nheart:\n  schedule: { daily_cap: 1000, checklist: HEARTBEAT.md }\n  idle: { daily_cap: 0 }\nllm: { timeout: 5s, context_budget: 1000 }\n' > "$S"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 --separate-stderr at "2026-11-23 08:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.checklist.left_out > 0'
	[ "$(llm_last | jq '.messages | tojson | length')" -le 4000 ]
	llm_last | jq -r '.messages[-1].content' | grep '^- \[ \] ' > "$D/first"
	# the weekly items first, in file order: none of the others yet
	n=$(wc -l < "$D/first")
	seq -f '- [ ] renew certificate %g (every 7d)' "$n" | cmp - "$D/first"
	# the answer carried them, not the others: the next wake carries
	# those left out, then those without an interval
	run -0 --separate-stderr at "2026-11-23 08:02:00" heart-wake --soul "$S" --force
	llm_last | jq -r '.messages[-1].content' | grep '^- \[ \] ' > "$D/second"
	{ seq -f '- [ ] read the morning feed number %g now' 10
	  seq -f '- [ ] renew certificate %g (every 7d)' $((n + 1)) 60; } |
	    head -n "$(wc -l < "$D/second")" | cmp - "$D/second"
	grep -q 'renew certificate 60 ' "$D/second"
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
	jq -e '.tokens.prompt == 900 and .triage_tokens.prompt == 50' "$(capfile scout)"
	run script -qec "heart-cap status scout" /dev/null
	assert_success
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

@test "triage: an absurd usage block from the triage model is counted within what its request could produce" {
	triage_start
	printf 'name: scout\nheart:\n  daily_budget: 1.0\n  schedule: { daily_cap: 1000 }\nllm:\n  timeout: 5s\n  price: { input: 1.0, output: 4.0 }\n  triage: { base_url: "%s", model: cheap, timeout: 5s, max_tokens: 1000, price: { input: 2.0, output: 10.0 } }\n' "$TRIAGE_URL" > "$S"
	printf '{"replies":[{"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip"}}],"usage":{"prompt_tokens":90000000,"completion_tokens":90000000,"cached_tokens":5}}]}\n' > "$TRIAGE_DIR/script.json"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	n=$(jq -r '.raw | utf8bytelength' "$TRIAGE_DIR/requests.jsonl")
	# 90 million each way would be $1080: the request's bytes and 4096,
	# max_tokens 1000 and 4096
	echo "$output" | jq -e --argjson p $((n + 4096)) '.status == "idle" and
	    .triage.usage == {prompt_tokens: $p, completion_tokens: 5096, cached_tokens: 5, cache_write_tokens: 0}'
	echo "$output" | jq -e --argjson c $(( (n + 4096 - 5) * 2000 + 5 * 2000 + 5096 * 10000 )) \
	    '(.triage.cost * 1e9 | round) == $c and .cost == .triage.cost'
	echo "$output" | jq -e '.warning | startswith("usage past what the request could produce (heart-soul(5), MONEY): prompt_tokens 90000000 counted as ")'
	heart-cap status scout --json | jq -e --argjson p $((n + 4096)) '.triage_tokens.prompt == $p and .cost < 0.1'
	[ "$(llm_count)" = 0 ]
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
	run -75 heart-ghost < "$D/r"
	[ -s "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
}

@test "triage that gives no readable decision fails: the main model is asked, a warning says why, no action is claimed" {
	triage_start
	triage_soul
	llm_script '{"replies":[{"text":"ALERT: a payment bounced."}]}'
	local hb='{"name":"heartbeat","arguments":' reply why n=0
	while IFS='|' read -r reply why; do
		printf '{"replies":[%s]}\n' "$reply" > "$TRIAGE_DIR/script.json"
		run --separate-stderr heart-wake --soul "$S" --force
		assert_success
		n=$((n + 1))
		[ "$(triage_count)" = $n ] && [ "$(llm_count)" = $n ] || { echo "main model not asked: $reply"; return 1; }
		echo "$output" | jq -e '.status == "ok" and .response == "ALERT: a payment bounced."'
		echo "$output" | jq -e '.triage | has("action") | not'
		echo "$output" | jq -e --arg w "triage: $why; the main model was asked in its place" '.warning | contains($w)' ||
		    { echo "$reply: warning: $(echo "$output" | jq .warning)"; return 1; }
		[[ $stderr == *"warning: triage: $why"* ]]
	done <<EOF
{"text":"I cannot call tools. Nothing to do, I think."}|no heartbeat call (a reply in plain text)
{"text":"[IDLE]"}|no heartbeat call (a reply in plain text)
{"tool_calls":[${hb}"{\\"action\\": skip"}]}|the heartbeat call's arguments are not a JSON object
{"tool_calls":[${hb}{"action":"later"}}]}|the heartbeat action "later" is neither skip nor run
{"tool_calls":[${hb}{"reason":"quiet"}}]}|the heartbeat call gives no action
{"tool_calls":[{"name":"search","arguments":{}}]}|the first call was "search", not heartbeat
EOF
	# a model without tools that says what it found: the main model hears it
	llm_last | jq -e '.messages[-1].content | contains("A first look") | not'
	printf '{"replies":[{"text":"The bank wrote: a payment bounced."}]}\n' > "$TRIAGE_DIR/script.json"
	heart-wake --soul "$S" --force 2> /dev/null | jq -e '.status == "ok"'
	llm_last | jq -e '.messages[-1].content | contains("A first look gave no decision but said: The bank wrote: a payment bounced.")'
	# the triage endpoint answered: no LLM failure for the breaker
	run jq -c '[.state, .llm_fails]' "$(bfile scout)"
	assert_output '["closed",0]'
}

@test "triage: a skip whose reply holds an alert or a finding reaches the main model; a skip with an acknowledgement is a ghost" {
	triage_start
	triage_soul
	llm_script '{"replies":[{"text":"ALERT: the disk is full."}]}'
	local skip='"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip","reason":"nothing new"}}]'
	local why='"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip","reason":"⚠️ URGENT: disk at 99%"}}]'
	local reply found n=0
	while IFS='|' read -r reply found; do
		printf '{"replies":[%s]}\n' "$reply" > "$TRIAGE_DIR/script.json"
		run --separate-stderr heart-wake --soul "$S" --force
		assert_success
		n=$((n + 1))
		[ "$(llm_count)" = $n ] || { echo "main model not asked: $reply"; return 1; }
		echo "$output" | jq -e '.status == "ok" and .triage.action == "skip"'
		echo "$output" | jq -e '.warning | contains("triage: skip, but its reply holds a finding; the main model was asked")'
		llm_last | jq -e --arg f "A first look found work: $found" '.messages[-1].content | contains($f)'
	done <<EOF
{"text":"ALERT: the disk is full.",$skip}|ALERT: the disk is full.
{"text":"**Alert** - the disk is full.",$skip}|**Alert** - the disk is full.
{"text":"[IDLE] The server room is flooding, evacuate now.",$skip}|[IDLE] The server room is flooding, evacuate now.
{$why}|⚠️ URGENT: disk at 99%
EOF
	for reply in "{$skip}" "{\"text\":\"Nothing new. [IDLE]\",$skip}" "{\"text\":\"All quiet.\",$skip}"; do
		printf '{"replies":[%s]}\n' "$reply" > "$TRIAGE_DIR/script.json"
		run heart-wake --soul "$S" --force
		assert_success
		echo "$output" | jq -e '.status == "idle" and .reason == "triage: skip: nothing new" and .warning == null'
	done
	[ "$(llm_count)" = $n ]
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
	run -0 at "2026-11-23 08:45:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "idle" and .triage.action == "skip"'
	run -0 at "2026-11-23 09:15:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "ok" and .triage.action == "run" and .response == "ALERT: the storm is here."'
	run -0 at "2026-11-23 10:15:00" heart-wake --soul "$S" --force
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
