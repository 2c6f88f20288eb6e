#!/bin/sh
# bench/hold.sh - one provider account out of credit for hours: the
# requests a fleet on one key sends (heart(7), Holds).  Prints figures;
# asserts nothing.
#   N agents (default 100) on one key, every one due each 10 minutes,
#   a --souls round every 10 simulated minutes for H hours (default
#   15), the model answering HTTP 402 to every request: the requests
#   sent, against the goal of one per probe period (15m) for the fleet.
# Usage: bench/hold.sh [N] [H] [BINDIR]  (BINDIR: another build's
# programs, e.g. an older tree's, to compare; default this tree's)
set -eu
cd "$(dirname "$0")/.."
n=${1:-100} hours=${2:-15} bin=${3:-$PWD}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
lib=$(dpkg -L libfaketime | grep -m 1 '/libfaketime\.so\.1$')
export HEART_STATE_DIR=$tmp/state TZ=UTC
mkdir -p "$tmp/llm" "$tmp/souls"
printf '{"replies":[{"status":402,"text":"Payment required"}]}\n' \
    > "$tmp/llm/script.json"
python3 t/llm-double.py "$tmp/llm" > "$tmp/llm.log" 2>&1 &
pid=$!
while [ ! -s "$tmp/llm/port" ]; do sleep 0.05; done
export HEART_LLM_URL="http://127.0.0.1:$(cat "$tmp/llm/port")/v1"
export HEART_LLM_MODEL=double HEART_LLM_PROVIDER=openai
export OPENAI_API_KEY=sk-bench-0123456789
i=0
while [ "$i" -lt "$n" ]; do
	printf 'name: a%d\nheart: { schedule: { interval: 10m } }\n' "$i" \
	    > "$tmp/souls/a$i.yaml"
	i=$((i + 1))
done
t0=$(date -u -d '2026-11-22 00:00:00' +%s)
r=0
while [ "$r" -lt $((hours * 6)) ]; do
	t=$(date -u -d "@$((t0 + r * 600))" '+%Y-%m-%d %H:%M:%S')
	FAKETIME="@$t" FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 \
	    LD_PRELOAD=$lib "$bin/heart-wake" --souls "$tmp/souls" \
	    > "$tmp/out.jsonl" 2>/dev/null || :
	r=$((r + 1))
done
sent=$(wc -l < "$tmp/llm/requests.jsonl" | tr -d ' ')
echo "== $n agents on one key, credit gone for ${hours}h, a round each 10m"
echo "requests sent: $sent (goal: at most $((hours * 4 + 1)), one per 15m probe period and the first)"
