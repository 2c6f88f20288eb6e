#!/usr/bin/env bats
# heart-wake: tools and the seed tool cap, the Anthropic and command
# providers, and the heartbeat tool (ghost.mode: tool).  The tools are
# the small scripts in t/tools/, run for real.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	model_setup
	D=$BATS_TEST_TMPDIR
	ln -s "$T/tools" "$D/tools"
	S=$D/stock.yaml
	stock_soul fail
}

teardown() {
	model_teardown
}

# stock_soul TOOL [HEART_EXTRA] [TOP_EXTRA]: the stock agent with one
# tool, quote, served by t/tools/TOOL (relative to the soul's directory)
stock_soul() {
	cat > "$S" <<EOF
name: stock
system: You watch stock prices.
heart:
  schedule: { daily_cap: 1000 }
  $2
llm: { timeout: 5s }
tools:
  - name: quote
    description: The last price of a stock.
    parameters:
      type: object
      properties: { symbol: { type: string } }
      required: [symbol]
    command: [tools/$1]
    timeout: 5s
$3
EOF
}

asks_quote='{"name":"quote","arguments":{"symbol":"ACME"}}'

@test "a tool that fails every time: 5 calls then tool_cap, 3 such wakes open the breaker on the tool trigger, the 4th sends nothing" {
	llm_script "{\"replies\":[{\"tool_calls\":[$asks_quote]}]}"
	local w
	for w in 1 2 3; do
		run --separate-stderr heart-wake --soul "$S" --force
		assert_failure 75
		# the third opens the breaker: its notice follows its line
		[ "${#lines[@]}" -eq $((w < 3 ? 1 : 2)) ]
		if [ "$w" -eq 3 ]; then
			jq -e '.status == "breaker_open" and .trigger == "tool"' \
			    <<< "${lines[1]}"
			output=${lines[0]}
		fi
		[ "$(output_json .status)" = '"tool_cap"' ]
		[ "$(output_json .tools)" = '{"calls":5,"failed":5}' ]
		[ "$(llm_count)" -eq $((w * 6)) ]
		echo "$stderr" | grep -q 'heart-wake: stock: the model asked for more than seed_tool_cap (5) tool calls'
		echo "$output" > "$D/wake$w.json"
	done
	# every call and its error result are in the result's messages
	run jq -c '[.messages[] | select(.role == "tool") | .content] | unique' "$D/wake1.json"
	assert_output '["error: quote: exit status 3: quote service unavailable (HTTP 503)"]'
	run jq -c '[.messages[] | .role]' "$D/wake1.json"
	assert_output '["user","assistant","tool","assistant","tool","assistant","tool","assistant","tool","assistant","tool","assistant"]'
	[ "$(jq -c .breaker_events "$D/wake2.json")" = null ]
	[ "$(jq -c '.breaker_events[0] | [.event, .trigger]' "$D/wake3.json")" = '["open","tool"]' ]
	run jq -c '[.state, .tool_fails, .llm_fails]' "$HEART_STATE_DIR/agents/stock/breaker.json"
	assert_output '["open",3,0]'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json .status)" = '"open"' ]
	assert_output --partial 'tool trigger'
	[ "$(llm_count)" -eq 18 ]
	# discarded: heart-ghost keeps nothing of them, and exits 75 as
	# heart-wake did; tokens still count.  The breaker's notice, which
	# no heart-ghost took, waited in the outbox: a line of a wake that
	# ran delivers it
	run heart-ghost "$D"/wake*.json
	assert_failure 75
	[ "$(jq -r .status <<< "$output")" = breaker_open ]
	[ ! -s "$HEART_STATE_DIR/agents/stock/history.jsonl" ]
	[ "$(jq '.total, (.tokens.prompt > 0), .ghosts' -c "$HEART_STATE_DIR/agents/stock/cap.json" | paste -sd' ')" = "3 true 0" ]
}

@test "seed_tool_cap comes from the soul" {
	stock_soul fail 'schedule: { seed_tool_cap: 2 }'
	sed -i '/^  schedule: { daily_cap/d' "$S"
	llm_script "{\"replies\":[{\"tool_calls\":[$asks_quote]}]}"
	run heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '[.status, .tools.calls]')" = '["tool_cap",2]' ]
	[ "$(llm_count)" -eq 3 ]
	llm_last | jq -e '[.messages[] | select(.role == "user")][0].content | test("At most 2 tool calls in this wake")'
}

