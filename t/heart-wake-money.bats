#!/usr/bin/env bats
# heart-wake: prompt caching, cached tokens, and money (llm.price,
# heart.daily_budget, heart.monthly_budget) counted and capped.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	model_setup
	S=$BATS_TEST_TMPDIR/scout.yaml
}

teardown() {
	model_teardown
}

# scout_soul [LLM-EXTRA] [HEART-EXTRA]: scout, with a tool, history kept
scout_soul() {
	cat > "$S" <<EOF
name: scout
system: You are scout. You watch the weather for the user.
heart: { schedule: { daily_cap: 1000 }, history: { keep: 8 } ${2:+, $2} }
llm: { timeout: 5s ${1:+, $1} }
tools:
  - name: forecast
    description: the forecast for a city
    command: [/bin/true]
    parameters: { type: object, properties: { city: { type: string } } }
EOF
}

# raw N: the bytes of request N (1 is the first), as sent; with STRIP
# set, less its cache marks (not part of what Anthropic caches)
raw() {
	sed -n "${1}p" "$LLM_DIR/requests.jsonl" | jq -j .raw |
	    if [ -n "${STRIP:-}" ]; then
		sed 's/,"cache_control":{"type":"ephemeral","ttl":"1h"}//g'
	    else cat; fi
}

# is_prefix A B: file A, less its last CUT bytes, begins file B
is_prefix() {
	python3 - "$1" "$2" "${3:-2}" <<'EOF'
import sys
a = open(sys.argv[1], "rb").read()
b = open(sys.argv[2], "rb").read()
a = a[:len(a) - int(sys.argv[3])]
n = 0
while n < min(len(a), len(b)) and a[n] == b[n]:
    n += 1
if n < len(a):
    sys.exit("first difference at byte %d of %d:\n A: %r\n B: %r"
             % (n, len(a), a[max(0, n - 60):n + 60], b[max(0, n - 60):n + 60]))
EOF
}

# ghosted_wake: a forced wake through heart-ghost (a real answer is kept
# in the history); its result in $BATS_TEST_TMPDIR/res
ghosted_wake() {
	heart-wake --soul "$S" --force "$@" > "$BATS_TEST_TMPDIR/res"
	heart-ghost < "$BATS_TEST_TMPDIR/res" > /dev/null
}

res() {
	jq -c "$1" "$BATS_TEST_TMPDIR/res"
}

# prefix_test PROVIDER [LLM-EXTRA]: the second wake's request begins
# with the whole first one (less its closing "]}"), and a third after
# a ghost repeats the second's up to its own prompt
prefix_test() {
	export HEART_LLM_PROVIDER=$1
	scout_soul "$2"
	llm_script '{"replies": [{"text": "ALERT: rain at 16:00."}, {"text": "ALERT: the rain moved to 18:00."}, {"text": "[IDLE]"}, {"text": "[IDLE]"}]}'
	ghosted_wake
	ghosted_wake
	ghosted_wake
	ghosted_wake
	[ "$(llm_count)" -eq 4 ]
	raw 1 > "$BATS_TEST_TMPDIR/r1"
	raw 2 > "$BATS_TEST_TMPDIR/r2"
	raw 3 > "$BATS_TEST_TMPDIR/r3"
	raw 4 > "$BATS_TEST_TMPDIR/r4"
	# a real answer is history: request 1 is the head of request 2
	is_prefix "$BATS_TEST_TMPDIR/r1" "$BATS_TEST_TMPDIR/r2"
	is_prefix "$BATS_TEST_TMPDIR/r2" "$BATS_TEST_TMPDIR/r3"
	# a ghost leaves none: request 4 is request 3 up to the prompt
	sed -n 4p "$LLM_DIR/requests.jsonl" | jq -j '.body.messages[-1] |
	    tojson' > "$BATS_TEST_TMPDIR/p4"
	n=$(( $(wc -c < "$BATS_TEST_TMPDIR/r4") - $(wc -c < "$BATS_TEST_TMPDIR/p4") - 2 ))
	head -c "$n" "$BATS_TEST_TMPDIR/r4" > "$BATS_TEST_TMPDIR/h4"
	is_prefix "$BATS_TEST_TMPDIR/h4" "$BATS_TEST_TMPDIR/r3" 0
	grep -q '"model":"double","max_tokens":1024,"tools":' "$BATS_TEST_TMPDIR/r1"
}

