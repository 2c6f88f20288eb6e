#!/usr/bin/env bats
# One hold per provider account (heart(7), Holds): a quota or key
# error holds every agent that sends to the same base URL with the same
# key, on every host that shares the store; one probe per period for
# the whole fleet; a success lifts it for all.

load helpers
bats_require_minimum_version 1.5.0

KEY='sk-test-HOLD-0123456789abcdef'
T0='2026-11-22 09:00:30'

setup_file() { heart_setup_file; }
teardown_file() { heart_teardown_file; }

setup() {
	heart_setup
	llm_start
	unset HEART_FLEET ANTHROPIC_API_KEY
	export OPENAI_API_KEY=$KEY
}

teardown() {
	llm_stop
	heart_teardown
}

# mksoul NAME: a soul due every minute, in $BATS_TEST_TMPDIR, printed
mksoul() {
	printf 'name: %s\nheart: { schedule: { interval: 1m } }\nllm: { timeout: 10s }\n' \
	    "$1" > "$BATS_TEST_TMPDIR/$1.yaml"
	echo "$BATS_TEST_TMPDIR/$1.yaml"
}

# wake SOUL TIME: a forced wake of SOUL at TIME
wake() {
	at "$2" heart-wake --soul "$1" --force
}

# holds: the store's hold document, as stored ({} when none)
holds() {
	if redis_store; then
		rcli GET 'heart:{*}:hold.json' | grep . || echo '{}'
	else
		cat "$HEART_STATE_DIR/hold.json" 2>/dev/null || echo '{}'
	fi
}

# used AGENT: the schedule chamber's count today
used() {
	heart-cap status "$1" --json | jq -r .chambers.schedule.used
}

# skipped SOUL TIME STATUS REGEX NEXT: a wake of SOUL at TIME ends
# STATUS, exit 0, its reason matching REGEX and its next try NEXT
skipped() {
	run -0 wake "$1" "$2"
	run -0 jq -r '.status, .reason, .next, .exit' <<< "$output"
	assert_line --index 0 "$3"
	assert_line --index 1 --regexp "$4"
	assert_line --index 2 "$5"
	assert_line --index 3 0
}

@test "a 402 holds every agent on the account: status held, zero requests, no slot used, the hold named; another key or URL is not held" {
	a=$(mksoul a) b=$(mksoul b) c=$(mksoul c)
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	run -75 wake "$a" "$T0"
	assert_output --partial "the account's quota or credit is used up"
	run -0 llm_count
	assert_output 1
	for s in "$b" "$c" "$a"; do
		next=2026-11-22T09:15:30Z
		# a's own breaker opened on the 402: it admits a's next wake
		# only at its probe, after the hold's (as --explain counts it)
		[ "$s" != "$a" ] || next=2026-11-22T11:00:30Z
		skipped "$s" '2026-11-22 09:01:30' held "^held: the account at $HEART_LLM_URL \(key [0-9a-f]{8}\) is out of credit \(HTTP 402\) since 2026-11-22T09:00:30Z; next probe at 2026-11-22T09:15:30Z" "$next"
	done
	run -0 at '2026-11-22 09:01:30' heart-wake --soul "$a" --explain --force --chamber schedule
	run -0 jq -c '[.would, .gates.breaker.until, .next]' <<< "$output"
	assert_output '["held","2026-11-22T11:00:30Z","2026-11-22T11:00:30Z"]'
	run -0 llm_count
	assert_output 1
	run -0 used b
	assert_output 0
	# --explain says so, and when the probe is
	run -0 at '2026-11-22 09:01:30' heart-wake --soul "$b" --explain --force --chamber schedule
	run -0 jq -c '[.would, .gates.hold.ok, .gates.hold.until, .next]' <<< "$output"
	assert_output '["held",false,"2026-11-22T09:15:30Z","2026-11-22T09:15:30Z"]'
	# a rehearsal says so too, with the request it would send
	run -0 at '2026-11-22 09:01:30' heart-wake --soul "$b" --force --dry-run
	run -0 jq -c '[.status, .dry_run, (.request != null)]' <<< "$output"
	assert_output '["held",true,true]'
	# a wake not due never reads the hold: not_due as ever
	run -0 at '2026-11-22 09:00:50' heart-wake --soul "$a"
	assert_output --partial '"status":"not_due"'
	# a due one, unforced, is held all the same
	run -0 at '2026-11-22 09:01:50' heart-wake --soul "$b"
	assert_output --partial '"status":"not_due"'
	run -0 jq -r .next <<< "$output"
	run -0 at "$output" heart-wake --soul "$b"
	assert_output --partial '"status":"held"'
	# another key, another base URL: other accounts
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	OPENAI_API_KEY=sk-test-OTHER-42 run -0 wake "$b" '2026-11-22 09:02:30'
	assert_output --partial '"status":"idle"'
	HEART_LLM_URL="${HEART_LLM_URL%/v1}/v2" run -0 wake "$c" \
	    '2026-11-22 09:02:30'
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 3
	# and neither success lifted this account's hold
	run -0 wake "$c" '2026-11-22 09:03:30'
	assert_output --partial '"status":"held"'
	run -0 llm_count
	assert_output 3
}

