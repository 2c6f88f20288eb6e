#!/usr/bin/env bats
# heart.dormant_after: an agent nobody has spoken to for that long is
# dormant (lib/dormant.c): its wakes end as "dormant", zero requests,
# nothing taken from the cap, until a user message wakes it.

load helpers
bats_require_minimum_version 1.5.0

T0=$(date -u -d '2026-11-01 08:00:00' +%s)
DAY=86400

setup() {
	model_setup
}

teardown() {
	model_teardown
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
	[ "$(output_field status)" = dormant ]
	assert_output --partial '"reason":"dormant: no user input since 2026-11-01T08:00:00Z (heart.dormant_after 14d, the idle chamber'"'"'s default); a user message wakes it"'
	run -0 jq -r '.exit, .next' <<< "$output"
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
	[ "$(output_field status)" = dormant ]
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
	[ "$(output_field status)" = dormant ]
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
