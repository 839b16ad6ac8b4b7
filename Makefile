# Latchkey — the two commands a fresh Debian machine needs are `make demo` and `make test`;
# `make deb` builds the Debian package (README "Install").
SWIFT     ?= swift
PREFIX    ?= /usr/local
CONFIG    ?= debug
# git: sync over git remotes runs it (run time) and its tests start real repositories and git daemon.
# pass, keepassxc, gnupg: import's tests export from the real tools. debootstrap and man-db:
# make test-deb installs the package into a fresh Debian 12 and reads its page. xvfb, xclip: the
# --clip tests copy to and read from a real (virtual) X display.
# libsystemd-dev: sd-bus, which latchkey-secret-service links. dbus, libsecret-tools,
# python3-secretstorage, python3-keyring, libsecret-1-dev (to build git-credential-libsecret) and
# gnome-keyring (the reference): the Secret Service tests run real clients on a private bus.
APT_DEPS  := libssl-dev libarchive-dev pkg-config libzstd-dev zlib1g-dev strace git pass keepassxc gnupg \
             debootstrap man-db xvfb xclip libsystemd-dev dbus libsecret-tools python3-secretstorage \
             python3-keyring libsecret-1-dev gnome-keyring
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# SCRATCH=.build-x builds in another scratch directory (parallel work trees); DESTDIR stages an install.
SCRATCH   ?=
SPM_FLAGS := $(if $(SCRATCH),--scratch-path $(SCRATCH))
# The released `latchkey` is one static-PIE executable: the Swift runtime, FoundationEssentials,
# libcrypto, libarchive (with zlib and zstd, from libzstd-dev and zlib1g-dev), libstdc++ and glibc
# are linked in, so it starts without the dynamic loader, in about twice the time of /bin/true
# (docs/RESULTS.md, 0.3.0 "Start-up"; `make bench-startup`). The price: an OpenSSL or libarchive fix reaches it
# only through a rebuild. LINK=shared links only the Swift runtime statically and keeps the
# system's libraries shared (then it starts in about 5 ms).
LINK      ?= static
ifeq ($(LINK),shared)
STATIC    := --static-swift-stdlib
else
STATIC    := --disable-local-rpath -Xswiftc -static-executable -Xswiftc -use-ld=lld -Xswiftc -Xclang-linker -Xswiftc -static-pie \
             -Xlinker -lzstd -Xlinker -lz
endif
DESTDIR   ?=
# SECRET_SERVICE=no: `make install` leaves out latchkey-secret-service (make deb does).
SECRET_SERVICE ?= yes
# The systemd user units of dist/systemd/ (@BINDIR@ replaced): the agent, and the daily backup
# with its timer. zsh's completions go where PREFIX's zsh looks (Debian's own zsh:
# share/zsh/vendor-completions, which `make deb` uses).
SYSTEMD_UNITS := latchkey-agent.service latchkey-backup.service latchkey-backup.timer
UNIT      ?= latchkey-agent.service
ZSH_COMPLETION_DIR ?= share/zsh/site-functions

.PHONY: bench-sync bench-secret-service sync-soak deps build release test c-warnings check-consumer docs demo install install-systemd install-secret-service uninstall systemd-unit deb test-deb fixtures bench bench-peers bench-scale bench-lib bench-startup check-lean clean format format-check generate

## deps: install the system libraries that are missing (apt-get only for what is absent)
deps:
	@missing=""; for p in $(APT_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "make deps: no 'swift' on PATH; install the Swift 6 toolchain from swift.org"; exit 1; }

build: deps
	$(SWIFT) build -c $(CONFIG) $(SPM_FLAGS)

release: deps
	$(SWIFT) build -c release --product latchkey $(STATIC) $(SPM_FLAGS)

# The suite runs without the caller's LATCHKEY_* variables and with a runtime directory of its
# own, so it never reaches a keychain or an agent the user has (the default agent socket is
# under XDG_RUNTIME_DIR, else /tmp/latchkey-<uid>).
TEST_ENV  := env $(foreach v,$(filter LATCHKEY_%,$(.VARIABLES)),-u $(v))

## test: the whole suite (unit, conformance over fixtures/, crash and damage, CLI), the C
## warnings, and a package that depends on this one by version (check-consumer)
test: deps c-warnings
	$(SWIFT) build --build-tests
	@run="$$(mktemp -d "$${TMPDIR:-/tmp}/latchkey-test-run.XXXXXX")"; trap 'rm -rf "$$run"' EXIT; \
	  echo "$(TEST_ENV) XDG_RUNTIME_DIR=$$run $(SWIFT) test --skip-build"; \
	  $(TEST_ENV) XDG_RUNTIME_DIR="$$run" $(SWIFT) test --skip-build
	SWIFT=$(SWIFT) ./scripts/check-consumer.sh

