#!/usr/bin/env bats
# heart-cap: the daily counter shared by the chambers.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
}

teardown() {
	llm_stop
	heart_teardown
}

@test "take admits until the default schedule cap of 48, then refuses with exit 1" {
	meet scout
	run -0 take_n 50 scout
	assert_output 48
	run heart-cap take scout
	assert_failure 1
	run jq -r '.total, .chambers.schedule, .day' "$(capfile scout)"
	assert_output "$(printf '48\n48\n%s' "$(date -u +%F)")"
}

@test "take is silent by default and says what it did with -v" {
	meet scout
	run heart-cap take scout
	assert_success
	assert_output ""
	run -0 heart-cap take scout -v
	assert_output --regexp '^scout: schedule admitted: 2/48 today'
}

@test "idle stops at its cap of 12 while schedule goes on to 48 on the shared total" {
	meet scout
	run -0 take_n 14 scout --chamber idle
	assert_output 12
	run -0 take_n 38 scout --chamber schedule
	assert_output 36
	run -0 heart-cap status scout --json
	assert_output --partial '"used":48,"cap":48,"remaining":0'
	assert_output --partial '"schedule":{"used":36,"cap":48},"idle":{"used":12,"cap":12}'
}

@test "idle is refused once schedule has used the shared total past idle's cap" {
	meet scout
	take_n 12 scout
	run heart-cap take scout --chamber idle
	assert_failure 1
}

