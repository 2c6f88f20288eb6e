#!/usr/bin/env bats
# heart-ghost's outbox: a failed delivery is kept and retried with
# backoff until it is delivered or dead; heart-wake's answers wait
# there until heart-ghost has them.  The receiver is a real HTTP
# server on a loopback port, reached by curl.

load helpers

bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	cd "$BATS_TEST_TMPDIR"
	unset OPENAI_API_KEY
}

teardown() {
	[ -z "${RCV_PID:-}" ] || kill "$RCV_PID" 2> /dev/null || true
	llm_stop
}

# result AGENT WAKE_ID AT [RESPONSE]: one ok wake result, one line
result() {
	jq -cn --arg a "$1" --arg id "$2" --arg at "$3" \
	    --arg r "${4-answer $2}" '{v: 1, agent: $a, chamber: "schedule",
	    wake_id: $id, at: $at, status: "ok", response: $r, messages: [
	    {role: "user", content: ("prompt of " + $id)},
	    {role: "assistant", content: $r}]}'
}

wakes() {
	jq -r 'select(.part == .parts) | .wake_id' \
	    "$HEART_STATE_DIR/agents/$1/history.jsonl"
}

# receiver_start: an HTTP server on a free loopback port that answers
# a POST to /AGENT with 503 while rcv/down-AGENT exists, else 200, and
# logs "CODE WAKE_ID BODY" to rcv/log; hook posts stdin to it.
receiver_start() {
	mkdir -p rcv
	: > rcv/log
	cat > rcv/server.py <<-'EOF'
	import http.server, os, sys
	d = sys.argv[1]
	class H(http.server.BaseHTTPRequestHandler):
	    def do_POST(self):
	        body = self.rfile.read(int(self.headers["Content-Length"]))
	        down = os.path.exists(d + "/down-" + self.path[1:])
	        code = 503 if down else 200
	        with open(d + "/log", "a") as f:
	            f.write("%d %s %s\n" % (code, self.headers["X-Heart-Wake"],
	                body.decode().strip()))
	        self.send_response(code)
	        self.send_header("Content-Length", "0")
	        self.end_headers()
	    def log_message(self, *a):
	        pass
	s = http.server.HTTPServer(("127.0.0.1", 0), H)
	open(d + "/port.tmp", "w").write(str(s.server_port))
	os.rename(d + "/port.tmp", d + "/port")
	s.serve_forever()
	EOF
	python3 rcv/server.py "$PWD/rcv" 3>&- &
	RCV_PID=$!
	wait_until 20 test -s rcv/port
	cat > hook <<-EOF
	#!/bin/sh
	exec curl -fsS -H "X-Heart-Wake: \$HEART_WAKE_ID" --data-binary @- \
	    http://127.0.0.1:$(cat rcv/port)/\$HEART_AGENT
	EOF
	chmod +x hook
}

# tries_a: how many requests the receiver had for alpha
tries_a() {
	awk '$2 ~ /^a/' rcv/log | wc -l
}

# got: the wake ids the receiver took (200), first time each, in order
got() {
	awk '$1 == 200 && !seen[$2]++ { print $2 }' rcv/log
}

@test "receiver down, then back: every answer arrives, in wake order, once after dedupe; tries back off; another agent goes on" {
	receiver_start
	touch rcv/down-alpha
	for i in 1 2 3 4 5; do
		result alpha "a$i" "2026-11-21T12:0$i:00Z"
		result bravo "b$i" "2026-11-21T12:0$i:00Z"
	done > in
	run --separate-stderr at "2026-11-21 12:06:00" heart-ghost --text --exec ./hook < in
	assert_failure 69
	mapfile -t stderr_lines < <(echo "$stderr" | grep '^heart-ghost: ')
	[[ ${stderr_lines[0]} == 'heart-ghost: alpha: delivery of wake a1 failed: ./hook: exit status 22; it waits in the outbox, next try from 2026-11-21T12:07:00Z' ]]
	[ "${stderr_lines[1]}" = 'heart-ghost: alpha: wake a2 waits in the outbox behind an earlier answer (heart-ghost --outbox)' ]
	[ "${#stderr_lines[@]}" -eq 5 ]
	# the one stuck agent held up none of the other's answers
	[ "$(got | tr '\n' ' ')" = "b1 b2 b3 b4 b5 " ]
	[ "$(tries_a)" -eq 1 ]
	# every wake is in the history whatever its delivery
	[ "$(wakes alpha | tr '\n' ' ')" = "a1 a2 a3 a4 a5 " ]
	# backoff: not before a minute, then two, then four
	at "2026-11-21 12:06:59" heart-ghost --flush --text --exec ./hook
	[ "$(tries_a)" -eq 1 ]
	run at "2026-11-21 12:07:00" heart-ghost --flush --text --exec ./hook
	assert_failure 69
	[ "$(tries_a)" -eq 2 ]
	at "2026-11-21 12:08:59" heart-ghost --flush --text --exec ./hook
	[ "$(tries_a)" -eq 2 ]
	run at "2026-11-21 12:09:00" heart-ghost --flush --text --exec ./hook
	assert_failure 69
	[ "$(jq -r '"\(.tries) \(.next)"' "$HEART_STATE_DIR/agents/alpha/outbox/a1.json")" = "3 2026-11-21T12:13:00Z" ]
	[ "$(tries_a)" -eq 3 ]
	rm rcv/down-alpha
	run --separate-stderr at "2026-11-21 12:13:00" heart-ghost --flush --text --exec ./hook
	assert_success
	[ -z "$stderr" ]
	[ "$(got | tr '\n' ' ')" = "b1 b2 b3 b4 b5 a1 a2 a3 a4 a5 " ]
	grep -q '^200 a3 answer a3$' rcv/log
	[ ! -e "$HEART_STATE_DIR/agents/alpha/outbox" ]
	# nothing left: a flush tries nothing
	at "2026-11-21 13:00:00" heart-ghost --flush --text --exec ./hook
	[ "$(wc -l < rcv/log)" -eq 13 ]
}

