#!/bin/bash
# adapt-sim.sh SOUL FROM TO - drive heart-wake's schedule chamber over
# the simulated time [FROM, TO) (Unix seconds) under libfaketime and
# print every wake result, one JSON line each.
#
# heart-wake is run only where something can happen: at FROM, at the
# `next` that each skip names, and one second after each wake (to learn
# its next).  This is what running it every minute from cron does: a
# not_due run changes nothing, and `next` is the first second a wake
# will be admitted, every gate counted (t/heart-wake-adaptive.bats and
# t/heart-wake.bats check both), so only the wake times differ, by less
# than cron's minute, and wakes the cap or the breaker would refuse are
# not run.  Two simulated weeks take about a thousand runs instead of
# 20,160 per schedule.
set -eu
. "$(dirname "$0")/faketime.bash"
soul=$1 t=$2 end=$3
wake=${HEART_BIN:+$HEART_BIN/}heart-wake
while [ "$t" -lt "$end" ]; do
	line=$(at_epoch "$t" "$wake" --soul "$soul" --chamber schedule) || {
		echo "adapt-sim: heart-wake failed at $t" >&2
		exit 1
	}
	printf '%s\n' "$line"
	if [[ $line =~ \"next\":\"([-0-9T:]+Z)\" ]]; then
		epoch_of n "${BASH_REMATCH[1]}"
		[ "$n" -gt "$t" ] && t=$n || t=$((t + 1))
	else
		t=$((t + 1))
	fi
done
