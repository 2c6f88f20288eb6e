#!/bin/sh
# bench/pulse.sh - what keeping a fleet alive costs heart-pulse, against a
# local mosquitto.  Prints figures; asserts nothing.
#   For 10,000 and then 100,000 agents at a 10 s interval, after one
#   interval of warm-up, for BENCH_SECS (60) seconds:
#   - missed pulses: sequence gaps seen by a subscriber (target 0), and
#     the largest lag of a pulse behind its slot
#   - CPU seconds, user and system, per 1,000 pulses, and as a ratio to
#     `mosquitto_pub -l' publishing the same number of messages of the
#     same size in the same run (target <= 1.0)
#   - peak RSS (target <= 64 MB)
#   Then the naive way for contrast: one mosquitto_pub per pulse.
#   Start-up is given in wall seconds and in heart-pulse's CPU seconds (the
#   figure a loaded machine changes least).
# BENCH_FLEETS="10000 100000" and BENCH_SECS=60 may be changed; BENCH_BIN
# (default: this tree) is the directory of the heart-pulse measured.
set -eu
cd "$(dirname "$0")/.."
bin=${BENCH_BIN:-$PWD}
tmp=$(mktemp -d)
secs=${BENCH_SECS:-60}
fleets=${BENCH_FLEETS:-10000 100000}
bpid= ppid= spid=
cleanup() {
	for p in $ppid $spid $bpid; do kill "$p" 2>/dev/null || :; done
	wait 2>/dev/null || :
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# the shipped broker configuration's limits (contrib/mosquitto/heart.conf)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\nmax_inflight_messages 1000\n' \
	"$port" > "$tmp/mosquitto.conf"
mosquitto -c "$tmp/mosquitto.conf" > "$tmp/mosquitto.log" 2>&1 &
bpid=$!
sleep 0.5
url=mqtt://127.0.0.1:$port

cpu_ticks() {	# user + system clock ticks of process $1
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

cpu_apart() {	# user and system clock ticks of process $1
	awk '{ print $14 "," $15 }' "/proc/$1/stat"
}

stats() {	# the counters heart-pulse prints on SIGUSR1
	n=$(wc -l < "$tmp/stats")
	kill -USR1 "$ppid"
	while [ "$(wc -l < "$tmp/stats")" -le "$n" ]; do
		st=$(awk '{ print $3 }' "/proc/$ppid/stat" 2>/dev/null || :)
		if [ -z "$st" ] || [ "$st" = Z ]; then
			echo "heart-pulse died" >&2
			kill $$
		fi
		sleep 0.05
	done
	tail -1 "$tmp/stats"
}

hz=$(getconf CLK_TCK)

for n in $fleets; do
	echo "== $n agents, 10 s interval, ${secs} s measured"
	rm -rf "$tmp/souls" "$tmp/state"
	mkdir "$tmp/souls"
	python3 - "$tmp/souls" "$n" <<'PY'
import sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open("%s/a%06d.yaml" % (d, i), "w") as f:
        f.write("heart:\n  pulse: {interval: 10s}\n")
PY
	export HEART_STATE_DIR=$tmp/state
	mosquitto_sub -p "$port" -t 'bench/+/pulse' > "$tmp/sub" &
	spid=$!
	sleep 0.3
	t0=$(date +%s.%N)
	"$bin/heart-pulse" --souls "$tmp/souls" --prefix bench \
	    --broker "$url" > "$tmp/stats" 2> "$tmp/pulse.err" &
	ppid=$!
	# its birth, not the retained one of the run before: signals are set
	until mosquitto_sub -p "$port" -t 'bench/node/+/status' -C 1 -W 120 |
	    grep -q "\"pid\":$ppid,"; do sleep 0.2; done
	until [ "$(stats | jq .births)" -ge "$n" ]; do sleep 0.5; done
	t1=$(date +%s.%N)
	cb=$(cpu_ticks "$ppid")
	sleep 10	# one interval: every agent has pulsed
	c0=$(cpu_apart "$ppid")
	s0=$(stats | jq .sent)
	sleep "$secs"
	c1=$(cpu_apart "$ppid")
	st=$(stats)
	s1=$(echo "$st" | jq .sent)
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$ppid/status")
	kill "$ppid"; wait "$ppid" || :
	ppid=
	sleep 0.5
	kill "$spid"; wait "$spid" 2>/dev/null || :
	spid=
	pulses=$((s1 - s0))
	size=$(head -1000 "$tmp/sub" | awk '{ s += length($0) } END { printf "%d", s / NR }')
	awk -F'"seq":' '{ split($1, a, "\""); id = a[6]; s = $2 + 0;
	    if (!(id in lo) || s < lo[id]) lo[id] = s;
	    if (!(id in hi) || s > hi[id]) hi[id] = s; cnt[id]++ }
	    END { m = 0; for (id in cnt) m += hi[id] - lo[id] + 1 - cnt[id];
	    printf "%d %d %d\n", m, NR, length(cnt) }' "$tmp/sub" > "$tmp/miss"
	read missed received agents < "$tmp/miss"
	# the floor: mosquitto_pub -l, the same count, the same size
	head -c "$((size - 1))" /dev/zero | tr '\0' x > "$tmp/line"
	echo >> "$tmp/line"
	python3 - "$tmp/line" "$pulses" "$tmp/lines" <<'PY'
import sys
line = open(sys.argv[1]).read()
with open(sys.argv[3], "w") as f:
    f.write(line * int(sys.argv[2]))
PY
	/usr/bin/time -f '%U %S' -o "$tmp/time" mosquitto_pub -p "$port" -l \
	    -t bench/floor/pulse < "$tmp/lines"
	read pu ps < "$tmp/time"
	awk -v n="$n" -v p="$pulses" -v c0="$c0" -v c1="$c1" -v hz="$hz" \
	    -v pu="$pu" -v ps="$ps" -v hwm="$hwm" -v m="$missed" \
	    -v r="$received" -v a="$agents" -v t0="$t0" -v t1="$t1" -v cb="$cb" \
	    -v lag="$(echo "$st" | jq .lag_max_ms)" -v sz="$size" 'BEGIN {
		split(c0, x0, ","); split(c1, x1, ",");
		ou = (x1[1] - x0[1]) / hz; os = (x1[2] - x0[2]) / hz;
		ours = ou + os; floor = pu + ps;
		printf "start: %d souls loaded and born in %.1f s, %.2f s CPU\n", n, t1 - t0, cb / hz;
		printf "pulses sent in %d s: %d (%.0f/s), %d bytes each\n", '"$secs"', p, p / '"$secs"', sz;
		printf "missed: %d of %d received by a subscriber from %d agents; largest lag %d ms\n", m, r, a, lag;
		printf "heart-pulse: %.2f s CPU (%.2f user, %.2f sys) = %.2f ms per 1000 pulses\n", ours, ou, os, ours / p * 1e6;
		printf "mosquitto_pub -l, same %d messages: %.2f s CPU (%.2f user, %.2f sys) = %.2f ms per 1000\n", p, floor, pu, ps, floor / p * 1e6;
		if (floor > 0) printf "ratio: %.2f (target <= 1.0)\n", ours / floor;
		printf "peak RSS: %.1f MB (target <= 64 MB)\n", hwm / 1024 }'
done

echo "== the naive way: one mosquitto_pub per pulse, 300 pulses"
/usr/bin/time -f '%U %S' -o "$tmp/time" sh -c '
	i=0; while [ $i -lt 300 ]; do
		mosquitto_pub -p '"$port"' -t bench/naive/pulse -m "{\"agent\":\"naive\",\"seq\":$i}"
		i=$((i + 1)); done'
read nu ns < "$tmp/time"
awk -v u="$nu" -v s="$ns" 'BEGIN { printf "%.2f ms CPU per pulse, %.0f ms per 1000 (heart-pulse: above)\n", (u + s) / 300 * 1000, (u + s) / 300 * 1e6 }'
