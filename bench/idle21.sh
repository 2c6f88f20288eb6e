#!/bin/sh
# bench/idle21.sh - an agent nobody talks to, for 21 simulated days, at
# a flagship model's price: the requests and dollars it spends before
# heart.dormant_after (revision BEFORE, default 973cf72, built under a
# temporary directory) and with this tree (heart-soul(5),
# dormant_after).  Prints figures; asserts nothing.
# Assumptions:
#   - one agent, a 30m schedule (48 a day, its default cap) and an idle
#     chamber (idle.after 2h, its default cap of 12 on the shared
#     total); nobody ever writes to it: no input, no user message;
#   - heart-wake --soul run every 10 simulated minutes, as a cron line
#     would (libfaketime jumps the clock; no minute is waited for);
#   - the model, the test double, answers every wake "[IDLE]" (nothing
#     to do, as a world where nothing happens), each request counted
#     as 4,000 input tokens (system prompt, soul, tools, the recent
#     history: ghost mode keeps the idle exchanges out of it) and 250
#     output tokens;
#   - a flagship price: $15 a million input tokens, $75 a million
#     output tokens (llm.price), no cache: $0.07875 a request.
#   The third run sets heart.dormant_after: 14d in the soul, so the
#   schedule chamber sleeps too (unset, it holds for the idle chamber
#   only: a schedule may watch for a person who reads only its alerts).
# Usage: bench/idle21.sh [DAYS] [BEFORE]
set -eu
cd "$(dirname "$0")/.."
days=${1:-21} before=${2:-973cf72}
tmp=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
lib=$(dpkg -L libfaketime | grep -m 1 '/libfaketime\.so\.1$')
export TZ=UTC
mkdir -p "$tmp/before"
git archive "$before" | tar -x -C "$tmp/before"
make -s -C "$tmp/before" -j2 all > "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; exit 1; }
make -s -j2 all > /dev/null

# run NAME BINDIR SOULTAIL: the agent's days with BINDIR's heart-wake;
# prints "requests dollars schedule idle" (the double's count, the
# wakes' cost, the wakes of each chamber that reached the model)
run() {
	d=$tmp/$1
	mkdir -p "$d/llm" "$d/souls"
	printf '%s\n' '{"replies":[{"text":"[IDLE]","usage":{"prompt_tokens":4000,"completion_tokens":250}}]}' \
	    > "$d/llm/script.json"
	python3 t/llm-double.py "$d/llm" > "$d/llm.log" 2>&1 &
	pid=$!
	while [ ! -s "$d/llm/port" ]; do sleep 0.05; done
	printf 'name: watcher\nheart: { schedule: { interval: 30m }, idle: { after: 2h }%s }\nllm: { price: { input: 15, output: 75 } }\n' \
	    "$3" > "$d/souls/watcher.yaml"
	t0=$(date -u -d '2026-11-01 00:00:00' +%s)
	i=0
	while [ "$i" -lt $((days * 144)) ]; do
		t=$(date -u -d "@$((t0 + i * 600))" '+%Y-%m-%d %H:%M:%S')
		HEART_STATE_DIR=$d/state \
		    HEART_LLM_URL="http://127.0.0.1:$(cat "$d/llm/port")/v1" \
		    HEART_LLM_MODEL=double HEART_LLM_PROVIDER=openai \
		    OPENAI_API_KEY=sk-bench-0123456789 \
		    FAKETIME="@$t" FAKETIME_DONT_FAKE_MONOTONIC=1 \
		    NO_FAKE_STAT=1 LD_PRELOAD=$lib \
		    "$2/heart-wake" --soul "$d/souls/watcher.yaml" \
		    >> "$d/out.jsonl" 2>/dev/null || :
		i=$((i + 1))
	done
	kill "$pid"
	wait "$pid" 2>/dev/null || :
	pid=
	touch "$d/llm/requests.jsonl"
	printf '%s %s %s %s\n' "$(wc -l < "$d/llm/requests.jsonl" |
	    tr -d ' ')" "$(jq -rs '[.[] | .cost // 0 |
	    tonumber] | add // 0' "$d/out.jsonl")" "$(jq -rs --arg c \
	    schedule "$sent" "$d/out.jsonl")" "$(jq -rs --arg c idle \
	    "$sent" "$d/out.jsonl")"
}
# the wakes of chamber $c that reached the model (jq's $c)
# shellcheck disable=SC2016
sent='[.[] | select(.chamber == $c and .cost != null)] | length'

b=$(run before "$tmp/before" '')
a=$(run after "$PWD" '')
s=$(run set "$PWD" ', dormant_after: 14d')
echo "== one agent nobody talks to, ${days} days, 30m schedule + idle chamber, \$15/\$75 per M tokens, 4000 in / 250 out a request"
# row TITLE FIGURES: a line of the table
row() {
	# shellcheck disable=SC2086
	printf '%-44s %9s %9.2f %9s %9s\n' "$1" $2
}
printf '%-44s %9s %9s %9s %9s\n' "" requests dollars schedule idle
row "before heart.dormant_after ($before)" "$b"
row "after, unset (idle chamber dormant at 14d)" "$a"
row "after, heart.dormant_after: 14d" "$s"
