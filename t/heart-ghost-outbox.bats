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

# result_at AGENT WAKE_ID AT [RESPONSE]: one ok wake result, one line
result_at() {
	jq -cn --arg a "$1" --arg id "$2" --arg at "$3" \
	    --arg r "${4-answer $2}" '{v: 1, agent: $a, chamber: "schedule",
	    wake_id: $id, at: $at, status: "ok", response: $r, messages: [
	    {role: "user", content: ("prompt of " + $id)},
	    {role: "assistant", content: $r}]}'
}

# receiver_start: an HTTP server on a free loopback port that answers
# a POST to /AGENT with 503 while rcv/down-AGENT or rcv/reject-WAKE_ID
# exists, else 200, and logs "CODE WAKE_ID BODY" to rcv/log; hook
# posts stdin to it (its arguments are not used).
receiver_start() {
	mkdir -p rcv
	: > rcv/log
	cat > rcv/server.py <<-'EOF'
	import http.server, os, sys
	d = sys.argv[1]
	class H(http.server.BaseHTTPRequestHandler):
	    def do_POST(self):
	        body = self.rfile.read(int(self.headers["Content-Length"]))
	        down = os.path.exists(d + "/down-" + self.path[1:]) or \
	            os.path.exists(d + "/reject-" + self.headers["X-Heart-Wake"])
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

# tries WAKE_ID: how many requests the receiver had for that wake
tries() {
	awk -v w="$1" '$2 == w' rcv/log | wc -l
}

# got: the wake ids the receiver took (200), first time each, in order
got() {
	awk '$1 == 200 && !seen[$2]++ { print $2 }' rcv/log
}

@test "receiver down, then back: every answer arrives, in wake order, once after dedupe; tries back off; another agent goes on" {
	receiver_start
	touch rcv/down-alpha
	for i in 1 2 3 4 5; do
		result_at alpha "a$i" "2026-11-21T12:0$i:00Z"
		result_at bravo "b$i" "2026-11-21T12:0$i:00Z"
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
	[ "$(wake_ids alpha | tr '\n' ' ')" = "a1 a2 a3 a4 a5 " ]
	# backoff: not before a minute, then two, then four; a flush
	# exits 75 while answers wait
	run -75 at "2026-11-21 12:06:59" heart-ghost --flush --text --exec ./hook
	[ "$(tries_a)" -eq 1 ]
	run -75 at "2026-11-21 12:07:00" heart-ghost --flush --text --exec ./hook
	[ "$(tries_a)" -eq 2 ]
	run -75 at "2026-11-21 12:08:59" heart-ghost --flush --text --exec ./hook
	[ "$(tries_a)" -eq 2 ]
	run -75 at "2026-11-21 12:09:00" heart-ghost --flush --text --exec ./hook
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
	[ "$(wake_ids scout | wc -l)" -eq 1 ]
	[ ! -e "$o" ]
	run -0 heart-ghost --flush --text
	assert_output ""
	# the next run that reads a line of the agent, an idle one too
	heart-wake --soul scout.yaml --force --chamber schedule > /dev/null
	run --separate-stderr bash -c 'heart-wake --soul scout.yaml --force --chamber schedule | heart-ghost --text'
	assert_success
	assert_output "ALERT: gate B12."
	[ "$(wake_ids scout | wc -l)" -eq 2 ]
	[ ! -e "$o" ]
	# given its line again, nothing: it was committed and delivered
	run -0 heart-ghost --outbox
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
	run -0 heart-ghost --text line
	assert_output "ALERT: one."
	[ ! -e "$f" ]
	run -0 heart-ghost --text line
	assert_output ""
}

@test "a dead letter: failing for --retry-for, it is kept, listed, reported once; later answers go on; given again it is tried" {
	result_at alpha d1 2026-11-21T12:00:00Z > d1
	result_at alpha d2 2026-11-21T12:30:00Z > d2
	# hook: never takes d1, the others while there is no file down
	printf '#!/bin/sh\n[ "$HEART_WAKE_ID" != d1 ] && [ ! -e down ] && cat\n' > hook
	chmod +x hook
	touch down
	run at "2026-11-21 12:00:00" heart-ghost --retry-for 1h --text --exec ./hook < d1
	assert_failure 69
	run -69 at "2026-11-21 12:30:00" heart-ghost --retry-for 1h --text --exec ./hook < d2
	rm down
	run --separate-stderr at "2026-11-21 13:00:00" heart-ghost --retry-for 1h --flush --text --exec ./hook
	assert_failure 69
	[ "${stderr_lines[0]}" = "heart-ghost: alpha: delivery of wake d1 failed: ./hook: exit status 1; given up, a dead letter now: $HEART_STATE_DIR/agents/alpha/dead/d1.json" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	assert_output "answer d2"
	run --separate-stderr at "2026-11-21 14:00:00" heart-ghost --retry-for 1h --flush --text --exec ./hook
	assert_success
	[ -z "$stderr" ]
	assert_output ""
	run -0 heart-ghost --outbox
	[ "$(echo "$output" | jq -r '"\(.wake_id) \(.state) \(.tries) \(.since) \(.dead) \(.error)"')" = "d1 dead 3 2026-11-21T12:00:00Z 2026-11-21T13:00:00Z ./hook: exit status 1" ]
	# given again by hand, it is tried once more, now
	run at "2026-11-21 15:00:00" heart-ghost --text < d1
	assert_success
	assert_output "answer d1"
	run -0 heart-ghost --outbox
	assert_output ""
}

@test "--outbox: JSON lines in a pipe, a table on a terminal" {
	result_at alpha t1 2026-11-21T12:00:00Z > in
	result_at alpha t2 2026-11-21T12:01:00Z >> in
	at "2026-11-21 12:01:00" heart-ghost --exec false < in 2> /dev/null || true
	run heart-ghost --outbox alpha
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$(echo "$output" | jq -r .wake_id | tr '\n' ' ')" = "t1 t2 " ]
	echo "$output" | jq -se 'map(select(.wake_id == "t1"))[0] | .tries == 1 and .next == "2026-11-21T12:02:00Z" and .error == "false: exit status 1"'
	# bravo's one answer went out: nothing waits
	result_at bravo b1 2026-11-21T12:00:00Z | heart-ghost --exec true
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
	result_at alpha ../t3 2026-11-21T12:02:00Z > bad
	run --separate-stderr heart-ghost bad
	assert_failure 65
	[ "$stderr" = 'heart-ghost: bad:1: wake_id "../t3" is not 1 to 64 of A-Z a-z 0-9 _ . -' ]
	run heart-ghost --outbox --flush
	assert_failure 64
}

@test "--outbox of a misspelt agent says no such agent, exit 64, and still lists the others: an empty listing means nothing waits" {
	result_at alpha t1 2026-11-21T12:00:00Z > in
	at "2026-11-21 12:01:00" heart-ghost --exec false < in 2> /dev/null || true
	run --separate-stderr heart-ghost --outbox alpah
	assert_failure 64
	[ "$stderr" = "heart-ghost: alpah: no such agent (heart has no state for it: check the name, or give its soul with --soul)" ]
	assert_output ""
	run --separate-stderr heart-ghost --outbox alpah alpha
	assert_failure 64
	[ "$(echo "$output" | jq -r .wake_id)" = t1 ]
	[ ! -e "$HEART_STATE_DIR/agents/alpah" ]
}

@test "kill -9 of heart-ghost --flush in a loop: nothing lost, nothing corrupt, each answer once after dedupe, in order" {
	receiver_start
	for i in $(seq -w 1 40); do
		result_at crash "k$i" "2026-11-21T12:00:00Z" "$(head -c 20000 /dev/zero | tr '\0' x) $i"
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
	diff <(seq -w 1 40 | sed 's/^/k/') <(wake_ids crash)
}

# snap AGENT: every file of the agent's outbox and dead letters, whole
snap() {
	(cd "$HEART_STATE_DIR/agents/$1" && find outbox dead -type f \
	    2> /dev/null | sort | xargs -r tail -n +1)
}

@test "a heart-ghost given only skipped or dry-run lines touches no outbox: heart-wake --dry-run | heart-ghost leaves an answer that waits for a webhook" {
	llm_start
	receiver_start
	printf '%s\n' 'heart: { schedule: { prompt: "Anything?", interval: 1h } }' > scout.yaml
	llm_script '{"replies":[{"text":"ALERT: one."},{"text":"ALERT: two."}]}'
	touch rcv/down-scout
	# one answer taken by the webhook's pipeline, whose delivery failed
	run -69 at "2026-11-21 12:00:00" bash -c 'heart-wake --soul scout.yaml \
	    --force --chamber schedule | heart-ghost --text --exec ./hook'
	# one kept by heart-wake that no heart-ghost has taken yet
	at "2026-11-21 12:00:10" heart-wake --soul scout.yaml --force \
	    --chamber schedule > /dev/null
	[ "$(ls "$HEART_STATE_DIR/agents/scout/outbox" | wc -l)" -eq 2 ]
	snap scout > before
	# a rehearsal and a skip, both due for the outbox by its clock
	run -0 at "2026-11-21 12:05:00" bash -c 'heart-wake --soul scout.yaml \
	    --dry-run --force --chamber schedule | tee lines | heart-ghost'
	assert_output ""
	[ "$(jq -r .status lines)" = dry_run ]
	run -0 at "2026-11-21 12:05:00" bash -c 'heart-wake --soul scout.yaml |
	    tee lines | heart-ghost'
	assert_output ""
	[ "$(jq -r .status lines)" = not_due ]
	snap scout | diff before -
	[ "$(llm_count)" -eq 2 ]
	[ "$(tries_a)" -eq 0 ]
	[ "$(wc -l < rcv/log)" -eq 1 ]
	# the webhook's own flush delivers both, in order
	rm rcv/down-scout
	run -0 at "2026-11-21 12:05:00" heart-ghost --flush --text --exec ./hook
	[ "$(awk '$1 == 200 { $1 = $2 = ""; print }' rcv/log | tr -s ' ')" = " ALERT: one.
 ALERT: two." ]
}

@test "an answer remembers its delivery options: a heart-ghost with others leaves it and says so once, and no argument is kept" {
	receiver_start
	touch rcv/down-alpha
	result_at alpha a1 2026-11-21T12:01:00Z > in
	result_at alpha a2 2026-11-21T12:02:00Z >> in
	run -69 at "2026-11-21 12:02:00" heart-ghost --text --exec ./hook \
	    --token=s3cret-in-argv < in
	snap alpha > before
	# its fingerprint, a hash; never an argument
	[ "$(jq -r .via "$HEART_STATE_DIR"/agents/alpha/outbox/*.json | sort -u | grep -cE '^[0-9a-f]{16}$')" -eq 1 ]
	run grep -r s3cret "$HEART_STATE_DIR"
	assert_failure 1
	left='heart-ghost: alpha: wake a1 and 1 more wait for the heart-ghost that took them, with other delivery options (--exec, --text, --alert-only, --dedupe) than this run'"'"'s; left to it (heart-ghost --outbox)'
	# none, --alert-only, another --exec, another argument: all due by
	# the clock, none delivered, one line said, 75 as answers wait
	printf '#!/bin/sh\ncat >> elsewhere.got\n' > elsewhere
	chmod +x elsewhere
	for opts in "--text" "--text --alert-only --exec ./hook --token=s3cret-in-argv" \
	    "--text --exec ./elsewhere" "--text --exec ./hook --token=another" \
	    "--exec ./hook --token=s3cret-in-argv"; do
		# shellcheck disable=SC2086
		run -75 --separate-stderr at "2026-11-21 12:10:00" heart-ghost --flush $opts
		assert_output ""
		[ "$stderr" = "$left" ]
	done
	# a pipe with other options delivers its own answers, and says so
	# once for three lines
	for i in 3 4 5; do
		result_at alpha "a$i" "2026-11-21T12:0$i:00Z"
	done > more
	run -0 --separate-stderr at "2026-11-21 12:10:00" heart-ghost --text < more
	assert_output $'answer a3\nanswer a4\nanswer a5'
	[ "$stderr" = "$left" ]
	snap alpha | diff before -
	[ ! -e elsewhere.got ]
	[ "$(tries_a)" -eq 1 ]
	# the options that took them, once the receiver is back
	rm rcv/down-alpha
	run -0 at "2026-11-21 12:10:00" heart-ghost --flush --text --exec ./hook \
	    --token=s3cret-in-argv
	[ "$(got | tr '\n' ' ')" = "a1 a2 " ]
	[ ! -e "$HEART_STATE_DIR/agents/alpha/outbox" ]
}

@test "--retry-for of no time is refused as such, not as no duration; a misspelt one says how to write one" {
	run --separate-stderr heart-ghost --retry-for 0s --flush
	assert_failure 64
	[ "$stderr" = "heart-ghost: --retry-for: 0s is no time at all; it must be at least 1s" ]
	run --separate-stderr heart-ghost --retry-for "5 hours" --flush
	assert_failure 64
	[ "$stderr" = "heart-ghost: --retry-for: not a duration (write e.g. 10s, 30m, 2h, 1d or 1h30m)" ]
}

@test "an answer whose heart-ghost never comes back is a dead letter after --retry-for, and given again goes the giver's way" {
	result_at alpha g1 2026-11-21T12:00:00Z > in
	result_at alpha g2 2026-11-21T12:00:30Z >> in
	run -69 at "2026-11-21 12:00:30" heart-ghost --text --exec false < in
	# g1 was due from 12:01:30, g2 (never tried: behind g1) from its
	# wake; another heart-ghost's --retry-for after that, each is dead
	left='heart-ghost: alpha: wake g1 and 1 more wait for the heart-ghost that took them, with other delivery options (--exec, --text, --alert-only, --dedupe) than this run'"'"'s; left to it (heart-ghost --outbox)'
	run -75 --separate-stderr at "2026-11-21 13:00:29" heart-ghost --retry-for 1h --flush --text
	assert_output ""
	[ "$stderr" = "$left" ]
	run -69 --separate-stderr at "2026-11-21 13:00:30" heart-ghost --retry-for 1h --flush --text
	assert_output ""
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "heart-ghost: alpha: wake g2: taken by other delivery options than this run's, and due since 2026-11-21T12:00:30Z without a try; given up, a dead letter now: $HEART_STATE_DIR/agents/alpha/dead/g2.json" ]
	[[ ${stderr_lines[1]} == "heart-ghost: alpha: wake g1 waits for the heart-ghost that took it, "* ]]
	run -69 --separate-stderr at "2026-11-21 13:01:30" heart-ghost --retry-for 1h --flush --text
	assert_output ""
	[[ $stderr == "heart-ghost: alpha: wake g1: "*"due since 2026-11-21T12:01:30Z without a try; given up"* ]]
	[ ! -e "$HEART_STATE_DIR/agents/alpha/outbox" ]
	[ "$(jq -r .error "$HEART_STATE_DIR/agents/alpha/dead/g1.json")" = "false: exit status 1" ]
	run -0 bash -c "jq -r .line '$HEART_STATE_DIR/agents/alpha/dead/g1.json' | heart-ghost --text"
	assert_output "answer g1"
}

@test "one answer the receiver always rejects holds up the later ones for 10 minutes, then they go around it, in order, while it is retried until dead" {
	receiver_start
	touch rcv/reject-r1
	result_at alpha r1 2026-11-21T12:00:00Z > r1
	result_at alpha r2 2026-11-21T12:01:00Z 'ALERT: r2' > r2
	result_at alpha r3 2026-11-21T12:05:00Z > r3
	result_at alpha r4 2026-11-21T12:20:00Z 'ALERT: r4' > r4
	ghost() {	# ghost TIME ARG...: the pipe's heart-ghost at TIME
		local t=$1
		shift
		at "2026-11-21 $t" heart-ghost --retry-for 1h "$@" --text \
		    --exec ./hook
	}
	run -69 ghost 12:00:00 < r1
	run -69 --separate-stderr ghost 12:01:00 < r2
	[ "$(echo "$stderr" | grep '^heart-ghost: ' | tail -n 1)" = 'heart-ghost: alpha: wake r2 waits in the outbox behind an earlier answer (heart-ghost --outbox)' ]
	run -69 ghost 12:05:00 < r3
	# tried at 12:09:59, the fourth time: it still holds the others
	run -75 ghost 12:09:59 --flush
	[ -z "$(got)" ]
	[ "$(jq .tries "$HEART_STATE_DIR/agents/alpha/outbox/r1.json")" -eq 4 ]
	# failing for 10 minutes: the others go around it, in order
	run -75 ghost 12:10:00 --flush
	[ "$(got | tr '\n' ' ')" = "r2 r3 " ]
	# and a later answer goes at once, as it is tried again
	run -69 ghost 12:20:00 < r4
	[ "$(got | tr '\n' ' ')" = "r2 r3 r4 " ]
	[ "$(jq .tries "$HEART_STATE_DIR/agents/alpha/outbox/r1.json")" -eq 5 ]
	run -69 ghost 13:00:00 --flush
	[ -e "$HEART_STATE_DIR/agents/alpha/dead/r1.json" ]
	[ ! -e "$HEART_STATE_DIR/agents/alpha/outbox" ]
	[ "$(awk '$2 == "r1"' rcv/log | wc -l)" -eq 6 ]
	[ "$(awk '$1 == 200' rcv/log | wc -l)" -eq 3 ]
}

@test "--flush exits 75 while answers wait, 0 when none do; --now tries them at once, whatever their next try" {
	receiver_start
	touch rcv/down-alpha
	result_at alpha n1 2026-11-21T12:00:00Z > in
	run -69 at "2026-11-21 12:00:00" heart-ghost --text --exec ./hook < in
	# not due: nothing tried, and 75 says it waits
	run -75 --separate-stderr at "2026-11-21 12:00:30" heart-ghost --flush --text --exec ./hook
	assert_output ""
	[ -z "$stderr" ]
	[ "$(tries n1)" -eq 1 ]
	# tried now, and failed: it still waits
	run -75 at "2026-11-21 12:00:30" heart-ghost --flush --now --text --exec ./hook
	[ "$(tries n1)" -eq 2 ]
	[ "$(jq -r .next "$HEART_STATE_DIR/agents/alpha/outbox/n1.json")" = 2026-11-21T12:02:30Z ]
	# the receiver fixed: it goes now, not at its next try
	rm rcv/down-alpha
	run -0 --separate-stderr at "2026-11-21 12:00:40" heart-ghost --flush --now --text --exec ./hook
	[ -z "$stderr" ]
	[ "$(got)" = n1 ]
	[ ! -e "$HEART_STATE_DIR/agents/alpha/outbox" ]
	run -0 at "2026-11-21 12:00:40" heart-ghost --flush --text --exec ./hook
	# --now is for --flush only
	run -64 heart-ghost --now
	run -64 heart-ghost --now --text --exec ./hook
	run -64 heart-ghost --outbox --now
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