@test "a healthy tool's output reaches the model and the final answer; it resets the tool trigger; history keeps the exchange" {
	stock_soul quote
	heart-breaker record --soul "$S" tool-fail >/dev/null
	heart-breaker record --soul "$S" tool-fail >/dev/null
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$asks_quote]},{\"text\":\"ACME trades at 123.45 USD.\"}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .response, .tools]')" = '["ok","ACME trades at 123.45 USD.",{"calls":1,"failed":0}]' ]
	[ "$(llm_count)" -eq 2 ]
	body=$(llm_last)
	echo "$body" | jq -e '.tools[0].function.name == "quote" and .tools[0].function.parameters.required == ["symbol"]'
	echo "$body" | jq -e '.messages[-2].tool_calls[0].id as $id | .messages[-1] | .role == "tool" and .tool_call_id == $id and (.content | fromjson) == {"symbol":"ACME","price":123.45,"currency":"USD"}'
	[ "$(jq .tool_fails "$HEART_STATE_DIR/agents/stock/breaker.json")" -eq 0 ]
	echo "$output" | heart-ghost --text > "$D/delivered"
	[ "$(cat "$D/delivered")" = "ACME trades at 123.45 USD." ]
	run jq -c '[.role, .tool_call_id]' "$HEART_STATE_DIR/agents/stock/history.jsonl"
	assert_output "$(printf '%s\n' '["user",null]' '["assistant",null]' '["tool","call_1_1"]' '["assistant",null]')"
	# the next wake sends the exchange as context (the double refuses a
	# tool result whose call is not before it)
	run heart-wake --soul "$S" --force
	assert_success
	llm_last | jq -e '[.messages[1:5][] | .role] == ["user","assistant","tool","assistant"]'
}

@test "the turns of a conversation share one connection to the model, and a tool is handed none of heart-wake's sockets" {
	stock_soul sockets
	llm_script "{\"replies\":[{\"tool_calls\":[$asks_quote]},{\"tool_calls\":[$asks_quote]},{\"text\":\"done\"}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json .status)" = '"ok"' ]
	[ "$(llm_count)" -eq 3 ]
	# the tool ran with the connection open, and saw no socket of it
	llm_last | jq -e '[.messages[] | select(.role == "tool") | .content | fromjson | .sockets] == [0, 0]'
	[ "$(jq -s '[.[].peer] | unique | length' "$LLM_DIR/requests.jsonl")" -eq 1 ]
}

@test "a tool that hangs is killed at its timeout, with its children" {
	stock_soul hang
	sed -i 's/^    timeout: 5s$/    timeout: 1s/' "$S"
	export HANG_PIDS=$D/pids
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$asks_quote]},{\"text\":\"The quote service hangs.\"}]}"
	run heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '[.status, .tools]')" = '["ok",{"calls":1,"failed":1}]' ]
	output_json '.messages[2].content' | grep -q 'error: quote: no result within 1s: killed with its process group'
	[ "$(wc -l < "$HANG_PIDS")" -eq 2 ]
	for pid in $(cat "$HANG_PIDS"); do
		wait_until 5 eval "! kill -0 $pid 2>/dev/null || ps -o stat= -p $pid | grep -q Z"
	done
	[ "$(jq .tool_fails "$HEART_STATE_DIR/agents/stock/breaker.json")" -eq 1 ]
}

# tidy_soul TIMEOUT: the stock agent with t/tools/tidy as its quote
# tool, which may run TIMEOUT; its marks and pids in $D/tidy
tidy_soul() {
	stock_soul tidy
	sed -i "s/^    timeout: 5s\$/    timeout: $1/" "$S"
	export TIDY_DIR=$D/tidy
	mkdir -p "$TIDY_DIR"
}

# tidy_started: both processes of t/tools/tidy have written their pid
tidy_started() {
	[ "$(grep -c . "$TIDY_DIR/pids" 2> /dev/null)" = 2 ]
}

