#!/usr/bin/env bats
# contrib/deliver: each delivery recipe as heart-ghost --exec runs it,
# against a receiver on a loopback port that keeps every request whole
# (t/deliver-receiver.py), checked as each service documents it; the
# mail recipe through msmtp into a real SMTP server (aiosmtpd); no
# secret on any command line; and the outbox with a receiver that is
# down, then slow, then back.

load helpers

bats_require_minimum_version 1.5.0

setup() {
	heart_setup
	cd "$BATS_TEST_TMPDIR"
	D=$T/../contrib/deliver
	unset "${!HEART_DELIVER_@}"
}

teardown() {
	rm -f rcv/hold
	rcv_stop
	[ -z "${SMTP_PID:-}" ] || kill "$SMTP_PID" 2> /dev/null || true
}

# answer_result AGENT WAKE_ID RESPONSE [AT]: one ok wake result, one line
answer_result() {
	jq -cn --arg a "$1" --arg id "$2" --arg r "$3" \
	    --arg at "${4:-2026-11-21T12:00:00Z}" '{v: 1, agent: $a,
	    chamber: "schedule", wake_id: $id, at: $at, status: "ok",
	    response: $r, messages: [{role: "user", content: "prompt"},
	    {role: "assistant", content: $r}]}'
}

# req N: the receiver's Nth request, one JSON object
req() {
	sed -n "$1p" rcv/log
}

# secret_file NAME VALUE: VALUE in the file NAME, mode 0600
secret_file() {
	(umask 077 && printf '%s\n' "$2" > "$1")
}

# utf16 < TEXT: its length in UTF-16 code units
utf16() {
	python3 -c 'import sys
print(len(sys.stdin.buffer.read().decode().encode("utf-16-le")) // 2)'
}

@test "the recipes are POSIX sh that shellcheck passes" {
	plain_only
	cd "$D"
	run shellcheck -s sh -x lib.sh webhook ntfy slack telegram discord mail
	assert_success
	for r in webhook ntfy slack telegram discord mail; do
		[ -x "$D/$r" ]
		[ "$(head -1 "$D/$r")" = '#!/bin/sh' ]
	done
}

@test "a recipe refuses a result line for an answer: heart-ghost without --text" {
	rcv_start
	export HEART_DELIVER_SLACK_URL=$RCV/s
	run --separate-stderr heart-ghost --exec "$D/slack" \
	    < <(answer_result alpha x1 'hello')
	assert_failure 69
	[[ $stderr == *"heart-deliver-slack: standard input is the wake's result line, not its answer: give heart-ghost --text"* ]]
	[ ! -s rcv/log ]
	run --separate-stderr heart-ghost --text --exec "$D/slack" \
	    < <(answer_result alpha x1 'hello')
	assert_success
	req 1 | jq -e '.body | fromjson | .text == "[alpha] hello"'
}

@test "webhook: the answer and its wake as JSON, signed with HMAC-SHA256 of the body, the wake id as Idempotency-Key" {
	rcv_start
	printf 'k3y-of-the-hook' > rcv/key
	secret_file key 'k3y-of-the-hook'
	export HEART_DELIVER_WEBHOOK_URL=$RCV/hooks/heart
	export HEART_DELIVER_WEBHOOK_SECRET_FILE=$PWD/key
	text=$'ALERT: disk at 99% on "web1"\n\tnext: \\ \xf0\x9f\x98\x80 \xc3\xa9 \x01 %s'
	{ answer_result alpha w1 "$text"; answer_result alpha w2 'All fine.'; } > in
	run --separate-stderr heart-ghost --text --exec "$D/webhook" < in
	assert_success
	[ "$(wc -l < rcv/log)" -eq 2 ]
	req 1 | jq -e '.method == "POST" and .path == "/hooks/heart" and
	    .headers["content-type"] == "application/json" and
	    .headers["idempotency-key"] == "w1" and
	    .headers["x-heart-wake-id"] == "w1"'
	req 1 | jq -e '.headers["x-heart-signature"] == "sha256=" + .sig'
	req 1 | jq -e --arg t "$text" '.body | fromjson == {v: 1,
	    agent: "alpha", chamber: "schedule", wake_id: "w1",
	    at: "2026-11-21T12:00:00Z", alert: true, text: $t}'
	req 2 | jq -e '(.body | fromjson | .alert == false and
	    .text == "All fine.") and
	    .headers["x-heart-signature"] == "sha256=" + .sig'
	# a receiver with another key finds the signature wrong
	printf 'another key' > rcv/key
	answer_result alpha w3 'x' | heart-ghost --text --exec "$D/webhook"
	req 3 | jq -e '.headers["x-heart-signature"] != "sha256=" + .sig'
	# a key longer than a SHA-256 block is hashed first (RFC 2104)
	k=$(printf 'long key %.0s' $(seq 20))
	printf '%s' "$k" > rcv/key
	HEART_DELIVER_WEBHOOK_SECRET=$k HEART_DELIVER_WEBHOOK_SECRET_FILE= \
	    heart-ghost --text --exec "$D/webhook" < <(answer_result alpha w4 'y')
	req 4 | jq -e '.headers["x-heart-signature"] == "sha256=" + .sig'
	# no secret: no signature
	unset HEART_DELIVER_WEBHOOK_SECRET_FILE
	answer_result alpha w5 'z' | heart-ghost --text --exec "$D/webhook"
	req 5 | jq -e '.headers | has("x-heart-signature") | not'
	# a time given by hand that is not a word is escaped all the same
	answer_result alpha w6 'z' '2026-11-21 "noon" \' |
	    heart-ghost --text --exec "$D/webhook"
	req 6 | jq -e '.body | fromjson | .at == "2026-11-21 \"noon\" \\"'
}