@test "two consecutive wakes' requests share their prefix byte for byte (OpenAI)" {
	prefix_test openai
}

@test "two consecutive wakes' requests share their prefix byte for byte (Anthropic)" {
	prefix_test anthropic
}

@test "with llm.cache on, only the cache marks move from wake to wake" {
	STRIP=1 prefix_test anthropic "cache: 1h"
}

@test "Anthropic: cache_control marks the system and the history's end when llm.cache asks" {
	export HEART_LLM_PROVIDER=anthropic
	scout_soul "cache: 5m"
	llm_script '{"replies": [{"text": "ALERT: rain at 16:00."}]}'
	ghosted_wake
	ghosted_wake
	sed -n 2p "$LLM_DIR/requests.jsonl" | jq -e '.headers |
	    has("anthropic-beta") | not'
	sed -n 2p "$LLM_DIR/requests.jsonl" | jq -e '.body |
	    .system == [{type: "text", text: "You are scout. You watch the weather for the user.", cache_control: {type: "ephemeral"}}] and
	    ([.messages[].content[] | select(.cache_control)] | length) == 1 and
	    .messages[-2].content[-1].cache_control == {type: "ephemeral"} and
	    .messages[-2].role == "assistant" and
	    (.messages[-1].content[-1] | has("cache_control") | not) and
	    ([.tools[] | select(.cache_control)] | length) == 0'
	scout_soul "cache: 1h"
	ghosted_wake
	llm_last | jq -e '.system[0].cache_control == {type: "ephemeral", ttl: "1h"} and
	    .messages[-2].content[-1].cache_control.ttl == "1h"'
	# the hour-long cache is a beta of Anthropic's, named in a header
	tail -n 1 "$LLM_DIR/requests.jsonl" | jq -e '.headers["anthropic-beta"] ==
	    "extended-cache-ttl-2025-04-11"'
}

@test "Anthropic: no cache_control when llm.cache is off or unset" {
	export HEART_LLM_PROVIDER=anthropic
	llm_script '{"replies": [{"text": "ALERT: rain at 16:00."}]}'
	scout_soul
	ghosted_wake
	ghosted_wake
	scout_soul "cache: off"
	ghosted_wake
	[ "$(llm_count)" -eq 3 ]
	run grep -c cache_control "$LLM_DIR/requests.jsonl"
	assert_output 0
	llm_last | jq -e '.system | type == "string"'
}

@test "Anthropic: with no system prompt the last tool ends the cached prefix" {
	export HEART_LLM_PROVIDER=anthropic
	scout_soul "cache: 5m"
	sed -i '/^system:/d' "$S"
	ghosted_wake
	llm_last | jq -e '(has("system") | not) and
	    .tools[-1].cache_control == {type: "ephemeral"}'
}

@test "a bad llm.cache is refused with the values it takes" {
	scout_soul "cache: 10m"
	run heart-wake --soul "$S" --force
	assert_failure 78
	assert_output --partial "llm.cache: must be off, 5m or 1h"
	[ "$(llm_count)" -eq 0 ]
}

@test "cached tokens are read from both protocols into the result and the day's totals" {
	scout_soul
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "cached_tokens": 600}}]}'
	ghosted_wake
	res .usage | jq -e '. == {prompt_tokens: 1000, completion_tokens: 10, cached_tokens: 600, cache_write_tokens: 0}'
	export HEART_LLM_PROVIDER=anthropic
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "cached_tokens": 500, "cache_write_tokens": 300}}]}'
	ghosted_wake
	# sent as input_tokens 200 + cache_read 500 + cache_creation 300
	res .usage | jq -e '. == {prompt_tokens: 1000, completion_tokens: 10, cached_tokens: 500, cache_write_tokens: 300}'
	# missing fields are zero, in either protocol
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 70, "completion_tokens": 5}}]}'
	ghosted_wake
	res .usage | jq -e '. == {prompt_tokens: 70, completion_tokens: 5, cached_tokens: 0, cache_write_tokens: 0}'
	export HEART_LLM_PROVIDER=openai
	ghosted_wake
	res .usage | jq -e '.cached_tokens == 0 and .cache_write_tokens == 0'
	run -0 heart-cap status scout --json
	echo "$output" | jq -e '.tokens == {prompt: 2140, completion: 30, cached: 1100, cache_write: 300}'
}

