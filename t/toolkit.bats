#!/usr/bin/env bats
# What every program of the toolkit shares, and what the tree itself
# must hold (and not hold).

load helpers
bats_require_minimum_version 1.5.0

setup() {
	heart_setup
}

teardown() {
	heart_teardown
}

@test "every program prints its name and the toolkit's one version with --version, exit 0" {
	v=$(sed -n 's/^VERSION = //p' "$T/../Makefile")
	[ -n "$v" ]
	for p in heart-cap heart-breaker heart-ghost heart-wake heart-pulse; do
		run "$p" --version
		assert_success
		assert_output "$p $v"
		grep -q '^\.It Fl -version$' "$T/../man/$p.1"
	done
}

@test "every program prints its synopsis with --help, exit 0" {
	for p in heart-cap heart-breaker heart-ghost heart-wake heart-pulse; do
		run "$p" --help
		assert_success
		assert_line --index 0 --partial "$p"
	done
}

# repo DIR: a git work tree of its own, with one committed file
repo() {
	mkdir -p "$1"
	git -C "$1" init -q
	git -C "$1" config user.email t@example.org
	git -C "$1" config user.name t
	echo x > "$1/file"
	git -C "$1" add file
}

@test "the tree check refuses a tracked symlink out of the tree and a tracked file .gitignore keeps out" {
	plain_only
	r=$BATS_TEST_TMPDIR/r
	repo "$r"
	mkdir "$r/sub"
	ln -s ../file "$r/sub/in"
	git -C "$r" add sub/in
	run sh "$T/tree-check.sh" "$r"
	assert_success
	ln -s /etc/hostname "$r/sub/abs"
	ln -s ../../outside "$r/sub/up"
	git -C "$r" add sub/abs sub/up
	run sh "$T/tree-check.sh" "$r"
	assert_failure 1
	assert_line "tree-check: sub/abs: a symbolic link out of the tree (-> /etc/hostname); git rm it, or make it a file of the project"
	assert_line --partial "tree-check: sub/up: a symbolic link out of the tree (-> ../../outside)"
	# what is tracked counts, even when the work tree lost the link
	git -C "$r" rm -q --cached sub/abs sub/up
	rm "$r/sub/abs" "$r/sub/up"
	cp "$T/../.gitignore" "$r/.gitignore"
	echo 1234 > "$r/hp.pid"
	git -C "$r" add -f hp.pid
	run sh "$T/tree-check.sh" "$r"
	assert_failure 1
	assert_output "tree-check: hp.pid: tracked, but .gitignore keeps such files out of the tree; git rm --cached it"
}

@test "the project's own tree passes its tree check, and make check runs it first" {
	plain_only
	git -C "$T/.." rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
		skip "not a git work tree"
	run sh "$T/tree-check.sh" "$T/.."
	assert_success
	assert_output ""
	run make -n -s --no-print-directory -C "$T/.." check
	assert_line --index 0 "sh t/tree-check.sh"
}

@test "the code cites the project's own docs, never a file outside the tree" {
	plain_only
	cd "$T/.."
	run grep -rnI --exclude=toolkit.bats -e 'DESIGN\.md' -e '/work/' \
	    lib cmd t bench contrib share Makefile README man
	assert_failure 1
	assert_output ""
}

@test "make check's fuzz job does the same work on every run: a count of inputs from a fixed seed, its seeds only, nothing kept" {
	plain_only
	cd "$T/.."
	[ -x build/fuzz/url ] || skip "no fuzz build (make fuzz-build; make check builds it)"
	mkdir -p build/fuzz/corpus/url
	before=$(ls build/fuzz/corpus/url fuzz/corpus/url | md5sum)
	# its figures but the speed, the same three times
	figures() { sh fuzz/run --check url 3000 | sed -E 's/ [0-9]+ exec\/s,//'; }
	run -0 figures
	first=$output
	[[ $first =~ ^fuzz:\ url:\ 3000\ runs,\ [0-9]+\ new\ inputs,\ [1-9][0-9]*\ edges ]]
	for i in 1 2; do
		run -0 figures
		assert_output "$first"
	done
	# what it found is not kept: not in the seeds, nor in the corpus
	# an exploration (make fuzz) grows
	[ "$(ls build/fuzz/corpus/url fuzz/corpus/url | md5sum)" = "$before" ]
	[ -z "$(find build/fuzz -maxdepth 1 -name 'check-url.*')" ]
	grep -q 'FUZZ_CHECK_RUNS) $(STORE_SUITES)' Makefile
}

@test "a bad agent id is refused in the same words, with the rule, by every program and the store" {
	heart_setup
	why="invalid agent id '../x' (use 1 to 64 of A-Z a-z 0-9 _ . -, not starting with a dot)"
	run heart-cap take ../x
	assert_failure 64
	assert_output "heart-cap: $why"
	run heart-breaker check ../x
	assert_failure 64
	assert_output "heart-breaker: $why"
	run heart-ghost --outbox ../x
	assert_failure 64
	assert_output "heart-ghost: $why"
	run heart-wake --touch ../x
	assert_failure 64
	assert_output "heart-wake: $why"
	# the library says it too, below the programs' own check
	run -74 brk-probe ../x
	assert_output --partial "$why"
}