@test "a heart-wake whose heart-ghost never ran: its answer waits, and a later --flush or run for the agent delivers it once" {
	llm_start
	printf '%s\n' 'heart: { schedule: { prompt: "Anything?" } }' > scout.yaml
	llm_script '{"replies":[{"text":"ALERT: the strike starts at 6."},{"text":"ALERT: gate B12."},{"text":"[IDLE]"}]}'
	heart-wake --soul scout.yaml --force --chamber schedule > /dev/null
	o=$HEART_STATE_DIR/agents/scout/outbox
	[ "$(ls "$o" | wc -l)" -eq 1 ]
	[ ! -e "$HEART_STATE_DIR/agents/scout/history.jsonl" ]
	run heart-ghost --outbox
	assert_success
	[ "$(echo "$output" | jq -r '"\(.agent) \(.state) \(.tries)"')" = "scout waiting 0" ]
	run --separate-stderr heart-ghost --flush --text
	assert_success
	assert_output "ALERT: the strike starts at 6."
	[ "$(wakes scout | wc -l)" -eq 1 ]
	[ ! -e "$o" ]
	run heart-ghost --flush --text
	assert_output ""
	# the next run that reads a line of the agent, an idle one too
	heart-wake --soul scout.yaml --force --chamber schedule > /dev/null
	run --separate-stderr bash -c 'heart-wake --soul scout.yaml --force --chamber schedule | heart-ghost --text'
	assert_success
	assert_output "ALERT: gate B12."
	[ "$(wakes scout | wc -l)" -eq 2 ]
	[ ! -e "$o" ]
	# given its line again, nothing: it was committed and delivered
	run heart-ghost --outbox
	assert_output ""
}

@test "the pipe: heart-wake keeps the answer before it prints it, and heart-ghost removes it once delivered" {
	llm_start
	printf '%s\n' 'heart: { schedule: { prompt: "Anything?" } }' > scout.yaml
	llm_script '{"replies":[{"text":"ALERT: one."}]}'
	heart-wake --soul scout.yaml --force --chamber schedule > line
	id=$(jq -r .wake_id line)
	f=$HEART_STATE_DIR/agents/scout/outbox/$id.json
	[ "$(jq -r .line "$f")" = "$(cat line)" ]
	run heart-ghost --text line
	assert_output "ALERT: one."
	[ ! -e "$f" ]
	run heart-ghost --text line
	assert_output ""
}

