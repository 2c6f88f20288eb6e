#!/usr/bin/env bats
# heart-wake: the schedule and idle chambers, gated to zero cost.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	model_setup
}

teardown() {
	model_teardown
}

# cron_day START ARGS...: heart-wake ARGS as cron runs it, a second
# into every minute of the day from START, its lines in results.jsonl
# and the runs counted in $runs.  Only the minutes where some agent may
# be due are run: the first at or after the `next' that a not_due, ok
# or idle result names, and the minute after any other.  The minutes
# skipped would all be not_due, which changes nothing (a test below
# shows that `next' is the first second a chamber is due).
cron_day() {
	local t=$(($1 + 1)) end=$(($1 + 86400)) next n line
	shift
	runs=0
	: > "$BATS_TEST_TMPDIR/results.jsonl"
	while [ "$t" -lt "$end" ]; do
		at_epoch "$t" heart-wake "$@" > "$BATS_TEST_TMPDIR/run.jsonl"
		runs=$((runs + 1))
		next=$end
		while IFS= read -r line; do
			printf '%s\n' "$line" >> "$BATS_TEST_TMPDIR/results.jsonl"
			n=$((t + 60))
			if [[ $line =~ \"status\":\"(not_due|ok|idle)\" &&
			    $line =~ \"next\":\"([-0-9T:]+Z)\" ]]; then
				epoch_of n "${BASH_REMATCH[1]}"
				n=$((n <= t ? t + 60 : t + (n - t + 59) / 60 * 60))
			fi
			if ((n < next)); then next=$n; fi
		done < "$BATS_TEST_TMPDIR/run.jsonl"
		t=$next
	done
}

@test "the paper's travel_rescue day: 5m with no cap sends 48 requests, not 288; 30m cap 48 sends exactly 48" {
	plain_long
	llm_script '{"idle_ratio": 0.9, "seed": 7}'
	storm=$(soul_file storm.yaml "$(cat "$FIX/paper/s7.2-storm.yaml")")
	fixed=$(soul_file travel_rescue.yaml "$(cat "$FIX/paper/s7.2-fixed.yaml")")
	start=$(date -u -d '2026-11-22 00:00:00' +%s)
	cron_day "$start" --chamber schedule --soul "$storm" --soul "$fixed"
	r=$BATS_TEST_TMPDIR/results.jsonl
	run jq -s '[.[] | select(.agent == "storm" and (.status == "ok" or .status == "idle"))] | length' "$r"
	assert_output 48
	# the storm config is due every 5 minutes; once its 48 are spent,
	# its next admitted wake is tomorrow, so cron_day only runs it
	# when travel_rescue is due, and each such run is refused by the
	# cap, without a request
	[ "$(jq -s '[.[] | select(.agent == "storm" and .status == "capped")] | length' "$r")" -ge 20 ]
	jq -s -e '[.[] | select(.agent == "storm")] | (map(.status == "ok" or .status == "idle") | rindex(true)) < (map(.status == "capped") | index(true))' "$r"
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
	# every run printed a line for each agent
	run jq -s 'length' "$r"
	assert_output $((2 * runs))
}

@test "-j is --jobs, as heart-wake(1) says" {
	d=$BATS_TEST_TMPDIR/souls
	mkdir "$d"
	printf 'name: scout\nheart: {}\n' > "$d/scout.yaml"
	run -0 heart-wake -j 2 --souls "$d" --explain
	run -0 heart-wake -j 2 --souls "$d"
	[ "$(echo "$output" | jq -r .agent)" = scout ]
	run -64 --separate-stderr heart-wake -j 0 --souls "$d"
	[ "$stderr" = "heart-wake: --jobs: a number from 1 to 1024" ]
}

@test "a due wake sends one request and prints one result line; the next minute is not_due and sends none" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m, prompt: "Any news?" } }')
	llm_script '{"replies":[{"text":"Big news: a release."}]}'
	run heart-wake --soul "$s" --force
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[ "$(output_field status)" = ok ]
	[ "$(output_field response)" = "Big news: a release." ]
	echo "$output" | jq -e '.v == 1 and .agent == "scout" and .chamber == "schedule" and (.wake_id | length > 8) and (.at | test("Z$")) and .cap.used == 1 and .cap.cap == 48 and .breaker == "closed" and .tools == {"calls":0,"failed":0} and .error == null and .usage.prompt_tokens > 0 and (.messages | length == 2) and .messages[0].role == "user" and .messages[1].content == "Big news: a release."'
	run heart-wake --soul "$s"
	assert_success
	[ "$(output_field status)" = not_due ]
	assert_output --partial 'schedule: not due: last wake'
	run llm_count
	assert_output 1
}

