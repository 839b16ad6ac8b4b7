# Latchkey — the two commands a fresh Debian machine needs are `make demo` and `make test`.
SWIFT     ?= swift
PREFIX    ?= /usr/local
CONFIG    ?= debug
APT_DEPS  := libssl-dev libarchive-dev pkg-config
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# SCRATCH=.build-x builds in another scratch directory (parallel work trees); DESTDIR stages an install.
SCRATCH   ?=
SPM_FLAGS := $(if $(SCRATCH),--scratch-path $(SCRATCH))
DESTDIR   ?=

.PHONY: deps build release test demo install uninstall fixtures bench clean

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
	$(SWIFT) build -c release --product latchkey $(SPM_FLAGS)

## test: the whole suite (unit, conformance over fixtures/, crash and damage, CLI)
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## demo: build, then run the main job end to end in a temporary directory
demo: deps
	$(SWIFT) build -c release --product latchkey $(SPM_FLAGS)
	LATCHKEY_BIN="$$($(SWIFT) build -c release $(SPM_FLAGS) --show-bin-path)/latchkey" ./scripts/demo.sh

## install: latchkey, latchkey(1) and bash/zsh/fish completions under $(DESTDIR)$(PREFIX)
## (the man page and completions are generated from the command definitions of this build)
install: release
	@set -e; \
	bin="$$($(SWIFT) build -c release $(SPM_FLAGS) --show-bin-path)/latchkey"; \
	root="$(DESTDIR)$(PREFIX)"; gen="$$(mktemp -d)"; trap 'rm -rf "$$gen"' EXIT; \
	"$$bin" generate-manual > "$$gen/latchkey.1"; \
	for sh in bash zsh fish; do "$$bin" --generate-completion-script $$sh > "$$gen/$$sh"; done; \
	install -d "$$root/bin" "$$root/share/man/man1" "$$root/share/bash-completion/completions" \
	           "$$root/share/zsh/site-functions" "$$root/share/fish/vendor_completions.d"; \
	install -m 0755 "$$bin" "$$root/bin/latchkey"; \
	install -m 0644 "$$gen/latchkey.1" "$$root/share/man/man1/latchkey.1"; \
	install -m 0644 "$$gen/bash" "$$root/share/bash-completion/completions/latchkey"; \
	install -m 0644 "$$gen/zsh" "$$root/share/zsh/site-functions/_latchkey"; \
	install -m 0644 "$$gen/fish" "$$root/share/fish/vendor_completions.d/latchkey.fish"; \
	echo "installed $$root/bin/latchkey, latchkey(1) and bash, zsh and fish completions"

uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/latchkey" "$(DESTDIR)$(PREFIX)/share/man/man1/latchkey.1" \
	      "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/latchkey" \
	      "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_latchkey" \
	      "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/latchkey.fish"

## fixtures: regenerate fixtures/ with the deterministic generator (never edit them by hand)
fixtures: deps
	$(SWIFT) run latchkey-fixtures fixtures

## bench: the recorded benchmarks (release build; see README "Performance")
bench: deps
	$(SWIFT) build -c release --product latchkey-bench
	BENCH="$$($(SWIFT) build -c release --show-bin-path)/latchkey-bench"; \
	for n in $(or $(BENCH_SIZES),1000 10000 100000); do $$BENCH --items $$n; done; \
	for n in $(or $(BENCH_SIZES),1000 10000 100000); do $$BENCH --backup --items $$n; done

clean:
	rm -rf .build .build-*
