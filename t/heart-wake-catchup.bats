#!/usr/bin/env bats
# A slot missed because nothing ran (the host was off) is caught up
# once, whatever the number of slots missed; schedule.catch_up says how
# late a catch-up is still worth it (lib/slot.c, slot_missed): past it
# the wake ends as "missed", zero requests, its slot used, and the
# agent waits for its next slot.

load helpers
bats_require_minimum_version 1.5.0

T0=$(date -u -d '2026-11-01 08:00:00' +%s)
DAY=86400

setup() {
	model_setup
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	model_teardown
}

# next_of SOUL EPOCH: into NEXT, the Unix time of the schedule's next
# wake as --explain says it at EPOCH
next_of() {
	local j
	j=$(explain_schedule "$2" "$1" | jq -r .next)
	epoch_of NEXT "$j"
}

# first_wake SOUL: heart meets the agent at T0 and its first slot
# wakes it; SLOT is that slot
first_wake() {
	run -0 at_epoch "$T0" heart-wake --soul "$1"
	[ "$(output_field status)" = not_due ]
	next_of "$1" "$T0"
	SLOT=$NEXT
	run -0 at_epoch "$SLOT" heart-wake --soul "$1"
	[ "$(output_field status)" = idle ]
}

@test "a host off for five hours catches up once, not once per slot missed, then keeps its slots" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m }, idle: { daily_cap: 0 } }')
	first_wake "$s"
	# ten slots pass with nothing running; back 17 minutes past one
	back=$((SLOT + 5 * 3600 + 17 * 60))
	run -0 explain_schedule "$back" "$s"
	run -0 jq -r '.would, .gates.catch_up.ok, .gates.catch_up.reason' <<< "$output"
	assert_line -n 0 wake
	assert_line -n 1 true
	assert_line -n 2 --partial 'a catch-up, 17m after the slot of'
	run -0 at_epoch "$back" heart-wake --soul "$s"
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 2
	# the catch-up used the slots missed: the next wake is the next slot
	for m in 1 5 12; do
		run -0 at_epoch $((back + 60 * m)) heart-wake --soul "$s"
		[ "$(output_field status)" = not_due ]
	done
	next_of "$s" "$back"
	[ "$NEXT" -eq $((SLOT + 5 * 3600 + 30 * 60)) ]
	run -0 at_epoch "$NEXT" heart-wake --soul "$s"
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 3
}

@test "a catch-up later than schedule.catch_up is missed: zero requests, exit 0, its slot used, and the next slot wakes" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m, catch_up: 10m }, idle: { daily_cap: 0 } }')
	first_wake "$s"
	# within catch_up, a catch-up still goes
	run -0 at_epoch $((SLOT + 30 * 60 + 9 * 60)) heart-wake --soul "$s"
	[ "$(output_field status)" = idle ]
	# off five hours, back 20 minutes after the newest slot
	back=$((SLOT + 5 * 3600 + 20 * 60))
	run -0 at_epoch "$back" heart-wake --soul "$s" --dry-run
	[ "$(output_field status)" = missed ]
	run -0 at_epoch "$back" heart-wake --soul "$s"
	[ "$(output_field status)" = missed ]
	printf '%s\n' "$output" > missed.jsonl
	run -0 jq -r '.reason, .exit, .next, .usage.prompt_tokens' <<< "$output"
	assert_line -n 0 --partial 'schedule: missed: the slot of'
	assert_line -n 0 --partial 'is 20m late, past schedule.catch_up 10m; the agent waits for its next slot'
	assert_line -n 1 0
	assert_line -n 2 "$(TZ=UTC printf '%(%Y-%m-%dT%H:%M:%SZ)T' $((SLOT + 5 * 3600 + 30 * 60)))"
	assert_line -n 3 0
	run -0 llm_count
	assert_output 2
	# recorded once: the slot is used, a minute later it is not due
	run -0 at_epoch $((back + 60)) heart-wake --soul "$s"
	[ "$(output_field status)" = not_due ]
	assert_output --partial 'a wake refused (missed) at'
	# heart-ghost drops it as a skip: nothing said, nothing kept
	run -0 at_epoch "$back" heart-ghost --text missed.jsonl
	assert_output ""
	[ ! -e "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
	run -0 at_epoch $((SLOT + 5 * 3600 + 30 * 60)) heart-wake --soul "$s"
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 3
	# the cap took nothing for the missed slot
	run -0 at_epoch $((SLOT + 5 * 3600 + 30 * 60)) heart-cap status scout --json
	run -0 jq .chambers.schedule.used <<< "$output"
	assert_output 3
}

