# helpers.bash - shared by every bats file: where the programs are, a
# private state directory per test, and clocks moved with libfaketime.
# Servers (mosquitto, redis, the LLM test double) are started here on
# free loopback ports and stopped in teardown.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

T=$BATS_TEST_DIRNAME
HEART_BIN=${HEART_BIN:-$T/..}
HEART_TBIN=${HEART_TBIN:-$T/../build/t}
PATH=$HEART_BIN:$HEART_TBIN:$PATH
SOULS=$T/../share/heartbeat/souls
FIX=$T/fixtures
export PATH

# libfaketime's preload is not first in the library list of a sanitized
# program; tell ASan that is fine.  Leaks are reported and fail a test.
export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# heart_setup: a private state directory; with HEART_TEST_STORE=redis
# (make check's second pass over the cap and breaker suites) also a
# private redis-server, in force through HEART_STORE.  A file that
# calls it has teardown() { heart_teardown; }.
heart_setup() {
	export HEART_STATE_DIR=$BATS_TEST_TMPDIR/state
	export TZ=UTC
	unset XDG_STATE_HOME HEART_STORE HEART_REDIS_PASSWORD
	if [ "${HEART_TEST_STORE:-}" = redis ]; then
		redis_start || return 1
		export HEART_STORE=$REDIS_URL
	fi
}

heart_teardown() {
	redis_stop
}

# file_only: skip a test that looks at the state files themselves.
file_only() {
	! redis_store ||
		skip "looks at the state files themselves: file store only"
}

