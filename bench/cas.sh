#!/bin/sh
# bench/cas.sh - how the Redis store should compare-and-set a document:
# WATCH, GET, MULTI, SET, EXEC (lib/redisstore.c) against one generic
# Lua script (EVALSHA), with 1, 8 and 32 processes on one key
# (bench/cas.c).  Prints figures; asserts nothing.  lib/redisstore.c
# uses WATCH: no script to load or lose (NOSCRIPT), nothing but plain
# commands, and the round trip it adds is lost in a process start
# (bench/redis.sh).  The Redis is the benchmark's own, on a Unix
# socket, configured as heart(7) says: appendonly yes, appendfsync
# always.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'redis-cli -s "$tmp/r.sock" shutdown nosave >/dev/null 2>&1 || :; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
	$(pkg-config --cflags hiredis) -o "$tmp/cas" bench/cas.c \
	$(pkg-config --libs hiredis)
redis-server --port 0 --unixsocket "$tmp/r.sock" --dir "$tmp" \
	--appendonly yes --appendfsync always --save '' --daemonize yes \
	--logfile "$tmp/redis.log" >/dev/null
for i in $(seq 50); do
	redis-cli -s "$tmp/r.sock" ping >/dev/null 2>&1 && break
	sleep 0.1
done
echo "== one document, N processes each adding 1 to it 2000/N times"
echo "how    procs  rounds/s  lost rounds  count"
for n in 1 8 32; do
	for how in watch lua; do
		"$tmp/cas" "$tmp/r.sock" "$how" "$n" $((2000 / n))
	done
done
