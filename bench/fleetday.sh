#!/bin/bash
# bench/fleetday.sh - the paper's fleet day (table 2, section 2) on a
# simulated day: 75 agents with the paper's mix driven every minute for
# 24 hours under libfaketime, against the LLM test double answering
# [IDLE] 78% of the time; one agent's provider fails for two hours.
# Prints a table beside the paper's figures and the naive poller's,
# writes bench/results/fleetday.{txt,png}; then measures heart's own CPU
# per agent-day with 10,000 agents.  Between the two, the same day
# three ways (issue 18: a gate program, a triage model), into
# bench/results/fleetday-economy.txt; `fleetday.sh ways' runs that
# alone.
set -eu
only=${1:-all}
cd "$(dirname "$0")/.."
top=$PWD
PATH=$top:$PATH
tmp=$(mktemp -d)
trap 'kill $d1 $d2 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
export HEART_STATE_DIR=$tmp/state TZ=UTC
. t/faketime.bash

double() {	# double DIR SCRIPT: start an LLM double, print its URL
	mkdir -p "$1"; : > "$1/requests.jsonl"; printf '%s\n' "$2" > "$1/script.json"
	python3 t/llm-double.py "$1" > /dev/null 2>&1 &
	while [ ! -s "$1/port" ]; do sleep 0.05; done
	echo "http://127.0.0.1:$(cat "$1/port")/v1"
}
url=$(double "$tmp/llm" '{"idle_ratio": 0.78, "seed": 5, "text": "ALERT: something worth your time."}')
d1=$(pgrep -n -f "llm-double.py $tmp/llm")
furl=$(double "$tmp/fail" '{"idle_ratio": 0.78, "seed": 6}')
d2=$(pgrep -n -f "llm-double.py $tmp/fail")
export HEART_LLM_URL=$url HEART_LLM_MODEL=double

start=$(date -u -d '2026-11-23 00:00:00' +%s)
if [ "$only" != ways ]; then
# the fleet: 66 general agents, travel_rescue, 5 stock agents with a
# tool, 2 agents that only explore when idle, 1 whose provider fails
mkdir -p "$tmp/souls"
for i in $(seq -w 1 66); do
	printf 'name: agent%s\nheart:\n  schedule: { interval: 30m, daily_cap: 48 }\n  idle: { after: 2h, daily_cap: 12 }\n' "$i" > "$tmp/souls/agent$i.yaml"
done
cp share/heartbeat/souls/travel_rescue.yaml "$tmp/souls/"
for i in 1 2 3 4 5; do
	sed "s/^name: stock_watch/name: stock$i/; s#\\./\\.\\./tools/price#$top/share/heartbeat/tools/price#; s#\\.\\./tools/price#$top/share/heartbeat/tools/price#" \
		share/heartbeat/souls/stock_watch.yaml > "$tmp/souls/stock$i.yaml"
done
for i in 1 2; do
	printf 'name: explorer%s\nheart:\n  schedule: { daily_cap: 0 }\n  idle: { after: 2h, daily_cap: 12 }\n' "$i" > "$tmp/souls/explorer$i.yaml"
done
printf 'name: flaky\nllm: { base_url: "%s", timeout: 5s }\nheart:\n  schedule: { interval: 30m, daily_cap: 48 }\n' "$furl" > "$tmp/souls/flaky.yaml"
n=$(ls "$tmp/souls" | wc -l)

