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

heart_setup() {
	export HEART_STATE_DIR=$BATS_TEST_TMPDIR/state
	export TZ=UTC
	unset XDG_STATE_HOME
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

capfile() {
	echo "$HEART_STATE_DIR/agents/$1/cap.json"
}

# llm_start: start the LLM test double (t/llm-double.py) on a free
# loopback port; point heart-wake at it through the environment.
llm_start() {
	LLM_DIR=$BATS_TEST_TMPDIR/llm
	mkdir -p "$LLM_DIR"
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
