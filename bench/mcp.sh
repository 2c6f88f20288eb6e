#!/bin/sh
# bench/mcp.sh - what an MCP server costs a wake.  Two wakes against
# the local LLM test double, each with one tool call then an answer
# (two requests): one whose tool is the echo tool of the reference
# MCP server @modelcontextprotocol/server-everything from npm (spawn,
# initialize, tools/list, one tools/call, stop), one whose tool is a
# plain program (cat, the arguments back).  Each median wall time is
# split into the server's (the same two requests sent by curl), the
# tool's (the same work done by a minimal client: the MCP session run
# by a small Python client, or one run of the program) and
# heart-wake's own (the rest).  Needs node_modules (make mizpah).
set -eu
cd "$(dirname "$0")/.."
bin=$PWD
n=${N:-20}
ev=$PWD/node_modules/.bin/mcp-server-everything
[ -x "$ev" ] || { echo "bench/mcp.sh: $ev missing: run make mizpah (npm ci)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $dpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
export HEART_STATE_DIR=$tmp/state
mkdir -p "$tmp/llm"
python3 t/llm-double.py "$tmp/llm" &
dpid=$!
while [ ! -s "$tmp/llm/port" ]; do sleep 0.05; done
HEART_LLM_URL="http://127.0.0.1:$(cat "$tmp/llm/port")/v1"
export HEART_LLM_URL
export HEART_LLM_MODEL=double HEART_LLM_PROVIDER=openai
cat > "$tmp/mcp.yaml" <<J
name: bench_mcp
heart: { schedule: { daily_cap: 100000 } }
mcp_servers:
  everything: { command: $ev, tools: [echo] }
J
cat > "$tmp/plain.yaml" <<J
name: bench_plain
heart: { schedule: { daily_cap: 100000 } }
tools:
  - name: echo
    command: [cat]
J
script() {	# script TOOLNAME
	printf '{"cycle": true, "replies": [{"tool_calls": [{"name": "%s", "arguments": {"message": "hi"}}]}, {"text": "It said hi."}]}\n' "$1" > "$tmp/llm/script.json"
}
ms() { date +%s%N; }
med() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# the MCP session of the wake, done by a minimal client, in us
session() {
	python3 - "$ev" <<'P'
import json, subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def ask(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                               "params": params}) + "\n").encode())
    p.stdin.flush()
    while json.loads(p.stdout.readline()).get("id") != i:
        pass
ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "bench", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
ask(2, "tools/list", {})
ask(3, "tools/call", {"name": "echo", "arguments": {"message": "hi"}})
p.stdin.close()
p.wait()
print(int((time.monotonic() - t) * 1e6))
P
}

# one wake of each to check the path and keep the two request bodies
for k in mcp plain; do
	[ $k = mcp ] && script everything__echo || script echo
	: > "$tmp/llm/requests.jsonl"
	out=$("$bin/heart-wake" --soul "$tmp/$k.yaml" --force)
	printf "%s\n" "$out" | jq -e '.status == "ok" and .tools.calls == 1 and .tools.failed == 0' \
		>/dev/null || { echo "bench/mcp.sh: the $k wake did not call its tool: $out" >&2; exit 1; }
	for i in 1 2; do
		sed -n "${i}p" "$tmp/llm/requests.jsonl" | jq -c .body > "$tmp/$k.body$i"
	done
done

echo "== a wake with one tool call: an MCP server against a plain program ($n wakes each, medians)"
i=0
while [ $i -lt "$n" ]; do
	for k in mcp plain; do
		[ $k = mcp ] && script everything__echo || script echo
		s=$(ms)
		"$bin/heart-wake" --soul "$tmp/$k.yaml" --force >/dev/null
		e=$(ms)
		echo $(( (e - s) / 1000 )) >> "$tmp/$k.wake"
		t=0
		for b in 1 2; do
			c=$(curl -s -o /dev/null -w '%{time_total}' \
				-H 'Content-Type: application/json' \
				--data-binary @"$tmp/$k.body$b" "$HEART_LLM_URL/chat/completions")
			t=$(awk -v a="$t" -v b="$c" 'BEGIN { print a + b * 1e6 }')
		done
		printf '%.0f\n' "$t" >> "$tmp/$k.srv"
	done
	session >> "$tmp/mcp.tool"
	s=$(ms)
	echo '{"message":"hi"}' | cat >/dev/null
	e=$(ms)
	echo $(( (e - s) / 1000 )) >> "$tmp/plain.tool"
	i=$((i + 1))
done
for k in mcp plain; do
	w=$(med "$tmp/$k.wake")
	s=$(med "$tmp/$k.srv")
	t=$(med "$tmp/$k.tool")
	if [ $k = mcp ]; then w_mcp=$w; else w_plain=$w; fi
	echo "$k: wake $w us; server (curl, same 2 requests) $s us; tool" \
		"($([ $k = mcp ] && echo 'the MCP session by a minimal client' || echo 'one run of cat')) $t us;" \
		"heart-wake's own $((w - s - t)) us ($(awk -v a=$((w - s - t)) -v b="$w" 'BEGIN { printf "%.0f", 100 * a / b }')% of the wake)"
done
awk -v a="$w_mcp" -v b="$w_plain" 'BEGIN { printf "the MCP wake takes %.1f times the plain one\n", a / b }'
