#!/usr/bin/env bats
# heart-pulse: the pulse chamber (liveness over MQTT) and its watcher,
# against a real mosquitto on a loopback port.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	PIDS=()
	mkdir -p "$BATS_TEST_TMPDIR/souls"
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	broker_stop
	llm_stop
}

soul() {	# soul NAME [YAML]: a soul in the test's souls directory
	local y='heart: {pulse: {interval: 1s}}'
	printf '%s\n' "${2:-$y}" > "$BATS_TEST_TMPDIR/souls/$1.yaml"
	echo "$BATS_TEST_TMPDIR/souls/$1.yaml"
}

pulse() {	# pulse ARGS...: start heart-pulse in the background
	heart-pulse --broker "$BROKER_URL" "$@" \
	    2>> "$BATS_TEST_TMPDIR/pulse.err" 3>&- &
	PULSE=$!
	PIDS+=("$PULSE")
}

sub() {		# sub ARGS...: mosquitto_sub on the test's broker (its
		# -W timeout times PATIENCE)
	local a=()
	while [ $# -gt 0 ]; do
		case $1 in
		-W)	a+=(-W $(($2 * PATIENCE))); shift 2 ;;
		*)	a+=("$1"); shift ;;
		esac
	done
	mosquitto_sub -h 127.0.0.1 -p "$BROKER_PORT" "${a[@]}"
}

subscribed() {	# subscribed FILE ARGS...: a mosquitto_sub in the background,
		# its lines in FILE; back once it is subscribed
	local f=$1
	shift
	mosquitto_sub -h 127.0.0.1 -p "$BROKER_PORT" -t heart-test/ready "$@" \
	    > "$f" 3>&- &
	SUB=$!		# (not sub: a function's $! would be its subshell)
	PIDS+=("$SUB")
	wait_until 10 marked "$f" ready
}

marked() {	# marked FILE WORD: publish WORD on the marker topic; is it in FILE?
	mosquitto_pub -h 127.0.0.1 -p "$BROKER_PORT" -t heart-test/ready -m "$2"
	grep -q "^$2\$" "$1"
}

first_json() {	# first_json FILE: wait for the first JSON line in FILE, print it
	wait_until 10 grep -q '^{' "$1" && grep -m 1 '^{' "$1"
}

has_events() {	# has_events N EVENT [REASON]
	[ "$(events "$2" "${3:-}")" -ge "$1" ]
}

ready_seen() {	# publish the status of an agent "ready" that never goes
		# offline; has the watcher reported it?
	mosquitto_pub -h 127.0.0.1 -p "$BROKER_PORT" -t heart/ready/status \
	    -m '{"status":"online","interval":86400,"misses":1000}' &&
	    [ "$(jq -c 'select(.agent == "ready")' \
	    "$BATS_TEST_TMPDIR/watch.out" 2>/dev/null | wc -l)" -ge 1 ]
}

watcher_subscribed() {	# the watcher reads what is published from now on
	wait_until 10 ready_seen
}

attempts() {	# attempts N: the broker has seen N connections or more
	[ "$(grep -c 'New connection from' "$BATS_TEST_TMPDIR/broker.log")" -ge "$1" ]
}

@test "pulses arrive every interval with increasing sequence numbers" {
	broker_start
	soul alpha >/dev/null; soul beta >/dev/null
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	run sub -t 'heart/+/pulse' -C 8 -W 10
	assert_success
	echo "$output" > "$BATS_TEST_TMPDIR/p"
	for a in alpha beta; do
		jq -s -e --arg a "$a" 'map(select(.agent == $a)) | . as $p |
		    length >= 3 and
		    ([range(1; length) | $p[.].seq - $p[. - 1].seq] |
		     all(. == 1)) and
		    ([range(1; length) | $p[.].mono_ms - $p[. - 1].mono_ms] |
		     all(. >= 500))' "$BATS_TEST_TMPDIR/p"
	done
	# what a pulse says, and nothing else (due: the schedule's next
	# slot, counted from the publisher's first sight of the agent)
	head -1 "$BATS_TEST_TMPDIR/p" | jq -e 'keys == (["agent","at","breaker",
	    "cap","due","host","mono_ms","seq","v","waking"] | sort) and
	    .breaker == "closed" and .waking == false and
	    (.cap | del(.resets)) == {"used":0,"cap":48,"tokens":0} and
	    .cap.resets > now and .cap.resets <= now + 86400 and
	    (.at | test("Z$"))'
}

@test "a fleet's pulses are spread across the interval, not sent in one burst" {
	broker_start
	for i in 0 1 2 3 4 5 6 7 8 9; do soul "a$i" 'heart: {pulse: {interval: 2s}}' >/dev/null; done
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	run sub -t 'heart/+/pulse' -C 20 -W 10
	assert_success
	# ten agents, one interval: ten distinct moments ~200 ms apart
	echo "$output" | jq -s -e '.[0:10] | [.[].mono_ms] as $t |
	    ($t | max) - ($t | min) >= 1000 and
	    ([.[].agent] | unique | length) == 10'
}

@test "a pulse carries breaker, running wake and cap read from the state files" {
	broker_start
	s=$(soul scout)
	heart-cap take --soul "$s"
	heart-cap take scout
	for i in 1 2 3; do heart-breaker record scout llm-fail > /dev/null; done
	sleep 30 & sleeper=$!
	PIDS+=("$sleeper")
	state_write scout wake.json "{\"running\":{\"chamber\":\"schedule\",\"since\":\"2026-11-22T10:00:00Z\",\"pid\":$sleeper}}"
	pulse --soul "$s"
	run sub -t heart/scout/pulse -C 1 -W 5
	assert_success
	echo "$output" | jq -e '.breaker == "open" and .waking == "schedule" and
	    .cap.used == 2 and .cap.cap == 48'
	# a wake whose process is gone is not running
	kill "$sleeper"; wait "$sleeper" 2>/dev/null || true
	run sub -t heart/scout/pulse -C 1 -W 5
	echo "$output" | jq -e '.waking == false'
}

