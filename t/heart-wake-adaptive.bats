#!/usr/bin/env bats
# heart-wake: adaptive schedules (schedule.adaptive): the hour-of-week
# activity estimator, the interval it puts in force, and its state.

load helpers

setup() {
	heart_setup
	llm_start
	unset OPENAI_API_KEY
	# Monday 2026-11-23 00:00 in New York; no DST change for weeks
	MON1=$(ny '2026-11-23 00:00')
	MON3=$((MON1 + 14 * 86400))
}

teardown() {
	llm_stop
}

ny() {	# ny "DATE TIME": that New York time, in Unix seconds
	TZ=America/New_York date -d "$1" +%s
}

mk() {	# mk NAME TEXT: a soul file, its path printed
	printf '%s\n' "$2" > "$BATS_TEST_TMPDIR/$1.yaml"
	echo "$BATS_TEST_TMPDIR/$1.yaml"
}

adaptive() {	# adaptive NAME [ADAPTIVE]: a New York soul, 30m, adaptive
	mk "$1" "name: $1
heart:
  timezone: America/New_York
  schedule:
    interval: 30m
    daily_cap: 1000
    adaptive: ${2:-{ min: 15m, max: 4h \}}"
}

hour() {	# hour "DATE HH:MM" OK GHOSTS: one hour of activity.json
	printf '{"hour":"%s","ts":%s,"ok":%s,"idle":%s}' "$1" "$(ny "$1")" \
	    "$2" "$3"
}

act() {	# act AGENT HOUR...: write the agent's activity.json
	local a=$1 h
	shift
	h=$(IFS=,; echo "[$*]")
	mkdir -p "$HEART_STATE_DIR/agents/$a"
	printf '{"v":1,"agent":"%s","run":{"ghosts":0,"weight":0},"hours":%s}\n' \
	    "$a" "$h" > "$HEART_STATE_DIR/agents/$a/activity.json"
}

explain() {	# explain SOUL EPOCH: the schedule chamber's --explain line
	at_epoch "$2" heart-wake --explain --soul "$1" |
	    jq -c 'select(.chamber == "schedule")'
}