@test "a wake syncs its take and its claim before the request, once, and nothing after; the soul cache never" {
	file_only
	d=$BATS_TEST_TMPDIR/souls
	mkdir "$d"
	printf 'name: scout\nheart: { schedule: { interval: 30m } }\n' > "$d/scout.yaml"
	llm_script '{"replies":[{"text":"[IDLE]"},{"text":"[IDLE]"}]}'
	# LeakSanitizer cannot run under ptrace; other tests look for leaks
	syncs() {
		ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 strace -qq -y \
		    -o "$BATS_TEST_TMPDIR/sys" -e trace=fsync,fdatasync,sendto \
		    heart-wake --souls "$d" "$@" > /dev/null
		sed -nE -e 's/^(fdatasync|fsync)\([0-9]+<.*\/(agents|rounds)\/(.*)>\).*/\1 \2\/\3/p' \
		    -e 's/^sendto\(.*POST .*/request/p' "$BATS_TEST_TMPDIR/sys"
	}
	# the first round writes the soul cache, unsynced, and not_due
	run syncs
	[ -s "$HEART_STATE_DIR"/rounds/*.jsonl ]
	refute_output --partial rounds/
	syncs --force > /dev/null	# the agent's first wake makes its files
	run syncs --force		# and this is every day's
	assert_output "$(printf '%s\n' 'fdatasync agents/scout/.cap.json.tmp' \
	    'fdatasync agents/scout/.wake.json.tmp' 'fsync agents/scout' \
	    request 'fdatasync agents/scout/.cap.json.tmp' \
	    'fdatasync agents/scout/.wake.json.tmp')"
	jq -e '.total == 2 and .tokens.prompt > 0' "$HEART_STATE_DIR/agents/scout/cap.json"
	jq -e '.last.schedule.status == "idle" and .running == null' "$HEART_STATE_DIR/agents/scout/wake.json"
}

@test "an agent's documents are swapped with their version before: no new inode after their first write" {
	file_only
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m } }')
	llm_script '{"replies":[{"text":"[IDLE]"},{"text":"[IDLE]"},{"text":"[IDLE]"}]}'
	a=$HEART_STATE_DIR/agents/scout
	inodes() { stat -c %i "$a/cap.json" "$a/.cap.json.tmp" "$a/wake.json" "$a/.wake.json.tmp" | sort; }
	heart-wake --soul "$s" --force > /dev/null
	heart-wake --soul "$s" --force > /dev/null
	before=$(inodes)
	heart-wake --soul "$s" --force > /dev/null
	[ "$(inodes)" = "$before" ]
	# the version before the record: the take's, its tokens not yet in
	jq -e '.total == 3 and .tokens.prompt > 0' "$a/cap.json"
	jq -e --slurpfile c "$a/cap.json" '.total == 3 and .tokens.prompt < $c[0].tokens.prompt' "$a/.cap.json.tmp"
	jq -e '.running == null and .last.schedule.status == "idle"' "$a/wake.json"
	jq -e '.running.chamber == "schedule"' "$a/.wake.json.tmp"
}

@test "a torn wake.json is read from the version before it, and the wake goes on" {
	file_only
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m } }')
	llm_script '{"replies":[{"text":"[IDLE]"},{"text":"[IDLE]"},{"text":"[IDLE]"}]}'
	a=$HEART_STATE_DIR/agents/scout
	heart-wake --soul "$s" --force > /dev/null
	heart-wake --soul "$s" --force > /dev/null
	# torn as a power cut can leave it: the release written over the
	# claim's partner in place before the claim's swap was on the disk
	head -c 40 "$a/wake.json" > "$a/torn" && cat "$a/torn" > "$a/wake.json"
	run heart-wake --soul "$s" --force
	assert_success
	assert_output --regexp "^heart-wake: warning: .*/agents/scout/wake.json: not valid JSON at line 1: .*; read .*/agents/scout/.wake.json.tmp, the version before it"
	[ "$(echo "$output" | grep -v '^heart-wake:' | jq -r .status)" = idle ]
	jq -e '.running == null and .last.schedule.status == "idle"' "$a/wake.json"
}

@test "a state file that is a FIFO or a directory fails the wake at once with 74, named, and nothing is sent" {
	file_only
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m } }')
	a=$HEART_STATE_DIR/agents/scout
	heart-wake --soul "$s" --force > /dev/null
	rm "$a/wake.json" && mkfifo "$a/wake.json"
	run timeout $((10 * PATIENCE)) heart-wake --soul "$s" --force
	assert_failure 74
	assert_output --partial "agents/scout/wake.json: not a regular file; remove it by hand"
	rm "$a/wake.json" "$a/cap.json" && mkdir "$a/cap.json"
	run heart-wake --soul "$s" --force
	assert_failure 74
	assert_output --partial "agents/scout/cap.json: not a regular file; remove it by hand"
	# the temporary file beside it is the one named when it is in the way
	rmdir "$a/cap.json" && rm -f "$a/.cap.json.tmp" && mkdir "$a/.cap.json.tmp"
	run heart-wake --soul "$s" --force
	assert_failure 74
	assert_output --partial "agents/scout/.cap.json.tmp: cannot write: Is a directory"
	run llm_count
	assert_output 1
}

@test "busy: a held wake lock skips the wake at once and sends nothing" {
	s=$(soul_file scout.yaml 'heart: {}')
	mkdir -p "$HEART_STATE_DIR/agents/scout"
	hold_lock "$HEART_STATE_DIR/agents/scout/wake.lock"
	run heart-wake --soul "$s" --force
	assert_success
	[ "$(output_field status)" = busy ]
	assert_output --partial 'a wake of this agent is running'
	release_lock
	run llm_count
	assert_output 0
}