## bench-sync: what `latchkey sync` costs at SYNC_SIZES items (default "100 100000"), side by side
## with `pass git push` / `pass git pull` of one change when pass is installed (docs/RESULTS.md)
bench-sync: deps
	./scripts/bench-sync.sh

## bench-secret-service: secret-tool lookup against Latchkey and gnome-keyring side by side,
## SearchItems at SS_SIZES items (default "100 100000"), git credential fill (docs/RESULTS.md)
bench-secret-service: deps
	$(SWIFT) build --product latchkey
	$(SWIFT) build --product latchkey-secret-service
	./scripts/bench-secret-service.sh

## sync-soak: the randomized convergence test with more operations (LK_SYNC_OPS, default 1000)
sync-soak: deps
	$(SWIFT) build --build-tests
	LK_SYNC_OPS=$${LK_SYNC_OPS:-1000} $(SWIFT) test --skip-build --filter ConvergenceTests/randomOperationsConverge

## format: lay out the Swift sources as .swift-format says (swift-format, which ships with the
## Swift 6 toolchain); format-check fails on any file it would change, and CI runs it
FORMAT_PATHS := Package.swift Sources Tests tools Benchmarks Plugins Fuzz
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

format-check:
	@$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS) || \
	  { echo "make format-check: the files above are not laid out as .swift-format says; run 'make format'"; exit 1; }

## generate: make again the sources and docs made from AttributeSchema (AttributeKey's
## constants, the kSecAttr attribute keys, docs/CLI.md's attribute table): their tests write
## what they would otherwise compare. Run it after changing a row; commit what it changes.
generate: deps
	$(SWIFT) build --build-tests
	$(TEST_ENV) LATCHKEY_GENERATE=1 $(SWIFT) test --skip-build --filter 'GeneratedSourcesTests|AttributeTableTests'

