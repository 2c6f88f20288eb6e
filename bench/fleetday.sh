#!/bin/bash
# bench/fleetday.sh - the paper's fleet day (table 2, section 2) on a
# simulated day: 75 agents with the paper's mix driven every minute for
# 24 hours under libfaketime, against the LLM test double answering
# [IDLE] 78% of the time; one agent's provider fails for two hours.
# Prints a table beside the paper's figures and the naive poller's,
# writes bench/results/fleetday.{txt,png}; then measures heart's own CPU
# per agent-day with 10,000 agents.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
PATH=$top:$PATH
tmp=$(mktemp -d)
trap 'kill $d1 $d2 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
export HEART_STATE_DIR=$tmp/state TZ=UTC
. t/faketime.bash

double() {	# double DIR SCRIPT: start an LLM double, print its URL
	mkdir -p "$1"; : > "$1/requests.jsonl"; printf '%s\n' "$2" > "$1/script.json"
	python3 t/llm-double.py "$1" > /dev/null 2>&1 &
	while [ ! -s "$1/port" ]; do sleep 0.05; done
	echo "http://127.0.0.1:$(cat "$1/port")/v1"
}
url=$(double "$tmp/llm" '{"idle_ratio": 0.78, "seed": 5, "text": "ALERT: something worth your time."}')
d1=$(pgrep -n -f "llm-double.py $tmp/llm")
furl=$(double "$tmp/fail" '{"idle_ratio": 0.78, "seed": 6}')
d2=$(pgrep -n -f "llm-double.py $tmp/fail")
export HEART_LLM_URL=$url HEART_LLM_MODEL=double

# the fleet: 66 general agents, travel_rescue, 5 stock agents with a
# tool, 2 agents that only explore when idle, 1 whose provider fails
mkdir -p "$tmp/souls"
for i in $(seq -w 1 66); do
	printf 'name: agent%s\nheart:\n  schedule: { interval: 30m, daily_cap: 48 }\n  idle: { after: 2h, daily_cap: 12 }\n' "$i" > "$tmp/souls/agent$i.yaml"
done
cp share/heartbeat/souls/travel_rescue.yaml "$tmp/souls/"
for i in 1 2 3 4 5; do
	sed "s/^name: stock_watch/name: stock$i/; s#\\./\\.\\./tools/price#$top/share/heartbeat/tools/price#; s#\\.\\./tools/price#$top/share/heartbeat/tools/price#" \
		share/heartbeat/souls/stock_watch.yaml > "$tmp/souls/stock$i.yaml"
done
for i in 1 2; do
	printf 'name: explorer%s\nheart:\n  schedule: { daily_cap: 0 }\n  idle: { after: 2h, daily_cap: 12 }\n' "$i" > "$tmp/souls/explorer$i.yaml"
done
printf 'name: flaky\nllm: { base_url: "%s", timeout: 5s }\nheart:\n  schedule: { interval: 30m, daily_cap: 48 }\n' "$furl" > "$tmp/souls/flaky.yaml"
n=$(ls "$tmp/souls" | wc -l)

echo "== the fleet day: $n agents, every minute for 24 simulated hours"
start=$(date -u -d '2026-11-23 00:00:00' +%s)
cpu0=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
t0=$(date +%s.%N)
for ((m = 0; m < 1440; m++)); do
	now=$((start + m * 60))
	case $m in
	600) printf '{"replies":[{"status":503,"text":"provider outage"}]}\n' > "$tmp/fail/script.json" ;;
	720) printf '{"idle_ratio": 0.78, "seed": 6}\n' > "$tmp/fail/script.json" ;;
	esac
	at_epoch "$now" heart-wake "$tmp"/souls/*.yaml 2>/dev/null || :
done > "$tmp/results.jsonl"
t1=$(date +%s.%N)
r=$tmp/results.jsonl
requests=$(( $(wc -l < "$tmp/llm/requests.jsonl") + $(wc -l < "$tmp/fail/requests.jsonl") ))
python3 - "$r" "$n" "$requests" "$HEART_STATE_DIR" "$t0" "$t1" > "$tmp/table" <<'PY'
import json, sys, collections, glob
r, n, req, state, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
st = collections.Counter(); wakes = 0; ghosts = 0; opens = 0
hours = collections.defaultdict(lambda: [0, 0, 0])
for line in open(r):
    j = json.loads(line); s = j["status"]; st[s] += 1
    h = int(j["at"][11:13])
    if s in ("ok", "idle", "tool_cap") or (s == "error"):
        wakes += 1
    if s == "idle": ghosts += 1; hours[h][0] += 1
    if s == "ok": hours[h][1] += 1
    if s == "error": hours[h][2] += 1
    opens += sum(1 for e in j.get("breaker_events", []) if e.get("event") == "open")
tok = 0
for f in glob.glob(state + "/agents/*/cap.json"):
    c = json.load(open(f)); tok += c["tokens"]["prompt"] + c["tokens"]["completion"]
