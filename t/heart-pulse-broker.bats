#!/usr/bin/env bats
# heart-pulse against a real mosquitto with the shipped config
# (contrib/mosquitto: its listeners, accounts and ACL), as an operator
# runs it: each host its own account, the dashboard read-only.

load helpers

setup() {
	heart_setup
	PIDS=()
	D=$BATS_TEST_TMPDIR
	mkdir -p "$D/souls" "$D/other"
	ME=heart-pulse-$(hostname)	# the unit's heart-pulse-%H
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	broker_stop
}

host_soul() {	# host_soul DIR NAME: a soul pulsing every second
	printf 'heart: {pulse: {interval: 1s}}\n' > "$D/$1/$2.yaml"
}

# shipped: the shipped heart.conf and heart.acl on free ports, with the
# accounts of this host ($ME), another host (heart-pulse-other, its
# agent x) and the dashboard, and each host's block as heart-pulse --acl
# prints it (for the souls there are now).
shipped() {
	TCP=$(free_port) WS=$(free_port)
	mosquitto_passwd -b -c "$D/heart.passwd" "$ME" me-secret
	mosquitto_passwd -b "$D/heart.passwd" heart-pulse-other other-secret
	mosquitto_passwd -b "$D/heart.passwd" mizpah look-only
	host_soul other x
	{
		cat "$T/../contrib/mosquitto/heart.acl"
		heart-pulse --acl --souls "$D/souls" --username "$ME"
		heart-pulse --acl --souls "$D/other" --username heart-pulse-other
	} > "$D/heart.acl"
	sed -e "s#/etc/mosquitto/heart.passwd#$D/heart.passwd#" \
	    -e "s#/etc/mosquitto/heart.acl#$D/heart.acl#" \
	    -e "s#^listener 1883 #listener $TCP #" \
	    -e "s#^listener 9001 #listener $WS #" \
	    "$T/../contrib/mosquitto/heart.conf" > "$D/mosquitto.conf"
	printf 'persistence false\nuser %s\n' "$(id -un)" >> "$D/mosquitto.conf"
	mosquitto -c "$D/mosquitto.conf" > "$D/mosquitto.log" 2>&1 3>&- &
	BROKER_PID=$!
	BROKER_URL=mqtt://127.0.0.1:$TCP
	wait_until 10 eval "(exec 5<>/dev/tcp/127.0.0.1/$TCP) 2>/dev/null"
	wait_until 10 eval "(exec 5<>/dev/tcp/127.0.0.1/$WS) 2>/dev/null"
}

# host_pulse ARGS...: this host's heart-pulse, as the unit runs it
host_pulse() {
	HEART_MQTT_PASSWORD=me-secret heart-pulse --broker "$BROKER_URL" \
	    --username "$ME" "$@" 2>> "$D/pulse.err" 3>&- &
	PULSE=$!
	PIDS+=("$PULSE")
}

# dashboard_watcher ARGS...: a watcher as the dashboard's user
dashboard_watcher() {
	HEART_MQTT_PASSWORD=look-only heart-pulse --watch --broker \
	    "$BROKER_URL" --username mizpah "$@" > "$D/watch.out" \
	    2>> "$D/watch.err" 3>&- &
	PIDS+=("$!")
}

# dashboard_sub ARGS...: mosquitto_sub as the dashboard's user
dashboard_sub() {
	mosquitto_sub -h 127.0.0.1 -p "$TCP" -u mizpah -P look-only "$@"
}

# agent_events EVENT [AGENT]: how many such lines the watcher printed
agent_events() {
	jq -c "select(.event == \"$1\" and (\"${2:-}\" == \"\" or .agent == \"${2:-}\"))" \
	    "$D/watch.out" 2>/dev/null | wc -l
}

@test "the shipped broker listens on loopback only, TCP and WebSockets alike" {
	host_soul souls a
	shipped
	run ss -ltnH
	assert_line --regexp "^LISTEN .* 127\.0\.0\.1:$TCP "
	assert_line --regexp "^LISTEN .* 127\.0\.0\.1:$WS "
	refute_line --regexp "[*\]]:$WS |0\.0\.0\.0:$WS "
	refute_line --regexp "[*\]]:$TCP |0\.0\.0\.0:$TCP "
}