@test "spread: 100 agents with the same interval get offsets spread over it" {
	for i in $(seq 100); do
		soul_file "agent$i.yaml" 'heart: { schedule: { interval: 30m } }' > /dev/null
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
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m } }')
	off=$(heart-wake --explain --soul "$s" | jq -r 'select(.chamber == "schedule") | .offset')
	base=$(date -u -d '2026-11-22 12:00:00' +%s)
	slot=$(( base - base % 1800 + off ))
	[ "$slot" -gt "$base" ] || slot=$((slot + 1800))
	run -0 at_epoch "$base" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = not_due ]
	[ "$(output_field next)" = "$(date -u -d "@$slot" +%FT%TZ)" ]
	run -0 at_epoch $((slot - 1)) heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = not_due ]
	run -0 at_epoch "$slot" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = idle ]
}

@test "idle: not_idle while the user is active, then exactly one idle wake per quiet stretch" {
	s=$(soul_file scout.yaml 'heart: { schedule: { daily_cap: 0 }, idle: { after: 2h } }')
	t0=$(date -u -d '2026-11-22 08:00:00' +%s)
	at_epoch "$t0" heart-wake --touch scout --soul "$s"
	touch -d "@$t0" "$HEART_STATE_DIR/agents/scout/input"
	run -0 at_epoch $((t0 + 3600)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = not_idle ]
	assert_output --partial 'the user was active 1h ago'
	run -0 at_epoch $((t0 + 7200)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = idle ]
	run -0 at_epoch $((t0 + 7260)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = not_due ]
	assert_output --partial 'already woke in this quiet stretch'
	run llm_count
	assert_output 1
	touch -d "@$((t0 + 7300))" "$HEART_STATE_DIR/agents/scout/input"
	run -0 at_epoch $((t0 + 7400)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = not_idle ]
}

@test "--touch of an agent heart has never seen says so and starts no agent; with its soul it records the input" {
	s=$(soul_file scout.yaml 'heart: {}')
	run heart-wake --touch scuot
	assert_failure 64
	assert_output "heart-wake: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)"
	[ ! -e "$HEART_STATE_DIR/agents/scuot" ]
	run heart-wake --touch scuot --soul "$s"
	assert_failure 64
	assert_output "heart-wake: the AGENT operand and the soul's name differ"
	run heart-wake --touch scout --soul "$s"
	assert_success
	[ -e "$HEART_STATE_DIR/agents/scout/input" ]
	run heart-wake --touch scout
	assert_success
	# an agent heart has woken is known
	run -0 heart-wake --soul "$(soul_file woken.yaml 'heart: {}')"
	run heart-wake --touch woken
	assert_success
}

@test "auto wakes the idle chamber when the schedule is not due" {
	s=$(soul_file scout.yaml 'heart: { idle: { after: 1h } }')
	t0=$(date -u -d '2026-11-22 08:00:00' +%s)
	run -0 at_epoch "$t0" heart-wake --soul "$s"
	[ "$(output_field status)" = not_due ]
	assert_output --partial 'idle: no user input yet, quiet for 0s since heart first saw the agent'
	run -0 at_epoch $((t0 + 3601)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field chamber)" = idle ]
	[ "$(output_field status)" = idle ]
}

@test "quiet hours that wrap midnight hold the wake, and say until when" {
	s=$(soul_file night.yaml 'heart:
  timezone: Europe/Paris
  schedule: { interval: 10m, active_hours: "22:00-06:00" }')
	run -0 at "2026-11-22 12:00:00 UTC" heart-wake --soul "$s" --chamber schedule --force
	[ "$(output_field status)" = idle ]
	rm -rf "$HEART_STATE_DIR"
	run -0 at "2026-11-22 12:00:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = not_due ]
	run -0 at "2026-11-22 13:00:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = quiet ]
	assert_output --partial 'outside active hours 22:00-06:00 Europe/Paris; next at 2026-11-22T21:00:00Z'
	run -0 at "2026-11-22 23:30:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = idle ]
	run -0 at "2026-11-23 04:50:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = idle ]
	run -0 at "2026-11-23 05:10:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = quiet ]
	run llm_count
	assert_output 3
}

@test "a checklist with no open item is empty and costs no request; open items reach the prompt" {
	printf '# Heartbeat\n\n<!-- nothing\n- [ ] hidden -->\n- [x] done\n  * [X] done too\n' > "$BATS_TEST_TMPDIR/HEARTBEAT.md"
	s=$(soul_file scout.yaml 'heart: { schedule: { checklist: HEARTBEAT.md } }')
	run -0 heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = empty ]
	assert_output --partial 'has no open item'
	run llm_count
	assert_output 0
	printf -- '- [ ] check the flight to Lyon\n' >> "$BATS_TEST_TMPDIR/HEARTBEAT.md"
	run -0 heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = idle ]
	llm_last | jq -e '.messages[-1].content | test("Open items of your checklist:\n- \\[ \\] check the flight to Lyon")'
	llm_last | jq -e '[.messages[-1].content | test("hidden|done")] == [false]'
}

