# setup_suite.bash - once per bats run, before any file: what every
# test would otherwise work out again.
setup_suite() {
	. "${BASH_SOURCE[0]%/*}/faketime.bash"
	debian_python
}

# teardown_suite: stop the LLM double's zygote, if a test started one
# (helpers.bash, zygote_fork)
teardown_suite() {
	local pid
	read -r pid 2>/dev/null < "$BATS_SUITE_TMPDIR/zygote/zygote.pid" &&
		kill "$pid" 2>/dev/null
	return 0
}

# debian_python: the tests' python3 (the LLM double, the receivers,
# free_port, the command providers of souls) is Debian's, the one
# python3-aiosmtpd and the other test dependencies are installed for,
# asked of dpkg as faketime.bash asks for libfaketime.  When another
# python3 comes first in PATH (a version manager's shim starts in a
# second or more on a loaded machine, and a test starts several), a
# directory holding only a link to Debian's goes before it.
debian_python() {
	local py
	py=$(dpkg -L python3-minimal 2>/dev/null | grep -m 1 '/bin/python3$') ||
		return 0	# t/deps.sh installs it; without it, PATH's
	[ "$(command -v python3)" != "$py" ] || return 0
	mkdir -p "$BATS_SUITE_TMPDIR/python" &&
		ln -sf "$py" "$BATS_SUITE_TMPDIR/python/python3" &&
		export PATH="$BATS_SUITE_TMPDIR/python:$PATH"
}