@test "the agent-wide daily_cap bounds every chamber" {
	s=$(soul_file scout.yaml 'heart:
  daily_cap: 10
  schedule: { daily_cap: 48 }
  idle: { daily_cap: 12 }')
	run -0 take_n 8 --soul "$s"
	assert_output 8
	run -0 take_n 5 --soul "$s" --chamber idle
	assert_output 2
	run -0 heart-cap status --soul "$s" --json
	assert_output --partial '"used":10,"cap":10,"remaining":0'
}

@test "daily_cap: 0 turns a chamber off and leaves the other on" {
	s=$(soul_file scout.yaml 'heart:
  idle: { daily_cap: 0 }')
	run heart-cap take --soul "$s" --chamber idle
	assert_failure 1
	run heart-cap take --soul "$s" --chamber schedule
	assert_success
}

@test "the soul's caps apply, and --cap overrides one take's chamber cap" {
	s=$(soul_file travel_rescue.yaml 'heart:
  schedule: { interval: 30m, daily_cap: 3 }')
	run -0 take_n 5 --soul "$s"
	assert_output 3
	run heart-cap take --soul "$s" --cap 4
	assert_success
	run heart-cap take --soul "$s" --cap 4
	assert_failure 1
}

@test "a take without a soul goes by the caps kept from the soul, and never changes them" {
	s=$(soul_file scout.yaml 'heart:
  schedule: { daily_cap: 5 }
  idle: { daily_cap: 0 }')
	run -0 take_n 5 --soul "$s"
	assert_output 5
	run heart-cap take scout -v
	assert_failure 1
	assert_output "scout: schedule refused: 5/5 today ($(date -u +%F); the caps kept from its soul)"
	run heart-cap take scout --chamber idle
	assert_failure 1
	run jq -c .caps "$(capfile scout)"
	assert_output '{"schedule":5,"idle":0,"agent":null}'
	run -0 heart-cap status scout
	assert_output --partial '"used":5,"cap":5,"remaining":0,"chambers":{"schedule":{"used":5,"cap":5},"idle":{"used":0,"cap":0}}'
	assert_output --partial '"caps_from":"kept"'
	# --cap is one take's cap, never kept
	run heart-cap take scout --cap 6 -v
	assert_success
	assert_output "scout: schedule admitted: 6/6 today ($(date -u +%F); --cap 6 for this take; else the caps kept from its soul)"
	run jq -c '[.total, .caps]' "$(capfile scout)"
	assert_output '[6,{"schedule":5,"idle":0,"agent":null}]'
	run heart-cap take --soul "$s" --cap 7
	assert_success
	run jq -c .caps "$(capfile scout)"
	assert_output '{"schedule":5,"idle":0,"agent":null}'
}

@test "with no soul and no caps kept, a take goes by the defaults, says so, and keeps none" {
	meet newbie	# known, no soul given and none kept
	run heart-cap take newbie -v
	assert_success
	assert_output "newbie: schedule admitted: 1/48 today ($(date -u +%F); the default caps: no soul given, none kept)"
	run jq -c .caps "$(capfile newbie)"
	assert_output null
	run -0 heart-cap status newbie
	assert_output --partial '"used":1,"cap":48'
	assert_output --partial '"caps_from":"default"'
	run -0 script -qec "heart-cap status newbie" /dev/null
	assert_line --index 2 --partial "heart-cap: 1 agent shown with the default caps (schedule 48, idle 12): no soul given, none kept; give --soul"
	# a soul's caps are kept from its first take on
	s=$(soul_file newbie.yaml 'heart: { schedule: { daily_cap: 2 } }')
	heart-cap take --soul "$s"
	run heart-cap take newbie -v
	assert_failure 1
	assert_output --partial 'refused: 2/2 today'
}

@test "the paper's travel_rescue soul admits exactly 48 a day" {
	run -0 take_n 50 --soul "$SOULS/travel_rescue.yaml"
	assert_output 48
}

@test "16 processes taking 200 times at once (64 sanitized) admit exactly 48, every run" {
	# One run a pass, as the sanitized pass always had: the 200 takes
	# are race enough.  With the lock broken (a shared flock in
	# file_update, lib/store.c; no WATCH in guarded_set,
	# lib/redisstore.c) one run admitted 182 to 194 (files) and 59 to
	# 67 (Redis), 5 runs of 5 each.  The sanitized pass's 64 still
	# refuse 16 and wait for the lock.
	local takes
	takes=$(in_pass 200 64)
	meet herd
	for ((p = 1; p <= 16; p++)); do
		( n=0
		  for ((i = 0; i < takes / 16 + (p <= takes % 16); i++)); do
			heart-cap take herd && n=$((n + 1))
		  done
		  echo $n > "$BATS_TEST_TMPDIR/ok.$p" ) &
	done
	wait
	total=0
	for f in "$BATS_TEST_TMPDIR"/ok.*; do
		read -r n < "$f"
		total=$((total + n))
	done
	[ "$total" -eq 48 ]
	run -0 heart-cap status herd --json
	assert_output --partial '"used":48,"cap":48'
}

# wake_statuses OUTPUT: each line of heart-wake's OUTPUT, its "status"
# (the first key of its kind, before any object within), else the line
# itself marked as no result; st is the last.  A regex, not a jq per wake.
wake_statuses() {
	local line re='^\{"v":1,[^{]*"status":"([a-z]*)"'
	while IFS= read -r line; do
		if [[ $line =~ $re ]]; then
			st=${BASH_REMATCH[1]}
		else
			st="no result: $line"
		fi
		echo "$st"
	done <<< "$1"
}

# count_statuses FILE...: n[idle], n[capped], n[busy] and n[other], the
# lines of FILEs that say each
count_statuses() {
	local f line
	declare -gA n=([idle]=0 [capped]=0 [busy]=0 [other]=0)
	for f in "$@"; do
		while IFS= read -r line; do
			case $line in
			idle|capped|busy) n[$line]=$((n[$line] + 1)) ;;
			*) n[other]=$((n[other] + 1)) ;;
			esac
		done < "$f"
	done
}

# wake_until_capped SOUL NP: NP processes wake SOUL, each until it is
# capped; the statuses counted in n[] (count_statuses)
wake_until_capped() {
	local p i pids=()
	for ((p = 1; p <= $2; p++)); do
		( for ((i = 0; i < 300; i++)); do
			wake_statuses "$(heart-wake --soul "$1" --force)"
			[ "$st" != capped ] || break
			# busy: another holds the wake lock; a pause (the
			# builtin sleep) before trying again, not a spin
			[ "$st" != busy ] || sleep 0.01
		  done > "$BATS_TEST_TMPDIR/st.$p" ) &
		pids+=($!)
	done
	wait "${pids[@]}"	# not the double
	count_statuses "$BATS_TEST_TMPDIR"/st.*
}

@test "daily_budget under 16 concurrent heart-wake processes (8 sanitized): past it by one wake's cost at most, every run" {
	local np
	np=$(in_pass 16 8)
	llm_start
	s=$(soul_file money.yaml "name: money
heart: {daily_budget: 0.0045, schedule: {daily_cap: 1000}}
llm: {price: {input: 1.0, output: 1.0}, timeout: 10s}")
	# every wake costs 1000 tokens at \$1 a million: \$0.001
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	# One run a pass, as the sanitized pass always had: with the wake
	# lock broken (a shared flock in run.c, no NX in redisstore.c's
	# lock_take) one run admitted 7 to 13 wakes, 5 runs of 5 in each
	# store.  The sanitized pass's 8 processes take the same paths:
	# admitted, capped, busy (in_pass).
	wake_until_capped "$s" "$np"
	# admitted below the budget: 0, 1, 2, 3 and 4 thousandths
	[ "${n[idle]}" -eq 5 ]
	[ "$(llm_count)" -eq 5 ]
	[ "${n[capped]}" -eq "$np" ]
	[ "${n[other]}" -eq 0 ]
	run -0 heart-cap status --soul "$s" --json
	echo "$output" | jq -e '.cost == 0.005 and .budget == 0.0045 and
	    .cost <= .budget + 0.001 and .used == 5'
	# and a script's take is refused too, by all at once
	pids=()
	for ((p = 1; p <= np; p++)); do
		( rc=0; heart-cap take --soul "$s" || rc=$?
		  echo $rc > "$BATS_TEST_TMPDIR/take.$p" ) &
		pids+=($!)
	done
	wait "${pids[@]}"
	codes=
	for f in "$BATS_TEST_TMPDIR"/take.*; do
		read -r rc < "$f"
		codes+=$rc
	done
	[ "$codes" = "$(printf '1%.0s' $(seq "$np"))" ]
}

@test "monthly_budget under 16 concurrent heart-wake processes (8 sanitized): past it by one wake's cost at most" {
	local np
	np=$(in_pass 16 8)
	llm_start
	s=$(soul_file money.yaml "name: money
heart: {monthly_budget: 0.0045, schedule: {daily_cap: 1000}}
llm: {price: {input: 1.0, output: 1.0}, timeout: 10s}")
	# every wake costs 1000 tokens at \$1 a million: \$0.001
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	wake_until_capped "$s" "$np"
	[ "${n[idle]}" -eq 5 ]
	[ "$(llm_count)" -eq 5 ]
	[ "${n[capped]}" -eq "$np" ]
	[ "${n[other]}" -eq 0 ]
	run -0 heart-cap status --soul "$s" --json
	echo "$output" | jq -e '.month_cost == 0.005 and
	    .monthly_budget == 0.0045 and .used == 5'
	run heart-cap take --soul "$s"
	assert_failure 1
}

@test "status prints one JSON object per agent when stdout is not a terminal" {
	meet alpha beta
	take_n 3 alpha
	take_n 2 beta --chamber idle
	run heart-cap status
	assert_success
	assert_line --index 0 --regexp '^\{"agent":"alpha","day":"[0-9-]{10}","zone":"UTC","used":3,"cap":48,"remaining":45'
	assert_line --index 1 --partial '"agent":"beta"'
	[ "${#lines[@]}" -eq 2 ]
	echo "$output" | jq -e -s 'length == 2 and .[1].chambers.idle.used == 2' 
	echo "${lines[0]}" | jq -e '.resets_at | test("T00:00:00Z$")'
	echo "${lines[0]}" | jq -e 'has("ghosts") and (.tokens | has("prompt"))'
}

@test "status draws an aligned table on a terminal" {
	meet alpha
	take_n 3 alpha
	run script -qec "heart-cap status" /dev/null
	assert_success
	assert_line --index 0 --regexp '^AGENT +DAY +ZONE +USED +CAP +LEFT +SCHEDULE +IDLE +GHOSTS +TOKENS +TRIAGE +COST +RESETS'
	assert_line --index 1 --regexp '^alpha +[0-9-]{10} +UTC +3 +48 +45 +3/48 +0/12 +0 +0 +0 +no price +[0-9T:-]{19}Z'
}

@test "the status table stays aligned for ids of the 64 characters allowed" {
	long=$(printf 'a%.0s' $(seq 64))
	meet "$long" b
	take_n 1 "$long"
	take_n 2 b
	run script -qec "heart-cap status" /dev/null
	assert_success
	[ "${#lines[@]}" -eq 4 ]
	# each row's day starts under the header's DAY, its counts under USED
	day=$(echo "${lines[0]}" | grep -bo DAY | cut -d: -f1)
	used=$(echo "${lines[0]}" | grep -bo ' USED' | cut -d: -f1)
	for i in 1 2; do
		[ "$(echo "${lines[$i]}" | grep -bo '20[0-9-]\{8\}' | head -1 | cut -d: -f1)" -eq "$day" ]
		[ "$(echo "${lines[$i]}" | cut -c$((used + 1))-$((used + 5)))" = "    $i" ]
	done
	assert_line --index 1 --regexp "^a{64} 20"
}

@test "status of an agent that never woke says 0 of its cap" {
	run heart-cap status --soul "$SOULS/travel_rescue.yaml" --json
	assert_success
	assert_output --partial '"agent":"travel_rescue"'
	assert_output --partial '"used":0,"cap":48,"remaining":48'
	[ ! -e "$HEART_STATE_DIR/agents/travel_rescue" ]
}

@test "status and reset of an agent heart does not know say so, exit 64, and create nothing" {
	meet scout
	take_n 1 scout
	run heart-cap status scuot
	assert_failure 64
	assert_output "heart-cap: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)"
	run --separate-stderr heart-cap status scout scuot
	assert_failure 64
	assert_output --partial '"agent":"scout"'
	[ "${#lines[@]}" -eq 1 ]
	[ "$stderr" = "heart-cap: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)" ]
	run heart-cap reset scuot
	assert_failure 64
	assert_output --partial "scuot: no such agent"
	[ ! -e "$HEART_STATE_DIR/agents/scuot" ]
	! redis_store || [ "$(rcli --raw KEYS 'heart:{scuot}:*')" = "" ]
}

@test "take of an agent heart has never met says no such agent, exit 64, and starts none; the store's agents are known" {
	run heart-cap take scuot
	assert_failure 64
	assert_output "heart-cap: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)"
	run heart-cap take scuot --chamber idle --cap 5
	assert_failure 64
	[ ! -e "$HEART_STATE_DIR/agents/scuot" ]
	! redis_store || [ "$(rcli --raw KEYS 'heart:{scuot}:*')" = "" ]
	# with its soul before its first wake; then by its name
	run -0 heart-cap take --soul "$(soul_file scout.yaml 'heart: {}')"
	run -0 heart-cap take scout
	# this host's files of it gone: a Redis shared by the fleet still
	# knows it (another host woke it); the files were all heart knew
	rm -rf "$HEART_STATE_DIR/agents/scout"
	if redis_store; then
		run -0 heart-cap take scout -v
		assert_output --partial ': schedule admitted: 3/48 today'
	else
		run heart-cap take scout
		assert_failure 64
	fi
}

@test "status with an empty state directory prints nothing and succeeds" {
	run heart-cap status
	assert_success
	assert_output ""
}

@test "reset zeroes today's counter" {
	# a cap of 3 (kept from the soul) reached: only the reset admits more
	s=$(soul_file scout.yaml 'heart: { schedule: { daily_cap: 3 } }')
	run -0 take_n 4 --soul "$s"
	assert_output 3
	run heart-cap reset scout
	assert_success
	run heart-cap take scout
	assert_success
	run jq .total "$(capfile scout)"
	assert_output 1
}

@test "a document written over its longer version before holds its own bytes and no more" {
	file_only
	meet scout
	# cap.json is swapped with .cap.json.tmp, which is written over in
	# place: after 11 takes it holds the 10th, two bytes longer than a
	# reset's document (heart(7), State)
	run -0 take_n 11 scout --cap 20
	assert_output 11
	a=$HEART_STATE_DIR/agents/scout
	jq -e '.total == 10' "$a/.cap.json.tmp"
	# cuts ARGS...: heart-cap ARGS, and how many times it cut a file
	# (LeakSanitizer cannot run under ptrace; other tests look for leaks)
	cuts() {
		ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 strace -qq \
		    -e trace=ftruncate -o "$BATS_TEST_TMPDIR/sys" heart-cap "$@"
		grep -c '^ftruncate' "$BATS_TEST_TMPDIR/sys" || :
	}
	run cuts reset scout
	assert_output 1
	jq -se 'length == 1 and .[0].total == 0' "$a/cap.json"
	[ "$(wc -l < "$a/cap.json")" -eq 1 ]
	jq -e '.total == 11' "$a/.cap.json.tmp"
	run cuts take scout	# over the 11th: cut
	assert_output 1
	# over the reset's, of its own length: not cut (ext4 would truncate
	# to the same length all the same, at a cost)
	run cuts take scout
	assert_output 0
	jq -se 'length == 1 and .[0].total == 2' "$a/cap.json"
}

@test "the state directory and files are private: 0700 and 0600" {
	file_only
	meet scout
	heart-cap take scout
	run stat -c %a "$HEART_STATE_DIR" "$HEART_STATE_DIR/agents" \
		"$HEART_STATE_DIR/agents/scout" "$(capfile scout)"
	assert_output "$(printf '700\n700\n700\n600')"
}

@test "the state directory falls back to XDG_STATE_HOME, then HOME" {
	file_only
	unset HEART_STATE_DIR
	XDG_STATE_HOME=$BATS_TEST_TMPDIR/xdg meet scout
	XDG_STATE_HOME=$BATS_TEST_TMPDIR/xdg heart-cap take scout
	[ "$(jq .total "$BATS_TEST_TMPDIR/xdg/heart/agents/scout/cap.json")" = 1 ]
	HOME=$BATS_TEST_TMPDIR/home meet scout
	HOME=$BATS_TEST_TMPDIR/home heart-cap take scout
	[ "$(jq .total "$BATS_TEST_TMPDIR/home/.local/state/heart/agents/scout/cap.json")" = 1 ]
}

@test "hostile agent ids are refused before they become paths" {
	for id in ../etc passwd/x .hidden .. . 'a+b' 'a#b' '' "$(printf 'a%.0s' $(seq 65))" 'a b' 'ä'; do
		run heart-cap take "$id"
		assert_failure 64
		assert_output --partial "invalid agent id"
	done
	[ ! -e "$HEART_STATE_DIR" ] || [ -z "$(ls -A "$HEART_STATE_DIR/agents" 2>/dev/null)" ]
	meet "$(printf 'a%.0s' $(seq 64))"
	run heart-cap take "$(printf 'a%.0s' $(seq 64))"
	assert_success
}

@test "bad usage gives exit 64 and the synopsis" {
	run heart-cap
	assert_failure 64
	assert_output --partial "usage: heart-cap take"
	run heart-cap frob scout
	assert_failure 64
	run heart-cap take scout --chamber nap
	assert_failure 64
	assert_output --partial "--chamber"
	run heart-cap take scout --cap -3
	assert_failure 64
	run heart-cap take
	assert_failure 64
	run heart-cap take scout --soul "$SOULS/travel_rescue.yaml"
	assert_failure 64
	assert_output --partial "differ"
}

@test "a misspelt command is named, with the commands there are, exit 64" {
	run --separate-stderr heart-cap tkae scout
	assert_failure 64
	[ "$stderr" = "heart-cap: tkae: no such command (use take, status, reset, pause or resume; heart-cap --help shows each)" ]
	assert_output ""
}

@test "a corrupt cap.json with no version before it is named, exit 74, and never replaced" {
	file_only
	heart-cap take --soul "$(soul_file scout.yaml 'heart: {}')"	# one version
	f=$(capfile scout)
	printf '{"day":"2026-11-2' > "$f"
	cp "$f" "$BATS_TEST_TMPDIR/before"
	run heart-cap take scout
	assert_failure 74
	assert_output --regexp "^heart-cap: .*/agents/scout/cap.json: not valid JSON at line 1"
	run heart-cap status scout
	assert_failure 74
	cmp "$f" "$BATS_TEST_TMPDIR/before"
}

@test "a torn cap.json is read from the version before it, said once, and written whole again" {
	file_only
	meet scout
	heart-cap take scout
	heart-cap take scout
	f=$(capfile scout)
	# a power cut as the swap partner was written over in place, its
	# swap not yet on the disk: the document the disk names is torn
	head -c 20 "$f" > "$f.torn" && cat "$f.torn" > "$f"
	run heart-cap status scout --json
	assert_success
	assert_equal "$(echo "$output" | grep -c 'cap.json: not valid JSON')" 1
	assert_output --partial ".cap.json.tmp, the version before it"
	assert_equal "$(echo "$output" | grep -v '^heart-cap:' | jq -r .used)" 1
	run heart-cap take scout
	assert_success
	assert_equal "$(jq -r .total "$f")" 2
}

@test "a hand-edited cap.json with a wrong field is refused, not reset" {
	file_only
	meet scout
	heart-cap take scout
	f=$(capfile scout)
	jq -c '.total = "many"' "$f" > "$f.new" && mv "$f.new" "$f"
	run heart-cap take scout
	assert_failure 74
	assert_output --partial "cap.json: field 'total' is missing or not valid"
	jq -c '.total = 1 | .chambers = 3' "$f" > "$f.new" && mv "$f.new" "$f"
	run heart-cap take scout
	assert_failure 74
	assert_output --partial "'chambers'"
}

@test "an unwritable state directory gives a clear error and exit 74" {
	file_only
	mkdir -p "$BATS_TEST_TMPDIR/ro"
	printf x > "$BATS_TEST_TMPDIR/ro/state"	# a file where a directory must be
	s=$(soul_file scout.yaml 'heart: {}')
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/ro/state run heart-cap take --soul "$s"
	assert_failure 74
	assert_output --partial "heart-cap: $BATS_TEST_TMPDIR/ro/state"
	HEART_STATE_DIR=/proc/heart-state run heart-cap take --soul "$s"
	assert_failure 74
	assert_output --partial "/proc/heart-state"
}

@test "kill -9 of takers in a loop leaves cap.json valid and never above the cap" {
	meet crash
	kept=()
	for round in $(repeats 30 10); do
		( for ((i = 0; i < 20; i++)); do heart-cap take crash; done ) &
		pid=$!
		heart-cap take crash || true
		sleep 0.0$((RANDOM % 9 + 1))
		kill_running "$pid"
		wait "$pid" 2>/dev/null || true
		keep "$(capfile crash)"	# as this round's kill left it
	done
	all_kept '.total <= 48 and .total == .chambers.schedule'
	run heart-cap status crash --json
	assert_success
	run -0 take_n 50 crash
	run jq .total "$(capfile crash)"
	assert_output 48
}

# corrupt AGENT: make the agent's counter unreadable, in either store
corrupt() {
	if redis_store; then
		rcli SET "heart:{$1}:cap.json" '{"day":' >/dev/null
	else
		printf '{"day":' > "$(capfile "$1")"
	fi
}

@test "status --prom prints the day's figures for node_exporter's textfile collector" {
	meet alpha beta
	take_n 3 alpha
	take_n 2 beta --chamber idle
	run heart-cap status --prom
	assert_success
	assert_line 'heart_cap_used{agent="alpha"} 3'
	assert_line 'heart_cap_limit{agent="alpha"} 48'
	assert_line 'heart_cap_remaining{agent="alpha"} 45'
	assert_line 'heart_cap_chamber_used{agent="beta",chamber="idle"} 2'
	assert_line 'heart_cap_chamber_limit{agent="beta",chamber="idle"} 12'
	assert_line 'heart_cap_tokens{agent="alpha",kind="prompt"} 0'
	assert_line 'heart_cap_triage_tokens{agent="alpha",kind="completion"} 0'
	assert_line "heart_cap_reset_timestamp_seconds{agent=\"alpha\"} $(date -u -d 'tomorrow 00:00' +%s)"
	# each family once, its HELP and TYPE first, its samples together
	echo "$output" | awk '
	    /^# HELP / { if (seen[$3]++) exit 1; fam = $3; next }
	    /^# TYPE / { if ($3 != fam || $4 != "gauge") exit 1; next }
	    { n = $1; sub(/\{.*/, "", n); if (n != fam) exit 1 }'
	[ "$(echo "$output" | grep -c '^# TYPE')" -eq 13 ]
}

@test "status with the soul: a schedule heart-wake last saw long ago is overdue, a paused wake after its due time is not and shows why, a fresh wake ends it" {
	llm_start
	s=$(soul_file scout.yaml 'name: scout
heart: { schedule: { interval: 1h }, idle: { daily_cap: 0 } }')
	t0=$(date -u -d '2026-11-22 09:00:00' +%s)
	t=$((t0 + 3 * 3600))
	run -0 at_epoch "$t0" heart-wake --soul "$s"	# first sight
	assert_output --partial '"status":"not_due"'
	# without the soul, nothing said
	run -0 at_epoch "$t" heart-cap status scout --json
	echo "$output" | jq -e 'has("due") or has("overdue") or has("skip") | not'
	run -0 at_epoch "$t" heart-cap status --soul "$s" --json
	echo "$output" | jq -e '.overdue == true and .skip == null'
	due=$(output_field due)
	epoch_of due_at "$due"
	[ "$due_at" -gt "$t0" ]
	[ "$due_at" -le $((t0 + 3600)) ]
	run -0 at_epoch "$t" heart-cap status --soul "$s" --prom
	assert_line 'heart_overdue{agent="scout"} 1'
	assert_line "heart_schedule_due_timestamp_seconds{agent=\"scout\"} $due_at"
	run -0 at_epoch "$t" script -qec "heart-cap status --soul $s" /dev/null
	assert_line --index 0 --regexp ' DUE'
	assert_line --index 1 --regexp ' overdue'
	# paused: its wake after the due time is journaled, the reason shown
	run -0 at_epoch "$t" heart-cap pause scout
	run -0 at_epoch "$t" heart-wake --soul "$s"
	assert_output --partial '"status":"paused"'
	run -0 at_epoch $((t + 60)) heart-cap status --soul "$s" --json
	echo "$output" | jq -e --arg due "$due" '.overdue == false and
	    .due == $due and .skip.status == "paused" and
	    (.skip.reason | test("paused by heart-cap pause")) and
	    .skip.at == "2026-11-22T12:00:00Z"'
	run -0 at_epoch $((t + 60)) heart-cap status --soul "$s" --prom
	assert_line 'heart_overdue{agent="scout"} 0'
	# resumed, a wake: on time, no skip, due at the next slot
	run -0 at_epoch $((t + 60)) heart-cap resume scout
	run -0 at_epoch $((t + 120)) heart-wake --soul "$s"
	assert_output --partial '"status":"idle"'
	run -0 at_epoch $((t + 180)) heart-cap status --soul "$s" --json
	echo "$output" | jq -e '.overdue == false and .skip == null'
	epoch_of due_at "$(output_field due)"
	[ "$due_at" -gt "$t" ]
	[ "$due_at" -le $((t + 3600)) ]
}

@test "status --prom counts each agent's answers waiting in the outbox and its dead letters" {
	meet alpha beta
	take_n 1 alpha
	take_n 1 beta
	for i in 1 2 3; do
		jq -cn --arg id "w$i" --arg at "2026-11-21T12:0$i:00Z" '{v: 1,
		    agent: "alpha", chamber: "schedule", wake_id: $id, at: $at,
		    status: "ok", response: "r", messages: [{role: "assistant",
		    content: "r"}]}'
	done > "$BATS_TEST_TMPDIR/in"
	run at "2026-11-21 12:05:00" heart-ghost --retry-for 1h --exec false \
	    < "$BATS_TEST_TMPDIR/in"
	assert_failure 69
	run -0 heart-cap status --prom
	assert_line 'heart_outbox_waiting{agent="alpha"} 3'
	assert_line 'heart_outbox_dead{agent="alpha"} 0'
	# w1 has failed for an hour: dead; w2 is tried, fails, and waits
	run at "2026-11-21 13:06:00" heart-ghost --retry-for 1h --flush \
	    --exec false
	assert_failure 69
	run heart-cap status --prom
	assert_success
	assert_line 'heart_outbox_waiting{agent="alpha"} 2'
	assert_line 'heart_outbox_dead{agent="alpha"} 1'
	assert_line 'heart_outbox_waiting{agent="beta"} 0'
	assert_line 'heart_outbox_dead{agent="beta"} 0'
	[ "$(echo "$output" | grep -c '^# TYPE heart_outbox_')" -eq 2 ]
}

@test "status --prom FILE replaces the file whole, mode 0644, and only when every agent was read" {
	meet alpha
	take_n 3 alpha
	d=$BATS_TEST_TMPDIR/textfile
	mkdir "$d"
	run heart-cap status --prom "$d/heart_cap.prom"
	assert_success
	assert_output ""
	grep -qx 'heart_cap_used{agent="alpha"} 3' "$d/heart_cap.prom"
	run stat -c %a "$d/heart_cap.prom"
	assert_output 644
	heart-cap take alpha
	heart-cap status alpha --prom="$d/heart_cap.prom"
	grep -qx 'heart_cap_used{agent="alpha"} 4' "$d/heart_cap.prom"
	run ls -A "$d"
	assert_output heart_cap.prom
	heart-cap take --soul "$(soul_file beta.yaml 'heart: {}')"	# one version
	corrupt beta
	run heart-cap status --prom "$d/heart_cap.prom"
	assert_failure 74
	grep -qx 'heart_cap_used{agent="alpha"} 4' "$d/heart_cap.prom"
	run heart-cap status --prom="$d/heart_cap.txt"
	assert_failure 64
	assert_output --partial "must end in .prom"
	run heart-cap take alpha --prom
	assert_failure 64
	assert_output --partial "--prom goes with status only"
}
