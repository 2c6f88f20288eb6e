#!/usr/bin/env bats
# heart-wake: tools from MCP servers (heart-soul(5), mcp_servers).  The
# real servers are the npm packages @modelcontextprotocol/server-everything
# and server-filesystem (package.json; make mizpah installs them with
# npm ci); t/mcp-bad.py is a tiny server of ours for what real servers
# rarely do.  The LLM test double asks for the calls.

load helpers
bats_require_minimum_version 1.5.0

NM=$T/../node_modules/.bin

setup_file() {
	[ -x "$NM/mcp-server-everything" ] && [ -x "$NM/mcp-server-filesystem" ] || {
		echo "the MCP servers from npm are missing: run make mizpah (npm ci)" >&2
		return 1
	}
}

setup() {
	model_setup
	D=$BATS_TEST_TMPDIR
	S=$D/scout.yaml
	mkdir -p "$D/files" "$D/bad" "$D/bad2"
	printf 'The launch is on Thursday.\n' > "$D/files/note.txt"
}

teardown() {
	model_teardown
}

# mcp_soul SERVERS [HEART_EXTRA] [TOP_EXTRA]: an agent with the MCP
# servers given as YAML lines (indented by four spaces), and the soul
# tool quote
mcp_soul() {
	cat > "$S" <<EOF
name: scout
system: You keep an eye on things.
heart:
  schedule: { daily_cap: 1000 }
  $2
llm: { timeout: 5s }
tools:
  - name: quote
    description: The last price of a stock.
    command: [$T/tools/quote]
mcp_servers:
$1
$3
EOF
}

everything() {	# everything TOOLS
	printf '  everything:\n    command: %s\n    tools: %s\n' \
	    "$NM/mcp-server-everything" "$1"
}

filesystem() {	# filesystem TOOLS
	printf '  fs:\n    command: %s\n    args: [%s]\n    tools: %s\n' \
	    "$NM/mcp-server-filesystem" "$D/files" "$1"
}

# bad NAME MODE DIR [EXTRA LINE]: a server of t/mcp-bad.py; its timeout
# is TO, else long enough for a loaded machine
bad() {
	printf '  %s:\n    command: %s\n    args: [%s, %s]\n    tools: [hello, fail]\n    timeout: %s\n%s\n' \
	    "$1" "$T/mcp-bad.py" "$2" "$3" "${TO:-$((5 * PATIENCE))s}" "${4:-}"
}

call() {	# call NAME ARGS: one tool call, as the double's script has it
	printf '{"name":"%s","arguments":%s}' "$1" "$2"
}

# no_group_left DIR: every process group a server of DIR/pids led is gone
no_group_left() {
	local pid pgid
	[ -s "$1/pids" ]
	while read -r pid pgid; do
		[ "$pid" = "$pgid" ] || return 1	# each leads its own group
		! group_alive "$pgid" || return 1
	done < "$1/pids"
}

@test "a wake calls a tool of each real server (everything, filesystem); the results reach the model, the answer and the history" {
	mcp_soul "$(everything '[echo, get-sum]')
$(filesystem '[read_text_file]')"
	llm_script "{\"replies\":[{\"tool_calls\":[$(call everything__get-sum '{"a":2,"b":3}'),$(call fs__read_text_file "{\"path\":\"$D/files/note.txt\"}")]},{\"text\":\"The launch is on Thursday; 2 and 3 make 5.\"}]}"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .response, .tools]')" = '["ok","The launch is on Thursday; 2 and 3 make 5.",{"calls":2,"failed":0,"servers":2,"servers_failed":0}]' ]
	# what the model was offered: the allowed tools, schemas unchanged
	head -n 1 "$LLM_DIR/requests.jsonl" | jq -e '.body.tools | map(.function.name) == ["quote","everything__echo","everything__get-sum","fs__read_text_file"]'
	head -n 1 "$LLM_DIR/requests.jsonl" | jq -e '.body.tools[2].function.parameters | .required == ["a","b"] and .properties.a.type == "number"'
	# the results, to the model and into the wake's messages
	llm_last | jq -e '[.messages[] | select(.role == "tool") | .content] == ["The sum of 2 and 3 is 5.", "The launch is on Thursday.\n"]'
	echo "$output" | jq -e '[.messages[] | select(.role == "tool") | .content] | .[0] == "The sum of 2 and 3 is 5."'
	echo "$output" | heart-ghost --text > "$D/delivered"
	[ "$(cat "$D/delivered")" = "The launch is on Thursday; 2 and 3 make 5." ]
	grep -q 'The sum of 2 and 3 is 5.' "$HEART_STATE_DIR/agents/scout/history.jsonl"
	# nothing of a server that went well on heart-wake's stderr
	[ -z "$stderr" ]
}

