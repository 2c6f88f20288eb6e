#!/usr/bin/env bats
# The Redis store: one Redis shared by "hosts" (state directories of
# their own), against a real redis-server started by each test on a
# loopback port.  The cap and breaker suites run against it too (make
# check, HEART_TEST_STORE=redis); this file holds what only a shared
# server can show.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	[ -n "${REDIS_PID:-}" ] || redis_start
	export HEART_STORE=$REDIS_URL
	T0="2026-11-21 12:00:00"
}

teardown() {
	llm_stop
	heart_teardown
}

within() {	# within SLACK N: $output is N, or up to SLACK s less
	[ "$output" -le "$2" ] && [ "$output" -ge $(($2 - $1)) ]
}

host() {	# host N CMD...: run CMD as host N, with its own state directory
	local n=$1
	shift
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/host$n "$@"
}

@test "two hosts, 16 processes each, taking from one agent with cap 48 through one Redis: exactly 48, every run" {
	# One run a pass, as the sanitized pass always had: with no WATCH
	# in guarded_set (lib/redisstore.c) one run admitted 55 to 60, 5
	# runs of 5.
	meet herd	# in Redis: neither host has a file of it
	for h in 1 2; do
		for p in $(seq 16); do
			( n=0
			  for i in 1 2 3; do
				host "$h" heart-cap take herd && n=$((n + 1))
			  done
			  echo $n > "$BATS_TEST_TMPDIR/ok.$h.$p" ) &
		done
	done
	wait
	total=$(cat "$BATS_TEST_TMPDIR"/ok.* | awk '{ s += $1 } END { print s }')
	[ "$total" -eq 48 ]
	run -0 host 1 heart-cap status herd --json
	assert_output --partial '"used":48,"cap":48,"remaining":0'
	run -0 host 2 heart-cap status herd --json
	assert_output --partial '"used":48,"cap":48,"remaining":0'
	# and no host wrote a cap.json of its own
	[ ! -e "$BATS_TEST_TMPDIR/host1/agents/herd/cap.json" ]
	[ ! -e "$BATS_TEST_TMPDIR/host2/agents/herd/cap.json" ]
}

@test "two hosts, 16 processes each, checking a half-open breaker through one Redis: exactly one probe, every run" {
	for run in $(repeats 4); do
		state_clear
		rm -f "$BATS_TEST_TMPDIR"/rc.*
		meet herd
		for i in 1 2 3; do
			at "$T0" heart-breaker record herd llm-fail >/dev/null
		done
		# odd runs: the cooldown is over; even: a dead probe's lease is
		t="2026-11-21 12:15:00"
		if ((run % 2 == 0)); then
			at "$t" heart-breaker check herd >/dev/null
			t="2026-11-21 12:25:00"
		fi
		for h in 1 2; do
			for p in $(seq 16); do
				( rc=0
				  at "$t" env HEART_STATE_DIR="$BATS_TEST_TMPDIR/host$h" \
				      heart-breaker check herd || rc=$?
				  echo $rc > "$BATS_TEST_TMPDIR/rc.$h.$p" ) >/dev/null &
			done
		done
		wait
		run sh -c "cat '$BATS_TEST_TMPDIR'/rc.* | sort | uniq -c | awk '{ print \$2 \":\" \$1 }'"
		assert_output "$(printf '0:1\n1:31')"
		run jq -r '.state, .probe_at' "$(bfile herd)"
		assert_output "$(printf 'half_open\n%s' "$(date -u -d "$t" +%FT%TZ)")"
	done
}

