#!/usr/bin/env bats
# heart-ghost: ghost mode, the agent's history, and delivery.  Wake
# results are hand-written (t/gen-wakes.py, or result() below).

load helpers

bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	cd "$BATS_TEST_TMPDIR"
}

gen() {
	python3 "$T/gen-wakes.py" "$@"
}

hist() {
	echo "$HEART_STATE_DIR/agents/$1/history.jsonl"
}

# result STATUS AGENT WAKE_ID [RESPONSE]: one wake result, one line
result() {
	jq -cn --arg s "$1" --arg a "$2" --arg id "$3" \
	    --arg r "${4-answer $3}" '{v: 1, agent: $a, chamber: "schedule",
	    wake_id: $id, at: "2026-11-21T12:00:00Z", status: $s,
	    reason: null, response: $r, messages: [
	    {role: "user", content: ("prompt of " + $id)},
	    {role: "assistant", content: $r}], error: null}'
}

@test "100 results, 78 idle and 22 ok over 3 agents: only the 22 are kept and delivered, in order" {
	gen -n 100 --ok 22 > in
	[ "$(grep -c '"status":"idle"' in)" -eq 78 ]
	heart-ghost < in > out 2> err
	[ ! -s err ]
	[ "$(wc -l < out)" -eq 22 ]
	grep '"status":"ok"' in | diff - out
	for a in alpha bravo charlie; do
		diff <(jq -c "select(.agent == \"$a\" and .status == \"ok\")
		    | .messages[] | [.role, .content]" in) \
		    <(jq -c '[.role, .content]' "$(hist "$a")")
		diff <(jq -r "select(.agent == \"$a\" and .status == \"ok\")
		    | .wake_id" in) <(wake_ids "$a")
	done
	[ "$(cat "$HEART_STATE_DIR"/agents/*/history.jsonl | wc -l)" -eq 44 ]
	run grep -r ghost-prompt "$HEART_STATE_DIR" out err
	assert_failure 1
}

@test "idle and every skip status roll back: nothing written, nothing printed, no disk touched" {
	export HEART_STATE_DIR=$BATS_TEST_TMPDIR/never
	# 20 idle results, then the same with each other status (all that
	# gen's --status changes), in the shell: not a python a status
	idle=$(gen -n 20 --ok 0 --status idle)
	[ "$(grep -c '"status":"idle"' <<< "$idle")" -eq 20 ]
	for s in idle capped open not_due quiet not_idle busy empty gated tool_cap; do
		printf '%s\n' "${idle//\"status\":\"idle\"/\"status\":\"$s\"}" > in
		run --separate-stderr heart-ghost in
		assert_success
		assert_output ""
		[ -z "$stderr" ]
	done
	[ ! -e "$HEART_STATE_DIR" ]
	gen -n 1 --ok 100 > in
	heart-ghost in > /dev/null
	[ -s "$(hist alpha)" ]
}

@test "ok: the result line is delivered by default, the answer alone with --text" {
	result ok scout w1 'Gate changed to B12' > in
	run --separate-stderr heart-ghost in
	assert_success
	assert_output "$(cat in)"
	result ok scout w2 $'two\nlines' > in
	run -0 heart-ghost --text in
	assert_output $'two\nlines'
	[ "$(wc -l < "$(hist scout)")" -eq 4 ]
	run jq -r '"\(.role) \(.wake_id) \(.chamber) \(.at) \(.part)/\(.parts)"' "$(hist scout)"
	assert_output "user w1 schedule 2026-11-21T12:00:00Z 1/2
assistant w1 schedule 2026-11-21T12:00:00Z 2/2
user w2 schedule 2026-11-21T12:00:00Z 1/2
assistant w2 schedule 2026-11-21T12:00:00Z 2/2"
	[ "$(stat -c %a "$(hist scout)")" = 600 ]
	[ "$(stat -c %a "$HEART_STATE_DIR/agents/scout")" = 700 ]
}

@test "messages keep their own fields: tool calls, tool results, names" {
	gen -n 1 --ok 100 --tools --agents t > in
	heart-ghost in > /dev/null
	run jq -c '[.role, .tool_calls[0].id, .tool_call_id]' "$(hist t)"
	assert_output '["user",null,null]
["assistant","c-w-0",null]
["tool",null,"c-w-0"]
["assistant",null,null]'
	run -0 hist-dump t 3
	assert_output --partial '"role":"tool"'
	refute_output --partial '"part"'
	# a window that would start at a tool result starts after it
	run -0 hist-dump t 2
	echo "$output" | jq -e 'length == 1 and .[0].content == "answer w-0"'
}

@test "two heart-ghost processes committing 500 wakes each to one history: all 1,000 whole, none torn" {
	gen -n 500 --ok 100 --agents shared --id A --tools > a
	gen -n 500 --ok 100 --agents shared --id B > b
	heart-ghost a > /dev/null & p1=$!
	heart-ghost b > /dev/null & p2=$!
	wait "$p1"
	wait "$p2"
	f=$(hist shared)
	[ "$(wc -l < "$f")" -eq 3000 ]
	jq -e . "$f" > /dev/null
	jq -se '
	    [foreach .[] as $l ({}; if $l.part == 1 then {w: $l.wake_id,
	        n: 1, ok: true} else {w: .w, n: (.n + 1), ok: (.ok and
	        $l.wake_id == .w and $l.part == .n + 1)} end;
	        .ok)] | all' "$f"
	[ "$(wake_ids shared | sort -u | wc -l)" -eq 1000 ]
	diff <(seq 0 499 | sed 's/^/A-/') <(wake_ids shared | grep '^A-')
	diff <(seq 0 499 | sed 's/^/B-/') <(wake_ids shared | grep '^B-')
}

@test "kill -9 in the middle of commits, in a loop: the history always reads back, nothing earlier lost" {
	# 120 kB a wake: a write that big is now and then cut at a page by
	# kill -9, leaving a torn tail
	gen -n 40 --ok 100 --agents crash --tools --pad 30000 > all
	f=$(hist crash)
	killed=0
	for r in $(repeats 15 5); do
		sed "s/\"w-/\"r$r-/g" all > in
		size=$(stat -c %s "$f" 2> /dev/null || echo 0)
		heart-ghost in > /dev/null & pid=$!
		for i in $(seq 3000); do	# until it has begun committing
			[ "$(stat -c %s "$f" 2> /dev/null || echo 0)" -gt "$size" ] &&
			    break
			sleep 0.001
		done
		sleep 0.00$((RANDOM % 4 + 1))
		kill -9 "$pid" 2> /dev/null || true
		st=0
		wait "$pid" || st=$?
		[ "$st" -eq 137 ] && killed=$((killed + 1))
		hist-dump crash 4 > last
		jq -e 'length == 4 and ([.[].wake_id] | unique | length) == 1' last > /dev/null
		jq -r '.[0].wake_id' last >> kept
	done
	[ "$killed" -gt 0 ]
	result ok crash final > in
	heart-ghost in > /dev/null
	jq -e . "$f" > /dev/null
	hist-dump crash 1000000 | jq -e 'length % 4 == 2' > /dev/null
	# every round's wakes are there, from its first to the last one read
	# back right after the kill, whole and in order; then the final one
	while IFS=- read -r r n; do
		seq 0 "$n" | sed "s/^/$r-/"
	done < kept | awk '!seen[$0]++' > want
	echo final >> want
	diff want <(wake_ids crash)
}

@test "a reader during commits sees whole wakes only" {
	gen -n 300 --ok 100 --agents r --tools --pad 3000 > in
	heart-ghost in > /dev/null & pid=$!
	for i in $(seq 30); do
		hist-dump r 1000000 | jq -e 'length % 4 == 0 and
		    ([.[] | .wake_id] | . == (. | sort_by(ltrimstr("w-")
		    | tonumber)))' > /dev/null
	done
	wait "$pid"
	[ "$(wake_ids r | wc -l)" -eq 300 ]
}

@test "a history cut at any byte of its last wake reads back without it, and the next commit repairs it" {
	gen -n 3 --ok 100 --agents cut --tools > in
	heart-ghost in > /dev/null
	f=$(hist cut)
	cp "$f" full
	size=$(stat -c %s full)
	b=($(awk '{ o += length($0) + 1; print o }' full))
	# b[7] is where the last wake (lines 9 to 12) starts
	for off in $((b[7] + 1)) $((b[8] - 1)) ${b[8]} $((b[8] + 1)) \
	    ${b[9]} $((b[9] + 7)) ${b[10]} $((b[10] + 3)) $((size - 1)); do
		head -c "$off" full > "$f"
		run hist-dump cut 100
		assert_success
		echo "$output" | jq -e 'length == 8 and
		    ([.[].wake_id] | unique) == ["w-0", "w-1"]' > /dev/null
		result ok cut "after-$off" > in
		heart-ghost in > /dev/null
		jq -e . "$f" > /dev/null
		diff <(wake_ids cut) <(printf 'w-0\nw-1\nafter-%s\n' "$off")
	done
	cp full "$f"
	printf '{"role":"user","content":"torn by a cra\n' >> "$f"
	hist-dump cut 100 | jq -e 'length == 12'
	result ok cut fixed > in
	heart-ghost in > /dev/null
	diff <(wake_ids cut) <(printf 'w-0\nw-1\nw-2\nfixed\n')
}

@test "damage before the tail is named, never cut off, and refuses a commit next to it" {
	gen -n 3 --ok 100 --agents dmg > in
	heart-ghost in > /dev/null
	f=$(hist dmg)
	cp "$f" good
	sed -i '3s/.*/not json at all/' "$f"
	run hist-dump dmg 100
	assert_failure 74
	assert_output --partial "history.jsonl: damaged at line 3 (byte "
	run hist-dump dmg 2
	assert_success
	result ok dmg next > in
	heart-ghost in > /dev/null
	[ "$(sed -n 3p "$f")" = "not json at all" ]
	[ "$(wc -l < "$f")" -eq 8 ]
	cp good "$f"
	sed -i '5s/.*/not json at all/' "$f"
	cp "$f" before
	run --separate-stderr heart-ghost in
	assert_failure 74
	assert_output ""
	[[ $stderr == *"history.jsonl: damaged at line 5 (byte "*"heart-ghost --repair dmg sets it aside (heart-ghost(1))"* ]]
	cmp "$f" before
}

@test "--repair sets aside every run that is not a whole wake, each kept with where it was, under the history's lock; the whole wakes stay" {
	gen -n 4 --ok 100 --agents dmg > in
	heart-ghost in > /dev/null
	f=$(hist dmg)
	[ "$(wc -l < "$f")" -eq 8 ]
	cp "$f" good
	# line 2 not JSON (its wake, lines 1-2, cut short), line 6 a part
	# out of place (lines 5-6), and a torn tail
	sed -i -e '2s/.*/not json at all/' -e '6s/"part":2/"part":3/' "$f"
	printf '{"role":"user","content":"torn' >> "$f"
	cp "$f" damaged
	hold_lock "$HEART_STATE_DIR/agents/dmg/history.lock"
	run timeout 2 heart-ghost --repair dmg	# it waits for the lock
	assert_failure 124
	cmp "$f" damaged
	[ ! -e "$HEART_STATE_DIR/agents/dmg/history.damaged" ]
	release_lock
	run -0 heart-ghost --repair dmg
	assert_output "dmg: history.jsonl line 1 (2 lines from byte 1): a wake cut short: set aside in $HEART_STATE_DIR/agents/dmg/history.damaged
dmg: history.jsonl line 5 (2 lines from byte $(($(head -4 damaged | wc -c) + 1))): a wake cut short: set aside in $HEART_STATE_DIR/agents/dmg/history.damaged
dmg: history.jsonl line 9 (1 line from byte $(($(head -8 damaged | wc -c) + 1))): a last line not ended: set aside in $HEART_STATE_DIR/agents/dmg/history.damaged"
	diff <(wake_ids dmg) <(printf 'w-1\nw-3\n')
	diff "$f" <(sed -n -e 3,4p -e 7,8p good)
	# each run's bytes follow its line in history.damaged: every byte kept
	a=$HEART_STATE_DIR/agents/dmg/history.damaged
	[ "$(grep -c '^# heart-ghost --repair, ' "$a")" -eq 3 ]
	diff <(grep -v '^# heart-ghost --repair, ' "$a") <(sed -n -e 1,2p -e 5,6p damaged; tail -n 1 damaged; echo)
	[ "$(stat -c %a "$a")" = 600 ]
	# a commit goes on; a second repair finds nothing and keeps the first's
	result ok dmg next > in
	heart-ghost in > /dev/null
	diff <(wake_ids dmg) <(printf 'w-1\nw-3\nnext\n')
	cp "$a" kept
	run -0 heart-ghost --repair dmg
	assert_output "dmg: nothing damaged in its history"
	cmp "$a" kept
	run heart-ghost --repair dmg extra
	assert_failure 64
	run heart-ghost --repair dmg --user dmg hi
	assert_failure 64
	# a history that is a link is no history of heart's: left as it is
	rm "$f" && ln -s "$BATS_TEST_TMPDIR/good" "$f"
	run heart-ghost --repair dmg
	assert_failure 74
	assert_output "heart-ghost: $f: not a regular file; nothing is set aside"
	[ -L "$f" ] && cmp "$a" kept
}

@test "bad input: each bad line is named, the good ones around it are kept, exit 65" {
	{
		result ok alpha g1
		echo 'this is not json'
		echo '{"v":1,"agent":"alpha","wake_id":"x"}'
		echo '{"v":1,"agent":"alpha","status":"sleeping"}'
		result ok alpha v2 | sed 's/"v":1/"v":2/'
		result ok ../etc bad-id
		echo '{"agent":"alpha","status":"ok"}'
		echo '[1,2,3]'
		result ok alpha g2
		echo '{"v":1,"agent":"alpha","status":"idle"'
		result ok alpha noresp | jq -c 'del(.response)'
		result ok alpha g3
	} > in
	run --separate-stderr heart-ghost < in
	assert_failure 65
	[ "${#stderr_lines[@]}" -eq 9 ]
	[[ ${stderr_lines[0]} == 'heart-ghost: <stdin>:2: not JSON: '* ]]
	[ "${stderr_lines[1]}" = 'heart-ghost: <stdin>:3: no "status"' ]
	[ "${stderr_lines[2]}" = 'heart-ghost: <stdin>:4: unknown status "sleeping"' ]
	[[ ${stderr_lines[3]} == 'heart-ghost: <stdin>:5: unknown version "v":2'* ]]
	[ "${stderr_lines[4]}" = 'heart-ghost: <stdin>:6: invalid agent id "../etc"' ]
	[[ ${stderr_lines[5]} == 'heart-ghost: <stdin>:7: no "v"'* ]]
	[ "${stderr_lines[6]}" = 'heart-ghost: <stdin>:8: not a JSON object' ]
	[[ ${stderr_lines[7]} == 'heart-ghost: <stdin>:10: not JSON: '* ]]
	[[ ${stderr_lines[8]} == 'heart-ghost: <stdin>:11: '*response* ]]
	diff <(printf 'g1\ng2\ng3\n') <(echo "$output" | jq -r .wake_id)
	diff <(printf 'g1\ng2\ng3\n') <(wake_ids alpha)
	[ "$(ls "$HEART_STATE_DIR/agents")" = alpha ]
	run heart-ghost in
	assert_failure 65
	assert_output --partial "heart-ghost: in:2: not JSON"
}

@test "an endless line is named and skipped, the lines after it are kept" {
	{
		result ok alpha e1
		head -c 17000000 /dev/zero | tr '\0' x
		echo
		result ok alpha e2
		head -c 17000000 /dev/zero | tr '\0' y
	} > in
	run --separate-stderr heart-ghost in
	assert_failure 65
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = 'heart-ghost: in:2: line longer than 16777216 bytes' ]
	[ "${stderr_lines[1]}" = 'heart-ghost: in:4: line longer than 16777216 bytes' ]
	diff <(printf 'e1\ne2\n') <(wake_ids alpha)
	[ "${#lines[@]}" -eq 2 ]
}

@test "error results are not repeated (heart-wake said them); the exit status is the worst wake's" {
	{
		result ok alpha a1
		result error alpha e1 | jq -c '.error = "the model timed out" | .exit = 75'
		result error bravo e2 | jq -c '.error = "no model: set llm.model" | .exit = 78'
		result error x e3 | jq -c 'del(.agent, .wake_id)'
		result ok alpha a2 | jq -c '.exit = 74'
	} > in
	run --separate-stderr heart-ghost in
	assert_failure 78
	[ -z "$stderr" ]
	assert_output "$(head -1 in)
$(tail -1 in)"
	diff <(printf 'a1\na2\n') <(wake_ids alpha)
	[ ! -e "$HEART_STATE_DIR/agents/bravo" ]
	run --separate-stderr heart-ghost <(sed -n 2p in)
	assert_failure 75
	[ -z "$stderr" ]
	# an error without "exit" (a result of before) is a temporary failure
	run heart-ghost <(sed -n 4p in)
	assert_failure 75
	run heart-ghost <(sed -n 4p in | jq -c '.exit = 0')
	assert_failure 75
	run heart-ghost <(sed -n 5p in)
	assert_failure 74
	run heart-ghost <(result idle alpha i1 | jq -c '.exit = 69')
	assert_failure 69
	for x in '"75"' 256 -1 7.5; do
		run --separate-stderr heart-ghost <(sed -n 2p in | jq -c ".exit = $x")
		assert_failure 65
		[[ $stderr == *'"exit" is not an exit status: '* ]]
	done
	echo 'garbage' >> in
	run heart-ghost in
	assert_failure 65
}

@test "exit status: a history not written (74) outranks bad data (65), a failed delivery (69), an error (75)" {
	mkdir -p "$HEART_STATE_DIR/agents/broken/history.jsonl"
	result ok broken b1 > lost
	echo 'not a result' > bad
	result ok alpha a1 > good
	result error alpha e1 > err
	ghost() {	# ghost CMD FILE...: the files on stdin, --exec CMD
		local c=$1
		shift
		cat "$@" | heart-ghost --exec "$c"
	}
	run ghost false lost bad good err
	assert_failure 74
	assert_output --partial 'heart-ghost: broken: wake b1 not kept, not delivered: '
	run ghost false bad good err
	assert_failure 65
	run ghost false good err
	assert_failure 69
	run ghost true good err
	assert_failure 75
	run ghost true good
	assert_success
}

@test "heart-ghost links neither libcurl nor libmosquitto" {
	run ldd "$HEART_BIN/heart-ghost"
	assert_success
	assert_output --partial libjansson
	refute_output --partial libcurl
	refute_output --partial libmosquitto
}

@test "--exec: each deliverable goes to a program, no shell, text on stdin, wake in the environment" {
	cat > catch <<-'EOF'
	#!/bin/sh
	d=$1; shift
	n=$(ls "$d" | wc -l)
	{ printf 'args:'; printf ' [%s]' "$@"; echo
	  echo "$HEART_AGENT $HEART_CHAMBER $HEART_WAKE_ID $HEART_AT"
	  cat; } > "$d/$n"
	EOF
	chmod +x catch
	mkdir got
	{ result ok alpha x1 'ALERT: first'; result idle alpha x2
	  result ok bravo x3 'second'; } > in
	run --separate-stderr heart-ghost --text --exec ./catch got 'a b' '$(touch pwned);x' < in
	assert_success
	assert_output ""
	[ ! -e pwned ]
	[ "$(ls got | wc -l)" -eq 2 ]
	assert_equal "$(cat got/0)" 'args: [a b] [$(touch pwned);x]
alpha schedule x1 2026-11-21T12:00:00Z
ALERT: first'
	assert_equal "$(tail -1 got/1)" second
	rm got/*
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/other heart-ghost --exec ./catch got < in
	assert_equal "$(tail -1 got/0)" "$(head -1 in)"
}

@test "--exec: a failed delivery is reported, exit 69, and the commit stands" {
	{ result ok alpha f1; result ok alpha f2; } > in
	run --separate-stderr at "2026-11-21 12:00:00" heart-ghost --exec false < in
	assert_failure 69
	[ "${stderr_lines[0]}" = 'heart-ghost: alpha: delivery of wake f1 failed: false: exit status 1; it waits in the outbox, next try from 2026-11-21T12:01:00Z' ]
	[ "${stderr_lines[1]}" = 'heart-ghost: alpha: wake f2 waits in the outbox behind an earlier answer (heart-ghost --outbox)' ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	diff <(printf 'f1\nf2\n') <(wake_ids alpha)
	run --separate-stderr at "2026-11-21 12:02:00" heart-ghost --exec ./no/such/program < in
	assert_failure 69
	[[ ${stderr_lines[0]} == *'failed: ./no/such/program: cannot run: No such file or directory; it waits in the outbox, next try from '* ]]
	run heart-ghost --exec
	assert_failure 64
}

@test "--exec-timeout: a delivery that does not end is killed with everything it started; the answer waits in the outbox" {
	result ok alpha s1 > in
	# a hook that starts a child of its own and never ends
	printf '#!/bin/sh\nsleep 300 &\necho $! > %s/child\nwait\n' \
	    "$BATS_TEST_TMPDIR" > hang
	chmod +x hang
	run --separate-stderr at "2026-11-21 12:00:00" heart-ghost --exec-timeout 1s --exec ./hang < in
	assert_failure 69
	[ "${stderr_lines[0]}" = 'heart-ghost: alpha: delivery of wake s1 failed: ./hang: no result within 1s: killed with its process group; it waits in the outbox, next try from 2026-11-21T12:01:00Z' ]
	child=$(cat "$BATS_TEST_TMPDIR/child")
	gone() { ! kill -0 "$child" 2> /dev/null; }
	wait_until 5 gone
	run -0 heart-ghost --outbox alpha
	assert_output --partial s1
	for t in 0 0s 2d x; do
		run heart-ghost --exec-timeout "$t" --exec true
		assert_failure 64
		assert_output "heart-ghost: --exec-timeout: a duration from 1s to 1d, such as 30s or 5m"
	done
}

@test "ended by SIGTERM while a delivery runs: the delivery's group is killed first, and the answer waits in the outbox" {
	result ok alpha k1 > in
	printf '#!/bin/sh\necho $$ > %s/hook\nexec sleep 300\n' "$BATS_TEST_TMPDIR" > slow
	chmod +x slow
	(exec heart-ghost --exec ./slow < in 2> "$BATS_TEST_TMPDIR/err") &
	pid=$!
	started() { [ -s "$BATS_TEST_TMPDIR/hook" ]; }
	wait_until 10 started
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 143 ]
	hook=$(cat "$BATS_TEST_TMPDIR/hook")
	gone() { ! kill -0 "$hook" 2> /dev/null; }
	wait_until 5 gone
	run -0 heart-ghost --outbox alpha
	assert_output --partial k1
}

@test "--alert-only knows an alert as models write it: emphasis, an emoji, a tag, a dash, URGENT and CRITICAL; not a word in a sentence" {
	{ result ok alpha b1 '⚠️ ALERT: disk full'
	  result ok alpha b2 '🚨 **Urgent** - call the landlord'
	  result ok alpha b3 '<b>CRITICAL</b>: web1 down'
	  result ok alpha b4 $'Checked.\n12:00 [web1] critical — db down'
	  result ok alpha b5 '[IDLE] alert : the strike starts at 6'
	  result ok alpha b6 '[CRITICAL] backups failed'
	  result ok alpha n1 'Critical thinking matters.'
	  result ok alpha n2 'No alerts today.'
	  result ok alpha n3 'The ALERT: came late.'
	  result ok alpha n4 'Alert level is low'
	  result ok alpha n5 'Urgently needed: nothing'; } > in
	run --separate-stderr heart-ghost --alert-only --text < in
	assert_success
	assert_output $'⚠️ ALERT: disk full\n🚨 **Urgent** - call the landlord\n<b>CRITICAL</b>: web1 down\nChecked.\n12:00 [web1] critical — db down\n[IDLE] alert : the strike starts at 6\n[CRITICAL] backups failed'
}

@test "--alert-only knows an alert with no colon as models write it too: bold alone, a heading, an exclamation, an emoji after; HEART_ALERT says so" {
	{ result ok alpha c1 '**ALERT** web1 down'
	  result ok alpha c2 $'# Urgent\nThe landlord called.'
	  result ok alpha c3 'ALERT! the gate changed'
	  result ok alpha c4 '🚨 CRITICAL 🚨 db down'
	  result ok alpha c5 $'Checked.\n\n<b>Alert</b> strike at 06:00'
	  result ok alpha m1 '`CRITICAL` is the top log level; none today'
	  result ok alpha m2 'ALERT_LEVEL: low'
	  result ok alpha m3 'Alert level is low'; } > in
	run --separate-stderr heart-ghost --alert-only --text < in
	assert_success
	assert_output $'**ALERT** web1 down\n# Urgent\nThe landlord called.\nALERT! the gate changed\n🚨 CRITICAL 🚨 db down\nChecked.\n\n<b>Alert</b> strike at 06:00'
	# the priority the recipes give: HEART_ALERT
	printf '#!/bin/sh\necho "$HEART_WAKE_ID $HEART_ALERT" >> %s/alerts\n' "$BATS_TEST_TMPDIR" > hook
	chmod +x hook
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/other run -0 heart-ghost --text --exec ./hook < in
	diff <(printf 'c1 1\nc2 1\nc3 1\nc4 1\nc5 1\nm1 0\nm2 0\nm3 0\n') "$BATS_TEST_TMPDIR/alerts"
}

@test "--alert-only delivers only answers with ALERT: at the start of a line, and keeps every ok" {
	{ result ok alpha a1 'ALERT: flight LH400 cancelled'
	  result ok alpha a2 'All calm, nothing to report.'
	  result idle alpha a3 '[IDLE]'
	  result ok alpha a4 $'\n  ALERT: gate change'
	  result ok alpha a5 'Note: no ALERT: today'
	  result ok alpha a6 $'Checked the feeds.\n- **ALERT**: strike at 06:00'
	  result ok alpha a7 $'All calm.\n\n> alert: rain tomorrow'; } > in
	run --separate-stderr heart-ghost --alert-only --text < in
	assert_success
	assert_output $'ALERT: flight LH400 cancelled\n\n  ALERT: gate change\nChecked the feeds.\n- **ALERT**: strike at 06:00\nAll calm.\n\n> alert: rain tomorrow'
	diff <(printf 'a1\na2\na4\na5\na6\na7\n') <(wake_ids alpha)
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/other run heart-ghost --text < in
	[ "${#lines[@]}" -eq 8 ]
}

@test "--dedupe 24h: the same answer is not delivered twice within the window, but is kept" {
	result ok alpha d1 'ALERT: Flight LH400  cancelled' > r1
	result ok alpha d2 $'alert: flight lh400 cancelled\n' > r2
	result ok bravo d3 'ALERT: Flight LH400 cancelled' > r3
	result ok alpha d4 'ALERT: Flight LH401 cancelled' > r4
	result ok alpha d5 'alert: flight lh400 cancelled' > r5
	result ok alpha d6 'alert: flight lh400 cancelled' > r6
	result ok alpha d7 'ALERT: Flight LH400  cancelled' > r7
	run -0 at "2026-11-21 12:00:00" heart-ghost --dedupe 24h --text r1
	assert_output 'ALERT: Flight LH400  cancelled'
	run at "2026-11-22 11:59:00" heart-ghost --dedupe 24h --text r2
	assert_success
	assert_output ""
	run -0 at "2026-11-22 11:59:00" heart-ghost --dedupe 24h --text r3 r4
	assert_output $'ALERT: Flight LH400 cancelled\nALERT: Flight LH401 cancelled'
	run -0 at "2026-11-22 11:59:00" heart-ghost --text r5
	assert_output 'alert: flight lh400 cancelled'
	run -0 at "2026-11-22 12:00:01" heart-ghost --dedupe 24h --text r6
	assert_output 'alert: flight lh400 cancelled'
	run -0 at "2026-11-22 13:00:00" heart-ghost --dedupe 24h --text r7
	assert_output ""
	diff <(printf 'd1\nd2\nd4\nd5\nd6\nd7\n') <(wake_ids alpha)
	f=$HEART_STATE_DIR/agents/alpha/delivered.json
	jq -e '.delivered | length >= 1' "$f"
	run grep -ci flight "$f"
	assert_output 0
	[ "$(stat -c %a "$f")" = 600 ]
	run heart-ghost --dedupe soon r1
	assert_failure 64
}

@test "--keep N keeps the last N wakes, whole" {
	gen -n 10 --ok 100 --agents k --tools > in
	heart-ghost --keep 3 in > /dev/null
	[ "$(wc -l < "$(hist k)")" -eq 12 ]
	diff <(printf 'w-7\nw-8\nw-9\n') <(wake_ids k)
	[ "$(head -1 "$(hist k)" | jq .part)" -eq 1 ]
	heart-ghost --keep 3 --user k 'hello'
	diff <(printf 'w-8\nw-9\n') <(wake_ids k | head -2)
	[ "$(wc -l < "$(hist k)")" -eq 9 ]
	result ok k one > in
	heart-ghost --keep 1 in > /dev/null
	[ "$(wake_ids k)" = one ]
	result ok k two > in
	heart-ghost in > /dev/null
	[ "$(wake_ids k | wc -l)" -eq 2 ]
	run heart-ghost --keep 0 in
	assert_failure 64
}

@test "--user records the user's message and touches the input file the idle chamber watches" {
	meet scout
	run at "2026-11-21 09:30:00" heart-ghost --user scout 'where is my bag?'
	assert_success
	assert_output ""
	run jq -c '[.role, .content, .chamber, .at, (.wake_id | test("^user-[0-9]+-[0-9]+$"))]' "$(hist scout)"
	assert_output '["user","where is my bag?","user","2026-11-21T09:30:00Z",true]'
	in=$HEART_STATE_DIR/agents/scout/input
	[ "$(stat -c %Y "$in")" -eq "$(date -u -d '2026-11-21 09:30:00' +%s)" ]
	[ "$(stat -c %a "$in")" = 600 ]
	run -0 hist-dump -u scout
	assert_output "$(date -u -d '2026-11-21 09:30:00' +%s)"
	result ok scout later > in
	heart-ghost in > /dev/null
	printf 'from a pipe\n\n' | at "2026-11-21 10:00:00" heart-ghost --user scout -
	run jq -r 'select(.chamber == "user") | .content' "$(hist scout)"
	assert_output $'where is my bag?\nfrom a pipe'
	run -0 hist-dump -u scout
	assert_output "$(date -u -d '2026-11-21 10:00:00' +%s)"
	run -0 hist-dump -u nobody
	assert_output 0
}

@test "--user of an agent heart has never met says no such agent, exit 64, and records nothing; with its soul it records" {
	run heart-ghost --user scuot 'where is my bag?'
	assert_failure 64
	assert_output "heart-ghost: scuot: no such agent (heart has no state for it: check the name, or give its soul with --soul)"
	[ ! -e "$HEART_STATE_DIR/agents/scuot" ]
	printf 'heart: {}\n' > scout.yaml
	run heart-ghost --user scuot --soul scout.yaml 'where is my bag?'
	assert_failure 64
	assert_output "heart-ghost: the AGENT operand and the soul's name differ"
	run -0 heart-ghost --user scout --soul scout.yaml 'where is my bag?'
	run -0 heart-ghost --user scout 'and my coat?'
	run jq -r .content "$(hist scout)"
	assert_output $'where is my bag?\nand my coat?'
	run heart-ghost --soul scout.yaml
	assert_failure 64
	assert_output "heart-ghost: --soul goes with --user only"
}

@test "--user refuses a bad agent id (64), an empty message or one not UTF-8 (65), a missing one (64)" {
	meet scout
	run heart-ghost --user ../x hi
	assert_failure 64
	run heart-ghost --user scout '  '
	assert_failure 65
	assert_output "heart-ghost: an empty message is not recorded"
	run heart-ghost --user scout "$(printf 'caf\351')"
	assert_failure 65
	assert_output "heart-ghost: the message is not UTF-8 text"
	printf 'ok\355\240\200\n' > "$BATS_TEST_TMPDIR/surrogate"
	run heart-ghost --user scout - < "$BATS_TEST_TMPDIR/surrogate"
	assert_failure 65
	assert_output "heart-ghost: the message is not UTF-8 text"
	run heart-ghost --user scout < /dev/null
	assert_failure 64
	run heart-ghost --user scout - < /dev/null
	assert_failure 65
	[ ! -e "$(hist scout)" ]
}

@test "--user takes a message of up to 1 MiB and refuses a longer one (65), saying the limit" {
	meet scout
	head -c 20000000 /dev/zero | tr '\0' a > "$BATS_TEST_TMPDIR/big"
	run heart-ghost --user scout - < "$BATS_TEST_TMPDIR/big"
	assert_failure 65
	assert_output "heart-ghost: <stdin>: the message is longer than 1048576 bytes (1 MiB), the most a user message may be; see LIMITS in heart(7)"
	head -c 1048577 /dev/zero | tr '\0' b > "$BATS_TEST_TMPDIR/big"
	run heart-ghost --user scout - < "$BATS_TEST_TMPDIR/big"
	assert_failure 65
	[ ! -e "$(hist scout)" ]
	{ head -c 1048576 /dev/zero | tr '\0' d; printf '\n\n'; } | heart-ghost --user scout -
	run jq -r '.content | length' "$(hist scout)"
	assert_output 1048576
}

@test "the same result given twice (a retried pipeline, a replayed log) is committed once and delivered once" {
	gen -n 30 --ok 40 > in
	run --separate-stderr heart-ghost --text in
	assert_success
	[ "${#lines[@]}" -eq 12 ]
	run --separate-stderr heart-ghost --text in
	assert_success
	assert_output ""
	[ -z "$stderr" ]
	# the same line twice in one input, and again with --exec
	result ok alpha z1 'ALERT: z1' > z
	run -0 heart-ghost --text z z - < z
	assert_output 'ALERT: z1'
	run heart-ghost --text --exec cat < z
	assert_success
	assert_output ""
	for a in alpha bravo charlie; do
		[ -z "$(wake_ids "$a" | sort | uniq -d)" ]
	done
	[ "$(cat "$HEART_STATE_DIR"/agents/*/history.jsonl | jq -r 'select(.part == .parts) | .wake_id' | wc -l)" -eq 13 ]
	# no record is written for the wakes delivered at the first go
	[ ! -e "$HEART_STATE_DIR/agents/alpha/delivered.json" ]
}

