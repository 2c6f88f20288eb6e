#!/bin/bash
# check.sh JOBS FUZZRUNS STORE_SUITE... -- FUZZ_TARGET... - make check's
# passes as one pool of jobs, JOBS at a time (GNU parallel): every bats
# file with the programs as built (pass plain) and again built with
# AddressSanitizer and UndefinedBehaviorSanitizer (asan; a test that
# runs none of them skips itself there: plain_only), the cap and
# breaker suites STORE_SUITE again with a Redis store (redis), and each
# fuzz target on FUZZRUNS inputs mutated from its seeds from a fixed
# seed, the same work on any machine under any load (fuzz/run --check;
# make fuzz explores, for as long as it is given).  A job is one
# file of one pass; a file's tests run in order.  The sanitized pass
# runs heart-redis.bats, the Redis store's own suite, which reaches
# every line the redis pass reaches (t/cover.sh redis shows it), so the
# store suites do not run a fourth time, sanitized over Redis; `check.sh
# --one asan-redis FILE 0` runs one so, by hand.  Nor does it run the
# long simulations (plain_long in t/helpers.bash), whose every line its
# other tests reach (t/cover.sh asan shows it).
# The jobs that took the most CPU in the last run (build/check/jobs)
# start first, so that the CPUs are kept busy from the start and the
# last jobs to run are short; a job not in it, by the CPU seconds of a
# whole run kept in t/check.times ("PASS FILE SECONDS", the most first:
# `check.sh --times` writes it from the last run), else by its file's
# length.  A line is printed as each job ends; its output is kept in
# build/check/PASS/FILE.tap (fuzz: .log) and printed at the end if it
# failed; with its wall time, the job's CPU seconds (its processes'
# user and system time), and at the end their sum: a figure that does
# not grow when others load the machine.  BATSFLAGS are handed to
# bats.  Exit 1 if any job failed.
#
# check.sh --one PASS FILE FUZZRUNS: one job (what the pool runs).
set -u
cd "$(dirname "$0")/.." || exit
top=$PWD out=build/check

one() {
	local pass=$1 f=$2 runs=$3 log rc=0 t0 what cpu
	local plain=(HEART_BIN="$top" HEART_TBIN="$top/build/t")
	local asan=(HEART_BIN="$top/build/asan"
	    HEART_TBIN="$top/build/asan/t" HEART_SANITIZED=1)

	mkdir -p "$out/$pass"
	log=$out/$pass/${f##*/}.tap
	[ "$pass" != fuzz ] || log=$out/fuzz/$f.log
	t0=$(date +%s)
	# shellcheck disable=SC2086
	case $pass in
	plain)	env "${plain[@]}" bats ${BATSFLAGS:-} "$f" ;;
	redis)	env HEART_TEST_STORE=redis "${plain[@]}" bats ${BATSFLAGS:-} "$f" ;;
	asan)	env "${asan[@]}" bats ${BATSFLAGS:-} "$f" ;;
	asan-redis)
		env HEART_TEST_STORE=redis "${asan[@]}" bats ${BATSFLAGS:-} "$f" ;;
	fuzz)	sh fuzz/run --check "$f" "$runs" ;;
	*)	echo "check.sh: $pass: no such pass"; false ;;
	esac > "$log" 2>&1 3>&- || rc=$?
	if [ "$pass" = fuzz ]; then
		what=$(tail -n 1 "$log")
	else
		what="$(grep -c '^ok' "$log") ok, $(grep -c '^not ok' "$log") not ok"
	fi
	[ $rc -eq 0 ] || echo "$log" >> "$out/failed"
	times > "$log.times"	# in this shell: a subshell's would be its own
	cpu=$(cpu_secs < "$log.times")
	rm -f "$log.times"
	printf '%-4s %-10s %-26s %4ss %4ss cpu  %s\n' "$([ $rc -eq 0 ] &&
	    echo ok || echo FAIL)" "$pass" "${f##*/}" "$(($(date +%s) - t0))" \
	    "$cpu" "$what"
	return $rc
}

# cpu_secs < TIMES: the user and system seconds of the children in the
# output of times (the job's processes that ended; not a daemon that
# left the tree)
cpu_secs() {
	local u s
	read -r _
	read -r u s
	awk -v u="$u" -v s="$s" 'function sec(t, m) {
		m = t; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", t); sub(/s$/, "", t)
		return m * 60 + t
	} BEGIN { printf "%d\n", sec(u) + sec(s) + 0.5 }'
}

if [ "${1:-}" = --one ]; then
	one "$2" "$3" "$4"
	exit
fi
# jobs_cpu < JOBS: "PASS FILE SECONDS" for each job line check.sh printed
jobs_cpu() {
	awk '$1 == "ok" || $1 == "FAIL" { c = $5; sub(/s$/, "", c)
		printf "%s %s %d\n", $2, ($2 == "fuzz" ? "" : "t/") $3, c }'
}

if [ "${1:-}" = --times ]; then	# t/check.times from the last run
	[ -f "$out/jobs" ] || { echo "check.sh: no $out/jobs" >&2; exit 1; }
	jobs_cpu < "$out/jobs" | sort -k 3,3rn -k 1,2 > t/check.times
	exit
fi

jobs=$1 runs=$2
shift 2
store=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do store+=("$1"); shift; done
shift
# the weight of a job: its CPU seconds in the last run, else a guess
declare -A last=()
while read -r p f c; do
	last["$p $f"]=$c
done < <(cat t/check.times 2>/dev/null
    [ ! -f "$out/jobs" ] || jobs_cpu < "$out/jobs")
list=()
for f in t/*.bats; do list+=("plain $f" "asan $f"); done
for f in "${store[@]}"; do list+=("redis $f"); done
for t in "$@"; do list+=("fuzz $t"); done
weighed() {
	local j w
	for j in "${list[@]}"; do
		w=${last[$j]:-}
		if [ -z "$w" ]; then
			case $j in	# (a line is some 30 ms of CPU)
			fuzz*)	w=5 ;;
			asan*)	w=$(($(wc -l < "${j#* }") / 20)) ;;
			*)	w=$(($(wc -l < "${j#* }") / 30)) ;;
			esac
		fi
		echo "$w $j"
	done | sort -rn | cut -d ' ' -f 2-
}
order=$(weighed)
rm -rf "$out.new"
mkdir -p "$out.new"
[ -f "$out/joblog" ] && mv "$out/joblog" "$out.new/joblog.last"
[ -f "$out/jobs" ] && mv "$out/jobs" "$out.new/jobs.last"
rm -rf "$out"
mv "$out.new" "$out"
# shellcheck source=t/faketime.bash
. t/faketime.bash	# once for every job
t0=$(date +%s)
echo "check: $(echo "$order" | wc -l) jobs, $jobs at a time; output in $out/"
rc=0
echo "$order" | parallel --jobs "$jobs" --joblog "$out/joblog" \
    --colsep ' ' bash t/check.sh --one '{1}' '{2}' "$runs" |
    tee "$out/jobs" || rc=1
[ "${PIPESTATUS[1]}" -eq 0 ] || rc=1
total=$(($(date +%s) - t0))
if [ -f "$out/failed" ]; then
	while read -r f; do
		echo "=== $f"
		cat "$f"
	done < "$out/failed"
fi
echo "check: ${total}s, $(awk '{ s += $5 } END { print s }' "$out/jobs")s cpu," \
    "$(uptime | sed 's/.*load/load/'), $([ $rc -eq 0 ] && echo ok ||
    echo FAILED)"
exit $rc