@test "ntfy: title, priority 4 and a tag for an alert, the token in Authorization, cut at 4096 bytes at a line break" {
	rcv_start
	secret_file tok tk_n7fy
	export HEART_DELIVER_NTFY_URL=$RCV/heart-alerts
	export HEART_DELIVER_NTFY_TOKEN_FILE=$PWD/tok
	line=$(printf '\xc3\xa9%.0s' $(seq 50))	# 100 bytes
	long=$(for i in $(seq 100); do echo "$line"; done)
	{ answer_result alpha n1 'ALERT: web1 down'; answer_result alpha n2 'A note.'
	  answer_result alpha n3 "$long"; } > in
	run --separate-stderr heart-ghost --text --exec "$D/ntfy" < in
	assert_success
	req 1 | jq -e '.method == "POST" and .path == "/heart-alerts" and
	    .headers.title == "heart: alpha" and .headers.priority == "4" and
	    .headers.tags == "warning" and
	    .headers.authorization == "Bearer tk_n7fy" and
	    .headers["x-heart-wake-id"] == "n1" and
	    .body == "ALERT: web1 down"'
	req 2 | jq -e '.headers.priority == "3" and
	    (.headers | has("tags") | not) and .body == "A note."'
	# 40 lines of 101 bytes and the mark fit in 4096 bytes
	[ "$(req 3 | jq -j .body | wc -c)" -le 4096 ]
	req 3 | jq -e --arg b "$(echo "$long" | head -40)" \
	    '.body == $b + "\n[cut]"'
	# a token file others may read is refused: the answer waits
	chmod 644 tok
	run --separate-stderr heart-ghost --text --exec "$D/ntfy" \
	    < <(answer_result alpha n4 'x')
	assert_failure 69
	[[ $stderr == *"heart-deliver-ntfy: HEART_DELIVER_NTFY_TOKEN_FILE: $PWD/tok: others may read it: chmod 600 it"* ]]
	[[ $stderr == *"heart-ghost: alpha: delivery of wake n4 failed: $D/ntfy: exit status 78; it waits in the outbox"* ]]
	[ "$(wc -l < rcv/log)" -eq 3 ]
	[ "$(heart-ghost --outbox | jq -r '"\(.wake_id) \(.state)"')" = "n4 waiting" ]
}

