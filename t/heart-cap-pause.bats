#!/usr/bin/env bats
# heart-cap pause and resume: an operator's stop, for one agent or the
# whole fleet, honoured by every wake at its admission, on every host
# that shares the store.

load helpers
bats_require_minimum_version 1.5.0

T0=$(date -u -d '2026-11-22 09:00:30' +%s)

setup() {
	model_setup
}

teardown() {
	model_teardown
}

# mksoul NAME: a soul due every minute, in $BATS_TEST_TMPDIR, printed
mksoul() {
	printf 'name: %s\nheart: { schedule: { interval: 1m } }\n' "$1" \
	    > "$BATS_TEST_TMPDIR/$1.yaml"
	echo "$BATS_TEST_TMPDIR/$1.yaml"
}

# used AGENT: the schedule chamber's count today
used() {
	heart-cap status "$1" --json | jq -r .chambers.schedule.used
}

@test "a paused agent's wakes, forced or due, are paused: zero requests, the cap untouched, exit 0" {
	s=$(mksoul scout)
	run -0 heart-wake --soul "$s" --force
	assert_output --partial '"status":"idle"'
	run -0 used scout
	assert_output 1
	run -0 heart-cap pause scout
	assert_output ""
	n=$(llm_count)
	run -0 heart-wake --soul "$s" --force
	assert_output --partial '"status":"paused"'
	assert_output --partial '"reason":"paused by heart-cap pause since '
	assert_output --partial 'until resumed"'
	run -0 jq -r .next <<< "$output"
	assert_output null
	# the unforced wake, a minute on, when its slot is due
	run -0 at_epoch $(($(date +%s) + 90)) heart-wake --soul "$s"
	assert_output --partial '"status":"paused"'
	run -0 jq -r '.exit, .cap.used' <<< "$output"
	assert_output "$(printf '0\n1')"
	run -0 llm_count
	assert_output "$n"
	run -0 used scout
	assert_output 1
	# a rehearsal says so too, with the request it would send
	run -0 heart-wake --soul "$s" --force --dry-run
	run -0 jq -c '[.status, .dry_run, (.request != null)]' <<< "$output"
	assert_output '["paused",true,true]'
	# a script's take is refused as the wakes are
	run -1 heart-cap take scout -v
	assert_output --partial "scout: schedule refused: paused by heart-cap pause"
	run -0 used scout
	assert_output 1
}

@test "resumed, the agent wakes at once: a paused wake used no slot" {
	s=$(mksoul scout)
	run -0 at_epoch "$T0" heart-wake --soul "$s"	# first sight
	assert_output --partial '"status":"not_due"'
	t=$((T0 + 30))	# its first slot
	run -0 at_epoch "$t" heart-wake --soul "$s"
	assert_output --partial '"status":"idle"'
	run -0 heart-cap pause scout
	run -0 at_epoch $((t + 60)) heart-wake --soul "$s"
	assert_output --partial '"status":"paused"'
	run -0 at_epoch $((t + 61)) heart-cap resume scout
	assert_output ""
	# the slot of t + 60 was not served: still due, a second on
	run -0 at_epoch $((t + 62)) heart-wake --soul "$s"
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 2
	run -0 at_epoch $((t + 63)) heart-wake --soul "$s"
	assert_output --partial '"status":"not_due"'
}

