#!/usr/bin/env bats
# heart.dormant_after: an agent nobody has spoken to for that long is
# dormant (lib/dormant.c): its wakes end as "dormant", zero requests,
# nothing taken from the cap, until a user message wakes it.  One
# notice says so (dormant_notice), delivered by heart-ghost as an
# answer is, to a real receiver (t/deliver-receiver.py, by
# contrib/deliver/webhook), and kept in no history.

load helpers
bats_require_minimum_version 1.5.0

T0=$(date -u -d '2026-11-01 08:00:00' +%s)
DAY=86400

setup() {
	model_setup
	cd "$BATS_TEST_TMPDIR"
	unset "${!HEART_DELIVER_@}"
	: > wakes.jsonl
}

teardown() {
	rcv_stop
	model_teardown
}

# wake SOUL EPOCH: heart-wake for SOUL then, its lines kept in
# wakes.jsonl and given to heart-ghost --text --exec webhook (the
# receiver's, rcv_start)
wake() {
	run -0 --separate-stderr at_epoch "$2" heart-wake --soul "$1"
	printf '%s\n' "$output" > last.jsonl
	cat last.jsonl >> wakes.jsonl
	run -0 --separate-stderr at_epoch "$2" heart-ghost --text \
	    --exec "$T/../contrib/deliver/webhook" < last.jsonl
}

# wake_status, notice_status: the status of the wake's own line in
# $output, and of the notice after it ("" when none)
wake_status() {
	head -n 1 <<< "$output" | jq -r .status
}

notice_status() {
	sed -n 2p <<< "$output" | jq -r .status
}

# count STATUS: how many lines of that status heart-wake printed
count() {
	jq -r .status wakes.jsonl | grep -cx "$1" || true
}

# used AGENT CHAMBER: the chamber's count today
used() {
	heart-cap status "$1" --json | jq -r ".chambers.$2.used"
}

@test "the idle chamber is dormant after 14 days with no input: zero requests, the cap untouched, exit 0; a user message wakes it" {
	s=$(soul_file scout.yaml 'heart: { schedule: { daily_cap: 0 }, idle: { after: 2h } }')
	run -0 at_epoch "$T0" heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = not_idle ]
	run -0 at_epoch $((T0 + 3 * 3600)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 1
	# the last day before it: an idle wake as ever
	run -0 at_epoch $((T0 + 13 * DAY)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = idle ]
	run -0 at_epoch $((T0 + 14 * DAY)) heart-wake --soul "$s" --chamber idle
	[ "$(wake_status)" = dormant ]
	assert_output --partial '"reason":"dormant: no user input since 2026-11-01T08:00:00Z (heart.dormant_after 14d, the idle chamber'"'"'s default); a user message wakes it"'
	# the first dormant wake tells it: its notice follows
	[ "$(notice_status)" = dormant_notice ]
	run -0 jq -r '.exit, .next' <<< "$(head -n 1 <<< "$output")"
	assert_output "$(printf '0\nnull')"
	run -0 at_epoch $((T0 + 20 * DAY)) heart-wake --soul "$s"
	[ "$(output_field status)" = dormant ]
	run -0 llm_count
	assert_output 2
	run -0 at_epoch $((T0 + 20 * DAY)) used scout idle
	assert_output 0
	# a rehearsal says so too
	run -0 at_epoch $((T0 + 20 * DAY)) heart-wake --soul "$s" --chamber idle --dry-run
	[ "$(output_field status)" = dormant ]
	# the user speaks: the chamber counts its quiet stretch from there
	run -0 at_epoch $((T0 + 20 * DAY)) heart-ghost --user scout 'still there?'
	run -0 at_epoch $((T0 + 20 * DAY + 3 * 3600)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 3
}

@test "touching agents/ID/input wakes a dormant agent; before any input, heart's first sight counts" {
	s=$(soul_file scout.yaml 'heart: { schedule: { daily_cap: 0 } }')
	run -0 at_epoch "$T0" heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = not_idle ]
	run -0 at_epoch $((T0 + 15 * DAY)) heart-wake --soul "$s" --chamber idle
	[ "$(wake_status)" = dormant ]
	[ "$(notice_status)" = dormant_notice ]
	touch -d "@$((T0 + 15 * DAY))" "$HEART_STATE_DIR/agents/scout/input"
	run -0 at_epoch $((T0 + 15 * DAY + 3 * 3600)) heart-wake --soul "$s" --chamber idle
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 1
}

