#!/bin/sh
# bench/adaptive.sh - a fixed schedule against an adaptive one, over two
# simulated weeks (libfaketime) of a stock agent whose real events come
# only on weekdays 09:30-16:00 New York time: the LLM test double
# answers news when the stretch since the last wake overlaps those
# hours, [IDLE] otherwise.  Prints, and writes under bench/results/:
#   adaptive.txt        requests, real answers, ghosts, wakes in market
#                       hours, mean and worst detection delay (from an
#                       event, every market minute, to the wake that
#                       reports it), per week, fixed vs adaptive
#   adaptive-wakes.png  wakes per hour of the week in week two
# The adaptive soul is share/heartbeat/souls/market_watch.yaml; the
# fixed one is the same without schedule.adaptive.  Needs gnuplot
# (make bench-deps).
set -eu
cd "$(dirname "$0")/.."
bin=$PWD
out=bench/results
tmp=$(mktemp -d)
trap 'kill $dpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$out" "$tmp/llm"
export HEART_STATE_DIR=$tmp/state HEART_BIN=$bin TZ=UTC
python3 t/llm-double.py "$tmp/llm" &
dpid=$!
while [ ! -s "$tmp/llm/port" ]; do sleep 0.05; done
export HEART_LLM_URL="http://127.0.0.1:$(cat "$tmp/llm/port")/v1"
export HEART_LLM_MODEL=double HEART_LLM_PROVIDER=openai
cat > "$tmp/llm/script.json" <<'J'
{"windows": [{"weekday": [0, 1, 2, 3, 4], "from": "09:30", "to": "16:00",
  "text": "ACME moved 3.1% since the last check."}], "span": true}
J
adaptive=share/heartbeat/souls/market_watch.yaml
fixed=$tmp/fixed_watch.yaml
sed -e 's/^name: market_watch/name: fixed_watch/' -e '/adaptive:/d' \
    "$adaptive" > "$fixed"
start=$(TZ=America/New_York date -d '2026-11-23 00:00' +%s)	# a Monday
end=$((start + 14 * 86400))

echo "== two simulated weeks: fixed 30m vs adaptive (20m..4h)"
t0=$(date +%s)
t/adapt-sim.sh "$fixed" "$start" "$end" > "$tmp/fixed.jsonl" &
fpid=$!
t/adapt-sim.sh "$adaptive" "$start" "$end" > "$tmp/adaptive.jsonl"
wait $fpid
runs=$(cat "$tmp/fixed.jsonl" "$tmp/adaptive.jsonl" | wc -l)
echo "($runs heart-wake runs in $(( $(date +%s) - t0 ))s)"
python3 t/adapt-figures.py "$tmp/llm/script.json" America/New_York \
    "$start" 14 "fixed=$tmp/fixed.jsonl" "adaptive=$tmp/adaptive.jsonl" \
    --table --hours "$tmp/hours.dat" | tee "$out/adaptive.txt"
python3 t/adapt-figures.py "$tmp/llm/script.json" America/New_York \
    "$start" 14 "fixed=$tmp/fixed.jsonl" "adaptive=$tmp/adaptive.jsonl" \
    > "$tmp/fig.json"

gnuplot <<G
set terminal pngcairo size 1200,400 font "sans,10"
set output "$out/adaptive-wakes.png"
set title "Wakes per hour of the week, week two (New York time; real events on weekdays 09:30-16:00, shaded)"
do for [d=0:4] {
	set object rectangle from d*24+9.5, graph 0 to d*24+16, graph 1 \
	    fillcolor rgb "#fdebd0" fillstyle solid 1.0 noborder behind
}
set xrange [0:168]
set yrange [0:3.5]
set ytics 1
set ylabel "wakes in the hour"
set xtics ("Mon" 0, "Tue" 24, "Wed" 48, "Thu" 72, "Fri" 96, "Sat" 120, "Sun" 144, "" 168)
set grid xtics
set key top right opaque
set style fill solid 0.85 noborder
set boxwidth 0.8 absolute
plot "$tmp/hours.dat" using (\$1+0.5):3 with boxes lc rgb "#c0392b" \
	title sprintf("adaptive 20m..4h: %d wakes", $(jq -r .adaptive.week2.requests "$tmp/fig.json")), \
     "" using 1:2 with steps lw 2 lc rgb "#555555" \
	title sprintf("fixed 30m: %d wakes", $(jq -r .fixed.week2.requests "$tmp/fig.json"))
G
echo "chart: $out/adaptive-wakes.png"
