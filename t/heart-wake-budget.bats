#!/usr/bin/env bats
# heart-wake and heart-cap: the fleet's budget (the fleet file's
# budget:), spent by every agent with a price together, on every host of
# the store, and the forecast at the last seven days' rate.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	model_setup
	export HEART_FLEET=$BATS_TEST_TMPDIR/fleet.yaml
	# every wake costs 1000 tokens at $1 a million: $0.001
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
}

teardown() {
	if [ -n "${TRIAGE_PID:-}" ]; then
		kill "$TRIAGE_PID" 2>/dev/null
		wait "$TRIAGE_PID" 2>/dev/null || :
	fi
	model_teardown
}

# fleet BUDGET: the fleet file with budget: {BUDGET}
fleet() {
	printf 'budget: {%s}\n' "$1" > "$HEART_FLEET"
}

# agent NAME [HEART-EXTRA] [LLM-EXTRA]: a soul with a price, printed
agent() {
	soul_file "$1.yaml" "name: $1
heart: {schedule: {daily_cap: 1000} ${2:+, $2}}
llm: {price: {input: 1.0, output: 1.0, cached_input: 0.5}, timeout: 10s ${3:+, $3}}"
}

@test "the fleet's daily budget counts every agent's spend, ghosts and cached tokens included, and refuses once reached" {
	fleet "daily: 0.0035, zone: Europe/Berlin"
	a=$(agent alpha) b=$(agent beta)
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}, {"text": "Rain at 16:00.", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}, {"text": "[IDLE]", "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "cached_tokens": 1000}}]}'
	t0="2026-11-22 10:00:00"	# 11:00 in Berlin
	run -0 at "$t0" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "idle" and .cost == 0.001'
	run -0 at "$t0" heart-wake --soul "$b" --force
	echo "$output" | jq -e '.status == "ok" and .cost == 0.001'
	# 1000 cached at $0.5, 500 out at $1: $0.001
	run -0 at "$t0" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "idle" and .cost == 0.001'
	run -0 at "$t0" heart-cap status --json
	echo "$output" | jq -se '.[0].fleet | .cost == 0.003 and
	    .budget == 0.0035 and .day == "2026-11-22" and
	    .zone == "Europe/Berlin" and .wakes_in_flight == 0'
	run -0 at "$t0" heart-wake --soul "$b" --force
	echo "$output" | jq -e '.status == "idle"'
	# $0.004 spent: the next wake of either is refused, before traffic
	run -0 at "$t0" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "capped" and (has("cost") | not) and
	    (.reason | startswith("fleet daily budget $0.0035 reached: $0.004 spent today (")) and
	    (.reason | endswith(", budget:); resets at 2026-11-22T23:00:00Z")) and
	    .next >= "2026-11-22T23:00:00Z"'
	[ "$(llm_count)" -eq 4 ]
	run -0 at "$t0" heart-wake --soul "$a" --explain --force
	echo "$output" | jq -se '.[0].would == "capped" and
	    (.[0].reason | startswith("fleet daily budget $0.0035 reached")) and
	    .[0].gates.budget.ok == false and .[0].gates.cap.ok == true and
	    .[0].gates.budget.until == "2026-11-22T23:00:00Z"'
	# the agents' own counters are untouched by the refusal
	run -0 at "$t0" heart-cap status alpha --json
	echo "$output" | jq -e '.used == 2 and .cost == 0.002'
	# a script's take of a priced agent is refused too
	run -1 at "$t0" heart-cap take --soul "$b" -v
	assert_output --partial "fleet daily budget \$0.0035 reached"
	# an agent with no price has no cost, and the fleet's budget holds
	# it not
	u=$(soul_file free.yaml "name: free
llm: {timeout: 10s}")
	run -0 at "$t0" heart-wake --soul "$u" --force
	echo "$output" | jq -e '.status == "idle"'
	run -0 at "$t0" heart-wake --soul "$u" --explain --force
	echo "$output" | jq -se '.[0].gates | has("budget") | not'
}

@test "a triage's cost counts in the fleet's budget, a triage skip's included" {
	fleet "daily: 0.0003, zone: UTC"
	TRIAGE_DIR=$BATS_TEST_TMPDIR/triage
	mkdir -p "$TRIAGE_DIR"
	: > "$TRIAGE_DIR/requests.jsonl"
	python3 "$T/llm-double.py" "$TRIAGE_DIR" 3>&- &
	TRIAGE_PID=$!
	wait_until 10 test -s "$TRIAGE_DIR/port"
	a=$(agent alpha "" "triage: {base_url: \"http://127.0.0.1:$(cat "$TRIAGE_DIR/port")/v1\", model: cheap, timeout: 5s, price: {input: 2.0, output: 10.0}}")
	# 50 tokens in at \$2 a million, 5 out at \$10: \$0.00015 a skip
	printf '{"replies":[{"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip","reason":"nothing new"}}],"usage":{"prompt_tokens":50,"completion_tokens":5}}]}\n' > "$TRIAGE_DIR/script.json"
	for i in 1 2; do
		run -0 heart-wake --soul "$a" --force
		echo "$output" | jq -e '.status == "idle" and .cost == 0.00015'
	done
	run -0 heart-cap status --json
	echo "$output" | jq -se '.[0].fleet.cost == 0.0003'
	run -0 heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | startswith("fleet daily budget $0.0003 reached: $0.0003 spent today"))'
	[ "$(wc -l < "$TRIAGE_DIR/requests.jsonl")" -eq 2 ]
	[ "$(llm_count)" -eq 0 ]
}