@test "each wake's cost at llm.price is in its result, and the day's in heart-cap status, ghosts included" {
	scout_soul "price: {input: 1.0, cached_input: 0.1, cache_write: 1.25, output: 4.0}"
	export HEART_LLM_PROVIDER=anthropic
	# 100 plain, 600 cached, 300 written, 100 out: 100 + 60 + 375 + 400
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 600, "cache_write_tokens": 300}}, {"text": "ALERT: rain.", "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 600, "cache_write_tokens": 300}}]}'
	ghosted_wake
	res '[.status, .cost]' | jq -e '. == ["idle", 0.000935]'
	ghosted_wake
	res '[.status, .cost]' | jq -e '. == ["ok", 0.000935]'
	run -0 heart-cap status scout --json
	echo "$output" | jq -e '.cost == 0.00187 and .budget == null and .ghosts == 1'
	run -0 heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.cost == 0.00187'
	run -0 script -qec "heart-cap status scout" /dev/null
	assert_line --index 1 --regexp '^scout +.* \$0\.00187 +[0-9T:-]{19}Z'
	run -0 heart-cap status --prom
	assert_line 'heart_cap_cost_dollars{agent="scout"} 0.00187'
	assert_line 'heart_cap_tokens{agent="scout",kind="cached"} 1200'
	assert_line 'heart_cap_tokens{agent="scout",kind="cache_write"} 600'
	# a price without cached_input and cache_write charges them as input
	scout_soul "price: {input: 2, output: 4}"
	ghosted_wake
	res .cost | jq -e '. == 0.0024'
}

@test "an agent with no price has no cost: null in JSON, \"no price\" on a terminal, no series" {
	scout_soul
	ghosted_wake
	res 'has("cost") and .cost == null' | grep -qx true
	run -0 heart-cap status scout --json
	echo "$output" | jq -e 'has("cost") and .cost == null and .budget == null'
	run -0 script -qec "heart-cap status scout" /dev/null
	assert_line --index 1 --partial ' no price '
	run heart-cap status --prom
	assert_success
	refute_output --partial heart_cap_cost_dollars
	refute_output --partial heart_cap_budget_dollars
}

@test "a bad llm.price is refused, naming the field" {
	for p in "{input: 1}" "{input: -1, output: 1}" "{input: 1, output: 1, cached: 1}" "1.5" "{input: x, output: 1}"; do
		scout_soul "price: $p"
		run heart-wake --soul "$S" --force
		assert_failure 78
		assert_output --partial "llm.price: "
	done
	scout_soul "price: {input: 1, output: 1, cached: 1}"
	run -78 heart-wake --soul "$S" --force
	assert_output --partial "unknown key 'cached'"
	[ "$(llm_count)" -eq 0 ]
}

@test "a daily_budget without a price is refused: without one it would never be reached" {
	scout_soul "" "daily_budget: 1.50"
	run heart-wake --soul "$S" --force
	assert_failure 78
	assert_output --partial "heart.daily_budget: needs llm.price"
	run heart-cap take --soul "$S"
	assert_failure 78
	[ "$(llm_count)" -eq 0 ]
}

@test "daily_budget refuses a wake once the day's spend reached it, before any traffic, until local midnight" {
	scout_soul "price: {input: 1.0, output: 1.0}" "daily_budget: 0.002, timezone: Asia/Tokyo"
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	t0="2026-11-22 10:00:00"	# 19:00 in Tokyo
	for i in 1 2; do
		at "$t0" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
		res '[.status, .cost]' | jq -e '. == ["idle", 0.001]'
	done
	run at "$t0" heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | startswith("daily budget reached: $0.002 of $0.002 spent today; resets at 2026-11-22T15:00:00Z")) and
	    (has("cost") | not) and .next >= "2026-11-22T15:00:00Z" and
	    .usage == {prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0}'
	[ "$(llm_count)" -eq 2 ]
	run at "$t0" heart-cap take --soul "$S"
	assert_failure 1
	run -0 at "$t0" heart-wake --soul "$S" --explain --force
	echo "$output" | jq -se '.[0].would == "capped" and
	    (.[0].gates.cap.reason | startswith("daily budget reached"))'
	run -0 at "$t0" heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.cost == 0.002 and .budget == 0.002'
	# Tokyo's midnight: a new day, a new budget
	at "2026-11-22 15:00:01" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
	res .status | grep -qx '"idle"'
	[ "$(llm_count)" -eq 3 ]
	run -0 at "2026-11-22 15:00:01" heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.cost == 0.001 and .day == "2026-11-23"'
}