@test "--until ends the pause by itself: a time as heart prints it, or a duration" {
	s=$(mksoul scout)
	run -0 at_epoch "$T0" heart-wake --soul "$s"	# first sight
	run -0 at_epoch "$T0" heart-cap pause scout --until 2026-11-22T09:30:00Z
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$s"
	assert_output --partial '"status":"paused"'
	assert_output --partial 'until 2026-11-22T09:30:00Z'
	run -0 jq -r .next <<< "$output"
	assert_output 2026-11-22T09:30:00Z
	run -0 at_epoch $((T0 + 1770)) heart-wake --soul "$s"
	assert_output --partial '"status":"idle"'
	# a duration from now; a pause again keeps its since
	run -0 at_epoch $((T0 + 1800)) heart-cap pause scout --until 2h
	run -0 at_epoch $((T0 + 1900)) heart-cap status scout --json
	run -0 jq -c .paused <<< "$output"
	assert_output '{"since":"2026-11-22T09:30:30Z","until":"2026-11-22T11:30:30Z","all":false}'
	run -0 at_epoch $((T0 + 1900)) heart-cap pause scout --until 1h
	run -0 at_epoch $((T0 + 1900)) heart-cap status scout --json
	run -0 jq -c .paused <<< "$output"
	assert_output '{"since":"2026-11-22T09:30:30Z","until":"2026-11-22T10:32:10Z","all":false}'
	run -0 at_epoch $((T0 + 5630)) heart-wake --soul "$s"
	assert_output --partial '"status":"idle"'
	run -0 at_epoch $((T0 + 5630)) heart-cap status scout --json
	run -0 jq -c .paused <<< "$output"
	assert_output null
	# a time gone by, or neither a time nor a duration: bad usage
	run -64 at_epoch "$T0" heart-cap pause scout --until 2026-11-22T09:00:00Z
	assert_output "heart-cap: --until: 2026-11-22T09:00:00Z: that time has come already"
	run -64 heart-cap pause scout --until soon
	assert_output --partial "neither a time"
	run -64 heart-cap take scout --until 2h
	run -64 heart-cap status --all
}

@test "--explain shows the pause as a gate, and no wake before it ends" {
	s=$(mksoul scout)
	run -0 at_epoch "$T0" heart-wake --soul "$s"	# first sight
	run -0 at_epoch "$T0" heart-wake --soul "$s" --explain --chamber schedule
	run -0 jq -c '[.would, .gates.pause.ok, .next]' <<< "$output"
	assert_output '["not_due",true,"2026-11-22T09:01:00Z"]'
	run -0 at_epoch "$T0" heart-cap pause scout --until 2026-11-22T10:00:00Z
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$s" --explain --chamber schedule
	run -0 jq -c '[.would, .gates.pause.ok, .gates.pause.until, .next]' <<< "$output"
	assert_output '["paused",false,"2026-11-22T10:00:00Z","2026-11-22T10:00:00Z"]'
	run -0 at_epoch "$T0" heart-cap pause --all
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$s" --explain --chamber schedule
	run -0 jq -c '[.would, .next]' <<< "$output"
	assert_output '["paused",null]'
}

@test "a paused wake's next is the pause's end, or the cap's reset when the cap refuses past it, as --explain says" {
	printf 'name: scout\nheart: { schedule: { interval: 1m, daily_cap: 1 }, idle: { daily_cap: 0 } }\n' \
	    > "$BATS_TEST_TMPDIR/scout.yaml"
	s=$BATS_TEST_TMPDIR/scout.yaml
	run -0 at_epoch "$T0" heart-wake --soul "$s" --force
	assert_output --partial '"status":"idle"'
	run -0 at_epoch "$T0" heart-cap pause scout --until 2026-11-22T09:30:00Z
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$s"
	run -0 jq -r '[.status, .next] | join(" ")' <<< "$output"
	assert_output "paused 2026-11-23T00:00:00Z"
	run -0 at_epoch $((T0 + 60)) heart-wake --soul "$s" --explain --chamber schedule
	run -0 jq -r .next <<< "$output"
	assert_output 2026-11-23T00:00:00Z
	[ "$(llm_count)" -eq 1 ]
}

@test "--all pauses the whole fleet, an agent created after it too; resume --all ends every pause" {
	a=$(mksoul alpha)
	run -0 heart-wake --soul "$a" --force
	run -0 heart-cap pause --all
	b=$(mksoul newbie)	# heart has never seen it
	run -0 heart-wake --soul "$b" --force
	assert_output --partial '"status":"paused"'
	assert_output --partial 'paused by heart-cap pause --all (the whole fleet)'
	run -0 heart-wake --soul "$a" --force
	assert_output --partial '"status":"paused"'
	run -0 llm_count
	assert_output 1
	# resuming one agent leaves the fleet's pause on it, and says so
	run -0 heart-cap pause alpha --until 1h
	run -0 --separate-stderr heart-cap resume alpha
	[[ $stderr == "heart-cap: alpha: paused by heart-cap pause --all (the whole fleet) since "*", until resumed" ]]
	run -0 heart-wake --soul "$a" --force
	assert_output --partial '"status":"paused"'
	run -0 heart-cap resume --all -v
	assert_output "the whole fleet: not paused"
	run -0 heart-wake --soul "$b" --force
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 2
}

