#!/bin/sh
# bench/wake.sh - what a wake costs.
#   1. a skipped wake (not_due) as a ratio to /bin/true (hyperfine)
#   2. a wake against the local LLM test double: the median wall time,
#      split into heart-wake's own time and the server's (the same
#      request sent by curl)
set -eu
cd "$(dirname "$0")/.."
bin=$PWD
tmp=$(mktemp -d)
trap 'kill $dpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
export HEART_STATE_DIR=$tmp/state
mkdir -p "$tmp/llm"
python3 t/llm-double.py "$tmp/llm" &
dpid=$!
while [ ! -s "$tmp/llm/port" ]; do sleep 0.05; done
export HEART_LLM_URL="http://127.0.0.1:$(cat "$tmp/llm/port")/v1"
export HEART_LLM_MODEL=double
soul=share/heartbeat/souls/travel_rescue.yaml
"$bin/heart-wake" --soul "$soul" --force >/dev/null

echo "== a skipped wake (not_due) vs /bin/true (hyperfine, 300 runs)"
hyperfine -N -w 20 -r 300 --export-json "$tmp/h.json" \
	"$bin/heart-wake --soul $soul" /bin/true >/dev/null 2>&1
jq -r '.results as $r | "not_due: \($r[0].mean * 1e6 | floor) us, true: \($r[1].mean * 1e6 | floor) us, ratio \($r[0].mean / $r[1].mean * 100 | round / 100) (target <= 2.0)"' "$tmp/h.json"

echo "== a wake against the local double (100 wakes, medians)"
body=$("$bin/heart-wake" --soul "$soul" --dry-run | jq -c .request.body)
i=0
while [ $i -lt 100 ]; do
	s=$(date +%s%N)
	"$bin/heart-wake" --soul "$soul" --force --chamber schedule >/dev/null
	e=$(date +%s%N)
	echo $(( (e - s) / 1000 )) >> "$tmp/wake"
	curl -s -o /dev/null -w '%{time_total}\n' -H 'Content-Type: application/json' \
		-d "$body" "$HEART_LLM_URL/chat/completions" >> "$tmp/srv"
	"$bin/heart-cap" reset travel_rescue
	i=$((i + 1))
done
w=$(sort -n "$tmp/wake" | sed -n 50p)
s=$(awk '{ print int($1 * 1e6) }' "$tmp/srv" | sort -n | sed -n 50p)
echo "wake: $w us median; server (curl, same request): $s us; heart-wake's own: $((w - s)) us"