@test "the schedule chamber is not dormant by default; heart.dormant_after holds for both chambers" {
	s=$(soul_file watch.yaml 'heart: { schedule: { interval: 1h }, idle: { daily_cap: 0 } }')
	run -0 at_epoch "$T0" heart-wake --soul "$s" --chamber schedule --force
	[ "$(output_field status)" = idle ]
	run -0 at_epoch $((T0 + 30 * DAY)) heart-wake --soul "$s" --chamber schedule --force
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 2
	s=$(soul_file watch.yaml 'heart: { dormant_after: 7d, schedule: { interval: 1h }, idle: { daily_cap: 0 } }')
	run -0 at_epoch $((T0 + 30 * DAY)) heart-wake --soul "$s" --chamber schedule --force
	[ "$(wake_status)" = dormant ]
	[ "$(notice_status)" = dormant_notice ]
	assert_output --partial '(heart.dormant_after 7d); a user message wakes it'
	run -0 llm_count
	assert_output 2
	# today's one wake, before the key was set
	run -0 at_epoch $((T0 + 30 * DAY)) used watch schedule
	assert_output 1
}

@test "heart.dormant_after: 0 or false turns it off; a bad value is refused with its file, line and key, exit 78" {
	for off in 0 false '"0"'; do
		s=$(soul_file scout.yaml "heart: { dormant_after: $off, schedule: { daily_cap: 0 }, idle: { after: 2h } }")
		run -0 at_epoch $((T0 + 40 * DAY)) heart-wake --soul "$s" --chamber idle --force
		[ "$(output_field status)" = idle ]
	done
	run -0 soul-dump "$s"
	run -0 jq .dormant_after <<< "$output"
	assert_output 0
	run -0 soul-dump "$(soul_file week.yaml 'heart: { dormant_after: 7d }')"
	run -0 jq .dormant_after <<< "$output"
	assert_output 604800
	printf 'name: scout\nheart:\n  dormant_after: soon\n' > "$BATS_TEST_TMPDIR/bad.yaml"
	run -78 heart-wake --soul "$BATS_TEST_TMPDIR/bad.yaml"
	assert_output --partial "bad.yaml:3:"
	assert_output --partial "dormant_after"
	run -78 heart-wake --soul "$(soul_file neg.yaml 'heart: { dormant_after: -1 }')"
	assert_output --partial "dormant_after"
}

@test "heart-cap status shows a dormant agent with its soul, since its last input; --explain shows the dormant gate" {
	s=$(soul_file scout.yaml 'heart: { schedule: { daily_cap: 0 } }')
	run -0 at_epoch "$T0" heart-wake --soul "$s" --chamber idle
	run -0 at_epoch $((T0 + DAY)) heart-cap status --soul "$s" --json
	run -0 jq -c .dormant <<< "$output"
	assert_output null
	run -0 at_epoch $((T0 + 15 * DAY)) heart-cap status --soul "$s" --json
	run -0 jq -c .dormant <<< "$output"
	assert_output '{"since":"2026-11-01T08:00:00Z","chambers":["idle"]}'
	# without the soul, nothing is said
	run -0 at_epoch $((T0 + 15 * DAY)) heart-cap status scout --json
	run -0 jq -c .dormant <<< "$output"
	assert_output null
	run -0 at_epoch $((T0 + 15 * DAY)) heart-wake --soul "$s" --chamber idle --explain
	run -0 jq -c '[.would, .gates.dormant.ok, .next]' <<< "$output"
	assert_output '["dormant",false,null]'
	run -0 at_epoch $((T0 + 15 * DAY)) heart-wake --soul "$s" --chamber idle --explain
	run -0 jq -r .reason <<< "$output"
	assert_output --partial 'dormant: no user input since 2026-11-01T08:00:00Z'
	# a user message: no longer dormant
	run -0 at_epoch $((T0 + 15 * DAY)) heart-ghost --user scout 'back'
	run -0 at_epoch $((T0 + 15 * DAY)) heart-cap status --soul "$s" --json
	run -0 jq -c .dormant <<< "$output"
	assert_output null
	run -0 at_epoch $((T0 + 15 * DAY)) heart-wake --soul "$s" --chamber idle --explain
	run -0 jq -c .gates.dormant <<< "$output"
	assert_output '{"ok":true,"reason":"not dormant"}'
}