# tidy_gone: no process of t/tools/tidy's group runs any more (nor
# one it wrote down, had it left the group)
tidy_gone() {
	local name pid
	while read -r name pid; do
		! alive "$pid" || return 1
		[ "$name" != tool ] || ! group_alive "$pid" || return 1
	done < "$TIDY_DIR/pids"
}

@test "a tool past its timeout is sent SIGTERM first: it and its child tidy up before they end" {
	tidy_soul 2s
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$asks_quote]},{\"text\":\"The quote service hangs.\"}]}"
	run heart-wake --soul "$S" --force
	assert_failure 75
	output_json '.messages[2].content' | grep -q 'error: quote: no result within 2s: killed with its process group'
	tidy_started
	[ "$(sort "$TIDY_DIR/marks" | tr '\n' ' ')" = "child tool " ]
	tidy_gone
}

@test "what a tool leaves running in its group when it exits is sent SIGTERM, then is gone" {
	tidy_soul 5s
	export TIDY_LEAVE=1
	llm_script "{\"replies\":[{\"tool_calls\":[$asks_quote]},{\"text\":\"ACME is at 1.\"}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .tools]')" = '["ok",{"calls":1,"failed":0}]' ]
	[ "$(output_json '.messages[2].content')" = '"{\"price\": 1}\n"' ]
	[ "$(cat "$TIDY_DIR/marks")" = child ]
	tidy_gone
}

@test "a tool that ignores SIGTERM, and its child, are killed with SIGKILL after the grace" {
	tidy_soul 1s
	export TIDY_STUBBORN=1
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$asks_quote]},{\"text\":\"The quote service hangs.\"}]}"
	run heart-wake --soul "$S" --force
	assert_failure 75
	output_json '.messages[2].content' | grep -q 'error: quote: no result within 1s: killed with its process group'
	[ ! -e "$TIDY_DIR/marks" ]
	tidy_gone
}

@test "a SIGKILL to heart-wake while a tool runs: the tool's group is still sent SIGTERM, then ends" {
	tidy_soul 60s
	llm_script "{\"replies\":[{\"tool_calls\":[$asks_quote]}]}"
	heart-wake --soul "$S" --force > /dev/null 3>&- &
	wpid=$!
	wait_until 10 tidy_started
	kill -KILL "$wpid"
	rc=0
	wait "$wpid" || rc=$?
	[ "$rc" -eq 137 ]
	marked() { [ "$(sort "$TIDY_DIR/marks" 2> /dev/null | tr '\n' ' ')" = "child tool " ]; }
	wait_until 10 marked
	wait_until 10 tidy_gone
}

@test "a SIGTERM to heart-wake while a tool runs stops the tool and its children (SIGTERM: they tidy up), then heart-wake ends by it" {
	tidy_soul 60s
	llm_script "{\"replies\":[{\"tool_calls\":[$asks_quote]}]}"
	heart-wake --soul "$S" --force > /dev/null 3>&- &
	wpid=$!
	wait_until 10 tidy_started
	kill -TERM "$wpid"
	rc=0
	wait "$wpid" || rc=$?
	[ "$rc" -eq 143 ]
	[ "$(sort "$TIDY_DIR/marks" | tr '\n' ' ')" = "child tool " ]
	tidy_gone
}

@test "a tool that prints 100 MB is cut at the cap of 32 KiB, and reaches the model whole within the default context budget" {
	stock_soul flood
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$asks_quote]},{\"text\":\"That was long.\"}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .tools]')" = '["ok",{"calls":1,"failed":0}]' ]
	c=$(output_json '.messages[2].content' | jq -r .)
	[ "${#c}" -lt 33000 ]
	[[ "$c" == xxxxxxxx*'[heart: output cut at 32768 bytes]' ]]
	[ "$(llm_last | jq -r '.messages[-1].content | length')" -eq "${#c}" ]
}