@test "each host writes only its own topics: another host's forged offline is refused" {
	host_soul souls a
	shipped
	# the block heart-pulse --acl printed for this host
	grep -qx "user $ME" "$D/heart.acl"
	grep -qx 'topic write heart/a/status' "$D/heart.acl"
	dashboard_watcher --misses 1000
	host_pulse --souls "$D/souls"
	wait_until 10 eval '[ "$(agent_events online a)" -ge 1 ]'
	# the node's status too: the shipped pattern lets heart-pulse-HOST
	# write heart/node/heart-pulse-HOST/status, its default client id
	run dashboard_sub -t "heart/node/$ME/status" -C 1 -W 5
	echo "$output" | jq -e '.status == "online"'
	# another host's account: neither an agent's status nor this
	# node's will gets through
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u heart-pulse-other \
	    -P other-secret -q 1 -t heart/a/status -r \
	    -m "{\"status\":\"offline\",\"node\":\"$ME\",\"bdseq\":1}"
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u heart-pulse-other \
	    -P other-secret -q 1 -t "heart/node/$ME/status" -r \
	    -m '{"status":"offline","bdseq":1,"reason":"will"}'
	# its own agent it may publish; once the watcher has that, it has
	# read whatever came before
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u heart-pulse-other \
	    -P other-secret -q 1 -t heart/x/status \
	    -m '{"status":"online","node":"heart-pulse-other","bdseq":1}'
	wait_until 10 eval '[ "$(agent_events online x)" -ge 1 ]'
	run agent_events offline
	assert_output 0
	run dashboard_sub -t heart/a/status -C 1 -W 5
	echo "$output" | jq -e '.status == "online"'
	# the dashboard's account cannot write at all
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u mizpah -P look-only -q 1 \
	    -t heart/a/status -r -m '{"status":"offline"}'
	run dashboard_sub -t heart/a/status -C 1 -W 5
	echo "$output" | jq -e '.status == "online"'
}

@test "a publish the broker's ACL denies is said, once, naming the topic and the account" {
	host_soul souls a
	shipped			# this host's block: agent a only
	host_soul souls c
	host_pulse --souls "$D/souls" --backoff-max 1s
	wait_until 10 grep -q 'heart/c/status: the broker refused it' "$D/pulse.err"
	run grep 'heart/c/' "$D/pulse.err"
	assert_output "heart-pulse: heart/c/status: the broker refused it (Not authorized): the account $ME may not write it; add the agent to the account's block in the broker's ACL (heart-pulse --acl)"
	run grep -c refused "$D/pulse.err"
	assert_output 1
	run dashboard_sub -t heart/a/pulse -C 1 -W 5
	assert_success
}

@test "the shipped unit logs in with the account the shipped broker config and ACL name" {
	plain_only
	u=$T/../contrib/systemd/heart-pulse.service
	grep -q -- '--username heart-pulse-%H$' "$u"
	grep -q 'heart-pulse-HOST' "$T/../contrib/mosquitto/heart.conf"
	grep -qx 'pattern readwrite heart/node/%u/status' \
	    "$T/../contrib/mosquitto/heart.acl"
	run grep -x 'user heart-pulse' "$T/../contrib/mosquitto/heart.acl"
	assert_failure
}

@test "1,500 retained statuses all reach a WebSockets subscriber of the shipped broker" {
	[ -d "$T/../node_modules/mqtt" ] || skip "node_modules missing: run make mizpah"
	python3 -c '
import sys
for i in range(1500):
    open("%s/a%04d.yaml" % (sys.argv[1], i), "w").write("heart: {pulse: {interval: 1h}}\n")
' "$D/souls"
	shipped
	host_pulse --souls "$D/souls"
	wait_until 30 eval '[ "$(dashboard_sub -t "heart/+/status" --retained-only -W 2 | wc -l)" -ge 1500 ]'
	run node -e '
const mqtt = require(process.argv[1]);
const c = mqtt.connect(process.argv[2], { username: "mizpah", password: "look-only" });
let n = 0;
c.on("connect", () => c.subscribe("heart/+/status"));
c.on("message", () => { n++; });
setInterval(() => { if (n >= 1500) { console.log(n); process.exit(0); } }, 100);
setTimeout(() => { console.log(n); process.exit(1); }, 20000);
' "$T/../node_modules/mqtt" "ws://127.0.0.1:$WS"
	assert_success
	assert_output 1500
}

@test "births wait for as many acknowledgements at once as the broker grants: 1000 shipped, 20 by mosquitto's default" {
	host_soul souls a
	shipped
	host_pulse --souls "$D/souls" > "$D/stats"
	wait_until 10 eval '[ "$(dashboard_sub -t heart/a/status -C 1 -W 2 | jq -r .status)" = online ]'
	kill -USR1 "$PULSE"
	wait_until 5 grep -q '"window":' "$D/stats"
	run jq -r .window "$D/stats"
	assert_output 1000
	# mosquitto as it comes, no max_inflight_messages: its default
	kill "$PULSE"; wait "$PULSE" || :
	broker_stop
	broker_start
	heart-pulse --broker "$BROKER_URL" --souls "$D/souls" > "$D/stats2" \
	    2>> "$D/pulse.err" 3>&- &
	PULSE=$!
	PIDS+=("$PULSE")
	wait_until 10 eval 'mosquitto_sub -p "${BROKER_URL##*:}" -t heart/a/status -C 1 -W 2 | grep -q online'
	kill -USR1 "$PULSE"
	wait_until 5 grep -q '"window":' "$D/stats2"
	run jq -r .window "$D/stats2"
	assert_output 20
}