@test "two simulated weeks of a stock agent: wakes gather in market hours, requests halve, detection is no slower" {
	# Real events come only on weekdays 09:30-16:00 New York time: the
	# double answers news when that overlaps the stretch since the last
	# wake, [IDLE] otherwise.  Both schedules are driven by
	# t/adapt-sim.sh, which runs heart-wake only where it can fire (at
	# each `next`), equivalent to cron every minute; the test below
	# proves `next` exact.
	market='{"windows":[{"weekday":[0,1,2,3,4],"from":"09:30","to":"16:00","text":"ACME moved 3.1% since the last check."}],"span":true}'
	llm_script "$market"
	fixed=$(mk fixed 'heart:
  timezone: America/New_York
  schedule: { interval: 30m, prompt: "Check the watched prices." }')
	adapt=$(mk adaptive 'heart:
  timezone: America/New_York
  schedule:
    interval: 30m
    prompt: "Check the watched prices."
    adaptive: { min: 20m, max: 4h, window: 14 }')
	end=$MON3
	"$T/adapt-sim.sh" "$fixed" "$MON1" "$end" > "$BATS_TEST_TMPDIR/fixed.jsonl" &
	"$T/adapt-sim.sh" "$adapt" "$MON1" "$end" > "$BATS_TEST_TMPDIR/adaptive.jsonl"
	wait $!
	f=(python3 "$T/adapt-figures.py" "$LLM_DIR/script.json" America/New_York "$MON1" 14
	    "fixed=$BATS_TEST_TMPDIR/fixed.jsonl" "adaptive=$BATS_TEST_TMPDIR/adaptive.jsonl")
	"${f[@]}" --table | sed 's/^/# /' >&3
	"${f[@]}" > "$BATS_TEST_TMPDIR/fig.json"
	run llm_count
	[ "$output" -eq "$(jq '.fixed.all.requests + .adaptive.all.requests' "$BATS_TEST_TMPDIR/fig.json")" ]
	jq -e '.fixed.week2.requests == 336 and .fixed.all.requests == 672' "$BATS_TEST_TMPDIR/fig.json"
	# week two: at most half the requests, over the two weeks too
	jq -e '.adaptive.week2.requests * 2 <= .fixed.week2.requests' "$BATS_TEST_TMPDIR/fig.json"
	jq -e '.adaptive.all.requests * 2 <= .fixed.all.requests' "$BATS_TEST_TMPDIR/fig.json"
	# most wakes of week two fall in the 32.5 market hours of 168
	jq -e '.adaptive.week2.in_windows_share >= 0.5 and .fixed.week2.in_windows_share < 0.25' "$BATS_TEST_TMPDIR/fig.json"
	# and the mean wait from an event to the wake that reports it is no worse
	jq -e '.adaptive.week2.mean_delay_min <= .fixed.week2.mean_delay_min' "$BATS_TEST_TMPDIR/fig.json"
	jq -e '.adaptive.week2.real >= .fixed.week2.real' "$BATS_TEST_TMPDIR/fig.json"
	# every result carried the interval in force, within [min, max]
	run jq -s '[.[] | select(.status == "ok" or .status == "idle") | .interval] | (min >= 1200 and max <= 14400)' "$BATS_TEST_TMPDIR/adaptive.jsonl"
	assert_output true
}

@test "next names the first second the chamber is due, across an hour whose interval is shorter" {
	s=$(adaptive tock)
	# Monday 9-10h only ever ghosted, Monday 10-11h answered
	# (the 23rd is beyond the 14-day window seen from the 7th)
	act tock "$(hour '2026-11-23 10:00' 0 9)" \
	    "$(hour '2026-11-30 09:00' 0 8)" "$(hour '2026-11-30 10:00' 4 0)"
	t0=$(ny '2026-12-07 09:00:30')
	run at_epoch "$t0" heart-wake --soul "$s"
	[ "$(echo "$output" | jq -r .status)" = not_due ]
	echo "$output" | jq -e '.interval == 14400 and .adaptive.real == 0 and .adaptive.ghosts.idle == 8'
	next=$(date -d "$(echo "$output" | jq -r .next)" +%s)
	# not 4h after first sight: the first 15m slot of the 10h hour
	[ "$next" -ge "$(ny '2026-12-07 10:00')" ]
	[ "$next" -lt "$(ny '2026-12-07 10:15')" ]
	[ "$((next % 900))" -eq "$(explain "$s" "$next" | jq .offset)" ]
	run at_epoch $((next - 1)) heart-wake --soul "$s"
	[ "$(echo "$output" | jq -r .status)" = not_due ]
	[ "$(date -d "$(echo "$output" | jq -r .next)" +%s)" -eq "$next" ]
	run llm_count
	assert_output 0
	run at_epoch "$next" heart-wake --soul "$s"
	echo "$output" | jq -e '.status == "idle" and .interval == 900 and .adaptive.real == 4'
	# the result of a wake says when the next one is due
	[ "$(date -d "$(echo "$output" | jq -r .next)" +%s)" -eq $((next + 900)) ]
	run llm_count
	assert_output 1
}

@test "a fleet of adaptive agents still spreads when a busy hour begins" {
	# 40 agents that learnt the same week: 9-10h quiet (every 4h),
	# 10-11h busy (every 15m); heart first sees them at 09:59
	h9=$(hour '2026-11-30 09:00' 0 8) h10=$(hour '2026-11-30 10:00' 4 0)
	souls=()
	for i in $(seq 40); do
		souls+=(--soul "$(adaptive "agent$i")")
		act "agent$i" "$h9" "$h10"
	done
	at_epoch "$(ny '2026-12-07 09:59:00')" heart-wake "${souls[@]}" > /dev/null
	at_epoch "$(ny '2026-12-07 09:59:30')" heart-wake --explain "${souls[@]}" |
	    jq -r 'select(.chamber == "schedule") | .next' > "$BATS_TEST_TMPDIR/next"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/next")" -eq 40 ]
	# all inside the first 15m of the busy hour, over many minutes of it
	[ "$(cut -c1-16 "$BATS_TEST_TMPDIR/next" | sort -u | wc -l)" -ge 8 ]
	[ "$(cut -c1-13 "$BATS_TEST_TMPDIR/next" | sort -u)" = 2026-12-07T10 ]
	[ "$(cut -c12-16 "$BATS_TEST_TMPDIR/next" | sort | uniq -c | sort -rn | head -1 | awk '{print $1}')" -le 13 ]
	run llm_count
	assert_output 0
}

# wake AGENT-SOUL EPOCH: a forced schedule wake at that time
wake() {
	at_epoch "$2" heart-wake --soul "$1" --force --chamber schedule > /dev/null
}

@test "graduated levels: [IDLE:HIGH] stretches less than [IDLE:MEDIUM], less than [IDLE:LOW], as heart-soul(5) says" {
	t=$(ny '2026-12-07 12:00')
	lo=$(adaptive lo) me=$(adaptive me) hi=$(adaptive hi) pl=$(adaptive pl)
	four='{"text":"[IDLE:LOW]"},{"text":"[IDLE:MEDIUM]"},{"text":"[IDLE:HIGH]"},{"text":"[IDLE]"}'
	llm_script "{\"replies\":[$four,$four,$four]}"
	for i in 0 1 2; do
		for s in "$lo" "$me" "$hi" "$pl"; do
			wake "$s" $((t + i * 60))
		done
	done
	run llm_count
	assert_output 12
	for a in lo me hi pl; do
		explain "$BATS_TEST_TMPDIR/$a.yaml" $((t + 600)) > "$BATS_TEST_TMPDIR/$a.json"
	done
	# the weights: LOW 1, MEDIUM 0.5, HIGH 0.25, a plain [IDLE] 1
	jq -e '.adaptive | .ghosts.low == 3 and .ghosts_weighted == 3 and .in_a_row == 3 and .in_a_row_weighted == 3' "$BATS_TEST_TMPDIR/lo.json"
	jq -e '.adaptive | .ghosts.medium == 3 and .ghosts_weighted == 1.5 and .in_a_row_weighted == 1.5' "$BATS_TEST_TMPDIR/me.json"
	jq -e '.adaptive | .ghosts.high == 3 and .ghosts_weighted == 0.75 and .in_a_row_weighted == 0.75' "$BATS_TEST_TMPDIR/hi.json"
	jq -e '.adaptive | .ghosts.idle == 3 and .ghosts_weighted == 3' "$BATS_TEST_TMPDIR/pl.json"
	# the rule: share p = (real + q) / (real + ghosts + 1), q = 1/2 with
	# no other day; e = (1 - 2p) (log2(max/interval) + min(row/4, 2));
	# the nearest rung of 15m 30m 1h 2h 4h
	for a in lo me hi pl; do
		jq -e '.adaptive | ((0.5 / (.ghosts_weighted + 1)) as $p |
			((1 - 2 * $p) * (3 + ([.in_a_row_weighted / 4, 2] | min))) as $e |
			(.share - $p | fabs) < 0.001 and (.exponent - $e | fabs) < 0.001 and
			.interval == ([[900, -1], [1800, 0], [3600, 1], [7200, 2], [14400, 3]] |
			    min_by(.[1] - $e | fabs) | .[0]))' "$BATS_TEST_TMPDIR/$a.json"
	done
	# three LOW ghosts: 2^2.81, 4h; MEDIUM: 2^2.03, 2h; HIGH: 2^1.37, 1h
	[ "$(jq .interval "$BATS_TEST_TMPDIR/lo.json")" -eq 14400 ]
	[ "$(jq .interval "$BATS_TEST_TMPDIR/me.json")" -eq 7200 ]
	[ "$(jq .interval "$BATS_TEST_TMPDIR/hi.json")" -eq 3600 ]
	[ "$(jq .interval "$BATS_TEST_TMPDIR/pl.json")" -eq 14400 ]
	# a real answer brings it back: no ghosts in a row, a shorter interval
	llm_script '{"replies":[{"text":"ACME fell 4%."}]}'
	wake "$lo" $((t + 900))
	explain "$lo" $((t + 960)) > "$BATS_TEST_TMPDIR/lo2.json"
	jq -e '.adaptive | .real == 1 and .in_a_row == 0 and .interval == 3600' "$BATS_TEST_TMPDIR/lo2.json"
}