@test "two hosts waking the same agent at the same minute: one wake goes, the others are busy or not due" {
	llm_start
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 30m } }')
	start=$(date -u -d "2026-11-22 08:00:00" +%s)
	# heart first sees the agent; its first slot comes within 30m
	at_epoch "$start" heart-wake --soul "$s" >/dev/null
	t=$((start + 1800))
	pids=()
	for h in 1 2; do
		for p in $(seq 8); do
			host "$h" at_epoch "$t" heart-wake --soul "$s" \
			    > "$BATS_TEST_TMPDIR/r.$h.$p" &
			pids+=($!)
		done
	done
	wait "${pids[@]}"	# not the LLM double
	[ "$(jq -s '[.[] | select(.status == "idle" or .status == "ok")] | length' "$BATS_TEST_TMPDIR"/r.*)" -eq 1 ]
	[ "$(jq -s '[.[] | select(.status == "busy" or .status == "not_due")] | length' "$BATS_TEST_TMPDIR"/r.*)" -eq 15 ]
	run llm_count
	assert_output 1
	run -0 at_epoch "$t" heart-cap status scout --json
	assert_output --partial '"used":1,'
	# the wake's state is the fleet's: a third host sees the slot taken
	run -0 host 3 at_epoch "$((t + 60))" heart-wake --soul "$s"
	[ "$(echo "$output" | jq -r .status)" = not_due ]
	run llm_count
	assert_output 1
}

@test "a wake lock held in Redis by another host makes a wake busy, and so does the local flock" {
	llm_start
	s=$(soul_file scout.yaml 'heart: {}')
	rcli SET 'heart:{scout}:wake.lock' other-host:1:0 PX 60000 >/dev/null
	run heart-wake --soul "$s" --force
	assert_success
	[ "$(echo "$output" | jq -r .status)" = busy ]
	rcli DEL 'heart:{scout}:wake.lock' >/dev/null
	mkdir -p "$HEART_STATE_DIR/agents/scout"
	hold_lock "$HEART_STATE_DIR/agents/scout/wake.lock"
	run -0 heart-wake --soul "$s" --force
	[ "$(echo "$output" | jq -r .status)" = busy ]
	release_lock
	run llm_count
	assert_output 0
	run -0 heart-wake --soul "$s" --force
	[ "$(echo "$output" | jq -r .status)" = idle ]
	# the lock is let go after the wake, and wake.json lives in Redis
	run rcli EXISTS 'heart:{scout}:wake.lock'
	assert_output 0
	rcli GET 'heart:{scout}:wake.json' | jq -e '.last.schedule.status == "idle"'
	[ ! -e "$HEART_STATE_DIR/agents/scout/wake.json" ]
}

@test "Redis killed mid-run: wakes fail closed with exit 69 and a clear message; restarted, they resume with the day's count intact" {
	llm_start
	s=$(soul_file scout.yaml 'heart: { schedule: { interval: 1m } }')
	start=$(date -u -d "2026-11-22 08:00:30" +%s)
	at_epoch "$start" heart-wake --soul "$s" >/dev/null
	for m in 1 2 3; do
		run at_epoch $((start + m * 60)) heart-wake --soul "$s"
		assert_success
		[ "$(echo "$output" | jq -r .status)" = idle ]
	done
	run llm_count
	assert_output 3
	redis_kill
	run --separate-stderr at_epoch $((start + 240)) heart-wake --soul "$s"
	assert_failure 69
	[ "$stderr" = "heart-wake: scout: $REDIS_URL: cannot connect: Connection refused" ]
	echo "$output" | jq -e '.status == "error" and (.error | test("cannot connect"))'
	run llm_count
	assert_output 3
	run heart-cap take scout
	assert_failure 69
	assert_output "heart-cap: $REDIS_URL: cannot connect: Connection refused"
	run heart-breaker check scout
	assert_failure 69
	run heart-cap status scout
	assert_failure 69
	redis_up
	run at_epoch $((start + 240)) heart-cap status scout --json
	assert_success
	assert_output --partial '"used":3,"cap":48'
	assert_output --partial '"ghosts":3'
	run at_epoch $((start + 300)) heart-wake --soul "$s"
	assert_success
	echo "$output" | jq -e '.status == "idle" and .cap.used == 4'
	run llm_count
	assert_output 4
}