@test "a monthly_budget without a price, or below zero, is refused" {
	scout_soul "" "monthly_budget: 40.00"
	run heart-wake --soul "$S" --force
	assert_failure 78
	assert_output --partial "heart.monthly_budget: needs llm.price"
	scout_soul "price: {input: 1.0, output: 1.0}" "monthly_budget: -1"
	run heart-wake --soul "$S" --force
	assert_failure 78
	assert_output --partial "heart.monthly_budget: must be a number of dollars"
	# past what heart counts: said so, not as if it were below zero
	for k in daily_budget monthly_budget; do
		scout_soul "price: {input: 1.0, output: 1.0}" "$k: 1e12"
		run -78 heart-wake --soul "$S" --force
		assert_output --partial "heart.$k: must be a number of dollars, 0 or more and at most 9e9"
	done
	[ "$(llm_count)" -eq 0 ]
}

@test "monthly_budget refuses a wake once the local month's spend reached it, before any traffic, until the month's first midnight" {
	scout_soul "price: {input: 1.0, output: 1.0}" "monthly_budget: 0.002, timezone: America/New_York"
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	# two days of November, one wake each: the month's budget spent
	for d in 2026-11-28 2026-11-29; do
		at "$d 12:00:00" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
		res '[.status, .cost]' | jq -e '. == ["idle", 0.001]'
	done
	run -0 at "2026-11-30 12:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | startswith("monthly budget $0.002 reached: $0.002 spent this month (heart.monthly_budget); resets at 2026-12-01T05:00:00Z")) and
	    (has("cost") | not) and .next >= "2026-12-01T05:00:00Z"'
	[ "$(llm_count)" -eq 2 ]
	run -0 at "2026-11-30 12:00:00" heart-wake --soul "$S" --explain --force
	echo "$output" | jq -se '.[0].would == "capped" and
	    (.[0].gates.cap.reason | startswith("monthly budget $0.002 reached"))'
	run -0 at "2026-11-30 12:00:00" heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.cost == 0 and .month == "2026-11" and
	    .month_cost == 0.002 and .monthly_budget == 0.002 and .budget == null'
	run -0 at "2026-11-30 12:00:00" heart-cap status --prom
	assert_line 'heart_cap_month_cost_dollars{agent="scout"} 0.002'
	assert_line 'heart_cap_monthly_budget_dollars{agent="scout"} 0.002'
	# UTC's December, still New York's November: refused
	run -0 at "2026-12-01 04:59:59" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "capped"'
	[ "$(llm_count)" -eq 2 ]
	# New York's December: a new month, a new budget
	at "2026-12-01 05:00:30" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
	res .status | grep -qx '"idle"'
	[ "$(llm_count)" -eq 3 ]
	run -0 at "2026-12-01 05:00:30" heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.month == "2026-12" and .month_cost == 0.001'
}

@test "--explain's cap gate opens at the month's end once the monthly budget refuses, not at the day's" {
	scout_soul "price: {input: 1.0, output: 1.0}" "monthly_budget: 0.001, timezone: America/New_York"
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	at "2026-11-10 12:00:00" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
	res .status | grep -qx '"idle"'
	run -0 at "2026-11-12 12:00:00" heart-wake --soul "$S" --explain --force
	echo "$output" | jq -se '.[0].would == "capped" and
	    (.[0].gates.cap.reason | startswith("monthly budget $0.001 reached")) and
	    .[0].gates.cap.until == "2026-12-01T05:00:00Z"'
	[ "$(llm_count)" -eq 1 ]
}

