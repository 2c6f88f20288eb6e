#!/usr/bin/env bats
# heart-wake --souls DIR --jobs N: a round over a directory of souls in
# one process, the soul cache, and the fleet file's rate limit
# (HEART_FLEET) over rounds.

load helpers
bats_require_minimum_version 1.5.0

T0=$(date -u -d '2026-11-22 09:00:30' +%s)

setup() {
	model_setup
}

teardown() {
	model_teardown
}

# mksouls DIR PREFIX N [HEART-KEYS]: N souls PREFIX01... due every
# minute (a 1m schedule; $IV if set), in DIR, printed
mksouls() {
	local d=$1 i
	mkdir -p "$d"
	for ((i = 1; i <= $3; i++)); do
		printf 'name: %s%02d\nheart: { schedule: { interval: %s%s } }\n' \
		    "$2" "$i" "${IV:-1m}" "${4:+, $4}" \
		    > "$d/$2$(printf %02d "$i").yaml"
	done
	echo "$d"
}

# fleet RPM [TPM]: a fleet file whose one endpoint is the double's
fleet() {
	export HEART_FLEET=$BATS_TEST_TMPDIR/fleet.yaml
	printf 'endpoints:\n  double:\n    base_url: %s\n    model: double\n    requests_per_minute: %s\n    tokens_per_minute: %s\n' \
	    "$HEART_LLM_URL" "$1" "${2:-0}" > "$HEART_FLEET"
}

# statuses FILE: "agent status" of each result line, in order
statuses() {
	jq -r '"\(.agent) \(.status)"' "$1"
}

# cached T: scout's status in a round of $d at T, and whether it came
# from the soul cache
cached() {
	at_epoch "$1" heart-wake --souls "$d" | jq -r '"\(.status) \(.cached // false)"'
}

# most_in_a_minute: the most requests the double saw in any 60 s
most_in_a_minute() {
	jq -s '[.[].t] | sort | . as $t | [range(length) | . as $i |
	    [$t[] | select(. >= $t[$i] and . < $t[$i] + 60)] | length] |
	    max // 0' "$LLM_DIR/requests.jsonl"
}

@test "--souls --jobs 4: four wakes at once and never more, each soul's result one whole line" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 12)
	big=$(head -c 60000 /dev/zero | tr '\0' x)
	llm_script "{\"delay\": 2, \"replies\": [{\"text\": \"$big\"}]}"
	run --separate-stderr at_epoch "$T0" heart-wake --souls "$d" --jobs 4 --force
	assert_success
	[ "$(printf '%s\n' "$output" | wc -l)" = 12 ]
	# every line is one whole result: JSON, each agent once, all ok
	[ "$(printf '%s\n' "$output" | jq -r '"\(.agent) \(.status) \(.response | length)"' |
	    sort -u | grep -c ' ok 60000$')" = 12 ]
	[ "$(jq -s 'map(.inflight) | max' "$LLM_DIR/requests.jsonl")" = 4 ]
	run llm_count
	assert_output 12
}

