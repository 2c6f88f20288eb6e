#!/bin/bash
# bench/mizpah.sh - is the dashboard smooth with 1,000 and 10,000 agents
# pulsing every 10 s?  Real mosquitto (contrib config), real heart-pulse,
# Debian's Chromium in a 1400x900 window (t/mizpah-check.mjs).  Each fleet
# has a few agents in every state (state files, a publisher killed, one
# hung).  Once every agent is drawn and has pulsed, it measures frames a
# second and main-thread long tasks (ms a second) over 20 s, with the
# animations and with prefers-reduced-motion, and prints the machine's
# load beside them; the first line is the page with no agent, measured
# the same way in the same run, the reference to compare with.  Screenshots of 20, 1,000 and 10,000 agents (reduced
# motion, so that no glyph is caught mid-breath) go to bench/results/.
# Asserts nothing.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
tmp=$(mktemp -d)
pids=		# the broker, the web server and the browser
fleet=		# a fleet's publishers
trap 'for p in $fleet $pids; do kill -CONT $p || :; kill $p || :; done 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
load() { cut -d' ' -f1 /proc/loadavg; }
[ -f build/mizpah/mqtt.min.js ] || make -s mizpah
[ -x heart-pulse ] || make -s heart-pulse
tcp=$(port); ws=$(port); web=$(port)
mosquitto_passwd -b -c "$tmp/heart.passwd" heart-pulse bench 2>/dev/null
mosquitto_passwd -b "$tmp/heart.passwd" mizpah look 2>/dev/null
# the shipped ACL, and one account for every bench prefix (one trusted host)
{ cat contrib/mosquitto/heart.acl; printf 'user heart-pulse\ntopic write heart/#\n'; } > "$tmp/heart.acl"
sed -e "s#/etc/mosquitto/heart.passwd#$tmp/heart.passwd#" \
    -e "s#/etc/mosquitto/heart.acl#$tmp/heart.acl#" \
    -e "s#^listener 1883 #listener $tcp #" -e "s#^listener 9001 #listener $ws #" \
    contrib/mosquitto/heart.conf > "$tmp/m.conf"
printf 'persistence false\nuser %s\n' "$(id -un)" >> "$tmp/m.conf"
mosquitto -c "$tmp/m.conf" > /dev/null 2>&1 & pids="$pids $!"
python3 -m http.server --bind 127.0.0.1 --directory build/mizpah "$web" > /dev/null 2>&1 & pids="$pids $!"
node t/mizpah-check.mjs "http://127.0.0.1:$web/" "$tmp" > "$tmp/check.log" 2>&1 & pids="$pids $!"
while [ ! -s "$tmp/check.port" ]; do sleep 0.2; done
step() { curl -sS --get "http://127.0.0.1:$(cat "$tmp/check.port")/$1" ${2+--data-urlencode "a=$2"}; }
export HEART_MQTT_PASSWORD=bench

