#!/usr/bin/env bats
# Mizpah: the dashboard in Debian's Chromium, against a real mosquitto
# with the shipped config (contrib/mosquitto) and real heart-pulse
# publishers.  Screenshots go to the test's directory.

load helpers

setup() {
	heart_setup
	MZ=$T/../build/mizpah
	[ -f "$MZ/mqtt.min.js" ] || skip "build/mizpah missing: run make mizpah"
	export HEART_MQTT_PASSWORD=pulse-secret
	secure_broker_start
	PORT_HTTP=$(free_port)
	python3 -m http.server --bind 127.0.0.1 --directory "$MZ" "$PORT_HTTP" \
		> /dev/null 2>&1 3>&- &
	HTTP_PID=$!
	PIDS=
}

teardown() {
	exec 4>&- 2>/dev/null || true
	[ -n "${NODE_PID:-}" ] && pkill -KILL -P "$NODE_PID" 2>/dev/null
	for p in $PIDS $HTTP_PID ${NODE_PID:-}; do
		kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	broker_stop
}

# secure_broker_start: mosquitto with contrib/mosquitto's config and ACL,
# on free ports, and the two users it expects
secure_broker_start() {
	TCP=$(free_port)
	WS=$(free_port)
	d=$BATS_TEST_TMPDIR
	mosquitto_passwd -b -c "$d/heart.passwd" heart-pulse pulse-secret
	mosquitto_passwd -b "$d/heart.passwd" mizpah look-only
	sed -e "s#/etc/mosquitto/heart.passwd#$d/heart.passwd#" \
	    -e "s#/etc/mosquitto/heart.acl#$T/../contrib/mosquitto/heart.acl#" \
	    -e "s#^listener 1883 #listener $TCP #" \
	    -e "s#^listener 9001 #listener $WS #" \
	    "$T/../contrib/mosquitto/heart.conf" > "$d/mosquitto.conf"
	printf "persistence false\nuser %s\n" "$(id -un)" >> "$d/mosquitto.conf"
	mosquitto -c "$d/mosquitto.conf" > "$d/mosquitto.log" 2>&1 3>&- &
	BROKER_PID=$!
	for _ in $(seq 50); do
		(exec 5<>"/dev/tcp/127.0.0.1/$WS") 2>/dev/null && break
		sleep 0.1
	done
	export BROKER_PID
	BROKER=mqtt://127.0.0.1:$TCP
}

soul() {	# soul DIR NAME: a soul pulsing every second
	mkdir -p "$BATS_TEST_TMPDIR/$1"
	printf 'name: %s\nheart: { pulse: { interval: 1s, misses: 3 } }\n' "$2" \
		> "$BATS_TEST_TMPDIR/$1/$2.yaml"
}

pulse() {	# pulse DIR: a heart-pulse for the souls in DIR, its pid in $!
	heart-pulse --souls "$BATS_TEST_TMPDIR/$1" --broker "$BROKER" \
		--username heart-pulse --interval 1s --client-id "pulse-$1" \
		2>> "$BATS_TEST_TMPDIR/pulse-$1.err" 3>&- &
	PIDS="$PIDS $!"
}

browser() {	# start the page in Chromium, steps through fd 4
	mkfifo "$BATS_TEST_TMPDIR/steps"
	: > "$BATS_TEST_TMPDIR/seen"
	node "$T/mizpah-check.mjs" \
		"http://127.0.0.1:$PORT_HTTP/?broker=ws://127.0.0.1:$WS&username=mizpah&password=look-only" \
		"$BATS_TEST_TMPDIR" < "$BATS_TEST_TMPDIR/steps" \
		> "$BATS_TEST_TMPDIR/seen" 2>&1 3>&- &
	NODE_PID=$!
	exec 4> "$BATS_TEST_TMPDIR/steps"
}

step() {	# step CMD...: one step, its answer on stdout
	local n
	echo "# step $*" >&3
	n=$(wc -l < "$BATS_TEST_TMPDIR/seen")
	echo "$*" >&4
	for _ in $(seq 400); do
		[ "$(wc -l < "$BATS_TEST_TMPDIR/seen")" -gt "$n" ] && break
		sleep 0.05
	done
	tail -n 1 "$BATS_TEST_TMPDIR/seen"
}