@test "--jobs 2: six wakes by two workers, each forked once for the round, each over one connection to the model" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 6)
	llm_script '{"delay": 1, "replies": [{"text": "[IDLE]"}]}'
	(at_epoch "$T0" exec heart-wake --souls "$d" --jobs 2 --force \
	    > "$BATS_TEST_TMPDIR/out") &
	pid=$!
	# every worker the round forks while its wakes run (after the last
	# result, a sanitizer's leak check may clone a child of its own)
	# (out's lines and the round's children read by the shell, not a
	# wc and a pgrep ten times a second)
	lines() {	# n: how many lines out has now
		local s=
		IFS= read -r -d '' s < "$BATS_TEST_TMPDIR/out" 2>/dev/null || :
		s=${s//[!$'\n']/}
		n=${#s}
	}
	while kill -0 "$pid" 2>/dev/null && lines && [ "$n" -lt 6 ]; do
		kids=()
		read -r -a kids < "/proc/$pid/task/$pid/children" 2>/dev/null || :
		lines
		[ ${#kids[@]} -gt 0 ] && [ "$n" -lt 6 ] &&
		    printf '%s\n' "${kids[@]}" >> "$BATS_TEST_TMPDIR/pids"
		sleep 0.1
	done
	wait "$pid"
	[ "$(jq -r .status "$BATS_TEST_TMPDIR/out" | sort | uniq -c | tr -s ' ')" = " 6 idle" ]
	[ "$(sort -u "$BATS_TEST_TMPDIR/pids" | wc -l)" = 2 ]
	# a worker's wakes, one after another, reuse its connection
	[ "$(jq -s '[.[].peer] | unique | length' "$LLM_DIR/requests.jsonl")" = 2 ]
}

@test "--jobs 2: a worker killed in its wake gives an error line naming its agent; the round goes on" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 4)
	llm_script '{"delay": 2, "replies": [{"text": "[IDLE]"}]}'
	(at_epoch "$T0" exec heart-wake --souls "$d" --jobs 2 --force \
	    > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err") &
	pid=$!
	both() { [ "$(llm_count)" -ge 2 ]; }
	wait_until 20 both
	kill -KILL "$(pgrep -P "$pid" | head -1)"
	st=0
	wait "$pid" || st=$?
	[ "$st" = 74 ]
	[ "$(jq -r .status "$BATS_TEST_TMPDIR/out" | sort | uniq -c | tr -s ' ' | tr '\n' ,)" = " 1 error, 3 idle," ]
	a=$(jq -r 'select(.status == "error") | .agent' "$BATS_TEST_TMPDIR/out")
	[[ $a == s0[1-4] ]]
	# said once, the agent named once, by heart-wake as every failure
	[ "$(grep -c "worker" "$BATS_TEST_TMPDIR/err")" -eq 1 ]
	grep -qx "heart-wake: $a: its wake's worker was killed by signal 9" "$BATS_TEST_TMPDIR/err"
	[ "$(jq -r 'select(.status == "error") | .error' "$BATS_TEST_TMPDIR/out")" = "its wake's worker was killed by signal 9" ]
	run llm_count
	assert_output 4
}

# tidy_round N: N souls whose one tool is t/tools/tidy (a minute to
# run), woken by a round of heart-wake --jobs N in the background
# (pid), the model asking each for the tool; returns once every tool
# and its child run, the round's workers in workers
tidy_round() {
	local d=$BATS_TEST_TMPDIR/souls i
	export TIDY_DIR=$BATS_TEST_TMPDIR/tidy
	mkdir -p "$d" "$TIDY_DIR"
	for ((i = 1; i <= $1; i++)); do
		printf 'name: t%02d\nheart: { schedule: { interval: 1m } }\ntools:\n  - name: quote\n    description: A price.\n    command: [%s/tools/tidy]\n    timeout: 60s\n' \
		    "$i" "$T" > "$d/t$(printf %02d "$i").yaml"
	done
	llm_script '{"cycle": true, "replies": [{"tool_calls": [{"name": "quote", "arguments": {}}]}]}'
	(at_epoch "$T0" exec heart-wake --souls "$d" --jobs "$1" --force \
	    > /dev/null 2>&1) &
	pid=$!
	started() { [ "$(grep -c . "$TIDY_DIR/pids" 2> /dev/null)" = $(($1 * 2)) ]; }
	wait_until 20 started "$1"
	read -r -a workers < "/proc/$pid/task/$pid/children" || :
	[ ${#workers[@]} -eq "$1" ]
}

# tidy_ended N: every tool of tidy_round N tidied up (SIGTERM came
# first) and no process of theirs runs, nor a worker
tidy_ended() {
	local name p
	[ "$(grep -c . "$TIDY_DIR/marks" 2> /dev/null)" = $(($1 * 2)) ] || return 1
	while read -r name p; do
		! alive "$p" || return 1
		[ "$name" != tool ] || ! group_alive "$p" || return 1
	done < "$TIDY_DIR/pids"
	for p in "${workers[@]}"; do
		! alive "$p" || return 1
	done
}

@test "--jobs 2: a SIGTERM to the round stops its workers, which stop their tools (SIGTERM first), then the round ends by it" {
	tidy_round 2
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	[ "$st" -eq 143 ]
	tidy_ended 2
}

@test "--jobs 2: a SIGKILL to the round ends its workers (their parent-death signal, SIGTERM), which stop their tools so" {
	tidy_round 2
	kill -KILL "$pid"
	st=0
	wait "$pid" || st=$?
	[ "$st" -eq 137 ]
	wait_until 10 tidy_ended 2
}

@test "a round reads no history of an agent whose idle chamber is off, not even to see whether it is due" {
	d=$BATS_TEST_TMPDIR/souls
	mkdir "$d"
	printf 'name: quiet01\nheart: { schedule: { interval: 1h }, idle: { daily_cap: 0 } }\n' > "$d/quiet01.yaml"
	run at_epoch "$T0" heart-wake --souls "$d"	# first sight
	assert_success
	touch "$d/quiet01.yaml"	# read again, not the kept skip
	# a history held by its writer would hold up any reader of it
	exec {lk}>"$HEART_STATE_DIR/agents/quiet01/history.lock"
	flock -x "$lk"
	run at_epoch $((T0 + 60)) timeout 10 heart-wake --souls "$d"
	exec {lk}>&-
	assert_success
	assert_equal "$(jq -c '[.status, .cached // false]' <<< "$output")" \
	    '["not_due",false]'
}

@test "--souls follows the soul directory rule: a checklist beside the souls is no soul; a broken soul gives its error line" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 2)
	printf -- '- [ ] feed the cat\n' > "$d/HEARTBEAT.md"
	printf 'name: [\n' > "$d/broken.yaml"
	run --separate-stderr at_epoch "$T0" heart-wake --souls "$d" --jobs 2
	assert_failure 78
	[ "$(printf '%s\n' "$output" | jq -r .status | sort | tr '\n' ' ')" = "error not_due not_due " ]
	[[ $stderr == *broken.yaml* ]]
	run heart-wake --souls "$d" --soul "$d/s01.yaml"
	assert_failure 64
	run heart-wake --souls "$d" --jobs 0
	assert_failure 64
}

@test "--souls: a FIFO beside the souls, .md or linked to, is no soul and the round never waits on it" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 2)
	mkfifo "$d/HEARTBEAT.md" "$BATS_TEST_TMPDIR/pipe"
	ln -s "$BATS_TEST_TMPDIR/pipe" "$d/linked.md"
	run -0 at_epoch "$T0" timeout $((10 * PATIENCE)) heart-wake --souls "$d" --force
	[ "$(printf '%s\n' "$output" | jq -r '"\(.agent) \(.status)"' | tr '\n' ,)" = "s01 idle,s02 idle," ]
}

@test "--souls: a link to nowhere and an empty soul each give their error line with their file; the others wake; exit 78" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 2)
	ln -s "$BATS_TEST_TMPDIR/gone.yaml" "$d/dangling.yaml"
	: > "$d/empty.yaml"
	for jobs in 1 2; do
		run --separate-stderr at_epoch "$T0" heart-wake --souls "$d" --jobs "$jobs" --force
		assert_failure 78
		[ "$(printf '%s\n' "$output" | jq -r '"\(.agent) \(.status)"' | sort | tr '\n' ,)" = "null error,null error,s01 idle,s02 idle," ]
		printf '%s\n' "$output" | jq -s -e 'map(select(.status == "error") | .exit) == [78, 78]' > /dev/null
		[ "$(printf '%s\n' "$stderr" | sort)" = "heart-wake: $d/dangling.yaml: a symbolic link to $BATS_TEST_TMPDIR/gone.yaml, which is not there
heart-wake: $d/empty.yaml: empty: a soul holds its keys (heart: {} for every default); see heart-soul(5)" ]
	done
	run llm_count
	assert_output 4
	# --explain says the same of each, and explains the others
	run --separate-stderr at_epoch "$T0" heart-wake --souls "$d" --explain
	assert_failure 78
	[ "$(printf '%s\n' "$output" | jq -r .agent | sort -u | tr '\n' ,)" = "s01,s02," ]
	[[ $stderr == *"$d/dangling.yaml: a symbolic link to"* ]]
	[[ $stderr == *"$d/empty.yaml: empty: "* ]]
}

