# heart - a zero-token heartbeat for LLM agents.
#
#   make            build every program
#   make check      check that the tree holds only the project, install
#                   missing test dependencies, build, lint the
#                   man pages, run the bats suite (the cap and breaker
#                   suites twice: with files, then with a Redis store),
#                   all again under AddressSanitizer and
#                   UndefinedBehaviorSanitizer, and each fuzz target on
#                   its seeds and FUZZ_CHECK_RUNS inputs mutated from
#                   them from a fixed seed, the same on every machine
#                   and load, so that a change passes or fails for
#                   itself: CHECK_JOBS files at a time (t/check.sh)
#   make fuzz       explore: run each libFuzzer target in fuzz/ for
#                   FUZZ_SECONDS from a random seed, growing its corpus
#                   in build/fuzz/corpus/; what it finds is in
#                   build/fuzz/crash/, to add to fuzz/corpus/TARGET/
#                   once mended
#   make install    PREFIX, DESTDIR, BINDIR, MANDIR, SHAREDIR, UNITDIR:
#                   the programs, man pages, dashboard, contrib/ and
#                   the systemd units
#   make deb        install what the package build needs (deb-deps),
#                   build the Debian packages in build/deb/
#   make bench      install what the benchmarks need (bench-deps), run
#                   the benchmarks in bench/ and print their figures

# the toolkit's one version string; every program's --version says it
VERSION = 0.1.0

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
SHAREDIR ?= $(PREFIX)/share
UNITDIR ?= $(PREFIX)/lib/systemd/system
PKG_CONFIG ?= pkg-config

CC ?= cc
CFLAGS ?= -O2 -g
WFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror
SANFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
# The sanitized programs link the runtimes statically: one copy of the
# sanitizers' common part instead of one in each of libasan and
# libubsan, and so one stack depot, not two, for LeakSanitizer to scan
# as it looks for leaks at every exit (a sanitized heart-cap take
# costs a third less, with every report as before).
SANLDFLAGS = -static-libasan -static-libubsan
# and each maps its .bss at start (t/prefault.c: LeakSanitizer reads it
# all at exit, and a page fault a page costs more than the call)
SANOBJ = build/asan/prefault.o

# pkg-config names, per library
PC_CORE = yaml-0.1 jansson
# libcurl: headers only; llmsend.c loads the library with dlopen(3)
PC_CFLAGS = $(PC_CORE) libcurl hiredis
CORE_CFLAGS = $$($(PKG_CONFIG) --cflags $(PC_CFLAGS))
# and libm: the library rounds (floor in soulcheck.c, log2 in adapt.c), which
# an optimising build may inline and CFLAGS=-O0 does not
CORE_LIBS = $$($(PKG_CONFIG) --libs $(PC_CORE)) -lm
PC_MQTT = libmosquitto
MQTT_LIBS = $$($(PKG_CONFIG) --libs $(PC_MQTT))
# only the programs that open a store (redisstore_open) link hiredis
REDIS_LIBS = $$($(PKG_CONFIG) --libs hiredis)

