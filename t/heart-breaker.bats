#!/usr/bin/env bats
# heart-breaker: the dual-trigger circuit breaker shared by every wake.
# Time is moved with libfaketime (`at'); the library side that
# heart-wake uses (probe hand-back, a probe holder that hangs) is
# reached through t/brk-probe.c.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	T0="2026-11-21 12:00:00"
}

teardown() {
	llm_stop
	heart_teardown
}

# plus TIME SECONDS: the UTC time SECONDS after TIME ("2026-11-21
# 12:00:00", as `at' takes it), for `at'; in the shell, no date(1)
plus() {
	local t
	epoch_of t "${1/ /T}Z" || { echo "plus: $1: not a UTC time" >&2; return 1; }
	TZ=UTC printf '%(%Y-%m-%d %H:%M:%S)T\n' $((t + $2))
}

# fails N AGENT [OUTCOME]: record N failures at T0
fails() {
	local i
	for ((i = 0; i < $1; i++)); do
		at "$T0" heart-breaker record "$2" "${3:-llm-fail}" \
		    --reason "HTTP 429"
	done
}

# until_of EVENT-LINE: the "until" of an open event, for `at' (a
# regex, not a jq: heart prints the time as 2026-11-21T12:15:00Z)
until_of() {
	local re='"until":"([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9:]{8})Z"'
	[[ $1 =~ $re ]] || { echo "until_of: no until in: $1" >&2; return 1; }
	echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
}

@test "three consecutive LLM failures open the breaker, and say so once on stdout" {
	meet scout
	run fails 2 scout
	assert_success
	assert_output ""
	run at "$T0" heart-breaker check scout
	assert_success
	run at "$T0" heart-breaker record scout llm-fail --reason "HTTP 429"
	assert_success
	assert_output '{"event":"open","agent":"scout","trigger":"llm","cooldown_s":900,"until":"2026-11-21T12:15:00Z","reason":"HTTP 429","from":"closed","kind":"failures","llm_fails":3,"tool_fails":0,"at":"2026-11-21T12:00:00Z"}'
	run at "$T0" heart-breaker check scout
	assert_failure 1
	assert_output ""
	run jq -r '.state, .trigger, .llm_fails, .cooldown_s, .until' "$(bfile scout)"
	assert_output "$(printf 'open\nllm\n3\n900\n2026-11-21T12:15:00Z')"
	run -0 at "$T0" heart-breaker record scout llm-fail
	assert_output ""
}

@test "two LLM failures and a success do not open it: the success resets the count" {
	meet scout
	fails 2 scout
	at "$T0" heart-breaker record scout ok
	run jq .llm_fails "$(bfile scout)"
	assert_output 0
	run -0 fails 2 scout
	assert_output ""
	run at "$T0" heart-breaker check scout
	assert_success
	run jq -r '.state, .llm_fails' "$(bfile scout)"
	assert_output "$(printf 'closed\n2')"
	run -0 fails 1 scout
	assert_output --partial '"event":"open"'
}

@test "a success that changes nothing is read, not written: a process stuck holding the lock never stalls it" {
	file_only
	meet scout
	fails 1 scout
	at "$T0" heart-breaker record scout ok	# the count reset: written
	local f
	f=$(bfile scout)
	cp "$f" "$BATS_TEST_TMPDIR/before"
	exec {lk}>"$HEART_STATE_DIR/agents/scout/breaker.lock"
	flock -x "$lk"
	run timeout 30 heart-breaker record scout ok
	assert_success
	assert_output ""
	cmp "$f" "$BATS_TEST_TMPDIR/before"
	# an outcome that changes it waits for the lock as ever
	run timeout 2 heart-breaker record scout llm-fail
	exec {lk}>&-
	assert_failure 124
	run jq .llm_fails "$f"
	assert_output 0
}

@test "the tool trigger counts apart from the LLM trigger and opens on its own" {
	meet scout
	fails 2 scout tool-fail
	fails 2 scout llm-fail
	run jq -c '[.state, .llm_fails, .tool_fails]' "$(bfile scout)"
	assert_output '["closed",2,2]'
	run at "$T0" heart-breaker check scout
	assert_success
	# tool-fail means the model answered: it resets the LLM count
	run -0 fails 1 scout tool-fail
	assert_output --partial '"event":"open","agent":"scout","trigger":"tool"'
	run jq -c '[.state, .trigger, .llm_fails, .tool_fails]' "$(bfile scout)"
	assert_output '["open","tool",0,3]'
	run at "$T0" heart-breaker check scout
	assert_failure 1
}