@test "--jobs 32: two rounds at once wake each agent exactly once (the wake lock and the slot)" {
	# every agent due once: a slot in the last 30 minutes, the next
	# one 30 minutes away, however long the rounds take
	d=$(IV=30m mksouls "$BATS_TEST_TMPDIR/souls" s 32)
	at_epoch "$T0" heart-wake --souls "$d" > /dev/null
	llm_script '{"delay": 1}'
	for k in 1 2; do
		at_epoch $((T0 + 1800)) heart-wake --souls "$d" --jobs 32 \
		    > "$BATS_TEST_TMPDIR/r$k" &
		pids+=($!)
	done
	wait "${pids[@]}"
	run llm_count
	assert_output 32
	cat "$BATS_TEST_TMPDIR"/r1 "$BATS_TEST_TMPDIR"/r2 > "$BATS_TEST_TMPDIR/all"
	[ "$(jq -r 'select(.status == "ok" or .status == "idle") | .agent' \
	    "$BATS_TEST_TMPDIR/all" | sort -u | wc -l)" = 32 ]
	[ "$(jq -r 'select(.status == "ok" or .status == "idle")' -c \
	    "$BATS_TEST_TMPDIR/all" | wc -l)" = 32 ]
	[ "$(jq -r .status "$BATS_TEST_TMPDIR/all" | sort -u | tr '\n' ' ')" != "" ]
	jq -e -s 'map(select(.status != "idle" and .status != "busy" and
	    .status != "not_due")) | length == 0' "$BATS_TEST_TMPDIR/all"
}

@test "--jobs 32: three rounds at once of 32 agents (8 sanitized) never pass a cap of 2, and a half-open breaker lets one probe through" {
	# 8 agents still run 8 workers in each of three rounds at once,
	# on the paths 32 take (in_pass)
	local n
	n=$(in_pass 32 8)
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s "$n" "daily_cap: 2")
	llm_script '{"delay": 0.5}'
	for m in 1 2 3; do
		pids=()
		for k in 1 2 3; do
			at_epoch $((T0 + 60 * m)) heart-wake --souls "$d" \
			    --jobs 32 --force > /dev/null 2>> "$BATS_TEST_TMPDIR/err" &
			pids+=($!)
		done
		wait "${pids[@]}" || { cat "$BATS_TEST_TMPDIR/err"; false; }
	done
	run llm_count
	assert_output $((2 * n))
	run -0 at_epoch $((T0 + 200)) heart-cap status --json
	[ "$(echo "$output" | jq -s 'map(.used) | unique')" = "[
  2
]" ]
	# every breaker open, then half-open; the probes fail, slowly
	for ((i = 1; i <= n; i++)); do
		for k in 1 2 3; do
			at_epoch "$T0" heart-breaker record "s$(printf %02d "$i")" \
			    llm-fail > /dev/null
		done
	done
	: > "$LLM_DIR/requests.jsonl"
	llm_script '{"delay": 1, "replies": [{"status": 500}]}'
	d2=$(mksouls "$BATS_TEST_TMPDIR/souls2" s "$n")
	pids=()
	for k in 1 2 3; do
		at_epoch $((T0 + 86400)) heart-wake --souls "$d2" --jobs 32 --force \
		    > "$BATS_TEST_TMPDIR/p$k" 2>/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}" || :	# the probes fail: 75
	run llm_count
	assert_output "$n"
	[ "$(cat "$BATS_TEST_TMPDIR"/p? | jq -r 'select(.status == "error") | .agent' |
	    sort -u | wc -l)" = "$n" ]
}

@test "a bucket of 3 a minute: the double never sees more in any minute, across two state dirs sharing one Redis" {
	redis_store || { redis_start; export HEART_STORE=$REDIS_URL; }
	fleet 3
	llm_script '{"rate": {"requests": 3, "clock": "meta"}}'
	# due once in the test, all at T0 + 1h
	IV=1h mksouls "$BATS_TEST_TMPDIR/souls1" a 5 > /dev/null
	IV=1h mksouls "$BATS_TEST_TMPDIR/souls2" b 5 > /dev/null
	for s in 1 2; do
		HEART_STATE_DIR=$BATS_TEST_TMPDIR/state$s at_epoch "$T0" \
		    heart-wake --souls "$BATS_TEST_TMPDIR/souls$s" > /dev/null
	done
	for m in 1 2 3 4; do
		t=$((T0 + 3600 + 61 * (m - 1)))
		pids=()
		for s in 1 2; do
			HEART_STATE_DIR=$BATS_TEST_TMPDIR/state$s at_epoch "$t" \
			    heart-wake --souls "$BATS_TEST_TMPDIR/souls$s" --jobs 8 \
			    > "$BATS_TEST_TMPDIR/r$m.$s" 2> "$BATS_TEST_TMPDIR/e$m.$s" &
			pids+=($!)
		done
		wait "${pids[@]}" || { cat "$BATS_TEST_TMPDIR"/e$m.?; false; }
		n=$(cat "$BATS_TEST_TMPDIR"/r$m.? | jq -r 'select(.status == "idle")' -c | wc -l)
		[ "$n" -le 3 ]
		total=$((${total:-0} + n))
	done
	[ "$(cat "$BATS_TEST_TMPDIR"/r1.? | jq -r 'select(.status == "idle")' -c | wc -l)" = 3 ]
	run llm_count
	assert_output "$total"
	run jq -s 'map(select(.limited)) | length' "$LLM_DIR/requests.jsonl"
	assert_output 0
	run most_in_a_minute
	assert_output 3
	# a throttled wake: zero requests, no error, and until when
	run jq -r 'select(.status == "throttled") | "\(.exit) \(.reason)"' "$BATS_TEST_TMPDIR"/r1.?
	[[ ${lines[0]} == "0 endpoint double: 3 of 3 requests a minute used; deferred until "* ]]
	# every soul was served, late rather than never
	[ "$(cat "$BATS_TEST_TMPDIR"/r?.? | jq -r 'select(.status == "idle") | .agent' | sort -u | wc -l)" = 10 ]
}

