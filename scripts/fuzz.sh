#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ and runs each for FUZZ_SECONDS (default 60).
#
#   scripts/fuzz.sh [target…]          targets: keychain keybag secitem backup agent (default: all)
#   FUZZ_SECONDS=300 scripts/fuzz.sh keychain
#
# The library modules are built by SwiftPM in .build-fuzz with -sanitize=fuzzer (coverage
# instrumentation; nothing is linked there), then each Fuzz/<target>/main.swift is linked with
# swiftc -sanitize=fuzzer against their object files. Corpora are seeded at run time from
# fixtures/ (and fixtures/fuzz/<target>/, the regression inputs of earlier findings) into
# .build-fuzz/corpus/<target>, which is never committed. A crash, hang (> FUZZ_TIMEOUT s for one
# input) or allocation above FUZZ_MALLOC_MB leaves its input in .build-fuzz/artifacts/<target>/
# and makes the script fail. The last lines are a table of executions per target.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
SECONDS_EACH=${FUZZ_SECONDS:-60}
TIMEOUT=${FUZZ_TIMEOUT:-10}
MALLOC_MB=${FUZZ_MALLOC_MB:-1024}
SCRATCH=.build-fuzz
ALL_TARGETS=(keychain keybag secitem backup agent)
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")

# The backup target needs Sources/LatchkeyBackup and its fixtures; skip it until they exist.
have_backup() { [ -d Sources/LatchkeyBackup ] && git ls-files --error-unmatch Sources/LatchkeyBackup >/dev/null 2>&1; }

mkdir -p "$SCRATCH"
echo "fuzz: building the library modules with coverage instrumentation ($SCRATCH)"
modules=(LatchkeySecurity LatchkeyTestSupport)
have_backup && modules+=(LatchkeyBackup)
for m in "${modules[@]}"; do
    "$SWIFT" build -c release --scratch-path "$SCRATCH" --target "$m" \
        -Xswiftc -sanitize=fuzzer -Xcc -fsanitize=fuzzer-no-link >"$SCRATCH/build.log" 2>&1 \
        || { cat "$SCRATCH/build.log"; echo "fuzz: building $m failed"; exit 1; }
done
B="$SCRATCH/release"
PKG=$(grep -o '"-package-name","[^"]*"' "$SCRATCH/release.yaml" | grep -v argument_parser | head -1 | cut -d'"' -f4)
FLAGS=(-sanitize=fuzzer -O -parse-as-library -package-name "$PKG" -I "$B/Modules"
       -Xcc -fmodule-map-file="$B/CLatchkeyCrypto.build/module.modulemap"
       -Xcc -fmodule-map-file=Sources/COpenSSL/module.modulemap
       -Xcc -fmodule-map-file=Sources/CArchive/module.modulemap
       -I Sources/CLatchkeyCrypto/include -suppress-warnings)
# The object files of each module's current sources only: a file moved to another module (or
# deleted) leaves its old object behind in the scratch directory, which must not be linked.
objects() {
    for m in "$@"; do
        for o in "$B/$m.build/"*.o; do
            local src; src=$(basename "$o" .o)
            case "$src" in *.swift) find "Sources/$m" -name "$src" | grep -q . || continue ;; esac
            echo "$o"
        done
    done
}

link() {
    local target=$1; shift
    swiftc "${FLAGS[@]}" "Fuzz/$target/main.swift" $(objects "$@") $(pkg-config --libs libcrypto) \
        ${EXTRA_LIBS:-} -o "$SCRATCH/fuzz-$target"
}

