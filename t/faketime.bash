# faketime.bash - the one way the tests and benchmarks move the clock:
# a command run under libfaketime, its clock frozen at a given time,
# the monotonic clock and file times left real.  Sourced by
# t/helpers.bash, t/adapt-sim.sh and bench/fleetday.sh.
#
# FAKETIME_LIB is libfaketime's library as its Debian package installed
# it, asked of dpkg once and exported (t/setup_suite.bash does it once
# for a whole bats run).
if [ -z "${FAKETIME_LIB:-}" ]; then
	FAKETIME_LIB=$(dpkg -L libfaketime 2>/dev/null |
	    grep -m 1 '/libfaketime\.so\.1$') ||
		echo "faketime.bash: libfaketime is not installed (make deps)" >&2
	export FAKETIME_LIB
fi

# at_epoch SECONDS CMD...: run CMD with the clock at that Unix time
# (CMD may be exec, to replace a subshell: `(at_epoch T exec cmd) &')
at_epoch() {
	local t
	TZ=UTC printf -v t '%(%Y-%m-%d %H:%M:%S)T' "$1"	# no subshell
	shift
	FAKETIME="@$t" \
	FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 \
	LD_PRELOAD=$FAKETIME_LIB TZ=UTC "$@"
}

# at TIME CMD...: the same at a date(1) time; give it in UTC or with an
# offset ("2026-03-08 01:59:00 America/New_York" is not understood)
at() {
	local t
	t=$(date -u -d "$1" +%s) || return
	shift
	at_epoch "$t" "$@"
}
