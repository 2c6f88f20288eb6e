#!/bin/bash
# bench/fleet-scale.sh - ten thousand agents on one host: a round in one
# process (heart-wake --souls --jobs), the fleet's rate limit and the
# soul cache.  Four measurements, a table in bench/results/fleet-scale.txt
# and a chart in bench/results/fleet-scale.png:
#   1. the idle round: N souls, none due: wall and CPU of one round,
#      before (BEFORE's heart-wake, every soul given, as bench/fleetday.sh
#      runs it) and after (heart-wake --souls: the first round, which
#      reads every soul, and the next, from the soul cache);
#   2. the fleet day's CPU per agent-day: N agents x one simulated hour
#      (libfaketime), every wake against the double, before and after;
#   3. a burst: BURST souls all due at once (after an outage), the
#      double answering in 2 s with a 429 above 600 requests a minute,
#      a fleet file of 600 a minute, --jobs 32, a round every real
#      minute until every agent is served: time to drain, 429s, order;
#   4. the steady state: STEADY souls every 30m, the same double,
#      --jobs 32 --span SPAN, a round every real minute for MINUTES
#      minutes (cron's way: a round starts on the minute even if the
#      last still runs): wakes a minute, lateness against the slot
#      (p50, p99), 429s, results lost or duplicated.
# The fleet day (2.) is measured in steady state: an hour of rounds
# before it, not measured, gives every agent its first sight and files.
# Environment: N (10000), BURST (2000), STEADY (10000), MINUTES (10),
# SPAN (heart-wake --span of the rounds of 3. and 4.; 50s; 0: none),
# WARM (rounds before the steady state's MINUTES, shown apart; 2),
# BEFORE (a directory with the reference heart-wake; unset: no "before"),
# DAY_ONLY (set: stop after 2., bench/results left as they are).
set -eu
cd "$(dirname "$0")/.."
top=$PWD
PATH=$top:$PATH
N=${N:-10000} BURST=${BURST:-2000} STEADY=${STEADY:-10000} MINUTES=${MINUTES:-10}
SPAN=${SPAN:-50s} WARM=${WARM:-2}
tmp=$(mktemp -d)
pids=
trap 'kill $pids 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
export TZ=UTC
unset HEART_STORE HEART_FLEET
. t/faketime.bash

double() {	# double DIR SCRIPT: start an LLM double; its URL in $url
	mkdir -p "$1"; : > "$1/requests.jsonl"; printf '%s\n' "$2" > "$1/script.json"
	python3 t/llm-double.py "$1" > /dev/null 2>&1 &
	pids="$pids $!"
	while [ ! -s "$1/port" ]; do sleep 0.05; done
	url="http://127.0.0.1:$(cat "$1/port")/v1"
}

souls() {	# souls DIR N INTERVAL: N souls, the idle chamber off
	mkdir -p "$1"
	for ((i = 1; i <= $2; i++)); do
		printf 'name: a%05d\nheart: { schedule: { interval: %s }, idle: { daily_cap: 0 } }\n' \
		    "$i" "$3" > "$1/a$(printf %05d "$i").yaml"
	done
}

cpu() {	# cpu CMD...: "wall user+sys" of CMD and its children
	/usr/bin/time -f '%e %U %S' "$@" 2>&1 >/dev/null | tail -1 |
	    awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }'
}

out=$tmp/table
: > "$out"
row() { printf '%-46s %s\n' "$1" "$2" | tee -a "$out"; }

double "$tmp/llm0" '{"text": "[IDLE]"}'
export HEART_LLM_URL=$url HEART_LLM_MODEL=double HEART_LLM_PROVIDER=openai
start=$(date -u -d '2026-11-23 00:00:00' +%s)