# redis_store: a Redis store of the test's is in force
redis_store() {
	[ -n "${REDIS_PID:-}" ] && [[ ${HEART_STORE:-} == redis://* ]]
}

# state_clear: forget every agent, in whichever store is in force.
state_clear() {
	rm -rf "$HEART_STATE_DIR"
	[ -z "${REDIS_PID:-}" ] || rcli FLUSHALL >/dev/null
}

# at TIME CMD...: run CMD with the clock at TIME (any date(1) string,
# e.g. "2026-03-08 01:59:00 America/New_York" is not understood: give
# UTC or an offset), frozen there.
at() {
	local t=$1
	shift
	FAKETIME="@$(date -u -d "$t" '+%Y-%m-%d %H:%M:%S')" \
	FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 \
	LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
	TZ=UTC "$@"
}

# take_n N ARGS...: run heart-cap take N times, print how many admitted.
take_n() {
	local n=$1 ok=0 i
	shift
	for ((i = 0; i < n; i++)); do
		heart-cap take "$@" && ok=$((ok + 1))
	done
	echo "$ok"
}

# capfile AGENT, bfile AGENT: the agent's cap.json, breaker.json.  With
# the Redis store, a file of the same shape made from its keys, now (no
# key, no file); ask again after a change.
capfile() {
	local f=$BATS_TEST_TMPDIR/redis-cap-$1.json m d
	if ! redis_store; then
		echo "$HEART_STATE_DIR/agents/$1/cap.json"
		return
	fi
	rm -f "$f"
	m=$(redis_hash "heart:{$1}:cap")
	if [ "$m" != '{}' ]; then
		d=$(redis_hash "heart:{$1}:cap:$(echo "$m" | jq -r .day)")
		jq -n --arg a "$1" --argjson m "$m" --argjson d "$d" '
		    def n(x): (x // "0") | tonumber;
		    {v: 1, agent: $a, day: $m.day, zone: $m.zone,
		     total: n($d.total), chambers: {schedule: n($d.schedule),
		     idle: n($d.idle)}, ghosts: n($d.ghosts),
		     tokens: {prompt: n($d.prompt),
		     completion: n($d.completion)},
		     caps: (if $m.cap_schedule then {schedule:
		     n($m.cap_schedule), idle: n($m.cap_idle), agent:
		     (n($m.cap_agent) | if . < 0 then null else . end)}
		     else null end)}
		    ' > "$f"
	fi
	echo "$f"
}

bfile() {
	local f=$BATS_TEST_TMPDIR/redis-breaker-$1.json h
	if ! redis_store; then
		echo "$HEART_STATE_DIR/agents/$1/breaker.json"
		return
	fi
	rm -f "$f"
	h=$(redis_hash "heart:{$1}:breaker")
	if [ "$h" != '{}' ]; then
		echo "$h" | jq --arg a "$1" '
		    def n(x): (x // "0") | tonumber;
		    def t(x): if x > 0 then x | todate else null end;
		    n(.until) as $u | n(.probe_at) as $p |
		    (if .state == "open" then $u elif .state == "half_open"
		     and $p > 0 then $p + 600 else 0 end) as $go |
		    {v: 1, agent: $a, state, llm_fails: n(.llm_fails),
		     tool_fails: n(.tool_fails), cooldown_s: n(.cooldown_s),
		     base_s: n(.base_s), threshold: n(.threshold),
		     max_cooldown_s: n(.max_cooldown_s), until: t($go),
		     probe_at: t($p),
		     probe_pid: (n(.probe_pid) | if . > 0 then . else null end),
		     trigger, reason, updated: t(n(.updated))}' > "$f"
	fi
	echo "$f"
}

# redis_start [LINE...]: a redis-server of this test's own on a free
# loopback port, with LINEs added to its config (and, first of all, the
# file $REDIS_INCLUDE if set); data in $BATS_TEST_TMPDIR/redis,
# persisted to an append-only file synced on every write (what a user
# must configure for counts to survive a crash).  Sets REDIS_PORT,
# REDIS_PID, REDIS_URL, REDIS_DIR.
redis_start() {
	local try line
	REDIS_DIR=$BATS_TEST_TMPDIR/redis
	mkdir -p "$REDIS_DIR"
	for try in 1 2 3 4 5 6 7 8; do
		REDIS_PORT=$((20000 + (RANDOM * 7 + try) % 40000))
		{
			[ -z "${REDIS_INCLUDE:-}" ] || echo "include $REDIS_INCLUDE"
			echo "bind 127.0.0.1"
			echo "port $REDIS_PORT"
			echo "dir $REDIS_DIR"
			echo "appendonly yes"
			echo "appendfsync always"
			echo "save \"\""
			echo "logfile $REDIS_DIR/redis.log"
			for line in "$@"; do echo "$line"; done
		} > "$REDIS_DIR/redis.conf"
		redis_up && return 0
	done
	echo "redis-server did not start: $(tail -3 "$REDIS_DIR/redis.log")" >&2
	return 1
}

# redis_up: (re)start the server of redis_start, same port and data.
# It daemonizes, so that a test's own `wait' does not wait for it.
redis_up() {
	rm -f "$REDIS_DIR/redis.pid"
	redis-server "$REDIS_DIR/redis.conf" --daemonize yes \
		--pidfile "$REDIS_DIR/redis.pid" >/dev/null 3>&- || return 1
	export REDIS_PORT REDIS_DIR
	export REDIS_URL=redis://127.0.0.1:$REDIS_PORT
	for _ in $(seq 100); do
		REDIS_PID=$(cat "$REDIS_DIR/redis.pid" 2>/dev/null) || REDIS_PID=
		# ours, not some other server on that port
		[ -n "$REDIS_PID" ] && rcli INFO server 2>/dev/null |
			grep -q "^process_id:$REDIS_PID" && export REDIS_PID &&
			return 0
		sleep 0.05
	done
	redis_stop
	return 1
}

# alive PID: the process runs (a zombie waiting for init is gone)
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${st#Z}" = "$st" ]
}

# redis_stop: stop it by its pid, and wait until it is gone.
redis_stop() {
	if [ -n "${REDIS_PID:-}" ] && kill "$REDIS_PID" 2>/dev/null; then
		for _ in $(seq 200); do
			alive "$REDIS_PID" || break
			sleep 0.02
		done
	fi
	REDIS_PID=
	return 0
}

# redis_kill: kill -9, as a crash would.
redis_kill() {
	kill -9 "$REDIS_PID"
	while alive "$REDIS_PID"; do sleep 0.02; done
	REDIS_PID=
}

# rcli ARGS...: redis-cli against the test's server
rcli() {
	if [ -n "${REDIS_TEST_PASSWORD:-}" ]; then
		REDISCLI_AUTH=$REDIS_TEST_PASSWORD redis-cli -p "$REDIS_PORT" "$@"
	else
		redis-cli -p "$REDIS_PORT" "$@"
	fi
}

# redis_hash KEY: a hash as one JSON object of strings ({} if none)
redis_hash() {
	rcli --raw HGETALL "$1" |
		jq -Rn '[inputs] | [range(0; length; 2) as $i |
		    {(.[$i]): .[$i + 1]}] | add // {}'
}

# llm_start: start the LLM test double (t/llm-double.py) on a free
# loopback port; point heart-wake at it through the environment.
llm_start() {
	LLM_DIR=$BATS_TEST_TMPDIR/llm
	mkdir -p "$LLM_DIR"
	rm -f "$LLM_DIR/port"	# a double started before in this test
	: > "$LLM_DIR/requests.jsonl"
	python3 "$T/llm-double.py" "$LLM_DIR" 3>&- &
	LLM_PID=$!
	for _ in $(seq 100); do
		[ -s "$LLM_DIR/port" ] && break
		sleep 0.05
	done
	[ -s "$LLM_DIR/port" ] || { echo "llm double did not start" >&2; return 1; }
	export LLM_DIR LLM_PID
	export HEART_LLM_URL="http://127.0.0.1:$(cat "$LLM_DIR/port")/v1"
	export HEART_LLM_MODEL=double
	export HEART_LLM_PROVIDER=openai
}

llm_stop() {
	[ -n "${LLM_PID:-}" ] && kill "$LLM_PID" 2>/dev/null && wait "$LLM_PID" 2>/dev/null
	LLM_PID=
	return 0
}

# llm_script JSON: what the double answers next (see llm-double.py)
llm_script() {
	printf '%s\n' "$1" > "$LLM_DIR/script.json"
}

# llm_count: how many requests the double got
llm_count() {
	wc -l < "$LLM_DIR/requests.jsonl" | tr -d ' '
}

# llm_last: the last request's body, as JSON
llm_last() {
	tail -n 1 "$LLM_DIR/requests.jsonl" | jq -c .body
}

# at_epoch SECONDS CMD...: run CMD with the clock at that Unix time.
at_epoch() {
	local t=$1
	shift
	FAKETIME="@$(TZ=UTC printf '%(%Y-%m-%d %H:%M:%S)T' "$t")" \
	FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 \
	LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
	TZ=UTC "$@"
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# broker_start [PORT]: start a real mosquitto on 127.0.0.1 (a free port,
# or PORT to bring one back on the port it had), its config and log in
# $BATS_TEST_TMPDIR, persistence off.  Exports BROKER_PORT, BROKER_URL
# and BROKER_PID; waits until it accepts connections.
broker_start() {
	local port=${1:-} try i
	for try in 1 2 3; do
		[ -n "$port" ] || port=$(free_port)
		cat > "$BATS_TEST_TMPDIR/mosquitto.conf" <<-CONF
		listener $port 127.0.0.1
		allow_anonymous true
		persistence false
		CONF
		mosquitto -c "$BATS_TEST_TMPDIR/mosquitto.conf" \
		    >> "$BATS_TEST_TMPDIR/mosquitto.log" 2>&1 &
		BROKER_PID=$!
		for i in $(seq 50); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				export BROKER_PORT=$port BROKER_PID
				export BROKER_URL=mqtt://127.0.0.1:$port
				return 0
			fi
			kill -0 "$BROKER_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$BROKER_PID" 2>/dev/null
		wait "$BROKER_PID" 2>/dev/null
		[ -n "${1:-}" ] || port=
	done
	echo "broker_start: mosquitto did not start" >&2
	cat "$BATS_TEST_TMPDIR/mosquitto.log" >&2
	return 1
}

# broker_stop: stop the broker broker_start started (by its pid).
broker_stop() {
	if [ -n "${BROKER_PID:-}" ]; then
		kill "$BROKER_PID" 2>/dev/null
		wait "$BROKER_PID" 2>/dev/null
		BROKER_PID=
	fi
	return 0
}

# wait_until SECONDS CMD...: run CMD every 0.1 s until it succeeds;
# fail when it has not within SECONDS.
wait_until() {
	local n=$(($1 * 10))
	shift
	while ((n-- > 0)); do
		"$@" && return 0
		sleep 0.1
	done
	echo "wait_until: gave up on: $*" >&2
	return 1
}