@test "schedule.catch_up: false never catches up, yet a wake in the minute of its slot goes; --force is never missed" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m, catch_up: false }, idle: { daily_cap: 0 } }')
	first_wake "$s"
	run -0 at_epoch $((SLOT + 30 * 60 + 59)) heart-wake --soul "$s"
	[ "$(output_field status)" = idle ]
	run -0 at_epoch $((SLOT + 60 * 60 + 2 * 60)) heart-wake --soul "$s"
	[ "$(output_field status)" = missed ]
	assert_output --partial 'is 2m late, past schedule.catch_up false'
	run -0 llm_count
	assert_output 2
	run -0 at_epoch $((SLOT + 60 * 60 + 3 * 60)) heart-wake --soul "$s" --force
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 3
}

@test "schedule.catch_up: a bad value is refused with its file, line and key, exit 78; soul-dump shows the one in force" {
	printf 'name: scout\nheart:\n  schedule:\n    catch_up: soon\n' > "$BATS_TEST_TMPDIR/bad.yaml"
	run -78 heart-wake --soul "$BATS_TEST_TMPDIR/bad.yaml"
	assert_output --partial 'bad.yaml:4:'
	assert_output --partial "heart.schedule.catch_up: bad duration 'soon'"
	run -78 heart-wake --soul "$(soul_file short.yaml 'heart: { schedule: { catch_up: 30s } }')"
	assert_output --partial 'catch_up: must be 1m or more'
	run -78 heart-wake --soul "$(soul_file neg.yaml 'heart: { schedule: { catch_up: -5 } }')"
	assert_output --partial 'catch_up'
	run -0 soul-dump "$(soul_file ten.yaml 'heart: { schedule: { catch_up: 10m } }')"
	run -0 jq .schedule.catch_up <<< "$output"
	assert_output 600
	for off in 0 false '"0"'; do
		run -0 soul-dump "$(soul_file off.yaml "heart: { schedule: { catch_up: $off } }")"
		run -0 jq .schedule.catch_up <<< "$output"
		assert_output 0
	done
	run -0 soul-dump "$(soul_file unset.yaml 'heart: {}')"
	run -0 jq .schedule.catch_up <<< "$output"
	assert_output null
}

@test "a round (--souls) records a missed slot as a single wake does, then waits for the next slot" {
	mkdir -p souls
	printf 'heart: { schedule: { interval: 30m, catch_up: 10m }, idle: { daily_cap: 0 } }\n' > souls/scout.yaml
	first_wake souls/scout.yaml
	back=$((SLOT + 5 * 3600 + 16 * 60))
	run -0 at_epoch "$back" heart-wake --souls souls
	[ "$(output_field status)" = missed ]
	assert_output --partial 'is 16m late, past schedule.catch_up 10m'
	run -0 at_epoch $((back + 60)) heart-wake --souls souls
	[ "$(output_field status)" = not_due ]
	assert_output --partial 'a wake refused (missed) at'
	run -0 at_epoch $((SLOT + 5 * 3600 + 30 * 60)) heart-wake --souls souls
	[ "$(output_field status)" = idle ]
	run -0 llm_count
	assert_output 2
}

@test "a slot the active hours skip is no slot missed: the first wake of the day goes at their start" {
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 2h, active_hours: "08:00-20:00", catch_up: 5m }, idle: { daily_cap: 0 } }')
	run -0 at_epoch $((T0 - DAY)) heart-wake --soul "$s"
	next_of "$s" $((T0 - DAY))
	# the day's last slot in the hours, before 20:00
	for ((last = NEXT; last + 7200 < T0 - DAY + 12 * 3600; last += 7200)); do :; done
	run -0 at_epoch "$last" heart-wake --soul "$s"
	[ "$(output_field status)" = idle ]
	# the slots of the night are none to catch up: 08:00 is on time
	run -0 explain_schedule "$T0" "$s"
	run -0 jq -r '.would, .gates.catch_up.reason' <<< "$output"
	assert_line -n 0 wake
	assert_line -n 1 'on time for the slot of 2026-11-01T08:00:00Z'
	run -0 at_epoch "$T0" heart-wake --soul "$s"
	[ "$(output_field status)" = idle ]
	# inside them, a slot found half an hour late is missed
	next_of "$s" "$T0"
	run -0 at_epoch $((NEXT + 30 * 60)) heart-wake --soul "$s"
	[ "$(output_field status)" = missed ]
	assert_output --partial 'is 30m late, past schedule.catch_up 5m'
	run -0 llm_count
	assert_output 2
}