@test "slack: {text} to the incoming webhook, the mention on an alert only, split at 40000 characters at line breaks" {
	rcv_start
	secret_file url "$RCV/services/T000/B000/XXXXsecret"
	export HEART_DELIVER_SLACK_URL_FILE=$PWD/url
	export HEART_DELIVER_SLACK_MENTION='<!here>'
	printf -v row '%49s' ''	# 49 x's, made once, not a seq a line
	long=$(for ((i = 0; i < 900; i++)); do echo "${row// /x}"; done)
	{ answer_result alpha s1 'ALERT: gate change'; answer_result alpha s2 'A note.'
	  answer_result alpha s3 "$long"; } > in
	run --separate-stderr heart-ghost --text --exec "$D/slack" < in
	assert_success
	[ "$(wc -l < rcv/log)" -eq 4 ]
	req 1 | jq -e '.method == "POST" and
	    .path == "/services/T000/B000/XXXXsecret" and
	    .headers["content-type"] == "application/json" and
	    (.body | fromjson == {text: "<!here> [alpha] ALERT: gate change"})'
	req 2 | jq -e '.body | fromjson == {text: "[alpha] A note."}'
	[ "$(req 3 | jq -j '.body | fromjson | .text' | utf16)" -le 40000 ]
	[ "$(req 3 | jq -j '.body | fromjson | .text' | utf16)" -gt 39900 ]
	diff <(echo "[alpha] $long") \
	    <(req 3 | jq -r '.body | fromjson | .text'; req 4 | jq -r '.body | fromjson | .text')
}

@test "telegram: sendMessage to the bot's chat, silent unless an alert, split at 4096 UTF-16 units" {
	rcv_start
	export HEART_DELIVER_TELEGRAM_TOKEN=123456:AAsecret
	export HEART_DELIVER_TELEGRAM_CHAT=-100123
	export HEART_DELIVER_TELEGRAM_API=$RCV
	long=$(printf '\xf0\x9f\x98\x80%.0s' $(seq 3000))	# 2 units each
	{ answer_result alpha t1 'ALERT: strike at 6'; answer_result alpha t2 'A note.'
	  answer_result alpha t3 "$long"; } > in
	run --separate-stderr heart-ghost --text --exec "$D/telegram" < in
	assert_success
	[ "$(wc -l < rcv/log)" -eq 4 ]
	req 1 | jq -e '.method == "POST" and
	    .path == "/bot123456:AAsecret/sendMessage" and
	    .headers["content-type"] == "application/json" and
	    (.body | fromjson == {chat_id: "-100123",
	    text: "[alpha] ALERT: strike at 6", disable_notification: false})'
	req 2 | jq -e '.body | fromjson | .disable_notification == true and
	    .text == "[alpha] A note."'
	# "[alpha] " and 2044 of them are 4096 units; the rest follows
	[ "$(req 3 | jq -j '.body | fromjson | .text' | utf16)" -eq 4096 ]
	[ "$(req 4 | jq -j '.body | fromjson | .text' | utf16)" -eq 1912 ]
	[ "$(req 3 | jq -j '.body | fromjson | .text'; req 4 | jq -j '.body | fromjson | .text')" = "[alpha] $long" ]
}

