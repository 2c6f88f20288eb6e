#!/usr/bin/env bats
# Mizpah: the dashboard in Debian's Chromium, against a real mosquitto
# with the shipped config (contrib/mosquitto), real heart-pulse
# publishers, pulses published by hand and a simulated fleet
# (t/mizpah-fleet.mjs).  One browser serves the whole
# file (t/mizpah-check.mjs); each test has its own topic prefix.

load helpers

setup_file() {
	MZ=$BATS_TEST_DIRNAME/../build/mizpah
	[ -f "$MZ/mqtt.min.js" ] || skip "build/mizpah missing: run make mizpah"
	D=$BATS_FILE_TMPDIR
	TCP=$(free_port)
	WS=$(free_port)
	WEB=$(free_port)
	mosquitto_passwd -b -c "$D/heart.passwd" heart-pulse pulse-secret
	mosquitto_passwd -b "$D/heart.passwd" mizpah look-only
	# the shipped ACL, and one publishing account for every test's prefix
	# and the agents published by hand (a single trusted host may)
	{ cat "$T/../contrib/mosquitto/heart.acl"
	  printf 'user heart-pulse\ntopic readwrite heart/#\n'; } > "$D/heart.acl"
	sed -e "s#/etc/mosquitto/heart.passwd#$D/heart.passwd#" \
	    -e "s#/etc/mosquitto/heart.acl#$D/heart.acl#" \
	    -e "s#^listener 1883 #listener $TCP #" \
	    -e "s#^listener 9001 #listener $WS #" \
	    "$T/../contrib/mosquitto/heart.conf" > "$D/mosquitto.conf"
	printf "persistence false\nuser %s\n" "$(id -un)" >> "$D/mosquitto.conf"
	mosquitto -c "$D/mosquitto.conf" > "$D/mosquitto.log" 2>&1 3>&- &
	echo $! > "$D/pids"
	python3 -m http.server --bind 127.0.0.1 --directory "$MZ" "$WEB" \
		> "$D/http.log" 2>&1 3>&- &
	echo $! >> "$D/pids"
	wait_until 10 eval "(exec 5<>/dev/tcp/127.0.0.1/$WS) 2>/dev/null"
	node "$T/mizpah-check.mjs" "http://127.0.0.1:$WEB/" "$D" \
		> "$D/check.log" 2>&1 3>&- &
	echo $! >> "$D/pids"
	wait_until 60 test -s "$D/check.port"
	export D TCP WS CHECK=$(cat "$D/check.port")
}

