# lib.sh - what the delivery recipes in contrib/deliver share: their
# settings and secrets, the answer read once, JSON strings, a text cut
# to a service's limit, an HMAC, and curl.  Sourced by each recipe;
# POSIX sh, curl, and the awk, od and sha256sum of every Debian system.
#
# Invariant: a secret is never an argument of a program (ps(1) and
# /proc/PID/cmdline show those to every user of the machine).  Secrets
# reach curl in a config file of mode 0600 (-K) and sha256sum on a
# pipe; only the shell's builtins (printf, test, eval) see them as
# arguments.

umask 077
me=heart-deliver-${0##*/}

# die CODE MESSAGE: say what is wrong and exit CODE.
die() {
	printf '%s: %s\n' "$me" "$2" >&2
	exit "$1"
}

# setting NAME: print $NAME, or the contents of the file $NAME_FILE
# names (which wins), without its trailing newlines.  That file must be
# a regular file readable by its owner alone.
setting() {
	eval "_v=\${$1-} _f=\${$1_FILE-}"
	if [ -n "$_f" ]; then
		if ! [ -f "$_f" ] || ! [ -r "$_f" ]; then
			die 78 "$1_FILE: $_f: not a file it can read"
		fi
		case $(ls -lnL -- "$_f") in
		-???------*) ;;
		*) die 78 "$1_FILE: $_f: others may read it: chmod 600 it" ;;
		esac
		_v=$(cat -- "$_f") || die 78 "$1_FILE: $_f: cannot read it"
	fi
	printf '%s' "$_v"
}

# need NAME: setting NAME, which must not be empty.
need() {
	_n=$(setting "$1") || exit
	[ -n "$_n" ] || die 78 "$1 (or $1_FILE) is not set"
	printf '%s' "$_n"
}

# begin: check the wake's variables, make the temporary directory $tmp
# (removed at exit: at SIGTERM too, which heart-ghost sends the whole
# recipe at --exec-timeout or when it is ended), and keep the answer
# on standard input in $tmp/text without its trailing newlines.
begin() {
	if [ -z "${HEART_WAKE_ID-}" ] || [ -z "${HEART_AGENT-}" ]; then
		die 64 "HEART_WAKE_ID and HEART_AGENT are not set: run me\
 with heart-ghost --text --exec ${0##*/}"
	fi
	tmp=$(mktemp -d) || die 74 "cannot make a temporary directory"
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 75' HUP INT TERM
	# a line at a time, empty ones held back until more text comes
	LC_ALL=C awk '$0 == "" { e++; next }
	    { if (n++) printf "\n"; for (; e > 0; e--) printf "\n"
	      printf "%s", $0 }' > "$tmp/text" ||
		die 74 "cannot read the answer"
	IFS= read -r _l < "$tmp/text" || :
	case $_l in
	'{"v":1,'*"\"wake_id\":\"$HEART_WAKE_ID\""*)
		die 64 "standard input is the wake's result line, not its\
 answer: give heart-ghost --text"
		;;
	esac
	# shellcheck disable=SC2034 # the recipes read it
	case ${HEART_ALERT-0} in 1) alert=true ;; *) alert=false ;; esac
}

# json_str < FILE: FILE as one JSON string, quotes and all.  Runs of
# characters that need no escape are printed whole.
json_str() {
	LC_ALL=C awk 'BEGIN {
		for (i = 1; i < 32; i++)
			esc[sprintf("%c", i)] = sprintf("\\u%04x", i)
		esc["\t"] = "\\t"; esc["\r"] = "\\r"
		esc["\""] = "\\\""; esc["\\"] = "\\\\"
		printf "\""
	}
	NR > 1 { printf "\\n" }
	{
		n = length($0); k = 1
		for (i = 1; i <= n; i++)
			if ((c = substr($0, i, 1)) in esc) {
				printf "%s%s", substr($0, k, i - k), esc[c]
				k = i + 1
			}
		printf "%s", substr($0, k)
	}
	END { printf "\"" }'
}

# json_word VALUE: VALUE as a JSON string; without a process when it
# is a word (an id, a time) that needs no escape.
json_word() {
	case $1 in
	*[!A-Za-z0-9_.:+@-]*)
		printf '%s' "$1" > "$tmp/word"
		json_str < "$tmp/word"
		;;
	*) printf '"%s"' "$1" ;;
	esac
}

