#!/usr/bin/env bats
# Soul files: YAML or Markdown with frontmatter, checked into a soul
# with every default filled in (read through t/soul-dump.c).

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
}

@test "the paper's snippets (sections 3.2, 3.3, 7.2, 7.3) load verbatim" {
	run soul-dump "$FIX"/paper/*.yaml
	assert_success
	assert_output --partial '"name":"s3.2-schedule"'
	echo "${lines[0]}" | jq -e '.schedule.interval == 1800 and .schedule.daily_cap == 48 and (.schedule.prompt | startswith("Check for new GitHub trending repos in AI/ML.\nIf nothing"))'
	echo "${lines[1]}" | jq -e '.idle.after == 7200 and .idle.daily_cap == 12 and (.idle.prompt | test("respond \\[IDLE\\]"))'
	echo "${lines[2]}" | jq -e '.schedule.interval == 1800 and .schedule.daily_cap == 48'
	echo "${lines[3]}" | jq -e '.schedule.interval == 300 and .schedule.daily_cap == 48 and .schedule.prompt == "Check for travel emergencies and alerts."'
	echo "${lines[4]}" | jq -e '.schedule.seed_tool_cap == 5'
	refute_output --partial warning
}

@test "the fixtures are the paper's own code blocks, byte for byte" {
	plain_only
	# paper-blocks.txt holds the paper's code blocks as it prints them:
	# each soul is one of them, and each of them is a soul
	python3 - "$FIX"/paper/paper-blocks.txt "$FIX"/paper/*.yaml <<-'EOF'
	import re, sys
	text = open(sys.argv[1]).read()
	blocks = re.findall(r"^```\n(.*?)^```\n", text, re.S | re.M)
	souls = [open(f).read() for f in sys.argv[2:]]
	sys.exit(0 if len(blocks) == 5 and sorted(blocks) == sorted(souls) else 1)
	EOF
}

@test "defaults fill every key a soul leaves out" {
	s=$(soul_file bare.yaml 'name: bare')
	run soul-dump "$s"
	assert_success
	echo "$output" | jq -e '.pulse == {"interval":10,"misses":3}
		and .schedule.interval == 1800 and .schedule.daily_cap == 48
		and .schedule.seed_tool_cap == 5 and .idle.after == 7200
		and .idle.daily_cap == 12 and .daily_cap == null
		and .breaker == {"threshold":3,"cooldown":900,"max_cooldown":7200}
		and .ghost == {"token":"[IDLE]","also":["HEARTBEAT_OK"],"mode":"token","ack_max_chars":300}
		and .history_keep == 8 and .timezone == "UTC"
		and .dormant_after == null'
}

@test "a soul file with nothing in it is refused with its name, exit 78; heart: {} is every default" {
	: > "$BATS_TEST_TMPDIR/zero.yaml"
	soul_file blank.yaml '' > /dev/null
	soul_file comments.yml '# only a comment' > /dev/null
	soul_file bare.md $'---\n---\n  \n' > /dev/null
	for f in zero.yaml blank.yaml comments.yml bare.md; do
		run soul-dump "$BATS_TEST_TMPDIR/$f"
		assert_failure 78
		assert_output "soul-dump: $BATS_TEST_TMPDIR/$f: empty: a soul holds its keys (heart: {} for every default); see heart-soul(5)"
	done
	run soul-dump "$(soul_file empty_one.yaml 'heart: {}')"
	assert_success
	echo "$output" | jq -e '.name == "empty_one" and .schedule.daily_cap == 48'
	# a Markdown soul may be its body alone: that is something in it
	run soul-dump "$(soul_file prompt.md 'You watch the weather.')"
	assert_success
	echo "$output" | jq -e '.system == "You watch the weather."'
}

@test "a soul path that cannot be read names its file: a link to nowhere says so" {
	ln -s "$BATS_TEST_TMPDIR/gone.yaml" "$BATS_TEST_TMPDIR/link.yaml"
	run soul-dump "$BATS_TEST_TMPDIR/link.yaml"
	assert_failure 78
	assert_output "soul-dump: $BATS_TEST_TMPDIR/link.yaml: a symbolic link to $BATS_TEST_TMPDIR/gone.yaml, which is not there"
}

@test "Markdown: the frontmatter holds the keys, the body is the system prompt" {
	run soul-dump "$SOULS/github_scout.md"
	assert_success
	echo "$output" | jq -e '.name == "github_scout" and (.system | startswith("You are github_scout.")) and .idle.after == 7200'
	s=$(soul_file plain.md 'Just a prompt, no frontmatter.')
	run -0 soul-dump "$s"
	echo "$output" | jq -e '.name == "plain" and .system == "Just a prompt, no frontmatter."'
}

@test "every example soul loads without a warning" {
	run soul-dump "$SOULS"/*
	assert_success
	refute_output --partial warning
	[ "${#lines[@]}" -eq "$(ls "$SOULS" | wc -l)" ]
}

@test "durations: 10s 30m 2h 1d 1h30m and bare seconds" {
	for d in 10s:10 30m:1800 2h:7200 1d:86400 1h30m:5400 2d12h:216000 90:90; do
		s=$(soul_file d.yaml "heart: { schedule: { interval: ${d%%:*} } }")
		run soul-dump "$s"
		assert_success
		echo "$output" | jq -e ".schedule.interval == ${d##*:}"
	done
}

@test "a bad duration names file:line:column and exits 78" {
	s=$(soul_file bad.yaml 'heart:
  schedule:
    interval: 30x')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:3:15: heart.schedule.interval: bad duration '30x' (write e.g. 10s, 30m, 2h, 1d or 1h30m)"
	for d in 0s 0 -5m 1h30 m 1.5h '"  "'; do
		s=$(soul_file bad.yaml "heart: { idle: { after: $d } }")
		run soul-dump "$s"
		assert_failure 78
		assert_output --partial "heart.idle.after"
	done
}

@test "a duration of 0, or of a fraction of a second, is named as such" {
	for d in 0 0s '"0m"' 0h0m; do
		s=$(soul_file zero.yaml "heart: { schedule: { interval: $d } }")
		run soul-dump "$s"
		assert_failure 78
		assert_output "soul-dump: $s:1:32: heart.schedule.interval: must be longer than 0s (daily_cap: 0 turns a chamber off)"
	done
	s=$(soul_file half.yaml 'heart: { breaker: { cooldown: 1.5 } }')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:1:31: heart.breaker.cooldown: must be whole seconds, or a duration such as 30m"
	s=$(soul_file list.yaml 'heart: { idle: { after: [2h] } }')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:1:25: heart.idle.after: must be a duration (write e.g. 10s, 30m, 2h, 1d or 1h30m)"
}

@test "a number too large says so, in a soul and on a command line" {
	s=$(soul_file big.yaml 'heart:
  daily_cap: 99999999999999999999')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:2:14: heart.daily_cap: too large (at most 9223372036854775807)"
	for d in 9999999999999999d 99999999999999 999999999999999999999s; do
		s=$(soul_file big.yaml "heart: { schedule: { interval: $d } }")
		run soul-dump "$s"
		assert_failure 78
		assert_output --partial "soul-dump: $s:1:32: heart.schedule.interval: "
		assert_output --partial "too large (at most 36600d)"
	done
	run heart-cap take scout --cap 99999999999
	assert_failure 64
	assert_output "heart-cap: --cap: too large (at most 1000000000)"
	run -64 heart-cap take scout --cap 12x
	assert_output "heart-cap: --cap: not a whole number"
	run heart-ghost --keep 99999999999999999999
	assert_failure 64
	assert_output "heart-ghost: --keep: too large (at most 1000000000)"
	run heart-ghost --dedupe 0
	assert_failure 64
	assert_output "heart-ghost: --dedupe: 0 is no time at all; it must be at least 1s"
	run heart-pulse --misses 5000 --soul "$s"
	assert_failure 64
	assert_output "heart-pulse: --misses: too large (at most 1000)"
	run heart-pulse --interval 99999999d --soul "$s"
	assert_failure 64
	assert_output "heart-pulse: --interval: too large (at most 36600d)"
}

@test "a tab in a soul's YAML says that YAML forbids tabs, and where it is" {
	s=$(soul_file tab.yaml "$(printf 'heart:\n  schedule:\n    interval: 5m\n\tdaily_cap: 3')")
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:4:1: a tab: YAML forbids tabs for indentation; indent with spaces"
	s=$(soul_file tab.md "$(printf -- '---\nheart:\n  \tidle: { after: 1h }\n---\nYou watch.')")
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:3:3: a tab: YAML forbids tabs for indentation; indent with spaces"
}

@test "a byte that is not UTF-8 is reported at file:line:column, in the YAML and in a Markdown body" {
	s=$(soul_file latin.yaml "$(printf 'name: a\nsystem: "caf\xe9"')")
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:2:13: byte 0xe9 is not UTF-8 (a soul is UTF-8 text: convert it, e.g. with iconv -t UTF-8)"
	s=$(soul_file latin.md "$(printf -- '---\nname: a\n---\nYou watch the caf\xc3\xa9 and the h\xf4tel.')")
	run soul-dump "$s"
	assert_failure 78
	assert_output --partial "soul-dump: $s:4:29: byte 0xf4 is not UTF-8"
}

@test "a value of the wrong type names file:line:column and exits 78" {
	s=$(soul_file bad.yaml 'heart:
  schedule:
    daily_cap: lots')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:3:16: heart.schedule.daily_cap: must be a whole number"
	s=$(soul_file bad.yaml 'heart: [1, 2]')
	run soul-dump "$s"
	assert_failure 78
	assert_output --partial ":1:8: heart: must be a mapping of keys"
	s=$(soul_file bad.yaml 'heart: { daily_cap: -1 }')
	run soul-dump "$s"
	assert_failure 78
	assert_output --partial "heart.daily_cap: must be at least 0"
	s=$(soul_file bad.yaml 'system: [a]')
	run soul-dump "$s"
	assert_failure 78
	assert_output --partial "system: must be a string"
}

@test "an unknown chamber is an error at its key" {
	s=$(soul_file bad.yaml 'heart:
  schedule: { interval: 5m }
  nap:
    after: 1h')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:3:3: heart: unknown chamber 'nap' (the chambers are pulse, schedule and idle)"
}

@test "a bad timezone is an error" {
	for z in Mars/Olympus ../../etc/passwd /etc/localtime 'Europe/Paris ' ''; do
		s=$(soul_file bad.yaml "heart: { timezone: \"$z\" }")
		run soul-dump "$s"
		assert_failure 78
		assert_output --partial "heart.timezone: unknown timezone"
	done
}

@test "bad agent ids are refused, from the name key or from the file name" {
	for id in ../x a/b .hidden 'a+b' 'a#b' "$(printf 'x%.0s' $(seq 65))"; do
		s=$(soul_file bad.yaml "name: \"$id\"")
		run soul-dump "$s"
		assert_failure 78
		assert_output --partial ":1:7: name: bad agent id"
	done
	s=$(soul_file 'we ird.yaml' 'heart: {}')
	run soul-dump "$s"
	assert_failure 78
	assert_output --partial "bad agent id 'we ird' from the file name"
}

@test "unknown keys warn on stderr with their position and the soul still loads" {
	s=$(soul_file warn.yaml 'name: w
model: gpt
heart:
  schedule:
    intervall: 5m')
	run soul-dump "$s"
	assert_success
	assert_line "soul-dump: warning: $s:2:1: unknown key 'model' in the soul (ignored)"
	assert_line "soul-dump: warning: $s:5:5: unknown key 'intervall' in heart.schedule (ignored)"
}

@test "a key of the other chamber warns with its position and has no effect" {
	s=$(soul_file other.yaml 'heart:
  schedule: { interval: 30m, after: 1h }
  idle:
    seed_tool_cap: 2')
	run soul-dump "$s"
	assert_success
	assert_line "soul-dump: warning: $s:2:30: key 'after' in heart.schedule has no effect: it is heart.idle's (ignored)"
	assert_line "soul-dump: warning: $s:4:5: key 'seed_tool_cap' in heart.idle has no effect: it is heart.schedule's (ignored)"
	[ "$(soul-dump "$s" 2>/dev/null | jq -c '[.idle.after, .schedule.seed_tool_cap]')" = '[7200,5]' ]
}

@test "YAML syntax errors and unclosed frontmatter give a position" {
	s=$(soul_file bad.yaml 'heart:
  schedule: [1')
	run soul-dump "$s"
	assert_failure 78
	assert_output --regexp "^soul-dump: $s:[0-9]+:[0-9]+: "
	s=$(soul_file bad.md '---
name: x
no closing line')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:1:1: frontmatter opened with --- is never closed"
	s=$(soul_file bad.md '---
heart:
  schedule:
    interval: nope
---
body')
	run soul-dump "$s"
	assert_failure 78
	assert_output "soul-dump: $s:4:15: heart.schedule.interval: bad duration 'nope' (write e.g. 10s, 30m, 2h, 1d or 1h30m)"
}

@test "a Markdown soul whose closing --- is its last line, ended by a CR alone, loads" {
	printf -- '---\nname: cr\nheart: { schedule: { interval: 5m } }\n---\r' \
		> "$BATS_TEST_TMPDIR/cr.md"
	run soul-dump "$BATS_TEST_TMPDIR/cr.md"
	assert_success
	echo "$output" | jq -e '.name == "cr" and .system == null and .schedule.interval == 300'
}

@test "a Markdown soul whose system prompt is not UTF-8 is refused at its line" {
	printf -- '---\nname: bad\n---\nYou follow \340\227pen work.\n' \
		> "$BATS_TEST_TMPDIR/bad.md"
	run soul-dump "$BATS_TEST_TMPDIR/bad.md"
	assert_failure 78
	assert_output "soul-dump: $BATS_TEST_TMPDIR/bad.md:4:12: byte 0xe0 is not UTF-8 (a soul is UTF-8 text: convert it, e.g. with iconv -t UTF-8)"
	printf 'All prompt, no frontmatter \377\n' > "$BATS_TEST_TMPDIR/plain.md"
	run soul-dump "$BATS_TEST_TMPDIR/plain.md"
	assert_failure 78
	assert_output --partial "plain.md:1:28: byte 0xff is not UTF-8"
}

@test "duplicate keys, alias bombs and missing files are refused" {
	s=$(soul_file bad.yaml 'heart: { daily_cap: 1, daily_cap: 2 }')
	run soul-dump "$s"
	assert_failure 78
	assert_output --partial "duplicate key 'daily_cap'"
	s=$(soul_file bomb.yaml 'a: &a [x,x,x,x,x,x,x,x,x,x]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]')
	run soul-dump "$s"
	assert_failure 78
	assert_output --partial "too large"
	run soul-dump "$BATS_TEST_TMPDIR/nope.yaml"
	assert_failure 78
	assert_output --partial "nope.yaml: No such file or directory"
}

@test "active_hours, ghost, breaker, history and llm keys are checked" {
	s=$(soul_file ok.yaml 'heart:
  schedule: { active_hours: "22:00-06:00" }
  ghost: { token: "[NOP]", also: OK, mode: tool, ack_max_chars: 10 }
  breaker: { threshold: 5, cooldown: 1m, max_cooldown: 1h }
  history: { keep: 2 }
llm: { provider: anthropic, model: m, timeout: 30s, max_tokens: 50 }')
	run soul-dump "$s"
	assert_success
	echo "$output" | jq -e '.schedule.active_hours == "22:00-06:00" and .ghost.also == ["OK"] and .ghost.mode == "tool" and .breaker.cooldown == 60 and .history_keep == 2 and .llm.provider == "anthropic" and .llm.timeout == 30'
	for bad in 'heart: { schedule: { active_hours: "25:00-26:00" } }' \
		'heart: { ghost: { mode: maybe } }' \
		'heart: { breaker: { threshold: 0 } }' \
		'llm: { provider: skynet }' \
		'llm: { command: "sh -c x" }' \
		'tools: [ { name: "bad name", command: [x] } ]' \
		'tools: [ { name: ok } ]'; do
		s=$(soul_file bad.yaml "$bad")
		run soul-dump "$s"
		assert_failure 78
		assert_output --regexp ":[0-9]+:[0-9]+: "
	done
}
