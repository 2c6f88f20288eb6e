#!/usr/bin/env bats
# The Debian packages (debian/, make deb) as an operator meets them:
# built from the tree, linted, their files listed, installed with apt on
# this machine, looked at, and purged; and make install, the route for
# other systems.  The packages are built once, in setup_file, and only
# in the plain pass: they are made from the tree, whatever HEART_BIN
# says.  Installing needs root, and is never done over an installation
# of heart this test did not make.

load helpers
bats_require_minimum_version 1.5.0

TOP=$T/..
DEB=$BATS_FILE_TMPDIR/deb
PROGS="heart-breaker heart-cap heart-ghost heart-pulse heart-wake"
UNITS="heart-pulse.service heart-wake.service heart-wake.timer
	heart-wake@.service heart-wake@.timer"

setup_file() {
	# the tests share one installation, in order
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	local why=
	if [ -n "${HEART_SANITIZED:-}" ]; then
		why="the package is built from the tree: once, in the plain pass"
	elif ! command -v dpkg-buildpackage >/dev/null; then
		why="no dpkg-buildpackage: not a Debian machine"
	elif ! command -v dh >/dev/null || ! command -v lintian >/dev/null ||
	    ! command -v hardening-check >/dev/null; then
		why="debhelper, lintian or devscripts missing: make deb-deps installs them"
	fi
	if [ -n "$why" ]; then
		echo "$why" > "$BATS_FILE_TMPDIR/skip"
		return 0
	fi
	rc=0
	make -C "$TOP" --no-print-directory deb DEBDIR="$DEB" \
		> "$BATS_FILE_TMPDIR/build.log" 2>&1 || rc=$?
	echo "$rc" > "$BATS_FILE_TMPDIR/build.rc"
}

teardown_file() {
	[ -e "$BATS_FILE_TMPDIR/installed" ] &&
		apt_get purge heart heart-mizpah >/dev/null 2>&1
	rm -f /etc/heart/souls/mine.yaml
	[ -e "$BATS_FILE_TMPDIR/etc-made" ] &&
		rmdir /etc/heart/souls /etc/heart 2>/dev/null
	[ -e "$BATS_FILE_TMPDIR/user-made" ] &&
		deluser --system --quiet heart >/dev/null 2>&1
	return 0
}

apt_get() {
	DEBIAN_FRONTEND=noninteractive apt-get -y -q \
		-o DPkg::Lock::Timeout=120 "$@"
}

# built: skip unless the packages could be built here
built() {
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	[ "$(cat "$BATS_FILE_TMPDIR/build.rc")" = 0 ] ||
		skip "make deb failed: see the first test"
}

# installed: skip unless this test installed the packages
installed() {
	built
	[ -e "$BATS_FILE_TMPDIR/installed" ] ||
		skip "the packages are not installed: see the install test"
}

arch() { dpkg --print-architecture; }