@test "a long-running heart-ghost sees the wakes other processes commit meanwhile" {
	for i in 1 2 3 4; do result ok alpha "x$i" "ALERT: x$i" > "x$i"; done
	mkfifo feed
	heart-ghost --text feed > out 3>&- &
	p=$!
	exec 4> feed
	cat x1 >&4
	wait_until 20 grep -q x1 out
	heart-ghost x2 > /dev/null
	cat x3 >&4
	wait_until 20 grep -q x3 out
	heart-ghost x4 > /dev/null
	cat x4 x2 x1 >&4
	exec 4>&-
	wait "$p"
	diff <(printf 'ALERT: x1\nALERT: x3\n') out
	diff <(printf 'x1\nx2\nx3\nx4\n') <(wake_ids alpha)
}

@test "a failed delivery is remembered: the same result given again delivers it, once" {
	result ok alpha f1 'ALERT: f1' > in
	run --separate-stderr heart-ghost --text --exec false < in
	assert_failure 69
	o=$HEART_STATE_DIR/agents/alpha/outbox
	[ "$(ls "$o")" = f1.json ]
	run --separate-stderr heart-ghost --text --exec false < in
	assert_failure 69
	[ "$(jq .tries "$o/f1.json")" -eq 2 ]
	run --separate-stderr heart-ghost --text < in
	assert_success
	assert_output 'ALERT: f1'
	[ ! -e "$o" ]
	run --separate-stderr heart-ghost --text < in
	assert_success
	assert_output ""
	[ "$(wake_ids alpha)" = f1 ]
	# a wake that --alert-only does not want is not waiting any more
	result ok alpha f2 'all calm' > in
	run heart-ghost --text --exec false < in
	assert_failure 69
	run heart-ghost --text --alert-only < in
	assert_success
	assert_output ""
	[ ! -e "$o" ]
	run -0 heart-ghost --text < in
	assert_output ""
	# a damaged record: a new wake is delivered all the same, and
	# that says why (74)
	f=$HEART_STATE_DIR/agents/alpha/delivered.json
	echo '{"delivered": 3}' > "$f"
	result ok alpha f3 'ALERT: f3' > in
	run --separate-stderr heart-ghost --text --dedupe 1h < in
	assert_failure 74
	assert_output 'ALERT: f3'
	[[ $stderr == *'delivered.json: not a list of delivered texts; fix or remove it by hand'* ]]
	run --separate-stderr heart-ghost --text < in
	assert_success
	assert_output ""
	[ "$(jq -c . "$f")" = '{"delivered":3}' ]
	diff <(printf 'f1\nf2\nf3\n') <(wake_ids alpha)
}