## c-warnings: the C sources with -Wall -Wextra -Werror. Such flags live here, not in
## Package.swift: SwiftPM refuses unsafeFlags in a package used as a dependency by version.
c-warnings: deps
	$(CC) -fsyntax-only -Wall -Wextra -Werror -ISources/CLatchkeyCrypto/include \
	  $$(pkg-config --cflags libcrypto) Sources/CLatchkeyCrypto/*.c

## check-consumer: build and run the README's "Use it from Swift" program in a new package that
## depends on a tagged copy of this work tree by version through a file:// URL (offline, about
## a minute; scripts/check-consumer.sh)
check-consumer: deps
	SWIFT=$(SWIFT) ./scripts/check-consumer.sh

## docs: the DocC documentation of both libraries, from their public API's symbol graphs:
## Latchkey (Sources/Latchkey/Latchkey.docc: getting started, using it in a package) and
## LatchkeySecurity (Sources/LatchkeySecurity/LatchkeySecurity.docc: porting code from iOS), into
## .build-docs/<module>.doccarchive; a broken symbol link or an undocumented parameter fails it
## (docc ships with the Swift toolchain). Built in its own scratch directory, so the symbol-graph
## flags never invalidate .build. Building LatchkeySecurity builds Latchkey and emits both graphs;
## each catalog gets only its module's own graph (extensions of other modules' types are not
## part of its API).
DOCS_MODULES := Latchkey LatchkeySecurity
docs: deps
	$(SWIFT) build --target LatchkeySecurity --scratch-path .build-docs \
	  -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc $(CURDIR)/.build-docs/symbol-graphs
	@set -e; for m in $(DOCS_MODULES); do \
	  rm -rf .build-docs/graphs/$$m && mkdir -p .build-docs/graphs/$$m; \
	  cp .build-docs/symbol-graphs/$$m.symbols.json .build-docs/graphs/$$m/; \
	  echo "docc convert Sources/$$m/$$m.docc"; \
	  docc convert Sources/$$m/$$m.docc --additional-symbol-graph-dir .build-docs/graphs/$$m \
	    --fallback-display-name $$m --fallback-bundle-identifier org.latchkey.$$m \
	    --warnings-as-errors --output-path .build-docs/$$m.doccarchive; \
	done
	@echo "make docs: .build-docs/Latchkey.doccarchive and .build-docs/LatchkeySecurity.doccarchive (docc preview Sources/<module>/<module>.docc … to browse)"

## demo: build, then run the main job end to end in a temporary directory
demo: deps
	$(SWIFT) build -c release --product latchkey $(STATIC) $(SPM_FLAGS)
	LATCHKEY_BIN="$$($(SWIFT) build -c release $(SPM_FLAGS) --show-bin-path)/latchkey" ./scripts/demo.sh

## install: latchkey, latchkey(1), bash/zsh/fish completions, the systemd user units (the agent,
## the daily backup and its timer) and an example of the backup's settings under
## $(DESTDIR)$(PREFIX) (the man page and completions are generated from the command definitions
## of this build; the units are dist/systemd/'s for this PREFIX). `make deb` packages exactly this.
install: release install-systemd $(if $(filter yes,$(SECRET_SERVICE)),install-secret-service)
	@set -e; \
	bin="$$($(SWIFT) build -c release $(SPM_FLAGS) --show-bin-path)/latchkey"; \
	root="$(DESTDIR)$(PREFIX)"; gen="$$(mktemp -d)"; trap 'rm -rf "$$gen"' EXIT; \
	"$$bin" generate-manual > "$$gen/latchkey.1"; \
	for sh in bash zsh fish; do "$$bin" --generate-completion-script $$sh > "$$gen/$$sh"; done; \
	install -d "$$root/bin" "$$root/share/man/man1" "$$root/share/bash-completion/completions" \
	           "$$root/$(ZSH_COMPLETION_DIR)" "$$root/share/fish/vendor_completions.d"; \
	install -m 0755 "$$bin" "$$root/bin/latchkey"; \
	ln -sf latchkey "$$root/bin/git-credential-latchkey"; \
	install -m 0644 "$$gen/latchkey.1" "$$root/share/man/man1/latchkey.1"; \
	ln -sf latchkey.1 "$$root/share/man/man1/git-credential-latchkey.1"; \
	install -m 0644 "$$gen/bash" "$$root/share/bash-completion/completions/latchkey"; \
	install -m 0644 "$$gen/zsh" "$$root/$(ZSH_COMPLETION_DIR)/_latchkey"; \
	install -m 0644 "$$gen/fish" "$$root/share/fish/vendor_completions.d/latchkey.fish"; \
	echo "installed $$root/bin/latchkey (and git-credential-latchkey), latchkey(1), bash, zsh and fish completions and the systemd user units $(SYSTEMD_UNITS)"; \
	echo "  the agent as a service: systemctl --user daemon-reload && systemctl --user enable --now latchkey-agent.service"; \
	echo "  a daily backup (read $$root/share/doc/latchkey/examples/backup.env first): systemctl --user enable --now latchkey-backup.timer"

## install-secret-service: latchkey-secret-service (linked with the system's libsystemd, which has
## no static library; the Swift runtime is linked in), its systemd user unit and its D-Bus
## activation file (spec/SECRET-SERVICE.md §7). `make install` runs it unless SECRET_SERVICE=no
## (`make deb` packages the static latchkey alone).
install-secret-service: deps
	$(SWIFT) build -c release --product latchkey-secret-service --static-swift-stdlib $(SPM_FLAGS)
	@set -e; root="$(DESTDIR)$(PREFIX)"; \
	bin="$$($(SWIFT) build -c release $(SPM_FLAGS) --show-bin-path)/latchkey-secret-service"; \
	install -d "$$root/bin" "$$root/lib/systemd/user" "$$root/share/dbus-1/services"; \
	install -m 0755 "$$bin" "$$root/bin/latchkey-secret-service"; \
	sed 's|@BINDIR@|$(PREFIX)/bin|g' dist/systemd/latchkey-secret-service.service > "$$root/lib/systemd/user/latchkey-secret-service.service"; \
	sed 's|@BINDIR@|$(PREFIX)/bin|g' dist/dbus/org.freedesktop.secrets.service > "$$root/share/dbus-1/services/org.freedesktop.secrets.service"; \
	chmod 0644 "$$root/lib/systemd/user/latchkey-secret-service.service" "$$root/share/dbus-1/services/org.freedesktop.secrets.service"; \
	echo "installed $$root/bin/latchkey-secret-service, its user unit and D-Bus activation file"; \
	echo "  the Secret Service (stop gnome-keyring's first): systemctl --user enable --now latchkey-secret-service"

## install-systemd: only the systemd user units and the backup's example settings (no build)
install-systemd:
	@set -e; root="$(DESTDIR)$(PREFIX)"; \
	install -d "$$root/lib/systemd/user" "$$root/share/doc/latchkey/examples"; \
	for u in $(SYSTEMD_UNITS); do \
	  $(MAKE) -s --no-print-directory systemd-unit PREFIX="$(PREFIX)" UNIT=$$u > "$$root/lib/systemd/user/$$u.new"; \
	  chmod 0644 "$$root/lib/systemd/user/$$u.new"; mv -f "$$root/lib/systemd/user/$$u.new" "$$root/lib/systemd/user/$$u"; \
	done; \
	install -m 0644 dist/systemd/backup.env "$$root/share/doc/latchkey/examples/backup.env"

uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/latchkey" "$(DESTDIR)$(PREFIX)/bin/git-credential-latchkey" \
	      "$(DESTDIR)$(PREFIX)/share/man/man1/latchkey.1" "$(DESTDIR)$(PREFIX)/share/man/man1/git-credential-latchkey.1" \
	      "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/latchkey" \
	      "$(DESTDIR)$(PREFIX)/$(ZSH_COMPLETION_DIR)/_latchkey" \
	      "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/latchkey.fish" \
	      $(foreach u,$(SYSTEMD_UNITS),"$(DESTDIR)$(PREFIX)/lib/systemd/user/$(u)") \
	      "$(DESTDIR)$(PREFIX)/share/doc/latchkey/examples/backup.env" \
	      "$(DESTDIR)$(PREFIX)/bin/latchkey-secret-service" "$(DESTDIR)$(PREFIX)/lib/systemd/user/latchkey-secret-service.service" \
	      "$(DESTDIR)$(PREFIX)/share/dbus-1/services/org.freedesktop.secrets.service"
	-rmdir "$(DESTDIR)$(PREFIX)/share/doc/latchkey/examples" "$(DESTDIR)$(PREFIX)/share/doc/latchkey" 2>/dev/null

## systemd-unit: a systemd user unit of dist/systemd/ for this PREFIX on stdout (what install
## installs): UNIT=latchkey-agent.service (the default), latchkey-backup.service or latchkey-backup.timer
systemd-unit:
	@test -f "dist/systemd/$(UNIT)" || { echo "make systemd-unit: no unit dist/systemd/$(UNIT); UNIT is one of $(SYSTEMD_UNITS)" >&2; exit 2; }
	@sed 's|@BINDIR@|$(PREFIX)/bin|g' "dist/systemd/$(UNIT)"

## deb: latchkey_VERSION_ARCH.deb in this directory, for Debian 12 and later: what `make install
## PREFIX=/usr` installs, with the man page compressed, the copyright and changelog Debian wants,
## and a control file (scripts/deb.sh; dpkg-deb, no debhelper). `sudo apt install ./latchkey_*.deb`
deb: release
	@set -e; stage="$(CURDIR)/.build-deb/root"; rm -rf "$$stage"; umask 022; \
	$(MAKE) -s --no-print-directory install DESTDIR="$$stage" PREFIX=/usr ZSH_COMPLETION_DIR=share/zsh/vendor-completions SECRET_SERVICE=no >/dev/null; \
	SWIFT=$(SWIFT) ./scripts/deb.sh "$$stage" "$(CURDIR)"

## test-deb: build the package, check its contents, install it into a fresh Debian 12 (a
## debootstrap'd minbase, as root) and remove and purge it again, leaving no file behind
## (scripts/test-deb.sh; about 2 minutes after `make release`, most of it debootstrap; 15 s
## once .build-deb/ keeps the root it made)
test-deb: deb
	./scripts/test-deb.sh "$$(ls -t latchkey_*.deb | head -n 1)"

## fixtures: regenerate fixtures/ with the deterministic generator (never edit them by hand)
fixtures: deps
	$(SWIFT) run latchkey-fixtures fixtures

## bench: the recorded benchmarks (release build; results in docs/RESULTS.md)
bench: deps
	$(SWIFT) build -c release --product latchkey-bench
	BENCH="$$($(SWIFT) build -c release --show-bin-path)/latchkey-bench"; \
	for n in $(or $(BENCH_SIZES),1000 10000 100000); do $$BENCH --items $$n; done; \
	for n in $(or $(BENCH_SIZES),1000 10000 100000); do $$BENCH --backup --items $$n; done

## bench-peers: the same CLI workload on latchkey, keepassxc-cli and pass (installed from Debian's
## packages when missing), one table per size with the ratios to latchkey and the goals of issue 8
## (docs/RESULTS.md, "make bench-peers" of each release); PEERS_SIZES picks the sizes (default 100 1000 10000)
bench-peers: deps
	SWIFT=$(SWIFT) SCRATCH=$(SCRATCH) LATCHKEY_RELEASE_FLAGS="$(STATIC)" ./scripts/bench-peers.sh

## bench-scale: the target table of issue 16 (docs/RESULTS.md, "make bench-scale"): keychains of 100, 10k and
## 100k items (SCALE_1M=1 adds 1M) without passcode or agent; find, add, update, delete by
## unique key side by side across the sizes, find on a label 10 items share, import and verify
## with their peak memory, --version against /bin/true, find through the agent at 10k against
## `pass show`, the library's find in one open keychain; each target with its ratio and
## met/missed (scripts/bench-scale.sh). About 2 minutes after the release builds; with
## SCALE_1M=1 about 4
bench-scale: deps
	SWIFT=$(SWIFT) SCRATCH=$(SCRATCH) LATCHKEY_RELEASE_FLAGS="$(STATIC)" ./scripts/bench-scale.sh

## bench-lib: the library benchmarks with package-benchmark (Benchmarks/Package.swift, a package
## of its own so that the main build never fetches it; docs/RESULTS.md). Each operation at
## BENCH_LIB_SIZES items (default 1k 10k 100k; add 1000000 for 1M), on keychains built in a
## temporary directory that is removed afterwards. BENCH_LIB_FLAGS passes options to the
## plugin, e.g. --filter 'find.*' or --format markdown.
BENCH_LIB_SIZES ?= 1000 10000 100000
BENCH_LIB_FLAGS ?=
bench-lib: deps
	@dir="$$(mktemp -d "$${TMPDIR:-/tmp}/latchkey-libbench.XXXXXX")"; trap 'rm -rf "$$dir"' EXIT; \
	echo "make bench-lib: sizes $(BENCH_LIB_SIZES); $$(uptime)"; \
	BENCH_LIB_SIZES="$(BENCH_LIB_SIZES)" LATCHKEY_BENCH_DIR="$$dir" \
	  $(SWIFT) package --package-path Benchmarks benchmark --no-progress $(BENCH_LIB_FLAGS)

## bench-startup: what a latchkey process costs before it works: `latchkey --version` and a find
## on a 1-item keychain beside /bin/true and two Swift hello worlds, one hyperfine run with
## STARTUP_RUNS runs each (default 300), the ratios to /bin/true, the binary's size and libraries
## (scripts/bench-startup.sh; docs/RESULTS.md, 0.3.0 "Start-up")
bench-startup: deps
	SWIFT=$(SWIFT) SCRATCH=$(SCRATCH) ./scripts/bench-startup.sh

## check-lean: the release binary links no Foundation and no ICU (no such library among the ones
## it needs, no Foundation ICU symbol in it); `make test` checks the debug binary (LeanLinkTests)
check-lean: release
	@bin="$$($(SWIFT) build -c release $(SPM_FLAGS) --show-bin-path)/latchkey"; \
	bad="$$(readelf -d "$$bin" | grep NEEDED | grep -E 'libFoundation|lib_FoundationICU|libicu' || true)"; \
	[ -z "$$bad" ] || { echo "check-lean: $$bin needs:"; echo "$$bad"; exit 1; }; \
	n="$$(nm "$$bin" 2>/dev/null | grep -cE 'swift_(ucol|ubrk|udat)_open|ICUDateFormatter' || true)"; \
	[ "$$n" = 0 ] || { echo "check-lean: $$bin contains $$n ICU or FoundationInternationalization symbols"; exit 1; }; \
	echo "check-lean: $$bin ($$(stat -c %s "$$bin") bytes) links neither Foundation nor ICU itself"

clean:
	rm -rf .build .build-* latchkey_*.deb

# ---- Hardening: fuzzing, kill and concurrency tests, sanitizers (docs/TESTING.md) ----
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= keychain keybag secitem backup agent
KILLS        ?= 400
CONCURRENCY_OPS ?= 400
POWERLOSS_STATES ?= 2000

.PHONY: fuzz fuzz-ci kill-test concurrency-test test-asan test-tsan fault-test powerloss-test disk-test strace-fault-test

## fuzz: the libFuzzer targets of Fuzz/ (keychain file, keybag, SecItem dictionaries, backup
## archives, agent messages), each for FUZZ_SECONDS (default 60); corpora seeded from fixtures/ in .build-fuzz
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT=$(SWIFT) ./scripts/fuzz.sh $(FUZZ_TARGETS)

## fuzz-ci: every fuzz target for 30 s
fuzz-ci: deps
	FUZZ_SECONDS=30 SWIFT=$(SWIFT) ./scripts/fuzz.sh $(FUZZ_TARGETS)

## kill-test: SIGKILL CLI writers (add, update, delete, passwd, compact, restore --merge) at random moments,
## KILLS kills in all (default 400); `make test` runs the same test with 200
kill-test: deps
	$(SWIFT) build --build-tests --scratch-path .build-hard
	LATCHKEY_KILLS=$(KILLS) $(SWIFT) test --skip-build --scratch-path .build-hard --filter KillTests

## concurrency-test: CLI processes racing on one keychain, CONCURRENCY_OPS operations (default 400)
concurrency-test: deps
	$(SWIFT) build --build-tests --scratch-path .build-hard
	LATCHKEY_CONCURRENCY_OPS=$(CONCURRENCY_OPS) $(SWIFT) test --skip-build --scratch-path .build-hard --filter ConcurrencyTests

## fault-test: the I/O-fault loop (docs/TESTING.md, "Hardening tests"): every file-system call of every writing
## operation failed with EIO, ENOSPC and short writes; here each write is also cut after its first
## byte, before its last and at every 512-byte boundary (`make test` cuts it in the middle only)
fault-test: deps
	$(SWIFT) build --build-tests --scratch-path .build-hard
	LATCHKEY_FAULT_SHORT_WRITES=all $(SWIFT) test --skip-build --scratch-path .build-hard --filter 'IOFaultLoopTests|IOFaultTests'

## strace-fault-test: the released static binary under strace(1) fault injection (README
## "Hardening tests"): SIGKILL, ENOSPC and EIO at every file-system system call of init, a restore
## into a new keychain, backup --output and an import that writes an index, each followed by a
## rerun that must leave nothing behind (StraceFaultTests; `make test` runs it on the debug build
## at every rename, link and unlink and a few other calls). STRACE_POINTS=N spreads N points
## over the other calls instead of all of them (default: all)
STRACE_POINTS ?= all
strace-fault-test: release
	$(SWIFT) build --build-tests --scratch-path .build-hard
	LATCHKEY_STRACE_BINARY="$$($(SWIFT) build -c release $(SPM_FLAGS) --show-bin-path)/latchkey" LATCHKEY_STRACE_POINTS=$(STRACE_POINTS) \
	  $(SWIFT) test --skip-build --scratch-path .build-hard --filter StraceFaultTests

## powerloss-test: the power-loss replay with up to POWERLOSS_STATES disk states per power cut
## (default 2000, at 4 KiB and 512 B blocks; `make test` replays up to 40 a cut)
powerloss-test: deps
	$(SWIFT) build --build-tests --scratch-path .build-hard
	LATCHKEY_POWERLOSS_STATES=$(POWERLOSS_STATES) $(SWIFT) test --skip-build --scratch-path .build-hard --filter 'PowerLossTests|PowerCutTests|TornTailTests'

## disk-test: disk full and read-only media on a real 64 KiB tmpfs (needs root; skipped otherwise,
## with the reason), and every size limit of the specs at the limit and one byte over
disk-test: deps
	$(SWIFT) build --build-tests --scratch-path .build-hard
	$(SWIFT) test --skip-build --scratch-path .build-hard --filter 'RealDiskTests|ReadOnlyMediumTests|SizeLimitTests|SizeLimitCLITests'

## test-asan / test-tsan: the whole suite under the address / thread sanitizer
## (LeakSanitizer suppressions, each with its reason: .ci/lsan.supp; TSan needs none)
test-asan: deps
	$(SWIFT) build --build-tests --scratch-path .build-asan --sanitize=address
	LATCHKEY_SANITIZER=address LSAN_OPTIONS="suppressions=$(CURDIR)/.ci/lsan.supp:print_suppressions=0" \
	  $(SWIFT) test --skip-build --scratch-path .build-asan --sanitize=address

test-tsan: deps
	$(SWIFT) build --build-tests --scratch-path .build-tsan --sanitize=thread
	LATCHKEY_SANITIZER=thread $(SWIFT) test --skip-build --scratch-path .build-tsan --sanitize=thread