@test "a wake whose messages would outgrow a result line ends as an error at 8 MiB, and heart-ghost reads its line" {
	stock_soul quote 'schedule: { daily_cap: 1000, seed_tool_cap: 40 }'
	sed -i '/^  schedule: { daily_cap: 1000 }$/d' "$S"
	head -c 1000000 /dev/zero | tr '\0' w |
		jq -Rc --argjson c "[$asks_quote]" '{replies: [{text: ., tool_calls: $c}]}' > "$LLM_DIR/script.json"
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[[ "$stderr" == *"the wake's messages passed 8388608 bytes"* ]]
	[ "${#output}" -lt 16777216 ]
	[ "$(llm_count)" -lt 12 ]
	printf '%s\n' "$output" > "$D/line"
	run --separate-stderr heart-ghost "$D/line"
	assert_failure 75
	# heart-wake said it; heart-ghost's exit says it, once
	[ -z "$stderr" ]
	[ ! -e "$HEART_STATE_DIR/agents/stock/history.jsonl" ]
}

@test "a tool's bytes that are not UTF-8 reach the model as U+FFFD" {
	stock_soul binary
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$asks_quote]},{\"text\":\"ok\"}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '.messages[2].content == "café \ufffd\ufffdok \ufffd\ufffd"')" = true ]
	llm_last | jq -e '.messages[-1].content == "café \ufffd\ufffdok \ufffd\ufffd"'
}

@test "an unknown tool or broken arguments get an error result, not a crash" {
	stock_soul quote
	llm_script '{"cycle":true,"replies":[{"tool_calls":[{"name":"nope","arguments":{}},{"name":"quote","arguments":"{\"symbol\": ACME"},{"name":"quote","arguments":"[1, 2]"},{"name":"quote","arguments":{"symbol":"ACME"},"id":null}]},{"text":"Only one quote worked."}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '[.status, .response, .tools]')" = '["ok","Only one quote worked.",{"calls":4,"failed":3}]' ]
	run jq -r '.messages[] | select(.role == "tool") | .content[0:60]' <<< "$output"
	assert_line --index 0 "error: nope: no such tool (the tools are: quote)"
	assert_line --index 1 --partial 'error: quote: arguments are not a JSON object: '
	assert_line --index 2 'error: quote: arguments are not a JSON object'
	assert_line --index 3 --partial '"price":123.45'
	# a call that came without an id gets one, and its result names it
	[ "$(llm_last | jq -c '[.messages[-5].tool_calls[3].id, .messages[-1].tool_call_id]')" = '["call_heart_1","call_heart_1"]' ]
	[ "$(jq .tool_fails "$HEART_STATE_DIR/agents/stock/breaker.json")" -eq 1 ]
}

@test "model text with shell metacharacters and \$(...) reaches a tool only as JSON on stdin" {
	export RECORD_DIR=$D/rec OPENAI_API_KEY=sk-test-SECRET-42
	mkdir "$RECORD_DIR"
	stock_soul record
	sed -i 's|command: \[tools/record\]|command: [tools/record, --fixed, "two words"]|' "$S"
	evil='$(touch PWNED1); `touch PWNED2`; touch PWNED3 && echo $HOME | cat > PWNED4 & '\''"\\ {x}*'
	args=$(jq -nc --arg q "$evil" '{symbol: $q}')
	llm_script "$(jq -nc --argjson a "$args" '{cycle: true, replies: [{tool_calls: [{name: "quote", arguments: $a}]}, {text: "done"}]}')"
	cd "$D"
	# nor another provider's key, nor the store's or broker's password,
	# nor a delivery's settings (for heart-ghost --exec alone)
	ANTHROPIC_API_KEY=sk-ant-SECRET-other HEART_REDIS_PASSWORD=SECRET-r \
	    HEART_MQTT_PASSWORD=SECRET-m HEART_DELIVER_SLACK_URL=SECRET-s \
	    run heart-wake --soul "$S" --force
	assert_success
	wake=$output
	run cat "$RECORD_DIR/argv"
	assert_output "$(printf '%s\n' tools/record --fixed 'two words')"
	[ "$(jq -c . "$RECORD_DIR/stdin")" = "$args" ]
	[ "$(jq -r .symbol "$RECORD_DIR/stdin")" = "$evil" ]
	run find "$D" / -maxdepth 1 -name 'PWNED*'
	assert_output ""
	# run in the soul's directory, told who it works for, without a secret
	[ "$(cat "$RECORD_DIR/pwd")" = "$D" ]
	grep -qx 'HEART_AGENT=stock' "$RECORD_DIR/env"
	grep -qx 'HEART_TOOL=quote' "$RECORD_DIR/env"
	grep -qx "HEART_WAKE_ID=$(jq -r .wake_id <<< "$wake")" "$RECORD_DIR/env"
	run grep -c SECRET "$RECORD_DIR/env"
	assert_output 0
}

