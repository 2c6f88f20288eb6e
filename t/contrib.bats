#!/usr/bin/env bats
# contrib/: the recipes, run where they can be (heart-round against the
# LLM test double, with either store) and checked where they cannot
# (systemd-analyze verify, the cron lines, the Kubernetes manifests,
# the fleet's redis.conf).

load helpers
bats_require_minimum_version 1.5.0

C=$T/../contrib

setup() {
	heart_setup
	# the rounds here run at chosen times: only what is due then
	# (heart-wake-round.bats shows heart-round's span)
	export HEART_SPAN=0s
}

teardown() {
	llm_stop
	heart_teardown
}

# souls3: three souls due every minute (YAML, .yml, Markdown) and, beside
# them, a checklist that is not a soul; the directory is printed
souls3() {
	local d=$BATS_TEST_TMPDIR/souls
	mkdir -p "$d"
	printf 'heart: { schedule: { interval: 1m } }\n' > "$d/alpha.yaml"
	printf 'heart: { schedule: { interval: 1m } }\n' > "$d/charlie.yml"
	printf -- '---\nheart: { schedule: { interval: 1m } }\n---\nYou are bravo.\n' \
		> "$d/bravo.md"
	printf -- '- [ ] feed the cat\n' > "$d/HEARTBEAT.md"
	echo "$d"
}

@test "heart-round runs a round for three souls: only real answers are printed and kept, with either store" {
	llm_start
	d=$(souls3)
	t=$(date -u -d "2026-11-22 09:00:30" +%s)
	for store in file redis; do
		if [ $store = redis ]; then
			state_clear
			llm_stop	# its replies count from its start
			llm_start
			redis_start
			export HEART_STORE=$REDIS_URL
			t=$((t + 86400))
		fi
		# one wake at a time, in soul order: alpha.yaml, bravo.md,
		# charlie.yml
		export HEART_JOBS=1
		llm_script '{"replies":[{"text":"Alpha: the 9:40 to Lyon is late."},{"text":"[IDLE]"},{"text":"Charlie: gate changed to B12."}]}'
		# heart sees the souls for the first time: nothing is due
		run at_epoch "$t" "$C/heart-round" "$d"
		assert_success
		assert_output ""
		run at_epoch $((t + 60)) "$C/heart-round" "$d"
		assert_success
		assert_output "$(printf 'Alpha: the 9:40 to Lyon is late.\nCharlie: gate changed to B12.')"
		run llm_count
		assert_output 3
		[ -s "$HEART_STATE_DIR/agents/alpha/history.jsonl" ]
		[ -s "$HEART_STATE_DIR/agents/charlie/history.jsonl" ]
		[ ! -e "$HEART_STATE_DIR/agents/bravo/history.jsonl" ]
		[ ! -e "$HEART_STATE_DIR/agents/HEARTBEAT" ]
		# the same minute again: nothing due, nothing said
		run at_epoch $((t + 61)) "$C/heart-round" "$d"
		assert_success
		assert_output ""
		run llm_count
		assert_output 3
		# the figures of the day the wakes ran in, whatever the real date
		run -0 at_epoch $((t + 61)) heart-cap status alpha bravo charlie --json
		[ "$(echo "$output" | jq -s '[.[].used] == [1, 1, 1] and .[1].ghosts == 1')" = true ]
	done
}

@test "heart-round hands its options to heart-ghost, and exits with a failed wake's status" {
	llm_start
	d=$(souls3)
	t=$(date -u -d "2026-11-22 09:00:30" +%s)
	at_epoch "$t" "$C/heart-round" "$d"
	export HEART_JOBS=1
	llm_script '{"replies":[{"status":500},{"text":"[IDLE]"},{"text":"Charlie: all clear."}]}'
	run --separate-stderr at_epoch $((t + 60)) "$C/heart-round" "$d" \
		--text --exec tee -a "$BATS_TEST_TMPDIR/mail"
	assert_failure 75
	assert_output "Charlie: all clear."
	[[ $stderr == *"heart-wake: alpha: "* ]]
	run cat "$BATS_TEST_TMPDIR/mail"
	assert_output "Charlie: all clear."
	run llm_count
	assert_output 3
}