@test "levels are the soul's: a HIGH weight of 0 never stretches" {
	t=$(ny '2026-12-07 12:00')
	s=$(adaptive zero '{ min: 15m, max: 4h, levels: { high: 0 } }')
	llm_script '{"replies":[{"text":"[IDLE:HIGH] the storm is coming closer"}]}'
	for i in 0 1 2 3; do wake "$s" $((t + i * 60)); done
	explain "$s" $((t + 600)) > "$BATS_TEST_TMPDIR/z.json"
	jq -e '.interval == 1800 and .adaptive.ghosts.high == 4 and .adaptive.ghosts_weighted == 0 and .adaptive.in_a_row == 4 and .adaptive.in_a_row_weighted == 0' "$BATS_TEST_TMPDIR/z.json"
	# the same four as plain ghosts: the longest rung
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	for i in 0 1 2 3; do wake "$s" $((t + 700 + i * 60)); done
	[ "$(explain "$s" $((t + 1200)) | jq .interval)" -eq 14400 ]
}

@test "min and max clamp the interval and the gaps between wakes, on and off the ladder" {
	s=$(adaptive clamp '{ min: 20m, max: 3h }')
	act clamp "$(hour '2026-11-30 10:00' 20 0)" "$(hour '2026-11-30 03:00' 0 20)"
	[ "$(explain "$s" "$(ny '2026-12-07 10:05')" | jq .interval)" -eq 1200 ]
	[ "$(explain "$s" "$(ny '2026-12-07 03:05')" | jq .interval)" -eq 10800 ]
	# two days of ghosts only, then a day of news only
	rm -rf "$HEART_STATE_DIR"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	"$T/adapt-sim.sh" "$s" "$MON1" $((MON1 + 2 * 86400)) > "$BATS_TEST_TMPDIR/quiet.jsonl"
	llm_script '{"replies":[{"text":"News."}]}'
	"$T/adapt-sim.sh" "$s" $((MON1 + 2 * 86400)) $((MON1 + 3 * 86400)) > "$BATS_TEST_TMPDIR/busy.jsonl"
	gaps() {
		jq -r 'select(.status == "ok" or .status == "idle") | .at' "$1" |
		    while read -r a; do date -d "$a" +%s; done |
		    awk 'NR > 1 { print $1 - p } { p = $1 }' | sort -n | sed -n '1p;$p'
	}
	run gaps "$BATS_TEST_TMPDIR/quiet.jsonl"
	[ "${lines[0]}" -ge 1200 ] && [ "${lines[1]}" -le 10800 ]
	[ "${lines[1]}" -eq 10800 ]
	run gaps "$BATS_TEST_TMPDIR/busy.jsonl"
	[ "${lines[0]}" -eq 1200 ] && [ "${lines[1]}" -le 10800 ]
	run jq -s '[.[] | .interval] | min >= 1200 and max <= 10800' "$BATS_TEST_TMPDIR/quiet.jsonl" "$BATS_TEST_TMPDIR/busy.jsonl"
	assert_output true
}