@test "dormant for days, woken every hour: one notice, delivered to a real receiver and kept in no history; the next dormancy is told anew" {
	rcv_start
	export HEART_DELIVER_WEBHOOK_URL=$RCV/hook
	s=$(soul_file scout.yaml 'heart: { dormant_after: 2d, schedule: { daily_cap: 0 }, idle: { after: 2h } }')
	wake "$s" "$T0"
	# from a day in, every hour for four days: idle, then dormant
	for ((t = T0 + DAY; t <= T0 + 5 * DAY; t += 3600)); do
		wake "$s" "$t"
	done
	[ "$(count dormant)" -ge 70 ]
	[ "$(count dormant_notice)" -eq 1 ]
	[ "$(wc -l < rcv/log)" -eq 1 ]
	# the notice follows the first dormant wake, with its wake id
	jq -e -s 'map(.status) | index("dormant_notice") as $i |
	    $i != null' wakes.jsonl
	jq -e -s '(map(.status) | index("dormant_notice")) as $i |
	    .[$i - 1].status == "dormant" and
	    .[$i - 1].dormant.notice == true and
	    .[$i].wake_id == .[$i - 1].wake_id + "-dormant" and
	    .[$i].at == "2026-11-03T08:00:00Z" and .[$i].exit == 0 and
	    .[$i].since == "2026-11-01T08:00:00Z" and .[$i].after == "2d" and
	    .[$i].chambers == ["idle"] and (.[$i] | has("messages") | not)' \
	    wakes.jsonl
	# no other dormant wake claims to tell it
	[ "$(jq -s 'map(select(.dormant.notice == true)) | length' wakes.jsonl)" -eq 1 ]
	sed -n 1p rcv/log | jq -e '.body | fromjson | .alert == true and
	    .agent == "scout" and (.wake_id | endswith("-dormant")) and
	    .text == "heart: nobody has spoken to scout since 2026-11-01T08:00:00Z (heart.dormant_after 2d): its idle wakes stop, and spend nothing, until a user message wakes it."'
	[ ! -e "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
	run -0 heart-ghost --outbox scout
	assert_output ""
	# the user speaks: no line says it is awake; two quiet days later
	# it is dormant again, told once more
	run -0 at_epoch $((T0 + 5 * DAY)) heart-ghost --user scout 'back'
	wake "$s" $((T0 + 5 * DAY + 3 * 3600))
	[ "$(jq -r .status last.jsonl)" = idle ]
	[ "$(count dormant_notice)" -eq 1 ]
	for ((t = T0 + 7 * DAY; t <= T0 + 7 * DAY + 6 * 3600; t += 3600)); do
		wake "$s" "$t"
	done
	[ "$(count dormant_notice)" -eq 2 ]
	[ "$(wc -l < rcv/log)" -eq 2 ]
	sed -n 2p rcv/log | jq -e '.body | fromjson | .text | test("since 2026-11-06T08:00:00Z")'
	# a rehearsal tells nothing
	run -0 at_epoch $((T0 + 8 * DAY)) heart-wake --soul "$s" --dry-run
	[ "$(echo "$output" | wc -l)" -eq 1 ]
}

@test "a dormancy is told once by wakes at once, and by two hosts that share a Redis store" {
	s=$(soul_file scout.yaml 'heart: { dormant_after: 2d, schedule: { daily_cap: 0 } }')
	run -0 at_epoch "$T0" heart-wake --soul "$s"
	for i in 1 2 3 4; do
		(at_epoch $((T0 + 3 * DAY)) heart-wake --soul "$s" > "w$i.jsonl") &
	done
	wait
	[ "$(cat w?.jsonl | jq -r .status | grep -cx dormant_notice)" -eq 1 ]
	redis_store || return 0
	# another host: its own state directory, the same store
	other=$BATS_TEST_TMPDIR/other
	mkdir -p "$other"
	run -0 env HEART_STATE_DIR="$other" bash -c '. "$1"; at_epoch "$2" heart-wake --soul "$3"' _ \
	    "$T/faketime.bash" $((T0 + 3 * DAY + 3600)) "$s"
	[ "$(jq -r .status <<< "$output")" = dormant ]
	[ "$(echo "$output" | wc -l)" -eq 1 ]
}