@test "discord: content to the webhook with wait=true, no mentions, no notification unless an alert, split at 2000 characters" {
	rcv_start
	export HEART_DELIVER_DISCORD_URL=$RCV/api/webhooks/42/tok-secret
	long=$(printf 'a%.0s' $(seq 2500))
	{ answer_result alpha d1 'ALERT: @everyone web1 down'; answer_result alpha d2 'A note.'
	  answer_result alpha d3 "$long"; } > in
	run --separate-stderr heart-ghost --text --exec "$D/discord" < in
	assert_success
	[ "$(wc -l < rcv/log)" -eq 4 ]
	req 1 | jq -e '.method == "POST" and
	    .path == "/api/webhooks/42/tok-secret?wait=true" and
	    .headers["content-type"] == "application/json" and
	    (.body | fromjson == {content: "[alpha] ALERT: @everyone web1 down",
	    allowed_mentions: {parse: []}})'
	req 2 | jq -e '.body | fromjson == {content: "[alpha] A note.",
	    allowed_mentions: {parse: []}, flags: 4096}'
	[ "$(req 3 | jq -j '.body | fromjson | .content' | wc -c)" -eq 2000 ]
	[ "$(req 3 | jq -j '.body | fromjson | .content'; req 4 | jq -j '.body | fromjson | .content')" = "[alpha] $long" ]
	# a URL with a query (a thread) keeps it
	HEART_DELIVER_DISCORD_URL="$RCV/api/webhooks/42/tok?thread_id=7" \
	    heart-ghost --text --exec "$D/discord" < <(answer_result alpha d4 'x')
	req 5 | jq -e '.path == "/api/webhooks/42/tok?thread_id=7&wait=true"'
}

# smtp_start: a real SMTP server (aiosmtpd, from Debian's
# python3-aiosmtpd) on a free loopback port, keeping what it takes in
# the Maildir ./maildir; and msmtp, the sendmail the recipe runs, set
# to send there.
smtp_start() {
	local port
	port=$(free_port)
	/usr/bin/python3 -m aiosmtpd -n -l "127.0.0.1:$port" \
	    -c aiosmtpd.handlers.Mailbox "$PWD/maildir" 3>&- &
	SMTP_PID=$!
	wait_until 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2> /dev/null
	secret_file msmtprc "account default
host 127.0.0.1
port $port
auth off
tls off
from relay@example.org"
	export HEART_DELIVER_SENDMAIL="msmtp -C $PWD/msmtprc"
}

# mails: the messages the server took, oldest first, as JSON lines:
# the headers asked for, and the body decoded
mails() {
	python3 - "$PWD/maildir" <<-'EOF'
	import email, email.policy, json, os, sys
	d = os.path.join(sys.argv[1], "new")
	ms = [email.message_from_binary_file(open(os.path.join(d, f), "rb"),
	      policy=email.policy.default) for f in os.listdir(d)]
	ms.sort(key=lambda m: m["X-Heart-Wake-Id"])
	for m in ms:
	    h = {k.lower(): str(v) for k, v in m.items()}
	    h["body"] = m.get_content()
	    print(json.dumps(h))
	EOF
}

@test "mail: through sendmail (msmtp) to a real SMTP server, priority on an alert, the wake id in Message-ID" {
	smtp_start
	export HEART_DELIVER_MAIL_TO=ops@example.org
	export HEART_DELIVER_MAIL_FROM=heart@example.org
	wide=$(printf 'w%.0s' $(seq 1200))
	{ answer_result alpha m1 $'ALERT: web1 down\n\nd\xc3\xa9tails'
	  answer_result alpha m2 "A note, and a wide line: $wide"; } > in
	run --separate-stderr heart-ghost --text --exec "$D/mail" < in
	assert_success
	wait_until 20 test "$(ls maildir/new | wc -l)" -eq 2
	mails > got
	sed -n 1p got | jq -e '.subject == "heart ALERT: alpha" and
	    .from == "heart@example.org" and .to == "ops@example.org" and
	    ."message-id" == "<m1.heart@alpha>" and
	    ."x-heart-wake-id" == "m1" and ."x-heart-agent" == "alpha" and
	    ."x-priority" == "1" and .importance == "high" and
	    .priority == "urgent" and
	    ."auto-submitted" == "auto-generated" and
	    ."x-mailfrom" == "heart@example.org" and
	    ."x-rcptto" == "ops@example.org" and
	    (.date | length > 0) and
	    .body == "ALERT: web1 down\n\ndétails\n"'
	sed -n 2p got | jq -e --arg b "A note, and a wide line: $wide" '
	    .subject == "heart: alpha" and (has("x-priority") | not) and
	    ."content-transfer-encoding" == "base64" and .body == $b'
	# no recipient: it says so, and the answer waits
	unset HEART_DELIVER_MAIL_TO
	run --separate-stderr heart-ghost --text --exec "$D/mail" \
	    < <(answer_result alpha m3 'x')
	assert_failure 69
	[[ $stderr == *"heart-deliver-mail: HEART_DELIVER_MAIL_TO (or HEART_DELIVER_MAIL_TO_FILE) is not set"* ]]
}