@test "allowlist: a tool not listed is not offered, and a call to it is refused as an unknown tool; a server with none listed is never started" {
	mcp_soul "$(everything '[echo]')
$(bad quiet good "$D/bad" | sed '/tools:/d')"
	llm_script "{\"replies\":[{\"tool_calls\":[$(call everything__get-env '{}')]},{\"text\":\"done\"}]}"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '.tools')" = '{"calls":1,"failed":1,"servers":1,"servers_failed":0}' ]
	head -n 1 "$LLM_DIR/requests.jsonl" | jq -e '.body.tools | map(.function.name) == ["quote","everything__echo"]'
	[ "$(output_json '.messages[2].content')" = '"error: everything__get-env: no such tool (the tools are: quote, everything__echo)"' ]
	echo "$stderr" | grep -q 'mcp_servers.quiet: no tools listed: none is offered and the server is never started'
	[ ! -e "$D/bad/pids" ]
	[ "$(jq .tool_fails "$HEART_STATE_DIR/agents/scout/breaker.json")" -eq 1 ]
}

@test "a tool allowed that the server does not have is warned of, and the allowed tools after it are still offered" {
	mcp_soul "$(everything '[echo, no-such-tool, get-sum, add-nothing]')"
	llm_script '{"replies":[{"text":"done"}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	head -n 1 "$LLM_DIR/requests.jsonl" | jq -e '.body.tools | map(.function.name) == ["quote","everything__echo","everything__get-sum"]'
	output_json .warning | grep -q 'mcp server everything has no tool no-such-tool (it has: .*echo'
	output_json .warning | grep -q 'mcp server everything has no tool add-nothing'
}

@test "seed_tool_cap counts MCP and soul tool calls together" {
	mcp_soul "$(everything '[echo]')" 'idle: { daily_cap: 0 }
  breaker: { threshold: 5 }'
	sed -i 's/^  schedule: { daily_cap: 1000 }$/  schedule: { daily_cap: 1000, seed_tool_cap: 2 }/' "$S"
	llm_script "{\"replies\":[{\"tool_calls\":[$(call quote '{"symbol":"ACME"}'),$(call everything__echo '{"message":"hi"}')]},{\"tool_calls\":[$(call everything__echo '{"message":"again"}')]},{\"text\":\"never\"}]}"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '[.status, .tools.calls, .tools.failed]')" = '["tool_cap",2,0]' ]
	[ "$(llm_count)" -eq 2 ]
	echo "$output" | jq -e '[.messages[] | select(.role == "tool") | .content] | .[1] == "Echo: hi"'
	head -n 1 "$LLM_DIR/requests.jsonl" | jq -e '[.body.messages[] | select(.role == "user")][0].content | test("At most 2 tool calls in this wake")'
}

# misbehave MODE MESSAGE: a wake whose server misbehaves so gives a
# clear tool failure, and leaves no process of its group
misbehave() {
	mcp_soul "$(bad bad "$1" "$D/bad")"
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$(call bad__hello '{"name":"you"}')]},{\"text\":\"The server misbehaved.\"}]}"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	echo "$stderr" | grep -F "heart-wake: scout: tool $2"
	jq -r .last_error.message "$HEART_STATE_DIR/agents/scout/wake.json" |
	    grep -F "$2"
	no_group_left "$D/bad"
}