@test "deferred wakes go first in the next round, the oldest first" {
	fleet 2
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 5)
	at_epoch "$T0" heart-wake --souls "$d" > /dev/null
	at_epoch $((T0 + 60)) heart-wake --souls "$d" --jobs 1 > "$BATS_TEST_TMPDIR/r1"
	run statuses "$BATS_TEST_TMPDIR/r1"
	assert_output "$(printf 's01 idle\ns02 idle\ns03 throttled\ns04 throttled\ns05 throttled')"
	# rounds 70 s apart: a minute's requests have left the bucket
	at_epoch $((T0 + 130)) heart-wake --souls "$d" --jobs 1 > "$BATS_TEST_TMPDIR/r2"
	run statuses "$BATS_TEST_TMPDIR/r2"
	assert_output "$(printf 's03 idle\ns04 idle\ns05 throttled\ns01 throttled\ns02 throttled')"
	at_epoch $((T0 + 200)) heart-wake --souls "$d" --jobs 1 > "$BATS_TEST_TMPDIR/r3"
	run statuses "$BATS_TEST_TMPDIR/r3"
	assert_output "$(printf 's05 idle\ns01 idle\ns02 throttled\ns03 throttled\ns04 throttled')"
	# --explain says which wakes wait, since when, and the bucket
	run at_epoch $((T0 + 201)) heart-wake --explain --souls "$d" --chamber schedule
	assert_success
	run jq -r 'select(.agent == "s02") | "\(.would) \(.deferred) \(.gates.rate.ok) \(.rate.requests)/\(.rate.requests_per_minute)"' <<< "$output"
	assert_output "throttled 2026-11-22T09:02:40Z false 2/2"
	# heart-cap status shows the fleet's rate use
	run -0 at_epoch $((T0 + 201)) heart-cap status --json
	[ "$(echo "$output" | jq -c 'select(.endpoint) | [.requests, .requests_per_minute, .throttled]')" = "[2,2,9]" ]
	run -0 at_epoch $((T0 + 201)) heart-cap status --prom
	assert_line 'heart_rate_requests{endpoint="double"} 2'
	assert_line 'heart_rate_requests_limit{endpoint="double"} 2'
	# heart-ghost passes a throttled wake by, leaving no trace
	run heart-ghost --text < "$BATS_TEST_TMPDIR/r3"
	assert_success
	assert_output ""
	[ ! -e "$HEART_STATE_DIR/agents/s02/history.jsonl" ]
}

# agents ROUND KIND: the agents whose wake in round ROUND (both
# processes' lines) ended as KIND (idle: served; throttled: deferred)
agents() {
	cat "$BATS_TEST_TMPDIR"/r$1.? | jq -r --arg k "$2" 'select(.status == $k) | .agent' | sort
}

@test "--jobs 8, two processes at once: a wake the bucket deferred is served before one it did not, each within the rounds its place in line says" {
	fleet 2
	llm_script '{"rate": {"requests": 2, "clock": "meta"}}'
	mksouls "$BATS_TEST_TMPDIR/souls1" a 3 > /dev/null
	mksouls "$BATS_TEST_TMPDIR/souls2" b 3 > /dev/null
	for s in 1 2; do
		at_epoch "$T0" heart-wake --souls "$BATS_TEST_TMPDIR/souls$s" > /dev/null
	done
	# six agents due every round, two requests a minute: each round
	# serves two and defers four; rounds 70 s apart, the bucket empty
	for r in 1 2 3 4 5 6 7; do
		t=$((T0 + 60 + 70 * (r - 1)))
		pids=()
		for s in 1 2; do
			at_epoch "$t" heart-wake --souls "$BATS_TEST_TMPDIR/souls$s" --jobs 8 \
			    > "$BATS_TEST_TMPDIR/r$r.$s" 2> "$BATS_TEST_TMPDIR/e$r.$s" &
			pids+=($!)
		done
		wait "${pids[@]}" || { cat "$BATS_TEST_TMPDIR"/e$r.?; false; }
		[ "$(agents "$r" idle | wc -l)" = 2 ]
		[ "$(agents "$r" throttled | wc -l)" = 4 ]
		# served: only wakes deferred in the round before
		[ "$r" = 1 ] || [ -z "$(comm -23 <(agents "$r" idle) <(agents $((r - 1)) throttled))" ]
	done
	# deferred with three wakes at most before it in line: served
	# within two rounds
	for r in 1 2 3 4 5; do
		[ -z "$(comm -23 <(agents "$r" throttled) \
		    <(cat <(agents $((r + 1)) idle) <(agents $((r + 2)) idle) | sort))" ]
	done
	run llm_count
	assert_output 14
	run most_in_a_minute
	assert_output 2
	run jq -s 'map(select(.limited)) | length' "$LLM_DIR/requests.jsonl"
	assert_output 0
	run -0 at_epoch "$t" heart-cap status --json
	[ "$(echo "$output" | jq -c 'select(.endpoint) | [.waiting, .throttled]')" = "[4,28]" ]
}

@test "a place in line not asked for again within 3 minutes is dropped: an agent gone keeps the endpoint no longer" {
	fleet 1
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 3)
	at_epoch "$T0" heart-wake --souls "$d" > /dev/null
	at_epoch $((T0 + 60)) heart-wake --souls "$d" > "$BATS_TEST_TMPDIR/r1"
	run statuses "$BATS_TEST_TMPDIR/r1"
	assert_output "$(printf 's01 idle\ns02 throttled\ns03 throttled')"
	# s02 and s03 are gone; their places keep the minute's request
	rm "$d/s02.yaml" "$d/s03.yaml"
	run at_epoch $((T0 + 130)) heart-wake --souls "$d"
	assert_success
	echo "$output" | jq -e '.status == "throttled" and .reason == "endpoint double: 0 of 1 requests a minute used, the rest kept for the 2 wakes deferred before this one; deferred until 2026-11-22T09:03:41Z"'
	run -0 at_epoch $((T0 + 130)) heart-wake --explain --souls "$d" --chamber schedule
	echo "$output" | jq -e '.would == "throttled" and (.reason | endswith("the rest kept for the 2 wakes deferred before this one"))'
	# three minutes after they last asked, they are out of the line
	run -0 at_epoch $((T0 + 241)) heart-wake --souls "$d"
	echo "$output" | jq -e '.status == "idle"'
	run llm_count
	assert_output 2
}

@test "a bucket of 2 a minute holds when a process's clock was read a second before another's" {
	fleet 2
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 3)
	# the second wake's "now" is older than the first's request (it
	# read the clock, then waited for the bucket's lock): the request
	# counted after it is still in its minute
	at_epoch $((T0 + 61)) heart-wake --soul "$d/s01.yaml" --force > /dev/null
	at_epoch $((T0 + 60)) heart-wake --soul "$d/s02.yaml" --force > /dev/null
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$d/s03.yaml" --force
	[ "$(echo "$output" | jq -r .status)" = throttled ]
	run llm_count
	assert_output 2
}

@test "a clock set back an hour forgets the bucket's later minute rather than hold the endpoint" {
	fleet 2
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 3)
	at_epoch $((T0 + 3600)) heart-wake --soul "$d/s01.yaml" --force > /dev/null
	at_epoch $((T0 + 3600)) heart-wake --soul "$d/s02.yaml" --force > /dev/null
	run -0 at_epoch "$T0" heart-wake --soul "$d/s03.yaml" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	run llm_count
	assert_output 3
}