@test "Anthropic end to end: system field, tool_use and tool_result, key header, token usage in cap.json" {
	stock_soul quote
	export HEART_LLM_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-SECRET-7
	llm_script "{\"cycle\":true,\"replies\":[{\"text\":\"Let me look.\",\"tool_calls\":[$asks_quote],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7}},{\"text\":\"ACME: 123.45\",\"usage\":{\"prompt_tokens\":150,\"completion_tokens\":9}}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .response, .tools, .usage]')" = '["ok","ACME: 123.45",{"calls":1,"failed":0},{"prompt_tokens":250,"completion_tokens":16,"cached_tokens":0,"cache_write_tokens":0}]' ]
	# in the result, the calls are in OpenAI form, for the history
	[ "$(output_json '.messages[1].tool_calls[0].function')" = '{"name":"quote","arguments":"{\"symbol\":\"ACME\"}"}' ]
	run jq -r .path "$LLM_DIR/requests.jsonl"
	assert_output "$(printf '/v1/messages\n/v1/messages')"
	tail -n 1 "$LLM_DIR/requests.jsonl" | jq -e '.headers["x-api-key"] == "sk-ant-SECRET-7" and .headers["anthropic-version"] == "2023-06-01" and (.headers | has("Authorization") | not)'
	body=$(llm_last)
	echo "$body" | jq -e '.system == "You watch stock prices." and .model == "double" and .max_tokens == 1024'
	echo "$body" | jq -e '[.messages[] | .role] == ["user","assistant","user"]'
	echo "$body" | jq -e '.messages[1].content == [{"type":"text","text":"Let me look."},{"type":"tool_use","id":"call_1_1","name":"quote","input":{"symbol":"ACME"}}]'
	echo "$body" | jq -e '.messages[2].content[0] | .type == "tool_result" and .tool_use_id == "call_1_1" and (.content | fromjson | .price) == 123.45'
	echo "$body" | jq -e '.tools == [{"name":"quote","description":"The last price of a stock.","input_schema":{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}}]'
	[ "$(jq -c '[.tokens.prompt, .tokens.completion]' "$HEART_STATE_DIR/agents/stock/cap.json")" = '[250,16]' ]
	run grep -rl SECRET "$HEART_STATE_DIR"
	assert_output ""
	run -0 heart-wake --soul "$S" --force --dry-run
	assert_output --partial '"x-api-key: [redacted]"'
	refute_output --partial SECRET
	llm_script '{"replies":[{"status":429,"text":"rate_limit_error: slow down"}]}'
	run heart-wake --soul "$S" --force
	assert_failure 75
	assert_output --partial 'model endpoint answered HTTP 429: rate_limit_error: slow down'
}

@test "Anthropic: history that starts with the assistant, or a result cut from its call, still makes a valid request" {
	stock_soul quote 'history: { keep: 2 }'
	export HEART_LLM_PROVIDER=anthropic
	mkdir -p "$HEART_STATE_DIR/agents/stock"
	h=$HEART_STATE_DIR/agents/stock/history.jsonl
	w='"wake_id":"w1","chamber":"schedule","at":"2026-11-21T00:00:00Z"'
	cat > "$h" <<EOF
{"role":"user","content":"u1",$w}
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"quote","arguments":"{}"}}],$w}
{"role":"tool","tool_call_id":"c1","content":"r1",$w}
{"role":"assistant","content":"a1",$w}
EOF
	llm_script '{"replies":[{"text":"[IDLE]"}]}'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json .status)" = '"idle"' ]
	llm_last | jq -e '[.messages[] | .role] == ["user","assistant","user"] and .messages[1].content == [{"type":"text","text":"a1"}]'
}

