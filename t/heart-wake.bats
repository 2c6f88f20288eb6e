#!/usr/bin/env bats
# heart-wake: the schedule and idle chambers, gated to zero cost.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	llm_start
	unset OPENAI_API_KEY
}

teardown() {
	llm_stop
}

mk() {	# mk NAME TEXT: a soul file, its path printed
	printf '%s\n' "$2" > "$BATS_TEST_TMPDIR/$1.yaml"
	echo "$BATS_TEST_TMPDIR/$1.yaml"
}

field() {	# field NAME: from the JSON in $output
	echo "$output" | jq -r ".$1"
}

@test "the paper's travel_rescue day: 5m with no cap sends 48 requests, not 288; 30m cap 48 sends exactly 48" {
	llm_script '{"idle_ratio": 0.9, "seed": 7}'
	storm=$(mk storm "$(cat "$FIX/paper/s7.2-storm.yaml")")
	fixed=$(mk travel_rescue "$(cat "$FIX/paper/s7.2-fixed.yaml")")
	start=$(date -u -d '2026-11-22 00:00:00' +%s)
	for ((m = 0; m < 1440; m++)); do
		at_epoch $((start + m * 60 + 1)) heart-wake --chamber schedule \
			--soul "$storm" --soul "$fixed"
	done > "$BATS_TEST_TMPDIR/results.jsonl"
	r=$BATS_TEST_TMPDIR/results.jsonl
	run jq -s '[.[] | select(.agent == "storm" and (.status == "ok" or .status == "idle"))] | length' "$r"
	assert_output 48
	# the storm config is due every 5 minutes: 287 slots after heart
	# first saw it, at 00:00:01; 239 of them refused by the cap
	run jq -s '[.[] | select(.agent == "storm" and .status == "capped")] | length' "$r"
	assert_output 239
	run jq -s '[.[] | select(.agent == "travel_rescue" and (.status == "ok" or .status == "idle"))] | length' "$r"
	assert_output 48
	run jq -s '[.[] | select(.agent == "travel_rescue" and .status == "capped")] | length' "$r"
	assert_output 0
	run llm_count
	assert_output 96
	idle=$(jq -s '[.[] | select(.agent == "travel_rescue" and .status == "idle")] | length' "$r")
	[ "$idle" -gt 30 ] && [ "$idle" -lt 48 ]
	run jq .ghosts "$HEART_STATE_DIR/agents/travel_rescue/cap.json"
	assert_output "$idle"
	run jq -s 'length' "$r"
	assert_output 2880
}

@test "a due wake sends one request and prints one result line; the next minute is not_due and sends none" {
	s=$(mk scout 'heart: { schedule: { interval: 30m, prompt: "Any news?" } }')
	llm_script '{"replies":[{"text":"Big news: a release."}]}'
	run heart-wake --soul "$s" --force
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[ "$(field status)" = ok ]
	[ "$(field response)" = "Big news: a release." ]
	echo "$output" | jq -e '.v == 1 and .agent == "scout" and .chamber == "schedule" and (.wake_id | length > 8) and (.at | test("Z$")) and .cap.used == 1 and .cap.cap == 48 and .breaker == "closed" and .tools == {"calls":0,"failed":0} and .error == null and .usage.prompt_tokens > 0 and (.messages | length == 2) and .messages[0].role == "user" and .messages[1].content == "Big news: a release."'
	run heart-wake --soul "$s"
	assert_success
	[ "$(field status)" = not_due ]
	assert_output --partial 'schedule: not due: last wake'
	run llm_count
	assert_output 1
}

@test "busy: a held wake lock skips the wake at once and sends nothing" {
	s=$(mk scout '')
	mkdir -p "$HEART_STATE_DIR/agents/scout"
	flock "$HEART_STATE_DIR/agents/scout/wake.lock" sleep 3 3>&- &
	holder=$!
	sleep 0.3
	run heart-wake --soul "$s" --force
	assert_success
	[ "$(field status)" = busy ]
	assert_output --partial 'a wake of this agent is running'
	wait "$holder"
	run llm_count
	assert_output 0
}

