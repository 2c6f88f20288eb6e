#!/bin/bash
# bench/mizpah.sh - is the dashboard responsive with 1,000 agents
# pulsing every 10 s?  Real mosquitto (contrib config), real heart-pulse,
# Debian's Chromium; prints the main thread's long-task time per second
# and the frame rate over 20 s.  Asserts nothing.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
[ -f build/mizpah/mqtt.min.js ] || make -s mizpah
tcp=$(port); ws=$(port); web=$(port)
mosquitto_passwd -b -c "$tmp/heart.passwd" heart-pulse bench 2>/dev/null
mosquitto_passwd -b "$tmp/heart.passwd" mizpah look 2>/dev/null
sed -e "s#/etc/mosquitto/heart.passwd#$tmp/heart.passwd#" \
    -e "s#/etc/mosquitto/heart.acl#$top/contrib/mosquitto/heart.acl#" \
    -e "s#^listener 1883 #listener $tcp #" -e "s#^listener 9001 #listener $ws #" \
    contrib/mosquitto/heart.conf > "$tmp/m.conf"
printf 'persistence false\nuser %s\n' "$(id -un)" >> "$tmp/m.conf"
mosquitto -c "$tmp/m.conf" > /dev/null 2>&1 & pids="$pids $!"
mkdir -p "$tmp/souls"
for i in $(seq 1000); do printf 'name: a%04d\n' "$i" > "$tmp/souls/a$i.yaml"; done
sleep 0.5
HEART_STATE_DIR=$tmp/state HEART_MQTT_PASSWORD=bench ./heart-pulse --souls "$tmp/souls" \
	--broker "mqtt://127.0.0.1:$tcp" --username heart-pulse 2> /dev/null & pids="$pids $!"
python3 -m http.server --bind 127.0.0.1 --directory build/mizpah "$web" > /dev/null 2>&1 & pids="$pids $!"
sleep 2
printf 'wait a1000 online\ncounts\nperf 20\ncounts\n' |
node t/mizpah-check.mjs "http://127.0.0.1:$web/?broker=ws://127.0.0.1:$ws&username=mizpah&password=look" "$tmp" |
jq -r 'if .longtask_ms_per_s != null then "1,000 agents at 10 s: main-thread long tasks \(.longtask_ms_per_s * 10 | round / 10) ms per second, \(.fps * 10 | round / 10) frames per second" elif .counts then .counts else tostring end'