@test "a pulse carries the day's cost for an agent with a price, and none without" {
	broker_start
	s=$(soul scout 'heart: {pulse: {interval: 1s}}
llm: {price: {input: 1.0, output: 4.0}}')
	soul plain > /dev/null
	heart-cap take --soul "$s"
	heart-cap take --soul "$BATS_TEST_TMPDIR/souls/plain.yaml"
	d=$HEART_STATE_DIR/agents/scout
	state_write scout cap.json "$(jq -c '.cost = 0.4213' "$d/cap.json")"
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	run sub -t 'heart/+/pulse' -C 2 -W 5
	assert_success
	echo "$output" | jq -se 'map({(.agent): .cap}) | add |
	    .scout.cost == 0.4213 and .scout.used == 1 and
	    (.plain | has("cost") | not)'
	# exact to the nanodollar, as the dashboard reads it
	state_write scout cap.json "$(jq -c '.cost = 12.000000001' "$d/cap.json")"
	wait_until 5 eval 'sub -t heart/scout/pulse -C 1 -W 2 | grep -q "\"cost\":12.000000001}"'
}

@test "README says what the dashboard shows of a pulse's cost as heart-pulse(1) says the pulse carries it" {
	plain_only
	run -0 bash -c "tr -s ' \t\n' '   ' < '$T/../README'"
	refute_output --partial "does not send a cost"
	assert_output --partial "cost today (the day's cost in dollars, which the pulse carries for an agent whose soul has a price; \"no price\" for one without)"
	run -0 bash -c "mandoc -Tascii '$T/../man/heart-pulse.1' | col -b | tr -s ' \t\n' '   '"
	assert_output --partial "for an agent whose soul has a price (llm.price), the day's cost in dollars, ghosts included (absent with no price, never 0)"
	assert_output --partial "cap.cost is the day's spend in US dollars"
	refute_output --partial "not send it yet"
}

@test "a pulse says why the breaker is open, the last wake and its error, tokens, the reset and the last answer" {
	broker_start
	s=$(soul scout)
	for i in 1 2 3; do
		heart-breaker record --soul "$s" tool-fail \
		    --reason 'quote "API": HTTP 502 \ again' > /dev/null
	done
	heart-cap take scout
	d=$HEART_STATE_DIR/agents/scout
	state_write scout cap.json "$(jq -c '.tokens = {prompt: 120, completion: 54}' "$d/cap.json")"
	now=$(date +%s)
	state_write scout wake.json "$(jq -nc --argjson t "$now" '{v: 1, agent: "scout",
	    last: {schedule: {at: "x", ts: ($t - 100), status: "ok"},
	           idle: {at: "x", ts: ($t - 10), status: "error"}},
	    running: null, last_error: {at: "x", ts: ($t - 10), status: "error",
	    message: "HTTP 429\nToo Many Requests"}}')"
	pulse --soul "$s"
	run sub -t heart/scout/pulse -C 1 -W 5
	assert_success
	until=$(jq -r .until "$d/breaker.json")
	echo "$output" | jq -e --argjson t "$now" --arg u "$until" '
	    .breaker == "open" and (.breaker_until | todate) == $u and
	    .breaker_trigger == "tool" and
	    .breaker_reason == "quote \"API\": HTTP 502 \\ again" and
	    .cap.tokens == 174 and .cap.used == 1 and
	    .last_wake == {chamber: "idle", status: "error", ts: ($t - 10),
	        error: "HTTP 429 Too Many Requests"} and
	    .answer == $t - 100 and has("quiet") == false'
	# a later idle wake: no error, and the answer before it is remembered
	state_write scout wake.json "$(jq -nc --argjson t "$now" '{v: 1,
	    last: {schedule: {ts: ($t - 5), status: "idle"},
	           idle: {ts: ($t - 10), status: "error"}}, running: null}')"
	heart-breaker reset scout > /dev/null
	wait_until 5 eval 'sub -t heart/scout/pulse -C 1 -W 2 |
	    jq -e --argjson t "$now" ".breaker == \"closed\" and
	    .last_wake == {chamber: \"schedule\", status: \"idle\", ts: (\$t - 5)}"'
	run sub -t heart/scout/pulse -C 1 -W 5
	echo "$output" | jq -e --argjson t "$now" '.answer == $t - 100 and
	    (has("breaker_until") or has("breaker_reason") or
	     has("breaker_trigger")) == false'
}

@test "a pulse's breaker is what heart-breaker status says now: half-open once the cooldown has passed" {
	broker_start
	s=$(soul scout)
	until=$(date -u -d @$(($(date +%s) + 8)) +%Y-%m-%dT%H:%M:%SZ)
	state_write scout breaker.json "{\"v\":1,\"state\":\"open\",\"until\":\"$until\",\"trigger\":\"llm\",\"reason\":\"HTTP 429\"}"
	pulse --soul "$s"
	run sub -t heart/scout/pulse -C 1 -W 5
	echo "$output" | jq -e '.breaker == "open"'
	heart-breaker status scout | jq -e '.state == "open"'	# (8 s: time enough)
	# no file changes: the cooldown passes
	wait_until 20 eval 'sub -t heart/scout/pulse -C 1 -W 2 | jq -e ".breaker == \"half_open\"" > /dev/null'
	heart-breaker status scout | jq -e '.state == "half_open"'
}