@test "a 401 holds the account too; a 404 (the agent's model) does not" {
	a=$(mksoul a) b=$(mksoul b)
	llm_script '{"replies":[{"status":404,"text":"The model `double` does not exist","error_code":"model_not_found"}]}'
	run -78 wake "$a" "$T0"
	run -0 holds
	run -0 jq -c '.holds // []' <<< "$output"
	assert_output '[]'
	llm_script '{"replies":[{"status":401,"text":"Incorrect API key provided"}]}'
	run -78 wake "$b" "$T0"
	run -0 wake "$a" '2026-11-22 09:00:40'
	run -0 jq -r '.status, .reason' <<< "$output"
	assert_line --index 0 held
	assert_line --index 1 --partial 'refuses its key (HTTP 401)'
	run -0 llm_count
	assert_output 2
}

@test "one probe per period for the whole fleet, the provider's reset first; a success lifts the hold for all" {
	for n in a b c d e f; do mksoul $n > /dev/null; done
	S=$BATS_TEST_TMPDIR
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	run -75 wake "$S/a.yaml" "$T0"
	# the period ends: of five wakes at once, exactly one probes
	for n in b c d e f; do
		wake "$S/$n.yaml" '2026-11-22 09:16:00' > "$S/$n.out" 2>&1 &
	done
	wait
	run -0 llm_count
	assert_output 2
	run -0 bash -c "cat '$S'/[b-f].out | grep -c '\"status\":\"held\"'"
	assert_output 4
	# the probe failed again: the next is a period after it
	run -0 wake "$S/b.yaml" '2026-11-22 09:30:59'
	assert_output --partial 'next probe at 2026-11-22T09:31:00Z'
	# a Retry-After is the provider's reset: the next probe then
	llm_script '{"replies":[{"status":402,"text":"Payment required","headers":{"Retry-After":"3600"}}]}'
	for n in b c d e f; do
		run wake "$S/$n.yaml" '2026-11-22 09:31:00'
		[ "$status" -eq 0 ] || [ "$status" -eq 75 ]
	done
	run -0 llm_count
	assert_output 3
	run -0 holds
	run -0 jq -r '.holds[0].probe' <<< "$output"
	assert_output 2026-11-22T10:31:00Z
	# credit is back: the probe succeeds and the hold lifts for all
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	ok=0
	for n in b c d e f; do
		run -0 wake "$S/$n.yaml" '2026-11-22 10:31:00'
		[[ $output != *'"status":"idle"'* ]] || ok=$((ok + 1))
	done
	[ "$ok" -eq 3 ]	# the two probes before: their breakers open
	run -0 holds
	run -0 jq -c '.holds' <<< "$output"
	assert_output '[]'
}

@test "the key is in no file, no output and no document: only its fingerprint" {
	a=$(mksoul a) b=$(mksoul b)
	D=$BATS_TEST_TMPDIR/out
	mkdir -p "$D"
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	wake "$a" "$T0" > "$D/a" 2>&1 || :
	run -0 wake "$b" '2026-11-22 09:01:00'
	printf '%s\n' "$output" > "$D/b"
	run -0 holds
	printf '%s\n' "$output" > "$D/holds"
	run -0 jq -r '.holds[0].fingerprint' "$D/holds"
	assert_output --regexp '^[0-9a-f]{16}$'
	run -1 grep -rF -e "$KEY" -e "${KEY:8}" "$D" "$HEART_STATE_DIR"
	# a password in the base URL is the account's too, and kept by none
	export HEART_LLM_URL="http://u:pw-SECRET-77@${HEART_LLM_URL#http://}"
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	wake "$a" '2026-11-22 09:02:00' > "$D/c" 2>&1 || :
	run -0 holds
	printf '%s\n' "$output" > "$D/holds"
	run -1 grep -rF -e pw-SECRET-77 "$D" "$HEART_STATE_DIR"
}