@test "a missing checklist warns once and the prompt goes alone" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 1m, checklist: NOPE.md } }')
	run -0 heart-wake --soul "$s" --force
	[ "$(echo "$output" | tail -1 | jq -r .status)" = idle ]
	assert_output --partial 'warning: '
	assert_output --partial 'NOPE.md: No such file or directory'
	run -0 heart-wake --soul "$s" --force
	refute_output --partial 'warning'
	run llm_count
	assert_output 2
}

@test "a checklist that is a FIFO or a directory is none: the wake warns and goes on, never waiting for a writer" {
	mkfifo "$BATS_TEST_TMPDIR/FIFO.md"
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 1m, checklist: FIFO.md } }')
	run -0 timeout $((10 * PATIENCE)) heart-wake --soul "$s" --force
	[ "$(echo "$output" | tail -1 | jq -r .status)" = idle ]
	assert_output --partial 'FIFO.md: not a regular file; going on with the prompt alone'
	state_clear
	mkdir "$BATS_TEST_TMPDIR/DIR.md"
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 1m, checklist: DIR.md } }')
	run -0 heart-wake --soul "$s" --force
	[ "$(echo "$output" | tail -1 | jq -r .status)" = idle ]
	assert_output --partial 'DIR.md: not a regular file'
	run llm_count
	assert_output 2
}

@test "capped: a spent cap costs no request, and --force never passes it" {
	s=$(soul_file scout.yaml 'heart: { schedule: { daily_cap: 2 } }')
	heart-cap take --soul "$s"
	heart-cap take --soul "$s"
	run heart-wake --soul "$s" --force
	assert_success
	[ "$(output_field status)" = capped ]
	assert_output --partial 'daily cap reached: 2 of 2 today; resets at'
	run llm_count
	assert_output 0
}

@test "capped by the agent-wide daily_cap: the reason names the agent's cap, not the chamber's, in the result and in --explain" {
	s=$(soul_file scout.yaml 'heart: { daily_cap: 2, schedule: { daily_cap: 48 } }')
	heart-cap take --soul "$s"
	heart-cap take --soul "$s" --chamber idle
	run -0 heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = capped ]
	[[ $(output_field reason) == "agent: daily cap reached: 2 of 2 today, every chamber's wakes together (heart.daily_cap; the schedule chamber's own is 48); resets at "* ]]
	run -0 heart-wake --soul "$s" --explain
	echo "$output" | jq -se '.[0].gates.cap.reason | startswith("agent: daily cap reached: 2 of 2 today")'
	echo "$output" | jq -se '.[1].gates.cap.reason | test("the idle chamber.s own is 12\\)")'
	# a chamber's own cap reached first is the chamber's
	s=$(soul_file other.yaml 'heart: { daily_cap: 5, schedule: { daily_cap: 1 } }')
	heart-cap take --soul "$s"
	run -0 heart-wake --soul "$s" --force --chamber schedule
	[[ $(output_field reason) == "schedule: daily cap reached: 1 of 1 today; resets at "* ]]
	run llm_count
	assert_output 0
}

@test "a chamber with daily_cap 0 is off; another agent's settings are untouched" {
	off=$(soul_file off.yaml 'heart: { schedule: { daily_cap: 0 }, idle: { daily_cap: 0 } }')
	on=$(soul_file on.yaml 'heart: {}')
	run heart-wake --soul "$off" --soul "$on" --force
	assert_success
	[ "$(echo "${lines[0]}" | jq -r .status)" = capped ]
	assert_line --index 0 --partial 'the chamber is off (daily_cap: 0)'
	[ "$(echo "${lines[1]}" | jq -r .status)" = idle ]
	run llm_count
	assert_output 1
}