@test "status shows who is paused and until when, the fleet's pause first" {
	meet alpha beta
	run -0 heart-cap status --json
	run -0 jq -sc 'map(.paused)' <<< "$output"
	assert_output '[null,null]'
	run -0 at_epoch "$T0" heart-cap pause beta --until 2026-11-22T12:00:00Z
	run -0 at_epoch "$T0" heart-cap status --json
	run -0 jq -sc 'map([.agent, .paused])' <<< "$output"
	assert_output '[["alpha",null],["beta",{"since":"2026-11-22T09:00:30Z","until":"2026-11-22T12:00:00Z","all":false}]]'
	run -0 at_epoch $((T0 + 60)) heart-cap pause --all
	run -0 at_epoch $((T0 + 60)) heart-cap status --json
	assert_line --index 0 '{"pause":"all","since":"2026-11-22T09:01:30Z","until":null}'
	run -0 jq -sc '.[1:] | map([.agent, .paused.all, .paused.until])' <<< "$output"
	assert_output '[["alpha",true,null],["beta",true,null]]'
	# on a terminal, a line each after the table
	run -0 at_epoch $((T0 + 60)) script -qec "heart-cap status" /dev/null
	assert_line --partial --index 3 "paused: the whole fleet, since 2026-11-22T09:01:30Z, until resumed"
	run -0 at_epoch $((T0 + 60)) script -qec "heart-cap status beta" /dev/null
	assert_line --partial --index 2 "paused: beta (the whole fleet), since 2026-11-22T09:01:30Z, until resumed"
	# and for node_exporter
	run -0 at_epoch $((T0 + 60)) heart-cap resume --all
	run -0 at_epoch $((T0 + 60)) heart-cap pause beta --until 2026-11-22T12:00:00Z
	run -0 at_epoch $((T0 + 60)) heart-cap status --prom
	assert_line 'heart_paused{agent="alpha"} 0'
	assert_line 'heart_paused{agent="beta"} 1'
	assert_line "heart_paused_until_timestamp_seconds{agent=\"beta\"} $((T0 + 10770))"
	refute_line --partial 'heart_paused_until_timestamp_seconds{agent="alpha"}'
	run -0 heart-cap resume --all
	run -0 heart-cap status --json
	run -0 jq -sc 'map(.paused)' <<< "$output"
	assert_output '[null,null]'
}

@test "a misspelt agent is no such agent, exit 64, and nothing is paused" {
	meet scout
	run -64 heart-cap pause scout scuot
	assert_output --partial "heart-cap: scuot: no such agent"
	run -64 heart-cap resume scuot
	assert_output --partial "heart-cap: scuot: no such agent"
	run -0 heart-cap status scout --json
	run -0 jq -c .paused <<< "$output"
	assert_output null
	run -64 heart-cap pause
	run -64 heart-cap pause scout --all
	run -64 heart-cap pause ../x
}

@test "a pause or resume of nobody, or of agents and --all, says what is wrong, exit 64" {
	meet scout
	run -64 --separate-stderr heart-cap pause
	[ "$stderr" = "heart-cap: pause: which agents? name them, give their souls (--soul), or --all for the whole fleet" ]
	run -64 --separate-stderr heart-cap resume
	[ "$stderr" = "heart-cap: resume: which agents? name them, give their souls (--soul), or --all for the whole fleet" ]
	run -64 --separate-stderr heart-cap pause scout --all
	[ "$stderr" = "heart-cap: --all is the whole fleet: name no agent and no soul with it" ]
	run -0 heart-cap status scout --json
	run -0 jq -c .paused <<< "$output"
	assert_output null
}