@test "spread: 100 agents with the same interval get offsets spread over it" {
	for i in $(seq 100); do
		mk "agent$i" 'heart: { schedule: { interval: 30m } }' > /dev/null
	done
	run heart-wake --explain "$BATS_TEST_TMPDIR"/agent*.yaml
	assert_success
	offs=$(echo "$output" | jq -r 'select(.chamber == "schedule") | .offset')
	[ "$(echo "$offs" | wc -l)" -eq 100 ]
	[ "$(echo "$offs" | sort -un | wc -l)" -ge 95 ]
	# every tenth of the interval holds some agent, none holds a third
	for b in $(seq 0 9); do
		n=$(echo "$offs" | awk -v b=$b '$1 >= b * 180 && $1 < (b + 1) * 180' | wc -l)
		[ "$n" -ge 2 ] && [ "$n" -le 33 ]
	done
}

@test "a new fleet's first wakes wait for each agent's slot" {
	s=$(mk scout 'heart: { schedule: { interval: 30m } }')
	off=$(heart-wake --explain --soul "$s" | jq -r 'select(.chamber == "schedule") | .offset')
	base=$(date -u -d '2026-11-22 12:00:00' +%s)
	slot=$(( base - base % 1800 + off ))
	[ "$slot" -gt "$base" ] || slot=$((slot + 1800))
	run at_epoch "$base" heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = not_due ]
	[ "$(field next)" = "$(date -u -d "@$slot" +%FT%TZ)" ]
	run at_epoch $((slot - 1)) heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = not_due ]
	run at_epoch "$slot" heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = idle ]
}

@test "idle: not_idle while the user is active, then exactly one idle wake per quiet stretch" {
	s=$(mk scout 'heart: { schedule: { daily_cap: 0 }, idle: { after: 2h } }')
	t0=$(date -u -d '2026-11-22 08:00:00' +%s)
	at_epoch "$t0" heart-wake --touch scout
	touch -d "@$t0" "$HEART_STATE_DIR/agents/scout/input"
	run at_epoch $((t0 + 3600)) heart-wake --soul "$s" --chamber idle
	[ "$(field status)" = not_idle ]
	assert_output --partial 'the user was active 1h ago'
	run at_epoch $((t0 + 7200)) heart-wake --soul "$s" --chamber idle
	[ "$(field status)" = idle ]
	run at_epoch $((t0 + 7260)) heart-wake --soul "$s" --chamber idle
	[ "$(field status)" = not_due ]
	assert_output --partial 'already woke in this quiet stretch'
	run llm_count
	assert_output 1
	touch -d "@$((t0 + 7300))" "$HEART_STATE_DIR/agents/scout/input"
	run at_epoch $((t0 + 7400)) heart-wake --soul "$s" --chamber idle
	[ "$(field status)" = not_idle ]
}

@test "auto wakes the idle chamber when the schedule is not due" {
	s=$(mk scout 'heart: { idle: { after: 1h } }')
	t0=$(date -u -d '2026-11-22 08:00:00' +%s)
	run at_epoch "$t0" heart-wake --soul "$s"
	[ "$(field status)" = not_due ]
	assert_output --partial 'idle: no user input yet, quiet for 0s since heart first saw the agent'
	run at_epoch $((t0 + 3601)) heart-wake --soul "$s" --chamber idle
	[ "$(field chamber)" = idle ]
	[ "$(field status)" = idle ]
}

