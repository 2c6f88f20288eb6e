#!/usr/bin/env bats
# heart-pulse against a second, independent MQTT broker: aedes (npm,
# pinned in package.json and installed by make mizpah), which speaks
# MQTT 3.1.1 only, stores retained messages asynchronously and
# forwards them after the plain messages published after them.

load helpers

setup() {
	heart_setup
	[ -d "$T/../node_modules/aedes" ] || skip "node_modules missing: run make mizpah"
	PIDS=()
	D=$BATS_TEST_TMPDIR
	mkdir -p "$D/souls"
	for a in a b c; do
		printf 'heart: {pulse: {interval: 1s}}\n' > "$D/souls/$a.yaml"
	done
	PORT=$(free_port)
	node "$T/aedes-broker.mjs" "$PORT" > "$D/aedes.log" 2>&1 3>&- &
	PIDS+=("$!")
	wait_until 10 grep -q listening "$D/aedes.log"
	BROKER_URL=mqtt://127.0.0.1:$PORT
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}

# souls_pulse ARGS...: heart-pulse for the souls in $D/souls
souls_pulse() {
	heart-pulse --broker "$BROKER_URL" --souls "$D/souls" "$@" \
	    2>> "$D/pulse.err" 3>&- &
	PULSE=$!
	PIDS+=("$PULSE")
}

@test "aedes: births, pulses and every goodbye reach a subscriber, over MQTT 3.1.1" {
	# more statuses than the 20 QoS 1 messages in flight at a time: the
	# goodbye waits for the broker's acknowledgements before it leaves
	python3 -c '
import sys
for i in range(300):
    open("%s/z%03d.yaml" % (sys.argv[1], i), "w").write("heart: {pulse: {interval: 1s}}\n")
' "$D/souls"
	mosquitto_sub -p "$PORT" -t 'heart/#' -t ready -v > "$D/sub" 3>&- &
	PIDS+=("$!")
	wait_until 10 eval 'mosquitto_pub -p "$PORT" -t ready -m x &&
	    grep -q "^ready x" "$D/sub"'
	souls_pulse --client-id n1 -v
	wait_until 10 eval '[ "$(grep -c "^heart/[abc]/pulse " "$D/sub")" -ge 3 ]'
	wait_until 10 eval '[ "$(grep "^heart/[abc]/status " "$D/sub" | grep -c "\"online\"")" -ge 3 ]'
	grep -q "connected (MQTT 3.1.1)" "$D/pulse.err"
	kill -TERM "$PULSE"
	wait "$PULSE"
	# each agent's offline, and the node's clean one, not its will
	wait_until 10 eval '[ "$(grep "^heart/[a-z0-9]*/status " "$D/sub" | grep -c "\"shutdown\"")" -eq 303 ]'
	run timeout 5 mosquitto_sub -p "$PORT" -t 'heart/+/status' \
	    -t 'heart/node/+/status' --retained-only -W 2
	echo "$output" | grep '^{' | jq -s -e 'length == 304 and
	    all(.status == "offline" and .reason == "shutdown")'
}

@test "aedes: a kill -9 is seen through the will, a hung publisher through misses" {
	souls_pulse --client-id n2
	watcher --misses 2
	wait_until 10 eval '[ "$(jq -c "select(.event == \"online\")" "$D/watch.out" | wc -l)" -ge 3 ]'
	kill -STOP "$PULSE"
	wait_until 10 eval '[ "$(events offline misses)" -ge 3 ]'
	kill -CONT "$PULSE"
	wait_until 10 eval '[ "$(jq -c "select(.event == \"online\" and .reason == \"pulse\")" "$D/watch.out" | wc -l)" -ge 3 ]'
	kill -9 "$PULSE"
	wait_until 10 eval '[ "$(events offline will)" -ge 3 ]'
}