@test "the fleet's budget refuses bad values as the fleet file's others are: exit 78, naming the key" {
	a=$(agent alpha)
	for bad in "daily: -1, zone: UTC@budget.daily: must be a number of dollars" \
	    "daily: lots, zone: UTC@budget.daily: must be a number of dollars" \
	    "monthly: 1, zone: Mars/Olympus@budget.zone: not a time zone" \
	    "daily: 1@budget.zone: missing" \
	    "zone: UTC@budget: give daily:, monthly: or both" \
	    "daily: 1, weekly: 5, zone: UTC@budget.weekly: unknown key"; do
		fleet "${bad%@*}"
		run -78 heart-wake --soul "$a" --force
		assert_output --partial "$HEART_FLEET: ${bad#*@}"
		run -78 heart-cap status
		assert_output --partial "$HEART_FLEET: ${bad#*@}"
		run -78 heart-cap take --soul "$a"
		assert_output --partial "$HEART_FLEET: ${bad#*@}"
	done
	printf 'budget: 5\n' > "$HEART_FLEET"
	run -78 heart-wake --soul "$a" --force
	assert_output --partial "$HEART_FLEET: budget: not a mapping"
	[ "$(llm_count)" -eq 0 ]
}

@test "the fleet's day and month roll at midnight in the budget's zone, not the host's" {
	fleet "daily: 0.001, monthly: 0.002, zone: Europe/Berlin"
	a=$(agent alpha "timezone: UTC")
	run -0 at "2026-11-29 22:30:00" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "idle"'
	# 23:50 in Berlin: the day's budget is spent
	run -0 at "2026-11-29 22:50:00" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | test("^fleet daily budget \\$0.001 reached: \\$0.001 spent today .*resets at 2026-11-29T23:00:00Z$"))'
	# Berlin's midnight, UTC's 23:00: a new day for the fleet
	run -0 at "2026-11-29 23:00:30" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "idle"'
	run -0 at "2026-11-29 23:00:30" heart-cap status --json
	echo "$output" | jq -se '.[0].fleet | .day == "2026-11-30" and
	    .cost == 0.001 and .month == "2026-11" and .month_cost == 0.002'
	# the month's budget is spent until Berlin's December
	run -0 at "2026-11-30 22:59:00" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | test("^fleet monthly budget \\$0.002 reached: \\$0.002 spent this month .*resets at 2026-11-30T23:00:00Z$"))'
	run -0 at "2026-11-30 23:00:30" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "idle"'
	run -0 at "2026-11-30 23:00:30" heart-cap status --json
	echo "$output" | jq -se '.[0].fleet | .day == "2026-12-01" and
	    .month == "2026-12" and .month_cost == 0.001'
	[ "$(llm_count)" -eq 3 ]
}