@test "heart-round delivers what waits in any agent's outbox, with its own options, and exits 75 while an answer waits" {
	llm_start
	d=$(souls3)
	t=$(date -u -d "2026-11-22 09:00:30" +%s)
	at_epoch "$t" "$C/heart-round" "$d"
	# hook: prints the answer, or fails while there is a hook.down
	printf '#!/bin/sh\n[ ! -e "$0.down" ] && cat\n' > "$BATS_TEST_TMPDIR/hook"
	chmod +x "$BATS_TEST_TMPDIR/hook"
	touch "$BATS_TEST_TMPDIR/hook.down"
	# an answer of an agent with no soul here, whose delivery failed
	jq -cn '{v: 1, agent: "delta", chamber: "schedule", wake_id: "d1",
	    at: "2026-11-22T09:00:30Z", status: "ok", response: "Delta: late.",
	    messages: [{role: "assistant", content: "Delta: late."}]}' > "$BATS_TEST_TMPDIR/d1"
	run -69 at_epoch "$t" heart-ghost --text --exec "$BATS_TEST_TMPDIR/hook" \
	    < "$BATS_TEST_TMPDIR/d1"
	# nothing due, not even the answer (its next try is a minute on)
	run -75 at_epoch $((t + 1)) "$C/heart-round" "$d" --text --exec "$BATS_TEST_TMPDIR/hook"
	assert_output ""
	rm "$BATS_TEST_TMPDIR/hook.down"
	export HEART_JOBS=1
	llm_script '{"replies":[{"text":"[IDLE]"},{"text":"[IDLE]"},{"text":"[IDLE]"}]}'
	run -0 at_epoch $((t + 60)) "$C/heart-round" "$d" --text --exec "$BATS_TEST_TMPDIR/hook"
	assert_output "Delta: late."
	[ ! -e "$HEART_STATE_DIR/agents/delta/outbox" ]
}

@test "heart-round refuses bad usage with 64" {
	run "$C/heart-round"
	assert_failure 64
	assert_output --partial "usage: heart-round SOULDIR"
	run "$C/heart-round" "$BATS_TEST_TMPDIR/nowhere"
	assert_failure 64
	assert_output "heart-round: $BATS_TEST_TMPDIR/nowhere: not a directory"
	mkdir "$BATS_TEST_TMPDIR/empty"
	run "$C/heart-round" "$BATS_TEST_TMPDIR/empty"
	assert_success
	assert_output ""
}

@test "heart-round is a POSIX sh script that shellcheck finds clean" {
	plain_only
	run head -n 1 "$C/heart-round"
	assert_output "#!/bin/sh"
	[ -x "$C/heart-round" ]
	run shellcheck -s sh "$C/heart-round"
	assert_success
	assert_output ""
	# and shellcheck does find what it should
	printf '#!/bin/sh\nrm $1\n' > "$BATS_TEST_TMPDIR/bad"
	run shellcheck -s sh "$BATS_TEST_TMPDIR/bad"
	assert_failure
}

# units DIR: the units of contrib/systemd in DIR, relocated as make
# install does, to the programs under test and contrib/heart-round
units() {
	local u
	mkdir -p "$1"
	for u in "$C"/systemd/*.service "$C"/systemd/*.timer; do
		sed -e "s|/usr/local/bin|$HEART_BIN|g" \
		    -e "s|/usr/local/share/heartbeat/contrib|$C|g" "$u" \
		    > "$1/${u##*/}"
	done
}

# unit_sh UNIT: the script of the per-soul unit's ExecStart=/bin/sh -c
# '...' heart-wake@%i %i, as systemd hands it to sh: continued lines
# joined (a backslash at a line's end is a space), "\\" a backslash,
# "$$" a "$"; /etc/heart/souls is $BATS_TEST_TMPDIR/souls.  Run it as
# sh -c "$cmd" heart-wake@NAME NAME.
unit_sh() {
	local x
	x=$(sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$1" |
	    sed -n "s/^ExecStart=\/bin\/sh -c '\(.*\)' heart-wake@%i %i\$/\1/p")
	[ -n "$x" ] || return 1
	x=${x//\\\\/\\}
	x=${x//\$\$/\$}
	printf '%s\n' "${x//\/etc\/heart\/souls/$BATS_TEST_TMPDIR/souls}"
}

# bare FILE...: the lines that run a program of heart's by its bare
# name, for PATH to find (not after a / or a ${...} that is its
# directory): the Exec lines of a unit (continued lines joined), every
# line of a script or a crontab but its comments
bare() {
	local f
	for f; do
		sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$f" |
		case $f in
		*.service | *.timer) grep '^Exec' ;;
		*) grep -v '^[[:space:]]*#' ;;
		esac
	done | grep -E '(^|[^/}[:alnum:]_-])heart-(wake|ghost|cap|breaker|pulse)([^-@[:alnum:]_]|$)'
}