echo "== 1. the idle round: $N souls, none due"
souls "$tmp/idle" "$N" 30m
export HEART_STATE_DIR=$tmp/state-idle
at_epoch "$start" heart-wake --souls "$tmp/idle" > /dev/null	# first sight
rm -rf "$HEART_STATE_DIR/rounds"
due=$(at_epoch $((start + 1)) heart-wake --souls "$tmp/idle" |
    jq -r 'select(.status != "not_due") | .agent' | wc -l)
rm -rf "$HEART_STATE_DIR/rounds"
if [ -n "${BEFORE:-}" ]; then
	b=$(cpu env FAKETIME="@$(date -u -d "@$((start + 2))" '+%F %T')" \
	    FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 LD_PRELOAD="$FAKETIME_LIB" \
	    bash -c "$BEFORE/heart-wake $tmp/idle/*.yaml")
	row "idle round, before (wall s, CPU s)" "$b"
fi
c=$(cpu env FAKETIME="@$(date -u -d "@$((start + 3))" '+%F %T')" \
    FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 LD_PRELOAD="$FAKETIME_LIB" \
    heart-wake --souls "$tmp/idle")
row "idle round, --souls, first (reads every soul)" "$c"
w=$(cpu env FAKETIME="@$(date -u -d "@$((start + 4))" '+%F %T')" \
    FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 LD_PRELOAD="$FAKETIME_LIB" \
    heart-wake --souls "$tmp/idle")
row "idle round, --souls, from the soul cache" "$w"
row "  (souls due in that second, woken)" "$due"

