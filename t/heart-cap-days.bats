#!/usr/bin/env bats
# heart-cap: "the day" is the local date in the soul's zone (libfaketime).

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
}

teardown() {
	heart_teardown
}

zsoul() {	# zsoul ZONE: a soul named z in ZONE with a schedule cap of 2
	printf 'name: z\nheart:\n  timezone: %s\n  schedule: { daily_cap: 2 }\n' \
		"$1" > "$BATS_TEST_TMPDIR/z.yaml"
	echo "$BATS_TEST_TMPDIR/z.yaml"
}

# fill ZONE UTC-TIME: spend the day's cap at that instant
fill() {
	s=$(zsoul "$1")
	at "$2" heart-cap take --soul "$s"
	at "$2" heart-cap take --soul "$s"
	run at "$2" heart-cap take --soul "$s"
	assert_failure 1
}

# resets ZONE LAST-SECOND-UTC FIRST-SECOND-UTC: refused at the first,
# admitted at the second, and the day moved by one
resets() {
	fill "$1" "$2 - 2 hours"
	run at "$2" heart-cap take --soul "$s"
	assert_failure 1
	run at "$3" heart-cap take --soul "$s"
	assert_success
	run jq -r .total "$(capfile z)"
	assert_output 1
}

@test "the counter resets at local midnight in America/New_York" {
	resets America/New_York "2026-11-22 04:59:59 UTC" "2026-11-22 05:00:00 UTC"
	run jq -r .day "$(capfile z)"
	assert_output 2026-11-22
}

@test "the counter resets at local midnight in Asia/Shanghai" {
	resets Asia/Shanghai "2026-11-22 15:59:59 UTC" "2026-11-22 16:00:00 UTC"
	run jq -r .day "$(capfile z)"
	assert_output 2026-11-23
}

@test "Australia/Lord_Howe: midnight is 13:00 UTC in summer and 13:30 UTC in winter" {
	resets Australia/Lord_Howe "2026-11-22 12:59:59 UTC" "2026-11-22 13:00:00 UTC"
	state_clear
	resets Australia/Lord_Howe "2026-06-01 13:29:59 UTC" "2026-06-01 13:30:00 UTC"
}

@test "a 23-hour spring-forward day (New York, 2026-03-08) ends at local midnight" {
	run -0 at "2026-03-08 12:00:00 UTC" heart-cap status --soul "$(zsoul America/New_York)" --json
	assert_output --partial '"day":"2026-03-08"'
	assert_output --partial '"resets_at":"2026-03-09T04:00:00Z"'
	resets America/New_York "2026-03-09 03:59:59 UTC" "2026-03-09 04:00:00 UTC"
}

@test "a 25-hour fall-back day (New York, 2026-11-01) ends at local midnight" {
	run -0 at "2026-11-01 05:30:00 UTC" heart-cap status --soul "$(zsoul America/New_York)" --json
	assert_output --partial '"resets_at":"2026-11-02T05:00:00Z"'
	resets America/New_York "2026-11-02 04:59:59 UTC" "2026-11-02 05:00:00 UTC"
}

@test "a day whose midnight is skipped (Santiago, 2026-09-06) starts at 01:00" {
	run -0 at "2026-09-05 12:00:00 UTC" heart-cap status --soul "$(zsoul America/Santiago)" --json
	assert_output --partial '"resets_at":"2026-09-06T04:00:00Z"'
	resets America/Santiago "2026-09-06 03:59:59 UTC" "2026-09-06 04:00:00 UTC"
}

@test "a clock moved back within the same local date keeps the count" {
	fill Europe/Paris "2026-11-22 18:00:00 UTC"
	run at "2026-11-22 08:00:00 UTC" heart-cap take --soul "$s"
	assert_failure 1
}

@test "a clock moved back to the day before never gives a fresh allowance" {
	fill Europe/Paris "2026-11-22 18:00:00 UTC"
	run at "2026-11-21 12:00:00 UTC" heart-cap take --soul "$s"
	assert_failure 1
	run jq -r '.day, .total' "$(capfile z)"
	assert_output "$(printf '2026-11-22\n2')"
	run at "2026-11-23 00:00:00 UTC" heart-cap take --soul "$s"
	assert_success
}

@test "status without a soul uses the zone stored by the last take" {
	fill Asia/Shanghai "2026-11-22 10:00:00 UTC"
	run -0 at "2026-11-22 10:00:00 UTC" heart-cap status z --json
	assert_output --partial '"zone":"Asia/Shanghai"'
	assert_output --partial '"resets_at":"2026-11-22T16:00:00Z"'
	run -0 at "2026-11-22 16:00:01 UTC" heart-cap status z --json
	assert_output --partial '"day":"2026-11-23","zone":"Asia/Shanghai","used":0'
}