@test "a server that writes garbage on its output: a clear tool failure, and no process left" {
	misbehave garbage 'bad__hello: mcp server bad: sent a line that is not JSON'
	[ "$(output_json '[.status, .tools.failed]')" = '["ok",1]' ]
	echo "$stderr" | grep -q 'mcp server bad: stderr: mcp-bad: garbage started'
}

@test "a server that exits in the middle of a call: a clear tool failure, its stderr told, and no process left" {
	misbehave exit 'bad__hello: mcp server bad: exited with status 3'
	echo "$stderr" | grep -q 'heart-wake: scout: mcp server bad: stderr: mcp-bad: crashed on purpose'
	[ "$(jq .tool_fails "$HEART_STATE_DIR/agents/scout/breaker.json")" -eq 1 ]
}

@test "a server that floods its output: stopped at the bound, a clear tool failure, and no process left" {
	misbehave flood 'bad__hello: mcp server bad: sent more than 16777216 bytes without an answer'
}

@test "a server that never answers initialize: a tool failure, its tools not offered, and no process left" {
	TO=5s misbehave silent 'mcp server bad: no answer to initialize within 5s'
	[ "$(output_json '[.tools, .status]')" = '[{"calls":1,"failed":1,"servers":1,"servers_failed":1},"ok"]' ]
	head -n 1 "$LLM_DIR/requests.jsonl" | jq -e '.body.tools | map(.function.name) == ["quote"]'
	[ "$(output_json '.messages[2].content')" = '"error: bad__hello: no such tool (the tools are: quote)"' ]
}

@test "a call past the server's timeout is cancelled; a server that ignores SIGTERM, and its child, are killed with their group" {
	TO=$((2 * PATIENCE))s
	misbehave stubborn "bad__hello: mcp server bad: no answer to tools/call within $TO (cancelled)"
	grep '"notifications/cancelled"' "$D/bad/log" |
	    jq -e '.params.requestId == 4 and .params.reason == "timeout"'
}

@test "a tool that returns isError: a tool failure, its content to the model" {
	mcp_soul "$(bad bad good "$D/bad")"
	llm_script "{\"replies\":[{\"tool_calls\":[$(call bad__fail '{}'),$(call bad__hello '{"name":"Ada"}')]},{\"text\":\"One failed.\"}]}"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '.tools')" = '{"calls":2,"failed":1,"servers":1,"servers_failed":0}' ]
	llm_last | jq -e '[.messages[] | select(.role == "tool") | .content] == ["error: bad__fail: the tool reports an error\nno luck", "hello, Ada"]'
	echo "$stderr" | grep -q 'heart-wake: scout: tool bad__fail: the tool reports an error: no luck'
	# a tool's own error is no failure of the server: its stderr stays
	! echo "$stderr" | grep -q 'stderr: mcp-bad' || false
	# the protocol: initialize, initialized, tools/list by pages, calls
	run jq -r '.method' "$D/bad/log"
	assert_output "$(printf '%s\n' initialize notifications/initialized tools/list tools/list tools/call tools/call)"
	jq -se '.[3].params.cursor == "1"' "$D/bad/log"
	no_group_left "$D/bad"
}

@test "a server that answers with an older protocol version is spoken to; one with an unknown version is not" {
	mcp_soul "$(bad old old "$D/bad")
$(bad new future "$D/bad2")"
	llm_script "{\"replies\":[{\"tool_calls\":[$(call old__hello '{"name":"Bob"}')]},{\"text\":\"ok\"}]}"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '.tools')" = '{"calls":1,"failed":0,"servers":2,"servers_failed":1}' ]
	echo "$output" | jq -e '[.messages[] | select(.role == "tool") | .content] == ["hello, Bob"]'
	echo "$stderr" | grep -q 'tool mcp server new: speaks protocol version 2099-01-01; heart-wake speaks 2025-06-18, 2025-03-26 and 2024-11-05'
	no_group_left "$D/bad"
	no_group_left "$D/bad2"
}