@test "a fleet budget of \$0 admits no wake of an agent with a price, ever: no reset named, no next" {
	fleet "daily: 0, zone: UTC"
	a=$(agent alpha)
	why="fleet daily budget \$0.00 reached: $HEART_FLEET's budget.daily is \$0.00, which admits no wake"
	run -0 heart-wake --soul "$a" --force
	echo "$output" | jq -e --arg why "$why" '.status == "capped" and
	    .reason == $why and .next == null'
	run -0 heart-wake --soul "$a" --explain --force
	echo "$output" | jq -se --arg why "$why" 'all(.[]; .would == "capped"
	    and .gates.budget.reason == $why and
	    (.gates.budget | has("until") | not) and .next == null)'
	run -1 heart-cap take --soul "$a" -v
	assert_output "alpha: schedule refused: $why"
	[ "$(llm_count)" -eq 0 ]
}

@test "a clock set back keeps the fleet's day, and its reset is the midnight after that day, not the clock's next" {
	fleet "daily: 0.001, zone: UTC"
	a=$(agent alpha)
	run -0 at "2026-11-21 01:00:00" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "idle"'
	# the clock stepped back an hour before the day the budget keeps
	run -0 at "2026-11-20 23:00:00" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | endswith("resets at 2026-11-22T00:00:00Z")) and
	    .next >= "2026-11-22T00:00:00Z"'
	run -0 at "2026-11-20 23:00:00" heart-cap status --json
	echo "$output" | jq -se '.[0].fleet | .day == "2026-11-21" and
	    .resets_at == "2026-11-22T00:00:00Z"'
	# and so it is: the clock's next midnight brings no fresh budget
	run -0 at "2026-11-21 00:00:30" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "capped"'
	[ "$(llm_count)" -eq 1 ]
}