# blocked PID...: one of PID waits for a flock(2) lock
blocked() {
	local p
	for p in "$@"; do
		awk -v p="$p" '$2 == "->" && $6 == p { f = 1 } END { exit !f }' \
		    /proc/locks && return 0
	done
	return 1
}

@test "two heart-ghost processes given the same line at once commit it once and deliver it once" {
	cat > hold <<-'EOF'
	#!/bin/sh
	# hold DIR: note the delivery, then wait for DIR/go (30 s at most)
	echo "$HEART_WAKE_ID" >> "$1/started"
	n=0
	while [ ! -e "$1/go" ] && [ $((n += 1)) -le 600 ]; do sleep 0.05; done
	cat >> "$1/delivered"
	EOF
	chmod +x hold
	mkdir d
	# a new wake, and then one whose first delivery failed
	result ok alpha c1 'ALERT: c1' > in1
	result ok alpha c2 'ALERT: c2' > in2
	run heart-ghost --exec false < in2
	assert_failure 69
	for n in 1 2; do
		rm -f d/*
		heart-ghost --exec ./hold d < in$n 3>&- &
		p1=$!
		heart-ghost --exec ./hold d < in$n 3>&- &
		p2=$!
		wait_until 20 test -s d/started
		# the other one waits for the agent's delivery lock
		wait_until 20 blocked "$p1" "$p2"
		touch d/go
		wait "$p1"
		wait "$p2"
		[ "$(cat d/started)" = "c$n" ]
		[ "$(wc -l < d/delivered)" -eq 1 ]
	done
	diff <(printf 'c2\nc1\n') <(wake_ids alpha)
}

@test "--exec: the delivery program gets only the variables heart-ghost(1) names, never a key or a password" {
	result ok alpha v1 $'Checked.\n- **alert**: v1' > in
	result ok alpha v2 'Note: no ALERT: today' >> in
	run --separate-stderr env -i PATH="$PATH" HOME=/home/h USER=h \
	    LANG=C.UTF-8 LC_TIME=C TZ=UTC XDG_RUNTIME_DIR=/run/user/1 \
	    HEART_STATE_DIR="$HEART_STATE_DIR" \
	    https_proxy=http://proxy:3128 \
	    OPENAI_API_KEY=sk-open ANTHROPIC_API_KEY=sk-ant \
	    GROQ_API_KEY=gsk-groq HEART_REDIS_PASSWORD=redis-pw \
	    HEART_MQTT_PASSWORD=mqtt-pw HEART_STORE=redis://:pw@h/0 \
	    SOME_TOKEN=tok HEART_AGENT=forged HEART_ALERT=forged \
	    HEART_DELIVER_NTFY_URL=http://ntfy/t HEART_DELIVERY=no \
	    heart-ghost --text --exec env < in
	assert_success
	common() {
		printf '%s\n' HEART_AGENT=alpha "HEART_ALERT=$1" \
		    HEART_AT=2026-11-21T12:00:00Z HEART_CHAMBER=schedule \
		    HEART_DELIVER_NTFY_URL=http://ntfy/t \
		    "HEART_STATE_DIR=$HEART_STATE_DIR" "HEART_WAKE_ID=$2" \
		    HOME=/home/h LANG=C.UTF-8 LC_TIME=C "PATH=$PATH" TZ=UTC \
		    USER=h XDG_RUNTIME_DIR=/run/user/1 \
		    https_proxy=http://proxy:3128
	}
	# an answer with an alert (the rule of --alert-only) has HEART_ALERT=1
	diff <({ common 1 v1; common 0 v2; } | sort) \
	    <(printf '%s\n' "${lines[@]}" | sort)
	[ "$(printf '%s\n' "${lines[@]}" | grep -c '^HEART_ALERT=1$')" -eq 1 ]
	refute_output --partial sk-
	refute_output --partial pw
}