@test "heart-cap take -v says which budget refused it, not the count it left below the cap" {
	scout_soul "price: {input: 1.0, output: 1.0}" "daily_budget: 0.001, monthly_budget: 0.002, timezone: Asia/Tokyo"
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	at "2026-11-22 01:00:00" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
	res .status | grep -qx '"idle"'
	run -1 at "2026-11-22 01:00:00" heart-cap take --soul "$S" -v
	assert_output "scout: schedule refused: daily budget reached: \$0.001 of \$0.001 spent today; resets at 2026-11-22T15:00:00Z"
	at "2026-11-23 01:00:00" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
	res .status | grep -qx '"idle"'
	run -1 at "2026-11-24 01:00:00" heart-cap take scout --chamber idle -v
	assert_output "scout: idle refused: monthly budget \$0.002 reached: \$0.002 spent this month (heart.monthly_budget); resets at 2026-11-30T15:00:00Z"
	[ "$(llm_count)" -eq 2 ]
}

@test "a budget of \$0 admits no wake, ever: its refusal names no reset, and no next" {
	for b in "daily_budget: 0@daily budget reached: heart.daily_budget is \$0.00, which admits no wake, today or any day" \
	    "monthly_budget: 0@monthly budget \$0.00 reached: heart.monthly_budget is \$0.00, which admits no wake, this month or any"; do
		state_clear
		scout_soul "price: {input: 1.0, output: 1.0}" "${b%@*}"
		run -0 at "2026-11-22 10:00:00" heart-wake --soul "$S" --force
		echo "$output" | jq -e --arg why "${b#*@}" '.status == "capped" and
		    .reason == $why and .next == null'
		run -0 at "2026-11-22 10:00:00" heart-wake --soul "$S" --explain --force
		echo "$output" | jq -se --arg why "${b#*@}" 'all(.[];
		    .would == "capped" and .gates.cap.reason == $why and
		    (.gates.cap | has("until") | not) and .next == null)'
		run -1 at "2026-11-22 10:00:00" heart-cap take --soul "$S" -v
		assert_output "scout: schedule refused: ${b#*@}"
	done
	[ "$(llm_count)" -eq 0 ]
}

@test "the daily and the monthly budget together: the day's refuses first, then the month's past the day" {
	scout_soul "price: {input: 1.0, output: 1.0}" "daily_budget: 0.001, monthly_budget: 0.002"
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	at "2026-11-28 10:00:00" heart-wake --soul "$S" --force > /dev/null
	run -0 at "2026-11-28 11:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | startswith("daily budget reached"))'
	at "2026-11-29 10:00:00" heart-wake --soul "$S" --force > /dev/null
	run -0 at "2026-11-30 10:00:00" heart-wake --soul "$S" --force
	echo "$output" | jq -e '.status == "capped" and
	    (.reason | startswith("monthly budget $0.002 reached"))'
	[ "$(llm_count)" -eq 2 ]
	run -0 at "2026-11-30 10:00:00" heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.cost == 0 and .budget == 0.001 and
	    .month_cost == 0.002 and .monthly_budget == 0.002'
}

@test "a cap document kept before the month was counted reads as nothing spent this month" {
	scout_soul "price: {input: 1.0, output: 1.0}" "monthly_budget: 0.001"
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]}'
	at "2026-11-28 10:00:00" heart-wake --soul "$S" --force > /dev/null
	run -0 at "2026-11-28 10:00:00" heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.month_cost == 0.001'
	# the same counter as an older heart wrote it: no month
	if redis_store; then
		j=$(rcli GET 'heart:{scout}:cap.json' | jq -c 'del(.month, .month_cost)')
		rcli SET 'heart:{scout}:cap.json' "$j" > /dev/null
	else
		d=$HEART_STATE_DIR/agents/scout
		state_write scout cap.json "$(jq -c 'del(.month, .month_cost)' "$d/cap.json")"
	fi
	run -0 at "2026-11-28 10:00:00" heart-cap status --soul "$S" --json
	echo "$output" | jq -e '.cost == 0.001 and .month == "2026-11" and
	    .month_cost == 0'
	at "2026-11-28 11:00:00" heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
	res .status | grep -qx '"idle"'
	[ "$(llm_count)" -eq 2 ]
}

