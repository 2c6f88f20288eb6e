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
	FAKETIME_DONT_FAKE_MONOTONIC=1 \
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
