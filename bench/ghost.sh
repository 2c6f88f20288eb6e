#!/bin/sh
# bench/ghost.sh - what heart-ghost costs.  Prints figures; asserts nothing.
#   1. the ghost path: 100,000 idle results, results per second
#      (target: at least 100,000 a second; no disk is touched)
#   2. the paper's mix: 100,000 results, 78% idle, 22% ok over 3 agents,
#      results per second, every ok committed and printed
#   3. the cost of one commit (22,000 ok results), on the state disk and
#      on tmpfs, where fsync costs nothing: the difference is the fsync,
#      the rest is parsing and writing
#   4. a replay: the same 22,000 ok results again; every wake id is found
#      in the history, nothing is written or delivered
#   5. the wake-id check of a single result (one process, as from cron)
#      against a history of 30,000 wakes, as a ratio to an empty history
# Best of three runs each.
set -eu
cd "$(dirname "$0")/.."
bin=$PWD/heart-ghost
tmp=$(mktemp -d)
shm=$(mktemp -d /dev/shm/heart-ghost.XXXXXX 2>/dev/null || echo)
trap 'rm -rf "$tmp" ${shm:+"$shm"}' EXIT INT TERM

gen() {
	python3 t/gen-wakes.py "$@"
}

# best STATE_DIR FILE: the best wall time of three runs, in seconds
best() {
	b=
	for i in 1 2 3; do
		rm -rf "$1"
		s=$(date +%s.%N)
		HEART_STATE_DIR=$1 "$bin" "$2" > /dev/null
		e=$(date +%s.%N)
		b=$(awk -v s="$s" -v e="$e" -v b="$b" \
		    'BEGIN { t = e - s; print (b == "" || t < b) ? t : b }')
	done
	echo "$b"
}

gen -n 100000 --ok 0 > "$tmp/idle"
gen -n 100000 --ok 22 > "$tmp/mix"
gen -n 22000 --ok 100 > "$tmp/ok"
echo "== input: $(wc -c < "$tmp/mix") bytes of 100,000 results" \
    "($(grep -c '"status":"ok"' "$tmp/mix") ok)"

t=$(best "$tmp/state" "$tmp/idle")
awk -v t="$t" 'BEGIN { printf "ghost path: 100000 idle results in %.3f s: %.0f results/s (target >= 100000)\n", t, 100000 / t }'
[ -e "$tmp/state" ] && echo "ghost path: the state directory was created (it must not be)"

t=$(best "$tmp/state" "$tmp/mix")
awk -v t="$t" 'BEGIN { printf "78%% idle:   100000 results in %.3f s: %.0f results/s (22000 commits)\n", t, 100000 / t }'

d=$(best "$tmp/state" "$tmp/ok")
awk -v t="$d" 'BEGIN { printf "commit:     %.1f us each on the state disk (%.0f/s)\n", t / 22000 * 1e6, 22000 / t }'
if [ -n "$shm" ]; then
	m=$(best "$shm/state" "$tmp/ok")
	awk -v d="$d" -v m="$m" 'BEGIN { printf "commit:     %.1f us each on tmpfs (no fsync cost): fsync is %.0f%% of a commit\n", m / 22000 * 1e6, (d - m) / d * 100 }'
fi

# 4. a replay of what was just committed: best of three on a kept state
rm -rf "$tmp/state"
HEART_STATE_DIR=$tmp/state "$bin" "$tmp/ok" > /dev/null
r=
for _ in 1 2 3; do
	s=$(date +%s.%N)
	HEART_STATE_DIR=$tmp/state "$bin" "$tmp/ok" > /dev/null
	e=$(date +%s.%N)
	r=$(awk -v s="$s" -v e="$e" -v b="$r" \
	    'BEGIN { t = e - s; print (b == "" || t < b) ? t : b }')
done
awk -v t="$r" -v d="$d" 'BEGIN { printf "replay:     22000 ok results again in %.3f s: %.1f us each, %.2f of a first commit; nothing written\n", t, t / 22000 * 1e6, t / d }'

# 5. one result, one process: into a history of 30,000 wakes and into
# an empty one (the history restored before each run)
gen -n 30000 --ok 100 --agents solo --pad 150 > "$tmp/big"
gen -n 1 --ok 100 --agents solo --id one > "$tmp/one"
rm -rf "$tmp/big-state" "$tmp/empty-state"
HEART_STATE_DIR=$tmp/big-state "$bin" "$tmp/big" > /dev/null
h=$tmp/big-state/agents/solo/history.jsonl
cp "$h" "$tmp/big-history"
one() {	# one STATE: the best of five single commits, history restored
	b=
	for _ in 1 2 3 4 5; do
		if [ "$1" = big ]; then
			cp "$tmp/big-history" "$h"
		else
			rm -rf "$tmp/empty-state"
		fi
		s=$(date +%s.%N)
		HEART_STATE_DIR=$tmp/$1-state "$bin" "$tmp/one" > /dev/null
		e=$(date +%s.%N)
		b=$(awk -v s="$s" -v e="$e" -v b="$b" \
		    'BEGIN { t = e - s; print (b == "" || t < b) ? t : b }')
	done
	echo "$b"
}
bt=$(one big)
et=$(one empty)
awk -v b="$bt" -v e="$et" -v n="$(wc -c < "$tmp/big-history")" 'BEGIN { printf "one result: %.2f ms into a history of 30000 wakes (%.0f MB), %.2f ms into none: %.1fx\n", b * 1e3, n / 1048576, e * 1e3, b / e }'
