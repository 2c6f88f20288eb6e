# setup_suite.bash - once per bats run, before any file: what every
# test would otherwise work out again.
setup_suite() {
	. "${BASH_SOURCE[0]%/*}/faketime.bash"
}