@test "a 429 from the provider slows the whole endpoint, not only its agent" {
	fleet 100
	llm_script '{"rate": {"requests": 2, "clock": "meta"}}'
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 5)
	at_epoch "$T0" heart-wake --souls "$d" > /dev/null
	run --separate-stderr at_epoch $((T0 + 60)) heart-wake --souls "$d" --jobs 1
	assert_failure 75
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/r1"
	run statuses "$BATS_TEST_TMPDIR/r1"
	assert_output "$(printf 's01 idle\ns02 idle\ns03 error\ns04 throttled\ns05 throttled')"
	run llm_count
	assert_output 3
	run jq -r 'select(.agent == "s04") | .reason' "$BATS_TEST_TMPDIR/r1"
	assert_output --partial "endpoint double: the provider answered 429 (too many requests); no request before 2026-11-22T09:02:"
	run -0 at_epoch $((T0 + 61)) heart-cap status --json
	[ "$(echo "$output" | jq -c 'select(.endpoint) | .["429s"]')" = 1 ]
	# once the provider's minute is over, the wakes deferred go first
	run -75 --separate-stderr at_epoch $((T0 + 125)) heart-wake --souls "$d" --jobs 1
	run statuses <(printf '%s\n' "$output")
	[ "${lines[0]}" = "s04 idle" ]
	[ "${lines[1]}" = "s05 idle" ]
}

@test "a round's wake waits for the endpoint within the round's minute rather than be deferred" {
	fleet 100
	# the provider: one request in 5 s; its 429 says when to come back
	llm_script '{"rate": {"requests": 1, "window": 5}}'
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 3)
	run --separate-stderr heart-wake --souls "$d" --jobs 1 --force
	assert_failure 75
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/r"
	run statuses "$BATS_TEST_TMPDIR/r"
	assert_output "$(printf 's01 idle\ns02 error\ns03 idle')"
	run llm_count
	assert_output 3
	# alone, the same wake is deferred at once
	heart-wake --soul "$d/s01.yaml" --force > /dev/null 2>&1 || :
	run -0 heart-wake --soul "$d/s03.yaml" --force
	[ "$(echo "$output" | jq -r .status)" = throttled ]
}

@test "the bucket counts the wake's first request in the second it is sent, not the one it was taken in" {
	fleet 100
	# a tool server that takes 3 s to start: the wake's files and its
	# tools come between the take and the request
	cat > "$BATS_TEST_TMPDIR/slow.yaml" <<EOF
name: slow
heart: { schedule: { interval: 1m } }
mcp_servers:
  late:
    command: $T/mcp-bad.py
    args: [slow]
    tools: [hello]
    timeout: $((10 * PATIENCE))s
EOF
	run --separate-stderr heart-wake --soul "$BATS_TEST_TMPDIR/slow.yaml" --force
	assert_success
	[ "$(echo "$output" | jq -r .status)" = idle ]
	t=$(jq -r .t "$LLM_DIR/requests.jsonl")
	# one request in the window, in the second the double saw it come
	run jq -c --argjson t "$t" '[.log[] | select(.[1] > 0) |
	    .[0] <= $t and $t - .[0] < 2]' \
	    "$(store_doc @double bucket.json)"
	assert_output '[true]'
}

@test "a reply's tokens count against the endpoint's tokens a minute" {
	fleet 100 50
	llm_script '{"replies": [{"text": "done", "usage": {"prompt_tokens": 40, "completion_tokens": 20}}]}'
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 2)
	run -0 at_epoch "$T0" heart-wake --souls "$d" --jobs 1 --force
	run statuses <(printf '%s\n' "$output")
	assert_output "$(printf 's01 ok\ns02 throttled')"
	run -0 at_epoch "$T0" heart-cap status --json
	[ "$(echo "$output" | jq -c 'select(.endpoint) | [.tokens, .tokens_per_minute]')" = "[60,50]" ]
}