# wrap DIR PROG...: in DIR, for each PROG, a program of that name that
# notes its arguments in DIR/argv.log and runs the real one.
wrap() {
	local dir=$1 p real
	shift
	mkdir -p "$dir"
	for p in "$@"; do
		real=$(command -v "$p")
		printf '#!/bin/sh\nprintf "%%s\\n" "%s $*" >> %s/argv.log\nexec %s "$@"\n' \
		    "$p" "$dir" "$real" > "$dir/$p"
		chmod +x "$dir/$p"
	done
}

# secret_seen: is a secret (its mark $S) in the command line of a
# process?  (read by bash itself: no process started per process looked
# at; says which, to standard error)
secret_seen() {
	local f a
	for f in /proc/[0-9]*/cmdline; do
		mapfile -d '' -t a 2> /dev/null < "$f" || continue
		if [[ ${a[*]} == *"$S"* ]]; then
			echo "seen in ${f%/cmdline}: ${a[*]}" >&2
			return 0
		fi
	done
	[[ $(ps -eo args) == *"$S"* ]]
}

@test "no secret is ever on a command line: not while curl waits for the service, not in any program a recipe runs" {
	rcv_start
	# the secrets' mark, this run's own: the same test run beside this
	# one (the plain and the sanitized pass of make check) has another;
	# the checks below keep it off command lines too (jq takes it from
	# the environment, grep from a file)
	export S=XYZZY$$x
	wrap "$PWD/bin" curl awk sed od tr cut sha256sum cat mktemp rm mv cp \
	    ls date base64
	export PATH=$PWD/bin:$PATH
	export HEART_DELIVER_WEBHOOK_URL=$RCV/hook/${S}1
	export HEART_DELIVER_WEBHOOK_SECRET=${S}2
	secret_file tok ${S}3
	export HEART_DELIVER_NTFY_URL=$RCV/topic HEART_DELIVER_NTFY_TOKEN_FILE=$PWD/tok
	export HEART_DELIVER_SLACK_URL=$RCV/services/${S}4
	export HEART_DELIVER_TELEGRAM_TOKEN=1:${S}5 HEART_DELIVER_TELEGRAM_CHAT=9
	export HEART_DELIVER_TELEGRAM_API=$RCV
	export HEART_DELIVER_DISCORD_URL=$RCV/api/webhooks/1/${S}6
	# curl waits as long as the test looks
	export HEART_DELIVER_TIMEOUT=600
	n=0
	for r in webhook ntfy slack telegram discord; do
		touch rcv/hold
		rm -f rcv/holding
		heart-ghost --text --exec "$D/$r" < <(answer_result alpha "p$r" 'x') &
		pid=$!
		wait_until 20 test -e rcv/holding
		# curl is there, waiting for the service, its config in a file
		[[ $(ps -eo args) == *"curl -fsS"*" -K "* ]]
		run secret_seen
		assert_failure
		rm rcv/hold
		wait "$pid"
		n=$((n + 1))
		[ "$(wc -l < rcv/log)" -eq "$n" ]
	done
	# each secret went where it belongs, and only there
	req 1 | jq -e '.path == "/hook/\($ENV.S)1" and
	    .headers["x-heart-signature"] != null'
	req 2 | jq -e '.headers.authorization == "Bearer \($ENV.S)3"'
	req 3 | jq -e '.path == "/services/\($ENV.S)4"'
	req 4 | jq -e '.path == "/bot1:\($ENV.S)5/sendMessage"'
	req 5 | jq -e '.path == "/api/webhooks/1/\($ENV.S)6?wait=true"'
	grep -q '^sha256sum' bin/argv.log
	[ "$(grep -c '^curl' bin/argv.log)" -eq 5 ]
	run grep -F -f <(printf '%s\n' "$S") bin/argv.log
	assert_failure
}