@test "adaptation never raises a cap: a busy agent still stops at its daily cap" {
	s=$(adaptive busy '{ min: 1m, max: 2h }')
	sed -i 's/daily_cap: 1000/daily_cap: 6/' "$s"
	llm_script '{"replies":[{"text":"News."}]}'
	"$T/adapt-sim.sh" "$s" "$MON1" $((MON1 + 86400)) > "$BATS_TEST_TMPDIR/r.jsonl"
	run llm_count
	assert_output 6
	run jq -s '[.[] | select(.status == "capped")] | length' "$BATS_TEST_TMPDIR/r.jsonl"
	assert_output 1
	run jq -s -r '.[-1].reason' "$BATS_TEST_TMPDIR/r.jsonl"
	assert_output --partial 'daily cap reached: 6 of 6 today'
}

@test "failed wakes teach nothing, and an open breaker holds an adaptive wake" {
	t=$(ny '2026-12-07 12:00')
	s=$(adaptive flaky)
	printf '  breaker: { cooldown: 4h }\n' >> "$s"
	llm_script '{"replies":[{"text":"[IDLE]"},{"status":500,"text":"overloaded"}]}'
	wake "$s" "$t"
	f=$HEART_STATE_DIR/agents/flaky/activity.json
	cp "$f" "$BATS_TEST_TMPDIR/one"
	for i in 1 2 3; do
		run at_epoch $((t + i * 60)) heart-wake --soul "$s" --force --chamber schedule
		[ "$status" -eq 75 ]
	done
	cmp "$f" "$BATS_TEST_TMPDIR/one"
	# the next due wake finds the breaker open and sends nothing
	next=$(date -d "$(explain "$s" $((t + 240)) | jq -r .next)" +%s)
	run at_epoch "$next" heart-wake --soul "$s"
	echo "$output" | jq -e '.status == "open" and .breaker == "open"'
	run llm_count
	assert_output 4
	cmp "$f" "$BATS_TEST_TMPDIR/one"
}

