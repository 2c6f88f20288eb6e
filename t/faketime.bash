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
	if [[ $1 =~ ^([0-9]{4}-[0-9]{2}-[0-9]{2})\ ([0-9]{2}:[0-9]{2}:[0-9]{2})$ ]]; then
		epoch_of t "${BASH_REMATCH[1]}T${BASH_REMATCH[2]}Z"	# no date(1)
	else
		t=$(date -u -d "$1" +%s) || return
	fi
	shift
	at_epoch "$t" "$@"
}

# epoch_of VAR TIME: the Unix seconds of TIME, a UTC time as heart
# prints it (2026-11-22T08:00:30Z), into VAR, without a date(1) process
# (the loops that drive the clock read one from every run).
epoch_of() {
	[[ $2 =~ ^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z$ ]] ||
		return 1
	local y=$((10#${BASH_REMATCH[1]})) m=$((10#${BASH_REMATCH[2]}))
	local d=$((10#${BASH_REMATCH[3]})) days
	((m > 2)) || y=$((y - 1))	# days from 1 March of year 0
	days=$((365 * y + y / 4 - y / 100 + y / 400 +
	    (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1 - 719468))
	printf -v "$1" '%d' $((days * 86400 + 10#${BASH_REMATCH[4]} * 3600 +
	    10#${BASH_REMATCH[5]} * 60 + 10#${BASH_REMATCH[6]}))
}
