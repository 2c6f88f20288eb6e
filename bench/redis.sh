#!/bin/sh
# bench/redis.sh - what `heart-cap take' costs with the Redis store
# against the file store, in one run.  Prints figures; asserts nothing.
#   1. the latency of one take, alone (hyperfine: process start, connect,
#      GET and WATCH, GET, MULTI, SET, EXEC; or lock, read, write, fsync,
#      rename)
#   2. takes per second and the latency of a take with 1, 8 and 32
#      processes taking at once, and whether any run admitted more than
#      the cap
# The Redis is a redis-server of the benchmark's own on a loopback port,
# configured as heart(7) says a user must: appendonly yes, appendfsync
# always.
set -eu
cd "$(dirname "$0")/.."
bin=$PWD
tmp=$(mktemp -d)
pid=
stop() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || :
	rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 1' INT TERM
export HEART_STATE_DIR="$tmp/state"
unset HEART_STORE HEART_REDIS_PASSWORD

port=
for try in 1 2 3 4 5 6 7 8; do
	# below the kernel's ephemeral ports (32768 on), where a client's
	# connection may hold the port a while
	p=$(awk -v s="$$$try" 'BEGIN { srand(s); print 20000 + int(rand() * 12768) }')
	if redis-server --port "$p" --bind 127.0.0.1 --dir "$tmp" \
	    --appendonly yes --appendfsync always --save '' \
	    --daemonize yes --pidfile "$tmp/redis.pid" \
	    --logfile "$tmp/redis.log" >/dev/null; then
		for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
			pid=$(cat "$tmp/redis.pid" 2>/dev/null) || pid=
			[ -n "$pid" ] && redis-cli -p "$p" INFO server 2>/dev/null |
			    grep -q "^process_id:$pid" && { port=$p; break; }
			sleep 0.05
		done
	fi
	[ -n "$port" ] && break
done
[ -n "$port" ] || { echo "bench/redis.sh: redis-server did not start" >&2; exit 1; }
redis=redis://127.0.0.1:$port

# meet NAME [ARG...]: heart knows the agent NAME from now on, its soul
# given once (a take or a record of an agent it has never met is
# refused); ARGs go to heart-cap reset
meet() {
	printf 'name: %s\nheart: {}\n' "$1" > "$tmp/$1.yaml"
	met=$tmp/$1.yaml
	shift
	"$bin/heart-cap" reset --soul "$met" "$@"
}
meet bench --store file
meet bench --store "$redis"

echo "== one heart-cap take, alone (hyperfine, 300 runs each)"
hyperfine -N -w 20 -r 300 --export-json "$tmp/h.json" \
	"$bin/heart-cap take bench --cap 1000000000 --store file" \
	"$bin/heart-cap take bench --cap 1000000000 --store $redis" \
	>/dev/null 2>&1
jq -r '.results[] | (.command | sub(".* --store "; "") |
	if . == "file" then "file " else "redis" end) as $s |
	"\($s): \(.mean * 1e6 | floor) us +- \(.stddev * 1e6 | floor) us"' \
	"$tmp/h.json"

echo "== 2000 takes against a cap of 1000, N processes at once"
echo "store  procs   takes/s  per take (ms)  admitted"
for store in file redis; do
	s=$store
	[ "$store" = redis ] && s=$redis
	for n in 1 8 32; do
		rm -rf "$HEART_STATE_DIR"
		redis-cli -p "$port" FLUSHALL >/dev/null
		meet herd --store "$s"
		per=$((2000 / n))
		start=$(date +%s.%N)
		i=0
		while [ $i -lt $n ]; do
			( j=0; while [ $j -lt $per ]; do
				"$bin/heart-cap" take herd --cap 1000 --store "$s" || :
				j=$((j + 1)); done ) &
			i=$((i + 1))
		done
		wait
		end=$(date +%s.%N)
		used=$("$bin/heart-cap" status herd --json --store "$s" | jq .used)
		awk -v st="$store" -v n="$n" -v t="$((per * n))" -v s="$start" \
		    -v e="$end" -v u="$used" -v per="$per" 'BEGIN {
			printf "%-5s  %5d  %8.0f  %13.2f  %d of 1000 (%s)\n",
			    st, n, t / (e - s), (e - s) * 1000 / per, u,
			    (u > 1000 ? "OVERSHOOT" : "no overshoot") }'
	done
done