echo "== 2. the fleet day's CPU per agent-day: $N agents x 1 simulated hour"
hour() {	# hour STATE CMD...: 60 rounds a minute apart, after an hour
	# of them not measured (first sight, every agent's files); CPU
	rm -rf "$1"
	HEART_STATE_DIR=$1 bash -c '
		. t/faketime.bash
		for ((m = -60; m < 0; m++)); do
			at_epoch $(('"$start"' + 86400 + m * 60)) "$@" \
			    > /dev/null 2>&1 || :
		done' bash "${@:2}"
	r0=$(wc -l < "$tmp/llm0/requests.jsonl")
	t=$(HEART_STATE_DIR=$1 /usr/bin/time -f '%U %S' bash -c '
		. t/faketime.bash
		for ((m = 0; m < 60; m++)); do
			at_epoch $(('"$start"' + 86400 + m * 60)) "$@" \
			    > /dev/null 2>&1 || :
		done' bash "${@:2}" 2>&1 | tail -1)
	echo "$t" | awk -v n="$N" -v r=$(($(wc -l < "$tmp/llm0/requests.jsonl") - r0)) \
	    '{ s = $1 + $2; printf "%.1f s an hour; %.1f ms per agent-day (%d requests)\n", s, s * 24 / n * 1000, r }'
}
if [ -n "${BEFORE:-}" ]; then
	row "fleet day CPU, before" "$(hour "$tmp/state-b" bash -c "exec $BEFORE/heart-wake $tmp/idle/*.yaml")"
fi
row "fleet day CPU, --souls (--jobs 1)" "$(hour "$tmp/state-a" heart-wake --souls "$tmp/idle")"
[ -z "${DAY_ONLY:-}" ] || exit 0

# a round every real minute, on the minute; its lines in DIR/rNN
rounds() {	# rounds DIR SOULS COUNT [UNTIL-ALL-SERVED]
	local m=0 next
	while [ "$m" -lt "$3" ]; do
		next=$(( ($(date +%s) / 60 + 1) * 60 ))
		while [ "$(date +%s)" -lt "$next" ]; do sleep 0.2; done
		echo "$next" > "$1/start$(printf %02d "$m")"
		/usr/bin/time -f '%U %S' -o "$1/cpu$(printf %02d "$m")" \
		    heart-wake --souls "$2" --jobs 32 --span "$SPAN" \
		    > "$1/r$(printf %02d "$m")" 2>/dev/null &
		eval "round$m=$!"
		m=$((m + 1))
		if [ -n "${4:-}" ] && [ "$m" -ge 2 ] &&
		    [ "$(cat "$1"/r* | jq -r 'select(.status == "idle" or .status == "error") | .agent' | sort -u | wc -l)" -ge "$4" ]; then
			break
		fi
	done
	wait $(for ((k = 0; k < m; k++)); do eval echo "\$round$k"; done)
	echo "$m"
}

rate='{"delay": 2, "rate": {"requests": 600, "window": 60}}'
fleetfile() {	# fleetfile URL: one endpoint of 600 a minute
	export HEART_FLEET=$tmp/fleet-$RANDOM.yaml
	printf 'endpoints:\n  double:\n    base_url: %s\n    model: double\n    requests_per_minute: 600\n' "$1" > "$HEART_FLEET"
}

echo "== 3. a burst: $BURST agents due at once, 600 a minute, --jobs 32 --span $SPAN"
double "$tmp/llm-burst" "$rate"
burl=$url
export HEART_LLM_URL=$burl HEART_STATE_DIR=$tmp/state-burst
fleetfile "$burl"
souls "$tmp/burst" "$BURST" 1h
now=$(date +%s)
at_epoch $((now - 7200)) heart-wake --souls "$tmp/burst" > /dev/null	# 2 h ago
mkdir -p "$tmp/br"
t0=$(date +%s.%N)
nr=$(rounds "$tmp/br" "$tmp/burst" 30 "$BURST")
python3 - "$tmp/br" "$nr" "$BURST" "$tmp/llm-burst/requests.jsonl" >> "$tmp/burst.txt" <<'PY'
import json, sys, glob, os
d, nr, n, req = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
first = {}; served = []; order_ok = True; deferred = {}; errors = set()
t0 = float(open(os.path.join(d, "start00")).read())
last = 0
for k in range(nr):
    got = 0
    for line in open(os.path.join(d, "r%02d" % k)):
        j = json.loads(line)
        if j["status"] == "idle" and j["agent"] not in first:
            first[j["agent"]] = k; got += 1
            last = max(last, __import__("datetime").datetime.strptime(j["at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=__import__("datetime").timezone.utc).timestamp())
        if j["status"] == "throttled":
            deferred.setdefault(j["agent"], k)
        if j["status"] == "error":
            errors.add(j["agent"])
    served.append(got)
# deferred first: no agent deferred in round k was served after one deferred later
late = [first[a] - deferred[a] for a in deferred if a in first]
lim = sum(1 for l in open(req) if json.loads(l).get("limited"))
print("burst: served %d of %d in %d rounds (errors: %d); drained in %.0f s (%.1f min) after the first round" % (len(first), n, nr, len(errors - set(first)), last - t0, (last - t0) / 60))
print("burst: served per round: %s" % " ".join(map(str, served)))
print("burst: 429s from the double: %d; rounds waited, at most: %d" % (lim, max(late) if late else 0))
with open(os.path.join(d, "served.dat"), "w") as f:
    for k, s in enumerate(served):
        f.write("%d %d\n" % (k, s))
PY
cat "$tmp/burst.txt" | tee -a "$out"
unset HEART_FLEET

echo "== 4. the steady state: $STEADY souls every 30m, 600 a minute, --jobs 32 --span $SPAN, $MINUTES real minutes"
double "$tmp/llm-steady" "$rate"
surl=$url
export HEART_LLM_URL=$surl HEART_STATE_DIR=$tmp/state-steady
fleetfile "$surl"
souls "$tmp/steady" "$STEADY" 30m
# first sight: slots spread over 30m from now; the slots that fall
# while it reads the fleet, and before the first round, are a backlog
# the first WARM rounds clear: they are run, and their figures shown,
# apart from the steady state's
t0=$(date +%s)
heart-wake --souls "$tmp/steady" > /dev/null
first=$(($(date +%s) - t0))
mkdir -p "$tmp/sr"
l0=$(cut -d' ' -f1-3 /proc/loadavg)
rounds "$tmp/sr" "$tmp/steady" $((MINUTES + WARM)) > /dev/null
l1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$tmp/sr" "$((MINUTES + WARM))" "$STEADY" "$tmp/llm-steady/requests.jsonl" "$WARM" "$first" >> "$tmp/steady.txt" <<'PY'
import json, sys, os, datetime
d, nr, n, req = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
warm, first = int(sys.argv[5]), int(sys.argv[6])
IV = 1800
def offset(name):
    h = 1469598103934665603
    for c in name.encode():
        h ^= c
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 29
    return h % IV
lat, lat_round, per = [], [], []
seen = {}
dup = lost = 0
starts = [int(open(os.path.join(d, "start%02d" % k)).read()) for k in range(nr)]
for k in range(nr):
    lines = open(os.path.join(d, "r%02d" % k)).read().splitlines()
    lost += n - len(set(json.loads(l)["agent"] for l in lines))
    w = 0
    for l in lines:
        j = json.loads(l)
        if j["status"] not in ("ok", "idle"):
            continue
        w += 1
        at = datetime.datetime.strptime(j["at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
        off = offset(j["agent"])
        slot = at - ((at - off) % IV)
        key = (j["agent"], slot)
        if key in seen: dup += 1
        seen[key] = 1
        if k < warm:
            continue
        lat.append(at - slot)
        # what heart adds: from the slot, or the round's start if later
        lat_round.append(at - max(slot, starts[k]))
    per.append(w)
lat.sort(); lat_round.sort()
q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))] if v else 0
lim = sum(1 for l in open(req) if json.loads(l).get("limited"))
print("steady: first sight of the fleet %d s; the %d warm-up rounds after it served %s" % (first, warm, " ".join(map(str, per[:warm]))))
print("steady: wakes a minute (mean of %d rounds): %.0f; per round: %s" % (nr - warm, sum(per[warm:]) / max(nr - warm, 1), " ".join(map(str, per[warm:]))))
print("steady: lateness against the slot: p50 %.0f s, p99 %.0f s" % (q(lat, .5), q(lat, .99)))
print("steady: against the slot or its round's start, if later: p50 %.0f s, p99 %.0f s" % (q(lat_round, .5), q(lat_round, .99)))
print("steady: 429s from the double: %d; results lost: %d; wakes duplicated: %d" % (lim, lost, dup))
with open(os.path.join(d, "per.dat"), "w") as f:
    for k, s in enumerate(per[warm:]):
        f.write("%d %d\n" % (k, s))
PY
cat "$tmp/steady.txt" | tee -a "$out"
row "steady: CPU of a round (user+sys), mean, max" "$(cat "$tmp"/sr/cpu* |
    awk '{ c = $1 + $2; s += c; if (c > m) m = c } END { printf "%.2f s, %.2f s", s / NR, m }')"
row "steady: load average before, after ($(nproc) cores)" "$l0; $l1"

mkdir -p bench/results
{
	echo "bench/fleet-scale.sh on $(nproc) cores: N=$N BURST=$BURST STEADY=$STEADY MINUTES=$MINUTES SPAN=$SPAN"
	cat "$out"
} > bench/results/fleet-scale.txt
if command -v gnuplot > /dev/null; then
	gnuplot <<GP
set terminal pngcairo size 900,450
set output "bench/results/fleet-scale.png"
set title "heart-wake --souls --jobs 32, 600 requests a minute: wakes per round"
set xlabel "round (a real minute apart)"
set ylabel "wakes answered"
set key top right
set style data linespoints
plot "$tmp/sr/per.dat" using 1:2 title "steady: $STEADY souls every 30m" lw 2, \
     "$tmp/br/served.dat" using 1:2 title "burst: $BURST due at once (first wakes)" lw 2
GP
	echo "chart: bench/results/fleet-scale.png"
fi