@test "Redis that stops answering: a take fails closed with 69 within the 3 seconds heart(7) names, saying so; it goes on once Redis does" {
	s=$(soul_file scout.yaml 'heart: { schedule: { daily_cap: 5 } }')
	run -0 heart-cap take --soul "$s"
	kill -STOP "$REDIS_PID"
	SECONDS=0
	run heart-cap take --soul "$s"
	took=$SECONDS
	kill -CONT "$REDIS_PID"
	assert_failure 69
	assert_output --regexp "^heart-cap: $REDIS_URL: .*: no answer within 3s$"
	[ "$took" -lt $((3 * 3 + 5 * PATIENCE)) ]
	run -0 heart-cap take --soul "$s"
	run -0 heart-cap status --soul "$s" --json
	assert_output --partial '"used":2,"cap":5'
}

@test "Redis killed during a wake's model call: the wake exits 69; after the restart the wake is counted and its lock holds until the lease" {
	llm_start
	llm_script '{"replies":[{"text":"[IDLE]","delay":1.5}]}'
	s=$(soul_file scout.yaml 'heart: {}')
	heart-wake --soul "$s" --force > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" &
	waker=$!
	wait_until 5 eval '[ "$(llm_count)" -eq 1 ]'
	redis_kill
	rc=0
	wait "$waker" || rc=$?
	[ "$rc" -eq 69 ]
	grep -q "^heart-wake: scout: $REDIS_URL: .*\(cannot connect\|connection lost\)" "$BATS_TEST_TMPDIR/err"
	redis_up
	run -0 at_epoch "$t" heart-cap status scout --json
	assert_output --partial '"used":1,'
	# the holder could not let go: another wake stays out (fail closed)
	run -0 heart-wake --soul "$s" --force
	[ "$(echo "$output" | jq -r .status)" = busy ]
	run rcli PTTL 'heart:{scout}:wake.lock'
	[ "$output" -gt 800000 ] && [ "$output" -le 900000 ]
}