PROGS = heart-cap heart-breaker heart-ghost heart-wake heart-pulse
TPROGS = soul-dump brk-probe hist-dump core-step
# The library is every lib/*.c: a file added to lib/ is built in.
LIBSRC = $(sort $(wildcard lib/*.c))
# lib/heart.h, the public header, is what the programs include;
# lib/heartint.h, the library's own, includes it and is included by
# every lib/*.c, and each wing's header (heartstore.h, heartwake.h,
# heartpulse.h, heartsoul.h) by the files that use it, and by the test drivers and
# fuzz targets that test that wing's insides.
PUBHDR = lib/heart.h
LIBHDR = lib/heart.h lib/heartint.h lib/heartstore.h lib/heartwake.h lib/heartsoul.h \
	lib/heartpulse.h
# lib/redis.h, the Redis store's own header (it includes hiredis), is
# included by its three files alone (REDISOBJ); a program's link takes
# their objects from libheart.a, and needs hiredis, only when it calls
# redisstore_open.
REDISOBJ = redisconn redisstore redisupgrade
MAN1 = man/heart-cap.1 man/heart-breaker.1 man/heart-ghost.1 \
	man/heart-wake.1 man/heart-pulse.1
MAN5 = man/heart-soul.5
MAN7 = man/heart.7

# Debian packages the build and the tests need (make deps)
DEB_BUILD = gcc make pkg-config libyaml-dev libjansson-dev \
	libcurl4-openssl-dev libmosquitto-dev libhiredis-dev
DEB_TEST = chromium bats bats-support bats-assert parallel jq faketime \
	libfaketime mandoc hyperfine python3 python3-yaml procps mosquitto \
	mosquitto-clients openssl time redis-server redis-tools shellcheck \
	clang libclang-rt-dev curl msmtp python3-aiosmtpd bash-builtins \
	strace
# and the benchmarks (make bench-deps): charts under bench/results/
DEB_BENCH = gnuplot-nox
# and the Debian package (make deb, and t/deb.bats, which also wants
# lintian and devscripts' hardening-check)
DEB_PKG = build-essential dpkg-dev debhelper lintian devscripts

# The suites run a second time against a Redis store (t/helpers.bash
# starts a redis-server per file when HEART_TEST_STORE=redis).
STORE_SUITES = t/heart-cap.bats t/heart-cap-days.bats t/heart-breaker.bats \
    t/heart-cap-pause.bats t/heart-wake-round.bats t/heart-wake-economy.bats \
    t/heart-wake-money.bats t/heart-wake-hold.bats t/heart-wake-dormant.bats \
    t/heart-wake-catchup.bats t/heart-wake-budget.bats t/heart-wake-why.bats

all: $(PROGS)

# Each program links only the libraries it uses (heart-cap and
# heart-breaker must never pay for libcurl or libmosquitto at start).
heart-cap_LIBS = $(CORE_LIBS) $(REDIS_LIBS)
heart-breaker_LIBS = $(CORE_LIBS) $(REDIS_LIBS)
heart-ghost_LIBS = $(CORE_LIBS)
heart-wake_LIBS = $(CORE_LIBS) $(REDIS_LIBS) -ldl
heart-pulse_LIBS = $(CORE_LIBS) $(MQTT_LIBS)
soul-dump_LIBS = $(CORE_LIBS)
brk-probe_LIBS = $(CORE_LIBS) $(REDIS_LIBS)
core-step_LIBS = $(CORE_LIBS)
hist-dump_LIBS = $(CORE_LIBS)

# lib/mqtt.c is in libheart.a, but a static archive lends a program only
# the objects it calls: only heart-pulse pulls mqtt.o and libmosquitto.
build/lib/%.o: lib/%.c $(LIBHDR)
	@mkdir -p build/lib
	$(CC) $(WFLAGS) $(CPPFLAGS) $(CFLAGS) $(CORE_CFLAGS) -c -o $@ $<

$(REDISOBJ:%=build/lib/%.o): lib/redis.h

build/libheart.a: $(LIBSRC:lib/%.c=build/lib/%.o)
	rm -f $@
	ar rcs $@ $^

# the version reaches the programs only: a new one relinks nothing else
VFLAGS = -DHEART_VERSION='"$(VERSION)"'

# cmd/prog.c: what every program says the same way
$(PROGS): %: cmd/%.c cmd/prog.c cmd/prog.h $(PUBHDR) build/libheart.a Makefile
	$(CC) $(WFLAGS) $(VFLAGS) $(CPPFLAGS) $(CFLAGS) $(CORE_CFLAGS) -Ilib -o $@ $< \
		cmd/prog.c build/libheart.a $($@_LIBS) $(LDFLAGS)

# Test helpers (t/*.c), normal and sanitized.
$(TPROGS:%=build/t/%): build/t/%: t/%.c $(LIBHDR) build/libheart.a
	@mkdir -p build/t
	$(CC) $(WFLAGS) $(CFLAGS) $(CORE_CFLAGS) -Ilib -o $@ $< \
		build/libheart.a $($(@F)_LIBS)

$(TPROGS:%=build/asan/t/%): build/asan/t/%: t/%.c $(LIBHDR) \
    build/asan/libheart.a $(SANOBJ) Makefile
	@mkdir -p build/asan/t
	$(CC) $(WFLAGS) $(SANFLAGS) $(SANLDFLAGS) $(CORE_CFLAGS) -Ilib -o $@ $< \
		$(SANOBJ) build/asan/libheart.a $($(@F)_LIBS)

# The same programs built with sanitizers, for the second test pass.
build/asan/lib/%.o: lib/%.c $(LIBHDR)
	@mkdir -p build/asan/lib
	$(CC) $(WFLAGS) $(SANFLAGS) $(CORE_CFLAGS) -c -o $@ $<

$(REDISOBJ:%=build/asan/lib/%.o): lib/redis.h

build/asan/libheart.a: $(LIBSRC:lib/%.c=build/asan/lib/%.o)
	rm -f $@
	ar rcs $@ $^

$(PROGS:%=build/asan/%): build/asan/%: cmd/%.c cmd/prog.c cmd/prog.h \
    $(PUBHDR) build/asan/libheart.a $(SANOBJ) Makefile
	$(CC) $(WFLAGS) $(VFLAGS) $(SANFLAGS) $(SANLDFLAGS) $(CORE_CFLAGS) \
		-Ilib -o $@ $< cmd/prog.c $(SANOBJ) build/asan/libheart.a \
		$($(@F)_LIBS)

$(SANOBJ): t/prefault.c Makefile
	@mkdir -p build/asan
	$(CC) $(WFLAGS) $(SANFLAGS) -c -o $@ t/prefault.c

asan: $(PROGS:%=build/asan/%) $(TPROGS:%=build/asan/t/%)

# libFuzzer targets, one per parser of outside bytes (fuzz/*.c), built
# with clang, ASan and UBSan over a third build of the library that
# libFuzzer can trace.  make fuzz runs each FUZZ_SECONDS (make -j2 fuzz
# two at once), exploring from a random seed; make check runs each on
# its seeds (fuzz/corpus/TARGET) and FUZZ_CHECK_RUNS inputs mutated
# from them, from libFuzzer's seed 1 and at fixed addresses: a count of
# runs, not of seconds, so that a run does the same work however loaded
# the machine (fuzz/run --check; a few seconds a target).
FUZZ_CC = clang
FUZZFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
FUZZ = soul dur jscan jdiff ghost llm state hist checklist mcp url cache judge
FUZZ_LIBS = $(CORE_LIBS) $(REDIS_LIBS) $(MQTT_LIBS) -ldl
FUZZ_SECONDS ?= 60
FUZZ_CHECK_RUNS ?= 5000

build/fuzz/lib/%.o: lib/%.c $(LIBHDR) | deps
	@mkdir -p build/fuzz/lib
	$(FUZZ_CC) $(WFLAGS) $(FUZZFLAGS) -fsanitize=fuzzer-no-link \
		$(CORE_CFLAGS) -c -o $@ $<

$(REDISOBJ:%=build/fuzz/lib/%.o): lib/redis.h

build/fuzz/libheart.a: $(LIBSRC:lib/%.c=build/fuzz/lib/%.o)
	rm -f $@
	ar rcs $@ $^

$(FUZZ:%=build/fuzz/%): build/fuzz/%: fuzz/%.c fuzz/fuzz.c fuzz/fuzz.h \
    $(LIBHDR) build/fuzz/libheart.a
	$(FUZZ_CC) $(WFLAGS) $(FUZZFLAGS) -fsanitize=fuzzer $(CORE_CFLAGS) \
		-Ilib -o $@ $< fuzz/fuzz.c build/fuzz/libheart.a $(FUZZ_LIBS)

fuzz-build: $(FUZZ:%=build/fuzz/%)

fuzz: $(FUZZ:%=fuzz-%)

$(FUZZ:%=fuzz-%): fuzz-%: build/fuzz/%
	@sh fuzz/run $* $(FUZZ_SECONDS)

tprogs: $(TPROGS:%=build/t/%)

deps:
	@sh t/deps.sh $(DEB_BUILD) $(DEB_TEST) $(DEB_PKG)
	@command -v npm >/dev/null 2>&1 || sh t/deps.sh nodejs npm

# The Mizpah dashboard: the page, and the mqtt package's browser bundle
# from npm (pinned in package-lock.json), gathered in build/mizpah.  The
# same npm ci installs the MCP servers t/mcp.bats and bench/mcp.sh run
# (@modelcontextprotocol/server-everything and server-filesystem), and
# the one make demo runs for the example soul notes_keeper.
MIZPAH = share/heartbeat/mizpah/index.html share/heartbeat/mizpah/mizpah.css \
	share/heartbeat/mizpah/mizpah.js

node_modules/.package-lock.json: package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "heart: the dashboard's" \
	    "MQTT client and the tests' MCP servers come from npm: install" \
	    "npm (make deps does)" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error

build/mizpah/mqtt.min.js: $(MIZPAH) node_modules/.package-lock.json
	@mkdir -p build/mizpah
	cp $(MIZPAH) node_modules/mqtt/dist/mqtt.min.js build/mizpah/

mizpah: build/mizpah/mqtt.min.js

# A live heartbeat of the example fleet on this machine (see README):
# make demo [KEEP=1] [ROUNDS=n].  make mizpah's npm ci installs
# notes_keeper's MCP server too.
demo: deps
	@$(MAKE) --no-print-directory all mizpah
	@KEEP=$(KEEP) ROUNDS=$(ROUNDS) bash contrib/demo.sh

KEEP ?= 0
ROUNDS ?= 3

# Serve the dashboard on a loopback port: make dashboard [PORT=8080]
PORT ?= 8080
dashboard: mizpah
	@echo "Mizpah: http://127.0.0.1:$(PORT)/?broker=ws://127.0.0.1:9001&username=mizpah&password=..."
	python3 -m http.server --bind 127.0.0.1 --directory build/mizpah $(PORT)

bench-deps:
	@sh t/deps.sh $(DEB_BUILD) $(DEB_TEST) $(DEB_BENCH)

lint: $(MAN1) $(MAN5) $(MAN7)
	mandoc -Tlint -Wwarning $(MAN1) $(MAN5) $(MAN7)

# The tree holds only the project: no tracked symbolic link out of it,
# no tracked pid file, perf recording or core dump (t/tree-check.sh).
tree-check:
	@sh t/tree-check.sh

# make check runs the passes as one pool of jobs (t/check.sh): a bats
# file of one pass, or a fuzz target, is a job; CHECK_JOBS at a time
# (two a CPU: a job keeps about half a CPU busy, its tests waiting for
# servers, timers and children; three a CPU was no faster, its
# processes slower for the load).  BATSFLAGS go to bats.
CHECK_JOBS ?= $(shell echo $$((2 * $$(nproc 2>/dev/null || echo 1))))

check: tree-check
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(CHECK_JOBS) all tprogs asan mizpah \
		fuzz-build
	@$(MAKE) --no-print-directory lint
	@BATSFLAGS="$(BATSFLAGS)" bash t/check.sh $(CHECK_JOBS) \
		$(FUZZ_CHECK_RUNS) $(STORE_SUITES) -- $(FUZZ)

# the lines the store suites reach over Redis and not over files or in
# heart-redis.bats: none, or the sanitized pass would miss them
# (t/check.sh runs no sanitized Redis pass); and the lines the long
# simulations reach and the sanitized pass's tests do not: none, or
# that pass would miss them (it skips those, t/helpers.bash plain_long).
# t/cover.sh.
cover-redis: deps node_modules/.package-lock.json
	@bash t/cover.sh redis $(STORE_SUITES)

cover-asan: deps node_modules/.package-lock.json
	@bash t/cover.sh asan

bench: bench-deps all node_modules/.package-lock.json
	@for b in bench/*.sh; do bash "$$b" || exit 1; done

# The units and the crontab name /usr/local/bin and /usr/local/share:
# installed, they name BINDIR and SHAREDIR; and heart-round, the
# programs in BINDIR (its bin=, empty in the tree: PATH's).  None relies
# on PATH to find heart's programs.
UNITS = contrib/systemd/heart-pulse.service \
	contrib/systemd/heart-wake.service contrib/systemd/heart-wake.timer \
	contrib/systemd/heart-wake@.service contrib/systemd/heart-wake@.timer
# the delivery recipes (contrib/deliver/README)
DELIVER = webhook ntfy slack telegram discord mail
RELOCATE = sed -e 's|/usr/local/bin|$(BINDIR)|g' \
	-e 's|/usr/local/share|$(SHAREDIR)|g'

install: all mizpah
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(SHAREDIR)/heartbeat/souls \
		$(DESTDIR)$(SHAREDIR)/heartbeat/tools \
		$(DESTDIR)$(SHAREDIR)/heartbeat/gates \
		$(DESTDIR)$(SHAREDIR)/heartbeat/mizpah $(DESTDIR)$(UNITDIR)
	install -m 755 $(PROGS) $(DESTDIR)$(BINDIR)
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5
	install -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7
	install -m 644 share/heartbeat/souls/* \
		$(DESTDIR)$(SHAREDIR)/heartbeat/souls
	install -m 755 share/heartbeat/tools/price \
		$(DESTDIR)$(SHAREDIR)/heartbeat/tools
	install -m 644 share/heartbeat/tools/prices.tsv \
		$(DESTDIR)$(SHAREDIR)/heartbeat/tools
	install -m 755 share/heartbeat/gates/changed-files \
		share/heartbeat/gates/changed-output \
		$(DESTDIR)$(SHAREDIR)/heartbeat/gates
	install -m 644 $(MIZPAH) build/mizpah/mqtt.min.js \
		$(DESTDIR)$(SHAREDIR)/heartbeat/mizpah
	for d in . cron k8s fleet mosquitto deliver; do \
		install -d $(DESTDIR)$(SHAREDIR)/heartbeat/contrib/$$d || exit 1; \
	done
	sed -e "s|^bin=\$$|bin='$(BINDIR)'|" contrib/heart-round \
		> $(DESTDIR)$(SHAREDIR)/heartbeat/contrib/heart-round
	chmod 755 $(DESTDIR)$(SHAREDIR)/heartbeat/contrib/heart-round
	install -m 644 contrib/README contrib/heart.env \
		$(DESTDIR)$(SHAREDIR)/heartbeat/contrib
	install -m 755 $(DELIVER:%=contrib/deliver/%) \
		$(DESTDIR)$(SHAREDIR)/heartbeat/contrib/deliver
	install -m 644 contrib/deliver/lib.sh contrib/deliver/README \
		$(DESTDIR)$(SHAREDIR)/heartbeat/contrib/deliver
	for f in k8s/heart-cronjob.yaml fleet/README fleet/redis.conf \
	    mosquitto/heart.conf mosquitto/heart.acl; do \
		install -m 644 contrib/$$f \
		    $(DESTDIR)$(SHAREDIR)/heartbeat/contrib/$$f || exit 1; \
	done
	$(RELOCATE) contrib/cron/heart.cron \
		> $(DESTDIR)$(SHAREDIR)/heartbeat/contrib/cron/heart.cron
	chmod 644 $(DESTDIR)$(SHAREDIR)/heartbeat/contrib/cron/heart.cron
	for u in $(UNITS); do \
		$(RELOCATE) $$u > $(DESTDIR)$(UNITDIR)/$${u##*/} && \
		chmod 644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; \
	done

# The Debian packages (debian/), built from a copy of the tree in
# DEBDIR/heart with the dashboard's MQTT client as npm ci took it from
# the lockfile (make mizpah): the package build never reaches a
# registry, and an installation never fetches anything.  What was set
# on this make's command line (CFLAGS=...) stays out of the package
# build: dpkg-buildflags decides there.
DEBDIR = build/deb

deb-deps:
	@sh t/deps.sh $(DEB_BUILD) $(DEB_PKG)
	@command -v npm >/dev/null 2>&1 || sh t/deps.sh nodejs npm

deb: deb-deps
	@$(MAKE) --no-print-directory mizpah
	rm -rf $(DEBDIR)
	mkdir -p $(DEBDIR)/heart/node_modules/mqtt/dist
	tar -cf - --exclude=./build --exclude=./node_modules --exclude=./.git \
		--exclude=./bench/out . | tar -xf - -C $(DEBDIR)/heart
	cp -p node_modules/.package-lock.json $(DEBDIR)/heart/node_modules/
	cp -p node_modules/mqtt/package.json node_modules/mqtt/LICENSE.md \
		$(DEBDIR)/heart/node_modules/mqtt/
	cp -p node_modules/mqtt/dist/mqtt.min.js \
		$(DEBDIR)/heart/node_modules/mqtt/dist/
	cd $(DEBDIR)/heart && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -us -uc -b
	@ls -l $(DEBDIR)/*.deb

clean:
	rm -rf build $(PROGS)

.PHONY: demo mizpah dashboard all tprogs asan fuzz-build fuzz cover-redis \
	cover-asan $(FUZZ:%=fuzz-%) deps bench-deps lint check tree-check \
	bench install deb deb-deps clean