@test "the pipeline: heart-wake | heart-ghost keeps real answers and leaves no trace of idle ones" {
	s=$(soul_file scout.yaml 'heart: { schedule: { prompt: "Anything?" } }')
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

@test "a damaged line of the history: the wake names the file, the line and heart-ghost --repair, which sets it aside, kept, and the agent wakes again" {
	s=$(soul_file scout.yaml 'heart: { schedule: { prompt: "Anything?" } }')
	llm_script '{"replies":[{"text":"ALERT: one."},{"text":"ALERT: two."},{"text":"ALERT: three."}]}'
	for i in 1 2; do
		heart-wake --soul "$s" --force | heart-ghost > /dev/null
	done
	d=$HEART_STATE_DIR/agents/scout
	# the first wake's answer cut short in the middle of the file
	sed -i '2s/ALERT: one.*/ALERT: o/' "$d/history.jsonl"
	cp "$d/history.jsonl" "$BATS_TEST_TMPDIR/damaged"
	first=$(head -c "$(head -2 "$d/history.jsonl" | wc -c)" "$d/history.jsonl")
	at=$(($(head -1 "$d/history.jsonl" | wc -c) + 1))
	for i in 1 2; do	# every wake, until the repair
		run --separate-stderr heart-wake --soul "$s" --force
		assert_failure 74
		[ "$stderr" = "heart-wake: scout: $d/history.jsonl: damaged at line 2 (byte $at): a line that is not a JSON object; heart-ghost --repair scout sets it aside (heart-ghost(1))" ]
	done
	[ "$(llm_count)" -eq 2 ]
	run -0 heart-ghost --repair scout
	assert_output "scout: history.jsonl line 1 (2 lines from byte 1): a wake cut short: set aside in $d/history.damaged"
	# kept whole, after a line that says where it was
	[ "$(sed -n 2,3p "$d/history.damaged")" = "$first" ]
	sed -n 1p "$d/history.damaged" | grep -Eq '^# heart-ghost --repair, [0-9T:-]{19}Z: history.jsonl line 1 \(2 lines, bytes 1-[0-9]+\): a wake cut short$'
	[ "$(cat "$d/history.jsonl")" = "$(tail -n 2 "$BATS_TEST_TMPDIR/damaged")" ]
	run -0 heart-ghost --repair scout
	assert_output "scout: nothing damaged in its history"
	# the agent goes on, its history the wakes that were whole
	run -0 bash -c 'heart-wake --soul "$1" --force | heart-ghost --text' _ "$s"
	assert_output "ALERT: three."
	run jq -r 'select(.role == "assistant") | .content' "$d/history.jsonl"
	assert_output $'ALERT: two.\nALERT: three.'
	run heart-ghost --repair scuot
	assert_failure 64
}

@test "every status heart-wake prints is in heart-wake(1), heart-ghost(1) and the table, and heart-ghost takes each; a dry run leaves no trace" {
	cd "$BATS_TEST_TMPDIR"
	out=$BATS_TEST_TMPDIR/all
	# ok, idle, dry_run, not_due, error
	s=$(soul_file scout.yaml 'heart: {}')
	llm_script '{"replies":[{"text":"ALERT: the strike starts at 6."},{"text":"[IDLE]"}]}'
	heart-wake --soul "$s" --force > "$out"
	heart-wake --soul "$s" --force >> "$out"
	# (another agent: scout's answer waits for heart-ghost in its
	# outbox, and any line of scout's would deliver it)
	run --separate-stderr bash -c 'heart-wake --soul "$1" --force --dry-run | tee -a "$2" | heart-ghost' _ "$(soul_file dry.yaml 'heart: {}')" "$out"
	assert_success
	assert_output ""
	[ -z "$stderr" ]
	heart-wake --soul "$s" --chamber schedule >> "$out"
	# not_idle, quiet, empty, busy, capped, open
	u=$(soul_file user.yaml 'heart: {}')
	heart-wake --touch user --soul "$u"
	heart-wake --soul "$u" --chamber idle >> "$out"
	night=$(soul_file night.yaml 'heart: { schedule: { interval: 10m, active_hours: "22:00-06:00" } }')
	at "2026-11-22 12:00:00 UTC" heart-wake --soul "$night" --chamber schedule > /dev/null
	at "2026-11-22 13:00:00 UTC" heart-wake --soul "$night" --chamber schedule >> "$out"
	printf -- '- [x] done\n' > HEARTBEAT.md
	heart-wake --soul "$(soul_file list.yaml 'heart: { schedule: { checklist: HEARTBEAT.md } }')" --force --chamber schedule >> "$out"
	b=$(soul_file busy.yaml 'heart: {}')
	mkdir -p "$HEART_STATE_DIR/agents/busy"
	flock "$HEART_STATE_DIR/agents/busy/wake.lock" heart-wake --soul "$b" --force >> "$out"
	heart-wake --soul "$(soul_file off.yaml 'heart: { schedule: { daily_cap: 0 } }')" --force --chamber schedule >> "$out"
	heart-wake --soul "$(soul_file gated.yaml 'heart: { schedule: { gate: ["false"] } }')" --force --chamber schedule >> "$out"
	o=$(soul_file broken.yaml 'heart: {}')
	for i in 1 2 3; do heart-breaker record --soul "$o" llm-fail > /dev/null; done
	heart-wake --soul "$o" --force >> "$out"
	# throttled: the fleet's rate limit, one request a minute
	printf 'endpoints:\n  double:\n    model: double\n    requests_per_minute: 1\n' \
	    > "$BATS_TEST_TMPDIR/fleet.yaml"
	r=$(soul_file rated.yaml 'heart: {}')
	HEART_FLEET=$BATS_TEST_TMPDIR/fleet.yaml heart-wake --soul "$r" --force > /dev/null
	HEART_FLEET=$BATS_TEST_TMPDIR/fleet.yaml heart-wake --soul "$r" --force >> "$out"
	# paused: an operator's stop (heart-cap pause)
	p=$(soul_file held.yaml 'heart: {}')
	heart-cap pause --soul "$p"
	heart-wake --soul "$p" --force >> "$out"
	# dormant, dormant_notice: nobody has spoken to it for
	# heart.dormant_after, and its first dormant wake tells it
	d=$(soul_file quiet.yaml 'heart: { dormant_after: 1d }')
	heart-wake --touch quiet --soul "$d"
	at "2 days" heart-wake --soul "$d" --force >> "$out"
	# missed: a catch-up later than schedule.catch_up
	m=$(soul_file late.yaml 'heart: { schedule: { catch_up: false } }')
	at "2026-11-22 12:00:00 UTC" heart-wake --soul "$m" --chamber schedule > /dev/null
	epoch_of n "$(explain_schedule "$(date -u -d '2026-11-22 12:00:00' +%s)" "$m" | jq -r .next)"
	at_epoch $((n + 5 * 60)) heart-wake --soul "$m" --chamber schedule >> "$out"
	# held: a 402 to one agent holds the others on its account
	llm_script '{"replies":[{"status":402}]}'
	heart-wake --soul "$(soul_file payer.yaml 'heart: {}')" --force > /dev/null 2>&1 || true
	heart-wake --soul "$(soul_file payee.yaml 'heart: {}')" --force >> "$out"
	hold_clear
	# tool_cap, error
	printf 'name: tooly\nheart: { schedule: { seed_tool_cap: 1 } }\ntools:\n  - name: look\n    description: Look.\n    parameters: { type: object }\n    command: [cat]\n' > tooly.yaml
	llm_script '{"replies":[{"tool_calls":[{"name":"look","arguments":{}}]}]}'
	heart-wake --soul tooly.yaml --force >> "$out" 2> /dev/null || true
	llm_script '{"replies":[{"status":500}]}'
	heart-wake --soul "$s" --force >> "$out" 2> /dev/null || true
	# breaker_open, breaker_closed: a wake opens its breaker, the
	# probe closes it (the notices kept, their wakes' error and idle
	# are above)
	f=$(soul_file flaky.yaml 'heart: { breaker: { threshold: 1, cooldown: 1m } }')
	run -75 --separate-stderr heart-wake --soul "$f" --force
	jq -c 'select(.status == "breaker_open")' <<< "$output" >> "$out"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 --separate-stderr at "2 minutes" heart-wake --soul "$f" --force
	jq -c 'select(.status == "breaker_closed")' <<< "$output" >> "$out"
	# the statuses printed are those of the table, and of both pages
	printed=$(jq -r .status "$out" | sort)
	table=$(sed -n 's/.*\[ST_[A-Z_]*\] = { "\([a-z_]*\)".*/\1/p' "$T/../lib/status.c" | sort)
	wake1=$(sed -n '/^\.Sh THE WAKE RESULT/,/^\.Sh /p' "$T/../man/heart-wake.1" |
	    sed -n 's/^\.It Cm \([a-z_]*\)$/\1/p' | sort)
	ghost1=$(sed -n '/^\.Sh DESCRIPTION/,/^\.Ss /p' "$T/../man/heart-ghost.1" |
	    sed -n 's/^\.It Cm //p' | tr -d ' ' | tr ',' '\n' | sort)
	[ "$(echo "$printed" | wc -l)" -eq 21 ]
	diff <(echo "$table") <(echo "$printed")
	diff <(echo "$table") <(echo "$wake1")
	diff <(echo "$table") <(echo "$ghost1")
	# heart-ghost takes every one: the real answer is kept and printed,
	# and the notices printed; nothing else; the exit status is the
	# worst wake's (75)
	run -75 --separate-stderr heart-ghost --text "$out"
	assert_line --index 0 "ALERT: the strike starts at 6."
	assert_line --index 1 --partial "heart: nobody has spoken to quiet since "
	assert_line --index 2 --partial "heart: flaky's model is failing (1 failure): "
	assert_line --index 3 "heart: flaky's model answers again."
	[ "${#lines[@]}" -eq 4 ]
	[ -z "$stderr" ]
	[ "$(ls "$HEART_STATE_DIR"/agents/*/history.jsonl)" = "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
	[ "$(jq -r 'select(.part == .parts) | .content' "$HEART_STATE_DIR/agents/scout/history.jsonl")" = "ALERT: the strike starts at 6." ]
}

@test "auto: an agent whose schedule is off reports its idle chamber's skip" {
	s=$(soul_file explorer.yaml 'heart: { schedule: { daily_cap: 0 }, idle: { after: 2h } }')
	run heart-wake --soul "$s"
	assert_success
	[ "$(output_field chamber)" = idle ]
	[ "$(output_field status)" = not_idle ]
	assert_output --partial 'the chamber is off (daily_cap: 0); idle: no user input yet'
	run -0 heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = capped ]
}

@test "an agent whose idle chamber is off: a skipped wake reads no history, even to foresee its next wake" {
	s=$(soul_file scout.yaml 'heart: { idle: { daily_cap: 0 } }')
	run heart-wake --soul "$s"
	assert_success
	[ "$(output_field status)" = not_due ]
	# a history held by its writer would hold up any reader of it
	exec {lk}>"$HEART_STATE_DIR/agents/scout/history.lock"
	flock -x "$lk"
	run timeout 10 heart-wake --soul "$s"
	exec {lk}>&-
	assert_success
	[ "$(output_field status)" = not_due ]
	[ "$(output_field next)" != null ]
}

# first_slot EPOCH OFFSET INTERVAL: the first slot boundary at or after
# EPOCH (offset + k * interval)
first_slot() {
	local d=$(($1 - $2))
	echo $(($1 - d % $3 + (d % $3 ? $3 : 0)))
}

@test "--explain: a chamber capped for the day is next admitted at its first slot after midnight, and heart-wake admits it there" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m, daily_cap: 2 } }')
	t0=$(date -u -d '2026-11-22 12:00:00' +%s)
	at_epoch "$t0" heart-wake --soul "$s" --force > /dev/null
	at_epoch $((t0 + 60)) heart-wake --soul "$s" --force > /dev/null
	run explain_schedule $((t0 + 120)) "$s"
	assert_success
	off=$(echo "$output" | jq .offset)
	next=$(first_slot "$(date -u -d '2026-11-23 00:00:00' +%s)" "$off" 1800)
	# every gate has its verdict; the next wake counts them all
	echo "$output" | jq -e --arg n "$(date -u -d "@$next" +%FT%TZ)" '
	    .would == "not_due" and (.reason | test("^schedule: not due: last wake")) and
	    .next == $n and ([.gates | keys_unsorted[]] == ["due", "hours", "checklist", "pause", "dormant", "hold", "catch_up", "gate", "breaker", "cap", "rate"]) and
	    .gates.pause == {"ok": true, "reason": "not paused"} and
	    .gates.dormant == {"ok": true, "reason": "not dormant"} and
	    .gates.hold == {"ok": true, "reason": "not held"} and
	    .gates.gate == {"ok": true, "reason": "no gate program"} and
	    .gates.due.ok == false and (.gates.due.until | length > 0) and
	    .gates.hours == {"ok": true, "reason": "all day (no active_hours)"} and
	    .gates.checklist == {"ok": true, "reason": "no checklist"} and
	    .gates.breaker == {"ok": true, "reason": "closed (llm 0/3, tool 0/3 failures)"} and
	    .gates.cap.ok == false and .gates.cap.until == "2026-11-23T00:00:00Z" and
	    (.gates.cap.reason | test("daily cap reached: 2 of 2 today; resets at 2026-11-23T00:00:00Z"))'
	# the human form says the same, a gate a line
	run -0 at_epoch $((t0 + 120)) script -qec "heart-wake --explain --soul $s --chamber schedule" /dev/null
	assert_line --index 0 --regexp '^scout schedule: not_due: schedule: not due: last wake'
	assert_line --index 1 --partial "  next wake: $(date -u -d "@$next" +%FT%TZ)"
	assert_line --index 2 --regexp '^  due        no  schedule: not due: '
	assert_line --index 3 --partial '  hours      yes all day (no active_hours)'
	assert_line --index 4 --partial '  checklist  yes no checklist'
	assert_line --index 5 --partial '  pause      yes not paused'
	assert_line --index 6 --partial '  dormant    yes not dormant'
	assert_line --index 7 --partial '  hold       yes not held'
	assert_line --index 8 --partial '  catch_up   yes no slot due'
	assert_line --index 9 --partial '  gate       yes no gate program'
	assert_line --index 10 --partial '  breaker    yes closed'
	assert_line --index 11 --partial '  cap        no  schedule: daily cap reached: 2 of 2 today'
	# run at every slot until then, heart-wake is refused (each slot
	# used) and says the same next wake; at that time it wakes
	for ((t = $(first_slot $((t0 + 121)) "$off" 1800); t < next; t += 1800)); do
		run -0 at_epoch "$t" heart-wake --soul "$s" --chamber schedule
		[ "$(output_field status)" = capped ]
		[ "$(output_field next)" = "$(date -u -d "@$next" +%FT%TZ)" ]
	done
	run -0 at_epoch $((next - 1)) heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = not_due ]
	run -0 at_epoch "$next" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = idle ]
	run llm_count
	assert_output 3
}