@test "a skipped wake starts no server" {
	mcp_soul "$(bad bad good "$D/bad")"
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json .status)" = '"idle"' ]
	[ "$(wc -l < "$D/bad/pids")" -eq 1 ]
	run heart-wake --soul "$S"
	assert_success
	[ "$(output_json .status)" = '"not_due"' ]
	[ "$(wc -l < "$D/bad/pids")" -eq 1 ]
	[ "$(llm_count)" -eq 1 ]
	no_group_left "$D/bad"
}

@test "the key variables reach only the server that names them, never the model's key unless named" {
	mcp_soul "$(bad one good "$D/bad" '    pass_env: [MCP_TOKEN_ONE]
    env: { GREETING: hi }')
$(bad two good "$D/bad2")
$(everything '[get-env]' | sed 's/^    tools:.*/    tools: [get-env]\n    pass_env: [OPENAI_API_KEY]/')" '' 'llm: { timeout: 5s, api_key_env: OPENAI_API_KEY }'
	sed -i '0,/^llm: { timeout: 5s }$/{/^llm: { timeout: 5s }$/d}' "$S"
	export MCP_TOKEN_ONE=token-one-secret MCP_TOKEN_OTHER=token-other
	export OPENAI_API_KEY=sk-the-models-key-123
	llm_script "{\"replies\":[{\"tool_calls\":[$(call everything__get-env '{}')]},{\"text\":\"ok\"}]}"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_success
	one=$(tr '\0' '\n' < "$D"/bad/environ.*)
	two=$(tr '\0' '\n' < "$D"/bad2/environ.*)
	echo "$one" | grep -qx 'MCP_TOKEN_ONE=token-one-secret'
	echo "$one" | grep -qx 'GREETING=hi'
	echo "$one" | grep -qx 'HEART_AGENT=scout'
	! echo "$two" | grep -q 'MCP_TOKEN' || false
	! echo "$two" | grep -q 'GREETING' || false
	! echo "$one$two" | grep -q 'OPENAI_API_KEY' || false
	! echo "$one$two" | grep -q 'sk-the-models-key' || false
	# a minimal environment: PATH and HOME, not the rest of ours
	echo "$two" | grep -q '^PATH='
	! echo "$two" | grep -q '^HEART_STATE_DIR=' || false
	# everything named the model's key: it has it, and what it says of
	# it reaches the model scrubbed, as any tool output
	llm_last | jq -e '[.messages[] | select(.role == "tool") | .content][0] | test("OPENAI_API_KEY") and (test("sk-the-models-key") | not)'
}

@test "--explain and --dry-run name the servers and tools without starting any; --list-tools starts them, lists every tool, and stops them" {
	mcp_soul "$(bad bad good "$D/bad" | sed 's/tools: \[hello, fail\]/tools: [hello]/')
$(everything '[echo]')"
	run heart-wake --explain --soul "$S"
	assert_success
	echo "${lines[0]}" | jq -e '.mcp | map([.server, .tools, .started]) == [["bad",["bad__hello"],false],["everything",["everything__echo"],false]]'
	run heart-wake --dry-run --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, (.mcp | map(.server))]')" = '["dry_run",["bad","everything"]]' ]
	[ ! -e "$D/bad/pids" ]
	[ "$(llm_count)" -eq 0 ]
	run --separate-stderr heart-wake --list-tools --soul "$S"
	assert_success
	[ "$(output_json '[.servers[0].server, .servers[0].ok, .servers[0].protocol, (.servers[0].tools | map([.name, .allowed, .as]))]')" = '["bad",true,"2025-06-18",[["hello",true,"bad__hello"],["fail",false,"bad__fail"]]]' ]
	[ "$(output_json '.servers[1].tools | map(.name) | index("get-sum") != null')" = true ]
	[ "$(wc -l < "$D/bad/pids")" -eq 1 ]
	no_group_left "$D/bad"
	[ "$(llm_count)" -eq 0 ]
}