@test "the state survives restarts, and a wake killed mid-call leaves it whole" {
	t=$(ny '2026-12-07 12:00')
	s=$(adaptive keep)
	llm_script '{"replies":[{"text":"[IDLE]"},{"text":"News."},{"text":"[IDLE:MEDIUM]"}]}'
	for i in 0 1 2; do wake "$s" $((t + i * 60)); done
	f=$HEART_STATE_DIR/agents/keep/activity.json
	jq -e '.v == 1 and .agent == "keep" and .run == {"ghosts":1,"weight":0.5} and (.hours | length) == 1 and .hours[0].ok == 1 and .hours[0].idle == 1 and .hours[0].medium == 1 and .hours[0].hour == "2026-12-07T12:00:00-05:00"' "$f"
	before=$(explain "$s" $((t + 600)) | jq -c .adaptive)
	cp "$f" "$BATS_TEST_TMPDIR/before"
	llm_script '{"replies":[{"text":"late","delay":5}]}'
	# (heart-wake itself in the background, so that $! is its pid)
	( at_epoch $((t + 300)) exec heart-wake --soul "$s" --force \
	    --chamber schedule ) > /dev/null &
	pid=$!
	for _ in $(seq 100); do
		[ "$(llm_count)" -eq 4 ] && break
		sleep 0.05
	done
	kill -KILL "$pid"
	wait "$pid" || true
	cmp "$f" "$BATS_TEST_TMPDIR/before"
	[ "$(explain "$s" $((t + 600)) | jq -c .adaptive)" = "$before" ]
	# a later wake goes on from there; the window forgets after 14 days
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	wake "$s" $((t + 1200))
	jq -e '.run.ghosts == 2 and .hours[0].idle == 2' "$f"
	explain "$s" $((t + 7 * 86400 + 60)) | jq -e '.adaptive.ghosts.idle == 2 and .adaptive.real == 1'
	explain "$s" $((t + 14 * 86400 + 60)) | jq -e '.adaptive.ghosts.idle == 0 and .adaptive.real == 0'
}

@test "a corrupt activity.json is named, exit 74, nothing sent, and left as it was" {
	s=$(adaptive bad)
	mkdir -p "$HEART_STATE_DIR/agents/bad"
	f=$HEART_STATE_DIR/agents/bad/activity.json
	printf '{"v":1,"hours":[{"ts":17' > "$f"
	cp "$f" "$BATS_TEST_TMPDIR/orig"
	run heart-wake --soul "$s" --force
	[ "$status" -eq 74 ]
	assert_output --partial "heart-wake: bad: $f: not valid JSON"
	assert_output --partial 'fix or remove it by hand'
	run heart-wake --explain --soul "$s"
	[ "$status" -eq 74 ]
	assert_output --partial "$f"
	cmp "$f" "$BATS_TEST_TMPDIR/orig"
	printf '{"v":1,"agent":"bad","run":{"ghosts":0,"weight":0},"hours":[{"ts":1796000000,"ok":-1}]}\n' > "$f"
	run heart-wake --soul "$s" --force
	[ "$status" -eq 74 ]
	assert_output --partial "$f: hours[0].ok: must be a whole number >= 0; fix or remove it by hand"
	printf '{"v":2,"hours":[]}\n' > "$f"
	run heart-wake --soul "$s" --force
	[ "$status" -eq 74 ]
	assert_output --partial "$f: v: must be 1"
	run llm_count
	assert_output 0
	rm "$f"
	run heart-wake --soul "$s" --force
	assert_success
}