# hold_webhook: the webhook recipe set for the receiver, which holds
# each request (curl would wait as long as a test looks), its
# temporary directory in tmp/
hold_webhook() {
	rcv_start
	mkdir tmp
	export TMPDIR=$PWD/tmp HEART_DELIVER_TIMEOUT=600
	export HEART_DELIVER_WEBHOOK_URL=$RCV/hook HEART_DELIVER_WEBHOOK_SECRET=k
	touch rcv/hold
}

@test "a recipe whose service hangs past --exec-timeout is sent SIGTERM: its EXIT trap runs, no temporary file (the text, the URL, the signature) is left" {
	hold_webhook
	run --separate-stderr heart-ghost --text --exec-timeout "${PATIENCE}s" \
	    --exec "$D/webhook" < <(answer_result alpha t1 'x')
	assert_failure 69
	# one line: the shell says nothing of curl's end
	[ ${#stderr_lines[@]} -eq 1 ]
	[[ ${stderr_lines[0]} == *"/webhook: no result within ${PATIENCE}s: killed with its process group; it waits in the outbox"* ]]
	# curl was there, waiting for the service
	test -e rcv/holding
	[ -z "$(ls -A tmp)" ]
}

@test "heart-ghost killed with SIGKILL while a recipe waits for its service: the recipe is still sent SIGTERM, and its temporary directory is removed" {
	hold_webhook
	heart-ghost --text --exec "$D/webhook" < <(answer_result alpha k1 'x') 2> err &
	pid=$!
	wait_until 20 test -e rcv/holding
	[ -n "$(ls -A tmp)" ]
	kill -KILL "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 137 ]
	empty() { [ -z "$(ls -A tmp)" ]; }
	wait_until 10 empty
}

@test "the outbox and a webhook down, then slow, then back: every answer arrives, in wake order, once after the receiver's dedupe" {
	rcv_start
	export HEART_DELIVER_WEBHOOK_URL=$RCV/hook HEART_DELIVER_TIMEOUT=1
	for i in 1 2 3 4 5; do
		answer_result alpha "a$i" "answer $i" "2026-11-21T12:0$i:00Z"
	done > in
	# down: the first fails, the others wait behind it
	touch rcv/down
	run at "2026-11-21 12:06:00" heart-ghost --text --exec "$D/webhook" < in
	assert_failure 69
	[ "$(wc -l < rcv/log)" -eq 1 ]
	# slow: the receiver takes a1 but answers after the recipe gave up
	rm rcv/down
	echo 3 > rcv/slow
	run -75 at "2026-11-21 12:07:00" heart-ghost --flush --text --exec "$D/webhook"
	[ "$(jq -r .tries "$HEART_STATE_DIR/agents/alpha/outbox/a1.json")" -eq 2 ]
	# back: nothing before its time, then everything, in order
	rm rcv/slow
	run -75 at "2026-11-21 12:08:59" heart-ghost --flush --text --exec "$D/webhook"
	[ "$(wc -l < rcv/log)" -eq 2 ]
	run --separate-stderr at "2026-11-21 12:09:00" heart-ghost --flush \
	    --text --exec "$D/webhook"
	assert_success
	[ ! -e "$HEART_STATE_DIR/agents/alpha/outbox" ]
	# what the receiver took (200), in order; a1 twice before its dedupe
	jq -r 'select(.code == 200) | .headers["idempotency-key"]' rcv/log > took
	[ "$(tr '\n' ' ' < took)" = "a1 a1 a2 a3 a4 a5 " ]
	[ "$(awk '!seen[$0]++' took | tr '\n' ' ')" = "a1 a2 a3 a4 a5 " ]
	jq -e -s '[.[] | select(.code == 200) | .body | fromjson | .text] |
	    unique == ["answer 1", "answer 2", "answer 3", "answer 4",
	    "answer 5"]' rcv/log
}