echo "== the fleet day: $n agents, every minute for 24 simulated hours"
cpu0=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
t0=$(date +%s.%N)
for ((m = 0; m < 1440; m++)); do
	now=$((start + m * 60))
	case $m in
	600) printf '{"replies":[{"status":503,"text":"provider outage"}]}\n' > "$tmp/fail/script.json" ;;
	720) printf '{"idle_ratio": 0.78, "seed": 6}\n' > "$tmp/fail/script.json" ;;
	esac
	at_epoch "$now" heart-wake "$tmp"/souls/*.yaml 2>/dev/null || :
done > "$tmp/results.jsonl"
t1=$(date +%s.%N)
r=$tmp/results.jsonl
requests=$(( $(wc -l < "$tmp/llm/requests.jsonl") + $(wc -l < "$tmp/fail/requests.jsonl") ))
python3 - "$r" "$n" "$requests" "$HEART_STATE_DIR" "$t0" "$t1" > "$tmp/table" <<'PY'
import json, sys, collections, glob
r, n, req, state, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
st = collections.Counter(); wakes = 0; ghosts = 0; opens = 0
hours = collections.defaultdict(lambda: [0, 0, 0])
for line in open(r):
    j = json.loads(line); s = j["status"]; st[s] += 1
    h = int(j["at"][11:13])
    if s in ("ok", "idle", "tool_cap") or (s == "error"):
        wakes += 1
    if s == "idle": ghosts += 1; hours[h][0] += 1
    if s == "ok": hours[h][1] += 1
    if s == "error": hours[h][2] += 1
    opens += sum(1 for e in j.get("breaker_events", []) if e.get("event") == "open")
tok = 0
for f in glob.glob(state + "/agents/*/cap.json"):
    c = json.load(open(f)); tok += c["tokens"]["prompt"] + c["tokens"]["completion"]
answered = st["ok"] + st["idle"]
print("%-34s %12s %14s" % ("", "heart (sim)", "paper / naive"))
print("%-34s %12d %14s" % ("agents", n, "75"))
print("%-34s %12d %14s" % ("pulses (75 x 8,640, 10 s)", n * 8640, "~864,000/day"))
print("%-34s %12.1f %14s" % ("wakes per agent per day (mean)", wakes / n, "31.4"))
print("%-34s %11.1f%% %14s" % ("ghost rate (idle of answered)", 100.0 * ghosts / max(answered, 1), "~78%"))
print("%-34s %12d %14s" % ("LLM requests", req, "216,000 naive"))
print("%-34s %12d %14s" % ("tokens (prompt + completion)", tok, ""))
print("%-34s %12d %14s" % ("cap refusals (capped)", st["capped"], ""))
print("%-34s %12d %14s" % ("breaker openings", opens, "2-5 a week"))
print("%-34s %12d %14s" % ("LLM errors (the 2 h outage)", st["error"], ""))
for k in ("not_due", "not_idle", "quiet", "open", "empty", "busy"):
    print("%-34s %12d %14s" % ("zero-token skips: " + k, st[k], ""))
print("%-34s %12.1f %14s" % ("wall seconds for the day", t1 - t0, ""))
with open(r + ".hours", "w") as f:
    for h in range(24):
        f.write("%d %d %d %d\n" % (h, hours[h][0], hours[h][1], hours[h][2]))
PY
cat "$tmp/table"
mkdir -p bench/results
cp "$tmp/table" bench/results/fleetday.txt
if command -v gnuplot > /dev/null; then
	gnuplot <<GP
set terminal pngcairo size 900,450
set output "bench/results/fleetday.png"
set title "The fleet day: requests per hour ($n agents, 78% [IDLE], outage 10:00-12:00)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set xlabel "hour (UTC)"
set ylabel "LLM requests"
set key top left
plot "$r.hours" using 2:xtic(1) title "ghost ([IDLE])" lc rgb "#8a94a8", \
     "" using 3 title "real answer" lc rgb "#2fd39a", \
     "" using 4 title "failed (breaker episode)" lc rgb "#e05050"
GP
	echo "chart: bench/results/fleetday.png"
else
	echo "chart: skipped (gnuplot missing: make bench-deps)"
fi

fi