# led_groups PID: the process groups PID's children lead, one a line
# (each server leads its own; its sentinel, a child too, is in it)
led_groups() {
	local kids=() k
	read -r -a kids < "/proc/$1/task/$1/children" 2> /dev/null || :
	for k in "${kids[@]}"; do
		[ "$(ps -o pgid= -p "$k" | tr -d ' ')" != "$k" ] || echo "$k"
	done
}

# three_servers: a soul with a server that tidies up at SIGTERM (its
# marks in $D/bad), one that ignores it and has a child ($D/bad2), and
# the real everything server; heart-wake started on it in the
# background (pid), the model slow to answer; returns once the three
# are listed and the stubborn one's child runs, their groups in groups
three_servers() {
	mcp_soul "$(bad tidy tidy "$D/bad")
$(bad stubborn stubborn "$D/bad2")
$(everything '[echo]')"
	llm_script '{"replies":[{"text":"slow","delay":30}]}'
	heart-wake --soul "$S" --force > "$D/out" 2>&1 &
	pid=$!
	wait_until 10 [ -s "$D/bad2/pids" ]
	read -r _ pgid < "$D/bad2/pids"
	has_child() { pgrep -g "$pgid" -x sleep > /dev/null; }
	wait_until 10 has_child
	# the model asked: every server was listed
	wait_until 20 [ -s "$LLM_DIR/requests.jsonl" ]
	groups=$(led_groups "$pid")
	[ "$(echo "$groups" | wc -l)" -eq 3 ]
}

# none_alive GROUP...: no process of any of them runs
none_alive() {
	local g
	for g in "$@"; do
		! group_alive "$g" || return 1
	done
}

@test "a SIGTERM to heart-wake while the model thinks stops the servers' groups (SIGTERM first: a server tidies up; one that ignores it, and its child, SIGKILL), then heart-wake ends by it" {
	three_servers
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	[ "$st" -eq 143 ]
	[ "$(cat "$D/bad/marks")" = term ]
	# shellcheck disable=SC2086
	wait_until 5 none_alive $groups
}

@test "a SIGKILL to heart-wake while the model thinks: each server's group is still stopped (SIGTERM, then SIGKILL), the real server's too" {
	three_servers
	kill -KILL "$pid"
	st=0
	wait "$pid" || st=$?
	[ "$st" -eq 137 ]
	# (the tidy server may see its input end before SIGTERM comes: it
	# ends either way; the stubborn one's child only by the group's end)
	# shellcheck disable=SC2086
	wait_until 10 none_alive $groups
}

@test "a soul's MCP keys are checked as it loads" {
	bad_soul() {
		printf 'name: x\nmcp_servers:\n%s\n' "$1" > "$D/x.yaml"
		run soul-dump "$D/x.yaml"
		assert_failure
		assert_output --partial "$2"
	}
	bad_soul '  a__b: { command: x, tools: [t] }' "mcp_servers.a__b: a server's name is letters, digits, - and _ (not __"
	bad_soul '  a: { url: "https://example.com/mcp", tools: [t] }' 'only stdio servers are supported'
	bad_soul '  a: { tools: [t] }' 'a server needs a command'
	bad_soul '  a: { command: x, tools: [t], pass_env: ["TOKEN=abc"] }' 'never their values'
	bad_soul '  a: { command: x, tools: [t], env: { PORT: 8080 } }' 'quote numbers'
	bad_soul '  a: { command: x, tools: [t.dot] }' 'SERVER__TOOL'
	printf 'name: x\ntools:\n  - { name: a__t, command: [x] }\nmcp_servers:\n  a: { command: x, tools: [t] }\n' > "$D/x.yaml"
	run soul-dump "$D/x.yaml"
	assert_failure
	assert_output --partial "the soul's tool names NAME__... are this server's"
	printf 'name: x\nmcp_servers:\n  a: { command: x, tools: [t], timeout: 5s }\n' > "$D/x.yaml"
	run soul-dump "$D/x.yaml"
	assert_success
	[ "$(echo "$output" | jq -c '.mcp_servers.a | [.args, .env, .pass_env, .timeout]')" = '[[],{},[],5]' ]
}