@test "a failed wake that was billed counts too; one that sent nothing costs nothing" {
	scout_soul "price: {input: 1.0, output: 1.0}"
	llm_script '{"replies": [{"status": 503, "text": "overloaded"}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	echo "$output" | jq -e '.cost == 0'
	# a provider that bills a failed reply (here: a wake cut short)
	llm_script '{"replies": [{"text": "", "tool_calls": [{"name": "forecast", "arguments": {"city": "Lyon"}}], "usage": {"prompt_tokens": 1000, "completion_tokens": 0}}, {"status": 503}]}'
	: > "$LLM_DIR/requests.jsonl"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	echo "$output" | jq -e '.status == "error" and .cost == 0.001'
	run -0 heart-cap status scout --json
	echo "$output" | jq -e '.cost == 0.001'
}

@test "a cost prints as the decimal it is, byte for byte: the result, the outbox, heart-cap status, its table and its metrics" {
	scout_soul "price: {input: 2.50, cached_input: 1.25, output: 10.00}" "daily_budget: 0.0106"
	# 176 plain, 1024 cached, 40 out: 440 + 1280 + 400 = 2120 microdollars
	llm_script '{"replies": [{"text": "ALERT: rain at 16:00.", "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "cached_tokens": 1024}}]}'
	heart-wake --soul "$S" --force > "$BATS_TEST_TMPDIR/res"
	# the double nearest 0.00212, at jansson's 17 digits, would be
	# 0.0021199999999999999; 0.0106 would be 0.010600000000000001
	grep -qF '"cost":0.00212,' "$BATS_TEST_TMPDIR/res"
	id=$(jq -r .wake_id "$BATS_TEST_TMPDIR/res")
	grep -qF '\"cost\":0.00212,' "$HEART_STATE_DIR/agents/scout/outbox/$id.json"
	heart-cap status scout --json > "$BATS_TEST_TMPDIR/status"
	grep -qF '"cost":0.00212,' "$BATS_TEST_TMPDIR/status"
	grep -qF '"budget":0.0106,' "$BATS_TEST_TMPDIR/status"
	run -0 script -qec "heart-cap status scout" /dev/null
	assert_line --index 1 --regexp '^scout +.* \$0\.00212 +[0-9T:-]{19}Z'
	run -0 heart-cap status --prom
	assert_line 'heart_cap_cost_dollars{agent="scout"} 0.00212'
	assert_line 'heart_cap_budget_dollars{agent="scout"} 0.0106'
	# five wakes: 0.0106 spent, the budget reached, said exactly
	for i in 2 3 4 5; do
		heart-wake --soul "$S" --force > /dev/null
	done
	run heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.status == "capped"'
	assert_output --partial 'daily budget reached: $0.0106 of $0.0106 spent today'
	run -0 heart-cap status scout --json
	assert_output --partial '"cost":0.0106,'
	cat "$BATS_TEST_TMPDIR"/res "$BATS_TEST_TMPDIR"/status "$HEART_STATE_DIR"/agents/scout/outbox/*.json > "$BATS_TEST_TMPDIR/all"
	run -1 grep -E '0\.00211999|0\.010599|0\.01060000' "$BATS_TEST_TMPDIR/all"
}

# sent N: the bytes of request N as heart sent it
sent() {
	sed -n "${1}p" "$LLM_DIR/requests.jsonl" | jq -r '.raw | utf8bytelength'
}

@test "an absurd usage block is counted within what its request could produce: no \$125 wake, no budget closed, no endpoint stopped" {
	scout_soul "price: {input: 2.50, output: 10.00}" "daily_budget: 1.00"
	export HEART_FLEET=$BATS_TEST_TMPDIR/fleet.yaml
	printf 'endpoints:\n  double:\n    model: double\n    tokens_per_minute: 1000000\n' > "$HEART_FLEET"
	# fifty million prompt tokens ($125) and a million out ($10), for
	# a request of a few kilobytes and a max_tokens of 1024
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 50000000, "completion_tokens": 1000000}}, {"text": "[IDLE]", "usage": {"prompt_tokens": 300, "completion_tokens": 10}}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	n=$(sent 1)
	echo "$output" | jq -e --argjson p $((n + 4096)) '.status == "idle" and
	    .usage.prompt_tokens == $p and .usage.completion_tokens == 5120'
	# what it costs at most: the request's bytes and 4096, max_tokens
	# and 4096: cents, not $135
	echo "$output" | jq -e --argjson c "$(( (n + 4096) * 2500 + 5120 * 10000 ))" \
	    '.cost * 1e9 | round == $c and . < 1e8'
	echo "$output" | jq -e --argjson n "$n" '.warning == "usage past what the request could produce (heart-soul(5), MONEY): prompt_tokens 50000000 counted as \($n + 4096) (\($n) bytes sent); completion_tokens 1000000 counted as 5120 (max_tokens 1024, 6 bytes answered)"'
	[[ $stderr == *"prompt_tokens 50000000 counted as"* ]]
	# the day's counters and the endpoint's tokens hold the bounded count
	heart-cap status scout --json | jq -e --argjson p $((n + 4096)) \
	    '.tokens.prompt == $p and .cost < 0.1'
	heart-cap status --json | jq -se --argjson t $((n + 4096 + 5120)) \
	    'map(select(.endpoint))[0].tokens == $t'
	# the next wake is admitted, by the budget and by the bucket
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	echo "$output" | jq -e '.status == "idle" and .usage.prompt_tokens == 300 and (has("warning") | not)'
	[ "$(llm_count)" -eq 2 ]
}

@test "a usage block below zero, or with more cached than prompt tokens, is read as it could be" {
	scout_soul "price: {input: 2.50, cached_input: 1.25, output: 10.00}"
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": -500, "completion_tokens": -7, "cached_tokens": -3}}]}'
	ghosted_wake
	res '[.usage, .cost]' | jq -e '. == [{prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0}, 0]'
	# cached past the prompt: the prompt's, at the cached price
	llm_script '{"replies": [{"text": "[IDLE]", "usage": {"prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": 900}}]}'
	ghosted_wake
	res '[.usage, .cost]' | jq -e '. == [{prompt_tokens: 100, completion_tokens: 10, cached_tokens: 100, cache_write_tokens: 0}, 0.000225]'
	res .warning | jq -e 'contains("cached_tokens 900 counted as 100 (the prompt'"'"'s)")'
	# Anthropic: counts past 2^63 added together never wrap around
	export HEART_LLM_PROVIDER=anthropic
	llm_script '{"replies": [{"text": "[IDLE]", "raw": "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"[IDLE]\"}],\"usage\":{\"input_tokens\":9223372036854775807,\"cache_read_input_tokens\":9223372036854775807,\"cache_creation_input_tokens\":9223372036854775807,\"output_tokens\":9223372036854775807}}"}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	n=$(sed -n '$p' "$LLM_DIR/requests.jsonl" | jq -r '.raw | utf8bytelength')
	echo "$output" | jq -e --argjson p $((n + 4096)) '.status == "idle" and
	    .usage == {prompt_tokens: $p, completion_tokens: 5120, cached_tokens: $p, cache_write_tokens: 0} and .cost < 0.1'
}

@test "a usage count written as a real is read; one past 2^64 is bounded, never the answer beside it lost" {
	scout_soul "price: {input: 2.50, output: 10.00}"
	llm_script '{"replies": [{"raw": "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"[IDLE]\"}}],\"usage\":{\"prompt_tokens\":1200.0,\"completion_tokens\":4e1}}"}]}'
	ghosted_wake
	res '[.status, .usage.prompt_tokens, .usage.completion_tokens, .cost]' | jq -e '. == ["idle", 1200, 40, 0.0034]'
	llm_script '{"replies": [{"raw": "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"ALERT: the river is rising.\"}}],\"usage\":{\"prompt_tokens\":18446744073709551616,\"completion_tokens\":12}}"}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	n=$(sed -n '$p' "$LLM_DIR/requests.jsonl" | jq -r '.raw | utf8bytelength')
	echo "$output" | jq -e --argjson p $((n + 4096)) '.status == "ok" and
	    .response == "ALERT: the river is rising." and
	    .usage.prompt_tokens == $p and .usage.completion_tokens == 12'
	echo "$output" | jq -e '.warning | contains("prompt_tokens at least 1125899906842624 counted as")'
}
