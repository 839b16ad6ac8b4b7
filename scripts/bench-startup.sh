#!/usr/bin/env bash
# bench-startup.sh — `make bench-startup`: what a latchkey process costs before it does any work
# (issue 16 §4), side by side in one hyperfine run with /bin/true and two Swift hello worlds
# (runtime linked statically, as `make release` links latchkey, and a fully static one):
#
#   /bin/true                        the floor: exec, exit
#   hello (static stdlib)            print("hello"), swiftc -O -static-stdlib
#   hello (static executable)        print("hello"), swiftc -O -static-executable
#   latchkey --version               ArgumentParser builds the command tree, prints the version
#   latchkey find (no such item)     a real command on a 1-item keychain without passcode, no agent
#
# then the wall and CPU ratios to /bin/true (goal: `latchkey --version` ≤ 3×), the binary's size, the shared
# libraries it loads and what the dynamic loader spent (LD_DEBUG=statistics).
#
# Runs are bounded: STARTUP_RUNS (default 300) counted runs per command after STARTUP_WARMUP
# (default 30); everything happens in a temporary directory that is removed on exit.
# STARTUP_BUILD=0 uses the release binary already built; LATCHKEY_BIN names another one to time.
# SCRATCH (SwiftPM scratch path), SWIFT.
set -euo pipefail

SWIFT=${SWIFT:-swift}
RUNS=${STARTUP_RUNS:-300}
WARMUP=${STARTUP_WARMUP:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPM_FLAGS=()
[ -n "${SCRATCH:-}" ] && SPM_FLAGS=(--scratch-path "$SCRATCH")
say() { printf '%s\n' "$*" >&2; }

if ! command -v hyperfine >/dev/null || ! command -v jq >/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    say "bench-startup: installing hyperfine and jq"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq hyperfine jq
fi

cd "$ROOT"
if [ -z "${LATCHKEY_BIN:-}" ]; then
    if [ "${STARTUP_BUILD:-1}" != 0 ]; then
        say "bench-startup: building latchkey as 'make release' does"
        make -s release SWIFT="$SWIFT" SCRATCH="${SCRATCH:-}" >&2
    fi
    LATCHKEY_BIN=$("$SWIFT" build -c release "${SPM_FLAGS[@]}" --show-bin-path)/latchkey
fi
LK=$LATCHKEY_BIN

W=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-startup.XXXXXX")
trap 'rm -rf "$W"' EXIT
echo 'print("hello")' > "$W/hello.swift"
SWIFTC=$(dirname "$(command -v "$SWIFT")")/swiftc
"$SWIFTC" -O -static-stdlib "$W/hello.swift" -o "$W/hello-static-stdlib" 2>/dev/null
"$SWIFTC" -O -static-executable "$W/hello.swift" -o "$W/hello-static-executable" 2>/dev/null

export LATCHKEY_KEYCHAIN=$W/bench.keychain LATCHKEY_DEVICE=$W/bench.device LATCHKEY_AGENT_SOCK=none HOME=$W
unset LATCHKEY_PASSCODE LATCHKEY_PASSCODE_FILE LATCHKEY_ENTITLEMENTS 2>/dev/null || true
"$LK" init --no-passcode >/dev/null
printf 'x' | "$LK" add --account bench --service startup >/dev/null

say "bench-startup: $(uname -srm), $(nproc) cores, $(uptime | sed 's/.*load/load/')"
say "bench-startup: $LK ($("$LK" --version))"
hyperfine -N --style basic --warmup "$WARMUP" --runs "$RUNS" -i --export-json "$W/startup.json" \
    -n '/bin/true' '/bin/true' \
    -n 'hello (static stdlib)' "$W/hello-static-stdlib" \
    -n 'hello (static executable)' "$W/hello-static-executable" \
    -n 'latchkey --version' "$LK --version" \
    -n 'latchkey find (no such item)' "$LK find --account nobody --service startup" >&2

echo
# Wall time is what a user waits; CPU time (user + system, hyperfine's mean) moves less when other
# work shares the machine. Ratios are to /bin/true's figure of the same run.
printf '%-30s %10s %8s %12s %8s\n' "command" "wall ms" "÷ true" "cpu ms" "÷ true"
jq -r '.results as $r | ($r[0].median) as $t | ($r[0].user + $r[0].system) as $c | $r[] |
       [.command, (.median*1e6|round/1000), ((.median/$t)*100|round/100),
        ((.user+.system)*1e6|round/1000), (((.user+.system)/$c)*100|round/100)] | @tsv' \
   "$W/startup.json" | while IFS=$'\t' read -r name wall wr cpu cr; do
    printf '%-30s %10s %7s× %12s %7s×\n' "$name" "$wall" "$wr" "$cpu" "$cr"
done
echo
echo "binary: $(stat -c %s "$LK") bytes; shared libraries loaded: $( (ldd "$LK" 2>/dev/null || true) | grep -c '=>' )"
if ldd "$LK" 2>/dev/null | grep -q '=>'; then ldd "$LK" | awk '{print "  " $1}' | grep -v 'linux-vdso' || true; else echo "  (none: statically linked)"; fi
if LD_DEBUG=statistics "$LK" --version 2>&1 >/dev/null | grep -q 'relocations'; then
    echo "dynamic loader (LD_DEBUG=statistics, one run):"
    LD_DEBUG=statistics "$LK" --version 2>&1 >/dev/null | sed -n 's/^ *[0-9]*: *//p' | grep -E 'startup time|relocations:|relative|load objects' | sed 's/^/  /'
fi
