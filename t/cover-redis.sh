#!/bin/bash
# cover-redis.sh STORE_SUITE... - the lines of heart's C that the store
# suites reach over a Redis store (make check's redis pass) and that
# the same suites over files with heart-redis.bats, the Redis store's
# own suite, do not.  The sanitized pass runs those last, and not the
# store suites over Redis (t/check.sh): an empty list says it still
# reaches, under the sanitizers, every line the redis pass reaches.
# Line coverage by gcov, from a build with --coverage of a copy of the
# tree in build/cover/; prints FILE:LINE for each line, and exits 1 if
# any is in the stores' code (lib/store.c, redis*.c, rds.c); a line
# elsewhere is code both stores run, reached by the chance of timing
# (a tool's exit racing its output) or worth a look.  Exit 74 if a
# test failed (its output in build/cover/).  make cover-redis.
set -eu
cd "$(dirname "$0")/.."
b=$PWD/build/cover
if [ $# -eq 0 ]; then
	echo "usage: t/cover-redis.sh STORE_SUITE..." >&2
	exit 64
fi
rm -rf "$b"
mkdir -p "$b/tree"
tar -cf - --exclude=./build --exclude=./node_modules --exclude=./.git . |
    tar -xf - -C "$b/tree"
make -s -C "$b/tree" CFLAGS='-O0 -g --coverage' LDFLAGS=--coverage \
    all tprogs > "$b/build.log" 2>&1 || {
	cat "$b/build.log" >&2
	exit 74
}

# reach LABEL STORE FILE...: run the files' tests against the build
# (HEART_TEST_STORE=STORE), and keep the lines they reached, as
# FILE:LINE, in $b/LABEL
reach() {
	local label=$1 store=$2 f log
	shift 2
	find "$b/tree" -name '*.gcda' -delete
	for f in "$@"; do
		log=$b/$label-${f##*/}.tap
		if ! HEART_TEST_STORE=$store HEART_BIN=$b/tree \
		    HEART_TBIN=$b/tree/build/t bats "$f" > "$log" 2>&1; then
			echo "cover-redis: $f failed ($label): see $log" >&2
			exit 74
		fi
	done
	(cd "$b/tree" && find . -name '*.gcda' | while read -r g; do
		gcov -t -o "${g%/*}" "$g" 2> /dev/null
	done) | awk '
		/^ *-: *0:Source:/ { sub(/.*:Source:/, ""); src = $0; next }
		/^ *[0-9]+\*?: *[0-9]+:/ {
			split($0, a, ":"); gsub(/ /, "", a[2]); print src ":" a[2]
		}' | sort -u > "$b/$label"
}

reach files "" "$@" t/heart-redis.bats
reach redis redis "$@"
comm -13 "$b/files" "$b/redis" > "$b/redis-only"
echo "cover-redis: $(wc -l < "$b/redis") lines reached over Redis," \
    "$(wc -l < "$b/redis-only") of them not over files or by" \
    "heart-redis.bats"
cat "$b/redis-only"
! grep -Eq '^lib/(store|redis[a-z]*|rds)\.c:' "$b/redis-only"
