#!/bin/bash
# demo.sh - a live heartbeat on this machine, with embedded defaults:
# a mosquitto on loopback ports with contrib/mosquitto's config,
# heart-pulse for the example fleet, the Mizpah page served on a
# loopback port, and a few rounds of heart-wake | heart-ghost for every
# soul.  A real model when one is configured (HEART_LLM_URL,
# OPENAI_API_KEY, ANTHROPIC_API_KEY, or an Ollama on 127.0.0.1:11434),
# else the offline responder from t/.  Leaves nothing running unless
# KEEP=1.  Run by `make demo`.
#
# The example fleet runs from a copy of share/heartbeat/ in
# build/demo/heartbeat/, with what its souls need on this machine and
# no other: notes_keeper's folder of notes beside it and its MCP server,
# the one npm ci installed (package-lock.json pins it), on PATH by the
# name the soul gives; page_watch's gate pointed at a page served on a
# loopback port, changed before the last round.  Every soul is as
# shipped but for that address.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
run=$top/build/demo
ROUNDS=${ROUNDS:-3}
KEEP=${KEEP:-0}
export HEART_STATE_DIR="${HEART_STATE_DIR:-$run/state}"
mkdir -p "$run"
pids=

stop() {
	[ "$KEEP" = 1 ] && return
	for p in $pids; do kill "$p" 2>/dev/null || :; done
	wait 2>/dev/null || :
}
trap stop EXIT
trap 'exit 130' INT TERM

port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
	i=0
	while ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 100 ] || { echo "demo: $2 did not start" >&2; exit 69; }
		sleep 0.1
	done
}

# the example fleet, and what its souls need here
mcp=$top/node_modules/.bin/mcp-server-filesystem
[ -x "$mcp" ] || {
	echo "demo: $mcp: missing: run make demo (npm ci installs it)" >&2
	exit 69
}
rm -rf "${run:?}/heartbeat" "${run:?}/bin" "${run:?}/page"
mkdir -p "$run/heartbeat" "$run/bin" "$run/page"
cp -R "$top/share/heartbeat/souls" "$top/share/heartbeat/gates" \
	"$top/share/heartbeat/tools" "$run/heartbeat/"
souls=$run/heartbeat/souls
ln -s "$mcp" "$run/bin/mcp-server-filesystem"
PATH=$top:$run/bin:$PATH
mkdir "$souls/notes"
printf 'Grant report: due %s, to the foundation.\n' \
	"$(date -u -d tomorrow +%Y-%m-%d)" > "$souls/notes/grant.txt"
printf 'Buy coffee beans.\n' > "$souls/notes/shopping.txt"

# the broker: the shipped config, fresh users and passwords for this run
tcp=$(port); ws=$(port); web=$(port); page=$(port)
pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
look=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
rm -f "$run/heart.passwd"
# this host's own account, heart-pulse-demo, may write only its node and
# the example fleet's topics: the shipped ACL and the block heart-pulse
# --acl prints for it
mosquitto_passwd -b -c "$run/heart.passwd" heart-pulse-demo "$pw" 2>/dev/null
mosquitto_passwd -b "$run/heart.passwd" mizpah "$look" 2>/dev/null
chmod 600 "$run/heart.passwd"
{ cat "$top/contrib/mosquitto/heart.acl"
  heart-pulse --acl --souls "$souls" --username heart-pulse-demo; } > "$run/heart.acl"
sed -e "s#/etc/mosquitto/heart.passwd#$run/heart.passwd#" \
    -e "s#/etc/mosquitto/heart.acl#$run/heart.acl#" \
    -e "s#^listener 1883 #listener $tcp #" -e "s#^listener 9001 #listener $ws #" \
    "$top/contrib/mosquitto/heart.conf" > "$run/mosquitto.conf"
printf "persistence false\nuser %s\n" "$(id -un)" >> "$run/mosquitto.conf"
mosquitto -c "$run/mosquitto.conf" > "$run/mosquitto.log" 2>&1 &
pids="$pids $!"
wait_port "$ws" mosquitto
echo "broker:    mqtt://127.0.0.1:$tcp (pulses), ws://127.0.0.1:$ws (dashboard)"

# the pulse chamber, for the whole example fleet, from one process
HEART_MQTT_PASSWORD=$pw heart-pulse --souls "$souls" \
	--broker "mqtt://127.0.0.1:$tcp" --username heart-pulse-demo \
	--client-id heart-pulse-demo \
	2> "$run/pulse.log" &
pids="$pids $!"

# the dashboard
python3 -m http.server --bind 127.0.0.1 --directory "$top/build/mizpah" \
	"$web" > "$run/http.log" 2>&1 &