@test "two hosts sharing one Redis: a hold set on one holds the other's agents, and its lift frees them" {
	redis_store || redis_start || skip "no redis-server"
	export HEART_STORE=$REDIS_URL
	a=$(mksoul a) b=$(mksoul b)
	h1=$BATS_TEST_TMPDIR/host1 h2=$BATS_TEST_TMPDIR/host2
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	HEART_STATE_DIR=$h1 run -75 wake "$a" "$T0"
	HEART_STATE_DIR=$h2 run -0 wake "$b" '2026-11-22 09:01:00'
	assert_output --partial '"status":"held"'
	run -0 llm_count
	assert_output 1
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	HEART_STATE_DIR=$h1 run -0 wake "$b" '2026-11-22 09:16:00'
	assert_output --partial '"status":"idle"'
	HEART_STATE_DIR=$h2 run -0 wake "$a" '2026-11-22 09:16:00'
	assert_output --partial '"status":"open"'	# its own breaker's
	HEART_STATE_DIR=$h2 run -0 wake "$(mksoul c)" '2026-11-22 09:16:10'
	assert_output --partial '"status":"idle"'
	[ ! -e "$h1/hold.json" ] && [ ! -e "$h2/hold.json" ]
	run -0 rcli GET 'heart:{*}:hold.json'
	run -0 jq -c .holds <<< "$output"
	assert_output '[]'
}

@test "heart-cap status shows each hold: a JSON line, a line after the table, a gauge; named agents alone show none" {
	a=$(mksoul a)
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	run -75 wake "$a" "$T0"
	run -0 heart-cap status --json
	run -0 jq -c 'select(.hold) | .hold | [.endpoint, (.fingerprint | length), .kind, .http, .since, .probe]' <<< "$output"
	assert_output "[\"$HEART_LLM_URL\",8,\"quota\",402,\"2026-11-22T09:00:30Z\",\"2026-11-22T09:15:30Z\"]"
	# on a terminal, a line each after the table
	run -0 script -qec "heart-cap status" /dev/null
	assert_line --regexp "^held: $HEART_LLM_URL \(key [0-9a-f]{8}\): out of credit \(HTTP 402\), since 2026-11-22T09:00:30Z, next probe 2026-11-22T09:15:30Z"
	run -0 heart-cap status --prom
	assert_line --regexp "^heart_account_held\{endpoint=\"$HEART_LLM_URL\",fingerprint=\"[0-9a-f]{8}\",kind=\"quota\"\} 1$"
	assert_line --regexp "^heart_account_probe_timestamp_seconds\{.*\} $(date -u -d '2026-11-22 09:15:30' +%s)$"
	run -0 heart-cap status a --json
	refute_output --partial '"hold"'
	# lifted: none shown
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 wake "$(mksoul b)" '2026-11-22 09:15:30'
	assert_output --partial '"status":"idle"'
	run -0 heart-cap status --prom
	refute_output --partial heart_account_held
}

@test "a probe the cap then refuses is handed back: the next wake of the fleet probes" {
	a=$(mksoul a) b=$(mksoul b)
	x=$BATS_TEST_TMPDIR/x.yaml
	printf 'name: x\nheart: { schedule: { interval: 1m, daily_cap: 1 } }\n' > "$x"
	run -0 wake "$x" '2026-11-22 08:00:00'
	assert_output --partial '"status":"idle"'
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	run -75 wake "$a" "$T0"
	run -0 wake "$x" '2026-11-22 09:16:00'
	assert_output --partial '"status":"capped"'
	run -0 llm_count
	assert_output 2
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run -0 wake "$b" '2026-11-22 09:16:00'
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 3
}