# Seed corpus of each target, from fixtures/ (copied: libFuzzer adds to its corpus directory).
seed() {
    local target=$1 dir="$SCRATCH/corpus/$1"
    mkdir -p "$dir"
    case "$target" in
    keychain)
        for d in fixtures/keychain/*/; do cp "$d/keychain" "$dir/fixture-$(basename "$d")"; done ;;
    keybag)
        # The keybag of each fixture header: its length is the u16 at offset 72, it starts at 74.
        for d in fixtures/keychain/*/; do
            [ "$(stat -c %s "$d/keychain")" -ge 74 ] || continue   # too short to hold a header
            n=$(od -An -tu1 -j72 -N2 "$d/keychain" | awk '{print $1 * 256 + $2}')
            dd if="$d/keychain" of="$dir/fixture-$(basename "$d")" bs=1 skip=74 count="$n" status=none
        done ;;
    secitem)
        # Any bytes are a program for this target; the fixtures' JSON and passcodes are as good as any.
        for f in fixtures/keychain/*/expected.json fixtures/keychain/*/passcode.txt; do
            [ -f "$f" ] && cp "$f" "$dir/fixture-$(basename "$(dirname "$f")")-$(basename "$f")"
        done ;;
    agent)
        # The payloads of the worked example of spec/AGENT.md §6 (a find and its answer), and
        # the frames without fields (status, stop, lockAll; ok).
        awk '/BEGIN find example/,/END find example/' spec/AGENT.md | awk '
            /^Request:/ { out = "request" } /^Answer:/ { out = "answer" }
            /^[0-9a-f][0-9a-f]( |$)/ { print substr($0, 1, 48) > ("'"$dir"'/spec-" out ".hex") }'
        for f in request answer; do
            xxd -r -p "$dir/spec-$f.hex" | tail -c +5 >"$dir/spec-$f"
            rm "$dir/spec-$f.hex"
        done
        local type
        for type in 01 02 03 80; do printf "\\x02\\x$type" >"$dir/empty-$type"; done ;;
    backup)
        for f in $(find fixtures/backup -type f ! -name '*.txt' ! -name '*.json' ! -name '*.md' 2>/dev/null); do
            cp "$f" "$dir/fixture-$(echo "$f" | tr / _)"
        done ;;
    esac
    if [ -d "fixtures/fuzz/$target" ]; then
        for f in "fixtures/fuzz/$target"/*; do
            case "$f" in *.txt|*.md) ;; *) cp "$f" "$dir/regression-$(basename "$f")" ;; esac
        done
    fi
}

results=()
failed=0
for t in "${TARGETS[@]}"; do
    case "$t" in
    keychain) link keychain LatchkeyCrypto LatchkeyFormat Latchkey LatchkeyTestSupport CLatchkeyCrypto ;;
    keybag)   link keybag LatchkeyCrypto LatchkeyFormat CLatchkeyCrypto ;;
    secitem)  link secitem LatchkeyCrypto LatchkeyFormat Latchkey LatchkeySecurity CLatchkeyCrypto ;;
    agent)    link agent LatchkeyCrypto LatchkeyFormat Latchkey CLatchkeyCrypto ;;
    backup)
        if ! have_backup || [ ! -f Fuzz/backup/main.swift ]; then
            echo "fuzz: skipping backup (no committed Sources/LatchkeyBackup or Fuzz/backup yet)"
            results+=("backup|skipped|-|-|-"); continue
        fi
        EXTRA_LIBS="$(pkg-config --libs libarchive)" link backup LatchkeyCrypto LatchkeyFormat Latchkey LatchkeyBackup LatchkeyTestSupport CLatchkeyCrypto ;;
    *) echo "fuzz: unknown target $t (known: ${ALL_TARGETS[*]})"; exit 2 ;;
    esac
    seed "$t"
    mkdir -p "$SCRATCH/artifacts/$t"
    log="$SCRATCH/fuzz-$t.log"
    echo "fuzz: $t for ${SECONDS_EACH}s (log: $log)"
    status=0
    "$SCRATCH/fuzz-$t" -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" -malloc_limit_mb="$MALLOC_MB" \
        -rss_limit_mb=$((MALLOC_MB * 2)) -print_final_stats=1 -artifact_prefix="$SCRATCH/artifacts/$t/" \
        "$SCRATCH/corpus/$t" >"$log" 2>&1 || status=$?
    rm -rf /dev/shm/latchkey-fuzz-* 2>/dev/null || true
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    corpus=$(ls "$SCRATCH/corpus/$t" | wc -l)
    if [ "$status" -ne 0 ]; then
        failed=1
        echo "fuzz: $t FAILED (exit $status); the input is in $SCRATCH/artifacts/$t/:"
        grep -E '^==[0-9]+==|ERROR|Fatal error|SUMMARY|Test unit written' "$log" | head -20 || true
        results+=("$t|FAILED|$runs|$rate|$corpus")
    else
        results+=("$t|ok|$runs|$rate|$corpus")
    fi
done

echo
echo "target     result   executions   execs/s   corpus   (${SECONDS_EACH}s each)"
for r in "${results[@]}"; do
    IFS='|' read -r t res runs rate corpus <<<"$r"
    printf '%-10s %-8s %10s %9s %8s\n' "$t" "$res" "$runs" "$rate" "$corpus"
done
exit $failed