pids="$pids $!"
wait_port "$web" "the web server"
# the password in the fragment: the web server never sees it, and the
# page clears it from the address bar and history (heart(7))
echo "dashboard: http://127.0.0.1:$web/?broker=ws://127.0.0.1:$ws&username=mizpah#password=$look"

# the page page_watch watches
status() {
	printf '{"status": {"indicator": "%s", "description": "%s"}}\n' "$1" "$2" \
		> "$run/page/status.json"
}
status none "All Systems Operational"
python3 -m http.server --bind 127.0.0.1 --directory "$run/page" \
	"$page" > "$run/page.log" 2>&1 &
pids="$pids $!"
wait_port "$page" "the watched page's server"
sed -i "s#\"https://www.githubstatus.com/api/v2/status.json\"#\"http://127.0.0.1:$page/status.json\"#" \
	"$souls/page_watch.yaml"
grep -q "127.0.0.1:$page/status.json" "$souls/page_watch.yaml" || {
	echo "demo: page_watch.yaml: its gate's address is not the one to replace" >&2
	exit 70
}
echo "page:      http://127.0.0.1:$page/status.json (page_watch's gate watches it)"

# the model: a real one if configured, else the offline responder
if [ -n "${HEART_LLM_URL:-}${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-}" ]; then
	echo "model:     configured in the environment"
	[ -n "${ANTHROPIC_API_KEY:-}" ] && [ -z "${HEART_LLM_URL:-}${OPENAI_API_KEY:-}" ] &&
		export HEART_LLM_PROVIDER=anthropic
	: "${HEART_LLM_MODEL:?demo: set HEART_LLM_MODEL to the model to use}"
elif tags=$(curl -sf --max-time 1 http://127.0.0.1:11434/api/tags 2>/dev/null); then
	export HEART_LLM_URL=http://127.0.0.1:11434/v1
	HEART_LLM_MODEL="${HEART_LLM_MODEL:-$(echo "$tags" | jq -r ".models[0].name")}"; export HEART_LLM_MODEL
	echo "model:     Ollama on 127.0.0.1:11434, $HEART_LLM_MODEL"
else
	echo "model:     none configured; using the offline responder (t/llm-double.py, 78% [IDLE])"
	mkdir -p "$run/llm"
	rm -f "$run/llm/port"
	: > "$run/llm/requests.jsonl"
	printf '%s\n' '{"idle_ratio": 0.78, "seed": 2, "text": "ALERT: the offline responder has something to report."}' \
		> "$run/llm/script.json"
	python3 "$top/t/llm-double.py" "$run/llm" &
	pids="$pids $!"
	while [ ! -s "$run/llm/port" ]; do sleep 0.05; done
	HEART_LLM_URL="http://127.0.0.1:$(cat "$run/llm/port")/v1"; export HEART_LLM_URL
	export HEART_LLM_MODEL=offline
	export HEART_LLM_PROVIDER=openai
fi

# a few rounds of the wake chambers; real answers are delivered here
i=1
while [ "$i" -le "$ROUNDS" ]; do
	# the watched page changes before the last round
	if [ "$i" -eq "$ROUNDS" ] && [ "$i" -gt 1 ]; then
		status major "Partial outage: webhooks delayed"
	fi
	echo "--- round $i: heart-wake --force | heart-ghost (real answers only)"
	for s in "$souls"/*.yaml "$souls"/*.yml "$souls"/*.md; do
		[ -f "$s" ] || continue
		heart-wake --soul "$s" --force --chamber schedule || :
	done | heart-ghost | jq -r '"\(.agent): \(.response)"' || :
	sleep 1
	i=$((i + 1))
done

echo "--- a pulse, as the dashboard sees it (mosquitto_sub)"
mosquitto_sub -h 127.0.0.1 -p "$tcp" -u mizpah -P "$look" -C 1 -W 15 \
	-t 'heart/travel_rescue/pulse' || echo "(no pulse within 15 s)"
echo "--- state in $HEART_STATE_DIR"
if [ "$KEEP" = 1 ]; then
	echo "KEEP=1: broker, pulse, dashboard, page and model keep running (pids:$pids)"
else
	echo "broker, pulse, dashboard, page and model stop at the end (make demo KEEP=1 leaves them running)"
fi
echo "--- heart-cap status"
heart-cap status --json | jq -r '"\(.agent): \(.used)/\(.cap) used today, \(.ghosts) ghosts, \(.tokens.prompt + .tokens.completion) tokens"'
echo "--- heart-breaker status"
heart-breaker status --json | jq -r '"\(.agent): \(.state)"'
