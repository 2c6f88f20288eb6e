#!/bin/sh
# bench/breaker.sh - what consulting the breaker costs a wake.  Prints
# figures; asserts nothing.
#   1. wall time of `heart-breaker check' on a closed breaker, as a ratio
#      to /bin/true in the same hyperfine run (target <= 2.0: no libcurl,
#      no libmosquitto linked)
#   2. the same on an open breaker (the refusal a storm of wakes meets)
#   3. `heart-breaker record ok' (a lock and, when counts change, a write)
set -eu
cd "$(dirname "$0")/.."
bin=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
export HEART_STATE_DIR=$tmp/state

ratio() {	# ratio NAME: hyperfine's first result against its second
	jq -r --arg n "$1" '.results as $r | ($r[0].mean / $r[1].mean) as $q |
	    "\($n): \($r[0].mean * 1e6 | floor) us, " +
	    "true: \($r[1].mean * 1e6 | floor) us, " +
	    "ratio \($q * 100 | round / 100)"' "$tmp/h.json"
}

# meet NAME [ARG...]: heart knows the agent NAME from now on, its soul
# given once (a take or a record of an agent it has never met is
# refused); ARGs go to heart-cap reset
meet() {
	printf 'name: %s\nheart: {}\n' "$1" > "$tmp/$1.yaml"
	met=$tmp/$1.yaml
	shift
	"$bin/heart-cap" reset --soul "$met" "$@"
}
meet closed
meet open
"$bin/heart-breaker" record closed ok
for i in 1 2 3; do
	"$bin/heart-breaker" record open llm-fail --reason bench >/dev/null
done

echo "== heart-breaker check vs /bin/true (hyperfine, 300 runs each)"
hyperfine -N -w 20 -r 300 --export-json "$tmp/h.json" \
	"$bin/heart-breaker check closed" /bin/true >/dev/null 2>&1
ratio "check, closed" | sed 's/$/ (target <= 2.0)/'
hyperfine -N -i -w 20 -r 300 --export-json "$tmp/h.json" \
	"$bin/heart-breaker check open" /bin/true >/dev/null 2>&1
ratio "check, open"
hyperfine -N -w 20 -r 300 --export-json "$tmp/h.json" \
	"$bin/heart-breaker record closed ok" /bin/true >/dev/null 2>&1
ratio "record ok"
echo "== linked libraries"
ldd "$bin/heart-breaker" | awk '{ print "   ", $1 }'