teardown_file() {
	local p
	for p in $(cat "$BATS_FILE_TMPDIR/pids" 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
}

setup() {
	heart_setup
	export HEART_MQTT_PASSWORD=pulse-secret
	P=heart/t$BATS_TEST_NUMBER
	PIDS=
	mkdir -p "$BATS_TEST_TMPDIR/souls"
}

teardown() {
	local p
	for p in $PIDS; do
		kill -CONT "$p" 2>/dev/null
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	run grep pageerror "$D/check.log"
	assert_failure
}

step() {	# step NAME [A [B]]: one step of mizpah-check.mjs, its JSON
	curl -sS --get "http://127.0.0.1:$CHECK/$1" \
	    ${2+--data-urlencode "a=$2"} ${3+--data-urlencode "b=$3"}
}

page() {	# page [QUERY]: the dashboard on this test's prefix, subscribed
	step goto "?broker=ws://127.0.0.1:$WS&username=mizpah&prefix=$P${1:-}#password=look-only"
	# pulses are not retained: one published before the broker grants
	# the subscription never reaches the page
	wait_until 30 holds "document.getElementById('link').textContent.endsWith(' $P/#')"
}

holds() {	# holds EXPR: the page's EXPR is true
	[ "$(step eval "$1")" = true ]
}

drawn() {	# drawn [JQ]: what the page draws, one agent a line
	step eval 'mizpah.drawn()' | jq -r ".[] | ${1:-.}"
}

page_soul() {	# page_soul NAME [YAML]: a soul pulsing every second
	printf 'name: %s\nheart:\n  pulse: { interval: 1s }\n%s\n' "$1" "${2:-}" \
		> "$BATS_TEST_TMPDIR/souls/$1.yaml"
}

# page_pulse [DIR]: a heart-pulse for the souls in DIR on this prefix
page_pulse() {
	heart-pulse --souls "${1:-$BATS_TEST_TMPDIR/souls}" --prefix "$P" \
		--broker "mqtt://127.0.0.1:$TCP" --username heart-pulse \
		--client-id "pulse-$BATS_TEST_NUMBER-$(basename "${1:-x}")" \
		2>> "$BATS_TEST_TMPDIR/pulse.err" 3>&- &
	PIDS="$PIDS $!"
}

publish() {	# publish AGENT LEAF JSON [-r]: a message by hand, as heart-pulse
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u heart-pulse -P pulse-secret \
		-t "$P/$1/$2" -m "$3" ${4:-}
}

born() {	# born AGENT...: online for an hour, as a birth says
	local a
	for a; do
		publish "$a" status "{\"v\":1,\"status\":\"online\",\"agent\":\"$a\",\"interval\":3600,\"misses\":3,\"node\":\"hand\",\"bdseq\":1,\"host\":\"box\"}" -r
	done
}

@test "each state has a colour and a shape of its own, read back from the canvas" {
	now=$(date +%s) h=$(date -u +%H)
	off=$(printf '%02d:00-%02d:00' $(((10#$h + 2) % 24)) $(((10#$h + 3) % 24)))
	for a in online waking open half failing capped; do page_soul "look-$a"; done
	page_soul look-sleeping "  schedule: { active_hours: \"$off\" }
  idle: { active_hours: \"$off\" }"
	page_soul look-capped '  daily_cap: 1'
	heart-cap take --soul "$BATS_TEST_TMPDIR/souls/look-capped.yaml"
	for i in 1 2 3; do
		heart-breaker record --soul "$BATS_TEST_TMPDIR/souls/look-open.yaml" \
		    llm-fail > /dev/null
	done
	state_write look-half breaker.json '{"v":1,"state":"half_open","trigger":"tool","reason":"x"}'
	state_write look-failing wake.json "{\"v\":1,\"last\":{\"schedule\":{\"ts\":$now,\"status\":\"error\"}},\"running\":null}"
	# overdue: its schedule's last wake ten minutes ago, and none since
	page_soul look-overdue '  schedule: { interval: 1m }'
	state_write look-overdue wake.json "{\"v\":1,\"last\":{\"schedule\":{\"ts\":$((now - 600)),\"status\":\"idle\"}},\"running\":null}"
	# stopped: its journal's last entry a pause
	page_soul look-stopped
	state_write look-stopped wake.json "{\"v\":1,\"first_seen_ts\":$now,\"running\":null}"
	state_write look-stopped journal.jsonl "{\"at\":\"$(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\",\"chamber\":\"schedule\",\"status\":\"paused\",\"reason\":\"paused by heart-cap pause\",\"wake_id\":\"x\"}"
	sleep 300 3>&- &
	PIDS="$PIDS $!"
	state_write look-waking wake.json "{\"v\":1,\"running\":{\"chamber\":\"idle\",\"since\":\"x\",\"pid\":$!}}"
	# two more publishers: one killed (its will), one hung (missed pulses)
	mkdir -p "$BATS_TEST_TMPDIR/dead" "$BATS_TEST_TMPDIR/hung"
	printf 'name: look-offline\n' > "$BATS_TEST_TMPDIR/dead/look-offline.yaml"
	printf 'name: look-late\nheart: { pulse: { interval: 1s, misses: 60 } }\n' \
		> "$BATS_TEST_TMPDIR/hung/look-late.yaml"
	page
	page_pulse
	page_pulse "$BATS_TEST_TMPDIR/dead"
	dead=${PIDS##* }
	page_pulse "$BATS_TEST_TMPDIR/hung"
	hung=${PIDS##* }
	wait_until 30 holds 'mizpah.drawn().length === 11'
	kill -9 "$dead"
	kill -STOP "$hung"
	for l in online waking open half_open failing capped sleeping offline late overdue stopped; do
		a=look-${l%_open}
		wait_until 30 holds "mizpah.drawn().some((c) => c.id === '$a' && c.look === '$l')"
	done
	# the palette, and no two looks with one shape (colour is never alone)
	for a in online waking open half failing capped sleeping offline late overdue stopped; do
		step glyph "look-$a"
	done > "$BATS_TEST_TMPDIR/glyphs"
	jq -s -e 'map({(.look): .colour}) | add == {"online": "#3ddc97",
	    "waking": "#f0e442", "open": "#ff6b3d", "half_open": "#ffb000",
	    "failing": "#ff7ac6", "capped": "#56b4e9", "sleeping": "#b39dff",
	    "offline": "#a7afc2", "late": "#3ddc97", "overdue": "#e69f00",
	    "stopped": "#cc79a7"}' "$BATS_TEST_TMPDIR/glyphs"
	jq -s -e 'map(.mask) | unique | length == 11' "$BATS_TEST_TMPDIR/glyphs"
	# the legend names each look, with its count
	run step eval '[...document.querySelectorAll("#legend button")].map((b) => b.textContent).join("|")'
	assert_output '"offline1|breaker open1|half-open1|failing1|overdue: nobody wakes it1|stopped1|unknown: no broker0|missed pulses1|waking1|capped today1|quiet hours1|breathing1"'
	# breathing and waking are animated, unless motion is to be reduced
	holds 'getComputedStyle(document.getElementById("breath")).animationName === "breathe"'
	step motion reduce
	holds 'getComputedStyle(document.getElementById("breath")).animationName === "none"'
	holds 'getComputedStyle(document.getElementById("flash")).animationName === "none"'
	step motion no-preference
	step shot looks
}

@test "problems sort first in their group and are counted; search and the legend narrow the view" {
	plain_only
	page
	born a-1 a-2 a-3 a-4 b-1 b-2 b-3 b-4 b-5 solo
	pulse_of() {	# pulse_of AGENT [JSON]: a pulse, with JSON's fields
		local x=${2:-}
		publish "$1" pulse "$(jq -nc --arg a "$1" --argjson x "${x:-{\}}" '{v: 1,
		    agent: $a, seq: 1, host: "box", breaker: "closed", waking: false,
		    cap: {used: 0, cap: 48, tokens: 0, resets: 0}} + $x')"
	}
	pulse_of a-1
	pulse_of a-2 '{"breaker":"open"}'
	pulse_of a-3 '{"last_wake":{"chamber":"idle","status":"error","ts":1}}'
	pulse_of a-4 '{"breaker":"half_open"}'
	pulse_of b-1 '{"waking":"idle"}'
	pulse_of b-2
	pulse_of b-3 '{"cap":{"used":48,"cap":48,"tokens":9,"resets":0}}'
	pulse_of b-4 '{"due":1,"overdue":true}'
	pulse_of b-5 '{"skip":{"status":"paused","ts":1,"reason":"paused by heart-cap pause"}}'
	pulse_of solo
	publish a-5 status '{"v":1,"status":"offline","agent":"a-5","node":"hand","bdseq":1,"reason":"shutdown"}' -r
	wait_until 20 holds 'mizpah.drawn().length === 11'
	wait_until 20 holds 'mizpah.drawn().find((c) => c.id === "b-3").look === "capped"'
	run drawn '"\(.group) \(.id) \(.look)"'
	assert_output 'a a-5 offline
a a-2 open
a a-4 half_open
a a-3 failing
a a-1 online
b b-4 overdue
b b-5 stopped
b b-1 waking
b b-2 online
b b-3 capped
 solo online'
	run step eval 'document.getElementById("problems").textContent'
	assert_output '"6 problems: 1 offline, 1 breaker open, 1 half-open, 1 failing, 1 overdue: nobody wakes it, 1 stopped"'
	# pulses that change nothing paint nothing
	n=$(step eval 'mizpah.paints')
	for i in 2 3 4 5 6 7 8 9; do pulse_of b-2 "{\"seq\":$i}"; done
	wait_until 10 holds 'agents.get("b-2").p.seq === 9'
	[ "$(step eval 'mizpah.paints')" = "$n" ]
	# search by id
	step type '#search' 'B-'
	wait_until 10 holds 'mizpah.drawn().map((c) => c.id).join() === "b-4,b-5,b-1,b-2,b-3"'
	holds 'document.getElementById("counts").textContent === "11 agents, 5 shown"'
	step type '#search' ''
	# the header's counts change with the search, and may move the
	# legend: a click before that is drawn can land on a neighbour
	wait_until 10 holds 'document.getElementById("counts").textContent === "11 agents"'
	# the legend filters by look; the problems button by all six
	step clickon '#legend button[data-look="failing"]'
	wait_until 10 holds 'mizpah.drawn().map((c) => c.id).join() === "a-3"'
	step clickon '#problems'
	wait_until 10 holds 'mizpah.drawn().map((c) => c.id).join() === "a-5,a-2,a-4,a-3,b-4,b-5"'
	holds 'document.querySelector("#legend [data-look=failing]").ariaPressed === "false"'
	step clickon '#problems'
	wait_until 10 holds 'mizpah.drawn().length === 11'
	# a problem that clears moves back among the others
	pulse_of a-2
	wait_until 10 holds 'mizpah.drawn().map((c) => c.id).slice(0, 4).join() === "a-5,a-4,a-3,a-1"'
}

@test "the detail panel shows the figures of the pulse published, on click and from the keyboard" {
	page_soul scout
	page_soul sleepy "  schedule: { active_hours: \"$(printf '%02d:00-%02d:00' $(((10#$(date -u +%H) + 2) % 24)) $(((10#$(date -u +%H) + 3) % 24)))\" }
  idle: { daily_cap: 0 }"
	for i in 1 2 3; do
		heart-breaker record --soul "$BATS_TEST_TMPDIR/souls/scout.yaml" \
		    tool-fail --reason 'quote API: HTTP 502' > /dev/null
	done
	heart-cap take scout
	heart-cap take scout
	d=$HEART_STATE_DIR/agents/scout
	state_write scout cap.json "$(jq -c '.tokens = {prompt: 1200, completion: 345}' "$d/cap.json")"
	now=$(date +%s)
	state_write scout wake.json "{\"v\":1,\"last\":{\"schedule\":{\"ts\":$((now - 7200)),\"status\":\"ok\"},\"idle\":{\"ts\":$((now - 60)),\"status\":\"tool_cap\"}},\"running\":null,\"last_error\":{\"ts\":$((now - 60)),\"message\":\"more than 5 tool calls\"}}"
	page
	page_pulse
	wait_until 30 holds 'mizpah.drawn().some((c) => c.id === "scout" && c.look === "open")'
	mosquitto_sub -h 127.0.0.1 -p "$TCP" -u heart-pulse -P pulse-secret \
		-t "$P/scout/pulse" -C 1 -W 10 > "$BATS_TEST_TMPDIR/p"
	wait_until 10 holds "agents.get('scout').p.seq >= $(jq .seq "$BATS_TEST_TMPDIR/p")"
	step click scout
	wait_until 10 holds '!document.getElementById("card").hidden'
	step card > "$BATS_TEST_TMPDIR/card"
	jq -e --slurpfile p "$BATS_TEST_TMPDIR/p" '$p[0] as $p |
	    def t(x): x | todate; .title == "scout" and .facts as $f |
	    $f.state == "breaker open" and $f.host == $p.host and
	    ($f.birth | test("^pulse-[0-9]+-x, bdseq [0-9]+$")) and
	    $f.breaker == "open (tool)" and $f.why == "quote API: HTTP 502" and
	    ($f["next probe"] | test("^in 1[45] min \\(" + t($p.breaker_until) + "\\)$")) and
	    $f.cap == "2 used of 48, 46 left" and
	    ($f.resets | endswith("(" + t($p.cap.resets) + ")")) and
	    $f["tokens today"] == "1,545" and $f["cost today"] == "no price" and
	    ($f["last wake"] | test("^idle wake, tool_cap, [0-9]+ (s|min) ago \\(" + t($p.last_wake.ts) + "\\)$")) and
	    $f["its error"] == "more than 5 tool calls" and
	    ($f["last answer"] | test("^2 h ago \\(" + t($p.answer) + "\\)$")) and
	    $f["quiet hours"] == "no" and
	    ($f["last pulse"] | test("s ago \\(.*\\), seq [0-9]+$"))' "$BATS_TEST_TMPDIR/card"
	# the keyboard: the cursor moves with the arrows, Enter shows the agent
	step focus '#base'
	step press ArrowRight
	step press Enter
	wait_until 10 holds 'document.getElementById("who").textContent === "sleepy"'
	wait_until 10 holds 'document.querySelector("#facts dt:last-of-type + dd").textContent === "now: no chamber may wake"'
	step press Escape
	wait_until 10 holds 'document.getElementById("card").hidden'
	# the cost of the day, when a pulse carries it
	born priced
	publish priced pulse '{"v":1,"agent":"priced","seq":1,"host":"box","breaker":"closed","waking":false,"cap":{"used":3,"cap":48,"tokens":4000,"resets":0,"cost":0.4213}}'
	wait_until 10 holds 'mizpah.drawn().some((c) => c.id === "priced")'
	step click priced
	wait_until 10 holds 'document.getElementById("who").textContent === "priced"'
	run step card
	echo "$output" | jq -e '.facts["cost today"] == "$0.4213" and .facts.host == "box"'
}

@test "ten thousand agents on a 1400x900 screen: every one drawn, none over another" {
	plain_only
	page
	node "$T/mizpah-fleet.mjs" "mqtt://127.0.0.1:$TCP" "$P" 10000
	wait_until 60 holds 'mizpah.drawn().length === 10000'
	step eval 'mizpah.drawn()' > "$BATS_TEST_TMPDIR/drawn"
	w=$(step eval 'document.getElementById("sky").clientWidth')
	h=$(step eval 'document.getElementById("sky").clientHeight')
	jq -e --argjson w "$w" --argjson h "$h" 'length == 10000 and
	    ([.[].id] | unique | length) == 10000 and
	    ([.[] | "\(.x),\(.y)"] | unique | length) == 10000 and
	    all(.x >= 0 and .y >= 0 and .x + .size <= $w and .y + .size <= $h) and
	    .[0].size >= 6 and ([.[].group] | unique | length) == 10' "$BATS_TEST_TMPDIR/drawn"
	holds 'document.scrollingElement.scrollHeight <= 900 && document.getElementById("sky").scrollHeight <= document.getElementById("sky").clientHeight'
	step shot fleet-10000
}

@test "the broker gone: every agent unknown, not offline; back, no false offlines" {
	for a in u-1 u-2; do
		printf 'heart: { pulse: { interval: 2s, misses: 3 } }\n' \
			> "$BATS_TEST_TMPDIR/souls/$a.yaml"
	done
	page
	# it redials within a second of the broker's return
	heart-pulse --souls "$BATS_TEST_TMPDIR/souls" --prefix "$P" \
		--broker "mqtt://127.0.0.1:$TCP" --username heart-pulse \
		--client-id "pulse-$BATS_TEST_NUMBER" --backoff-max 1s \
		2>> "$BATS_TEST_TMPDIR/pulse.err" 3>&- &
	PIDS="$PIDS $!"
	wait_until 30 eval '[ "$(drawn .look | sort -u | tr "\n" " ")" = "online " ]'
	# the broker stops: going down, it sends the wills of its clients
	# (as here, by hand, the node's own will, acknowledged) and then
	# closes the page's link; not one message may draw an agent offline.
	# Its retained statuses go with it (no persistence).
	step eval 'window.willOffline = false, client.on("message", () => { if (mizpah.drawn().some((c) => c.look === "offline")) window.willOffline = true; }), true'
	will=$(mosquitto_sub -p "$TCP" -u heart-pulse -P pulse-secret \
	    -t "$P/node/+/status" -C 1 -W 5 | jq -c '.status = "offline" | .reason = "will" | del(.agents)')
	mosquitto_pub -p "$TCP" -u heart-pulse -P pulse-secret -q 1 \
	    -t "$P/node/pulse-$BATS_TEST_NUMBER/status" -m "$will"
	kill "$(head -1 "$D/pids")"
	wait_until 20 holds 'document.getElementById("link").textContent.includes("disconnected")'
	wait_until 20 eval '[ "$(drawn .look | sort -u | tr "\n" " ")" = "unknown " ]'
	# an outage longer than misses and a half intervals (7 s): without a
	# broker, no agent may turn offline on the page
	sleep 8
	run drawn .look
	assert_output "$(printf 'unknown\nunknown')"
	holds 'window.willOffline === false'
	# back: from the page's subscription on, nothing is drawn offline
	mosquitto -c "$D/mosquitto.conf" >> "$D/mosquitto.log" 2>&1 3>&- &
	sed -i "1s/.*/$!/" "$D/pids"
	wait_until 30 holds 'document.getElementById("link").textContent.endsWith(" '"$P"'/#")'
	step eval 'window.sawOffline = false, setInterval(() => { if (mizpah.drawn().some((c) => c.look === "offline")) window.sawOffline = true; }, 50), true'
	# both born again by their heart-pulse, and pulsing
	wait_until 30 eval '[ "$(drawn .look | sort -u | tr "\n" " ")" = "online " ]'
	holds 'window.sawOffline === false'
}

@test "a wrong password: the dashboard says why it is not connected" {
	plain_only
	step goto "?broker=ws://127.0.0.1:$WS&username=mizpah&prefix=$P#password=wrong"
	wait_until 20 holds 'document.getElementById("link").textContent.includes("Not authorized")'
}

@test "the password comes in the URL's fragment, never sent, and is gone from the address and history at once" {
	plain_only
	page
	wait_until 20 holds 'document.getElementById("link").textContent.includes("/#")'
	holds '!location.href.includes("look-only") && !location.hash'
	# the web server never saw it
	run grep -c look-only "$D/http.log"
	assert_output 0
	grep -q "GET /?broker=" "$D/http.log"
	# a password in the query string is not used: not authorized
	step goto "?broker=ws://127.0.0.1:$WS&username=mizpah&password=look-only&prefix=$P"
	wait_until 20 holds 'document.getElementById("link").textContent.includes("Not authorized")'
}

@test "a status from another node than the agent's birth does not take it offline" {
	plain_only
	born own
	page
	wait_until 20 eval '[ "$(drawn "select(.id == \"own\") | .look")" = online ]'
	publish own status '{"v":1,"status":"offline","agent":"own","node":"elsewhere","bdseq":9,"reason":"shutdown"}'
	# a status after it: once the page draws that, it has read the first
	publish mark status '{"v":1,"status":"offline","agent":"mark","node":"hand","bdseq":1}'
	wait_until 20 eval '[ "$(drawn "select(.id == \"mark\") | .look")" = offline ]'
	run drawn 'select(.id == "own") | .look'
	assert_output online
	# its own node's offline does
	publish own status '{"v":1,"status":"offline","agent":"own","node":"hand","bdseq":1,"reason":"shutdown"}'
	wait_until 20 eval '[ "$(drawn "select(.id == \"own\") | .look")" = offline ]'
	publish own status '' -r
}

@test "the shipped broker config refuses an anonymous publisher, and the dashboard's user cannot write" {
	plain_only
	run mosquitto_pub -h 127.0.0.1 -p "$TCP" -t "$P/x/pulse" -m forged
	assert_failure
	assert_output --partial 'not authorised'
	publish x status true -r
	mosquitto_pub -h 127.0.0.1 -p "$TCP" -u mizpah -P look-only -t "$P/x/status" -m forged -r
	run mosquitto_sub -h 127.0.0.1 -p "$TCP" -u heart-pulse -P pulse-secret \
		-t "$P/x/status" -C 1 -W 5
	assert_output true
	publish x status '' -r
}

@test "the page's own HTML, CSS and JavaScript stay within the paper's 344 lines" {
	plain_only
	n=$(cat "$T"/../share/heartbeat/mizpah/*.html "$T"/../share/heartbeat/mizpah/*.css \
		"$T"/../share/heartbeat/mizpah/*.js | wc -l)
	echo "mizpah: $n lines" >&3
	[ "$n" -le 344 ]
	[ "$n" -gt 100 ]
}
