#!/bin/bash
# bench/outbox.sh - a thousand answers through heart-ghost's outbox to
# the webhook recipe (contrib/deliver/webhook, signed), its receiver
# (t/deliver-receiver.py) flapping every FLAP seconds (default 3): up,
# down (503), then slow (it takes the answer but answers after the
# recipe gave up, so that answer will come again).  One pipe run, then
# heart-ghost --flush until the outbox is empty, heart-ghost's clock a
# minute later each run (libfaketime), so that the backoff (1, 2, 4...
# minutes) costs runs, not wall time.
# Prints, and writes to bench/results/outbox.txt: answers delivered,
# duplicates the receiver got before its dedupe by wake id, whether
# they came in wake order, requests refused, flush runs, and the wall
# time to drain, also as a ratio to the same answers to a receiver that
# is always up (the reference, in the same run).  Asserts nothing.
set -eu
cd "$(dirname "$0")/.."
. t/faketime.bash
N=${N:-1000}
FLAP=${FLAP:-3}
top=$PWD
tmp=$(mktemp -d)
rpid='' fpid=''
trap 'kill $rpid $fpid 2> /dev/null || :; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# the N answers of agent bench, a second apart, ids in wake order
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++)
	printf "{\"v\":1,\"agent\":\"bench\",\"chamber\":\"schedule\"," \
	    "\"wake_id\":\"o-%05d\",\"at\":\"2026-11-21T%02d:%02d:%02dZ\"," \
	    "\"status\":\"ok\",\"response\":\"ALERT: answer %d\"," \
	    "\"messages\":[{\"role\":\"user\",\"content\":\"check\"}," \
	    "{\"role\":\"assistant\",\"content\":\"ALERT: answer %d\"}]}\n",
	    i, 12 + int(i / 3600), int(i / 60) % 60, i % 60, i, i }' \
    > "$tmp/in"

# receiver DIR: start one; its pid in rpid, its URL in the environment
receiver() {
	mkdir -p "$1"
	: > "$1/log"
	printf 'bench-hmac-key' > "$1/key"
	python3 t/deliver-receiver.py "$1" &
	rpid=$!
	while [ ! -s "$1/port" ]; do sleep 0.05; done
	HEART_DELIVER_WEBHOOK_URL="http://127.0.0.1:$(cat "$1/port")/hook"
	export HEART_DELIVER_WEBHOOK_URL
}

# drain DIR: deliver the answers with the state in DIR/state; prints
# the flush runs it took, and the wall seconds
drain() {
	export HEART_STATE_DIR="$1/state"
	t=$(date -u -d 2026-11-21T12:00:00Z +%s)
	s=$(date +%s.%N)
	at_epoch "$t" "$top/heart-ghost" --text \
	    --exec "$top/contrib/deliver/webhook" < "$tmp/in" \
	    > /dev/null 2>&1 || :
	runs=0
	while [ -e "$1/state/agents/bench/outbox" ]; do
		t=$((t + 60))
		at_epoch "$t" "$top/heart-ghost" --flush --text \
		    --exec "$top/contrib/deliver/webhook" > /dev/null 2>&1 || :
		runs=$((runs + 1))
	done
	e=$(date +%s.%N)
	awk -v r="$runs" -v s="$s" -v e="$e" 'BEGIN { print r, e - s }'
}

export HEART_DELIVER_WEBHOOK_SECRET=bench-hmac-key HEART_DELIVER_TIMEOUT=1

# the reference: always up
receiver "$tmp/ref"
read -r _ ref_s < <(drain "$tmp/ref")
kill "$rpid"; wait "$rpid" 2> /dev/null || :; rpid=

# flapping: up, down, slow, FLAP seconds each
receiver "$tmp/flap"
(
	cd "$tmp/flap"
	while :; do
		rm -f down slow; sleep "$FLAP"
		touch down; sleep "$FLAP"
		rm -f down; echo 2 > slow; sleep "$FLAP"
	done
) &
fpid=$!
read -r runs flap_s < <(drain "$tmp/flap")
kill "$fpid" "$rpid"; wait 2> /dev/null || :; rpid='' fpid=''

log=$tmp/flap/log
jq -r 'select(.code == 200) | .headers["idempotency-key"]' "$log" > "$tmp/took"
good=$(jq -s '[.[] | select(.code == 200 and
    .headers["x-heart-signature"] == "sha256=" + .sig)] | length' "$log")
took=$(wc -l < "$tmp/took")
uniq=$(awk '!seen[$0]++' "$tmp/took" > "$tmp/first"; wc -l < "$tmp/first")
refused=$(jq -s '[.[] | select(.code == 503)] | length' "$log")
order=no
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "o-%05d\n", i }' |
    cmp -s - "$tmp/first" && order=yes
ref_ok=$(jq -s '[.[] | select(.code == 200)] | length' "$tmp/ref/log")

{
	printf '%-44s %12s\n' "answers (webhook recipe, signed)" "$N"
	printf '%-44s %12s\n' "receiver flapping: up, down, slow, each" "${FLAP} s"
	printf '%-44s %12s\n' "delivered (distinct wake ids taken)" "$uniq"
	printf '%-44s %12s\n' "in wake order after dedupe" "$order"
	printf '%-44s %12s\n' "requests taken (200), before dedupe" "$took"
	printf '%-44s %12s\n' "duplicates before the receiver's dedupe" "$((took - uniq))"
	printf '%-44s %12s\n' "signatures that verify" "$good"
	printf '%-44s %12s\n' "requests refused (503)" "$refused"
	printf '%-44s %12s\n' "flush runs (a simulated minute apart)" "$runs"
	printf '%-44s %12.1f\n' "wall seconds to drain, flapping" "$flap_s"
	printf '%-44s %12.1f\n' "wall seconds, receiver always up" "$ref_s"
	printf '%-44s %12s\n' "  (delivered with it always up)" "$ref_ok"
	awk -v f="$flap_s" -v r="$ref_s" \
	    'BEGIN { printf "%-44s %12.2f\n", "drain time, flapping / always up", f / r }'
} > "$tmp/table"
cat "$tmp/table"
mkdir -p bench/results
cp "$tmp/table" bench/results/outbox.txt