@test "the command provider end to end: request on stdin, reply on stdout, tools, token usage; libcurl is never loaded" {
	# (a timeout that python3's start fits in on a busy machine)
	stock_soul quote '' "$(printf 'llm:\n  provider: command\n  command: [python3, %s/llm-double.py, --command, %s]\n  timeout: %ss' "$T" "$LLM_DIR" $((5 * PATIENCE)))"
	sed -i '/^llm: { timeout: 5s }$/d' "$S"
	unset HEART_LLM_MODEL HEART_LLM_URL HEART_LLM_PROVIDER
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[$asks_quote],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":3}},{\"text\":\"ACME: 123.45\",\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":4}}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .response, .tools, .usage]')" = '["ok","ACME: 123.45",{"calls":1,"failed":0},{"prompt_tokens":70,"completion_tokens":7,"cached_tokens":0,"cache_write_tokens":0}]' ]
	run jq -r .path "$LLM_DIR/requests.jsonl"
	assert_output "$(printf 'command\ncommand')"
	llm_last | jq -e '(has("model") | not) and .messages[0].role == "system" and .messages[-1].role == "tool" and .tools[0].function.name == "quote"'
	[ "$(jq -c '[.tokens.prompt, .tokens.completion]' "$HEART_STATE_DIR/agents/stock/cap.json")" = '[70,7]' ]
	LD_DEBUG=libs heart-wake --soul "$S" --force 2> "$D/ld" > /dev/null
	run grep -c 'libcurl' "$D/ld"
	assert_output 0
	# the check can fail: an HTTP wake does load it
	grep -q 'calling init' "$D/ld"
	export HEART_LLM_URL="http://127.0.0.1:$(cat "$LLM_DIR/port")/v1"
	sed -i 's/provider: command/provider: openai\n  model: double/' "$S"
	LD_DEBUG=libs heart-wake --soul "$S" --force 2> "$D/ld" > /dev/null
	grep -q 'libcurl' "$D/ld"
}

@test "the command provider's failures are LLM failures: exit status, timeout, garbage, no command" {
	# (a timeout that python3's start fits in on a busy machine)
	stock_soul quote '' "$(printf 'llm:\n  provider: command\n  command: [python3, %s/llm-double.py, --command, %s]\n  timeout: %ss' "$T" "$LLM_DIR" $((3 * PATIENCE)))"
	sed -i '/^llm: { timeout: 5s }$/d' "$S"
	for r in '{"exit":2,"stderr":"model not loaded"}=llm.command: exit status 2: model not loaded' \
		'{"raw":"Sure! Here is"}=unreadable reply: not JSON' \
		'{"endless":true}=llm.command: reply larger than' \
		'{}=llm.command: no result within 1s: killed with its process group'; do
		if [ "${r%%=*}" = '{}' ]; then	# a command that never answers
			sed -i -e 's/command: \[python3.*/command: [sleep, "60"]/' \
			    -e 's/timeout: [0-9]*s$/timeout: 1s/' "$S"
		fi
		heart-breaker reset --soul "$S" > /dev/null
		llm_script "{\"replies\":[${r%%=*}]}"
		run heart-wake --soul "$S" --force
		assert_failure 75
		assert_output --partial "${r#*=}"
		[ "$(output_json .status)" = '"error"' ]
		[ "$(jq .llm_fails "$HEART_STATE_DIR/agents/stock/breaker.json")" -eq 1 ]
	done
	sed -i '/command: \[sleep/d' "$S"
	run heart-wake --soul "$S" --force
	assert_failure 78
	assert_output --partial 'llm provider command needs llm.command'
}

