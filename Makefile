# Latchkey — the two commands a fresh Debian machine needs are `make demo` and `make test`.
SWIFT     ?= swift
PREFIX    ?= /usr/local
CONFIG    ?= debug
APT_DEPS  := libssl-dev libarchive-dev pkg-config
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build release test demo fixtures bench clean

## deps: install the system libraries that are missing (apt-get only for what is absent)
deps:
	@missing=""; for p in $(APT_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "make deps: no 'swift' on PATH; install the Swift 6 toolchain from swift.org"; exit 1; }

build: deps
	$(SWIFT) build -c $(CONFIG)

release: deps
	$(SWIFT) build -c release --product latchkey

## test: the whole suite (unit, conformance over fixtures/, crash and damage, CLI)
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## demo: build, then run the main job end to end in a temporary directory
demo: deps
	$(SWIFT) build -c release --product latchkey
	LATCHKEY_BIN="$$($(SWIFT) build -c release --show-bin-path)/latchkey" ./scripts/demo.sh

## fixtures: regenerate fixtures/ with the deterministic generator (never edit them by hand)
fixtures: deps
	$(SWIFT) run latchkey-fixtures fixtures

## bench: the recorded benchmarks (release build; see README "Performance")
bench: deps
	$(SWIFT) build -c release --product latchkey-bench
	BENCH="$$($(SWIFT) build -c release --show-bin-path)/latchkey-bench"; \
	for n in $(or $(BENCH_SIZES),1000 10000 100000); do $$BENCH --items $$n; done

clean:
	rm -rf .build .build-*