@test "a dead letter: failing for --retry-for, it is kept, listed, reported once; later answers go on; given again it is tried" {
	result alpha d1 2026-11-21T12:00:00Z > d1
	result alpha d2 2026-11-21T12:30:00Z > d2
	run at "2026-11-21 12:00:00" heart-ghost --retry-for 1h --text --exec false < d1
	assert_failure 69
	at "2026-11-21 12:30:00" heart-ghost --retry-for 1h --text --exec false < d2 2> /dev/null || true
	printf '#!/bin/sh\n[ "$HEART_WAKE_ID" != d1 ] && cat\n' > not-d1
	chmod +x not-d1
	run --separate-stderr at "2026-11-21 13:00:00" heart-ghost --retry-for 1h --flush --text --exec ./not-d1
	assert_failure 69
	[ "${stderr_lines[0]}" = "heart-ghost: alpha: delivery of wake d1 failed: ./not-d1: exit status 1; given up, a dead letter now: $HEART_STATE_DIR/agents/alpha/dead/d1.json" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	assert_output "answer d2"
	run --separate-stderr at "2026-11-21 14:00:00" heart-ghost --retry-for 1h --flush --text --exec ./not-d1
	assert_success
	[ -z "$stderr" ]
	assert_output ""
	run heart-ghost --outbox
	[ "$(echo "$output" | jq -r '"\(.wake_id) \(.state) \(.tries) \(.since) \(.dead) \(.error)"')" = "d1 dead 3 2026-11-21T12:00:00Z 2026-11-21T13:00:00Z ./not-d1: exit status 1" ]
	# given again by hand, it is tried once more, now
	run at "2026-11-21 15:00:00" heart-ghost --text < d1
	assert_success
	assert_output "answer d1"
	run heart-ghost --outbox
	assert_output ""
}

@test "--outbox: JSON lines in a pipe, a table on a terminal" {
	result alpha t1 2026-11-21T12:00:00Z > in
	result alpha t2 2026-11-21T12:01:00Z >> in
	at "2026-11-21 12:01:00" heart-ghost --exec false < in 2> /dev/null || true
	run heart-ghost --outbox alpha
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$(echo "$output" | jq -r .wake_id | tr '\n' ' ')" = "t1 t2 " ]
	echo "$output" | jq -se 'map(select(.wake_id == "t1"))[0] | .tries == 1 and .next == "2026-11-21T12:02:00Z" and .error == "false: exit status 1"'
	run heart-ghost --outbox bravo
	assert_success
	assert_output ""
	run script -qec 'heart-ghost --outbox' /dev/null
	assert_success
	[[ ${lines[0]} == AGENT*WAKE_ID*STATE*TRIES*NEXT/DEAD*ERROR* ]]
	[[ ${lines[1]} == alpha*t1*waiting*1*2026-11-21T12:02:00Z*'false: exit status 1'* ]]
	run heart-ghost --outbox ../x
	assert_failure 64
	# a wake id names a file: one that cannot is bad data
	result alpha ../t3 2026-11-21T12:02:00Z > bad
	run --separate-stderr heart-ghost bad
	assert_failure 65
	[ "$stderr" = 'heart-ghost: bad:1: wake_id "../t3" is not 1 to 64 of A-Z a-z 0-9 _ . -' ]
	run heart-ghost --outbox --flush
	assert_failure 64
}

@test "kill -9 of heart-ghost --flush in a loop: nothing lost, nothing corrupt, each answer once after dedupe, in order" {
	receiver_start
	for i in $(seq -w 1 40); do
		result crash "k$i" "2026-11-21T12:00:00Z" "$(head -c 20000 /dev/zero | tr '\0' x) $i"
	done > in
	touch rcv/down-crash
	at "2026-11-20 12:00:00" heart-ghost --text --exec ./hook < in 2> /dev/null || true
	rm rcv/down-crash
	o=$HEART_STATE_DIR/agents/crash/outbox
	[ "$(ls "$o" | wc -l)" -eq 40 ]
	killed=0
	# the receiver took a post more than the $posts it had, or the
	# flush ended (not $n: wait_until has an n of its own)
	posted_or_gone() {
		[ "$(wc -l < rcv/log)" -gt "$posts" ] ||
			! kill -0 "$pid" 2> /dev/null
	}
	for r in $(repeats 40 10); do
		[ -e "$o" ] || break
		posts=$(wc -l < rcv/log)
		heart-ghost --flush --text --exec ./hook > /dev/null 2>&1 & pid=$!
		wait_until 20 posted_or_gone
		sleep 0.00$((RANDOM % 9 + 1))
		kill -9 "$pid" 2> /dev/null || true
		st=0
		wait "$pid" || st=$?
		[ "$st" -eq 137 ] && killed=$((killed + 1))
		# each answer left is whole: one jq reads them all (an
		# empty file would be no value: the count says so)
		left=("$o"/*.json)
		[ -e "${left[0]}" ] || continue
		jq -se --argjson n ${#left[@]} 'length == $n and
		    all(.[]; .line | fromjson | .status == "ok")' \
		    "${left[@]}" > /dev/null
	done
	[ "$killed" -gt 0 ]
	heart-ghost --flush --text --exec ./hook
	[ ! -e "$o" ]
	diff <(seq -w 1 40 | sed 's/^/k/') <(got)
	[ "$(awk '$1 == 200' rcv/log | wc -l)" -ge 40 ]
	diff <(seq -w 1 40 | sed 's/^/k/') <(wakes crash)
}

@test "an answer's cost waits in the outbox and reaches its delivery as the decimal it is" {
	llm_start
	printf '%s\n' 'heart: { schedule: { prompt: "Anything?" } }' \
	    'llm: { price: { input: 2.50, cached_input: 1.25, output: 10.00 } }' > scout.yaml
	llm_script '{"replies":[{"text":"ALERT: one.","usage":{"prompt_tokens":1200,"completion_tokens":40,"cached_tokens":1024}}]}'
	heart-wake --soul scout.yaml --force --chamber schedule > line
	f=$(ls "$HEART_STATE_DIR"/agents/scout/outbox/*.json)
	grep -qF '\"cost\":0.00212,' "$f"
	run -1 grep -F 0.0021199 "$f" line
	printf '#!/bin/sh\ncat > delivered\n' > keep-it
	chmod +x keep-it
	heart-ghost --flush --exec ./keep-it
	grep -qF '"cost":0.00212,' delivered
	run -1 grep -F 0.0021199 delivered
}