# split_text LIMIT UNIT < FILE: FILE in parts of at most LIMIT units
# (bytes; or utf16, UTF-16 code units, as Telegram, Discord and Slack
# count characters), each cut at its last line break, else between
# two characters (blank lines at a cut are dropped); in $tmp/part.1,
# $tmp/part.2...  Prints how many.  A line at a time, written as it
# comes.
split_text() {
	rm -f "$tmp"/part.*
	LC_ALL=C awk -v limit="$1" -v unit="$2" -v dir="$tmp" '
	function units(s,  t, n) {
		if (unit == "bytes")
			return length(s)
		t = s; n = length(s) - gsub(/[\200-\277]/, "", t)
		return n + gsub(/[\360-\367]/, "", t)
	}
	function part() {
		if (f != "")
			close(f)
		f = dir "/part." ++parts; used = 0; lines = 0
	}
	# a line to the part; empty lines that would open a part are dropped
	function put(s, u) {
		if (s == "" && lines == 0)
			return
		if (lines++ > 0) {
			printf "\n" > f
			used++
		}
		printf "%s", s > f
		used += u
	}
	# a line longer than a part: as many parts as it takes
	function cut(s,  n, i, k, b, w, u, c) {
		n = length(s); k = 1; c = 0
		for (i = 1; i <= n; i += w) {
			b = ord[substr(s, i, 1)]
			w = b >= 240 ? 4 : b >= 224 ? 3 : b >= 192 ? 2 : 1
			u = unit == "bytes" ? w : w == 4 ? 2 : 1
			if (c + u > limit) {
				put(substr(s, k, i - k), c)
				part(); k = i; c = 0
			}
			c += u
		}
		put(substr(s, k), c)
	}
	BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i }
	{
		u = units($0)
		if (f == "" || lines > 0 && used + 1 + u > limit)
			part()
		if (u > limit)
			cut($0)
		else
			put($0, u)
	}
	END {
		if (f != "")
			close(f)
		print parts + 0
	}' < "$tmp/text"
}

# hmac_sha256 KEY < FILE: the HMAC-SHA256 of FILE under KEY, in hex
# (RFC 2104).  No Debian tool takes an HMAC key but on its command
# line (openssl dgst -hmac, openssl mac -macopt), so the pads are made
# here with the shell's arithmetic and printf %b, and hashed by sha256sum
# from a pipe: the key is never an argument of a program.
hmac_sha256() {
	_k=$(printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n')
	[ ${#_k} -le 128 ] ||
		_k=$(printf '%s' "$1" | sha256sum | cut -c1-64)
	_ip='' _op='' _i=0
	while [ $_i -lt 64 ]; do
		_h=${_k%"${_k#??}"}
		_k=${_k#??}
		_b=$((0x${_h:-00} ^ 54))
		_ip=$_ip\\0$((_b / 64))$((_b / 8 % 8))$((_b % 8))
		_b=$((0x${_h:-00} ^ 92))
		_op=$_op\\0$((_b / 64))$((_b / 8 % 8))$((_b % 8))
		_i=$((_i + 1))
	done
	_in=$({ printf '%b' "$_ip"; cat; } | sha256sum | cut -c1-64)
	_ih=''
	while [ -n "$_in" ]; do
		_b=$((0x${_in%"${_in#??}"}))
		_ih=$_ih\\0$((_b / 64))$((_b / 8 % 8))$((_b % 8))
		_in=${_in#??}
	done
	printf '%b%b' "$_op" "$_ih" | sha256sum | cut -c1-64
}

# curl_set KEY VALUE: a line of $tmp/curl, curl's config (-K): the
# place for a URL or a header that holds a secret.
curl_set() {
	printf '%s = "%s"\n' "$1" "$(printf '%s' "$2" |
	    sed 's/[\\"]/\\&/g')" >> "$tmp/curl"
}

# post FILE [CURL-ARG...]: POST FILE to the url of $tmp/curl with its
# headers and the wake's id; fails when the service does not answer
# 2xx within HEART_DELIVER_TIMEOUT seconds (default 30).  curl runs in
# the background and is waited for, as every program that may wait
# long is: a SIGTERM then ends the recipe at once, through its traps,
# and the shell's word of its child's end ("Terminated", on the wait's
# standard error) is not said.
post() {
	_body=$1
	shift
	curl -fsS -o /dev/null --proto =http,https \
	    --max-time "${HEART_DELIVER_TIMEOUT:-30}" -K "$tmp/curl" \
	    -H "X-Heart-Wake-Id: $HEART_WAKE_ID" --data-binary "@$_body" \
	    "$@" &
	wait $! 2> /dev/null
}