@test "make deb builds heart and heart-mizpah, every program with dpkg-buildflags' hardening" {
	[ ! -e "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	run cat "$BATS_FILE_TMPDIR/build.rc"
	[ "$output" = 0 ] || { tail -n 40 "$BATS_FILE_TMPDIR/build.log"; false; }
	[ -f "$DEB/heart_0.1.0_$(arch).deb" ]
	[ -f "$DEB/heart-mizpah_0.1.0_all.deb" ]
	# what dpkg-buildflags said reached the compiler and the linker
	grep -q -- '-D_FORTIFY_SOURCE=2 .*-fstack-protector-strong' "$BATS_FILE_TMPDIR/build.log"
	grep -q -- '-Wl,-z,relro -Wl,-z,now' "$BATS_FILE_TMPDIR/build.log"
	x=$BATS_TEST_TMPDIR/x
	dpkg-deb -x "$DEB/heart_0.1.0_$(arch).deb" "$x"
	# control-flow protection: no Debian 12 program has it (glibc's
	# start files lack the marks); every other check must pass
	for p in $PROGS; do
		run hardening-check --nocfprotection "$x/usr/bin/$p"
		assert_success
		assert_output --partial "Immediate binding: yes"
	done
	# and the same check fails a program built without those flags
	printf 'int main(void) { return 0; }\n' > "$BATS_TEST_TMPDIR/plain.c"
	cc -O2 -o "$BATS_TEST_TMPDIR/plain" "$BATS_TEST_TMPDIR/plain.c"
	run hardening-check --nocfprotection "$BATS_TEST_TMPDIR/plain"
	assert_failure
}

@test "lintian finds no error and no warning in the packages, and does in a broken one" {
	built
	b=$BATS_TEST_TMPDIR/bad
	mkdir -p "$b/DEBIAN" "$b/usr/bin"
	printf 'Package: bad\nVersion: 1\nArchitecture: all\nMaintainer: Nobody <nobody@example.org>\nDescription: bad\n' \
		> "$b/DEBIAN/control"
	printf '#!/bin/sh\n' > "$b/usr/bin/bad"
	chmod 755 "$b/usr/bin/bad"
	dpkg-deb --root-owner-group -b "$b" "$BATS_TEST_TMPDIR/bad.deb" >/dev/null
	# one lintian for both (it takes seconds to start): it fails, for
	# the broken one alone
	run lintian --fail-on error,warning "$DEB/heart_0.1.0_$(arch).changes" \
	    "$BATS_TEST_TMPDIR/bad.deb"
	echo "$output"
	assert_failure
	assert_output --regexp $'(^|\n)E: bad: '
	run grep -Ev '^[EW]: bad[: ]' <<< "$output"
	refute_output --regexp $'(^|\n)[EW]: '
}

@test "the packages hold the programs, pages, units, conffile and dashboard, every file dated from debian/changelog" {
	built
	run dpkg-deb -c "$DEB/heart_0.1.0_$(arch).deb"
	echo "$output"
	for p in $PROGS; do
		assert_output --regexp -- "-rwxr-xr-x root/root .* \./usr/bin/$p"$'(\n|$)'
		assert_output --partial "./usr/share/man/man1/$p.1.gz"
	done
	assert_output --partial ./usr/share/man/man5/heart-soul.5.gz
	assert_output --partial ./usr/share/man/man7/heart.7.gz
	for u in $UNITS; do
		assert_output --partial "./lib/systemd/system/$u"
	done
	assert_output --regexp -- '-rw------- root/root .* \./etc/heart/heart\.env'
	assert_output --partial ./etc/heart/souls/
	assert_output --partial ./usr/share/doc/heart/README.Debian
	assert_output --partial ./usr/share/heartbeat/contrib/heart-round
	assert_output --partial ./usr/share/heartbeat/contrib/mosquitto/heart.conf
	assert_output --partial ./usr/share/heartbeat/contrib/mosquitto/heart.acl
	for r in webhook ntfy slack telegram discord mail; do
		assert_output --regexp -- "-rwxr-xr-x root/root .* \./usr/share/heartbeat/contrib/deliver/$r"$'(\n|$)'
	done
	assert_output --partial ./usr/share/heartbeat/contrib/deliver/lib.sh
	for g in changed-files changed-output; do
		assert_output --regexp -- "-rwxr-xr-x root/root .* \./usr/share/heartbeat/gates/$g"$'(\n|$)'
	done
	refute_output --partial mizpah/
	run sh -c "dpkg-deb --ctrl-tarfile '$DEB/heart_0.1.0_$(arch).deb' | tar -xOf - ./conffiles"
	assert_output /etc/heart/heart.env
	# the dashboard, with npm's pinned MQTT client byte for byte
	x=$BATS_TEST_TMPDIR/x
	dpkg-deb -x "$DEB/heart-mizpah_0.1.0_all.deb" "$x"
	for f in index.html mizpah.css mizpah.js mqtt.min.js; do
		[ -f "$x/usr/share/heartbeat/mizpah/$f" ]
	done
	cmp "$x/usr/share/heartbeat/mizpah/mqtt.min.js" \
		"$TOP/node_modules/mqtt/dist/mqtt.min.js"
	# the units name the installed programs
	dpkg-deb -x "$DEB/heart_0.1.0_$(arch).deb" "$x"
	grep -qx 'ExecStart=/usr/bin/heart-pulse --souls /etc/heart/souls --username heart-pulse-%H' \
		"$x/lib/systemd/system/heart-pulse.service"
	grep -q '^ExecStart=/usr/share/heartbeat/contrib/heart-round /etc/heart/souls ' \
		"$x/lib/systemd/system/heart-wake.service"
	grep -q '/usr/bin/heart-wake --soul "$$soul" |' "$x/lib/systemd/system/heart-wake@.service"
	grep -q '/usr/bin/heart-ghost $$GHOST_OPTS' "$x/lib/systemd/system/heart-wake@.service"
	# and so do heart-round and the crontab, whatever PATH holds
	grep -qx "bin='/usr/bin'" "$x/usr/share/heartbeat/contrib/heart-round"
	grep -q ' /usr/bin/heart-cap status --prom ' "$x/usr/share/heartbeat/contrib/cron/heart.cron"
	run grep -rl /usr/local "$x/lib/systemd/system"
	assert_output ""
	# reproducible: every member dated from the changelog (not from the
	# checkout or the build), no build path in the programs
	when=$(TZ=UTC date -d "@$(dpkg-parsechangelog -l "$TOP/debian/changelog" -S Timestamp)" \
		'+%Y-%m-%d %H:%M:%S')
	for d in "$DEB"/*.deb; do
		run sh -c "dpkg-deb --fsys-tarfile '$d' | TZ=UTC tar -tvf - --full-time |
			awk '{ print \$4, \$5 }' | sort -u"
		assert_output "$when"
	done
	run grep -rl "$DEB" "$x/usr/bin"
	assert_output ""
}

@test "apt installs them: the user heart, /var/lib/heart 0700, heart.env 0600 heart's and a conffile, the units enabled" {
	built
	[ "$(id -u)" -eq 0 ] || skip "installing a package needs root"
	! dpkg -s heart >/dev/null 2>&1 ||
		skip "heart is installed on this machine: this test leaves it alone"
	[ ! -e /etc/heart ] ||
		skip "/etc/heart exists (heart set up by hand?): this test leaves it alone"
	touch "$BATS_FILE_TMPDIR/etc-made"
	getent passwd heart >/dev/null || touch "$BATS_FILE_TMPDIR/user-made"
	run apt_get install --no-install-recommends \
		"$DEB/heart_0.1.0_$(arch).deb" "$DEB/heart-mizpah_0.1.0_all.deb"
	echo "$output"
	touch "$BATS_FILE_TMPDIR/installed"
	assert_success
	# a system user and group, no shell, its home the state directory
	run getent passwd heart
	IFS=: read -r _ _ uid gid _ home shell <<< "$output"
	[ "$uid" -lt 1000 ]
	[ "$home" = /var/lib/heart ]
	[ "$shell" = /usr/sbin/nologin ]
	run getent group heart
	[[ $output == heart:*:$gid:* ]]
	run stat -c '%a %U %G' /var/lib/heart /etc/heart /etc/heart/souls /etc/heart/heart.env
	assert_output "$(printf '700 heart heart\n755 root root\n755 root root\n600 heart heart')"
	run ls -A /etc/heart/souls
	assert_output ""
	run dpkg-query -W -f '${Conffiles}\n' heart
	assert_output --regexp '^ /etc/heart/heart\.env [0-9a-f]{32}'
	run dpkg-statoverride --list /etc/heart/heart.env
	assert_output "heart heart 600 /etc/heart/heart.env"
	# every line of heart.env a comment: nothing set until the operator does
	run grep -v -e '^#' -e '^$' /etc/heart/heart.env
	assert_output ""
	# enabled, and waiting for a soul
	[ -L /etc/systemd/system/multi-user.target.wants/heart-pulse.service ]
	[ -L /etc/systemd/system/timers.target.wants/heart-wake.timer ]
	for u in heart-pulse.service heart-wake.service heart-wake.timer; do
		grep -qx 'ConditionDirectoryNotEmpty=/etc/heart/souls' "/lib/systemd/system/$u"
	done
	[ -f /usr/share/heartbeat/mizpah/mqtt.min.js ]
}

@test "the installed units pass systemd-analyze verify" {
	installed
	printf '[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n' \
		> "$BATS_TEST_TMPDIR/probe.service"
	systemd-analyze verify "$BATS_TEST_TMPDIR/probe.service" >/dev/null 2>&1 ||
		skip "systemd-analyze verify does not work on this machine"
	cd /lib/systemd/system
	run systemd-analyze verify heart-pulse.service heart-wake.service \
		heart-wake.timer heart-wake@scout.service heart-wake@scout.timer
	assert_success
	assert_output ""
}

@test "heart-cap runs as heart on /var/lib/heart, and heart.env is heart's to read, nobody else's" {
	installed
	as_heart() {
		runuser -u heart -- env HEART_STATE_DIR=/var/lib/heart "$@"
	}
	run as_heart /usr/bin/heart-cap take --cap 2 \
		--soul /usr/share/heartbeat/souls/travel_rescue.yaml
	assert_success
	run as_heart /usr/bin/heart-cap status travel_rescue --json
	assert_success
	[ "$(echo "$output" | jq -c '[.agent, .chambers.schedule.used]')" = '["travel_rescue",1]' ]
	run stat -c '%U %G' /var/lib/heart/agents/travel_rescue/cap.json
	assert_output "heart heart"
	run runuser -u heart -- head -n 1 /etc/heart/heart.env
	assert_success
	run runuser -u nobody -- head -n 1 /etc/heart/heart.env
	assert_failure
	run runuser -u nobody -- ls /var/lib/heart
	assert_failure
}

@test "apt purge leaves only what Debian keeps: the user heart and the souls you added" {
	installed
	printf 'heart: { schedule: { interval: 1m } }\n' > /etc/heart/souls/mine.yaml
	run apt_get purge heart heart-mizpah
	echo "$output"
	assert_success
	rm "$BATS_FILE_TMPDIR/installed"
	run dpkg -s heart
	assert_failure
	[ ! -e /var/lib/heart ]
	run find /etc/heart
	assert_output "$(printf '/etc/heart\n/etc/heart/souls\n/etc/heart/souls/mine.yaml')"
	run dpkg-statoverride --list /etc/heart/heart.env
	assert_failure
	run find /etc/systemd /lib/systemd/system /var/lib/systemd -name '*heart*'
	assert_output ""
	for p in $PROGS; do
		[ ! -e "/usr/bin/$p" ]
	done
	[ ! -e /usr/share/heartbeat ]
	[ ! -e /usr/share/doc/heart ]
	[ ! -e /usr/share/doc/heart-mizpah ]
	# system users stay: files they own may be left elsewhere
	getent passwd heart >/dev/null
}

@test "make install puts the programs, pages, dashboard with mqtt.min.js, units and broker config under DESTDIR, naming BINDIR and SHAREDIR" {
	[ -f "$TOP/build/mizpah/mqtt.min.js" ] ||
		skip "build/mizpah missing: run make mizpah"
	d=$BATS_TEST_TMPDIR/root
	run make -C "$TOP" --no-print-directory install DESTDIR="$d" PREFIX=/opt/heart
	assert_success
	o=$d/opt/heart
	for p in $PROGS; do
		[ -x "$o/bin/$p" ]
		[ -f "$o/share/man/man1/$p.1" ]
	done
	cmp "$o/share/heartbeat/mizpah/mqtt.min.js" "$TOP/build/mizpah/mqtt.min.js"
	for u in $UNITS; do
		[ -f "$o/lib/systemd/system/$u" ]
	done
	grep -q '^ExecStart=/opt/heart/bin/heart-pulse ' "$o/lib/systemd/system/heart-pulse.service"
	grep -q '^ExecStart=/opt/heart/share/heartbeat/contrib/heart-round ' \
		"$o/lib/systemd/system/heart-wake.service"
	grep -q ' /opt/heart/share/heartbeat/contrib/heart-round /etc/heart/souls$' \
		"$o/share/heartbeat/contrib/cron/heart.cron"
	run grep -rl /usr/local "$o/lib/systemd/system" "$o/share/heartbeat/contrib/cron"
	assert_output ""
	for f in mosquitto/heart.conf mosquitto/heart.acl heart.env heart-round \
	    deliver/lib.sh deliver/README; do
		[ -f "$o/share/heartbeat/contrib/$f" ]
	done
	for r in webhook ntfy slack telegram discord mail; do
		[ -x "$o/share/heartbeat/contrib/deliver/$r" ]
	done
	for g in changed-files changed-output; do
		[ -x "$o/share/heartbeat/gates/$g" ]
	done
	[ -f "$o/share/heartbeat/souls/page_watch.yaml" ]
	[ ! -e "$d/etc" ]
}
