#!/bin/sh
# bench/tools.sh - what a wake with two tool calls costs.
# A wake of the shipped stock_watch soul against the local LLM test
# double: the model asks for price(ACME), then price(GLOBEX), then
# answers (three requests, two tool runs).  The median wall time is
# split into the server's (the same three requests sent by curl), the
# tools' (the same two runs of share/heartbeat/tools/price) and
# heart-wake's own (the rest: start, gates, state, JSON, fork/exec).
set -eu
cd "$(dirname "$0")/.."
bin=$PWD
n=${N:-50}
tmp=$(mktemp -d)
trap 'kill $dpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
export HEART_STATE_DIR=$tmp/state
mkdir -p "$tmp/llm"
python3 t/llm-double.py "$tmp/llm" &
dpid=$!
while [ ! -s "$tmp/llm/port" ]; do sleep 0.05; done
export HEART_LLM_URL="http://127.0.0.1:$(cat "$tmp/llm/port")/v1"
export HEART_LLM_MODEL=double HEART_LLM_PROVIDER=openai
cat > "$tmp/llm/script.json" <<'J'
{"cycle": true, "replies": [
 {"tool_calls": [{"name": "price", "arguments": {"symbol": "ACME"}}]},
 {"tool_calls": [{"name": "price", "arguments": {"symbol": "GLOBEX"}}]},
 {"text": "GLOBEX fell 5.30% to 55.02."}]}
J
soul=share/heartbeat/souls/stock_watch.yaml
tool=share/heartbeat/tools/price
ms() { date +%s%N; }

# one wake to check the path and to record the three request bodies
out=$("$bin/heart-wake" --soul "$soul" --force --chamber schedule)
printf "%s\n" "$out" | jq -e '.status == "ok" and .tools == {"calls":2,"failed":0}' \
	>/dev/null || { echo "bench/tools.sh: the wake did not do two tool calls: $out" >&2; exit 1; }
i=1
while [ $i -le 3 ]; do
	sed -n "${i}p" "$tmp/llm/requests.jsonl" | jq -c .body > "$tmp/body$i"
	i=$((i + 1))
done

echo "== a wake with two tool calls against the local double ($n wakes, medians)"
i=0
while [ $i -lt "$n" ]; do
	"$bin/heart-cap" reset stock_watch >/dev/null
	s=$(ms)
	"$bin/heart-wake" --soul "$soul" --force --chamber schedule >/dev/null
	e=$(ms)
	echo $(( (e - s) / 1000 )) >> "$tmp/wake"
	t=0
	for b in 1 2 3; do
		c=$(curl -s -o /dev/null -w '%{time_total}' \
			-H 'Content-Type: application/json' \
			--data-binary @"$tmp/body$b" "$HEART_LLM_URL/chat/completions")
		t=$(awk -v a="$t" -v b="$c" 'BEGIN { print a + b * 1e6 }')
	done
	printf '%.0f\n' "$t" >> "$tmp/srv"
	s=$(ms)
	(cd share/heartbeat/souls && echo '{"symbol":"ACME"}' | ../tools/price &&
	    echo '{"symbol":"GLOBEX"}' | ../tools/price) >/dev/null
	e=$(ms)
	echo $(( (e - s) / 1000 )) >> "$tmp/tools"
	i=$((i + 1))
done
med() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
w=$(med "$tmp/wake")
s=$(med "$tmp/srv")
t=$(med "$tmp/tools")
echo "wake: $w us median; server (curl, same 3 requests): $s us;" \
	"tools (2 runs of $tool): $t us; heart-wake's own: $((w - s - t)) us"