@test "a triage model's account holds the wake too; a triage on the main model's account is one account, its probe not held by itself" {
	a=$(mksoul a)
	llm_script '{"replies":[{"status":402,"text":"Payment required"}]}'
	run -75 wake "$a" "$T0"
	# the main model elsewhere, the triage model on the held account
	t=$BATS_TEST_TMPDIR/t.yaml
	printf 'name: t\nllm:\n  base_url: "%s"\n  timeout: 10s\n  triage: { base_url: "%s", model: cheap, timeout: 10s }\n' \
	    "${HEART_LLM_URL%/v1}/v2" "$HEART_LLM_URL" > "$t"
	run -0 wake "$t" '2026-11-22 09:01:00'
	run -0 jq -r '.status, .reason' <<< "$output"
	assert_line --index 0 held
	assert_line --index 1 --partial "held: the account at $HEART_LLM_URL (key "
	run -0 llm_count
	assert_output 1
	# both on the held account: at the probe, the wake is let through
	u=$BATS_TEST_TMPDIR/u.yaml
	printf 'name: u\nllm:\n  timeout: 10s\n  triage: { base_url: "%s", model: cheap, timeout: 10s }\n' \
	    "$HEART_LLM_URL" > "$u"
	run -75 wake "$u" '2026-11-22 09:16:00'
	refute_output --partial '"status":"held"'
	# the triage's request failed, and the main model was asked in its
	# place (triage.c), in this one wake of the period
	run -0 llm_count
	assert_output 3
	run -0 wake "$a" '2026-11-22 09:16:10'
	assert_output --partial '"status":"held"'
	run -0 llm_count
	assert_output 3
}

# A 429 that says the account's rate limit (heart(7), Holds): OpenAI's
# x-ratelimit-remaining-* or Anthropic's anthropic-ratelimit-*-remaining
# at 0, with its window's reset.
RATE429='{"status":429,"text":"Rate limit reached for requests","error_code":"rate_limit_exceeded","headers":{"x-ratelimit-remaining-requests":"0","x-ratelimit-reset-requests":"6m0s","x-ratelimit-remaining-tokens":"5120","x-ratelimit-reset-tokens":"2s","Retry-After":"20"}}'

@test "an account's 429 throttles every agent on the key until its reset: zero requests, no slot used, the account and reset named; another key goes through" {
	a=$(mksoul a) b=$(mksoul b)
	llm_script "{\"replies\":[$RATE429]}"
	run -75 wake "$a" "$T0"
	# the wake that met the 429 says so too: no wake goes before the reset
	run -0 jq -r 'select(.status == "error") | .next' <<< "$(grep '^{' <<< "$output")"
	assert_output 2026-11-22T09:06:30Z
	run -0 llm_count
	assert_output 1
	for s in "$b" "$a"; do
		skipped "$s" '2026-11-22 09:01:00' throttled "^throttled: the account at $HEART_LLM_URL \(key [0-9a-f]{8}\) is at its rate limit \(HTTP 429\) since 2026-11-22T09:00:30Z; until its reset at 2026-11-22T09:06:30Z" 2026-11-22T09:06:30Z
	done
	run -0 llm_count
	assert_output 1
	run -0 used b
	assert_output 0
	run -1 grep -rF -e "$KEY" "$HEART_STATE_DIR"
	run -0 at '2026-11-22 09:01:00' heart-wake --soul "$b" --explain --force --chamber schedule
	run -0 jq -c '[.would, .gates.hold.ok, .gates.hold.until]' <<< "$output"
	assert_output '["throttled",false,"2026-11-22T09:06:30Z"]'
	# heart-cap status and --prom show it as any hold
	run -0 at '2026-11-22 09:01:00' heart-cap status --json
	run -0 jq -c 'select(.hold) | .hold | [.kind, .http, .probe]' <<< "$output"
	assert_output '["rate",429,"2026-11-22T09:06:30Z"]'
	run -0 at '2026-11-22 09:01:00' heart-cap status --prom
	assert_line --regexp "^heart_account_held\{endpoint=\"$HEART_LLM_URL\",fingerprint=\"[0-9a-f]{8}\",kind=\"rate\"\} 1$"
	run -0 at '2026-11-22 09:01:00' script -qec "heart-cap status" /dev/null
	assert_line --regexp "^held: $HEART_LLM_URL \(key [0-9a-f]{8}\): rate limit \(HTTP 429\), since 2026-11-22T09:00:30Z, until its reset 2026-11-22T09:06:30Z"
	# past the reset, it is shown no more
	run -0 at '2026-11-22 09:06:30' heart-cap status --json
	refute_output --partial '"hold"'
	# another key is another account, and its success lifts nothing
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	OPENAI_API_KEY=sk-test-OTHER-42 run -0 wake "$b" '2026-11-22 09:02:00'
	assert_output --partial '"status":"idle"'
	run -0 wake "$(mksoul c)" '2026-11-22 09:06:29'
	assert_output --partial '"status":"throttled"'
	run -0 llm_count
	assert_output 2
	# the reset: every agent goes, and the first success clears it
	run -0 wake "$b" '2026-11-22 09:06:30'
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 3
	run -0 holds
	run -0 jq -c '.holds' <<< "$output"
	assert_output '[]'
}