@test "--explain: outside its active hours once due, a chamber's next wake is the hours' next start, not its slot" {
	s=$(soul_file night.yaml 'heart:
  timezone: Europe/Paris
  schedule: { interval: 30m, active_hours: "09:00-17:00" }')
	off=$(explain_schedule "$(date +%s)" "$s" | jq .offset)
	# the first slot at or after 17:00 Paris, and a wake just after the
	# one before: the chamber is due only once the hours have ended
	b=$(first_slot "$(date -u -d '2026-11-23 16:00:00' +%s)" "$off" 1800)
	at_epoch $((b - 1740)) heart-wake --soul "$s" --chamber schedule --force > /dev/null
	run -0 explain_schedule $((b - 1700)) "$s"
	echo "$output" | jq -e --arg b "$(date -u -d "@$b" +%FT%TZ)" '
	    .would == "not_due" and .gates.due.until == $b and
	    .next == "2026-11-24T08:00:00Z"'
	run -0 at_epoch $((b - 1700)) heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = not_due ]
	[ "$(output_field next)" = 2026-11-24T08:00:00Z ]
	run -0 explain_schedule $((b + 600)) "$s"
	echo "$output" | jq -e '.would == "quiet" and .gates.due.ok and .gates.hours.ok == false and
	    .gates.hours.until == "2026-11-24T08:00:00Z" and .next == "2026-11-24T08:00:00Z"'
	run -0 at "2026-11-24 08:00:00 UTC" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = idle ]
}