@test "keys carry the agent id and hold the files' own JSON; each expires 30 days after a change, the counter 62 (past any month)" {
	s=$(soul_file scout.yaml 'heart:
  timezone: Asia/Shanghai')
	at "2026-11-22 10:00:00" heart-cap take --soul "$s"
	at "2026-11-22 10:00:00" heart-breaker record scout llm-fail >/dev/null
	rcli --scan --pattern 'heart:*' | sort > "$BATS_TEST_TMPDIR/keys"
	run cat "$BATS_TEST_TMPDIR/keys"
	assert_output "$(printf '%s\n' 'heart:{scout}:breaker.json' 'heart:{scout}:cap.json')"
	# (the seconds a loaded machine takes between the write and now)
	run rcli TTL 'heart:{scout}:cap.json'
	within 60 $((62 * 86400))
	run rcli TTL 'heart:{scout}:breaker.json'
	within 60 $((30 * 86400))
	rcli GET 'heart:{scout}:cap.json' | jq -e '.day == "2026-11-22" and
	    .zone == "Asia/Shanghai" and .total == 1 and .chambers.schedule == 1'
	rcli GET 'heart:{scout}:breaker.json' | jq -e '.state == "closed" and .llm_fails == 1'
	# the same document as the file store writes, key for key
	HEART_STORE=file at "2026-11-22 10:00:00" heart-cap take --soul "$s"
	diff <(rcli GET 'heart:{scout}:cap.json' | jq -S 'keys') \
	    <(jq -S keys "$HEART_STATE_DIR/agents/scout/cap.json")
}

@test "the journal is one list per agent, capped, expiring 30 days after its last entry; --why reads it back" {
	llm_start
	s=$(soul_file scout.yaml 'heart: {}')
	at "2026-11-22 10:00:00" heart-wake --soul "$s" > /dev/null
	at "2026-11-22 10:00:00" heart-cap pause scout
	at "2026-11-22 10:01:00" heart-wake --soul "$s" --force > /dev/null
	run -0 rcli TYPE 'heart:{scout}:journal.jsonl'
	assert_output list
	run -0 rcli TTL 'heart:{scout}:journal.jsonl'
	within 60 $((30 * 86400))
	rcli LINDEX 'heart:{scout}:journal.jsonl' -1 | jq -e '.status == "paused" and .at == "2026-11-22T10:01:00Z"'
	run -0 heart-wake --why scout --json
	echo "$output" | jq -e '.agent == "scout" and .status == "paused"'
	# the other host reads the same journal
	run -0 host 2 heart-wake --why scout --json
	echo "$output" | jq -e '.status == "paused"'
}

@test "the keys of heart 0.x (hashes) are moved once to the documents: the day's count, caps and an open breaker carry over" {
	s=$(soul_file scout.yaml 'heart: { daily_cap: 5 }')
	now=$(date -u +%s)
	day=$(date -u +%F)
	rcli HSET 'heart:{scout}:cap' day "$day" zone UTC cap_schedule 5 \
	    cap_idle 5 cap_agent 5 >/dev/null
	rcli HSET "heart:{scout}:cap:$day" schedule 4 total 4 ghosts 2 \
	    prompt 100 completion 7 >/dev/null
	rcli HSET 'heart:{scout}:breaker' state open llm_fails 3 tool_fails 0 \
	    cooldown_s 900 base_s 900 until $((now + 600)) probe_at 0 \
	    probe_pid 0 probe_host '' trigger llm reason 'HTTP 503' \
	    threshold 3 max_cooldown_s 7200 >/dev/null
	rcli SET 'heart:{scout}:wake' '{"v":1,"last":{},"running":null}' >/dev/null
	run heart-cap take --soul "$s" -v
	assert_success
	assert_output --partial "admitted: 5/5"
	run heart-cap take --soul "$s"
	assert_failure 1
	run -0 heart-breaker status scout --json
	echo "$output" | jq -e '.state == "open" and .trigger == "llm" and
	    .reason == "HTTP 503" and .wait_s > 500'
	heart-wake --soul "$s" --explain >/dev/null
	run rcli EXISTS 'heart:{scout}:cap' 'heart:{scout}:breaker' 'heart:{scout}:wake'
	assert_output 0
	rcli GET 'heart:{scout}:cap.json' | jq -e '.ghosts == 2 and .tokens.prompt == 100'
	rcli GET 'heart:{scout}:wake.json' | jq -e '.v == 1'
}

@test "--store picks the store for one run and beats HEART_STORE; file or an empty HEART_STORE is the file store" {
	s=$(soul_file scout.yaml 'heart: {}')
	heart-cap take --soul "$s"
	[ ! -e "$HEART_STATE_DIR/agents/scout/cap.json" ]
	heart-cap take --soul "$s" --store file
	run jq .total "$HEART_STATE_DIR/agents/scout/cap.json"
	assert_output 1
	HEART_STORE= heart-cap take scout
	run jq .total "$HEART_STATE_DIR/agents/scout/cap.json"
	assert_output 2
	unset HEART_STORE
	heart-cap take scout --store "$REDIS_URL"
	run -0 heart-cap status scout --store "$REDIS_URL" --json
	assert_output --partial '"used":2,'
	run rcli -n 5 DBSIZE
	assert_output 0
	heart-cap take --soul "$s" --store "$REDIS_URL/5"
	run rcli -n 5 --scan
	assert_output --partial 'heart:{scout}:cap'
}

@test "bad store URLs are refused: 64 from --store, 78 from HEART_STORE; rediss:// is refused with a reason; a password in the URL is not echoed" {
	run heart-cap take scout --store rediss://127.0.0.1:6380
	assert_failure 64
	assert_output --partial "heart-cap: --store: rediss:// (TLS) needs hiredis 1.0 or later with hiredis_ssl"
	assert_output --partial "tunnel"
	HEART_STORE=rediss://h:1 run heart-breaker check scout
	assert_failure 78
	assert_output --partial "heart-breaker: HEART_STORE: rediss://"
	run heart-wake --soul "$(soul_file scout.yaml 'heart: {}')" --store 'redis://:s3cret@127.0.0.1:6379'
	assert_failure 64
	assert_output --partial "set HEART_REDIS_PASSWORD"
	refute_output --partial s3cret
	# a client's ?password= is refused so too, not echoed
	for u in 'redis://127.0.0.1:6379/0?password=s3cret' 'redis://h?auth=s3cret'; do
		HEART_STORE=$u run -78 heart-breaker check scout
		assert_output --partial "a query does not belong in the store's URL"
		refute_output --partial s3cret
	done
	for u in mysql://h redis:// 'redis://h:0' 'redis://h:65536' 'redis://h:x' \
	    'redis://h/x' 'redis://[::1' 'redis://h?db=1'; do
		run heart-cap take scout --store "$u"
		assert_failure 64
		assert_output --partial "heart-cap: --store:"
	done
	run -64 heart-cap take scout --store 'redis://h:65536'
	assert_output "heart-cap: --store: 'redis://h:65536': not a store URL: port 65536: too large (at most 65535)"
	run -64 heart-cap take scout --store 'redis://h:/1'
	assert_output "heart-cap: --store: 'redis://h:/1': not a store URL: use redis://host:port[/db]"
	run -64 heart-cap take scout --store 'redis://h:1/x'
	assert_output "heart-cap: --store: 'redis://h:1/x': not a store URL: database x: not a whole number"
	run heart-cap take scout --store 'redis://[::1]:1/2'
	assert_failure 69
	assert_output --partial "cannot connect"
}

@test "a password comes from HEART_REDIS_PASSWORD only; none or a wrong one is a configuration error, 78" {
	redis_stop
	export REDIS_TEST_PASSWORD=hunter2-long
	redis_start "requirepass $REDIS_TEST_PASSWORD"
	export HEART_STORE=$REDIS_URL
	run heart-cap take scout
	assert_failure 78
	assert_output "heart-cap: $REDIS_URL: the server wants a password: set HEART_REDIS_PASSWORD"
	HEART_REDIS_PASSWORD=wrong run heart-cap take scout
	assert_failure 78
	assert_output --partial "the password was refused"
	refute_output --partial wrong
	HEART_REDIS_PASSWORD=hunter2-long run heart-cap take --soul "$(soul_file scout.yaml 'heart: {}')" -v
	assert_success
	assert_output --partial "admitted: 1/48"
	HEART_REDIS_PASSWORD=hunter2-long run heart-cap status --json
	assert_output --partial '"agent":"scout"'
	refute_output --partial hunter2
}

@test "the Redis password is a secret: a reason or a provider's error that quotes it leaves none of it in the output, the keys or heart-breaker status" {
	redis_stop
	export REDIS_TEST_PASSWORD=correct-horse-battery-staple
	redis_start "requirepass $REDIS_TEST_PASSWORD"
	export HEART_STORE=$REDIS_URL HEART_REDIS_PASSWORD=$REDIS_TEST_PASSWORD
	s=$(soul_file scout.yaml 'llm: { timeout: 10s }')
	run heart-breaker record --soul "$s" llm-fail --reason "AUTH $HEART_REDIS_PASSWORD failed"
	assert_success
	run -0 heart-breaker status scout
	assert_output --partial 'AUTH [redacted] failed'
	refute_output --partial battery
	llm_start
	llm_script "{\"replies\":[{\"status\":500,\"text\":\"proxy env: HEART_REDIS_PASSWORD=$REDIS_TEST_PASSWORD\"}]}"
	run heart-wake --soul "$s" --force
	assert_failure 75
	assert_output --partial 'HEART_REDIS_PASSWORD=[redacted]'
	refute_output --partial battery
	run -0 heart-breaker status --json scout
	refute_output --partial battery
	run rcli --raw GET 'heart:{scout}:breaker.json'
	refute_output --partial battery
	run rcli --raw GET 'heart:{scout}:wake.json'
	refute_output --partial battery
}

@test "a tool is handed no socket of heart-wake's: not its session with Redis, authenticated by the password" {
	redis_stop
	export REDIS_TEST_PASSWORD=correct-horse-battery-staple
	redis_start "requirepass $REDIS_TEST_PASSWORD"
	export HEART_STORE=$REDIS_URL HEART_REDIS_PASSWORD=$REDIS_TEST_PASSWORD
	llm_start
	s=$(soul_file scout.yaml "llm: { timeout: 10s }
tools:
  - { name: probe, description: sockets held, command: [$T/tools/sockets] }")
	llm_script '{"replies":[{"tool_calls":[{"name":"probe","arguments":{}}]},{"text":"done"}]}'
	run heart-wake --soul "$s" --force
	assert_success
	llm_last | jq -e '.messages[-1] | .role == "tool" and (.content | fromjson) == {"sockets": 0}'
}

@test "hand-edited keys, with a wrong field or not JSON at all, are refused with exit 74 and named, never reset" {
	heart-cap take --soul "$(soul_file scout.yaml 'heart: {}')"
	k='heart:{scout}:cap.json'
	rcli SET "$k" "$(rcli GET "$k" | jq -c '.total = "many"')" >/dev/null
	run heart-cap take scout
	assert_failure 74
	assert_output "heart-cap: $REDIS_URL: $k: field 'total' is missing or not valid; fix or delete the key by hand"
	rcli GET "$k" | jq -e '.total == "many"'
	at "$T0" heart-breaker record scout llm-fail
	k='heart:{scout}:breaker.json'
	rcli SET "$k" "$(rcli GET "$k" | jq -c '.state = "ajar"')" >/dev/null
	run heart-breaker check scout
	assert_failure 74
	assert_output --partial "$k: field 'state' is missing or not valid; fix or delete the key by hand"
	rcli SET 'heart:{scout}:wake.json' '{"v":' >/dev/null
	run heart-wake --soul "$(soul_file scout.yaml 'heart: {}')" --explain
	assert_failure 74
	assert_output --partial "heart:{scout}:wake.json: not valid JSON"
	# a key that is not JSON at all: named, and never replaced
	rcli SET 'heart:{cut}:cap.json' '{"day":"2026-11-2' >/dev/null
	run heart-cap take cut
	assert_failure 74
	assert_output "heart-cap: $REDIS_URL: heart:{cut}:cap.json: not valid JSON: premature end of input near '\"2026-11-2'; fix or delete the key by hand"
	run heart-cap status cut
	assert_failure 74
	[ "$(rcli GET 'heart:{cut}:cap.json')" = '{"day":"2026-11-2' ]
}

@test "the store runs no script: a write is WATCH, GET, MULTI, SET, EXEC, and a write that lost the race is decided again" {
	calls() {	# calls CMD: how many times the server ran CMD
		rcli INFO commandstats | tr -d '\r' |
			sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p"
	}
	meet scout
	rcli CONFIG RESETSTAT >/dev/null
	heart-cap take scout
	heart-breaker record scout llm-fail >/dev/null
	[ -z "$(calls eval)" ] && [ -z "$(calls evalsha)" ]
	[ "$(calls exec)" -eq 2 ] && [ "$(calls watch)" -eq 2 ]
	# sixteen takers at once: each lost race is one more round, never
	# a lost or a double count
	for i in $(seq 16); do heart-cap take scout & done
	wait
	rcli GET 'heart:{scout}:cap.json' | jq -e '.total == 17'
	[ "$(calls exec)" -ge 18 ]
}

@test "status of every agent lists the agents the store knows, sorted, each once; an endpoint's bucket or a key of no valid id is no agent" {
	meet beta alpha gamma
	heart-cap take beta
	heart-cap take alpha
	at "$T0" heart-breaker record gamma llm-fail
	at "$T0" heart-breaker record alpha llm-fail	# a second key
	rcli SET 'heart:{@double}:bucket.json' '{}' > /dev/null
	rcli SET "heart:{$(printf 'x%.0s' {1..65})}:cap.json" '{}' > /dev/null
	run heart-cap status
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	[ "$(echo "$output" | jq -r .agent | tr '\n' ' ')" = "alpha beta gamma " ]
	run -0 heart-breaker status
	[ "$(echo "$output" | jq -r .agent | tr '\n' ' ')" = "alpha beta gamma " ]
}

@test "only the programs that open a store link hiredis: heart-ghost does not" {
	for p in heart-cap heart-breaker heart-wake; do
		ldd "$(command -v $p)" | grep -q libhiredis
	done
	run ldd "$(command -v heart-ghost)"
	assert_success
	refute_output --partial libhiredis
}
