#!/bin/bash
# cover.sh redis STORE_SUITE... | cover.sh asan - the lines of heart's C
# that a pass of make check leaves to another, by gcov's line coverage
# from a build with --coverage of a copy of the tree in build/cover/.
#
# redis: the lines the store suites reach over a Redis store (make
# check's redis pass) and that the same suites over files with
# heart-redis.bats, the Redis store's own suite, do not.  The sanitized
# pass runs those last, and not the store suites over Redis
# (t/check.sh): an empty list says it still reaches, under the
# sanitizers, every line the redis pass reaches.  Exit 1 if any is in
# the stores' code (lib/store.c, redis*.c); a line elsewhere is
# code both stores run, reached by the chance of timing (a tool's exit
# racing its output) or worth a look.  make cover-redis.
#
# asan: the lines the long simulations reach (the tests that call
# plain_long, which the sanitized pass skips) and the sanitized pass's
# tests (every file as that pass runs it, HEART_SANITIZED=1) do not:
# an empty list says the sanitizers look at every line of them all the
# same.  Exit 1 if there is any.  make cover-asan.
#
# Prints FILE:LINE for each line.  Exit 74 if a test failed (its output
# in build/cover/).
set -eu
cd "$(dirname "$0")/.."
top=$PWD b=$PWD/build/cover
mode=${1:-}
[ $# -gt 0 ] && shift
if [ "$mode" != asan ] && { [ "$mode" != redis ] || [ $# -eq 0 ]; }; then
	echo "usage: t/cover.sh redis STORE_SUITE... | t/cover.sh asan" >&2
	exit 64
fi
rm -rf "$b"
mkdir -p "$b/tree"
tar -cf - --exclude=./build --exclude=./node_modules --exclude=./.git . |
    tar -xf - -C "$b/tree"
# the dashboard's tests need build/mizpah, made from npm's packages
# (installed in the tree by make cover-redis and cover-asan)
ln -s "$top/node_modules" "$b/tree/node_modules"
make -s -C "$b/tree" CFLAGS='-O0 -g --coverage' LDFLAGS=--coverage \
    all tprogs mizpah > "$b/build.log" 2>&1 || {
	cat "$b/build.log" >&2
	exit 74
}

# reach LABEL ENV FILTER FILE...: run the files' tests against the
# build, two files at a time, with ENV (VAR=VALUE ...) and, unless
# empty, bats's --filter FILTER; keep the lines they reached, as
# FILE:LINE, in $b/LABEL (gcov's runtime merges the counts of
# processes that end at once)
reach() {
	local label=$1 env=$2 filter=$3
	shift 3
	find "$b/tree" -name '*.gcda' -delete
	export b label env filter
	# shellcheck disable=SC2016,SC2086
	if ! printf '%s\n' "$@" | parallel --jobs 2 '
	    log=$b/$label-$(basename {}).tap
	    env $env HEART_BIN=$b/tree HEART_TBIN=$b/tree/build/t \
		bats ${filter:+--filter "$filter"} {} > "$log" 2>&1 ||
	    { echo "cover: {} failed ($label): see $log" >&2; false; }'; then
		exit 74
	fi
	(cd "$b/tree" && find . -name '*.gcda' | while read -r g; do
		gcov -t -o "${g%/*}" "$g" 2> /dev/null
	done) | awk '
		/^ *-: *0:Source:/ { sub(/.*:Source:/, ""); src = $0; next }
		/^ *[0-9]+\*?: *[0-9]+:/ {
			split($0, a, ":"); gsub(/ /, "", a[2]); print src ":" a[2]
		}' | sort -u > "$b/$label"
}

# long FILE: the names of FILE's tests that call plain_long, as one
# regular expression for bats's --filter
# shellcheck disable=SC2016
long() {
	awk '/^@test "/ { name = $0; sub(/^@test "/, "", name)
		sub(/" \{$/, "", name); next }
	    /^[ \t]*plain_long([ \t]|$)/ && name != "" { print name; name = "" }' "$1" |
	    sed 's/[][\\.*^$()+?{}|]/\\&/g; s/.*/^&$/' | paste -sd '|'
}

if [ "$mode" = redis ]; then
	reach files "" "" "$@" t/heart-redis.bats
	reach redis HEART_TEST_STORE=redis "" "$@"
	comm -13 "$b/files" "$b/redis" > "$b/redis-only"
	echo "cover: $(wc -l < "$b/redis") lines reached over Redis," \
	    "$(wc -l < "$b/redis-only") of them not over files or by" \
	    "heart-redis.bats"
	cat "$b/redis-only"
	if grep -Eq '^lib/(store|redis[a-z]*)\.c:' "$b/redis-only"; then
		exit 1
	fi
	exit 0
fi
reach sanitized HEART_SANITIZED=1 "" t/*.bats
: > "$b/long"
n=0
for f in t/*.bats; do
	re=$(long "$f")
	[ -n "$re" ] || continue
	reach "long-$n" "" "$re" "$f"
	cat "$b/long-$n" >> "$b/long"
	n=$((n + 1))
done
sort -u -o "$b/long" "$b/long"
comm -13 "$b/sanitized" "$b/long" > "$b/long-only"
echo "cover: $(wc -l < "$b/long") lines reached by the long simulations," \
    "$(wc -l < "$b/long-only") of them not by the sanitized pass"
cat "$b/long-only"
[ ! -s "$b/long-only" ]