@test "the systemd units pass systemd-analyze verify, and a broken one does not" {
	plain_only
	command -v systemd-analyze >/dev/null ||
		skip "no systemd-analyze on this machine"
	u=$BATS_TEST_TMPDIR/units
	mkdir -p "$u" "$u/man/man1" "$u/man/man7"
	printf '[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n' \
		> "$u/probe.service"
	systemd-analyze verify "$u/probe.service" >/dev/null 2>&1 ||
		skip "systemd-analyze verify does not work on this machine"
	# Documentation= names our pages: let man(1) find them
	cp "$T"/../man/*.1 "$u/man/man1/"
	cp "$T"/../man/*.7 "$u/man/man7/"
	units "$u"
	MANPATH=$u/man run systemd-analyze verify "$u/heart-pulse.service" \
		"$u/heart-wake.service" "$u/heart-wake.timer" \
		"$u/heart-wake@travel_rescue.service" "$u/heart-wake@travel_rescue.timer"
	assert_success
	assert_output ""
	sed -i 's/^OnCalendar=.*/OnCalendar=every minute/' "$u/heart-wake.timer"
	MANPATH=$u/man run systemd-analyze verify "$u/heart-wake.timer"
	assert_failure
	sed -i 's|^ExecStart=/bin/sh|ExecStart=/bin/nosuchsh|' "$u/heart-wake@.service"
	MANPATH=$u/man run systemd-analyze verify "$u/heart-wake@travel_rescue.service"
	assert_failure
}

@test "every unit runs as the system user heart in /var/lib/heart: no DynamicUser beside a static User" {
	plain_only
	for u in heart-pulse.service heart-wake.service heart-wake@.service; do
		f=$C/systemd/$u
		grep -qx 'User=heart' "$f"
		grep -qx 'Group=heart' "$f"
		grep -qx 'StateDirectory=heart' "$f"
		grep -qx 'StateDirectoryMode=0700' "$f"
		grep -qx 'Environment=HEART_STATE_DIR=/var/lib/heart' "$f"
		grep -qx 'EnvironmentFile=-/etc/heart/heart.env' "$f"
		run grep -c '^DynamicUser=' "$f"
		assert_output 0
	done
}

