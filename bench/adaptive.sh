#!/bin/bash
# bench/adaptive.sh - a fixed schedule against an adaptive one over two
# simulated weeks (libfaketime, t/adapt-sim.sh), for six weekly
# patterns of real events, each in its own time zone: weekday market
# hours, a weekend, one morning a week, a night window across midnight,
# two evenings a week, and a pattern that moves in week two.  The LLM
# test double answers news when a window overlaps the stretch since the
# last wake, [IDLE] otherwise.  Both schedules are
# share/heartbeat/souls/market_watch.yaml's (30m; adaptive 20m..4h,
# window 14 days), renamed and moved to the pattern's time zone.
# Prints, and writes under bench/results/:
#   adaptive.txt        per pattern, week two: requests, real answers,
#                       mean and worst detection delay (minutes, from an
#                       event, every minute of a window, to the wake that
#                       reports it), fixed and adaptive; whether the goal
#                       is met (at most half the requests, mean delay at
#                       most +10%, worst at most +50%); the adaptive
#                       schedule's week one; the day of week two from
#                       which every day keeps within the delay bounds
#   adaptive-wakes.png  wakes per hour of the week in week two
# HEART_BIN=DIR runs another build's heart-wake (to compare rules).
# Needs gnuplot (make bench-deps).
set -eu
cd "$(dirname "$0")/.."
top=$PWD
export HEART_BIN=${HEART_BIN:-$top}
out=bench/results
tmp=$(mktemp -d)
dpid=
trap '[ -z "$dpid" ] || kill $dpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$out"
export TZ=UTC HEART_LLM_MODEL=double HEART_LLM_PROVIDER=openai

# name|time zone|label|windows (t/llm-double.py)
patterns='market|America/New_York|Mon-Fri 09:30-16:00|[{"weekday":[0,1,2,3,4],"from":"09:30","to":"16:00","text":"ACME moved 3.1% since the last check."}]
weekend|Europe/Berlin|Sat, Sun 10:00-17:00|[{"weekday":[5,6],"from":"10:00","to":"17:00","text":"A new order came in."}]
morning|Asia/Tokyo|Wed 08:00-11:00|[{"weekday":[2],"from":"08:00","to":"11:00","text":"The weekly report is in."}]
night|Australia/Sydney|daily 22:00-02:00|[{"from":"22:00","to":"02:00","text":"The batch job logged an error."}]
evenings|Asia/Kolkata|Tue, Thu 18:00-21:00|[{"weekday":[1,3],"from":"18:00","to":"21:00","text":"A customer wrote in."}]
moving|America/Sao_Paulo|Mon-Fri 08:00-12:00, from week two 14:00-18:00|[{"weekday":[0,1,2,3,4],"from":"08:00","to":"12:00","until":"2026-11-30","text":"A ticket was opened."},{"weekday":[0,1,2,3,4],"from":"14:00","to":"18:00","since":"2026-11-30","text":"A ticket was opened."}]'

# pattern NAME ZONE WINDOWS: both schedules' two weeks, their figures
pattern() {
	local d=$tmp/$1 start
	mkdir -p "$d/llm"
	: > "$d/llm/requests.jsonl"
	printf '{"windows": %s, "span": true}\n' "$3" > "$d/llm/script.json"
	python3 t/llm-double.py "$d/llm" < /dev/null > /dev/null 2>&1 &
	dpid=$!
	while [ ! -s "$d/llm/port" ]; do sleep 0.05; done
	sed -e "s/^name: market_watch/name: $1/" \
	    -e "s#timezone: America/New_York#timezone: $2#" \
	    share/heartbeat/souls/market_watch.yaml > "$d/adaptive.yaml"
	sed '/adaptive:/d' "$d/adaptive.yaml" > "$d/fixed.yaml"
	start=$(TZ=$2 date -d '2026-11-23 00:00' +%s)	# a Monday
	export HEART_LLM_URL="http://127.0.0.1:$(cat "$d/llm/port")/v1"
	HEART_STATE_DIR=$d/fixed.state t/adapt-sim.sh "$d/fixed.yaml" \
	    "$start" $((start + 14 * 86400)) < /dev/null > "$d/fixed.jsonl" &
	HEART_STATE_DIR=$d/adaptive.state t/adapt-sim.sh "$d/adaptive.yaml" \
	    "$start" $((start + 14 * 86400)) < /dev/null > "$d/adaptive.jsonl"
	wait $!
	kill $dpid
	wait $dpid 2>/dev/null || true
	dpid=
	python3 t/adapt-figures.py "$d/llm/script.json" "$2" "$start" 14 \
	    "fixed=$d/fixed.jsonl" "adaptive=$d/adaptive.jsonl" \
	    --hours "$d/hours.dat" > "$d/fig.json"
}

echo "== two simulated weeks per pattern: fixed 30m vs adaptive 20m..4h"
t0=$(date +%s)
runs=()
while IFS='|' read -r name zone label windows; do
	pattern "$name" "$zone" "$windows"
	runs+=("$name=$tmp/$name/fig.json")
done <<< "$patterns"
n=$(cat "$tmp"/*/fixed.jsonl "$tmp"/*/adaptive.jsonl | wc -l)
echo "($n heart-wake runs in $(( $(date +%s) - t0 ))s)"
{
	echo "Two simulated weeks of market_watch's schedule, fixed 30m and adaptive"
	echo "20m..4h; week two (in week one the adaptive one learns).  Delays in"
	echo "minutes, from an event to the wake that reports it."
	echo
	python3 t/adapt-figures.py --summary "${runs[@]}"
	echo
	while IFS='|' read -r name zone label windows; do
		printf '%-9s %s, %s\n' "$name" "$label" "$zone"
	done <<< "$patterns"
} | tee "$out/adaptive.txt"

plots=
while IFS='|' read -r name zone label windows; do
	f=$tmp/$name/fig.json
	plots="$plots
set title sprintf(\"%s: %s, %s; week two: fixed %d wakes, adaptive %d\", \"$name\", \"$label\", \"$zone\", $(jq .fixed.week2.requests "$f"), $(jq .adaptive.week2.requests "$f"))
plot \"$tmp/$name/hours.dat\" using (\$1+0.5):(\$4>0 ? 3.5 : 1/0) with boxes fillcolor rgb \"#fdebd0\" fillstyle solid 1.0 noborder notitle, \
     \"\" using (\$1+0.5):3 with boxes fillcolor rgb \"#c0392b\" fillstyle solid 0.85 noborder title \"adaptive\", \
     \"\" using 1:2 with steps lw 2 lc rgb \"#555555\" title \"fixed 30m\""
done <<< "$patterns"
gnuplot <<G
set terminal pngcairo size 1200,1500 font "sans,9" noenhanced
set output "$out/adaptive-wakes.png"
set multiplot layout 6,1 title "Wakes per hour of the week in week two (local time; shaded: hours with events)"
set xrange [0:168]
set yrange [0:3.5]
set ytics 1
set ylabel "wakes"
set xtics ("Mon" 0, "Tue" 24, "Wed" 48, "Thu" 72, "Fri" 96, "Sat" 120, "Sun" 144, "" 168)
set grid xtics
set key top right opaque
set boxwidth 1.0 absolute
$plots
unset multiplot
G
echo "chart: $out/adaptive-wakes.png"