@test "--explain: an open breaker's next wake is the first slot at or after its probe" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 10m } }')
	t0=$(date -u -d '2026-11-22 12:00:00' +%s)
	for i in 1 2 3; do
		at_epoch "$t0" heart-breaker record --soul "$s" llm-fail --reason 'HTTP 429'
	done > /dev/null
	# heart-wake runs every minute: its first sight of the agent
	at_epoch $((t0 + 60)) heart-wake --soul "$s" --chamber schedule > /dev/null
	run -0 explain_schedule $((t0 + 60)) "$s"
	off=$(echo "$output" | jq .offset)
	next=$(first_slot $((t0 + 900)) "$off" 600)
	echo "$output" | jq -e --arg n "$(date -u -d "@$next" +%FT%TZ)" '
	    .gates.breaker.ok == false and .gates.breaker.until == "2026-11-22T12:15:00Z" and
	    (.gates.breaker.reason | test("^open \\(llm trigger: HTTP 429\\); next probe at")) and
	    .gates.cap.ok and .next == $n'
	run -0 at_epoch "$next" heart-wake --soul "$s" --chamber schedule
	[ "$(output_field status)" = idle ]
}

@test "--explain --force shows what --force skips; --explain --dry-run is refused" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m, daily_cap: 1 } }')
	t0=$(date -u -d '2026-11-22 12:00:00' +%s)
	run at_epoch "$t0" heart-wake --explain --force --soul "$s"
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	echo "${lines[0]}" | jq -e '.chamber == "schedule" and .force and .would == "wake" and
	    .gates.due == {"ok": true, "reason": "skipped by --force"} and
	    .gates.hours == {"ok": true, "reason": "skipped by --force"} and
	    .next == "2026-11-22T12:00:00Z"'
	# without --force the same moment waits for the first slot; with
	# --chamber, only that chamber is explained
	run -0 at_epoch "$t0" heart-wake --explain --soul "$s" --chamber schedule
	[ "${#lines[@]}" -eq 1 ]
	echo "$output" | jq -e '.chamber == "schedule" and .would == "not_due" and .force == null and .next != "2026-11-22T12:00:00Z"'
	at_epoch "$t0" heart-wake --soul "$s" --force > /dev/null
	run -0 at_epoch $((t0 + 60)) heart-wake --explain --force --soul "$s" --chamber schedule
	echo "$output" | jq -e '.would == "capped" and .gates.cap.ok == false and .next == "2026-11-23T00:00:00Z"'
	run -0 at_epoch $((t0 + 60)) script -qec "heart-wake --explain --force --soul $s --chamber schedule" /dev/null
	assert_line --index 0 --partial 'scout schedule (--force): capped: '
	assert_line --index 2 --partial '  due        yes skipped by --force'
	run heart-wake --explain --dry-run --soul "$s"
	assert_failure 64
	assert_output "heart-wake: --explain changes nothing and sends nothing already: leave out --dry-run"
}