@test "--explain defers a wake while a wake in flight, a killed one's included, could reach the fleet's budget, as the wake is" {
	fleet "daily: 1, zone: UTC"
	a=$(agent alpha) b=$(agent beta)
	# no wake's cost known yet: one at a time; beta's is killed mid-request
	llm_script '{"replies": [{"text": "[IDLE]", "delay": 30}]}'
	heart-wake --soul "$b" --force > /dev/null 2>&1 &
	pid=$!
	wait_until 10 eval '[ "$(llm_count)" -ge 1 ]'
	kill -9 "$pid"
	wait "$pid" || :
	t=$(date -u '+%F %T')	# one second for both: the same "deferred until"
	run -0 at "$t" heart-wake --soul "$a" --explain --force
	echo "$output" | jq -se '.[0] | .would == "throttled" and
	    (.reason | startswith("fleet budget: $0.00 spent today, and no wake'"'"'s cost known this week: wakes go one at a time, and 1 is in flight; deferred until ")) and
	    .gates.budget.ok == false and .gates.budget.until == .next'
	why=$(echo "$output" | jq -sr '.[0].reason')
	run -0 at "$t" heart-wake --soul "$a" --force
	echo "$output" | jq -e --arg why "$why" '.status == "throttled" and
	    .reason == $why'
	[ "$(llm_count)" -eq 1 ]
	# beta's own next wake frees the place its killed one held
	run -0 heart-wake --soul "$b" --explain --force
	echo "$output" | jq -se '.[0].would == "wake" and
	    .[0].gates.budget.ok == true'
}

@test "the fleet's budget under 8 agents waking at once (4 sanitized; two hosts on Redis): past it by one wake's cost at most" {
	local np p i st
	np=$(in_pass 8 4)
	fleet "daily: 0.0045, zone: UTC"
	pids=()
	for ((p = 1; p <= np; p++)); do
		s=$(agent "agent$p")
		( # on a Redis store, half of them on another host
		  ! redis_store || [ $((p % 2)) = 0 ] ||
			export HEART_STATE_DIR=$BATS_TEST_TMPDIR/host2
		  for ((i = 0; i < 400; i++)); do
			st=$(heart-wake --soul "$s" --force | jq -r .status)
			echo "$st"
			[ "$st" != capped ] || break
			# throttled: wakes in flight could reach the budget
			[ "$st" != throttled ] || sleep 0.01
		  done > "$BATS_TEST_TMPDIR/st.$p" ) &
		pids+=($!)
	done
	wait "${pids[@]}"	# not the double
	# admitted below the budget with every wake in flight counted
	[ "$(cat "$BATS_TEST_TMPDIR"/st.* | grep -cx idle)" -eq 5 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/st.* | grep -cx capped)" -eq "$np" ]
	[ "$(cat "$BATS_TEST_TMPDIR"/st.* | grep -cvx 'idle\|capped\|throttled')" -eq 0 ]
	[ "$(llm_count)" -eq 5 ]
	run -0 heart-cap status --json
	echo "$output" | jq -se '.[0].fleet | .cost == 0.005 and
	    .cost <= .budget + 0.001 and .wakes_in_flight == 0'
}

@test "two hosts on one Redis share the fleet's budget" {
	redis_store || redis_start || skip "no redis-server"
	export HEART_STORE=$REDIS_URL
	fleet "daily: 0.002, zone: UTC"
	a=$(agent alpha) b=$(agent beta)
	h1=$BATS_TEST_TMPDIR/host1 h2=$BATS_TEST_TMPDIR/host2
	run -0 env HEART_STATE_DIR="$h1" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "idle"'
	run -0 env HEART_STATE_DIR="$h2" heart-wake --soul "$b" --force
	echo "$output" | jq -e '.status == "idle"'
	run -0 env HEART_STATE_DIR="$h1" heart-wake --soul "$a" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | startswith("fleet daily budget $0.002 reached: $0.002 spent today"))'
	run -0 env HEART_STATE_DIR="$h2" heart-wake --soul "$b" --force
	echo "$output" | jq -e '.status == "capped"'
	run -0 env HEART_STATE_DIR="$h2" heart-cap status --json
	echo "$output" | jq -se '.[0].fleet.cost == 0.002'
	[ "$(llm_count)" -eq 2 ]
	# the document is the store's, on the server, not a host's file
	[ ! -e "$h1/budget.json" ] && [ ! -e "$h2/budget.json" ]
	[ "$(rcli EXISTS 'heart:{*}:budget.json')" = 1 ]
}

@test "status forecasts each budget at the last seven days' mean; a counter that knows no day before today has none" {
	fleet "daily: 0.0025, monthly: 0.0045, zone: UTC"
	a=$(agent alpha "daily_budget: 0.002, monthly_budget: 0.0045")
	b=$(agent beta)
	for d in 20 21 22; do
		at "2026-11-$d 12:00:00" heart-wake --soul "$a" --force > /dev/null
	done
	at "2026-11-22 12:00:00" heart-wake --soul "$b" --force > /dev/null
	# three days known, $0.001 a day; $0.003 of $0.0045 spent this month
	run -0 at "2026-11-23 12:00:00" heart-cap status --soul "$a" --json
	echo "$output" | jq -e '.rate == 0.001 and .rate_days == 3 and
	    .budget_at == null and .monthly_budget_on == "2026-11-25" and
	    .month_cost == 0.003'
	# beta's counter began on the 22nd: one day known
	run -0 at "2026-11-23 12:00:00" heart-cap status --soul "$b" --json
	echo "$output" | jq -e '.rate == 0.001 and .rate_days == 1 and
	    .budget_at == null and .monthly_budget_on == null'
	# the fleet: $0.004 in three days known, $0.0005 left this month
	run -0 at "2026-11-23 12:00:00" heart-cap status --json
	echo "$output" | jq -se '.[0].fleet | .rate_days == 3 and
	    (.rate * 1e9 | round) == 1333333 and .month_cost == 0.004 and
	    .budget_at == null and .monthly_budget_on == "2026-11-23"'
	# at $0.001 a day, the $0.001 left today lasts to midnight: not
	# today; the month's $0.0005 left, to the 24th
	at "2026-11-23 12:00:00" heart-wake --soul "$a" --force > /dev/null
	run -0 at "2026-11-23 12:00:00" heart-cap status --soul "$a" --json
	echo "$output" | jq -e '.cost == 0.001 and .budget_at == null and
	    .monthly_budget_on == "2026-11-24"'
	run -0 at "2026-11-23 12:00:00" heart-cap status --prom
	assert_line 'heart_cap_rate_dollars{agent="alpha"} 0.001'
	assert_line 'heart_fleet_rate_dollars 0.001333333'
	assert_line 'heart_fleet_month_cost_dollars 0.005'
	assert_line 'heart_fleet_budget_dollars 0.0025'
	assert_line 'heart_fleet_wakes_in_flight 0'
	assert_line --regexp '^heart_cap_monthly_budget_reached_timestamp_seconds\{agent="alpha"\} [0-9]+$'
	run -0 at "2026-11-23 12:00:00" script -qec "heart-cap status alpha" /dev/null
	assert_line --index 0 --regexp 'RESETS +MONTH +BUDGET AT +MONTHLY ON'
	assert_line --index 1 --regexp 'Z +\$0\.004 +not today +2026-11-24'
	# a new counter knows no day before today: no forecast (and the
	# fleet's month is spent: its wake is refused)
	c=$(agent gamma "daily_budget: 1")
	run -0 at "2026-11-23 12:00:00" heart-wake --soul "$c" --force
	echo "$output" | jq -e '.status == "capped"'
	run -0 at "2026-11-23 12:00:00" heart-cap status --soul "$c" --json
	echo "$output" | jq -e '.rate == null and .rate_days == 0 and
	    .budget_at == null'
	run -0 at "2026-11-23 12:00:00" script -qec "heart-cap status --soul $c" /dev/null
	assert_line --regexp '^gamma .*Z +\$0\.00 +no forecast +no forecast'
	# the fleet's row first: its month's budget is reached today
	assert_line --index 0 --regexp '^FLEET DAY +ZONE +COST +BUDGET +MONTH +MONTHLY +IN FLIGHT +BUDGET AT +MONTHLY ON'
	assert_line --index 1 --regexp '^2026-11-23 UTC +\$0\.001 +\$0\.0025 +\$0\.005 +\$0\.0045 +0  not today +2026-11-23'
}

@test "a counter kept before the week was kept reads as no forecast, and begins one at its next day" {
	unset HEART_FLEET
	a=$(agent alpha "daily_budget: 1")
	at "2026-11-22 12:00:00" heart-wake --soul "$a" --force > /dev/null
	f=$(capfile alpha)
	jq -c 'del(.since, .week, .top)' "$f" > "$BATS_TEST_TMPDIR/old"
	if redis_store; then
		rcli SET 'heart:{alpha}:cap.json' "$(cat "$BATS_TEST_TMPDIR/old")" > /dev/null
	else
		state_write alpha cap.json "$(cat "$BATS_TEST_TMPDIR/old")"
	fi
	run -0 at "2026-11-22 13:00:00" heart-cap status --soul "$a" --json
	echo "$output" | jq -e '.rate == null and .cost == 0.001'
	# a take the same day writes it back, still knowing no day
	run -0 at "2026-11-22 13:00:00" heart-cap take --soul "$a"
	run -0 at "2026-11-22 13:00:00" heart-cap take --soul "$a"
	run -0 at "2026-11-22 13:00:00" heart-cap status --soul "$a" --json
	echo "$output" | jq -e '.rate == null and .used == 3'
	# the day kept is known from the next: its spend, $0.001
	at "2026-11-23 12:00:00" heart-wake --soul "$a" --force > /dev/null
	run -0 at "2026-11-23 13:00:00" heart-cap status --soul "$a" --json
	echo "$output" | jq -e '.rate == 0.001 and .rate_days == 1'
}