answered = st["ok"] + st["idle"]
print("%-34s %12s %14s" % ("", "heart (sim)", "paper / naive"))
print("%-34s %12d %14s" % ("agents", n, "75"))
print("%-34s %12d %14s" % ("pulses (75 x 8,640, 10 s)", n * 8640, "~864,000/day"))
print("%-34s %12.1f %14s" % ("wakes per agent per day (mean)", wakes / n, "31.4"))
print("%-34s %11.1f%% %14s" % ("ghost rate (idle of answered)", 100.0 * ghosts / max(answered, 1), "~78%"))
print("%-34s %12d %14s" % ("LLM requests", req, "216,000 naive"))
print("%-34s %12d %14s" % ("tokens (prompt + completion)", tok, ""))
print("%-34s %12d %14s" % ("cap refusals (capped)", st["capped"], ""))
print("%-34s %12d %14s" % ("breaker openings", opens, "2-5 a week"))
print("%-34s %12d %14s" % ("LLM errors (the 2 h outage)", st["error"], ""))
for k in ("not_due", "not_idle", "quiet", "open", "empty", "busy"):
    print("%-34s %12d %14s" % ("zero-token skips: " + k, st[k], ""))
print("%-34s %12.1f %14s" % ("wall seconds for the day", t1 - t0, ""))
with open(r + ".hours", "w") as f:
    for h in range(24):
        f.write("%d %d %d %d\n" % (h, hours[h][0], hours[h][1], hours[h][2]))
PY
cat "$tmp/table"
mkdir -p bench/results
cp "$tmp/table" bench/results/fleetday.txt
if command -v gnuplot > /dev/null; then
	gnuplot <<GP
set terminal pngcairo size 900,450
set output "bench/results/fleetday.png"
set title "The fleet day: requests per hour ($n agents, 78% [IDLE], outage 10:00-12:00)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set xlabel "hour (UTC)"
set ylabel "LLM requests"
set key top left
plot "$r.hours" using 2:xtic(1) title "ghost ([IDLE])" lc rgb "#8a94a8", \
     "" using 3 title "real answer" lc rgb "#2fd39a", \
     "" using 4 title "failed (breaker episode)" lc rgb "#e05050"
GP
	echo "chart: bench/results/fleetday.png"
else
	echo "chart: skipped (gnuplot missing: make bench-deps)"
fi

echo "== heart's own CPU per agent-day, 10,000 agents (one simulated hour, scaled to 24)"
rm -rf "$HEART_STATE_DIR"; mkdir -p "$tmp/big"
for i in $(seq 1 10000); do
	printf 'heart: { schedule: { interval: 30m }, idle: { daily_cap: 0 } }\n' > "$tmp/big/a$i.yaml"
done
cpu=$( { /usr/bin/time -f '%U %S' bash -c '
	. t/faketime.bash
	for ((m = 0; m < 60; m++)); do
		at_epoch $(('"$start"' + m * 60)) \
		heart-wake '"$tmp"'/big/*.yaml > /dev/null 2>&1 || :
	done' ; } 2>&1 | tail -1)
echo "$cpu" | awk '{ s = $1 + $2; printf "CPU for 10,000 agents x 1 hour: %.1f s; per agent-day: %.1f ms (every wake against the double)\n", s, s * 24 / 10000 * 1000 }' | tee -a bench/results/fleetday.txt