@test "two hosts sharing one Redis: a pause on one is honoured on the other, and so is its resume" {
	redis_store || redis_start || skip "no redis-server"
	export HEART_STORE=$REDIS_URL
	s=$(mksoul scout)
	h1=$BATS_TEST_TMPDIR/host1 h2=$BATS_TEST_TMPDIR/host2
	run -0 env HEART_STATE_DIR="$h1" heart-wake --soul "$s" --force
	assert_output --partial '"status":"idle"'
	run -0 env HEART_STATE_DIR="$h2" heart-cap pause scout
	run -0 env HEART_STATE_DIR="$h1" heart-wake --soul "$s" --force
	assert_output --partial '"status":"paused"'
	run -0 env HEART_STATE_DIR="$h1" heart-cap status scout --json
	run -0 jq -r .paused.all <<< "$output"
	assert_output false
	run -0 env HEART_STATE_DIR="$h1" heart-cap resume scout
	run -0 env HEART_STATE_DIR="$h2" heart-cap pause --all --until 1h
	b=$(mksoul newbie)
	run -0 env HEART_STATE_DIR="$h1" heart-wake --soul "$b" --force
	assert_output --partial '"status":"paused"'
	run -0 env HEART_STATE_DIR="$h2" heart-cap resume --all
	run -0 env HEART_STATE_DIR="$h1" heart-wake --soul "$s" --force
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 2
	# the document is the store's, on the server, not a host's file
	[ ! -e "$h1/pause.json" ] && [ ! -e "$h2/pause.json" ]
	[ "$(rcli EXISTS 'heart:{*}:pause.json')" = 1 ]
}

@test "--souls round running when the fleet is paused: the wakes admitted after it are paused" {
	redis_store || redis_start || skip "no redis-server"
	export HEART_STORE=$REDIS_URL
	d=$BATS_TEST_TMPDIR/souls
	mkdir -p "$d"
	for i in 1 2 3 4 5 6; do
		printf 'name: s%02d\nheart: { schedule: { interval: 1m } }\n' \
		    "$i" > "$d/s0$i.yaml"
	done
	llm_script '{"delay": 3, "replies": [{"text": "[IDLE]"}]}'
	(HEART_STATE_DIR=$BATS_TEST_TMPDIR/host1 exec heart-wake --souls "$d" \
	    --jobs 2 --force > "$BATS_TEST_TMPDIR/out") &
	pid=$!
	two() { [ "$(llm_count)" -ge 2 ]; }
	wait_until 20 two
	run -0 env HEART_STATE_DIR="$BATS_TEST_TMPDIR/host2" heart-cap pause --all
	wait "$pid"
	# the two wakes under way when it came go on; the others are paused
	run -0 jq -r .status "$BATS_TEST_TMPDIR/out"
	[ "$(sort <<< "$output" | uniq -c | tr -s ' ' | tr '\n' ,)" = " 2 idle, 4 paused," ]
	run -0 llm_count
	assert_output 2
	run -0 jq -r 'select(.status == "paused") | .cap.used // 0' "$BATS_TEST_TMPDIR/out"
	[ "$(sort -u <<< "$output")" = 0 ]
}

@test "a pause.json that does not read fails every wake closed, named, with nothing sent, and is never replaced" {
	s=$(mksoul scout)
	bad='{"v":1,"all":'
	if redis_store; then
		rcli SET 'heart:{*}:pause.json' "$bad" > /dev/null
		where='heart:{*}:pause.json'
	else
		mkdir -p "$HEART_STATE_DIR"
		printf '%s' "$bad" > "$HEART_STATE_DIR/pause.json"
		where=$HEART_STATE_DIR/pause.json
	fi
	run -74 heart-wake --soul "$s" --force
	assert_output --partial "$where: not valid JSON"
	assert_output --partial '"status":"error"'
	run -0 llm_count
	assert_output 0
	run -74 heart-cap pause scout
	assert_output --partial "$where: not valid JSON"
	run -74 heart-cap take --soul "$s"
	assert_output --partial "$where: not valid JSON"
	if redis_store; then
		[ "$(rcli GET 'heart:{*}:pause.json')" = "$bad" ]
	else
		[ "$(cat "$HEART_STATE_DIR/pause.json")" = "$bad" ]
	fi
}