@test "systemd-analyze security scores every service 1.5 or better, where the old pulse unit scored 8.5" {
	plain_only
	command -v systemd-analyze >/dev/null ||
		skip "no systemd-analyze on this machine"
	u=$BATS_TEST_TMPDIR/units
	units "$u"
	cd "$u"
	systemd-analyze security --offline=yes heart-wake.service >/dev/null 2>&1 ||
		skip "systemd-analyze security --offline does not work here"
	for s in heart-pulse.service heart-wake.service heart-wake@scout.service; do
		run systemd-analyze security --offline=yes --no-pager "$s"
		score=$(echo "$output" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
		echo "$s: $score"
		[ -n "$score" ]
		awk -v s="$score" 'BEGIN { exit !(s <= 1.5) }'
	done
	# the pulse unit as it was: a user, no sandbox
	printf '[Service]\nType=notify\nExecStart=%s --souls /etc/heart/souls\nUser=heart\nStateDirectory=heart\nNoNewPrivileges=yes\nProtectSystem=strict\nProtectHome=yes\nPrivateTmp=yes\n' \
		"$HEART_BIN/heart-pulse" > old-pulse.service
	run systemd-analyze security --offline=yes --no-pager old-pulse.service
	[[ $output == *"Overall exposure level for old-pulse.service: 8.5 EXPOSED"* ]]
}

@test "the pulse and the round wait for a soul, and a configuration error stops the pulse's restarts" {
	for u in heart-pulse.service heart-wake.service heart-wake.timer; do
		grep -qx 'ConditionDirectoryNotEmpty=/etc/heart/souls' "$C/systemd/$u"
	done
	grep -qx 'Restart=always' "$C/systemd/heart-pulse.service"
	grep -qx 'RestartPreventExitStatus=64 78' "$C/systemd/heart-pulse.service"
	# the statuses are the toolkit's usage and configuration errors
	run heart-pulse --nosuchoption
	assert_failure 64
	mkdir "$BATS_TEST_TMPDIR/souls"
	printf 'heart: [' > "$BATS_TEST_TMPDIR/souls/bad.yaml"
	run heart-pulse --souls "$BATS_TEST_TMPDIR/souls" --broker mqtt://127.0.0.1:1
	assert_failure 78
}

@test "the wake units keep the pulse's broker password from the wakes, their tools and deliveries" {
	plain_only
	for u in heart-wake.service heart-wake@.service; do
		grep -qx 'UnsetEnvironment=HEART_MQTT_PASSWORD' "$C/systemd/$u"
	done
	run grep -c '^UnsetEnvironment=' "$C/systemd/heart-pulse.service"
	assert_output 0
}

@test "the wake units end what a round left behind in their cgroup, a process that left its group too (heart(7))" {
	plain_only
	for u in heart-wake.service heart-wake@.service; do
		grep -qx 'KillMode=control-group' "$C/systemd/$u"
		grep -qx 'TimeoutStopSec=10s' "$C/systemd/$u"
	done
}

@test "the wake unit's command runs a wake into heart-ghost" {
	llm_start
	llm_script '{"replies":[{"text":"Scout: news."}]}'
	mkdir -p "$BATS_TEST_TMPDIR/elsewhere"
	printf 'heart: { schedule: { interval: 1m } }\n' > "$BATS_TEST_TMPDIR/elsewhere/scout.yaml"
	units "$BATS_TEST_TMPDIR/units"
	cmd=$(unit_sh "$BATS_TEST_TMPDIR/units/heart-wake@.service")
	t=$(date -u -d "2026-11-22 09:00:30" +%s)
	# a soul kept elsewhere, as a drop-in names it
	export SOUL=$BATS_TEST_TMPDIR/elsewhere/scout.yaml GHOST_OPTS=--text
	at_epoch "$t" sh -c "$cmd" heart-wake@scout scout
	run at_epoch $((t + 60)) sh -c "$cmd" heart-wake@scout scout
	assert_success
	assert_output "Scout: news."
}

@test "the per-soul unit wakes the soul NAME.yaml, NAME.yml or NAME.md, whichever is there" {
	llm_start
	units "$BATS_TEST_TMPDIR/units"
	cmd=$(unit_sh "$BATS_TEST_TMPDIR/units/heart-wake@.service")
	# POSIX sh that shellcheck passes ($GHOST_OPTS split into words on
	# purpose)
	run -0 shellcheck -s sh -e SC2086 - <<< "$cmd"
	d=$(souls3)
	# a Markdown soul written on Windows: its lines end in CR LF
	printf -- '---\r\nheart: { schedule: { interval: 1m } }\r\n---\r\nYou are echo.\r\n' \
		> "$d/echo.md"
	unset SOUL
	export GHOST_OPTS=--text
	t=$(date -u -d "2026-11-22 09:00:30" +%s)
	for n in alpha bravo charlie echo; do
		run -0 at_epoch "$t" sh -c "$cmd" "heart-wake@$n" "$n"
		assert_output ""
	done
	llm_script '{"replies":[{"text":"Alpha: news."},{"text":"Bravo: news."},{"text":"Charlie: news."},{"text":"Echo: news."}]}'
	for n in alpha bravo charlie echo; do
		run -0 at_epoch $((t + 60)) sh -c "$cmd" "heart-wake@$n" "$n"
		assert_output "${n^}: news."
		[ -s "$HEART_STATE_DIR/agents/$n/history.jsonl" ]
	done
}

@test "the per-soul unit refuses with 78 a name with no soul or two, and a checklist is no soul" {
	llm_start
	units "$BATS_TEST_TMPDIR/units"
	cmd=$(unit_sh "$BATS_TEST_TMPDIR/units/heart-wake@.service")
	d=$(souls3)
	printf -- '---\nheart: { schedule: { interval: 1m } }\n---\nYou are alpha too.\n' \
		> "$d/alpha.md"
	printf 'heart: { schedule: { interval: 1m } }\n' > "$d/charlie.yaml"
	unset SOUL
	export GHOST_OPTS=--text
	run -78 --separate-stderr sh -c "$cmd" heart-wake@alpha alpha
	assert_output ""
	[ "$stderr" = "heart-wake@alpha: $d/alpha.yaml, $d/alpha.md: two souls of one name: keep one" ]
	run -78 --separate-stderr sh -c "$cmd" heart-wake@charlie charlie
	[ "$stderr" = "heart-wake@charlie: $d/charlie.yaml, $d/charlie.yml: two souls of one name: keep one" ]
	# HEARTBEAT.md opens with no "---": a checklist, not a soul
	run -78 --separate-stderr sh -c "$cmd" heart-wake@HEARTBEAT HEARTBEAT
	[ "$stderr" = "heart-wake@HEARTBEAT: $d/HEARTBEAT.yaml, .yml or .md: no such soul" ]
	run -78 --separate-stderr sh -c "$cmd" heart-wake@nobody nobody
	[ "$stderr" = "heart-wake@nobody: $d/nobody.yaml, .yml or .md: no such soul" ]
	# a link to nowhere is taken, as in a round: heart-wake says what it is
	ln -s nowhere "$d/foxtrot.yml"
	run -78 --separate-stderr sh -c "$cmd" heart-wake@foxtrot foxtrot
	[[ $stderr == "heart-wake: $d/foxtrot.yml: "*nowhere* ]]
	run -0 llm_count
	assert_output 0
	[ ! -e "$HEART_STATE_DIR/agents" ]
}

@test "make install PREFIX=elsewhere: heart-round, the units and the crontab name the programs in BINDIR, and run with none of heart's on PATH" {
	plain_only "make install installs the tree's programs: the plain pass runs it"
	[ -f "$T/../build/mizpah/mqtt.min.js" ] ||
		skip "build/mizpah missing: run make mizpah"
	# as a package is built: DESTDIR, and PREFIX=/opt/x
	r=$BATS_TEST_TMPDIR/root
	run -0 make -C "$T/.." --no-print-directory install DESTDIR="$r" PREFIX=/opt/x
	o=$r/opt/x
	u=$o/lib/systemd/system
	c=$o/share/heartbeat/contrib/cron/heart.cron
	grep -qx "bin='/opt/x/bin'" "$o/share/heartbeat/contrib/heart-round"
	grep -qx 'ExecStart=/opt/x/bin/heart-pulse --souls /etc/heart/souls --username heart-pulse-%H' \
		"$u/heart-pulse.service"
	grep -qx 'ExecStart=/opt/x/share/heartbeat/contrib/heart-round /etc/heart/souls $GHOST_OPTS' \
		"$u/heart-wake.service"
	grep -q '/opt/x/bin/heart-wake --soul "$$soul" |' "$u/heart-wake@.service"
	grep -q '/opt/x/bin/heart-ghost $$GHOST_OPTS' "$u/heart-wake@.service"
	grep -q ' /opt/x/share/heartbeat/contrib/heart-round /etc/heart/souls$' "$c"
	grep -q ' /opt/x/bin/heart-cap status --prom .* && /opt/x/bin/heart-breaker status --prom ' "$c"
	run -1 bare "$o/share/heartbeat/contrib/heart-round" "$c" "$u"/*
	# and bare finds a program named for PATH to find, as the per-soul
	# unit named it
	cat > "$BATS_TEST_TMPDIR/old.service" <<'EOF'
ExecStart=/bin/sh -c 'heart-wake --soul "$$SOUL" | heart-ghost $$GHOST_OPTS'
EOF
	run -0 bare "$u/heart-pulse.service" "$BATS_TEST_TMPDIR/old.service"
	[ "${#lines[@]}" -eq 1 ]

	# installed for real under another PREFIX: a round, and a wake of the
	# per-soul unit, with a decoy of each program first on PATH
	p=$BATS_TEST_TMPDIR/x
	run -0 make -C "$T/.." --no-print-directory install PREFIX="$p"
	decoy=$BATS_TEST_TMPDIR/decoy
	mkdir "$decoy"
	for prog in heart-wake heart-ghost heart-cap heart-breaker heart-pulse; do
		printf '#!/bin/sh\necho "%s: the one on PATH" >&2\nexit 99\n' "$prog" \
			> "$decoy/$prog"
		chmod +x "$decoy/$prog"
	done
	llm_start
	d=$(souls3)
	export HEART_JOBS=1
	nopath=(env PATH="$decoy:/usr/bin:/bin")
	t=$(date -u -d "2026-11-22 09:00:30" +%s)
	run -0 at_epoch "$t" "${nopath[@]}" "$p/share/heartbeat/contrib/heart-round" "$d"
	assert_output ""
	llm_script '{"replies":[{"text":"Alpha: late."},{"text":"[IDLE]"},{"text":"Charlie: B12."},{"text":"Alpha: later."}]}'
	run -0 at_epoch $((t + 60)) "${nopath[@]}" "$p/share/heartbeat/contrib/heart-round" "$d"
	assert_output "$(printf 'Alpha: late.\nCharlie: B12.')"
	cmd=$(unit_sh "$p/lib/systemd/system/heart-wake@.service")
	unset SOUL
	run -0 at_epoch $((t + 120)) "${nopath[@]}" GHOST_OPTS=--text \
	    sh -c "$cmd" heart-wake@alpha alpha
	assert_output "Alpha: later."
	run -0 llm_count
	assert_output 4
	# systemd finds each program the units name
	command -v systemd-analyze >/dev/null ||
		skip "no systemd-analyze on this machine"
	cd "$p/lib/systemd/system"
	MANPATH=$p/share/man run -0 systemd-analyze verify heart-pulse.service \
	    heart-wake.service heart-wake.timer heart-wake@scout.service \
	    heart-wake@scout.timer
	assert_output ""
}

@test "the round unit's command runs a round over the souls into heart-ghost, with GHOST_OPTS split into words" {
	llm_start
	u=$BATS_TEST_TMPDIR/units
	units "$u"
	d=$(souls3)
	# ExecStart= as systemd runs it: the souls' directory ours, and
	# $GHOST_OPTS (unquoted, a word of its own) split at white space
	read -ra argv <<< "$(sed -n 's/^ExecStart=//p' "$u/heart-wake.service")"
	[ "${argv[0]}" = "$C/heart-round" ]
	[ "${argv[1]}" = /etc/heart/souls ]
	[ "${argv[2]}" = '$GHOST_OPTS' ]
	[ "${#argv[@]}" -eq 3 ]
	run grep -x 'Environment=GHOST_OPTS=--text' "$u/heart-wake.service"
	assert_success
	t=$(date -u -d "2026-11-22 09:00:30" +%s)
	at_epoch "$t" "${argv[0]}" "$d" --text
	llm_script '{"replies":[{"text":"Alpha: news."},{"text":"[IDLE]"},{"text":"[IDLE]"}]}'
	run at_epoch $((t + 60)) "${argv[0]}" "$d" --text --exec tee "$BATS_TEST_TMPDIR/out"
	assert_success
	assert_output "Alpha: news."
	run cat "$BATS_TEST_TMPDIR/out"
	assert_output "Alpha: news."
}

@test "the crontab's lines are well formed: a round a minute and metrics, no secret in the file" {
	plain_only
	f=$C/cron/heart.cron
	run awk '!/^#/ && !/^$/ && !/^[A-Z_]+=/ {
	    for (i = 1; i <= 5; i++) if ($i !~ /^[0-9*\/,-]+$/) { print "bad time: " $0; exit 1 }
	    if ($6 != "heart") { print "bad user: " $0; exit 1 }
	    n++ } END { print n }' "$f"
	assert_success
	assert_output 2
	grep -q ' set -a && \. /etc/heart/heart.env && /usr/local/share/heartbeat/contrib/heart-round /etc/heart/souls$' "$f"
	grep -q ' /usr/local/bin/heart-cap status --prom [^ ]*\.prom && /usr/local/bin/heart-breaker status --prom [^ ]*\.prom$' "$f"
	grep -q '^MAILTO=' "$f"
	run grep -iE '^[^#]*(PASSWORD|API_KEY)=' "$f"
	assert_failure
}

@test "the crontab's round sees heart.env's settings: set -a exports its NAME=value lines" {
	plain_only
	printf '# a comment\nHEART_LLM_MODEL=from-the-env-file\n' > "$BATS_TEST_TMPDIR/heart.env"
	printf '#!/bin/sh\necho "model=${HEART_LLM_MODEL:-unset} souls=$1"\n' \
		> "$BATS_TEST_TMPDIR/heart-round"
	chmod +x "$BATS_TEST_TMPDIR/heart-round"
	line=$(awk '$6 == "heart" && /heart-round/ { $1 = $2 = $3 = $4 = $5 = $6 = ""; print }' \
		"$C/cron/heart.cron")
	line=${line//\/etc\/heart\/heart.env/$BATS_TEST_TMPDIR/heart.env}
	line=${line//\/usr\/local\/share\/heartbeat\/contrib/$BATS_TEST_TMPDIR}
	run env -u HEART_LLM_MODEL sh -c "$line"
	assert_success
	assert_output "model=from-the-env-file souls=/etc/heart/souls"
	# sourced without set -a, the file would set nothing for heart-round
	run env -u HEART_LLM_MODEL sh -c "${line/set -a && /}"
	assert_output "model=unset souls=/etc/heart/souls"
}

@test "heart.env ships every setting commented, as NAME=value lines, each a variable the man pages document" {
	plain_only
	f=$C/heart.env
	run grep -v -e '^#' -e '^$' "$f"
	assert_failure
	assert_output ""
	run grep -c '^#[A-Z_]*=' "$f"
	[ "$output" -ge 8 ]
	run grep -n 'export' "$f"
	[[ $output != *"export "[A-Z]* ]]
	for v in $(sed -n 's/^#\([A-Z_]*\)=.*/\1/p' "$f"); do
		grep -q "Ev $v\\b\\|Ev .*\\b$v\\b" "$T"/../man/*.[157] ||
			{ echo "$v: in no man page"; return 1; }
	done
}

@test "the Kubernetes example parses, runs heart-round under Forbid with a Redis store, and its soul and fleet file load" {
	python3 -c 'import yaml' 2>/dev/null || skip "python3 has no yaml module"
	run python3 - "$C/k8s/heart-cronjob.yaml" "$BATS_TEST_TMPDIR/soul.yaml" <<'EOF'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
assert [d["kind"] for d in docs] == ["ConfigMap", "ConfigMap", "PersistentVolumeClaim", "CronJob"]
cj = docs[3]["spec"]
assert cj["schedule"] == "* * * * *" and cj["concurrencyPolicy"] == "Forbid"
c = cj["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
assert c["command"][0].endswith("/contrib/heart-round")
env = {e["name"]: e.get("value") for e in c["env"]}
assert env["HEART_STORE"].startswith("redis://")
assert "HEART_REDIS_PASSWORD" not in env
assert env["HEART_FLEET"].startswith("/etc/heart/fleet/")
open(sys.argv[2], "w").write(docs[0]["data"]["travel_rescue.yaml"])
open(sys.argv[2] + ".fleet", "w").write(docs[1]["data"]["fleet.yaml"])
print("ok")
EOF
	assert_success
	assert_output ok
	run soul-dump "$BATS_TEST_TMPDIR/soul.yaml"
	assert_success
	echo "$output" | jq -e '.name == "travel_rescue" and .timezone == "Europe/Paris"'
	HEART_FLEET=$BATS_TEST_TMPDIR/soul.yaml.fleet run heart-cap status --json
	assert_success
	echo "$output" | jq -e 'select(.endpoint) | .endpoint == "openai-mini" and .requests_per_minute == 600'
}

@test "the fleet's redis.conf runs a server with persistence that two hosts share through a password" {
	export REDIS_TEST_PASSWORD=fleet-test-pw
	REDIS_INCLUDE=$C/fleet/redis.conf redis_start "requirepass fleet-test-pw"
	run rcli CONFIG GET appendonly
	assert_output "$(printf 'appendonly\nyes')"
	run rcli CONFIG GET appendfsync
	assert_output "$(printf 'appendfsync\nalways')"
	run rcli CONFIG GET maxmemory-policy
	assert_output "$(printf 'maxmemory-policy\nnoeviction')"
	export HEART_STORE=$REDIS_URL HEART_REDIS_PASSWORD=fleet-test-pw
	printf 'name: scout\nheart: {}\n' > "$BATS_TEST_TMPDIR/scout.yaml"
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/a heart-cap take --soul "$BATS_TEST_TMPDIR/scout.yaml" --cap 2
	# host b has never seen it: the Redis they share knows it
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/b heart-cap take scout --cap 2
	HEART_STATE_DIR=$BATS_TEST_TMPDIR/a run heart-cap take scout --cap 2
	assert_failure 1
}