echo "== spending less: the same day three ways (issue 18)"
# One world for all: events at fixed times of the day; the main model
# (the double, windows with span) answers ALERT on the first wake after
# each, [IDLE] otherwise.  The same 60 general agents (schedule every
# 30m) live the day three ways: as today; behind a gate program that
# admits a wake only when the world changed since the last admitted
# one (the shipped changed-output, over a command that prints the
# events so far); and with a triage model on a cheaper endpoint (a
# second double, answering the heartbeat question from the same world).
# Priced as a large main model ($2.50 in, $10 out per million tokens)
# and a small triage model ($0.15 in, $0.60 out).
events="02:13 05:41 08:07 09:52 11:26 13:38 15:03 16:44 19:19 22:31"
mkdir -p "$tmp/world"
for e in $events; do
	echo "$(date -u -d "2026-11-23 $e:00" +%s) $e"
done > "$tmp/world/events"
printf '#!/bin/sh\nawk -v now="$(date +%%s)" '"'"'$1 <= now { print "event at " $2 }'"'"' "%s"\n' \
	"$tmp/world/events" > "$tmp/world/world-now"
chmod +x "$tmp/world/world-now"
windows=$(for e in $events; do
	h=${e%:*} m=${e#*:}
	printf '{"from":"%s","to":"%s:%02d","text":"ALERT: event at %s."}\n' \
		"$e" "$h" $((10#$m + 1)) "$e"
done | jq -sc .)
wurl=$(double "$tmp/wmain" "{\"windows\": $windows, \"span\": true, \"all\": true}")
d3=$(pgrep -n -f "llm-double.py $tmp/wmain")
turl=$(double "$tmp/wtriage" "{\"windows\": $windows, \"span\": true, \"all\": true, \"decide\": true}")
d4=$(pgrep -n -f "llm-double.py $tmp/wtriage")
trap 'kill $d1 $d2 $d3 $d4 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
ways="today gate triage"
for w in $ways; do
	mkdir -p "$tmp/ways/$w"
	for i in $(seq -w 1 60); do
		{
		printf 'name: agent%s\nsystem: You watch the world for your user.\n' "$i"
		printf 'heart:\n  schedule: { interval: 30m, daily_cap: 48'
		[ "$w" = gate ] && printf ', gate: [%s, %s]' \
			"$top/share/heartbeat/gates/changed-output" "$tmp/world/world-now"
		printf ' }\n  idle: { daily_cap: 0 }\nllm:\n  base_url: "%s"\n' "$wurl"
		printf '  price: { input: 2.50, cached_input: 1.25, output: 10.00 }\n'
		[ "$w" = triage ] && printf '  triage: { base_url: "%s", model: cheap, price: { input: 0.15, cached_input: 0.075, output: 0.60 } }\n' "$turl"
		} > "$tmp/ways/$w/agent$i.yaml"
	done
done
for w in $ways; do
	: > "$tmp/wmain/requests.jsonl"; : > "$tmp/wtriage/requests.jsonl"
	export HEART_STATE_DIR=$tmp/state-$w
	w0=$(date +%s.%N)
	for ((m = 0; m < 1440; m++)); do
		at_epoch $((start + m * 60)) heart-wake "$tmp/ways/$w"/*.yaml 2>/dev/null || :
	done > "$tmp/ways/$w.jsonl"
	w1=$(date +%s.%N)
	echo "$w $(wc -l < "$tmp/wmain/requests.jsonl") $(wc -l < "$tmp/wtriage/requests.jsonl") $w0 $w1"
done > "$tmp/ways.req"
export HEART_STATE_DIR=$tmp/state
python3 - "$tmp/ways" "$tmp/ways.req" 60 > "$tmp/ways.table" <<'PY'
import json, sys, collections, re
d, reqf, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = {}
for line in open(reqf):
    w, mreq, treq, t0, t1 = line.split()
    st = collections.Counter(); mtok = ttok = 0; answers = set()
    mcost = tcost = 0.0
    for l in open("%s/%s.jsonl" % (d, w)):
        j = json.loads(l); st[j["status"]] += 1
        u = j.get("usage") or {}
        mtok += u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
        t = (j.get("triage") or {}).get("usage") or {}
        ttok += t.get("prompt_tokens", 0) + t.get("completion_tokens", 0)
        tc = (j.get("triage") or {}).get("cost") or 0
        tcost += tc
        mcost += (j.get("cost") or 0) - tc
        if j["status"] == "ok":
            for e in re.findall(r"event at (\d\d:\d\d)", j["response"]):
                answers.add((j["agent"], e))
    rows[w] = dict(mreq=int(mreq) / n, treq=int(treq) / n, mtok=mtok / n,
                   ttok=ttok / n, mcost=mcost / n, tcost=tcost / n,
                   cost=(mcost + tcost) / n, ok=st["ok"], answers=answers,
                   gated=st["gated"], idle=st["idle"], err=st["error"],
                   wall=float(t1) - float(t0))
ways = ["today", "gate", "triage"]
print("%-40s %10s %10s %10s" % ("per agent-day (60 agents, 10 events)", "today", "gate", "triage"))
for label, k, f in (("main-model requests", "mreq", "%10.1f"),
                    ("main-model tokens", "mtok", "%10.0f"),
                    ("triage requests", "treq", "%10.1f"),
                    ("triage tokens", "ttok", "%10.0f"),
                    ("main-model dollars", "mcost", "%10.5f"),
                    ("triage dollars", "tcost", "%10.5f"),
                    ("dollars, both models", "cost", "%10.5f")):
    print("%-40s " % label + " ".join(f % rows[w][k] for w in ways))
print("%-40s " % "real answers (ok, fleet)" + " ".join("%10d" % rows[w]["ok"] for w in ways))
print("%-40s " % "  events told (agent x event, fleet)" + " ".join("%10d" % len(rows[w]["answers"]) for w in ways))
print("%-40s " % "  the same events told as today" + " ".join("%10s" % ("yes" if rows[w]["answers"] == rows["today"]["answers"] else "NO") for w in ways))
print("%-40s " % "ghosts (idle, fleet)" + " ".join("%10d" % rows[w]["idle"] for w in ways))
print("%-40s " % "gated wakes (zero requests, fleet)" + " ".join("%10d" % rows[w]["gated"] for w in ways))
print("%-40s " % "errors (fleet)" + " ".join("%10d" % rows[w]["err"] for w in ways))
print("%-40s " % "main-model tokens, today / this way" + " ".join("%9.1fx" % (rows["today"]["mtok"] / max(rows[w]["mtok"], 1)) for w in ways))
print("%-40s " % "dollars, today / this way" + " ".join("%9.1fx" % (rows["today"]["cost"] / max(rows[w]["cost"], 1e-9)) for w in ways))
print("%-40s " % "wall time of the day, / today's" + " ".join("%9.2fx" % (rows[w]["wall"] / rows["today"]["wall"]) for w in ways))
PY
cat "$tmp/ways.table"
cp "$tmp/ways.table" bench/results/fleetday-economy.txt

[ "$only" = ways ] && exit 0
echo "== heart's own CPU per agent-day, 10,000 agents (one simulated hour, scaled to 24)"
rm -rf "$HEART_STATE_DIR"; mkdir -p "$tmp/big"
for i in $(seq 1 10000); do
	printf 'heart: { schedule: { interval: 30m }, idle: { daily_cap: 0 } }\n' > "$tmp/big/a$i.yaml"
done
cpu=$( { /usr/bin/time -f '%U %S' bash -c '
	. t/faketime.bash
	for ((m = 0; m < 60; m++)); do
		at_epoch $(('"$start"' + m * 60)) \
		heart-wake '"$tmp"'/big/*.yaml > /dev/null 2>&1 || :
	done' ; } 2>&1 | tail -1)
echo "$cpu" | awk '{ s = $1 + $2; printf "CPU for 10,000 agents x 1 hour: %.1f s; per agent-day: %.1f ms (every wake against the double)\n", s, s * 24 / 10000 * 1000 }' | tee -a bench/results/fleetday.txt