@test "tool mode: skip is a ghost, run does the work" {
	stock_soul quote 'ghost: { mode: tool }'
	llm_script '{"replies":[{"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip","reason":"markets closed"}}]}]}'
	run at "2026-11-22 03:00:00 UTC" heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .decision, .tools.calls]')" = '["idle",{"action":"skip","reason":"markets closed"},0]' ]
	body=$(llm_last)
	echo "$body" | jq -e '.tool_choice == {"type":"function","function":{"name":"heartbeat"}}'
	echo "$body" | jq -e '[.tools[].function.name] == ["heartbeat","quote"] and .tools[0].function.parameters.properties.action.enum == ["skip","run"]'
	echo "$body" | jq -e '.messages[-1].content | test("local time: 2026-11-22T03:00:00\\+00:00") and test("First call heartbeat: action skip if nothing needs doing now, run if there is work")'
	echo "$output" | heart-ghost
	[ ! -s "$HEART_STATE_DIR/agents/stock/history.jsonl" ]
	[ "$(jq .ghosts "$HEART_STATE_DIR/agents/stock/cap.json")" -eq 1 ]

	: > "$LLM_DIR/requests.jsonl"
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[{\"name\":\"heartbeat\",\"arguments\":{\"action\":\"run\",\"reason\":\"ACME moved\"}}]},{\"tool_calls\":[$asks_quote]},{\"text\":\"ACME fell 5% to 123.45.\"}]}"
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .response, .decision.action, .tools]')" = '["ok","ACME fell 5% to 123.45.","run",{"calls":1,"failed":0}]' ]
	[ "$(llm_count)" -eq 3 ]
	run jq -c '.body | has("tool_choice")' "$LLM_DIR/requests.jsonl"
	assert_output "$(printf 'true\nfalse\nfalse')"
	echo "$(heart-wake --soul "$S" --force --dry-run | jq -c .request.body.tool_choice)" | grep -q heartbeat
	: > "$LLM_DIR/requests.jsonl"
	llm_script "{\"cycle\":true,\"replies\":[{\"tool_calls\":[{\"name\":\"heartbeat\",\"arguments\":{\"action\":\"run\"}}]},{\"text\":\"ACME fell 5% to 123.45.\"}]}"
	# (the answer of the wake above, which no heart-ghost read, waits
	# in the outbox and would go first: this is about the new one)
	rm -r "$HEART_STATE_DIR/agents/stock/outbox"
	heart-wake --soul "$S" --force | heart-ghost --text > "$D/delivered"
	[ "$(cat "$D/delivered")" = "ACME fell 5% to 123.45." ]
	run jq -c '[.role, (.tool_calls[0].function.name // .tool_call_id)]' "$HEART_STATE_DIR/agents/stock/history.jsonl"
	assert_output "$(printf '%s\n' '["user",null]' '["assistant","heartbeat"]' '["tool","call_1_1"]' '["assistant",null]')"
}

@test "tool mode: a reply that is not a readable heartbeat call is no decision: its calls run, its text is judged, a warning says why" {
	stock_soul quote 'ghost: { mode: tool }'
	local hb='{"name":"heartbeat","arguments":' reply want
	while IFS='|' read -r reply want; do
		: > "$LLM_DIR/requests.jsonl"
		llm_script "{\"replies\":[$reply, {\"text\":\"ACME fell 5%.\"}]}"
		run --separate-stderr heart-wake --soul "$S" --force
		assert_success
		[ "$(output_json '[.status, .response, .decision.action, .tools.calls]' | sed 's/^.\(.*\).$/\1/')|$(llm_count)" = "$want" ] ||
		    { echo "$reply: not $want but $(output_json '[.status, .response, .decision.action, .tools.calls]')|$(llm_count)"; return 1; }
		[[ $stderr == *"warning: ghost.mode tool: "* ]]
		output_json .warning | grep -q 'ghost.mode tool: '
	done <<EOF
{"text":"I think ACME moved."}|"ok","I think ACME moved.",null,0|1
{"text":"[IDLE]"}|"idle","[IDLE]",null,0|1
{"tool_calls":[$asks_quote]}|"ok","ACME fell 5%.",null,1|2
{"tool_calls":[${hb}{"action":"maybe"}}]}|"ok","ACME fell 5%.",null,0|2
{"tool_calls":[${hb}"{oops"}]}|"ok","ACME fell 5%.",null,0|2
{"tool_calls":[${hb}{"action":"skip"}},$asks_quote]}|"ok","ACME fell 5%.","skip",1|2
EOF
	output_json .warning | grep -qF "a heartbeat skip beside other calls: taken as run"
	# the calls and their results are whole for the model's second request
	llm_last | jq -e '([.messages[] | select(.role == "tool")] | length) == ([.messages[] | .tool_calls // [] | length] | add)'
	# no text and no call says nothing at all: an LLM failure
	llm_script '{"replies":[{"text":""}]}'
	run --separate-stderr heart-wake --soul "$S" --force
	assert_failure 75
	[ "$(output_json '[.status, .error]')" = '["error","empty reply: no text and no tool call"]' ]
}