@test "the soul's breaker keys set the threshold and the cooldowns" {
	meet other
	s=$(soul_file scout.yaml 'heart:
  breaker: { threshold: 2, cooldown: 1m, max_cooldown: 3m }')
	at "$T0" heart-breaker record --soul "$s" llm-fail
	run -0 at "$T0" heart-breaker record --soul "$s" llm-fail
	assert_output --partial '"cooldown_s":60,"until":"2026-11-21T12:01:00Z"'
	run at "$(plus "$T0" 60)" heart-breaker check --soul "$s"
	assert_success
	run -0 at "$(plus "$T0" 60)" heart-breaker record --soul "$s" llm-fail
	assert_output --partial '"cooldown_s":120'
	run at "$(plus "$T0" 180)" heart-breaker check --soul "$s"
	assert_success
	run -0 at "$(plus "$T0" 180)" heart-breaker record --soul "$s" llm-fail
	assert_output --partial '"cooldown_s":180'
	# without the soul the defaults hold: 3 failures
	run -0 at "$T0" heart-breaker record other llm-fail
	run -0 at "$T0" heart-breaker record other llm-fail
	assert_output ""
}

# forced_wake SOUL [TIME]: heart-wake --force for SOUL at T0 (or TIME)
forced_wake() {
	at "${2:-$T0}" heart-wake --soul "$1" --force
}

@test "401, 403, 404 and a 400 that names no such model are configuration errors: exit 78, the soul, the URL and the fix; the breaker opens at once for max_cooldown" {
	llm_start
	export OPENAI_API_KEY=sk-test-CONFIG-0123456789
	s=$(soul_file scout.yaml 'llm: { timeout: 10s }')
	url=$HEART_LLM_URL/chat/completions
	for c in '401|{"status":401,"text":"Incorrect API key provided"}|the API key was refused: set OPENAI_API_KEY in the environment heart-wake runs in to a valid key; the provider said: Incorrect API key provided' \
		'403|{"status":403,"text":"Project does not have access"}|the API key may not use this model or endpoint: check the key'"'"'s permissions and llm.model (double); the provider said: Project does not have access' \
		'404|{"status":404,"text":"The model `double` does not exist","error_code":"model_not_found"}|no such model or URL: check llm.model (double) and llm.base_url; the provider said: The model `double` does not exist' \
		'400|{"status":400,"text":"The model `double` does not exist."}|no such model: check llm.model (double); the provider said: The model `double` does not exist.'; do
		IFS='|' read -r code reply fix <<< "$c"
		heart-breaker reset --soul "$s" > /dev/null
		hold_clear
		: > "$LLM_DIR/requests.jsonl"
		llm_script "{\"replies\":[$reply]}"
		run forced_wake "$s"
		assert_failure 78
		assert_line --index 0 "heart-wake: scout: $s: $url answered HTTP $code: $fix"
		echo "${lines[1]}" | jq -e '.status == "error" and .breaker == "open" and .breaker_events[0].event == "open" and .breaker_events[0].cooldown_s == 7200'
		run jq -r '.state, .cooldown_s, .until, .llm_fails' "$(bfile scout)"
		assert_output "$(printf 'open\n7200\n2026-11-21T14:00:00Z\n1')"
		# no retry every wake: nothing is sent until max_cooldown
		run forced_wake "$s" "$(plus "$T0" 7199)"
		assert_success
		[ "$(echo "$output" | jq -r .status)" = open ]
		[ "$(llm_count)" -eq 1 ]
	done
	# no key at all: the message says which variable, and where
	unset OPENAI_API_KEY
	heart-breaker reset --soul "$s" > /dev/null
	hold_clear
	llm_script '{"replies":[{"status":401,"text":"You did not provide an API key."}]}'
	run forced_wake "$s"
	assert_failure 78
	assert_line --index 0 "heart-wake: scout: $s: $url answered HTTP 401: no API key was sent: set OPENAI_API_KEY in the environment heart-wake runs in (cron and systemd do not read a login shell's profile); the provider said: You did not provide an API key."
	# the same for Anthropic's words
	heart-breaker reset --soul "$s" > /dev/null
	hold_clear
	export ANTHROPIC_API_KEY=sk-ant-test-0123456789
	s=$(soul_file scout.yaml 'llm: { provider: anthropic, timeout: 10s }')
	llm_script '{"replies":[{"status":401,"text":"invalid x-api-key","error_type":"authentication_error"}]}'
	run forced_wake "$s"
	assert_failure 78
	assert_line --index 0 "heart-wake: scout: $s: $HEART_LLM_URL/messages answered HTTP 401: the API key was refused: set ANTHROPIC_API_KEY in the environment heart-wake runs in to a valid key; the provider said: invalid x-api-key"
	[ "$(jq -r .cooldown_s "$(bfile scout)")" -eq 7200 ]
	# 5xx and a 400 of another kind stay temporary
	for r in '{"status":503,"text":"overloaded"}' '{"status":400,"text":"messages: bad role"}'; do
		heart-breaker reset --soul "$s" > /dev/null
		hold_clear
		llm_script "{\"replies\":[$r]}"
		run forced_wake "$s"
		assert_failure 75
		[ "$(jq -r .state "$(bfile scout)")" = closed ]
	done
}

@test "a 429's Retry-After, in seconds or as an HTTP date, holds the breaker open at least that long; a used-up quota holds it for max_cooldown" {
	llm_start
	s=$(soul_file scout.yaml 'llm: { timeout: 10s }')
	llm_script '{"replies":[{"status":429,"text":"rate limited","headers":{"Retry-After":"3600"}}]}'
	run forced_wake "$s"
	assert_failure 75
	assert_output --partial 'model endpoint answered HTTP 429: rate limited'
	run jq -r '.state, .cooldown_s, .until, .llm_fails' "$(bfile scout)"
	assert_output "$(printf 'open\n3600\n2026-11-21T13:00:00Z\n1')"
	run forced_wake "$s" "$(plus "$T0" 3599)"
	assert_success
	[ "$(echo "$output" | jq -r .status)" = open ]
	[ "$(llm_count)" -eq 1 ]
	# the hour passed: the probe goes; another 429 holds it longer
	# than the doubled cooldown
	llm_script '{"replies":[{"status":429,"headers":{"Retry-After":"9000"}}]}'
	run forced_wake "$s" "$(plus "$T0" 3600)"
	assert_failure 75
	run jq -r '.state, .cooldown_s, .until' "$(bfile scout)"
	assert_output "$(printf 'open
9000
2026-11-21T15:30:00Z')"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run forced_wake "$s" "$(plus "$T0" 12600)"
	assert_success
	[ "$(llm_count)" -eq 3 ]
	[ "$(jq -r .state "$(bfile scout)")" = closed ]
	# late news while open: a hold or a failure a person must fix
	# keeps it open longer, never shorter
	fails 3 scout
	run -0 at "$T0" brk-probe scout retry-after 600
	[ "$(jq -r .until "$(bfile scout)")" = 2026-11-21T12:15:00Z ]
	run -0 at "$T0" brk-probe scout retry-after 3000
	[ "$(jq -r .until "$(bfile scout)")" = 2026-11-21T12:50:00Z ]
	run -0 at "$T0" brk-probe scout config
	run jq -r '.state, .cooldown_s, .until, .llm_fails' "$(bfile scout)"
	assert_output "$(printf 'open
7200
2026-11-21T14:00:00Z
6')"
	# an HTTP date, an hour and a half on; a Retry-After beyond a day
	# is held for a day
	for h in 'Sat, 21 Nov 2026 13:30:00 GMT=2026-11-21T13:30:00Z' \
		'999999=2026-11-22T12:00:00Z'; do
		heart-breaker reset --soul "$s" > /dev/null
		llm_script "{\"replies\":[{\"status\":429,\"headers\":{\"Retry-After\":\"${h%=*}\"}}]}"
		run forced_wake "$s"
		assert_failure 75
		[ "$(jq -r .until "$(bfile scout)")" = "${h#*=}" ]
	done
	# a Retry-After shorter than the cooldown: the breaker's own rules
	heart-breaker reset --soul "$s" > /dev/null
	llm_script '{"replies":[{"status":429,"headers":{"Retry-After":"5"}}]}'
	run -75 forced_wake "$s"
	run jq -r '.state, .until' "$(bfile scout)"
	assert_output "$(printf 'open\n2026-11-21T12:00:05Z')"
	# the account's quota used up: OpenAI's insufficient_quota,
	# Anthropic's credit balance; exit 75, held for max_cooldown
	for p in openai anthropic; do
		heart-breaker reset --soul "$s" > /dev/null
		hold_clear
		s=$(soul_file scout.yaml "llm: { provider: $p, timeout: 10s }")
		llm_script '{"replies":[{"status":429,"error_code":"insufficient_quota","error_type":"insufficient_quota","text":"You exceeded your current quota, please check your plan and billing details."}]}'
		[ $p = openai ] || llm_script '{"replies":[{"status":400,"error_type":"invalid_request_error","text":"Your credit balance is too low to access the Anthropic API."}]}'
		run forced_wake "$s"
		assert_failure 75
		assert_output --partial "answered HTTP 4"
		assert_output --partial "the account's quota or credit is used up: add credit or raise the limit with the provider"
		run jq -r '.state, .cooldown_s' "$(bfile scout)"
		assert_output "$(printf 'open\n7200')"
	done
}

@test "check, record and status without a soul go by the keys kept from the soul, and never change them" {
	s=$(soul_file scout.yaml 'heart:
  breaker: { threshold: 5, cooldown: 1h, max_cooldown: 4h }')
	at "$T0" heart-breaker record --soul "$s" llm-fail
	# three more without the soul: its threshold of 5 holds
	run -0 fails 3 scout
	assert_output ""
	run jq -c '[.state, .llm_fails, .base_s, .threshold, .max_cooldown_s, .cooldown_s]' "$(bfile scout)"
	assert_output '["closed",4,3600,5,14400,3600]'
	run -0 at "$T0" heart-breaker status scout
	assert_output --partial '"cooldown_s":3600,'
	assert_output --partial '"threshold":5,"max_cooldown_s":14400,"keys_from":"kept"}'
	run at "$T0" heart-breaker check scout -v
	assert_success
	assert_output "scout: closed: a wake may go (llm 4/5, tool 0/5 failures, 4/10 within 1h; the keys kept from its soul)"
	# the fifth opens it for the soul's hour
	run -0 fails 1 scout
	assert_output --partial '"event":"open","agent":"scout","trigger":"llm","cooldown_s":3600,'
	run at "$T0" heart-breaker check scout
	assert_failure 1
	at "$T0" heart-breaker reset scout
	run jq -c '[.state, .base_s, .threshold, .max_cooldown_s, .cooldown_s]' "$(bfile scout)"
	assert_output '["closed",3600,5,14400,3600]'
}

@test "with no soul and no keys kept, the breaker goes by the defaults, says so, and keeps none" {
	meet fresh	# known, no soul given and none kept
	fails 1 fresh
	run jq -c '[.base_s, .threshold, .max_cooldown_s, .cooldown_s]' "$(bfile fresh)"
	assert_output '[0,0,0,900]'
	run -0 at "$T0" heart-breaker status fresh
	assert_output --partial '"cooldown_s":900,'
	assert_output --partial '"threshold":3,"max_cooldown_s":7200,"keys_from":"default"}'
	run -0 at "$T0" heart-breaker check fresh -v
	assert_output "fresh: closed: a wake may go (llm 1/3, tool 0/3 failures, 1/10 within 1h; the default keys: no soul given, none kept)"
	run -0 at "$T0" script -qec "heart-breaker status fresh" /dev/null
	assert_line --index 2 --partial "heart-breaker: 1 agent shown with the default keys (3 failures, 15m, 2h): no soul given, none kept; give --soul"
}

@test "a provider that keeps failing waits 15m, 30m, 1h, 2h, 2h; a good probe closes and the next open is 15m again" {
	meet scout
	run -0 fails 3 scout
	ev=$output
	assert_output --partial '"cooldown_s":900,'
	seen=900
	for want in 1800 3600 7200 7200; do
		t=$(until_of "$ev")
		run at "$(plus "$t" -1)" heart-breaker check scout
		assert_failure 1
		run at "$t" heart-breaker check scout
		assert_success
		assert_output '{"event":"half_open","agent":"scout","at":"'"${t/ /T}Z"'"}'
		run at "$t" heart-breaker record scout llm-fail --reason "HTTP 503"
		assert_success
		ev=$output
		# one jq: the event checked, its cooldown printed
		c=$(echo "$ev" | jq -e 'if .event == "open" and
		    .from == "half_open" and .trigger == "llm" and
		    .reason == "HTTP 503" and
		    (.until | fromdate) - (.at | fromdate) == .cooldown_s
		    then .cooldown_s else false end')
		seen="$seen $c"
	done
	[ "$seen" = "900 1800 3600 7200 7200" ]
	t=$(until_of "$ev")
	run at "$t" heart-breaker check scout
	assert_success
	run -0 at "$t" heart-breaker record scout ok
	assert_output --regexp '^\{"event":"closed","agent":"scout","by":"probe","at":'
	run jq -c '[.state, .llm_fails, .tool_fails, .cooldown_s, .until]' "$(bfile scout)"
	assert_output '["closed",0,0,900,null]'
	T0=$t
	run -0 fails 3 scout
	assert_output --partial '"cooldown_s":900'
}

# flap N AGENT [START [STEP [ARGS...]]]: N failures of AGENT, each
# followed by a success, STEP seconds apart (default 120) from START
# (default T0): a provider that fails every other request; the last
# record's output in $output (not i: bats's run sets an i of its own)
flap() {
	local k n=$1 a=$2 t0=${3:-$T0} step=${4:-120} t
	shift $(($# < 4 ? $# : 4))
	for ((k = 0; k < n; k++)); do
		t=$(plus "$t0" $((2 * k * step)))
		run -0 at "$t" heart-breaker record "$a" llm-fail \
		    --reason "HTTP 503" "$@" || return
		fail_out=$output
		t=$(plus "$t0" $(((2 * k + 1) * step)))
		run -0 at "$t" heart-breaker record "$a" ok "$@" || return
	done
	output=$fail_out
}

@test "a provider that fails every other request: 10 failures within an hour open the breaker with the window's reason, 9 do not" {
	meet scout
	# 9 failures and 9 successes in 36 minutes: never 3 in a row
	flap 9 scout
	assert_output ""
	run -0 jq -c '[.state, .llm_fails, (.failed_at | length)]' "$(bfile scout)"
	assert_output '["closed",0,9]'
	run -0 at "2026-11-21 12:36:00" heart-breaker check scout -v
	assert_output "scout: closed: a wake may go (llm 0/3, tool 0/3 failures, 9/10 within 1h; the default keys: no soul given, none kept)"
	# the tenth, 38 minutes in, opens it for the base cooldown
	run -0 at "2026-11-21 12:36:00" heart-breaker record scout llm-fail --reason "HTTP 503"
	assert_output '{"event":"open","agent":"scout","trigger":"llm","cooldown_s":900,"until":"2026-11-21T12:51:00Z","reason":"10 failures within 1h: HTTP 503","from":"closed","kind":"window","llm_fails":1,"tool_fails":0,"at":"2026-11-21T12:36:00Z"}'
	run -1 at "2026-11-21 12:37:00" heart-breaker check scout -v
	assert_output "scout: open (llm: 10 failures within 1h: HTTP 503): no wake until 2026-11-21T12:51:00Z (14m)"
	run -0 at "2026-11-21 12:37:00" heart-breaker status scout
	assert_output --partial '"state":"open","llm_fails":1,'
	assert_output --partial '"reason":"10 failures within 1h: HTTP 503","window_fails":10,"window_failures":10,"window_s":3600,'
	# a good probe closes it, and the window still holds ten
	# failures: the next failure within the hour opens it again
	run -0 at "2026-11-21 12:51:00" heart-breaker check scout
	run -0 at "2026-11-21 12:51:00" heart-breaker record scout ok
	assert_output --partial '"event":"closed","agent":"scout","by":"probe"'
	run -0 at "2026-11-21 12:52:00" heart-breaker record scout llm-fail
	assert_output --partial '"event":"open","agent":"scout","trigger":"llm","cooldown_s":900,"until":"2026-11-21T13:07:00Z","reason":"10 failures within 1h: llm failure","from":"closed"'
	# once they are older than the hour, a failure only counts
	run -0 at "2026-11-21 13:07:00" heart-breaker check scout
	run -0 at "2026-11-21 13:07:00" heart-breaker record scout ok
	run -0 at "2026-11-21 13:40:00" heart-breaker record scout llm-fail
	assert_output ""
	run -0 at "2026-11-21 13:40:00" heart-breaker status scout
	assert_output --partial '"state":"closed",'
	assert_output --partial '"window_fails":2,'
	# reset empties it
	run -0 heart-breaker reset scout
	run -0 at "2026-11-21 13:41:00" heart-breaker record scout llm-fail
	run -0 jq -c '[.state, .failed_at]' "$(bfile scout)"
	assert_output '["closed",["2026-11-21T13:41:00Z"]]'
}

@test "failures older than the window do not count: a failure an hour after the first is the tenth within none" {
	meet scout other
	# 9 failures between 12:00 and 12:32, the tenth at 13:00 and at
	# 12:59:59; the window holds what is newer than an hour
	flap 9 scout "$T0" 120
	run -0 at "2026-11-21 13:00:00" heart-breaker record scout llm-fail
	assert_output ""
	run -0 at "2026-11-21 13:00:00" heart-breaker status scout
	assert_output --partial '"state":"closed",'
	assert_output --partial '"window_fails":9,'
	flap 9 other "$T0" 120
	run -0 at "2026-11-21 12:59:59" heart-breaker record other llm-fail
	assert_output --partial '"event":"open","agent":"other","trigger":"llm"'
	assert_output --partial '"reason":"10 failures within 1h: llm failure"'
	# late at night, one failure an hour never opens it
	meet night
	for h in 0 1 2 3 4 5 6 7 8 9 10 11; do
		run -0 at "$(plus "$T0" $((h * 3600)))" heart-breaker record night llm-fail
		assert_output ""
		run -0 at "$(plus "$T0" $((h * 3600 + 60)))" heart-breaker record night ok
	done
	run -0 jq -c '[.state, (.failed_at | length)]' "$(bfile night)"
	assert_output '["closed",1]'
}

@test "tool failures and LLM failures share the window; the opening failure names the trigger" {
	meet scout
	flap 5 scout
	for w in 0 1 2 3; do
		run -0 at "$(plus "$T0" $((1200 + 120 * w)))" heart-breaker record scout tool-fail --reason "grep: exit 2"
		assert_output ""
		run -0 at "$(plus "$T0" $((1260 + 120 * w)))" heart-breaker record scout ok
	done
	run -0 at "2026-11-21 12:30:00" heart-breaker record scout tool-fail --reason "grep: exit 2"
	assert_output --partial '"event":"open","agent":"scout","trigger":"tool","cooldown_s":900,"until":"2026-11-21T12:45:00Z","reason":"10 failures within 1h: grep: exit 2"'
}

@test "the soul's breaker.window sets the window, kept with the breaker; false turns it off" {
	s=$(soul_file scout.yaml 'heart:
  breaker: { threshold: 3, window: { failures: 4, within: 10m } }')
	flap 3 scout "$T0" 60 --soul "$s"
	assert_output ""
	run -0 jq -c '[.window_failures, .window_s]' "$(bfile scout)"
	assert_output '[4,600]'
	# the fourth without the soul: the kept window holds
	run -0 at "2026-11-21 12:06:00" heart-breaker record scout llm-fail
	assert_output --partial '"event":"open","agent":"scout","trigger":"llm","cooldown_s":900,"until":"2026-11-21T12:21:00Z","reason":"4 failures within 10m: llm failure"'
	# four failures eleven minutes apart never fill it
	s=$(soul_file slow.yaml 'name: slow
heart:
  breaker: { window: { failures: 4, within: 10m } }')
	flap 6 slow "$T0" 330 --soul "$s"
	assert_output ""
	# off: twenty failures every other request, never opened
	s=$(soul_file off.yaml 'name: off
heart:
  breaker: { window: false }')
	flap 20 off "$T0" 30 --soul "$s"
	assert_output ""
	run -0 jq -c '[.state, .window_failures, (.failed_at | length)]' "$(bfile off)"
	assert_output '["closed",0,0]'
	run -0 at "2026-11-21 12:30:00" heart-breaker check off -v
	assert_output "off: closed: a wake may go (llm 0/3, tool 0/3 failures, no window; the keys kept from its soul)"
}

@test "heart-wake feeds the window: a model that fails every other wake is stopped at the tenth failure, and no request goes while open" {
	llm_start
	s=$(soul_file scout.yaml 'llm: { timeout: 10s }')
	llm_script '{"replies":[{"status":500,"text":"overloaded"},{"text":"[IDLE]"}],"cycle":true}'
	for w in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do
		if ((w % 2 == 0)); then
			run -75 forced_wake "$s" "$(plus "$T0" $((120 * w)))"
		else
			run -0 forced_wake "$s" "$(plus "$T0" $((120 * w)))"
		fi
	done
	# nine failed wakes, never two in a row: closed
	run -0 jq -c '[.state, .llm_fails, (.failed_at | length)]' "$(bfile scout)"
	assert_output '["closed",0,9]'
	run -75 forced_wake "$s" "2026-11-21 12:36:00"
	run -0 jq -r '.state, .reason' "$(bfile scout)"
	assert_output --regexp '^open
10 failures within 1h: .*HTTP 500'
	[ "$(llm_count)" -eq 19 ]
	run -0 forced_wake "$s" "2026-11-21 12:38:00"
	[ "$(echo "$output" | jq -r .status)" = open ]
	[ "$(llm_count)" -eq 19 ]
}

@test "a bad breaker.window is refused with the soul's file, line and key, exit 78" {
	meet scout
	for w in '{ failures: 0 }=heart.breaker.window.failures: must be at least 1' \
	    '{ failures: 101 }=heart.breaker.window.failures: must be at most 100' \
	    '{ failures: many }=heart.breaker.window.failures: must be a whole number' \
	    '{ within: soon }=heart.breaker.window.within: bad duration '"'soon'" \
	    '{ within: 0s }=heart.breaker.window.within: must be longer than 0s' \
	    '10=heart.breaker.window: must be a mapping of failures and within'; do
		s=$(soul_file bad.yaml "heart:
  breaker: { window: ${w%%=*} }")
		run -78 heart-breaker record --soul "$s" llm-fail
		assert_output --partial "$s:2:"
		assert_output --partial "${w#*=}"
		run -78 heart-breaker check --soul "$s"
		assert_output --partial "${w#*=}"
	done
	s=$(soul_file odd.yaml 'heart:
  breaker: { window: { failures: 5, within: 1h, per: agent } }')
	run -0 heart-breaker check --soul "$s"
	assert_output --partial "unknown key 'per' in heart.breaker.window (ignored)"
}

@test "a breaker.json from before the window reads as no failure in it, and gets one" {
	file_only
	meet scout
	fails 2 scout
	f=$(bfile scout)
	jq -c 'del(.failed_at, .window_failures, .window_s)' "$f" > "$f.old"
	mv "$f.old" "$f"
	run -0 at "$T0" heart-breaker status scout
	assert_output --partial '"llm_fails":2,'
	assert_output --partial '"window_fails":0,"window_failures":10,"window_s":3600,'
	run -0 at "$T0" heart-breaker record scout ok
	run -0 at "$T0" heart-breaker record scout llm-fail
	run -0 jq -c '[.llm_fails, .failed_at, .window_failures]' "$f"
	assert_output '[1,["2026-11-21T12:00:00Z"],null]'
}

@test "open refuses until the cooldown has passed, then grants exactly one probe" {
	meet scout
	fails 3 scout
	run at "2026-11-21 12:14:59" heart-breaker check scout -v
	assert_failure 1
	assert_output "scout: open (llm: HTTP 429): no wake until 2026-11-21T12:15:00Z (1s)"
	run at "2026-11-21 12:15:00" heart-breaker check scout -v
	assert_success
	assert_line --index 0 --partial '"event":"half_open"'
	assert_line --index 1 --partial 'scout: half_open: this caller holds the probe'
	run at "2026-11-21 12:15:00" heart-breaker check scout -v
	assert_failure 1
	assert_output --partial 'another caller holds the probe; the next may go at 2026-11-21T12:25:00Z'
	run jq -r '.state, .probe_at, .until' "$(bfile scout)"
	assert_output "$(printf 'half_open\n2026-11-21T12:15:00Z\n2026-11-21T12:25:00Z')"
}

@test "12 processes checking a half-open breaker at once: exactly one is let through, every run" {
	for run in $(repeats 5); do
		state_clear
		rm -f "$BATS_TEST_TMPDIR"/rc.*
		meet herd
		fails 3 herd
		# odd runs: open with its cooldown over; even runs: half-open
		# with a dead probe whose lease has run out
		t="2026-11-21 12:15:00"
		if ((run % 2 == 0)); then
			at "$t" heart-breaker check herd
			t="2026-11-21 12:25:00"
		fi
		for p in $(seq 12); do
			( rc=0
			  at "$t" heart-breaker check herd || rc=$?
			  echo $rc > "$BATS_TEST_TMPDIR/rc.$p" ) >/dev/null &
		done
		wait
		run sort "$BATS_TEST_TMPDIR"/rc.*
		assert_output "$(printf '0\n1\n1\n1\n1\n1\n1\n1\n1\n1\n1\n1')"
		run jq -r '.state, .probe_at' "$(bfile herd)"
		assert_output "$(printf 'half_open\n%s' "$(date -u -d "$t" +%FT%TZ)")"
	done
}

@test "a probe holder killed with kill -9 blocks others only for the 10-minute lease" {
	meet pb
	fails 3 pb
	t="2026-11-21 12:15:00"
	# exec'd, so that $! is the holder itself
	( at "$t" exec brk-probe pb hold ) > "$BATS_TEST_TMPDIR/holder" &
	holder=$!
	wait_until 5 test -s "$BATS_TEST_TMPDIR/holder"
	run cat "$BATS_TEST_TMPDIR/holder"
	assert_output probe
	jq -e --argjson pid "$holder" '.state == "half_open" and .probe_pid == $pid' "$(bfile pb)"
	kill -9 "$holder"
	wait "$holder" || true
	run at "$(plus "$t" 60)" heart-breaker check pb -v
	assert_failure 1
	assert_output --partial "another caller holds the probe; the next may go at 2026-11-21T12:25:00Z"
	run at "$(plus "$t" 599)" heart-breaker check pb
	assert_failure 1
	run at "$(plus "$t" 600)" heart-breaker check pb
	assert_success
	run at "$(plus "$t" 600)" heart-breaker check pb
	assert_failure 1
	run -0 at "$(plus "$t" 610)" heart-breaker record pb ok
	assert_output --partial '"event":"closed"'
	run at "$(plus "$t" 610)" heart-breaker check pb
	assert_success
}

@test "a script granted the probe and killed with kill -9 never reports; the lease frees the probe" {
	meet pb
	fails 3 pb
	t="2026-11-21 12:15:00"
	at "$t" sh -c 'heart-breaker check pb || exit 9
		echo $$ > "$1"; exec sleep 60' sh "$BATS_TEST_TMPDIR/pid" &
	wait_until 5 test -s "$BATS_TEST_TMPDIR/pid"
	kill -9 "$(cat "$BATS_TEST_TMPDIR/pid")"
	wait || true
	run at "$(plus "$t" 300)" heart-breaker check pb
	assert_failure 1
	run at "$(plus "$t" 600)" heart-breaker check pb
	assert_success
}

@test "a probe handed back through the library may be taken by the next caller at once" {
	meet gb
	fails 3 gb
	run at "2026-11-21 12:15:00" brk-probe gb giveback
	assert_success
	assert_output "probe given back"
	run jq -r '.state, .probe_at' "$(bfile gb)"
	assert_output "$(printf 'half_open\nnull')"
	run at "2026-11-21 12:15:01" heart-breaker check gb
	assert_success
	# a probe granted to another process is not this one's to hand back
	run at "2026-11-21 12:15:02" brk-probe gb giveback
	assert_failure 1
	assert_output refused
	run jq -r '.probe_at' "$(bfile gb)"
	assert_output "2026-11-21T12:15:01Z"
}

@test "outcomes recorded while open are counted but do not close or reopen it" {
	meet scout
	fails 3 scout
	run -0 at "2026-11-21 12:05:00" heart-breaker record scout ok
	assert_output ""
	run jq -c '[.state, .llm_fails, .until]' "$(bfile scout)"
	assert_output '["open",0,"2026-11-21T12:15:00Z"]'
	run -0 at "2026-11-21 12:06:00" heart-breaker record scout tool-fail --reason "grep: exit 2"
	assert_output ""
	run jq -c '[.state, .tool_fails, .reason, .cooldown_s]' "$(bfile scout)"
	assert_output '["open",1,"grep: exit 2",900]'
	run at "2026-11-21 12:10:00" heart-breaker check scout
	assert_failure 1
}

@test "a record while half-open is the probe's result, whoever sends it" {
	meet scout
	fails 3 scout
	run -0 at "2026-11-21 12:20:00" heart-breaker record scout tool-fail
	assert_line --index 0 --partial '"event":"half_open"'
	assert_line --index 1 --partial '"event":"open","agent":"scout","trigger":"tool","cooldown_s":1800'
	assert_line --index 1 --partial '"reason":"tool failure","from":"half_open"'
}

@test "status shows state, counts, cooldown, until and reason: JSON lines when piped" {
	meet alpha beta
	fails 3 alpha
	fails 1 beta tool-fail
	run at "2026-11-21 12:05:00" heart-breaker status
	assert_success
	assert_line --index 0 '{"agent":"alpha","state":"open","llm_fails":3,"tool_fails":0,"cooldown_s":900,"until":"2026-11-21T12:15:00Z","wait_s":600,"probe_at":null,"trigger":"llm","reason":"HTTP 429","window_fails":3,"window_failures":10,"window_s":3600,"threshold":3,"max_cooldown_s":7200,"keys_from":"default"}'
	assert_line --index 1 '{"agent":"beta","state":"closed","llm_fails":0,"tool_fails":1,"cooldown_s":900,"until":null,"wait_s":0,"probe_at":null,"trigger":"","reason":"HTTP 429","window_fails":1,"window_failures":10,"window_s":3600,"threshold":3,"max_cooldown_s":7200,"keys_from":"default"}'
	[ "${#lines[@]}" -eq 2 ]
	# past the cooldown it is half-open, though the file is not rewritten
	cp "$(bfile alpha)" "$BATS_TEST_TMPDIR/before"
	run -0 at "2026-11-21 12:15:00" heart-breaker status alpha
	assert_output --partial '"state":"half_open"'
	cmp "$(bfile alpha)" "$BATS_TEST_TMPDIR/before"
}

@test "status draws an aligned table on a terminal" {
	meet alpha
	fails 3 alpha
	run at "2026-11-21 12:05:00" script -qec "heart-breaker status" /dev/null
	assert_success
	assert_line --index 0 --regexp '^AGENT +STATE +LLM +TOOL +COOLDOWN +UNTIL +LEFT +TRIGGER +REASON'
	assert_line --index 1 --regexp '^alpha +open +3 +0 +15m +2026-11-21T12:15:00Z +10m +llm +HTTP 429'
}

@test "the status table stays aligned for ids of the 64 characters allowed" {
	long=$(printf 'b%.0s' $(seq 64))
	meet "$long" a
	fails 3 "$long"
	fails 1 a
	run at "2026-11-21 12:05:00" script -qec "heart-breaker status" /dev/null
	assert_success
	[ "${#lines[@]}" -eq 4 ]
	# each row's state starts under the header's STATE
	st=$(echo "${lines[0]}" | grep -bo STATE | cut -d: -f1)
	[ "$(echo "${lines[1]}" | grep -bo closed | cut -d: -f1)" -eq "$st" ]
	[ "$(echo "${lines[2]}" | grep -bo ' open ' | cut -d: -f1)" -eq $((st - 1)) ]
	assert_line --index 2 --regexp "^b{64} open +3 +0 +15m +2026-11-21T12:15:00Z"
}

@test "an agent never fed an outcome is closed with zero counts, and check writes nothing" {
	run -64 heart-breaker check fresh
	[ ! -e "$HEART_STATE_DIR/agents/fresh" ]
	# known to heart (here, by its counter), its breaker is closed
	meet fresh
	run -0 heart-breaker check fresh
	assert_output ""
	[ ! -e "$(bfile fresh)" ]
	! redis_store || [ "$(rcli --raw EXISTS 'heart:{fresh}:breaker.json')" = 0 ]
	run -0 heart-breaker status fresh
	assert_line --index 0 --partial '"agent":"fresh","state":"closed","llm_fails":0,"tool_fails":0,"cooldown_s":900'
	run -0 heart-breaker status --soul "$SOULS/travel_rescue.yaml"
	assert_output --partial '"agent":"travel_rescue","state":"closed"'
	run -0 heart-breaker record fresh ok
	assert_output ""
	run jq -c '[.state, .llm_fails, .tool_fails, .cooldown_s, .until]' "$(bfile fresh)"
	assert_output '["closed",0,0,900,null]'
	run heart-breaker status
	assert_success
	assert_output --partial '"agent":"fresh"'
}

@test "breaker.json carries what heart-pulse and the dashboard read, and is private" {
	file_only
	meet scout
	fails 3 scout
	jq -e 'has("state") and has("llm_fails") and has("tool_fails") and
	    has("cooldown_s") and has("until") and has("trigger") and
	    has("reason") and .state == "open"' "$(bfile scout)"
	run stat -c %a "$(bfile scout)" "$HEART_STATE_DIR/agents/scout/breaker.lock"
	assert_output "$(printf '600\n600')"
}

@test "reset closes the breaker by hand and prints the transition" {
	meet scout
	fails 3 scout
	run heart-breaker reset scout
	assert_success
	assert_output --regexp '^\{"event":"closed","agent":"scout","by":"reset","at":"[0-9T:Z-]{20}"\}$'
	run jq -c '[.state, .llm_fails, .tool_fails, .cooldown_s, .reason]' "$(bfile scout)"
	assert_output '["closed",0,0,900,""]'
	run heart-breaker check scout
	assert_success
	run -0 heart-breaker reset scout
	assert_output ""
}

@test "record of an agent heart has never met says no such agent, exit 64, and starts none; the store's agents are known" {
	for w in ok llm-fail tool-fail; do
		run heart-breaker record scuot "$w" --reason "HTTP 429"
		assert_failure 64
		assert_output "heart-breaker: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)"
	done
	[ ! -e "$HEART_STATE_DIR/agents/scuot" ]
	! redis_store || [ "$(rcli --raw KEYS 'heart:{scuot}:*')" = "" ]
	# with its soul before its first wake; then by its name
	run -0 at "$T0" heart-breaker record --soul "$(soul_file scout.yaml 'heart: {}')" llm-fail
	run -0 at "$T0" heart-breaker record scout llm-fail
	# this host's files of it gone: a Redis shared by the fleet still
	# knows it (another host woke it); the files were all heart knew
	rm -rf "$HEART_STATE_DIR/agents/scout"
	if redis_store; then
		run -0 at "$T0" heart-breaker record scout llm-fail
		assert_output --partial '"event":"open","agent":"scout"'
	else
		run heart-breaker record scout llm-fail
		assert_failure 64
	fi
}

@test "check of an agent heart has never met says no such agent, exit 64: a misspelt name is no closed breaker" {
	run -64 heart-breaker check scuot
	assert_output "heart-breaker: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)"
	run -64 heart-breaker check -v scuot
	[ ! -e "$HEART_STATE_DIR/agents/scuot" ]
	# with its soul before its first wake; then by its name once met
	run -0 heart-breaker check --soul "$(soul_file scout.yaml 'heart: {}')"
	meet scout
	run -0 heart-breaker check scout
}

@test "status and reset of an agent heart does not know say so, exit 64, and create nothing" {
	meet scout
	fails 1 scout
	run heart-breaker status scuot
	assert_failure 64
	assert_output "heart-breaker: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)"
	run --separate-stderr heart-breaker status scout scuot
	assert_failure 64
	assert_output --partial '"agent":"scout","state":"closed","llm_fails":1'
	[ "$stderr" = "heart-breaker: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)" ]
	run heart-breaker reset scuot
	assert_failure 64
	assert_output --partial "scuot: no such agent"
	[ ! -e "$HEART_STATE_DIR/agents/scuot" ]
	! redis_store || [ "$(rcli --raw KEYS 'heart:{scuot}:*')" = "" ]
	# an agent a soul names is known, woken or not
	run heart-breaker status --soul "$SOULS/travel_rescue.yaml"
	assert_success
	assert_output --partial '"agent":"travel_rescue","state":"closed"'
}

@test "a reason is kept as one line of valid UTF-8, at most 255 bytes" {
	meet scout
	long=$(printf 'é%.0s' $(seq 200))
	at "$T0" heart-breaker record scout llm-fail --reason "$(printf 'bad\nline\377 é')"
	run jq -r .reason "$(bfile scout)"
	assert_output "bad line? é"
	at "$T0" heart-breaker record scout llm-fail --reason "$long"
	run jq -r '.reason | length, (. | utf8bytelength)' "$(bfile scout)"
	assert_output "$(printf '127\n254')"
}

@test "a clock set back never stretches the cooldown" {
	meet scout
	fails 3 scout
	run at "2026-11-20 12:00:00" heart-breaker check scout
	assert_failure 1
	run jq -r .until "$(bfile scout)"
	assert_output "2026-11-20T12:15:00Z"
	run at "2026-11-20 12:15:00" heart-breaker check scout
	assert_success
}

@test "an unknown outcome word is refused with exit 64 and changes nothing" {
	meet scout
	fails 2 scout
	cp "$(bfile scout)" "$BATS_TEST_TMPDIR/before"
	for w in fail OK llm llm-ok ''; do
		run heart-breaker record scout "$w"
		assert_failure 64
		assert_output --partial "unknown outcome '$w' (use ok, llm-fail or tool-fail)"
	done
	cmp "$(bfile scout)" "$BATS_TEST_TMPDIR/before"
}

@test "hostile agent ids are refused before they become paths" {
	for id in ../etc passwd/x .hidden .. 'a+b' 'a#b' "$(printf 'a%.0s' $(seq 65))" 'a b'; do
		for cmd in check "record" status reset; do
			if [ "$cmd" = record ]; then
				run -64 heart-breaker record "$id" llm-fail
			else
				run heart-breaker "$cmd" "$id"
			fi
			assert_failure 64
			assert_output --partial "invalid agent id"
		done
	done
	[ ! -e "$HEART_STATE_DIR" ]
}

@test "a corrupt breaker.json, its version before too, is named, exit 74 everywhere, and never replaced" {
	file_only
	meet scout other
	fails 3 scout
	f=$(bfile scout)
	printf '{"state":"op' > "$f"
	printf '{"state":"cl' > "${f%/*}/.breaker.json.tmp"
	cp "$f" "$BATS_TEST_TMPDIR/before"
	for cmd in "check scout" "record scout ok" "record scout llm-fail" \
	    "status scout" "reset scout"; do
		run heart-breaker $cmd
		assert_failure 74
		assert_output --regexp "^heart-breaker: .*/agents/scout/breaker.json: not valid JSON at line 1"
	done
	cmp "$f" "$BATS_TEST_TMPDIR/before"
	# status goes on with the other agents, and still fails
	fails 1 other
	run heart-breaker status
	assert_failure 74
	assert_output --partial '"agent":"other"'
}

@test "a hand-edited breaker.json with a wrong field is refused, not reset" {
	file_only
	meet scout
	edits=('state = "ajar"' 'llm_fails = "many"' 'until = "soon"'
	    'until = null' 'trigger = "disk"' 'cooldown_s = -5' 'state = 3'
	    'failed_at = "soon"' 'failed_at = ["2026-11-21T12:00:00Z", 5]'
	    'window_failures = 500')
	fails 3 scout
	f=$(bfile scout)
	# the open breaker's file edited each way: one jq, a line an edit
	filter=$(printf '(.%s), ' "${edits[@]}")
	mapfile -t docs < <(jq -c "${filter%, }" "$f")
	[ "${#docs[@]}" -eq "${#edits[@]}" ]
	for i in "${!edits[@]}"; do
		edit=${edits[i]}
		printf '%s\n' "${docs[i]}" > "$f"
		cp "$f" "$BATS_TEST_TMPDIR/before"
		run at "$T0" heart-breaker check scout
		assert_failure 74
		assert_output --partial "breaker.json: field '${edit%% *}' is missing or not valid; fix or remove the file by hand"
		run at "$T0" heart-breaker record scout ok
		assert_failure 74
		cmp "$f" "$BATS_TEST_TMPDIR/before"
	done
}

@test "a misspelt command is named, with the commands there are, exit 64" {
	run --separate-stderr heart-breaker chekc scout
	assert_failure 64
	[ "$stderr" = "heart-breaker: chekc: no such command (use check, record, status or reset; heart-breaker --help shows each)" ]
	assert_output ""
}

@test "bad usage gives exit 64 and the synopsis; a bad soul gives 78" {
	run heart-breaker
	assert_failure 64
	assert_output --partial "usage: heart-breaker check"
	run heart-breaker frob scout
	assert_failure 64
	run heart-breaker check
	assert_failure 64
	run heart-breaker record scout
	assert_failure 64
	run heart-breaker record
	assert_failure 64
	run heart-breaker check scout --reason why
	assert_failure 64
	assert_output --partial "--reason goes with record only"
	run heart-breaker check scout --soul "$SOULS/travel_rescue.yaml"
	assert_failure 64
	assert_output --partial "differ"
	run heart-breaker record scout llm-fail extra
	assert_failure 64
	assert_output --partial "usage: heart-breaker"
	s=$(soul_file bad.yaml 'heart:
  breaker: { threshold: 0 }')
	run heart-breaker check --soul "$s"
	assert_failure 78
	assert_output --partial "threshold"
	[ ! -e "$HEART_STATE_DIR" ]
}

@test "an unwritable state directory gives a clear error and exit 74" {
	file_only
	printf x > "$BATS_TEST_TMPDIR/file"
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/file run heart-breaker record scout llm-fail
	assert_failure 74
	assert_output --partial "heart-breaker: $BATS_TEST_TMPDIR/file"
}

@test "kill -9 of checkers and recorders in a loop leaves breaker.json whole and sound" {
	meet crash
	kept=()
	# the agent is known before the first kill: on a loaded machine
	# every round's kill may come before its first record is done
	heart-breaker record crash llm-fail > /dev/null
	for round in $(repeats 20 10); do
		( for ((i = 0; i < 10; i++)); do
			heart-breaker record crash llm-fail
			heart-breaker check crash
			heart-breaker reset crash
		  done ) >/dev/null &
		pid=$!
		sleep 0.0$((RANDOM % 9 + 1))
		kill_running "$pid"
		wait "$pid" 2>/dev/null || true
		f=$(bfile crash)
		[ ! -e "$f" ] || keep "$f"	# as this round's kill left it
	done
	all_kept '.state | IN("closed", "open", "half_open")'
	run heart-breaker status crash
	assert_success
}

@test "heart-breaker links neither libcurl nor libmosquitto" {
	run ldd "$(command -v heart-breaker)"
	assert_success
	refute_output --partial libcurl
	refute_output --partial libmosquitto
	assert_output --partial libjansson
}

@test "status --prom prints each breaker's state, failures, cooldown and next probe for node_exporter" {
	meet alpha beta
	fails 3 alpha
	fails 1 beta tool-fail
	run at "2026-11-21 12:05:00" heart-breaker status --prom
	assert_success
	assert_line 'heart_breaker_state{agent="alpha",state="open"} 1'
	assert_line 'heart_breaker_state{agent="alpha",state="closed"} 0'
	assert_line 'heart_breaker_state{agent="beta",state="closed"} 1'
	assert_line 'heart_breaker_failures{agent="alpha",trigger="llm"} 3'
	assert_line 'heart_breaker_failures{agent="beta",trigger="tool"} 1'
	assert_line 'heart_breaker_cooldown_seconds{agent="alpha"} 900'
	assert_line "heart_breaker_next_probe_timestamp_seconds{agent=\"alpha\"} $(date -u -d '2026-11-21 12:15:00' +%s)"
	assert_line 'heart_breaker_next_probe_timestamp_seconds{agent="beta"} 0'
	[ "$(echo "$output" | grep -c '^# TYPE .* gauge$')" -eq 4 ]
	f=$BATS_TEST_TMPDIR/heart_breaker.prom
	run at "2026-11-21 12:05:00" heart-breaker status --prom "$f"
	assert_success
	assert_output ""
	grep -qx 'heart_breaker_state{agent="alpha",state="open"} 1' "$f"
	run stat -c %a "$f"
	assert_output 644
	run heart-breaker check alpha --prom
	assert_failure 64
}
