#!/bin/sh
# bench/cap.sh - what one heart-cap take costs, and how the counter holds
# up under contention.  Prints figures; asserts nothing.
#   1. wall time of `heart-cap take' as a ratio to /bin/true (hyperfine)
#   2. takes per second with 1, 2, 8 and 32 concurrent processes, and
#      whether any run admitted more than the cap
set -eu
cd "$(dirname "$0")/.."
bin=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
export HEART_STATE_DIR=$tmp/state

# meet NAME [ARG...]: heart knows the agent NAME from now on, its soul
# given once (a take or a record of an agent it has never met is
# refused); ARGs go to heart-cap reset
meet() {
	printf 'name: %s\nheart: {}\n' "$1" > "$tmp/$1.yaml"
	met=$tmp/$1.yaml
	shift
	"$bin/heart-cap" reset --soul "$met" "$@"
}
meet bench

echo "== heart-cap take vs /bin/true (hyperfine, 300 runs each)"
hyperfine -N -w 20 -r 300 --export-json "$tmp/h.json" \
	"$bin/heart-cap take bench --cap 1000000000" /bin/true >/dev/null 2>&1
jq -r '.results as $r | ($r[0].mean / $r[1].mean) as $q |
	"take: \($r[0].mean * 1e6 | floor) us, true: \($r[1].mean * 1e6 | floor) us, ratio \($q * 100 | round / 100) (target <= 2.0)"' "$tmp/h.json"

echo "== contention: 2000 takes against a cap of 1000, N processes at once"
for n in 1 2 8 32; do
	rm -rf "$HEART_STATE_DIR"
	meet herd
	per=$((2000 / n))
	start=$(date +%s.%N)
	i=0
	while [ $i -lt $n ]; do
		( j=0; while [ $j -lt $per ]; do
			"$bin/heart-cap" take herd --cap 1000 || :
			j=$((j + 1)); done ) &
		i=$((i + 1))
	done
	wait
	end=$(date +%s.%N)
	used=$(jq .total "$HEART_STATE_DIR/agents/herd/cap.json")
	awk -v n="$n" -v t="$((per * n))" -v s="$start" -v e="$end" \
	    -v u="$used" 'BEGIN { printf "%2d procs: %6.0f takes/s, admitted %d of cap 1000 (%s)\n", n, t / (e - s), u, (u > 1000 ? "OVERSHOOT" : "no overshoot") }'
done