faded() {	# faded AGENT: its dot is down to a tenth of its opacity
	step opacity "$1" 3>/dev/null | jq -e '.opacity <= 0.11' > /dev/null
}

marked() {	# marked WORD: the publisher's user publishes WORD; was it read?
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u heart-pulse -P pulse-secret \
		-t heart/test/marker -m "$1"
	grep -q "^$1\$" "$BATS_TEST_TMPDIR/got"
}

@test "four agents, four looks: breathing, flash, dimmed, faded; a new agent appears" {
	soul a healthy; soul a broken; soul a waking; soul b lost; soul c stalled
	for i in 1 2 3; do heart-breaker record broken llm-fail > /dev/null; done
	sleep 300 3>&- &
	sleeper=$!
	PIDS="$PIDS $sleeper"
	mkdir -p "$HEART_STATE_DIR/agents/waking"
	printf '{"v":1,"agent":"waking","running":{"chamber":"schedule","since":"%s","pid":%d}}\n' \
		"$(date -u +%FT%TZ)" "$sleeper" > "$HEART_STATE_DIR/agents/waking/wake.json"
	pulse a; pa=$!
	pulse b; pb=$!
	pulse c; pc=$!
	browser
	run step wait healthy online;	assert_output --partial '"ok":true'
	run step wait broken broken;	assert_output --partial '"ok":true'
	run step wait waking waking;	assert_output --partial '"ok":true'
	run step wait lost online;	assert_output --partial '"ok":true'
	run step wait stalled online;	assert_output --partial '"ok":true'
	run step counts
	assert_output --partial '5 agents: 3 online, 1 waking, 1 broken, 0 offline'
	step shot fleet
	# a killed publisher: its last will marks its agent offline at once
	kill -9 "$pb"
	run step wait lost offline;	assert_output --partial '"ok":true'
	# a silent one: offline after 3 missed pulses, no will needed
	kill -STOP "$pc"
	run step wait stalled offline;	assert_output --partial '"ok":true'
	run step states
	echo "$output" | jq -e '. == {"healthy":"online","broken":"broken","waking":"waking","lost":"offline","stalled":"offline"}'
	wait_until 15 faded stalled
	run step opacity healthy
	echo "$output" | jq -e '.opacity > 0.3'
	# an agent added to a running publisher (SIGHUP) shows up
	soul a newcomer
	kill -HUP "$pa"
	run step wait newcomer online;	assert_output --partial '"ok":true'
	run step shot fleet-after
	[ -s "$BATS_TEST_TMPDIR/fleet-after.png" ]
	cp "$BATS_TEST_TMPDIR"/fleet*.png "${BATS_RUN_TMPDIR:-/tmp}/" 2>/dev/null || true
	run grep -c pageerror "$BATS_TEST_TMPDIR/seen"
	assert_output 0
}

@test "the shipped broker config refuses an anonymous publisher, and the dashboard's user cannot write" {
	run mosquitto_pub -h 127.0.0.1 -p "$TCP" -t heart/x/pulse -m forged
	assert_failure
	assert_output --partial 'not authorised'
	mosquitto_sub -h 127.0.0.1 -p "$TCP" -u heart-pulse -P pulse-secret \
		-t 'heart/#' > "$BATS_TEST_TMPDIR/got" 2>&1 3>&- &
	PIDS="$PIDS $!"
	wait_until 10 marked ready	# subscribed
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u mizpah -P look-only -t heart/x/pulse -m forged
	wait_until 10 marked after	# read whatever came before
	run cat "$BATS_TEST_TMPDIR/got"
	refute_output --partial forged
}

@test "the page's own HTML, CSS and JavaScript stay under the paper's 344 lines" {
	n=$(cat "$T"/../share/heartbeat/mizpah/*.html "$T"/../share/heartbeat/mizpah/*.css \
		"$T"/../share/heartbeat/mizpah/*.js | wc -l)
	echo "mizpah: $n lines" >&3
	[ "$n" -lt 344 ]
	[ "$n" -gt 50 ]
}