@test "a pulse says quiet when every chamber is outside its active hours" {
	broker_start
	h=$(date -u +%H)
	off=$(printf '%02d:00-%02d:00' $(((10#$h + 2) % 24)) $(((10#$h + 3) % 24)))
	on=$(printf '%02d:00-%02d:00' $(((10#$h + 23) % 24)) $(((10#$h + 2) % 24)))
	soul asleep "heart: {pulse: {interval: 1s}, schedule: {active_hours: \"$off\"}, idle: {active_hours: \"$off\"}}" > /dev/null
	soul half "heart: {pulse: {interval: 1s}, schedule: {active_hours: \"$off\"}, idle: {active_hours: \"$on\"}}" > /dev/null
	soul noidle "heart: {pulse: {interval: 1s}, schedule: {active_hours: \"$off\"}, idle: {daily_cap: 0}}" > /dev/null
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	run sub -t 'heart/+/pulse' -C 6 -W 10
	assert_success
	echo "$output" | jq -s -e 'map({(.agent): (.quiet // false)}) | add ==
	    {"asleep": true, "half": false, "noidle": true}'
}

# last_wake AGENT EPOCH: wake.json of an agent whose schedule last woke then
last_wake() {
	state_write "$1" wake.json "{\"first_seen_ts\":$2,\"last\":{\"schedule\":{\"ts\":$2,\"status\":\"idle\"}},\"running\":null}"
}

# watched AGENT JQ: the watcher's snapshot line of AGENT satisfies JQ
# (the snapshot exits 0, or 1 while some agent is not online yet)
watched() {
	run heart-pulse --watch --snapshot --broker "$BROKER_URL"
	[ "$status" -eq 0 ] || [ "$status" -eq 1 ] || return 1
	echo "$output" | jq -e -s "map(select(.agent == \"$1\"))[0] | $2" > /dev/null
}

@test "a schedule nobody wakes is overdue on a watcher in another process; capped or quiet it is not, the reason shown; a wake ends it" {
	broker_start
	llm_start
	h=$(date -u +%H)
	off=$(printf '%02d:00-%02d:00' $(((10#$h + 2) % 24)) $(((10#$h + 3) % 24)))
	late=$(soul late 'heart: {pulse: {interval: 1s}, schedule: {interval: 1m}, idle: {daily_cap: 0}}')
	capped=$(soul capped 'heart: {pulse: {interval: 1s}, schedule: {interval: 1m, daily_cap: 1}, idle: {daily_cap: 0}}')
	soul quiet "heart: {pulse: {interval: 1s}, schedule: {interval: 1m, active_hours: \"$off\"}, idle: {daily_cap: 0}}" > /dev/null
	soul never 'heart: {pulse: {interval: 1s}, schedule: {daily_cap: 0}, idle: {daily_cap: 0}}' > /dev/null
	ago=$(($(date +%s) - 600))
	for a in late capped quiet never; do last_wake "$a" "$ago"; done
	# capped: heart-wake runs, and the cap refuses it
	heart-cap take --soul "$capped"
	run -0 heart-wake --soul "$capped"
	[ "$(output_field status)" = capped ]
	watcher
	pulse --souls "$BATS_TEST_TMPDIR/souls" > "$BATS_TEST_TMPDIR/stats"
	wait_until 10 has_events 1 overdue
	# the publisher's counters count it
	kill -USR1 "$PULSE"
	wait_until 5 grep -q '"overdue":1}' "$BATS_TEST_TMPDIR/stats"
	run -0 jq -c 'select(.event == "overdue") | [.agent, (.due | test("Z$"))]' "$BATS_TEST_TMPDIR/watch.out"
	assert_output '["late",true]'
	wait_until 10 watched late '.overdue == true and (.due | type) == "number"'
	watched capped '.overdue == false and .skip.status == "capped" and (.skip.reason | test("daily cap reached"))'
	watched quiet '.overdue == false'
	watched never '.overdue == false and .due == null'
	# a heart-wake runs again: the schedule is on time
	run -0 heart-wake --soul "$late"
	wait_until 10 has_events 1 overdue_end
	run -0 events overdue_end
	assert_output 1
	wait_until 10 watched late '.overdue == false'
	kill -USR1 "$PULSE"
	wait_until 5 grep -q '"overdue":0}' "$BATS_TEST_TMPDIR/stats"
}

@test "an idle chamber nobody wakes is overdue; the user speaking (input or history) or a heart-wake that wakes it ends it" {
	broker_start
	llm_start
	y='heart: {pulse: {interval: 1s}, schedule: {daily_cap: 0}, idle: {after: 1m, daily_cap: 5}}'
	soul spoken "$y" > /dev/null
	soul told "$y" > /dev/null
	woken=$(soul woken "$y")
	soul off 'heart: {pulse: {interval: 1s}, schedule: {daily_cap: 0}, idle: {after: 1m, daily_cap: 0}}' > /dev/null
	ago=$(($(date +%s) - 600))
	for a in spoken told woken off; do
		mkdir -p "$HEART_STATE_DIR/agents/$a"
		touch -d "@$ago" "$HEART_STATE_DIR/agents/$a/input"
	done
	watcher
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	wait_until 10 has_events 3 overdue
	wait_until 10 watched spoken ".overdue == true and .due == $((ago + 60))"
	watched woken '.overdue == true'
	watched off '.overdue == false and .due == null'
	# the user speaks through heart-ghost: due idle.after from now
	now=$(date +%s)
	run -0 heart-ghost --user spoken hi
	wait_until 10 watched spoken ".overdue == false and .due >= $((now + 60))"
	# a message of the user arrives in the history alone (its input
	# file untouched): read all the same
	mkdir -p "$BATS_TEST_TMPDIR/other/agents/told"
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/other heart-ghost --user told hi
	cp "$BATS_TEST_TMPDIR/other/agents/told/history.jsonl" \
	    "$HEART_STATE_DIR/agents/told/.history.tmp"
	mv "$HEART_STATE_DIR/agents/told/.history.tmp" \
	    "$HEART_STATE_DIR/agents/told/history.jsonl"
	wait_until 10 watched told ".overdue == false and .due >= $((now + 60))"
	# a heart-wake wakes the third in its idle chamber
	run -0 heart-wake --soul "$woken"
	[ "$(output_field chamber)" = idle ]
	wait_until 10 watched woken '.overdue == false and .due > '"$now"
	wait_until 10 has_events 3 overdue_end
}

@test "with a server store (HEART_STORE) the pulse reads no state: its fields are null, never guessed from the files, and nothing is overdue" {
	broker_start
	s=$(soul late 'heart: {pulse: {interval: 1s}, schedule: {interval: 1m}, idle: {daily_cap: 0}}')
	# files a heart-wake on the file store would have left: overdue there
	last_wake late $(($(date +%s) - 600))
	state_write late breaker.json '{"state":"open","until":1}'
	watcher
	HEART_STORE=redis://127.0.0.1:1 pulse --soul "$s"
	wait_until 10 watched late '.status == "online" and has("overdue")'
	watched late '.overdue == false and .due == null and .breaker == null and .cap == null and .waking == null and .last_wake == null'
	run -0 events overdue
	assert_output 0
	run -0 cat "$BATS_TEST_TMPDIR/pulse.err"
	assert_output ''
}

@test "a wake starting in the state directory shows up as a pulse within a second" {
	broker_start
	s=$(soul scout 'heart: {pulse: {interval: 60s}}')
	pulse --soul "$s"
	run sub -t heart/scout/status -C 1 -W 5	# it is up
	assert_success
	subscribed "$BATS_TEST_TMPDIR/extra" -t heart/scout/pulse
	state_write scout wake.json "{\"running\":{\"chamber\":\"idle\",\"since\":\"x\",\"pid\":$$}}"
	first_json "$BATS_TEST_TMPDIR/extra" |
	    jq -e '.waking == "idle" and .seq == 2'
	# and its end, as fast
	kill "$SUB"
	subscribed "$BATS_TEST_TMPDIR/extra2" -t heart/scout/pulse
	state_write scout wake.json '{"running":null}'
	first_json "$BATS_TEST_TMPDIR/extra2" |
	    jq -e '.waking == false and .seq == 3'
}

@test "without inotify, state is still read at every pulse" {
	broker_start
	s=$(soul scout)
	pulse --soul "$s" --no-inotify
	run sub -t heart/scout/pulse -C 1 -W 5
	echo "$output" | jq -e '.breaker == "closed"'
	state_write scout breaker.json '{"state":"half_open"}'
	# no extra pulse comes: only the next scheduled one tells
	run sub -t heart/scout/pulse -C 2 -W 5
	echo "${lines[1]}" | jq -e '.breaker == "half_open"'
}

@test "a torn wake.json is read from its version before, said once, and pulses go on" {
	broker_start
	s=$(soul scout)
	d=$HEART_STATE_DIR/agents/scout
	# the version before: the claim of a wake still running (this shell)
	state_write scout .wake.json.tmp "{\"v\":1,\"agent\":\"scout\",\"last\":{\"schedule\":{\"at\":\"2026-11-22T10:00:00Z\",\"ts\":1795341600,\"status\":\"running\"},\"idle\":null},\"running\":{\"chamber\":\"schedule\",\"since\":\"2026-11-22T10:00:00Z\",\"pid\":$$}}"
	# the document as a power cut can leave it, torn
	printf '{"v":1,"agent":"scout","la' > "$d/wake.json"
	pulse --soul "$s"
	run sub -t heart/scout/pulse -C 2 -W 6
	assert_success
	for l in "${lines[@]}"; do
		echo "$l" | jq -e '.waking == "schedule" and .last_wake.status == "running"'
	done
	run grep -c 'wake.json: not valid JSON at line 1: .*; read .*/.wake.json.tmp, the version before it' "$BATS_TEST_TMPDIR/pulse.err"
	assert_output 1
}

@test "an unreadable state file makes its field null, says so once, and pulses go on" {
	broker_start
	s=$(soul scout)
	state_write scout breaker.json '{"state": oops'
	pulse --soul "$s"
	run sub -t heart/scout/pulse -C 3 -W 6
	assert_success
	for l in "${lines[@]}"; do
		echo "$l" | jq -e '.breaker == null and .waking == false'
	done
	run grep -c 'breaker.json: not valid JSON' "$BATS_TEST_TMPDIR/pulse.err"
	assert_output 1
	state_write scout breaker.json '{"state":"closed"}'
	run sub -t heart/scout/pulse -C 1 -W 3
	echo "$output" | jq -e '.breaker == "closed"'
}

@test "kill -9 of the publisher: the will takes every agent offline within a second, without misses" {
	broker_start
	soul a >/dev/null; soul b >/dev/null; soul c >/dev/null
	watcher --misses 1000
	pulse --souls "$BATS_TEST_TMPDIR/souls" --keepalive 5s
	wait_until 5 has_events 3 online
	kill -9 "$PULSE"
	wait_until 5 has_events 3 offline will
	run jq -r 'select(.event == "offline") | .agent' "$BATS_TEST_TMPDIR/watch.out"
	assert_output "$(printf 'a\nb\nc')"
}

@test "SIGTERM: each agent's retained status is offline at once, and the exit is clean" {
	broker_start
	soul a >/dev/null; soul b >/dev/null
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	run sub -t 'heart/+/status' -C 2 -W 5
	assert_success
	echo "$output" | jq -s -e 'map(.status) == ["online","online"]'
	kill -TERM "$PULSE"
	rc=0
	wait "$PULSE" || rc=$?
	[ "$rc" -eq 0 ]
	# a subscriber that comes later reads it from the broker
	run sub -t 'heart/+/status' -t 'heart/node/+/status' --retained-only \
	    -C 3 -W 2
	echo "$output" | jq -s -e 'length == 3 and
	    all(.status == "offline" and .reason == "shutdown")'
}

@test "a late will from an old connection does not take a reborn publisher's agents offline" {
	broker_start
	soul a >/dev/null
	watcher --misses 1000
	pulse --souls "$BATS_TEST_TMPDIR/souls" --client-id node1
	wait_until 5 has_events 1 online
	bd=$(sub -t heart/a/status -C 1 -W 3 | jq .bdseq)
	[ "$bd" -ge 1 ]
	mosquitto_pub -p "$BROKER_PORT" -t heart/node/node1/status \
	    -m "{\"status\":\"offline\",\"bdseq\":$((bd - 1)),\"reason\":\"will\"}"
	# a status after it, for another agent: once the watcher has
	# reported that, it has read the old will
	mosquitto_pub -p "$BROKER_PORT" -t heart/barrier/status \
	    -m '{"status":"online"}'
	wait_until 5 eval '[ "$(jq -c "select(.agent == \"barrier\")" \
	    "$BATS_TEST_TMPDIR/watch.out" | wc -l)" -ge 1 ]'
	run events offline
	assert_output 0
	# the same will for the live connection does
	mosquitto_pub -p "$BROKER_PORT" -t heart/node/node1/status \
	    -m "{\"status\":\"offline\",\"bdseq\":$bd,\"reason\":\"will\"}"
	wait_until 3 has_events 1 offline will
}

@test "a status from another node than the agent's birth does not take it offline" {
	broker_start
	soul a >/dev/null
	watcher --misses 1000
	pulse --souls "$BATS_TEST_TMPDIR/souls" --client-id node1
	wait_until 5 has_events 1 online
	mosquitto_pub -p "$BROKER_PORT" -t heart/a/status \
	    -m '{"status":"offline","node":"node2","bdseq":99,"reason":"removed"}'
	mosquitto_pub -p "$BROKER_PORT" -t heart/a/status \
	    -m '{"status":"offline","reason":"removed"}'
	mosquitto_pub -p "$BROKER_PORT" -t heart/barrier/status \
	    -m '{"status":"online"}'
	wait_until 5 eval '[ "$(jq -c "select(.agent == \"barrier\")" \
	    "$BATS_TEST_TMPDIR/watch.out" | wc -l)" -ge 1 ]'
	run events offline
	assert_output 0
	# its own node's does
	bd=$(sub -t heart/a/status -C 1 -W 3 | jq .bdseq)
	mosquitto_pub -p "$BROKER_PORT" -t heart/a/status \
	    -m "{\"status\":\"offline\",\"node\":\"node1\",\"bdseq\":$bd,\"reason\":\"removed\"}"
	wait_until 5 has_events 1 offline removed
}

@test "the birth sequence grows with every connection, across restarts" {
	broker_start
	s=$(soul a)
	pulse --soul "$s" --client-id n
	b1=$(sub -t heart/a/status -C 1 -W 3 | jq .bdseq)
	kill "$PULSE"; wait "$PULSE" || true
	pulse --soul "$s" --client-id n
	wait_until 5 eval "[ \"\$(sub -t heart/a/status -C 1 -W 1 | jq .status)\" = '\"online\"' ]"
	b2=$(sub -t heart/a/status -C 1 -W 3 | jq .bdseq)
	[ "$b2" -gt "$b1" ]
	run jq .bdseq "$HEART_STATE_DIR/pulse/n.json"
	assert_output "$b2"
}

@test "a hung publisher: the watcher marks its agents offline after misses intervals" {
	broker_start
	soul a >/dev/null; soul b >/dev/null
	watcher --misses 2
	pulse --souls "$BATS_TEST_TMPDIR/souls" --keepalive 60s
	wait_until 5 has_events 2 online
	# three more pulses, more than 2 intervals: none is missed
	run sub -t heart/a/pulse -C 3 -W 10
	assert_success
	run events offline
	assert_output 0
	kill -STOP "$PULSE"
	wait_until 6 has_events 2 offline misses
	kill -CONT "$PULSE"
	wait_until 5 eval '[ "$(events online pulse)" -ge 2 ]'
}

broker_gap() {	# the other chambers while the broker is away: each
	# finishes at once and does its job, none asks for the broker
	local w=$BATS_TEST_TMPDIR/gap.json
	timeout 10 heart-cap take --soul "$BATS_TEST_TMPDIR/souls/a.yaml" ||
		return 1
	timeout 10 heart-breaker status a | jq -e '.state == "closed"' ||
		return 1
	timeout 10 heart-wake --soul "$BATS_TEST_TMPDIR/souls/a.yaml" \
	    --force > "$w" || return 1
	jq -e '.status == "idle" and .cap.used == 2' "$w" || return 1
	[ "$(llm_count)" -eq 1 ]
}

@test "broker stopped and started again: the publisher lives on, the watcher says it lost the broker, agents are unknown in the gap and come back" {
	broker_start
	llm_start
	soul a >/dev/null; soul b >/dev/null
	port=$BROKER_PORT
	watcher --misses 2 --backoff-max 1s
	pulse --souls "$BATS_TEST_TMPDIR/souls" --backoff-max 1s
	wait_until 5 has_events 2 online
	broker_stop
	# the gap: the other chambers do not wait on the pulse
	run broker_gap
	assert_success
	# the watcher says it lost the broker, and the agents are unknown,
	# not offline: no offline by misses however long the gap
	wait_until 10 has_events 1 disconnected
	sleep "${HEART_TEST_GAP:-3}"
	# nor by the wills mosquitto sends for its clients as it goes down
	run events offline
	assert_output 0
	kill -0 "$PULSE"
	heart-cap take a
	broker_start "$port"
	wait_until 10 has_events 1 connected
	wait_until 10 eval '[ "$(events online)" -ge 4 ]'
	run jq -r 'select(.agent == null) | .event' "$BATS_TEST_TMPDIR/watch.out"
	assert_output "$(printf 'connected\ndisconnected\nconnected')"
	run sub -t heart/a/pulse -C 1 -W 5
	assert_success
	# the publisher said it once, not once per attempt
	run grep -c 'connection lost' "$BATS_TEST_TMPDIR/pulse.err"
	assert_output 1
	run grep -c 'cannot connect' "$BATS_TEST_TMPDIR/pulse.err"
	assert_output 0
	run grep -c 'connected$' "$BATS_TEST_TMPDIR/pulse.err"
	assert_output 1
	run jq .total "$(capfile a)"
	assert_output 3
}

@test "a broker restarted with its store: neither the wills it sent going down nor the ones it kept take agents offline" {
	BROKER_PERSIST=true broker_start
	soul a >/dev/null; soul b >/dev/null
	port=$BROKER_PORT
	watcher --misses 3 --backoff-max 1s
	pulse --souls "$BATS_TEST_TMPDIR/souls" --backoff-max 1s
	wait_until 5 has_events 2 online
	bd=$(sub -t heart/a/status -C 1 -W 3 | jq .bdseq)
	broker_stop
	wait_until 10 has_events 1 disconnected
	BROKER_PERSIST=true broker_start "$port"
	# the store kept the node's will, sent as the broker went down
	run sub -t "heart/node/heart-pulse-$(hostname)/status" -C 1 -W 5
	echo "$output" | jq -e '.status == "offline" or .bdseq > '"$bd"
	wait_until 10 eval '[ "$(events connected)" -ge 2 ]'
	# both reborn (a new bdseq) and pulsing, and never offline
	wait_until 10 eval '[ "$(sub -t heart/a/status -C 1 -W 3 | jq .bdseq)" -gt '"$bd"' ]'
	wait_until 10 eval '[ "$(events online)" -ge 4 ]'
	run events offline
	assert_output 0
}

@test "an unreachable broker at start: keeps retrying, says so once, connects when it comes" {
	port=$(free_port)
	BROKER_URL=mqtt://127.0.0.1:$port
	s=$(soul a)
	pulse --soul "$s" --backoff-max 1s
	msg="mqtt://127.0.0.1:$port: cannot connect: Connection refused"
	wait_until 10 grep -qF "$msg" "$BATS_TEST_TMPDIR/pulse.err"
	# and not again as it retries (a second apart at most): a stretch
	# in which nothing may happen, however loaded the machine
	sleep 2
	kill -0 "$PULSE"
	run grep -cF "$msg" "$BATS_TEST_TMPDIR/pulse.err"
	assert_output 1
	broker_start "$port"
	run sub -t heart/a/pulse -C 1 -W 5
	assert_success
	echo "$output" | jq -e '.agent == "a"'
	# the birth sequence counts connections, not the attempts before
	run sub -t heart/a/status -C 1 -W 5
	echo "$output" | jq -e '.bdseq == 1'
	run jq .bdseq "$HEART_STATE_DIR/pulse/heart-pulse-$(hostname).json"
	assert_output 1
}

@test "SIGHUP and SIGUSR1 while the souls load do not kill it" {
	broker_start
	mkfifo "$BATS_TEST_TMPDIR/a.yaml"
	pulse --soul "$BATS_TEST_TMPDIR/a.yaml" > "$BATS_TEST_TMPDIR/stats"
	# the fifo opens for writing once heart-pulse opens it to read the
	# soul: the signals come while it loads
	{
		kill -HUP "$PULSE"
		kill -USR1 "$PULSE"
		printf 'heart: {pulse: {interval: 1s}}\n'
	} > "$BATS_TEST_TMPDIR/a.yaml"
	# the reload the SIGHUP asked for reads it again: an empty soul
	# (reported, and the agent pulses on as it was)
	while :; do : > "$BATS_TEST_TMPDIR/a.yaml"; done 3>&- &
	PIDS+=($!)
	run sub -t heart/a/pulse -C 1 -W 5
	assert_success
	kill -0 "$PULSE"
	wait_until 5 grep -q '"agents":' "$BATS_TEST_TMPDIR/stats"
}

@test "a broker URL that is not one is refused with exit 64" {
	s=$(soul a)
	for url in http://h:1883 mqtt:// mqtt://h:99999 mqtt://h:x \
	    mqtt://h/path localhost:1883; do
		run heart-pulse --soul "$s" --broker "$url"
		assert_failure 64
		assert_output --partial 'not a broker URL'
	done
	run -64 heart-pulse --soul "$s" --broker mqtt://h:99999
	assert_output "heart-pulse: mqtt://h:99999: not a broker URL: port 99999: too large (at most 65535)"
	run -64 heart-pulse --soul "$s" --broker mqtt://h:
	assert_output "heart-pulse: mqtt://h:: not a broker URL (use mqtt://HOST[:PORT] or mqtts://HOST[:PORT])"
	run heart-pulse --soul "$s" --broker mqtt://bob:s3cret@h
	assert_failure 64
	refute_output --partial s3cret
	assert_output --partial 'credentials do not belong in the URL'
}

@test "bad options are refused: prefix, interval, client id, souls with --watch" {
	s=$(soul a)
	run heart-pulse --soul "$s" --prefix 'a/#'
	assert_failure 64
	run heart-pulse --soul "$s" --interval soon
	assert_failure 64
	run heart-pulse --soul "$s" --client-id 'a/b'
	assert_failure 64
	run heart-pulse --watch --soul "$s"
	assert_failure 64
	run heart-pulse
	assert_failure 64
}

@test "a souls directory with one broken soul: the others pulse, the broken one is reported" {
	broker_start
	soul good1 >/dev/null; soul good2 >/dev/null
	printf 'heart:\n  pulse:\n    interval: often\n' > "$BATS_TEST_TMPDIR/souls/broken.yaml"
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	run sub -t 'heart/+/status' -C 2 -W 5
	assert_success
	echo "$output" | jq -s -e '[.[].agent] | sort == ["good1","good2"]'
	run sub -t 'heart/+/pulse' -C 4 -W 5
	echo "$output" | jq -s -e '[.[].agent] | unique == ["good1","good2"]'
	run cat "$BATS_TEST_TMPDIR/pulse.err"
	assert_output --regexp 'broken\.yaml:3:[0-9]+: .*interval'
	kill -0 "$PULSE"
}

@test "no soul that loads: exit 78" {
	printf 'heart: [\n' > "$BATS_TEST_TMPDIR/souls/x.yaml"
	run heart-pulse --souls "$BATS_TEST_TMPDIR/souls" --broker mqtt://127.0.0.1:1
	assert_failure 78
	assert_output --partial 'x.yaml'
	run heart-pulse --souls "$BATS_TEST_TMPDIR/nonexistent" --broker mqtt://127.0.0.1:1
	assert_failure 78
}

@test "--acl: a link to nowhere and an empty soul are errors with their file; the block is the others', exit 78" {
	soul good > /dev/null
	ln -s "$BATS_TEST_TMPDIR/gone.yaml" "$BATS_TEST_TMPDIR/souls/dangling.yaml"
	: > "$BATS_TEST_TMPDIR/souls/empty.yaml"
	run --separate-stderr heart-pulse --acl --souls "$BATS_TEST_TMPDIR/souls" --username me
	assert_failure 78
	assert_output "# heart-pulse --acl: 1 agent
user me
topic write heart/good/pulse
topic write heart/good/status"
	[ "$stderr" = "heart-pulse: $BATS_TEST_TMPDIR/souls/dangling.yaml: a symbolic link to $BATS_TEST_TMPDIR/gone.yaml, which is not there
heart-pulse: $BATS_TEST_TMPDIR/souls/empty.yaml: empty: a soul holds its keys (heart: {} for every default); see heart-soul(5)
heart-pulse: the block leaves out the agents of the 2 souls that did not load" ]
	rm "$BATS_TEST_TMPDIR/souls/dangling.yaml" "$BATS_TEST_TMPDIR/souls/empty.yaml"
	run -0 heart-pulse --acl --souls "$BATS_TEST_TMPDIR/souls" --username me
}

@test "SIGHUP re-reads the souls: an added agent is born, a removed one goes offline and is retired" {
	broker_start
	soul a >/dev/null; soul b >/dev/null
	watcher --misses 1000
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	wait_until 5 has_events 2 online
	rm "$BATS_TEST_TMPDIR/souls/b.yaml"
	soul c >/dev/null
	kill -HUP "$PULSE"
	wait_until 5 has_events 1 offline removed
	wait_until 5 eval '[ "$(events online)" -ge 3 ]'
	run jq -r 'select(.event == "offline") | .agent' "$BATS_TEST_TMPDIR/watch.out"
	assert_output b
	run sub -t heart/c/pulse -C 1 -W 3
	assert_success
	# retired: its retained status is cleared, the watcher drops it, and
	# no later snapshot or dashboard sees it
	wait_until 5 has_events 1 retired
	run jq -r 'select(.event == "retired") | .agent' "$BATS_TEST_TMPDIR/watch.out"
	assert_output b
	sub -t 'heart/+/status' --retained-only -W 2 > "$BATS_TEST_TMPDIR/kept" || :
	jq -s -e 'map(.agent) | sort == ["a","c"]' "$BATS_TEST_TMPDIR/kept"
	run heart-pulse --snapshot --broker "$BROKER_URL" --interval 1s
	assert_success
	echo "$output" | jq -s -e 'map(.agent) == ["a","c"]'
}

@test "--snapshot after crash, remove, restart: the removed agent's old online is not alive" {
	broker_start
	soul a >/dev/null; soul b >/dev/null
	pulse --souls "$BATS_TEST_TMPDIR/souls" --client-id n
	run sub -t 'heart/+/pulse' -C 2 -W 5
	kill -9 "$PULSE"
	rm "$BATS_TEST_TMPDIR/souls/b.yaml"
	pulse --souls "$BATS_TEST_TMPDIR/souls" --client-id n
	run sub -t 'heart/a/pulse' -C 1 -W 5
	# b's retained status still says online, from the birth before
	sub -t heart/b/status -C 1 -W 2 | jq -e '.status == "online"'
	run heart-pulse --snapshot --broker "$BROKER_URL" --interval 1s
	assert_failure 1
	echo "$output" | jq -s -e 'map([.agent, .status, .reason]) ==
	    [["a","online","pulse"],["b","offline","stale"]]'
}

@test "--snapshot with no agent at all says so and fails; it waits for agents with long intervals" {
	broker_start
	run heart-pulse --snapshot --broker "$BROKER_URL" --interval 1s --prefix nobody
	assert_failure 1
	assert_output "heart-pulse: $BROKER_URL: no agent seen under nobody/ (a wrong --prefix, an ACL that does not let this account read it, or no publisher)"
	# an agent pulsing every 4s is alive though the window is 1s: the
	# snapshot waits for its pulse
	s=$(soul slow 'heart: {pulse: {interval: 4s}}')
	pulse --soul "$s"
	run sub -t heart/slow/pulse -C 1 -W 6
	run heart-pulse --snapshot --broker "$BROKER_URL" --interval 1s
	assert_success
	echo "$output" | jq -s -e 'map([.agent, .status]) == [["slow","online"]]'
	# and a hung one, whose status still says online, is not
	kill -STOP "$PULSE"
	run heart-pulse --snapshot --broker "$BROKER_URL" --interval 1s
	kill -CONT "$PULSE"
	assert_failure 1
	echo "$output" | jq -s -e 'map([.agent, .status, .reason]) == [["slow","unknown","no_pulse"]]'
}

@test "two publishers with one client id: the second says so once and exits 78, the first pulses on" {
	broker_start
	soul a >/dev/null
	pulse --souls "$BATS_TEST_TMPDIR/souls" --client-id twin
	first=$PULSE
	run sub -t heart/a/pulse -C 1 -W 5
	run heart-pulse --broker "$BROKER_URL" --souls "$BATS_TEST_TMPDIR/souls" \
	    --client-id twin
	assert_failure 78
	assert_output "heart-pulse: $BROKER_URL: another heart-pulse is connected with the client id twin; two processes need two ids (--client-id)"
	# the first, pushed off for a moment, comes back and pulses on
	kill -0 "$first"
	run sub -t heart/a/pulse -C 2 -W 5
	assert_success
	kill -0 "$first"
	# the node's status says since when its process runs
	run sub -t heart/node/twin/status -C 1 -W 5
	assert_output --regexp '"since":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z"'
	# a younger rival's birth, however late it is read (as after a
	# reconnection, while the younger one is still exiting), stops no
	# one: the older process carries on
	mkdir "$BATS_TEST_TMPDIR/souls2"
	echo 'heart: {pulse: {interval: 1s}}' > "$BATS_TEST_TMPDIR/souls2/b.yaml"
	pulse --souls "$BATS_TEST_TMPDIR/souls2" --client-id other
	other=$PULSE
	rival() {
		mosquitto_pub -p "$BROKER_PORT" -t heart/node/twin/status -r \
		    -q 1 -m "{\"status\":\"online\",\"node\":\"twin\",\"host\":\"$(hostname)\",\"pid\":$other,\"bdseq\":9,\"since\":\"$1\"}"
	}
	rival 2999-01-01T00:00:00Z
	run sub -t heart/a/pulse -C 2 -W 5
	assert_success
	kill -0 "$first"
	# an older one's is a rival: the younger gives way
	rival 2001-01-01T00:00:00Z
	gone() { ! kill -0 "$1" 2>/dev/null; }
	wait_until 5 gone "$first"
	rc=0
	wait "$first" || rc=$?
	[ "$rc" -eq 78 ]
	grep -q "another heart-pulse is connected with the client id twin" \
	    "$BATS_TEST_TMPDIR/pulse.err"
	# a birth a dead process left retained is no rival
	kill -9 "$other"
	mosquitto_pub -p "$BROKER_PORT" -t heart/node/twin/status -r -m \
	    "{\"status\":\"online\",\"node\":\"twin\",\"host\":\"$(hostname)\",\"pid\":$other,\"bdseq\":1}"
	pulse --souls "$BATS_TEST_TMPDIR/souls" --client-id twin
	run sub -t heart/a/pulse -C 2 -W 5
	assert_success
	kill -0 "$PULSE"
}

@test "the watcher reports a breaker that opens and closes, and a wake that starts and ends" {
	broker_start
	s=$(soul scout 'heart: {pulse: {interval: 30s}}')
	watcher
	watcher_subscribed	# so that it sees the first pulse, closed
	pulse --soul "$s"
	wait_until 5 has_events 2 online	# ready and scout
	for i in 1 2 3; do heart-breaker record --soul "$s" llm-fail > /dev/null; done
	wait_until 3 has_events 1 breaker
	state_write scout wake.json "{\"running\":{\"chamber\":\"schedule\",\"pid\":$$}}"
	wait_until 3 has_events 1 wake_start
	state_write scout wake.json '{"running":null}'
	wait_until 3 has_events 1 wake_end
	state_write scout breaker.json '{"state":"closed"}'
	wait_until 3 has_events 2 breaker
	run jq -c 'select(.agent and .event != "online") | [.event, .state // .chamber, .was]' \
	    "$BATS_TEST_TMPDIR/watch.out"
	assert_output "$(printf '%s\n' '["breaker","open","closed"]' \
	    '["wake_start","schedule",null]' '["wake_end",null,null]' \
	    '["breaker","closed","open"]')"
}

@test "--snapshot prints the map once: exit 0 all online, 1 any offline, 69 no broker" {
	broker_start
	soul a >/dev/null; soul b >/dev/null
	pulse --souls "$BATS_TEST_TMPDIR/souls"
	run sub -t 'heart/+/pulse' -C 2 -W 5
	run heart-pulse --snapshot --broker "$BROKER_URL" --interval 1s
	assert_success
	echo "$output" | jq -s -e 'map([.agent, .status]) == [["a","online"],["b","online"]]'
	kill -9 "$PULSE"
	run heart-pulse --snapshot --broker "$BROKER_URL" --interval 1s
	assert_failure 1
	echo "$output" | jq -s -e 'map(.status) == ["offline","offline"]'
	run heart-pulse --snapshot --broker "mqtt://127.0.0.1:$(free_port)" --interval 1s
	assert_failure 69
}

@test "pulses carry an MQTT v5 message expiry of one interval" {
	broker_start
	s=$(soul a 'heart: {pulse: {interval: 2s}}')
	pulse --soul "$s"
	run sub -V 5 -t heart/a/pulse -C 1 -W 5 -F '%E'
	assert_success
	assert_output 2
}

@test "READY and WATCHDOG go to \$NOTIFY_SOCKET, as systemd's Type=notify wants" {
	broker_start
	s=$(soul a)
	sock=$BATS_TEST_TMPDIR/notify
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(5)
end = time.time() + 5; got = []
while time.time() < end and got.count("WATCHDOG=1") < 3:
    got.append(s.recv(256).decode())
print("\n".join(got))' "$sock" > "$BATS_TEST_TMPDIR/notified" 3>&- &
	py=$!
	wait_until 3 test -S "$sock"
	NOTIFY_SOCKET=$sock WATCHDOG_USEC=400000 pulse --soul "$s"
	wait "$py"
	run cat "$BATS_TEST_TMPDIR/notified"
	assert_line READY=1
	[ "$(grep -c '^WATCHDOG=1$' "$BATS_TEST_TMPDIR/notified")" -ge 3 ]
}

@test "a password file readable by others is refused; a password never comes from argv" {
	s=$(soul a)
	printf 'secret\n' > "$BATS_TEST_TMPDIR/pw"
	chmod 644 "$BATS_TEST_TMPDIR/pw"
	run heart-pulse --soul "$s" --username u --password-file "$BATS_TEST_TMPDIR/pw"
	assert_failure 78
	assert_output --partial 'chmod 600'
	refute_output --partial secret
	run heart-pulse --soul "$s" --password secret
	assert_failure 64
}

@test "username and password from a 0600 file log in; a wrong one is refused once" {
	port=$(free_port)
	printf 'u:right\n' > "$BATS_TEST_TMPDIR/passwd"
	mosquitto_passwd -U "$BATS_TEST_TMPDIR/passwd"
	chmod 600 "$BATS_TEST_TMPDIR/passwd"
	cat > "$BATS_TEST_TMPDIR/auth.conf" <<-CONF
	user $(id -un)
	listener $port 127.0.0.1
	allow_anonymous false
	password_file $BATS_TEST_TMPDIR/passwd
	persistence false
	log_dest file $BATS_TEST_TMPDIR/broker.log
	log_type notice
	CONF
	mosquitto -c "$BATS_TEST_TMPDIR/auth.conf" 2>/dev/null 3>&- &
	BROKER_PID=$!
	BROKER_PORT=$port BROKER_URL=mqtt://127.0.0.1:$port
	wait_until 5 eval "(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null"
	s=$(soul a)
	# a wrong password is a configuration error, not an outage
	HEART_MQTT_PASSWORD=wrong run heart-pulse --soul "$s" --username u \
	    --broker "$BROKER_URL"
	assert_failure 78
	assert_output --partial "$BROKER_URL: user u: refused"
	refute_output --partial wrong
	HEART_MQTT_PASSWORD=wrong run heart-pulse --watch --username u \
	    --broker "$BROKER_URL"
	assert_failure 78
	run heart-pulse --snapshot --broker "$BROKER_URL"
	assert_failure 78
	assert_output --partial "$BROKER_URL: no user name: refused"
	# a user without a password is said, with where one is read from
	run timeout 2 heart-pulse --soul "$s" --username u --broker "$BROKER_URL"
	assert_failure 78
	assert_line --index 0 --partial '--username u: no password: it is read from --password-file, else $HEART_MQTT_PASSWORD'
	printf 'right\n' > "$BATS_TEST_TMPDIR/pw"
	chmod 600 "$BATS_TEST_TMPDIR/pw"
	pulse --soul "$s" --username u --password-file "$BATS_TEST_TMPDIR/pw"
	run sub -u u -P right -t heart/a/pulse -C 1 -W 5
	assert_success
}

@test "only heart-pulse links libmosquitto" {
	run ldd "$HEART_BIN/heart-pulse"
	assert_output --partial libmosquitto
	for p in "$HEART_BIN"/heart-*; do
		[ "${p##*/}" = heart-pulse ] && continue
		run ldd "$p"
		refute_output --partial libmosquitto
	done
}

@test "the man page heart-pulse.1 is lint-clean" {
	plain_only
	run mandoc -Tlint -Wwarning "$T/../man/heart-pulse.1"
	assert_success
	assert_output ""
}

@test "the systemd unit in contrib/ is Type=notify with a watchdog, and verifies" {
	plain_only
	u=$T/../contrib/systemd/heart-pulse.service
	grep -q '^Type=notify$' "$u"
	grep -q '^WatchdogSec=' "$u"
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	sed -e "s|/usr/local/bin/heart-pulse|$HEART_BIN/heart-pulse|" \
	    -e '/^Documentation=/d' -e "s/^User=.*/User=$(id -un)/" "$u" \
	    > "$BATS_TEST_TMPDIR/heart-pulse.service"
	run systemd-analyze verify "$BATS_TEST_TMPDIR/heart-pulse.service"
	assert_success
}

@test "mqtts:// with a CA file: pulses over TLS; an unknown CA is refused, said once" {
	command -v openssl >/dev/null || skip "no openssl"
	d=$BATS_TEST_TMPDIR
	ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
	openssl req -x509 $ec -keyout "$d/ca.key" -out "$d/ca.crt" -days 1 \
	    -subj /CN=heart-test-ca 2>/dev/null
	openssl req $ec -keyout "$d/srv.key" -out "$d/srv.csr" \
	    -subj /CN=127.0.0.1 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\n' > "$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
	    -CAcreateserial -out "$d/srv.crt" -days 1 -extfile "$d/ext" 2>/dev/null
	openssl req -x509 $ec -keyout "$d/other.key" -out "$d/other.crt" \
	    -days 1 -subj /CN=other-ca 2>/dev/null
	port=$(free_port)
	cat > "$d/tls.conf" <<-CONF
	user $(id -un)
	listener $port 127.0.0.1
	allow_anonymous true
	persistence false
	cafile $d/ca.crt
	certfile $d/srv.crt
	keyfile $d/srv.key
	log_dest file $d/broker.log
	log_type notice
	CONF
	mosquitto -c "$d/tls.conf" 2>/dev/null 3>&- &
	BROKER_PID=$!
	BROKER_PORT=$port BROKER_URL=mqtts://127.0.0.1:$port
	wait_until 5 eval "(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null"
	s=$(soul a)
	pulse --soul "$s" --cafile "$d/other.crt" --backoff-max 1s
	wait_until 10 attempts 3
	run grep -c 'cannot connect' "$d/pulse.err"
	assert_output 1
	# the peer's failure, as TLS says it
	run grep -c 'cannot connect: TLS: certificate verify failed' "$d/pulse.err"
	assert_output 1
	kill "$PULSE"
	# a file that is not there is named
	run heart-pulse --soul "$s" --broker "$BROKER_URL" --cafile "$d/nope.crt"
	assert_failure 78
	assert_output "heart-pulse: --cafile $d/nope.crt: No such file or directory"
	run heart-pulse --soul "$s" --broker "$BROKER_URL" --cert "$d/srv.crt" \
	    --key "$d/nope.key"
	assert_failure 78
	assert_output "heart-pulse: --key $d/nope.key: No such file or directory"
	pulse --soul "$s" --cafile "$d/ca.crt"
	run sub --cafile "$d/ca.crt" -t heart/a/pulse -C 1 -W 5
	assert_success
	echo "$output" | jq -e '.agent == "a"'
	# TLS files without mqtts:// are a mistake, said at once
	run heart-pulse --soul "$s" --broker mqtt://127.0.0.1:1 --cafile "$d/ca.crt"
	assert_failure 78
}

@test "EXIT STATUS in heart-pulse.1 lists the codes heart-pulse can exit with, and only those" {
	plain_only
	man=$(sed -n '/^\.Sh EXIT STATUS/,/^\.Sh /p' "$T/../man/heart-pulse.1" |
	    sed -n 's/^\.It \([0-9]*\)$/\1/p' | sort -n | tr '\n' ' ')
	code=$(for x in $(grep -o 'HX_[A-Z]*' "$T/../cmd/heart-pulse.c" | sort -u); do
		sed -n "s/^[[:space:]]*$x = \([0-9]*\).*/\1/p" "$T/../lib/heart.h"
	done | sort -n | tr '\n' ' ')
	[ "$man" = "$code" ]
}

@test "the watcher's client id is heart-watch-HOST-PID, as documented" {
	broker_start
	watcher
	wait_until 5 grep -q "as heart-watch-$(hostname)-$WATCHER" \
	    "$BATS_TEST_TMPDIR/mosquitto.log"
	grep -q 'heart-watch-' "$T/../man/heart-pulse.1"
}