@test "tool mode: a skip whose reply holds a finding or an alert is a real answer, kept whole" {
	stock_soul quote 'ghost: { mode: tool }'
	local skip='"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip"}}]'
	local reason='"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip","reason":"ALERT: ACME halted."}}]'
	for reply in '{"text":"ALERT: ACME halted."}' \
		"{\"text\":\"ALERT: ACME halted.\",$skip}" \
		"{\"text\":\"⚠️ **Alert** - ACME halted.\",$skip}" \
		"{\"text\":\"ACME halted at 10:02.\",$skip}" \
		"{$reason}"; do
		rm -rf "$HEART_STATE_DIR"
		llm_script "{\"replies\":[$reply, {\"text\":\"[IDLE]\"}]}"
		: > "$LLM_DIR/requests.jsonl"
		heart-wake --soul "$S" --force > "$D/r" 2> /dev/null
		[ "$(llm_count)" -eq 1 ]
		jq -e '.status == "ok" and .tools.calls == 0' "$D/r"
		jq -e '.response | test("ACME halted")' "$D/r"
		# the action is the model's own, none when it gave none
		jq -e 'if .response == "ALERT: ACME halted." and .messages[1].tool_calls == null then .decision.action == null else .decision.action == "skip" end' "$D/r"
		run -0 heart-ghost --text "$D/r"
		assert_output --partial "ACME halted"
		# every call in the history has its result: the next request is
		# one a real server takes (the double refuses a lone result)
		run heart-wake --soul "$S" --force
		assert_success
		[ "$(output_json .status)" = '"idle"' ]
		llm_last | jq -e '([.messages[] | select(.role == "tool")] | length) == ([.messages[] | .tool_calls // [] | length] | add)'
	done
}

@test "tool mode with Anthropic forces the heartbeat tool" {
	stock_soul quote 'ghost: { mode: tool }'
	export HEART_LLM_PROVIDER=anthropic
	llm_script '{"replies":[{"tool_calls":[{"name":"heartbeat","arguments":{"action":"skip","reason":"quiet"}}]}]}'
	run heart-wake --soul "$S" --force
	assert_success
	[ "$(output_json '[.status, .decision.action]')" = '["idle","skip"]' ]
	llm_last | jq -e '.tool_choice == {"type":"tool","name":"heartbeat"} and .tools[0].name == "heartbeat"'
}

@test "a tool named heartbeat is refused in tool mode" {
	stock_soul quote 'ghost: { mode: tool }'
	sed -i 's/- name: quote/- name: heartbeat/' "$S"
	run heart-wake --soul "$S" --force
	assert_failure 78
	assert_output --partial "heartbeat is heart's own tool"
	[ "$(llm_count)" -eq 0 ]
}

@test "the shipped stock_watch soul's price tool works offline, end to end" {
	llm_script '{"cycle":true,"replies":[{"tool_calls":[{"name":"price","arguments":{"symbol":"ACME"}},{"name":"price","arguments":{"symbol":"globex"}}]},{"text":"GLOBEX fell 5.30% to 55.02."}]}'
	run heart-wake --soul "$SOULS/stock_watch.yaml" --force
	assert_success
	[ "$(output_json '[.status, .tools]')" = '["ok",{"calls":2,"failed":0}]' ]
	run jq -c '.messages[] | select(.role == "tool") | .content | fromjson | [.symbol, .price, .change_pct]' <<< "$output"
	assert_output "$(printf '%s\n' '["ACME",123.45,2.88]' '["GLOBEX",55.02,-5.3]')"
	printf 'ACME\t100\t90\t2026-11-21T10:00:00-05:00\n' > "$D/prices.tsv"
	HEART_PRICE_FILE=$D/prices.tsv run heart-wake --soul "$SOULS/stock_watch.yaml" --force
	[ "$(output_json '[.tools, (.messages[2].content | fromjson | .change_pct)]')" = '[{"calls":2,"failed":1},-10]' ]
	output_json '.messages[3].content' | grep -q 'error: price: exit status 3: price: no price for GLOBEX'
}