@test "the soul cache: a not-due soul is not read again until its file changes: edit, touch, rename, replace-by-rename; one that does not read, or is a FIFO, is rebuilt" {
	d=$BATS_TEST_TMPDIR/souls
	mkdir -p "$d"
	printf 'name: scout\nheart: { schedule: { interval: 30m } }\n' > "$d/scout.yaml"
	run -0 cached "$T0"
	assert_output "not_due false"
	run -0 cached $((T0 + 1))
	assert_output "not_due true"
	# edited
	printf '# a comment\n' >> "$d/scout.yaml"
	run -0 cached $((T0 + 2))
	assert_output "not_due false"
	run -0 cached $((T0 + 3))
	assert_output "not_due true"
	# touched
	touch "$d/scout.yaml"
	run -0 cached $((T0 + 4))
	assert_output "not_due false"
	run -0 cached $((T0 + 5))
	assert_output "not_due true"
	# renamed
	mv "$d/scout.yaml" "$d/scout2.yaml"
	run -0 cached $((T0 + 6))
	assert_output "not_due false"
	run -0 cached $((T0 + 7))
	assert_output "not_due true"
	# replaced by rename, the same bytes
	cp -p "$d/scout2.yaml" "$BATS_TEST_TMPDIR/new.yaml"
	mv "$BATS_TEST_TMPDIR/new.yaml" "$d/scout2.yaml"
	run -0 cached $((T0 + 8))
	assert_output "not_due false"
	# a cache that does not read is rebuilt, never trusted
	printf 'garbage' > "$(ls "$HEART_STATE_DIR"/rounds/*.jsonl)"
	run -0 cached $((T0 + 9))
	assert_output "not_due false"
	run -0 cached $((T0 + 10))
	assert_output "not_due true"
	# so is one that is a FIFO nobody writes to: never waited on
	f=$(ls "$HEART_STATE_DIR"/rounds/*.jsonl)
	rm "$f" && mkfifo "$f"
	run -0 at_epoch $((T0 + 10)) timeout $((10 * PATIENCE)) heart-wake --souls "$d"
	[ "$(jq -r '"\(.status) \(.cached // false)"' <<< "$output")" = "not_due false" ]
	[ -f "$f" ]
	# its time come, the soul is read and woken
	llm_script '{"replies": [{"text": "[IDLE]"}]}'
	next=$(at_epoch $((T0 + 11)) heart-wake --souls "$d" | jq -r .next)
	run -0 cached "$(date -u -d "$next" +%s)"
	assert_output "idle false"
}

@test "after a wake the round keeps the agent's next skip: the next round gives it from the cache, as a fresh decision would give it" {
	d=$BATS_TEST_TMPDIR/souls
	mkdir -p "$d"
	# the idle chamber off: its reason would say how long it has been
	# quiet as of when it was decided, the wake's end (THE SOUL CACHE)
	printf 'name: scout\nheart: { schedule: { interval: 30m }, idle: { daily_cap: 0 } }\n' > "$d/scout.yaml"
	llm_script '{"replies": [{"text": "[IDLE]"}, {"text": "[IDLE]"}]}'
	for jobs in 1 2; do	# in this process, and by a worker
		export HEART_STATE_DIR=$BATS_TEST_TMPDIR/state$jobs
		next=$(at_epoch "$T0" heart-wake --souls "$d" | jq -r .next)
		t=$(date -u -d "$next" +%s)
		at_epoch "$t" heart-wake --souls "$d" --jobs $jobs > "$BATS_TEST_TMPDIR/woken"
		jq -e '.status == "idle"' "$BATS_TEST_TMPDIR/woken"
		at_epoch $((t + 60)) heart-wake --souls "$d" > "$BATS_TEST_TMPDIR/kept"
		at_epoch $((t + 60)) heart-wake --soul "$d/scout.yaml" > "$BATS_TEST_TMPDIR/fresh"
		jq -e '.status == "not_due" and .cached == true' "$BATS_TEST_TMPDIR/kept"
		run diff <(jq -S 'del(.wake_id, .at, .duration_ms, .cached)' "$BATS_TEST_TMPDIR/kept") \
		    <(jq -S 'del(.wake_id, .at, .duration_ms)' "$BATS_TEST_TMPDIR/fresh")
		assert_success
	done
	run llm_count
	assert_output 2
}

@test "a soul without a timezone is judged in the machine's zone, whatever zone the soul before it in the round names" {
	d=$BATS_TEST_TMPDIR/souls
	mkdir -p "$d"
	printf 'name: a\nheart: { timezone: Asia/Tokyo, schedule: { interval: 30m, active_hours: "09:00-09:30" } }\n' > "$d/a.yaml"
	printf 'name: b\nheart: { schedule: { interval: 30m, active_hours: "09:00-09:30" } }\n' > "$d/b.yaml"
	# 09:00 the next day: in Tokyo, then in Paris
	run at "2026-11-22 12:00:00" env TZ=Europe/Paris heart-wake --explain --souls "$d"
	[ "$status" -eq 0 ]
	run jq -r 'select(.chamber == "schedule") | "\(.agent) \(.next)"' <<< "$output"
	assert_output $'a 2026-11-23T00:00:00Z\nb 2026-11-23T08:00:00Z'
	run -0 at "2026-11-22 12:00:00" env TZ=Europe/Paris heart-wake --explain --soul "$d/a.yaml" --soul "$d/b.yaml"
	run jq -r 'select(.chamber == "schedule") | "\(.agent) \(.next)"' <<< "$output"
	assert_output $'a 2026-11-23T00:00:00Z\nb 2026-11-23T08:00:00Z'
}

@test "a soul cache of version 2 or 3 still reads: a 2's skips are dropped and their souls read again, a 3's kept; either is written again as 4" {
	d=$BATS_TEST_TMPDIR/souls
	mkdir -p "$d"
	printf 'name: scout\nheart: { schedule: { interval: 30m } }\n' > "$d/scout.yaml"
	run -0 cached "$T0"
	assert_output "not_due false"
	f=$(ls "$HEART_STATE_DIR"/rounds/*.jsonl)
	run head -n 1 "$f"
	assert_output --regexp '^\{"v":4,.*"gen":[1-9][0-9]*\}$'
	sed -i '1s/"v":4/"v":2/' "$f"
	run -0 cached $((T0 + 1))
	assert_output "not_due false"
	run head -n 1 "$f"
	assert_output --partial '{"v":4,'
	run -0 cached $((T0 + 2))
	assert_output "not_due true"
	sed -i -E '1s/"v":4(.*),"gen":[0-9]+/"v":3\1/' "$f"
	run head -n 1 "$f"
	refute_output --partial gen
	run -0 cached $((T0 + 3))
	assert_output "not_due true"
	run head -n 1 "$f"
	assert_output --partial '{"v":4,'
}

# gen_of FILE: the GEN of a soul cache's head (as text: jq 1.6 would
# round a number past 2^53)
gen_of() {
	head -n 1 "$1" | sed -nE 's/.*"gen":([0-9]+)[,}].*/\1/p'
}

@test "a round appends what changed to the soul cache's delta, and writes the base again, of a new gen, only past the delta's bound" {
	d=$BATS_TEST_TMPDIR/souls
	IV=1d mksouls "$d" s 99 > /dev/null
	IV=1d mksouls "$d" t 60 > /dev/null
	at_epoch "$T0" heart-wake --souls "$d" > /dev/null
	f=$(ls "$HEART_STATE_DIR"/rounds/*.jsonl)
	[ ! -e "${f%.jsonl}.delta" ]
	base=$(stat -c '%i %s %Y' "$f") gen=$(gen_of "$f")
	touch "$d"/s0[1-5].yaml
	run -0 at_epoch $((T0 + 60)) heart-wake --souls "$d"
	run jq -r 'select(.cached != true) | .agent' <<< "$output"
	assert_output $'s01\ns02\ns03\ns04\ns05'
	# the base as it was; the five in the delta, after its head
	[ "$(stat -c '%i %s %Y' "$f")" = "$base" ]
	[ "$(gen_of "${f%.jsonl}.delta")" = "$gen" ]
	run jq -r 'if type == "object" then "head" else .[0] end' "${f%.jsonl}.delta"
	assert_output $'head\ns01.yaml\ns02.yaml\ns03.yaml\ns04.yaml\ns05.yaml'
	# the next round serves all from the base and the delta
	run -0 at_epoch $((T0 + 120)) heart-wake --souls "$d"
	run jq -r 'select(.cached != true) | .agent' <<< "$output"
	assert_output ""
	[ "$(wc -l <<< "$output")" = 1 ]
	# a soul gone: a line in the delta that forgets it
	rm "$d/t60.yaml"
	at_epoch $((T0 + 180)) heart-wake --souls "$d" > /dev/null
	run tail -n 1 "${f%.jsonl}.delta"
	assert_output '["t60.yaml",[0,0,0,0,0,0,0],0,0,null]'
	# 158 skips kept again are more than the delta's 64 KiB: the base
	# is written whole, of a new gen, and the delta goes
	touch "$d"/*.yaml
	at_epoch $((T0 + 240)) heart-wake --souls "$d" > /dev/null
	[ ! -e "${f%.jsonl}.delta" ]
	[ "$(gen_of "$f")" != "$gen" ]
	[ "$(grep -c '^\["' "$f")" = 158 ]
	run -0 at_epoch $((T0 + 300)) heart-wake --souls "$d"
	[ "$(jq -r 'select(.cached == true) | .agent' <<< "$output" | wc -l)" = 158 ]
}

@test "a soul cache's delta extends only the base of its gen, a last line cut is left out, and one that does not read is never trusted" {
	d=$BATS_TEST_TMPDIR/souls
	IV=1d mksouls "$d" s 3 > /dev/null
	at_epoch "$T0" heart-wake --souls "$d" > /dev/null
	f=$(ls "$HEART_STATE_DIR"/rounds/*.jsonl) gen=$(gen_of "$f")
	delta=${f%.jsonl}.delta
	# a delta line standing for s02's, its skip's reason changed: what
	# a round gives when it trusts the delta
	{ head -n 1 "$f"; grep '^\["s02.yaml"' "$f" |
	    sed 's/"reason":"[^"]*"/"reason":"from the delta"/'; } > "$delta"
	run -0 at_epoch $((T0 + 60)) heart-wake --souls "$d"
	run jq -r 'select(.agent == "s02") | .reason' <<< "$output"
	assert_output "from the delta"
	# of another gen: ignored, and the base written again without it
	sed -i "1s/\"gen\":$gen/\"gen\":$((gen ^ 1))/" "$delta"
	run -0 at_epoch $((T0 + 120)) heart-wake --souls "$d"
	run jq -r 'select(.agent == "s02") | .reason' <<< "$output"
	refute_output "from the delta"
	[ ! -e "$delta" ]
	[ "$(gen_of "$f")" != "$gen" ]
	# a delta whose last line was cut (its writer killed, or still
	# appending): read without it, and the base written again whole
	touch "$d/s01.yaml"
	at_epoch $((T0 + 180)) heart-wake --souls "$d" > /dev/null
	[ -s "$delta" ]
	gen=$(gen_of "$f")
	printf '["s03.yaml",[1,2' >> "$delta"
	run -0 at_epoch $((T0 + 240)) heart-wake --souls "$d"
	run jq -r '"\(.agent) \(.status) \(.cached // false)"' <<< "$output"
	assert_output $'s01 not_due true\ns02 not_due true\ns03 not_due true'
	[ ! -e "$delta" ]
	[ "$(gen_of "$f")" != "$gen" ]
	# a line that does not read: the cache is built again
	touch "$d/s01.yaml"
	at_epoch $((T0 + 300)) heart-wake --souls "$d" > /dev/null
	printf '["s03.yaml",[1,2]]\n' >> "$delta"
	run -0 at_epoch $((T0 + 360)) heart-wake --souls "$d"
	run jq -r '"\(.agent) \(.status) \(.cached // false)"' <<< "$output"
	assert_output $'s01 not_due false\ns02 not_due false\ns03 not_due false'
	[ ! -e "$delta" ]
	run -0 at_epoch $((T0 + 420)) heart-wake --souls "$d"
	run jq -r '"\(.agent) \(.status) \(.cached // false)"' <<< "$output"
	assert_output $'s01 not_due true\ns02 not_due true\ns03 not_due true'
}

@test "heart-round runs one heart-wake --souls for the round" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 3)
	llm_script '{"replies": [{"text": "The 9:40 to Lyon is late."}, {"text": "[IDLE]"}]}'
	at_epoch "$T0" "$T/../contrib/heart-round" "$d"
	run at_epoch $((T0 + 60)) env HEART_JOBS=1 "$T/../contrib/heart-round" "$d"
	assert_success
	assert_output "The 9:40 to Lyon is late."
	run llm_count
	assert_output 3
}

@test "a round sees a new agent at its start: its skip then, its first slot the one after, and no wait for it in the span" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 3)
	run --separate-stderr at_epoch "$T0" heart-wake --souls "$d" --jobs 2 --span 50s
	assert_success
	# each a skip of the round's start naming its first slot within
	# the minute after it (a wake begun at that slot would have seen
	# the agent first then, and found its first slot a minute on)
	[ "$(wc -l <<< "$output")" = 3 ]
	jq -e -s --argjson t "$T0" 'map(select(.status == "not_due" and
	    (.at | fromdate) == $t and (.next | fromdate) > $t and
	    (.next | fromdate) <= $t + 60 and
	    (.reason | test("first slot")))) | length == 3' <<< "$output"
	# the next round, a minute on, wakes the three at its start
	run -0 --separate-stderr at_epoch $((T0 + 60)) heart-wake --souls "$d" --jobs 2 --span 50s
	jq -e -s --argjson t $((T0 + 60)) 'map(select(.status == "idle" and
	    (.at | fromdate) == $t)) | length == 3' <<< "$output"
	run llm_count
	assert_output 3
}

@test "--span: a wake due within the span is begun at its second, never before; one due after it is a skip; a round at once wakes it once" {
	d=$(IV=10m mksouls "$BATS_TEST_TMPDIR/souls" s 3)
	at_epoch "$T0" heart-wake --souls "$d" > "$BATS_TEST_TMPDIR/first"
	# the soul due soonest, and when; the others are due 20 s or more later
	read -r who next < <(jq -rs 'sort_by(.next) | .[0] |
	    "\(.agent) \(.next | fromdate)"' "$BATS_TEST_TMPDIR/first")
	jq -e -s --argjson n "$next" '[.[] | select(.next | fromdate > $n)] |
	    map(.next | fromdate - $n) | min >= 20' "$BATS_TEST_TMPDIR/first"
	# without a span, 2 s before its slot, it is not due
	run --separate-stderr at_epoch $((next - 2)) heart-wake --souls "$d"
	assert_success
	[ "$(jq -r "select(.agent == \"$who\") | .status" <<< "$output")" = not_due ]
	llm_script '{"delay": 2, "replies": [{"text": "[IDLE]"}]}'
	(at_epoch $((next - 2)) exec heart-wake --souls "$d" --jobs 2 \
	    --span 5s > "$BATS_TEST_TMPDIR/span") &
	pid=$!
	# its skips are out before it waits for the wake
	two_lines() { [ "$(wc -l < "$BATS_TEST_TMPDIR/span")" = 2 ]; }
	wait_until 10 two_lines
	# a round started during the wake, without a span: the lock keeps
	# it to one wake of the agent
	asked() { [ "$(llm_count)" = 1 ]; }
	wait_until 20 asked
	at_epoch $((next + 1)) heart-wake --souls "$d" > "$BATS_TEST_TMPDIR/other"
	wait "$pid"
	# one line a soul, the due one woken at or after its slot
	[ "$(wc -l < "$BATS_TEST_TMPDIR/span")" = 3 ]
	[ "$(jq -r .agent "$BATS_TEST_TMPDIR/span" | sort -u | wc -l)" = 3 ]
	jq -e -s --arg a "$who" --argjson n "$next" 'map(select(.agent == $a))[0] |
	    .status == "idle" and (.at | fromdate) >= $n' "$BATS_TEST_TMPDIR/span"
	jq -e -s --arg a "$who" 'map(select(.agent != $a) | .status) |
	    unique == ["not_due"]' "$BATS_TEST_TMPDIR/span"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/other")" = 3 ]
	jq -e -s --arg a "$who" 'map(select(.agent == $a))[0].status == "busy"' \
	    "$BATS_TEST_TMPDIR/other"
	run llm_count
	assert_output 1
	# --dry-run waits for nothing; --explain wakes nothing
	run at_epoch $((next + 60)) heart-wake --souls "$d" --span 5s --dry-run
	assert_success
	run -64 heart-wake --explain --souls "$d" --span 5s
	assert_output --partial "--span: a round's"
	run -64 heart-wake --souls "$d" --span 2h
	assert_output --partial "--span: a duration from 0s to 1h"
}

@test "--span with --jobs 1: the round sleeps to the wake's second and wakes it in this process" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 2)
	at_epoch "$T0" heart-wake --souls "$d" > "$BATS_TEST_TMPDIR/first"
	read -r who next < <(jq -rs 'sort_by(.next) | .[0] |
	    "\(.agent) \(.next | fromdate)"' "$BATS_TEST_TMPDIR/first")
	llm_script '{"replies": [{"text": "[IDLE]"}]}'
	run --separate-stderr at_epoch $((next - 1)) heart-wake --souls "$d" --span 3s
	assert_success
	jq -e -s --arg a "$who" --argjson n "$next" 'map(select(.agent == $a))[0] |
	    .status == "idle" and (.at | fromdate) >= $n' <<< "$output"
	[ "$(printf '%s\n' "$output" | wc -l)" = 2 ]
	run llm_count
	assert_output 1
}

@test "heart-round's span (HEART_SPAN, default 50s): a wake due within it is the round's" {
	d=$(IV=10m mksouls "$BATS_TEST_TMPDIR/souls" s 1)
	next=$(at_epoch "$T0" heart-wake --souls "$d" | jq '.next | fromdate')
	llm_script '{"replies": [{"text": "The 9:40 to Lyon is late."}]}'
	run at_epoch $((next - 2)) env HEART_SPAN=0s "$T/../contrib/heart-round" "$d"
	assert_success
	assert_output ""
	run at_epoch $((next - 2)) "$T/../contrib/heart-round" "$d"
	assert_success
	assert_output "The 9:40 to Lyon is late."
	run llm_count
	assert_output 1
}

@test "--souls of a symbolic link that leads nowhere says so, as --soul does, exit 64" {
	ln -s "$BATS_TEST_TMPDIR/gone" "$BATS_TEST_TMPDIR/souls"
	run --separate-stderr heart-wake --souls "$BATS_TEST_TMPDIR/souls"
	assert_failure 64
	[ "$stderr" = "heart-wake: $BATS_TEST_TMPDIR/souls: a symbolic link to $BATS_TEST_TMPDIR/gone, which is not there" ]
}

@test "--explain --souls of a directory with no soul in it says so, exit 0; a round of it stays silent" {
	mkdir "$BATS_TEST_TMPDIR/souls"
	echo '- [ ] a checklist, not a soul' > "$BATS_TEST_TMPDIR/souls/HEARTBEAT.md"
	run --separate-stderr heart-wake --explain --souls "$BATS_TEST_TMPDIR/souls"
	assert_success
	assert_output ""
	[ "$stderr" = "heart-wake: $BATS_TEST_TMPDIR/souls: no soul here to explain (souls are *.yaml, *.yml, and *.md files that open with a --- line; see ROUNDS in heart-wake(1))" ]
	run --separate-stderr heart-wake --souls "$BATS_TEST_TMPDIR/souls"
	assert_success
	assert_output ""
	[ "$stderr" = "" ]
}

@test "--explain: with no fleet file the rate gate says so, not that no endpoint of one matches" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 1)
	unset HEART_FLEET
	run -0 heart-wake --explain --soul "$d/s01.yaml" --chamber schedule
	[ "$(echo "$output" | jq -r '.gates.rate.reason')" = "no fleet file (HEART_FLEET is unset): no rate limit" ]
	fleet 5 1000
	sed -i 's/model: double/model: another/' "$HEART_FLEET"
	run -0 heart-wake --explain --soul "$d/s01.yaml" --chamber schedule
	[ "$(echo "$output" | jq -r '.gates.rate.reason')" = "no endpoint of $HEART_FLEET matches the soul's base_url and model (no rate limit)" ]
}

@test "--explain gives an endpoint's use against the limits it has; a limit of 0 is none, and said so" {
	d=$(mksouls "$BATS_TEST_TMPDIR/souls" s 1)
	reason() {	# reason RPM TPM: the rate gate's reason under such a fleet file
		fleet "$1" "$2"
		run -0 heart-wake --explain --soul "$d/s01.yaml" --chamber schedule
		echo "$output" | jq -r '.gates.rate.reason'
	}
	[ "$(reason 5 1000)" = "endpoint double: 0 of 5 requests, 0 of 1000 tokens a minute used" ]
	[ "$(reason 5 0)" = "endpoint double: 0 of 5 requests a minute used (no token limit)" ]
	[ "$(reason 0 1000)" = "endpoint double: 0 of 1000 tokens a minute used (no request limit)" ]
	[ "$(reason 0 0)" = "endpoint double: no limit set (0 requests, 0 tokens in the last minute)" ]
}