@test "quiet hours that wrap midnight hold the wake, and say until when" {
	s=$(mk night 'heart:
  timezone: Europe/Paris
  schedule: { interval: 10m, active_hours: "22:00-06:00" }')
	run at "2026-11-22 12:00:00 UTC" heart-wake --soul "$s" --chamber schedule --force
	[ "$(field status)" = idle ]
	rm -rf "$HEART_STATE_DIR"
	run at "2026-11-22 12:00:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = not_due ]
	run at "2026-11-22 13:00:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = quiet ]
	assert_output --partial 'outside active hours 22:00-06:00 Europe/Paris; next at 2026-11-22T22:00:00+01:00'
	run at "2026-11-22 23:30:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = idle ]
	run at "2026-11-23 04:50:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = idle ]
	run at "2026-11-23 05:10:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = quiet ]
	run llm_count
	assert_output 3
}

@test "a checklist with no open item is empty and costs no request; open items reach the prompt" {
	printf '# Heartbeat\n\n<!-- nothing\n- [ ] hidden -->\n- [x] done\n  * [X] done too\n' > "$BATS_TEST_TMPDIR/HEARTBEAT.md"
	s=$(mk scout 'heart: { schedule: { checklist: HEARTBEAT.md } }')
	run heart-wake --soul "$s" --force --chamber schedule
	[ "$(field status)" = empty ]
	assert_output --partial 'has no open item'
	run llm_count
	assert_output 0
	printf -- '- [ ] check the flight to Lyon\n' >> "$BATS_TEST_TMPDIR/HEARTBEAT.md"
	run heart-wake --soul "$s" --force --chamber schedule
	[ "$(field status)" = idle ]
	llm_last | jq -e '.messages[-1].content | test("Open items of your checklist:\n- \\[ \\] check the flight to Lyon")'
	llm_last | jq -e '[.messages[-1].content | test("hidden|done")] == [false]'
}

@test "a missing checklist warns once and the prompt goes alone" {
	s=$(mk scout 'heart: { schedule: { interval: 1m, checklist: NOPE.md } }')
	run heart-wake --soul "$s" --force
	[ "$(echo "$output" | tail -1 | jq -r .status)" = idle ]
	assert_output --partial 'warning: '
	assert_output --partial 'NOPE.md: No such file or directory'
	run heart-wake --soul "$s" --force
	refute_output --partial 'warning'
	run llm_count
	assert_output 2
}

@test "capped: a spent cap costs no request, and --force never passes it" {
	s=$(mk scout 'heart: { schedule: { daily_cap: 2 } }')
	heart-cap take --soul "$s"
	heart-cap take --soul "$s"
	run heart-wake --soul "$s" --force
	assert_success
	[ "$(field status)" = capped ]
	assert_output --partial 'daily cap reached: 2 of 2 today; resets at'
	run llm_count
	assert_output 0
}

@test "a chamber with daily_cap 0 is off; another agent's settings are untouched" {
	off=$(mk off 'heart: { schedule: { daily_cap: 0 }, idle: { daily_cap: 0 } }')
	on=$(mk on '')
	run heart-wake --soul "$off" --soul "$on" --force
	assert_success
	[ "$(echo "${lines[0]}" | jq -r .status)" = capped ]
	assert_line --index 0 --partial 'the chamber is off (daily_cap: 0)'
	[ "$(echo "${lines[1]}" | jq -r .status)" = idle ]
	run llm_count
	assert_output 1
}

@test "the pipeline: heart-wake | heart-ghost keeps real answers and leaves no trace of idle ones" {
	s=$(mk scout 'heart: { schedule: { prompt: "Anything?" } }')
	llm_script '{"replies":[{"text":"[IDLE]"},{"text":"ALERT: the strike starts at 6."},{"text":"[IDLE]"}]}'
	for i in 1 2 3; do
		heart-wake --soul "$s" --force --chamber schedule | heart-ghost --text
	done > "$BATS_TEST_TMPDIR/delivered"
	run cat "$BATS_TEST_TMPDIR/delivered"
	assert_output "ALERT: the strike starts at 6."
	run jq -c '[.role, .content[0:9]]' "$HEART_STATE_DIR/agents/scout/history.jsonl"
	assert_output "$(printf '%s\n%s' '["user","Anything?"]' '["assistant","ALERT: th"]')"
	run jq .ghosts "$HEART_STATE_DIR/agents/scout/cap.json"
	assert_output 2
}

@test "every status heart-wake prints is in heart-wake(1), heart-ghost(1) and the table, and heart-ghost takes each; a dry run leaves no trace" {
	cd "$BATS_TEST_TMPDIR"
	out=$BATS_TEST_TMPDIR/all
	# ok, idle, dry_run, not_due, error
	s=$(mk scout '')
	llm_script '{"replies":[{"text":"ALERT: the strike starts at 6."},{"text":"[IDLE]"}]}'
	heart-wake --soul "$s" --force > "$out"
	heart-wake --soul "$s" --force >> "$out"
	# (another agent: scout's answer waits for heart-ghost in its
	# outbox, and any line of scout's would deliver it)
	run --separate-stderr bash -c 'heart-wake --soul "$1" --force --dry-run | tee -a "$2" | heart-ghost' _ "$(mk dry '')" "$out"
	assert_success
	assert_output ""
	[ -z "$stderr" ]
	heart-wake --soul "$s" --chamber schedule >> "$out"
	# not_idle, quiet, empty, busy, capped, open
	heart-wake --touch user
	heart-wake --soul "$(mk user '')" --chamber idle >> "$out"
	night=$(mk night 'heart: { schedule: { interval: 10m, active_hours: "22:00-06:00" } }')
	at "2026-11-22 12:00:00 UTC" heart-wake --soul "$night" --chamber schedule > /dev/null
	at "2026-11-22 13:00:00 UTC" heart-wake --soul "$night" --chamber schedule >> "$out"
	printf -- '- [x] done\n' > HEARTBEAT.md
	heart-wake --soul "$(mk list 'heart: { schedule: { checklist: HEARTBEAT.md } }')" --force --chamber schedule >> "$out"
	b=$(mk busy '')
	mkdir -p "$HEART_STATE_DIR/agents/busy"
	flock "$HEART_STATE_DIR/agents/busy/wake.lock" heart-wake --soul "$b" --force >> "$out"
	heart-wake --soul "$(mk off 'heart: { schedule: { daily_cap: 0 } }')" --force --chamber schedule >> "$out"
	o=$(mk broken '')
	for i in 1 2 3; do heart-breaker record --soul "$o" llm-fail > /dev/null; done
	heart-wake --soul "$o" --force >> "$out"
	# tool_cap, error
	printf 'name: tooly\nheart: { schedule: { seed_tool_cap: 1 } }\ntools:\n  - name: look\n    description: Look.\n    parameters: { type: object }\n    command: [cat]\n' > tooly.yaml
	llm_script '{"replies":[{"tool_calls":[{"name":"look","arguments":{}}]}]}'
	heart-wake --soul tooly.yaml --force >> "$out" 2> /dev/null || true
	llm_script '{"replies":[{"status":500}]}'
	heart-wake --soul "$s" --force >> "$out" 2> /dev/null || true
	# the statuses printed are those of the table, and of both pages
	printed=$(jq -r .status "$out" | sort)
	table=$(sed -n 's/.*\[ST_[A-Z_]*\] = { "\([a-z_]*\)".*/\1/p' "$T/../lib/status.c" | sort)
	wake1=$(sed -n '/^\.Sh THE WAKE RESULT/,/^\.Sh /p' "$T/../man/heart-wake.1" |
	    sed -n 's/^\.It Cm \([a-z_]*\)$/\1/p' | sort)
	ghost1=$(sed -n '/^\.Sh DESCRIPTION/,/^\.Ss /p' "$T/../man/heart-ghost.1" |
	    sed -n 's/^\.It Cm //p' | tr -d ' ' | tr ',' '\n' | sort)
	[ "$(echo "$printed" | wc -l)" -eq 12 ]
	diff <(echo "$table") <(echo "$printed")
	diff <(echo "$table") <(echo "$wake1")
	diff <(echo "$table") <(echo "$ghost1")
	# heart-ghost takes every one: the real answer is kept and printed,
	# nothing else; the exit status is the worst wake's (75)
	run --separate-stderr heart-ghost --text "$out"
	assert_failure 75
	assert_output "ALERT: the strike starts at 6."
	[ -z "$stderr" ]
	[ "$(ls "$HEART_STATE_DIR"/agents/*/history.jsonl)" = "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
	[ "$(jq -r 'select(.part == .parts) | .content' "$HEART_STATE_DIR/agents/scout/history.jsonl")" = "ALERT: the strike starts at 6." ]
}

@test "auto: an agent whose schedule is off reports its idle chamber's skip" {
	s=$(mk explorer 'heart: { schedule: { daily_cap: 0 }, idle: { after: 2h } }')
	run heart-wake --soul "$s"
	assert_success
	[ "$(field chamber)" = idle ]
	[ "$(field status)" = not_idle ]
	assert_output --partial 'the chamber is off (daily_cap: 0); idle: no user input yet'
	run heart-wake --soul "$s" --chamber schedule
	[ "$(field status)" = capped ]
}