@test "a request's 429 (Retry-After, no window at 0) stays its agent's: the other agents on the key go through" {
	a=$(mksoul a) b=$(mksoul b)
	llm_script '{"replies":[{"status":429,"text":"Request too large","error_code":"rate_limit_exceeded","headers":{"Retry-After":"30","x-ratelimit-remaining-requests":"41","x-ratelimit-remaining-tokens":"3000"}},{"text":"[IDLE]"}]}'
	run -75 wake "$a" "$T0"
	run -0 holds
	run -0 jq -c '.holds // []' <<< "$output"
	assert_output '[]'
	run -0 wake "$b" '2026-11-22 09:00:40'
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 2
	# and its agent's breaker counted it
	run -0 at '2026-11-22 09:00:40' heart-breaker status a
	assert_output --partial '"llm_fails":1,'
}

@test "Anthropic's windows too: the latest reset of those at 0, an hour at most" {
	a=$(mksoul a) b=$(mksoul b)
	llm_script '{"replies":[{"status":429,"text":"rate limited","error_type":"rate_limit_error","headers":{"anthropic-ratelimit-input-tokens-remaining":"0","anthropic-ratelimit-input-tokens-reset":"2026-11-22T09:02:00Z","anthropic-ratelimit-requests-remaining":"0","anthropic-ratelimit-requests-reset":"2026-11-22T09:03:10Z","anthropic-ratelimit-output-tokens-remaining":"800","anthropic-ratelimit-output-tokens-reset":"2026-11-22T09:09:00Z","retry-after":"5"}}]}'
	run -75 wake "$a" "$T0"
	run -0 wake "$b" '2026-11-22 09:01:00'
	run -0 jq -r '.status, .next' <<< "$output"
	assert_line --index 0 throttled
	assert_line --index 1 2026-11-22T09:03:10Z
	# a reset past the hour is cut to it
	llm_script '{"replies":[{"status":429,"text":"rate limited","headers":{"x-ratelimit-remaining-tokens":"0","x-ratelimit-reset-tokens":"5h0m0s"}}]}'
	run -75 wake "$(mksoul c)" '2026-11-22 09:03:10'
	run -0 wake "$b" '2026-11-22 09:04:00'
	run -0 jq -r '.status, .next' <<< "$output"
	assert_line --index 0 throttled
	assert_line --index 1 2026-11-22T10:03:10Z
	run -0 llm_count
	assert_output 2
}

@test "two hosts sharing one Redis: an account's 429 on one throttles the other's agents on the key until the reset" {
	redis_store || redis_start || skip "no redis-server"
	export HEART_STORE=$REDIS_URL
	a=$(mksoul a) b=$(mksoul b)
	h1=$BATS_TEST_TMPDIR/host1 h2=$BATS_TEST_TMPDIR/host2
	llm_script "{\"replies\":[$RATE429,{\"text\":\"[IDLE]\"}]}"
	HEART_STATE_DIR=$h1 run -75 wake "$a" "$T0"
	HEART_STATE_DIR=$h2 run -0 wake "$b" '2026-11-22 09:01:00'
	run -0 jq -r '.status, .next' <<< "$output"
	assert_line --index 0 throttled
	assert_line --index 1 2026-11-22T09:06:30Z
	OPENAI_API_KEY=sk-test-OTHER-42 HEART_STATE_DIR=$h2 run -0 wake \
	    "$(mksoul c)" '2026-11-22 09:01:00'
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 2
	HEART_STATE_DIR=$h2 run -0 wake "$b" '2026-11-22 09:06:30'
	assert_output --partial '"status":"idle"'
	run -0 llm_count
	assert_output 3
}