@test "wake.json keeps the last admitted wake; refused ones are kept apart, and the meta line never calls one the last wake" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m, daily_cap: 2 } }')
	w=$HEART_STATE_DIR/agents/scout/wake.json
	t0=$(date -u -d '2026-11-22 12:00:00' +%s)
	run -0 at_epoch "$t0" heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = idle ]
	# the breaker refuses a wake
	for i in 1 2 3; do
		at_epoch $((t0 + 60)) heart-breaker record --soul "$s" llm-fail
	done > /dev/null
	run -0 at_epoch $((t0 + 120)) heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = open ]
	jq -e --argjson t "$t0" '.last.schedule == {"at": "2026-11-22T12:00:00Z", "ts": $t, "status": "idle"} and
	    .refused.schedule.ts == $t + 120 and .refused.schedule.status == "open"' "$w"
	# the probe is a wake: its meta line names the last wake admitted
	run -0 at_epoch $((t0 + 1000)) heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = idle ]
	llm_last | jq -e '.messages[-1].content | test("last schedule wake: 2026-11-22T12:00:00\\+00:00 \\(idle\\);")'
	# the cap refuses the next
	run -0 at_epoch $((t0 + 1100)) heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = capped ]
	jq -e --argjson t "$t0" '.last.schedule.ts == $t + 1000 and .last.schedule.status == "idle" and
	    .refused.schedule.ts == $t + 1100 and .refused.schedule.status == "capped"' "$w"
	run -0 at_epoch $((t0 + 86400)) heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = idle ]
	llm_last | jq -e '.messages[-1].content | test("last schedule wake: 2026-11-22T12:16:40\\+00:00 \\(idle\\);")'
	run llm_count
	assert_output 3
}

@test "a wake.json of an older heart, whose last wake was a refusal, is read as a refusal" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m } }')
	mkdir -p "$HEART_STATE_DIR/agents/scout"
	printf '%s\n' '{"v":1,"agent":"scout","first_seen":"2026-11-22T10:00:00Z","first_seen_ts":1795341600,"last":{"schedule":{"at":"2026-11-22T11:00:00Z","ts":1795345200,"status":"capped"},"idle":null},"running":null,"last_error":null,"checklist_warned":false}' > "$HEART_STATE_DIR/agents/scout/wake.json"
	run -0 at "2026-11-22 12:00:00 UTC" heart-wake --soul "$s" --force --chamber schedule
	[ "$(output_field status)" = idle ]
	llm_last | jq -e '.messages[-1].content | test("last schedule wake: never;")'
	jq -e '.last.schedule.ts == 1795348800 and .refused.schedule.status == "capped"' "$HEART_STATE_DIR/agents/scout/wake.json"
}