# fleet N: N souls in ten groups (fewer for a small fleet), 1% killed,
# 1% hung, and state files for a few of every other look
fleet() {
	rm -rf "$tmp/souls" "$tmp/dead" "$tmp/hung" "$tmp/state"
	mkdir -p "$tmp/souls" "$tmp/dead" "$tmp/hung"
	sleep 3600 & fleet="$fleet $!"
	python3 - "$1" "$tmp" "$!" <<-'PY'
	import json, os, sys, time
	n, d, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
	groups = ["eu-scout", "us-scout", "news-watch", "stock-watch", "travel",
	          "ops-bot", "mail-triage", "ci-watch", "crm-sync", "docs-bot"]
	now, h = int(time.time()), time.gmtime().tm_hour
	off = "%02d:00-%02d:00" % ((h + 2) % 24, (h + 3) % 24)
	for i in range(n):
	    g = groups[i % 5] if n <= 20 else groups[i // 3 % 10]
	    name, k = "%s-%05d" % (g, i), i % (10 if n <= 20 else 100)
	    where = "dead" if k == 8 else "hung" if k == 9 else "souls"
	    extra = ("heart: { pulse: { misses: 1000 } }\n" if k == 9 else
	             "heart: { daily_cap: 0 }\n" if k == 6 else
	             "heart: { schedule: { active_hours: '%s' }, idle: { active_hours: '%s' } }\n"
	             % (off, off) if k == 7 else "")
	    open("%s/%s/%s.yaml" % (d, where, name), "w").write("name: %s\n%s" % (name, extra))
	    a = "%s/state/agents/%s" % (d, name)
	    os.makedirs(a)
	    def put(f, o):
	        open("%s/%s" % (a, f), "w").write(json.dumps(o))
	    if k == 1:
	        put("breaker.json", {"v": 1, "state": "open", "trigger": "llm",
	            "until": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 900)),
	            "reason": "HTTP 429 Too Many Requests"})
	    if k == 2:
	        put("breaker.json", {"v": 1, "state": "half_open", "trigger": "tool",
	            "reason": "quote API: HTTP 502"})
	    if k == 3:
	        put("wake.json", {"v": 1, "last": {"schedule": {"ts": now - 60,
	            "status": "error"}}, "running": None, "last_error": {"ts": now - 60,
	            "message": "HTTP 500 from the provider"}})
	    if k in (4, 5):
	        put("wake.json", {"v": 1, "last": {"idle": {"ts": now, "status": "running"}},
	            "running": {"chamber": "idle", "since": "now", "pid": pid}})
	PY
}

publish() {	# publish DIR PREFIX: a heart-pulse for the souls in DIR
	HEART_STATE_DIR=$tmp/state ./heart-pulse --souls "$tmp/$1" --prefix "$2" \
		--broker "mqtt://127.0.0.1:$tcp" --username heart-pulse \
		--client-id "bench-$1-${2##*/}" 2> /dev/null &
	fleet="$fleet $!"
}

until_page() {	# until_page EXPR: wait until the page's EXPR is true
	local r
	while r=$(step eval "$1") && [ "$r" != true ]; do
		case $r in *error*) echo "bench/mizpah.sh: $r" >&2; exit 1;; esac
		sleep 0.5
	done
}

row() {	# row AGENTS MOTION: measure 20 s, print a line of the table
	local r
	step motion "$2" > /dev/null
	r=$(step perf 20)
	printf '%-7s %-8s %8.1f  %15.0f  %s\n' "$1" "$([ "$2" = reduce ] && echo reduced || echo on)" \
	    "$(echo "$r" | jq .fps)" "$(echo "$r" | jq .longtask_ms_per_s)" "$(load)"
}

echo "agents  motion   frames/s  long tasks ms/s  load (1 min)"
# the reference: the page with no agent at all, in the same run
step goto "?broker=ws://127.0.0.1:$ws&username=mizpah&prefix=heart/none#password=look" > /dev/null
row 0 no-preference
for n in 20 1000 10000; do
	p=heart/b$n
	fleet "$n"
	live=$(ls "$tmp/souls" | wc -l) hung=$(ls "$tmp/hung" | wc -l)
	step goto "?broker=ws://127.0.0.1:$ws&username=mizpah&prefix=$p#password=look" > /dev/null
	publish souls "$p"; publish dead "$p"; dead=$!; publish hung "$p"; stopped=$!
	until_page "mizpah.drawn().length === $n"
	{ kill -9 "$dead"; wait "$dead"; } 2> /dev/null || true
	kill -STOP "$stopped"
	# every live agent has pulsed, the hung ones have missed theirs
	until_page "[...agents.values()].filter((a) => a.p && !/^(late|offline)$/.test(a.look)).length >= $live &&
	    [...agents.values()].filter((a) => a.look === 'late').length === $hung"
	step motion reduce > /dev/null
	step shot "mizpah-$n" > /dev/null
	cp "$tmp/mizpah-$n.png" bench/results/
	if [ "$n" -gt 20 ]; then row "$n" no-preference; row "$n" reduce; fi
	for q in $fleet; do kill -CONT "$q" || :; kill "$q" || :; done 2>/dev/null
	fleet=
done
grep -h pageerror "$tmp/check.log" || true