@test "the soul: adaptive: true takes the defaults; bad keys are refused with file:line:column" {
	s=$(mk on 'heart: { schedule: { interval: 1h, adaptive: true } }')
	run soul-dump "$s"
	assert_success
	echo "$output" | jq -e '.schedule.adaptive == {"min":1800,"max":28800,"window":14,"levels":{"low":1,"medium":0.5,"high":0.25}}'
	s=$(mk off 'heart: { schedule: { interval: 1h } }')
	run soul-dump "$s"
	echo "$output" | jq -e '.schedule.adaptive == null'
	s=$(mk full 'heart:
  schedule:
    interval: 30m
    adaptive: { min: 10m, max: 6h, window: 21d, levels: { low: 1, medium: 0.4, high: 0 } }')
	run soul-dump "$s"
	echo "$output" | jq -e '.schedule.adaptive == {"min":600,"max":21600,"window":21,"levels":{"low":1,"medium":0.4,"high":0}}'
	bad() {	# bad ADAPTIVE MESSAGE
		s=$(mk bad "heart:
  schedule:
    interval: 30m
    adaptive: $1")
		run soul-dump "$s"
		[ "$status" -eq 78 ]
		assert_output "soul-dump: $s:$2"
	}
	bad '{ min: 45m }' '4:22: heart.schedule.adaptive.min: must not be longer than schedule.interval (30m)'
	bad '{ max: 20m }' '4:22: heart.schedule.adaptive.max: must not be shorter than schedule.interval (30m)'
	bad '{ window: 0 }' '4:25: heart.schedule.adaptive.window: must be whole days, 1 to 365 (write e.g. 14 or 14d)'
	bad '{ window: 36h }' '4:25: heart.schedule.adaptive.window: must be whole days, 1 to 365 (write e.g. 14 or 14d)'
	bad '{ min: soon }' "4:22: heart.schedule.adaptive.min: bad duration 'soon' (write e.g. 10s, 30m, 2h, 1d or 1h30m)"
	bad '{ levels: { high: 2 } }' '4:33: heart.schedule.adaptive.levels.high: must be a number from 0 to 1'
	bad 'often' '4:15: heart.schedule.adaptive: must be true, false or a mapping of min, max, window and levels'
	s=$(mk idle 'heart:
  idle:
    adaptive: true')
	run soul-dump "$s"
	[ "$status" -eq 78 ]
	assert_output "soul-dump: $s:3:5: heart.idle.adaptive: only the schedule chamber adapts its interval"
	s=$(mk typo 'heart: { schedule: { adaptive: { mni: 5m } } }')
	run soul-dump "$s"
	assert_success
	assert_output --partial "warning: $s:1:34: unknown key 'mni' in heart.schedule.adaptive (ignored)"
}

@test "--explain says the interval in force now and why: the hour-of-week figures" {
	s=$(adaptive why)
	act why "$(hour '2026-11-23 10:00' 2 0)" "$(hour '2026-11-30 10:00' 3 1)" \
	    "$(hour '2026-12-01 10:00' 4 0)" "$(hour '2026-11-30 11:00' 0 2)"
	run explain "$s" "$(ny '2026-12-07 10:20')"
	# Monday 10-11h: 3 real, 1 ghost (the 23rd is beyond 14 days);
	# the same hour on Tuesday: 4 real, q = 4.5 / 5 = 0.9;
	# p = (3 + 0.9) / (3 + 1 + 1) = 0.78; e = 0.56 log2(15m/30m): 15m
	echo "$output" | jq -e '.interval == 900 and .adaptive.hour_of_week == 10 and .adaptive.day == "Mon" and .adaptive.real == 3 and .adaptive.ghosts.idle == 1 and .adaptive.other_days == {"real":4,"ghosts_weighted":0,"share":0.9} and .adaptive.share == 0.78 and .adaptive.exponent == -0.56 and .adaptive.window == 14'
	echo "$output" | jq -e '.adaptive.why == "Mon 10-11h: 3 real, 1 ghosts (1.00 weighted) in 14 days; same hour other days: 4 real, 0.00 ghosts; 0 ghosts in a row (0.00); share 0.78, 30m x 2^-0.56: every 15m (min 15m, max 4h)"'
	# the text form on a terminal carries the same sentence
	run script -qec "heart-wake --explain --soul $s" /dev/null
	assert_output --partial 'adaptive'
	# a fixed schedule has no adaptive figures
	f=$(mk plain 'heart: { schedule: { interval: 30m } }')
	run explain "$f" "$(ny '2026-12-07 10:20')"
	echo "$output" | jq -e '.interval == 1800 and .adaptive == null'
}
