# helpers.bash - shared by every bats file: where the programs are, a
# private state directory per test, and clocks moved with libfaketime
# (faketime.bash).
# Servers (mosquitto, redis, the LLM test double) are started here on
# free loopback ports and stopped in teardown.

# bats_lib NAME: the library /usr/lib/bats/NAME, its files sourced as
# its load.bash sources them, but without the process that load.bash
# starts for each ($(dirname ...)): bats loads a file's libraries again
# for every test, and those 15 processes cost more than bats itself.
bats_lib() {
	local d=/usr/lib/bats/$1 line n=0
	while IFS= read -r line; do
		[[ $line =~ ^source\ .*\)/(src/[a-z_]+\.bash)\"$ ]] || continue
		# shellcheck disable=SC1090
		source "$d/${BASH_REMATCH[1]}" || return
		n=$((n + 1))
	done < "$d/load.bash"
	[ "$n" -gt 0 ] || load "$d/load"	# a load.bash of another form
}
bats_lib bats-support
bats_lib bats-assert

# bats keeps a stack trace of every command of a test with a DEBUG trap
# that every function inherits (set -T): some 0.3 ms a command on the
# machine make check was timed on, and most of its shell's time went to
# the helpers' loops.  Without functrace the trap stays on bats's own
# lines; a failure is still reported at the line of the test that
# failed (a helper failing is named by the test's line that called it).
set +T

# at TIME CMD..., at_epoch SECONDS CMD...: CMD on a faked clock
. "$BATS_TEST_DIRNAME/faketime.bash"

# sleep as a builtin (bash's loadable, package bash-builtins): the
# waits for a condition poll every tenth of a second or less, and a
# fork and exec of /bin/sleep from a shell the size of a bats test's
# costs more CPU than most of what they wait for.  Without the
# package, /bin/sleep.
enable -f sleep sleep 2>/dev/null || :

T=$BATS_TEST_DIRNAME
HEART_BIN=${HEART_BIN:-$T/..}
HEART_TBIN=${HEART_TBIN:-$T/../build/t}
PATH=$HEART_BIN:$HEART_TBIN:$PATH
SOULS=$T/../share/heartbeat/souls
FIX=$T/fixtures
export PATH

# HEART_TEST_PATIENCE: how many times longer than a test says to wait
# for a condition before it gives up (default 4).  A wait lasts only as
# long as its condition takes; the limit is for a machine so loaded
# (make check runs its jobs at once, on a shared machine) that starting
# a process takes seconds.
PATIENCE=${HEART_TEST_PATIENCE:-4}

# The sanitized programs carry their runtimes (the Makefile's
# SANLDFLAGS).  Leaks are reported and fail a test.  The allocator never
# hands memory back to the system (a process of a test lives a moment):
# its clock for that would be libfaketime's, whose first call allocates,
# and a program on a faked clock would wait forever on the allocator's
# own lock.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_release_to_os_interval_ms=-1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# heart_setup: a private state directory; with HEART_TEST_STORE=redis
# (make check's Redis passes over the cap and breaker suites) also a
# private Redis store, in force through HEART_STORE: the file's server
# (heart_setup_file), emptied with FLUSHALL, else a redis-server of the
# test's own.  A file that calls it has teardown() { heart_teardown; }.
heart_setup() {
	export HEART_STATE_DIR=$BATS_TEST_TMPDIR/state
	export TZ=UTC
	unset XDG_STATE_HOME HEART_STORE HEART_REDIS_PASSWORD
	[ "${HEART_TEST_STORE:-}" = redis ] || return 0
	if [ -n "${FILE_REDIS_PID:-}" ]; then
		REDIS_PID=$FILE_REDIS_PID REDIS_PORT=$FILE_REDIS_PORT
		REDIS_DIR=$FILE_REDIS_DIR REDIS_URL=$FILE_REDIS_URL
		rcli FLUSHALL > /dev/null || return 1
	else
		redis_start || return 1
	fi
	export HEART_STORE=$REDIS_URL
}

heart_teardown() {	# the file's server stays for the next test
	if [ "${REDIS_PID:-}" != "${FILE_REDIS_PID:-}" ]; then
		redis_stop
	fi
}

# heart_setup_file: with HEART_TEST_STORE=redis, one redis-server for
# the file's tests (each a tenth of a second of CPU less than a server
# of its own).  Its tests only read and write keys: a test that stops,
# kills or reconfigures its server starts one of its own (redis_start).
# A file that calls it has teardown_file() { heart_teardown_file; }.
heart_setup_file() {
	[ "${HEART_TEST_STORE:-}" = redis ] || return 0
	local BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR
	redis_start || return 1
	export FILE_REDIS_PID=$REDIS_PID FILE_REDIS_PORT=$REDIS_PORT \
	    FILE_REDIS_DIR=$REDIS_DIR FILE_REDIS_URL=$REDIS_URL
	unset REDIS_PID REDIS_PORT REDIS_DIR REDIS_URL
}

heart_teardown_file() {
	REDIS_PID=${FILE_REDIS_PID:-}
	redis_stop
}

# Every suite's file-wide setup and teardown, unless it defines its own
# after it loads this file: heart_setup_file's one redis-server for the
# file in the Redis passes, nothing over files.
setup_file() {
	heart_setup_file
}

teardown_file() {
	heart_teardown_file
}

# model_setup, model_teardown: a test that wakes the model: heart_setup
# and the LLM double (llm_start), with no key or fleet file from the
# caller's environment; then the double stopped and the store's server.
model_setup() {
	heart_setup
	llm_start
	unset OPENAI_API_KEY ANTHROPIC_API_KEY HEART_FLEET
}

model_teardown() {
	llm_stop
	heart_teardown
}

# file_only: skip a test that looks at the state files themselves.
file_only() {
	! redis_store ||
		skip "looks at the state files themselves: file store only"
}

# redis_store: a Redis store of the test's is in force
redis_store() {
	[ -n "${REDIS_PID:-}" ] && [[ ${HEART_STORE:-} == redis://* ]]
}

# state_clear: forget every agent, in whichever store is in force.
state_clear() {
	rm -rf "$HEART_STATE_DIR"
	[ -z "${REDIS_PID:-}" ] || rcli FLUSHALL >/dev/null
}

# soul_file FILE TEXT: TEXT written to the soul $BATS_TEST_TMPDIR/FILE
# (FILE with its extension: .yaml, .yml, .md), its path printed.
soul_file() {
	printf '%s\n' "$2" > "$BATS_TEST_TMPDIR/$1"
	echo "$BATS_TEST_TMPDIR/$1"
}

# hold_clear: forget every provider account's hold (lib/hold.c), as a
# person who fixed the account would; in whichever store is in force.
hold_clear() {
	rm -f "$HEART_STATE_DIR/hold.json"
	[ -z "${REDIS_PID:-}" ] || rcli DEL 'heart:{*}:hold.json' > /dev/null
}

# state_write AGENT FILE JSON: replace the agent's state file FILE as
# heart's writers do (a temporary name, then rename).
state_write() {
	local d=$HEART_STATE_DIR/agents/$1
	mkdir -p "$d"
	printf '%s\n' "$3" > "$d/.$2.tmp"
	mv "$d/.$2.tmp" "$d/$2"
}

# wake_ids AGENT: the wake ids in the agent's history, one per whole
# wake (its last part).
wake_ids() {
	jq -r 'select(.part == .parts) | .wake_id' \
	    "$HEART_STATE_DIR/agents/$1/history.jsonl"
}

# explain_schedule EPOCH SOUL: the schedule chamber's --explain object
# at that time.
explain_schedule() {
	at_epoch "$1" heart-wake --explain --soul "$2" |
	    jq -c 'select(.chamber == "schedule")'
}

# output_json JQ: JQ of the last JSON line of $output, compact.
output_json() {
	echo "$output" | tail -n 1 | jq -c "$1"
}

# output_field NAME: the field NAME of the JSON in $output, raw.
output_field() {
	echo "$output" | jq -r ".$1"
}

# rcv_start: t/deliver-receiver.py, the far end of a delivery recipe,
# in ./rcv on a free loopback port; RCV is its address, RCV_PID its
# process.  rcv_stop in teardown stops it.
rcv_start() {
	mkdir -p rcv
	: > rcv/log
	python3 "$T/deliver-receiver.py" "$PWD/rcv" 3>&- &
	RCV_PID=$!
	wait_until 20 test -s rcv/port
	RCV=http://127.0.0.1:$(cat rcv/port)
}

rcv_stop() {
	[ -z "${RCV_PID:-}" ] || kill "$RCV_PID" 2> /dev/null || true
}

# meet AGENT...: heart knows each agent from now on, as after its
# soul's first take, with nothing counted and no caps kept: its counter
# reset, its soul given (a take, a record or a user message of an agent
# heart has never met is refused).
meet() {
	local a s=$BATS_TEST_TMPDIR/meet.yaml
	for a; do
		printf 'name: %s\nheart: {}\n' "$a" > "$s"
		heart-cap reset --soul "$s" || return
	done
	rm -f "$s"
}

# take_n N ARGS...: run heart-cap take N times, print how many admitted.
take_n() {
	local n=$1 ok=0 i
	shift
	for ((i = 0; i < n; i++)); do
		heart-cap take "$@" && ok=$((ok + 1))
	done
	echo "$ok"
}

# capfile AGENT, bfile AGENT: the agent's cap.json, breaker.json.  With
# the Redis store, a copy of its key (the same document), now (no key,
# no file); ask again after a change.
capfile() {
	store_doc "$1" cap.json
}

bfile() {
	store_doc "$1" breaker.json
}

# store_doc OWNER NAME: the same for any document of the store; OWNER
# is an agent, or @NAME for the endpoint NAME (its bucket.json).
store_doc() {
	local f=$BATS_TEST_TMPDIR/redis-$1-$2
	if ! redis_store; then
		case $1 in
		@*)	echo "$HEART_STATE_DIR/endpoints/${1#@}/$2" ;;
		*)	echo "$HEART_STATE_DIR/agents/$1/$2" ;;
		esac
		return
	fi
	rm -f "$f"
	if [ "$(rcli EXISTS "heart:{$1}:$2")" = 1 ]; then
		rcli --raw GET "heart:{$1}:$2" > "$f"
	fi
	echo "$f"
}

# redis_start [LINE...]: a redis-server of this test's own on a free
# loopback port, with LINEs added to its config (and, first of all, the
# file $REDIS_INCLUDE if set); data in $BATS_TEST_TMPDIR/redis,
# persisted to an append-only file synced on every write (what a user
# must configure for counts to survive a crash).  Sets REDIS_PORT,
# REDIS_PID, REDIS_URL, REDIS_DIR.
redis_start() {
	local try line
	REDIS_DIR=$BATS_TEST_TMPDIR/redis
	mkdir -p "$REDIS_DIR"
	for try in 1 2 3 4 5 6 7 8; do
		# below the kernel's ephemeral ports (32768 on), where any
		# client's connection may hold the port a while
		REDIS_PORT=$((20000 + (RANDOM * 7 + try) % 12768))
		{
			[ -z "${REDIS_INCLUDE:-}" ] || echo "include $REDIS_INCLUDE"
			echo "bind 127.0.0.1"
			echo "port $REDIS_PORT"
			echo "dir $REDIS_DIR"
			echo "appendonly yes"
			echo "appendfsync always"
			echo "save \"\""
			echo "logfile $REDIS_DIR/redis.log"
			for line in "$@"; do echo "$line"; done
		} > "$REDIS_DIR/redis.conf"
		redis_up && return 0
	done
	echo "redis-server did not start: $(tail -3 "$REDIS_DIR/redis.log")" >&2
	return 1
}

# redis_up: (re)start the server of redis_start, same port and data.
# It daemonizes, so that a test's own `wait' does not wait for it.
redis_up() {
	rm -f "$REDIS_DIR/redis.pid"
	redis-server "$REDIS_DIR/redis.conf" --daemonize yes \
		--pidfile "$REDIS_DIR/redis.pid" >/dev/null 3>&- || return 1
	export REDIS_PORT REDIS_DIR
	export REDIS_URL=redis://127.0.0.1:$REDIS_PORT
	local i info
	for ((i = 0; i < 100 * PATIENCE; i++)); do
		REDIS_PID=
		read -r REDIS_PID 2>/dev/null < "$REDIS_DIR/redis.pid" || :
		# ours, not some other server on that port
		if [ -n "$REDIS_PID" ] &&
		    info=$(rcli INFO server 2>/dev/null) &&
		    [[ $info == *"process_id:$REDIS_PID"[[:space:]]* ]]; then
			export REDIS_PID
			return 0
		fi
		# it wrote its pid and exited: the port was taken
		[ -z "$REDIS_PID" ] || alive "$REDIS_PID" || break
		sleep 0.05
	done
	redis_stop
	return 1
}

# alive PID: the process runs (a zombie waiting for init is gone).
# Its state is the field after the name in /proc/PID/stat, read without
# a process of its own: ps(1) costs as much as the waits it is polled in.
alive() {
	local st
	read -r st 2>/dev/null < "/proc/$1/stat" || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# group_alive PGID: a process of that group still runs (a zombie is
# dead: the parent an orphan is handed to reaps it when it will)
group_alive() {
	ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { f = 1 }
	    END { exit !f }'
}

# kill_running PID: kill -9 the child PID runs now, then PID (a shell
# looping over a program, in the kill -9 tests).  The child is read
# from /proc by the shell, no ps or pkill process; a PID between two
# children, or not yet at its first, is given half a second to
# fork the next, so that a round kills a running program whenever
# there is one, not the loop alone.
kill_running() {
	local kids=() i
	for ((i = 0; i < 500; i++)); do
		read -r -a kids < "/proc/$1/task/$1/children" 2>/dev/null || :
		[ ${#kids[@]} -eq 0 ] && alive "$1" || break
		sleep 0.001
	done
	kill -9 "${kids[@]}" "$1" 2>/dev/null || :
}

# keep FILE: FILE's bytes as they are now, kept in the array kept (a
# kill -9 loop keeps each round's document so, and checks them all
# with one jq at the end, all_kept); a file not there is kept empty.
keep() {
	local doc=
	IFS= read -r -d '' doc < "$1" || :
	kept+=("$doc")
}

# all_kept JQ-CONDITION: every document kept is whole JSON (an empty
# or torn one makes the count short or does not parse) and meets it
all_kept() {
	printf '%s\n' "${kept[@]}" | jq -se --argjson n ${#kept[@]} \
	    "length == \$n and all(.[]; $1)" > /dev/null
}

# stop_pid [PID]: kill PID (a server of the test's, not always its
# child) and wait until it is gone, 4 s times PATIENCE at most
stop_pid() {
	local i
	[ -n "${1:-}" ] && kill "$1" 2>/dev/null || return 0
	for ((i = 0; i < 400 * PATIENCE; i++)); do
		alive "$1" || return 0
		sleep 0.01
	done
}

# redis_stop: stop it by its pid, and wait until it is gone.
redis_stop() {
	stop_pid "${REDIS_PID:-}"
	REDIS_PID=
	return 0
}

# redis_kill: kill -9, as a crash would.
redis_kill() {
	kill -9 "$REDIS_PID"
	while alive "$REDIS_PID"; do sleep 0.02; done
	REDIS_PID=
}

# rcli ARGS...: redis-cli against the test's server
rcli() {
	if [ -n "${REDIS_TEST_PASSWORD:-}" ]; then
		REDISCLI_AUTH=$REDIS_TEST_PASSWORD redis-cli -p "$REDIS_PORT" "$@"
	else
		redis-cli -p "$REDIS_PORT" "$@"
	fi
}

# llm_start: start the LLM test double (t/llm-double.py) on a free
# loopback port; point heart-wake at it through the environment.  The
# double is forked by the bats run's zygote (llm-double.py --zygote,
# started at a file's first llm_start and stopped by teardown_suite):
# a new Python for every test costs twice the CPU.  What the double
# prints goes to $LLM_DIR/double.log, shown by llm_stop.
llm_start() {
	LLM_DIR=$BATS_TEST_TMPDIR/llm
	mkdir -p "$LLM_DIR"
	rm -f "$LLM_DIR/port"	# a double started before in this test
	: > "$LLM_DIR/requests.jsonl"
	LLM_PID=$(zygote_fork "$LLM_DIR") || return 1
	local i port=
	for ((i = 0; i < 100 * PATIENCE; i++)); do
		[ -s "$LLM_DIR/port" ] && break
		sleep 0.05
	done
	[ -s "$LLM_DIR/port" ] || { echo "llm double did not start" >&2; return 1; }
	read -r port < "$LLM_DIR/port" || :	# no newline after it: status 1
	export LLM_DIR LLM_PID
	export HEART_LLM_URL="http://127.0.0.1:$port/v1"
	export HEART_LLM_MODEL=double
	export HEART_LLM_PROVIDER=openai
}

# zygote_fork DIR: the pid of a new double serving DIR, forked by the
# zygote of this bats run (started here the first time)
zygote_fork() {
	local z=$BATS_SUITE_TMPDIR/zygote port= fd pid= i
	if [ ! -s "$z/zygote.port" ]; then
		mkdir -p "$z"
		# (in a subshell: not a child of the test's shell, for a
		# bare `wait' there)
		(TZ=UTC python3 "$T/llm-double.py" --zygote "$z" \
		    > "$z/zygote.log" 2>&1 3>&- &
		echo $! > "$z/zygote.pid")
		for ((i = 0; i < 100 * PATIENCE; i++)); do
			[ -s "$z/zygote.port" ] && break
			sleep 0.05
		done
	fi
	read -r port < "$z/zygote.port" 2>/dev/null || :
	if [ -z "$port" ] || ! exec {fd}<> "/dev/tcp/127.0.0.1/$port"; then
		echo "llm double: no zygote: $(cat "$z/zygote.log" 2>/dev/null)" >&2
		return 1
	fi
	printf '%s\n' "$1" >&"$fd"
	read -r pid <&"$fd" || :
	exec {fd}>&-
	[[ $pid =~ ^[0-9]+$ ]] || { echo "llm double: zygote: $pid" >&2; return 1; }
	echo "$pid"
}

# llm_stop: stop the double and wait until it is gone; what it printed
# (a traceback) to standard error, which bats shows if the test failed
llm_stop() {
	stop_pid "${LLM_PID:-}"
	LLM_PID=
	[ ! -s "${LLM_DIR:-/nonexistent}/double.log" ] || cat "$LLM_DIR/double.log" >&2
	return 0
}

# llm_script JSON: what the double answers next (see llm-double.py)
llm_script() {
	printf '%s\n' "$1" > "$LLM_DIR/script.json"
}

# llm_count: how many requests the double got
llm_count() {
	wc -l < "$LLM_DIR/requests.jsonl" | tr -d ' '
}

# llm_last: the last request's body, as JSON
llm_last() {
	tail -n 1 "$LLM_DIR/requests.jsonl" | jq -c .body
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# broker_start [PORT]: start a real mosquitto on 127.0.0.1 (a free port,
# or PORT to bring one back on the port it had), its config and log in
# $BATS_TEST_TMPDIR, persistence off.  Exports BROKER_PORT, BROKER_URL
# and BROKER_PID; waits until it accepts connections.
broker_start() {
	local port=${1:-} try i
	for try in 1 2 3; do
		[ -n "$port" ] || port=$(free_port)
		cat > "$BATS_TEST_TMPDIR/mosquitto.conf" <<-CONF
		listener $port 127.0.0.1
		allow_anonymous true
		persistence ${BROKER_PERSIST:-false}
		persistence_location $BATS_TEST_TMPDIR/
		CONF
		mosquitto -c "$BATS_TEST_TMPDIR/mosquitto.conf" \
		    >> "$BATS_TEST_TMPDIR/mosquitto.log" 2>&1 &
		BROKER_PID=$!
		for ((i = 0; i < 50 * PATIENCE; i++)); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				export BROKER_PORT=$port BROKER_PID
				export BROKER_URL=mqtt://127.0.0.1:$port
				return 0
			fi
			kill -0 "$BROKER_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$BROKER_PID" 2>/dev/null
		wait "$BROKER_PID" 2>/dev/null
		[ -n "${1:-}" ] || port=
	done
	echo "broker_start: mosquitto did not start" >&2
	cat "$BATS_TEST_TMPDIR/mosquitto.log" >&2
	return 1
}

# broker_stop: stop the broker broker_start started (by its pid).
broker_stop() {
	if [ -n "${BROKER_PID:-}" ]; then
		kill "$BROKER_PID" 2>/dev/null
		wait "$BROKER_PID" 2>/dev/null
		BROKER_PID=
	fi
	return 0
}

# watcher ARGS...: heart-pulse --watch on $BROKER_URL in the background,
# its lines in $BATS_TEST_TMPDIR/watch.out; its pid is WATCHER, added to
# the file's PIDS, which its teardown stops.
watcher() {
	heart-pulse --watch --broker "$BROKER_URL" "$@" \
	    > "$BATS_TEST_TMPDIR/watch.out" \
	    2>> "$BATS_TEST_TMPDIR/watch.err" 3>&- &
	WATCHER=$!
	PIDS+=("$WATCHER")
}

# events EVENT REASON: how many lines of EVENT the watcher printed, of
# that REASON if not empty
events() {
	jq -c "select(.event == \"$1\" and (\"$2\" == \"\" or .reason == \"$2\"))" \
	    "$BATS_TEST_TMPDIR/watch.out" 2>/dev/null | wc -l
}

# hold_lock FILE: another process holds an flock on FILE until
# release_lock; back once it is held.  HOLDER is its pid.
hold_lock() {
	local held=$BATS_TEST_TMPDIR/held.$RANDOM
	flock --no-fork "$1" sh -c ': > "$1"; exec sleep 60' sh "$held" \
	    3>&- &
	HOLDER=$!
	wait_until 10 test -e "$held"
}

release_lock() {
	kill "$HOLDER" 2>/dev/null
	wait "$HOLDER" 2>/dev/null || :	# 143: killed, as it should be
	HOLDER=
}

# plain_only [WHY]: skip, in the sanitized pass, a test that runs no
# program of heart's build (it checks a script, a unit, a man page, the
# tree or a page in a browser): there it would check the same bytes
# with the same tools as in the plain pass, which runs it.
plain_only() {
	local why="runs no program of heart's build: the plain pass runs it"
	[ -z "${HEART_SANITIZED:-}" ] || skip "${1:-$why}"
}

# plain_long: skip, in the sanitized pass, a long simulation (seconds
# of CPU there: hundreds of sanitized runs, each some 50 ms) whose lines
# of heart's C the sanitized pass's other tests reach, so that the
# sanitizers would look at no line more; the plain pass runs it.  make
# cover-asan (t/cover.sh asan) checks that they do.
plain_long() {
	local why="a long simulation whose lines the sanitized pass's other"
	plain_only "$why tests reach (make cover-asan): the plain pass runs it"
}

# repeats N [SANITIZED]: the runs of a test that repeats a race (every
# run, N times) or kills at random points (N rounds): 1 to N, and 1 to
# SANITIZED (default 2) in the sanitized pass.  The sanitizers look for
# memory errors and leaks on the paths a run takes, and every run takes
# the same paths (a test that alternates two setups has both in its
# first two runs; one whose runs are all alike says 1); trying many
# interleavings is the plain and Redis passes' work, whose programs
# start ten times faster.
repeats() {
	local s=${2:-2}
	[ "$s" -lt "$1" ] || s=$1
	seq "$(in_pass "$1" "$s")"
}

# in_pass N S: N, and S in the sanitized pass: the rule of repeats for
# the size of one run (how many takes a herd makes), where a smaller run
# takes the same paths.
in_pass() {
	if [ -n "${HEART_SANITIZED:-}" ]; then
		echo "$2"
	else
		echo "$1"
	fi
}

# wait_until SECONDS CMD...: run CMD every 0.1 s until it succeeds;
# fail when it has not within SECONDS (times PATIENCE).
wait_until() {
	local n=$(($1 * 10 * PATIENCE))
	shift
	while ((n-- > 0)); do
		"$@" && return 0
		sleep 0.1
	done
	echo "wait_until: gave up on: $*" >&2
	return 1
}
