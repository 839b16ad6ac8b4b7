#!/usr/bin/env bash
# bench-scale.sh — `make bench-scale`: the target table of issue 16 ("Scale"), measured in one
# run on keychains of 100, 10,000 and 100,000 items (and 1,000,000 with SCALE_1M=1), each
# without a passcode and without the agent, so that no KDF hides the cost of N.
#
# For each size: the keychain is made by one `latchkey import` of generated JSON lines (timed,
# with its peak memory), then `verify` (timed, peak memory). Then, with every size side by side
# in one hyperfine invocation per command: find by unique key, add, update and delete one item
# by unique key, and find on a non-unique attribute (a label that 10 items share); the peak
# memory of one find at each size. Then `latchkey --version` against /bin/true, and a find
# through the agent at 10,000 items against `pass show` (when pass and gpg are installed; a
# one-entry password store with a new passphrase-less GnuPG key), and the library's find by
# unique key in one open keychain at the first and last size (latchkey-bench --index, built
# without the static flags: it is one process, start-up is not in it). Prints a table of medians,
# peak memory, and each target of the issue with its ratio and met/missed.
#
# Timing: hyperfine (Debian's package, installed when missing), medians of SCALE_RUNS runs
# (default 30) taken in SCALE_ROUNDS rounds (default 5; the commands compared alternate from round
# to round, see `measure`), SCALE_WARMUP warm-up runs a round (default 2); at least 100 runs, 5
# warm-up runs a round, for the commands of about a millisecond; peak memory: GNU time's maximum
# resident set size (Debian's `time`) of one run.
# The bulk of each keychain is one import, never N CLI calls. Duration on the 2-core machine,
# after the release builds: about 2 minutes; with SCALE_1M=1 about 4 (plus 140 MB of JSON lines
# and about 900 MB of keychains and indexes in the temporary directory).
#
# Environment: SCALE_1M=1, SCALE_SIZES (overrides the sizes), SCALE_RUNS, SCALE_ROUNDS, SCALE_WARMUP,
# SCALE_BUILD=0 (use the release binary already built), SCALE_KEEP=1 (keep the temporary
# directory), SCALE_BASELINE=DIR (a checkout of an earlier commit with its release builds of
# latchkey and latchkey-bench, e.g. a `git worktree`: every timed command and the library's find
# run for both builds side by side in the same hyperfine rounds, on the same keychains, and the
# report ends with a before/after table; the keychains are made by this build), SCALE_OUT
# (where the table and hyperfine JSON go; default $SCRATCH/bench-scale),
# SCRATCH (SwiftPM scratch path), SWIFT.
set -euo pipefail

SWIFT=${SWIFT:-swift}
SIZES=${SCALE_SIZES:-100 10000 100000}
[ "${SCALE_1M:-0}" = 1 ] && [ -z "${SCALE_SIZES:-}" ] && SIZES="$SIZES 1000000"
# Every single-item command takes milliseconds at every size now (at 1M they took seconds
# before the index, and fewer runs were taken then). Commands of about a millisecond
# (--version, /bin/true, the agent's find) get at least 100 runs after 10: with 5 runs one
# scheduling hiccup on the shared machine moved the ratio to /bin/true by half.
RUNS=${SCALE_RUNS:-30}; WARMUP=${SCALE_WARMUP:-2}; ROUNDS=${SCALE_ROUNDS:-5}
FAST_RUNS=$(( RUNS > 100 ? RUNS : 100 )); FAST_WARMUP=$(( WARMUP > 5 ? WARMUP : 5 ))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPM_FLAGS=()
[ -n "${SCRATCH:-}" ] && SPM_FLAGS=(--scratch-path "$SCRATCH")
OUT=${SCALE_OUT:-$ROOT/${SCRATCH:-.build}/bench-scale}

say() { printf '%s\n' "$*" >&2; }

missing=""
command -v hyperfine >/dev/null || missing="$missing hyperfine"
command -v jq >/dev/null || missing="$missing jq"
[ -x /usr/bin/time ] || missing="$missing time"
if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    say "bench-scale: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

cd "$ROOT"
# Built as `make release` builds it (LATCHKEY_RELEASE_FLAGS, from the Makefile).
read -r -a RELEASE_FLAGS <<< "${LATCHKEY_RELEASE_FLAGS:---static-swift-stdlib}"
if [ "${SCALE_BUILD:-1}" != 0 ]; then
    say "bench-scale: building latchkey (release, as 'make release')"
    "$SWIFT" build -c release --product latchkey "${RELEASE_FLAGS[@]}" "${SPM_FLAGS[@]}" >&2
    say "bench-scale: building latchkey-bench (release, the library's find)"
    "$SWIFT" build -c release --product latchkey-bench "${SPM_FLAGS[@]}" >&2
fi
LK=$("$SWIFT" build -c release "${SPM_FLAGS[@]}" --show-bin-path)/latchkey
LKBENCH=$("$SWIFT" build -c release "${SPM_FLAGS[@]}" --show-bin-path)/latchkey-bench
BASE=""; BASEBENCH=""; BASE_COMMIT=""
if [ -n "${SCALE_BASELINE:-}" ]; then
    BASEBIN=$(cd "$SCALE_BASELINE" && "$SWIFT" build -c release --show-bin-path)
    BASE=$BASEBIN/latchkey; BASEBENCH=$BASEBIN/latchkey-bench
    [ -x "$BASE" ] && [ -x "$BASEBENCH" ] \
        || { say "bench-scale: no release latchkey and latchkey-bench in $BASEBIN: build them there first (swift build -c release --product latchkey ...)"; exit 2; }
    BASE_COMMIT=$(git -C "$SCALE_BASELINE" rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
LK_VERSION=$("$LK" --version 2>/dev/null | head -1)
LK_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$ROOT" status --porcelain -- Sources Package.swift 2>/dev/null)" ] && LK_COMMIT="$LK_COMMIT + uncommitted changes"

umask 077
W=$(mktemp -d /tmp/lk-scale.XXXXXX)
mkdir -p "$OUT" "$W/home" "$W/run" "$W/gnupg"
export HOME=$W/home XDG_RUNTIME_DIR=$W/run GNUPGHOME=$W/gnupg LATCHKEY_APP_ID=bench.app
export LATCHKEY_AGENT_SOCK=none
unset LATCHKEY_KEYCHAIN LATCHKEY_DEVICE LATCHKEY_PASSCODE LATCHKEY_PASSCODE_FILE LATCHKEY_ENTITLEMENTS \
      PASSWORD_STORE_DIR PASSWORD_STORE_KEY PASSWORD_STORE_GIT 2>/dev/null || true
AGENT_SOCK=$W/run/latchkey-agent.sock
cleanup() {
    set +e
    LATCHKEY_AGENT_SOCK=$AGENT_SOCK "$LK" agent --stop >/dev/null 2>&1
    command -v gpgconf >/dev/null && gpgconf --kill all >/dev/null 2>&1
    if [ "${SCALE_KEEP:-0}" = 1 ]; then say "bench-scale: kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)
say "bench-scale: sizes $SIZES; load average $LOAD_START; work directory $W"

SECRET_B64=$(printf 'correct horse battery staple 0123456789' | base64)
printf 'new secret 0123456789abcdefghij\n' > "$W/newsecret"
printf 'correct horse battery staple 0123456789\n' > "$W/secret"
# user<i> in service "bench"; the label "group <i/10>" is shared by 10 items.
gen_jsonl() {
    awk -v n="$1" -v d="$SECRET_B64" 'BEGIN { for (i = 0; i < n; i++)
        printf "{\"class\":\"genp\",\"acct\":\"user%d\",\"svce\":\"bench\",\"labl\":\"group %d\",\"v_Data\":\"%s\"}\n", i, int(i / 10), d }'
}

declare -A RES PEAK ROUND_MEDIANS
# peak NAME COMMAND...: one run under GNU time; PEAK[NAME] in KiB, RES[NAME] wall seconds.
peak() {
    local name=$1; shift
    /usr/bin/time -f '%e %M' -o "$W/time" "$@" > /dev/null 2> "$W/peak.err" \
        || { say "bench-scale: '$name' failed:"; cat "$W/peak.err" >&2; exit 1; }
    read -r RES[$name] PEAK[$name] < "$W/time"
}
# measure NAME... -- COMMAND...: the commands side by side, in ROUNDS hyperfine runs of
# RUNS / ROUNDS runs each (after WARMUP warm-up runs each time), the order of the commands
# turned by one every round: a slow minute of the shared machine then falls on every command
# instead of on the one being timed. RES[NAME] gets the median of all its runs (seconds) and
# ROUND_RATIOS[NAME] the medians of each round, to quote the spread of a ratio from round to round.
median() { sort -g | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
measure() {
    local names=() cmds=() opts=()
    while [ "$1" != -- ]; do names+=("$1"); shift; done; shift
    while [ "${1:-}" = -N ] || [ "${1:-}" = --prepare ]; do
        if [ "$1" = -N ]; then opts+=(-N); shift; else opts+=(--prepare "$2"); shift 2; fi
    done
    cmds=("$@")
    local n=${#cmds[@]} per=$(( (RUNS + ROUNDS - 1) / ROUNDS )) r i j json
    for i in "${!names[@]}"; do : > "$W/times.${names[$i]}"; ROUND_MEDIANS[${names[$i]}]=""; done
    for r in $(seq 0 $(( ROUNDS - 1 ))); do
        local args=()
        for j in $(seq 0 $(( n - 1 ))); do
            i=$(( (j + r) % n )); args+=(-n "${names[$i]}" "${cmds[$i]}")
        done
        json="$OUT/${names[0]}.r$r.json"
        if ! hyperfine --style none --warmup "$WARMUP" --runs "$per" "${opts[@]}" --export-json "$json" "${args[@]}" \
                > "$W/hyperfine.log" 2>&1; then
            say "bench-scale: '${names[*]}' failed:"; cat "$W/hyperfine.log" >&2; exit 1
        fi
        for i in "${!names[@]}"; do
            jq -r --arg n "${names[$i]}" '.results[] | select(.command == $n) | .times[]' "$json" > "$W/round"
            cat "$W/round" >> "$W/times.${names[$i]}"
            ROUND_MEDIANS[${names[$i]}]="${ROUND_MEDIANS[${names[$i]}]} $(median < "$W/round")"
        done
    done
    for i in "${!names[@]}"; do
        RES[${names[$i]}]=$(median < "$W/times.${names[$i]}")
        say "$(awk -v n="${names[$i]}" -v s="${RES[${names[$i]}]}" -v k="$(wc -l < "$W/times.${names[$i]}")" 'BEGIN { printf "  %-22s %10.3f ms  (%d runs)", n, s * 1000, k }')"
    done
}
# spread A B: the lowest and highest of the per-round ratios A/B ("1.02–1.31×").
spread() {
    local a=(${ROUND_MEDIANS[$1]}) b=(${ROUND_MEDIANS[$2]}) k
    for k in "${!a[@]}"; do awk -v x="${a[$k]}" -v y="${b[$k]}" 'BEGIN { print x / y }'; done \
        | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END { if (NR) printf "rounds %.2f–%.2f×", lo, hi }'
}
counter() { printf '%s\n' "$2" > "$W/$1.ctr"; }
next() { printf 'read i < %s/%s.ctr; echo $((i+1)) > %s/%s.ctr' "$W" "$1" "$W" "$1"; }
kc() { printf 'LATCHKEY_KEYCHAIN=%s/kc%s/login.keychain LATCHKEY_DEVICE=%s/kc%s/device.secret' "$W" "$1" "$W" "$1"; }

# ---- the keychains: one import each, then verify ----
for N in $SIZES; do
    say "bench-scale: $N items"
    mkdir -p "$W/kc$N"
    export LATCHKEY_KEYCHAIN=$W/kc$N/login.keychain LATCHKEY_DEVICE=$W/kc$N/device.secret
    "$LK" init --no-passcode > /dev/null
    gen_jsonl "$N" > "$W/items$N.jsonl"
    peak "import.$N" "$LK" import "$W/items$N.jsonl"
    rm -f "$W/items$N.jsonl"
    peak "verify.$N" "$LK" verify
    [ -n "$BASE" ] && peak "verify.$N.base" "$BASE" verify
    say "  import $(awk -v s="${RES[import.$N]}" -v n="$N" 'BEGIN { printf "%.2f s (%.0f items/s)", s, n / s }'), peak ${PEAK[import.$N]} KiB; verify ${RES[verify.$N]} s, peak ${PEAK[verify.$N]} KiB"
    # A backup (no password, so no KDF) and its restore into a new keychain, one run each: peak
    # memory that does not grow with the items is issue 16 §3's goal (≤ 128 MiB at 1,000,000).
    peak "backup.$N" "$LK" backup --no-password --output "$W/backup$N.tar"
    LATCHKEY_KEYCHAIN=$W/kc$N/restored.keychain peak "restore.$N" "$LK" restore --no-passcode "$W/backup$N.tar"
    rm -f "$W/backup$N.tar" "$W/kc$N/restored.keychain" "$W/kc$N/restored.keychain.index"
    say "  backup ${RES[backup.$N]} s, peak ${PEAK[backup.$N]} KiB; restore ${RES[restore.$N]} s, peak ${PEAK[restore.$N]} KiB"
    unset LATCHKEY_KEYCHAIN LATCHKEY_DEVICE
done

# ---- single-item commands, every size side by side ----
say "bench-scale: single-item commands ($RUNS runs each, sizes side by side)"
names() { local op=$1 N; for N in $SIZES; do printf '%s.%s ' "$op" "$N"; done
    if [ -n "$BASE" ]; then for N in $SIZES; do printf '%s.%s.base ' "$op" "$N"; done; fi; }
cmds_find=(); cmds_label=(); cmds_add=(); cmds_update=(); cmds_delete=()
for N in $SIZES; do
    K=$((N / 2)); G=$((N / 20))
    counter "add$N" 0; counter "del$N" 0
    cmds_find+=("$(kc "$N") $LK find --account user$K --service bench")
    cmds_label+=("$(kc "$N") $LK find --label 'group $G' --limit all --return attributes")
    cmds_add+=("$(next "add$N"); $(kc "$N") $LK add --account add\$i --service bench < $W/secret")
    cmds_update+=("$(kc "$N") $LK update --account user$K --service bench --set-data < $W/newsecret")
    cmds_delete+=("$(next "del$N"); $(kc "$N") $LK delete --account user\$i --service bench")
done
# With a baseline, the same commands through the earlier build, after this build's (names.base).
if [ -n "$BASE" ]; then
    for N in $SIZES; do
        K=$((N / 2)); G=$((N / 20))
        counter "baseadd$N" 0; counter "basedel$N" $((N / 2 + 1))   # past user$K, which find and update use
        cmds_find+=("$(kc "$N") $BASE find --account user$K --service bench")
        cmds_label+=("$(kc "$N") $BASE find --label 'group $G' --limit all --return attributes")
        cmds_add+=("$(next "baseadd$N"); $(kc "$N") $BASE add --account baseadd\$i --service bench < $W/secret")
        cmds_update+=("$(kc "$N") $BASE update --account user$K --service bench --set-data < $W/newsecret")
        cmds_delete+=("$(next "basedel$N"); $(kc "$N") $BASE delete --account user\$i --service bench")
    done
fi
# shellcheck disable=SC2046
measure $(names find) -- "${cmds_find[@]}"
# shellcheck disable=SC2046
measure $(names label) -- "${cmds_label[@]}"
# shellcheck disable=SC2046
measure $(names add) -- "${cmds_add[@]}"
# shellcheck disable=SC2046
measure $(names update) -- "${cmds_update[@]}"
# shellcheck disable=SC2046
measure $(names delete) -- "${cmds_delete[@]}"
# The history (spec/FORMAT.md §7.7): an update that keeps no version beside one that does (the
# default), and the history of one item, which reads every record of the file (O(file)).
hist_names=(); hist_cmds=(); nohist_names=(); nohist_cmds=()
for N in $SIZES; do
    K=$((N / 2))
    nohist_names+=("updatenohist.$N" "updatehist.$N")
    nohist_cmds+=("$(kc "$N") LATCHKEY_HISTORY_VERSIONS=0 $LK update --account user$((K + 1)) --service bench --set-data < $W/newsecret"
        "$(kc "$N") $LK update --account user$((K + 2)) --service bench --set-data < $W/newsecret")
    hist_names+=("history.$N"); hist_cmds+=("$(kc "$N") $LK history bench/user$K")
done
measure "${nohist_names[@]}" -- "${nohist_cmds[@]}"
measure "${hist_names[@]}" -- "${hist_cmds[@]}"
for N in $SIZES; do
    peak "findpeak.$N" env LATCHKEY_KEYCHAIN="$W/kc$N/login.keychain" LATCHKEY_DEVICE="$W/kc$N/device.secret" \
        "$LK" find --account "user$((N / 2))" --service bench
done

# ---- the worst case of a single-item command: the tail at the index rewrite limit ----
# A writer rewrites the index once the records after it pass max(256 KiB, index size / 64)
# (spec/FORMAT.md §17.6); every open applies the records up to that point. One import fills the
# tail of the largest keychain to 95% of the limit (the index is not rewritten: checked), then a
# find there runs side by side with a find at the smallest size.
LASTN=${SIZES##* }; FIRSTN=${SIZES%% *}
KCF=$W/kc$LASTN/login.keychain
covered() { od -An -tu8 --endian=big -j64 -N8 "$KCF.index" | tr -d ' '; }
if [ -f "$KCF.index" ]; then
    before=$(covered); size=$(stat -c %s "$KCF"); isize=$(stat -c %s "$KCF.index")
    limit=$(( isize / 64 > 262144 ? isize / 64 : 262144 )); tail=$(( size - before ))
    per=$(( size / LASTN )); fill=$(( (limit * 95 / 100 - tail) / per ))
    if [ "$fill" -gt 0 ]; then
        awk -v n="$fill" -v d="$SECRET_B64" 'BEGIN { for (i = 0; i < n; i++)
            printf "{\"class\":\"genp\",\"acct\":\"tail%d\",\"svce\":\"bench\",\"v_Data\":\"%s\"}\n", i, d }' > "$W/tail.jsonl"
        LATCHKEY_KEYCHAIN=$KCF LATCHKEY_DEVICE=$W/kc$LASTN/device.secret "$LK" import "$W/tail.jsonl" > /dev/null
        rm -f "$W/tail.jsonl"
    fi
    if [ "$(covered)" = "$before" ]; then
        TAILBYTES=$(( $(stat -c %s "$KCF") - before )); TAILLIMIT=$limit
        say "bench-scale: find at $LASTN items with $TAILBYTES bytes after the index (limit $limit), against $FIRSTN items"
        measure tailbase tailfull -- "$(kc "$FIRSTN") $LK find --account user$((FIRSTN / 2)) --service bench" \
            "$(kc "$LASTN") $LK find --account user$((LASTN / 2)) --service bench"
    else
        say "bench-scale: the tail import rewrote the index; the worst case is not measured"
    fi
fi

# ---- the process floor ----
say "bench-scale: latchkey --version against /bin/true"
if [ -n "$BASE" ]; then
    RUNS=$FAST_RUNS WARMUP=$FAST_WARMUP measure version true version.base -- -N "$LK --version" "/bin/true" "$BASE --version"
else
    RUNS=$FAST_RUNS WARMUP=$FAST_WARMUP measure version true -- -N "$LK --version" "/bin/true"
fi

# ---- the agent at 10,000 items, against pass show ----
# Both in one hyperfine invocation, side by side, each process run directly (-N, no shell): the
# keychain, agent socket and password store are in the exported environment, so no shell's
# start-up (which hyperfine can only estimate and subtract) is part of either number.
AGENT_N=10000
HAVE_AGENT=0; HAVE_PASS=0
if [ -d "$W/kc$AGENT_N" ] && LATCHKEY_AGENT_SOCK=$AGENT_SOCK "$LK" agent --daemon > /dev/null 2>&1; then
    HAVE_AGENT=1
fi
if [ "$HAVE_AGENT" = 1 ] && command -v pass >/dev/null && command -v gpg >/dev/null; then
    cat > "$W/keygen" <<EOF
%no-protection
Key-Type: default
Subkey-Type: default
Name-Real: Latchkey Bench
Name-Email: bench@latchkey.invalid
Expire-Date: 0
%commit
EOF
    if gpg --batch --quiet --gen-key "$W/keygen" 2>/dev/null; then
        export PASSWORD_STORE_DIR=$W/pass
        pass init bench@latchkey.invalid > /dev/null
        pass insert -m bench/user1 < "$W/secret" > /dev/null
        HAVE_PASS=1
    fi
fi
if [ "$HAVE_AGENT" = 1 ]; then
    export LATCHKEY_AGENT_SOCK=$AGENT_SOCK LATCHKEY_KEYCHAIN=$W/kc$AGENT_N/login.keychain LATCHKEY_DEVICE=$W/kc$AGENT_N/device.secret
    if [ "$HAVE_PASS" = 1 ]; then
        say "bench-scale: find through the agent at $AGENT_N items, and pass show, side by side"
        RUNS=$FAST_RUNS WARMUP=$FAST_WARMUP measure agentfind passshow -- -N "$LK find --account user$((AGENT_N / 2)) --service bench" "pass show bench/user1"
    else
        say "bench-scale: find through the agent at $AGENT_N items"
        RUNS=$FAST_RUNS WARMUP=$FAST_WARMUP measure agentfind -- -N "$LK find --account user$((AGENT_N / 2)) --service bench"
    fi
    unset LATCHKEY_AGENT_SOCK LATCHKEY_KEYCHAIN LATCHKEY_DEVICE PASSWORD_STORE_DIR
fi
# ---- the library's find, in one process ----
# latchkey-bench --index with LK_HOT_DIR: a first process builds a keychain of N items through
# the library (in $W) and keeps it; a second one, as an application would, opens it and times
# 200,000 finds by unique key at random (the median, in µs). Measured in the process that had
# just added the million items, the same finds took 7.6–11.3 µs from run to run.
libfind() {
    local n=$1 line bench=${2:-$LKBENCH} key=libfind.$1${3:-}
    mkdir -p "$W/lib$n"
    line=$(LK_HOT_DIR=$W/lib$n "$bench" --index --items "$n" 2>&1) || { say "bench-scale: latchkey-bench --index failed:"; say "$line"; exit 1; }
    line=$(LK_HOT_DIR=$W/lib$n "$bench" --index --items "$n" 2>&1) || { say "bench-scale: latchkey-bench --index failed:"; say "$line"; exit 1; }
    RES[$key]=$(printf '%s\n' "$line" | sed -n 's/^hot find=\([0-9.]*\)us.*/\1/p')
    rm -rf "$W/lib$n"
    say "  library find at $n items${3:+ (baseline)}: ${RES[$key]} µs"
}
say "bench-scale: the library's find by unique key in an open keychain"
# With a baseline, the two builds alternate, twice each, at the largest size.
libfind "${SIZES%% *}"
if [ "${SIZES##* }" != "${SIZES%% *}" ]; then
    if [ -n "$BASE" ]; then
        libfind "${SIZES##* }" "$BASEBENCH" .base; BASE1=${RES[libfind.${SIZES##* }.base]}
        libfind "${SIZES##* }"; AFTER1=${RES[libfind.${SIZES##* }]}
        libfind "${SIZES##* }" "$BASEBENCH" .base; BASE2=${RES[libfind.${SIZES##* }.base]}
        libfind "${SIZES##* }"; AFTER2=${RES[libfind.${SIZES##* }]}
        LIBFIND_PAIRS="before $BASE1, $BASE2 µs; after $AFTER1, $AFTER2 µs"
    else
        libfind "${SIZES##* }"
    fi
fi

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(( $(date +%s) - T_START ))

# ---- the report ----
ms() { awk -v s="$1" 'BEGIN { if (s == "") print "–"; else if (s >= 1) printf "%.2f s", s; else printf "%.2f ms", s * 1000 }'; }
mib() { awk -v k="$1" 'BEGIN { if (k == "") print "–"; else printf "%.0f MiB", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f×", a / b }'; }
# le A B / ge A B: "met" when A ≤ B (A ≥ B), else "missed"; "–" when either is missing.
le() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "–"; else print (a + 0 <= b + 0) ? "met" : "missed" }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "–"; else print (a + 0 >= b + 0) ? "met" : "missed" }'; }
commas() { printf '%s' "$1" | sed -e :a -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/;ta'; }
FIRST=${SIZES%% *}
LAST=${SIZES##* }
REPORT=$OUT/report.md
{
    echo "latchkey $LK_VERSION ($LK_COMMIT, release build: ${RELEASE_FLAGS[*]}); keychains without a passcode, no agent unless said; hyperfine $(hyperfine --version | awk '{print $2}'), GNU time for peak memory"
    echo "$(nproc) cores, $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME"); $(date -u '+%Y-%m-%d %H:%M UTC'); load average $LOAD_START at start, $LOAD_END at the end; $ELAPSED s in all"
    echo "Medians of $RUNS runs of each command (every size side by side, in $ROUNDS hyperfine rounds of $(( (RUNS + ROUNDS - 1) / ROUNDS )) runs after $WARMUP warm-up runs, the order of the sizes turned every round; $FAST_RUNS runs, $FAST_WARMUP warm-up runs a round, for --version, /bin/true, the agent's find and pass show); a ratio is of the medians, with the lowest and highest of the per-round ratios beside it. Import and verify: one run each."
    echo
    printf '| what |'; for N in $SIZES; do printf ' %s |' "$(commas "$N")"; done; echo
    printf '|---|'; for _ in $SIZES; do printf -- '---|'; done; echo
    row() { local label=$1 key=$2 fmt=$3 N; printf '| %s |' "$label"
        for N in $SIZES; do
            case $fmt in
                ms) printf ' %s |' "$(ms "${RES[$key.$N]:-}")" ;;
                s) printf ' %s |' "$(awk -v s="${RES[$key.$N]:-}" 'BEGIN { if (s == "") print "–"; else printf "%.2f s", s }')" ;;
                mib) printf ' %s |' "$(mib "${PEAK[$key.$N]:-}")" ;;
                rate) printf ' %s |' "$(awk -v s="${RES[$key.$N]:-}" -v n="$N" 'BEGIN { if (s == "" || s == 0) print "–"; else printf "%s s, %.0f items/s", s, n / s }')" ;;
            esac
        done; echo; }
    row "find by unique key" find ms
    row "add one" add ms
    row "update one" update ms
    row "delete one" delete ms
    row "update one, keeping no history (LATCHKEY_HISTORY_VERSIONS=0)" updatenohist ms
    row "update one, keeping its version (the default; same round)" updatehist ms
    row "history of one item (reads the whole file)" history ms
    row "find on a label 10 items share" label ms
    row "peak memory of one find" findpeak mib
    row "import (the whole keychain, one run)" import rate
    row "peak memory of the import" import mib
    row "verify (GNU time, 10 ms steps)" verify s
    row "peak memory of verify" verify mib
    row "backup, no password (one run)" backup s
    row "peak memory of the backup" backup mib
    row "its restore into a new keychain (one run)" restore s
    row "peak memory of the restore" restore mib
    echo
    echo "| target (issue 16) | measured | ratio | result |"
    echo "|---|---|---|---|"
    at="at $(commas "$LAST") items"
    for op in find add update delete; do
        r=$(awk -v a="${RES[$op.$LAST]}" -v b="${RES[$op.$FIRST]}" 'BEGIN { print a / b }')
        echo "| CLI $op $at ≤ 1.5× at $(commas "$FIRST") | $(ms "${RES[$op.$LAST]}") vs $(ms "${RES[$op.$FIRST]}") | $(ratio "${RES[$op.$LAST]}" "${RES[$op.$FIRST]}") ($(spread "$op.$LAST" "$op.$FIRST")) | $(le "$r" 1.5) |"
    done
    if [ -n "${RES[tailfull]:-}" ]; then
        r=$(awk -v a="${RES[tailfull]}" -v b="${RES[tailbase]}" 'BEGIN { print a / b }')
        echo "| worst case: CLI find $at with $(commas "$TAILBYTES") bytes of records after the index (the rewrite limit is $(commas "$TAILLIMIT")), ≤ 1.5× at $(commas "$FIRST") | $(ms "${RES[tailfull]}") vs $(ms "${RES[tailbase]}") | $(ratio "${RES[tailfull]}" "${RES[tailbase]}") ($(spread tailfull tailbase)) | $(le "$r" 1.5) |"
    fi
    echo "| peak memory of one find $at ≤ 64 MiB | $(mib "${PEAK[findpeak.$LAST]}") | | $(le "${PEAK[findpeak.$LAST]}" 65536) |"
    r=$(awk -v a="${RES[label.$LAST]}" -v b="${RES[find.$LAST]}" 'BEGIN { print a / b }')
    echo "| find on a non-unique attribute (≤ 10 matches) $at ≤ 2× find by unique key | $(ms "${RES[label.$LAST]}") vs $(ms "${RES[find.$LAST]}") | $(ratio "${RES[label.$LAST]}" "${RES[find.$LAST]}") (not paired by round: two measurements) | $(le "$r" 2) |"
    rate=$(awk -v s="${RES[import.$LAST]}" -v n="$LAST" 'BEGIN { printf "%.0f", n / s }')
    echo "| import $at: ≥ 100,000 items/s | $(commas "$rate") items/s | | $(ge "$rate" 100000) |"
    echo "| import $at: peak ≤ 256 MiB | $(mib "${PEAK[import.$LAST]}") | | $(le "${PEAK[import.$LAST]}" 262144) |"
    echo "| verify $at ≤ 3 s | $(ms "${RES[verify.$LAST]}") | | $(le "${RES[verify.$LAST]}" 3) |"
    r=$(awk -v a="${RES[version]}" -v b="${RES[true]}" 'BEGIN { print a / b }')
    echo "| \`latchkey --version\` ≤ 3× /bin/true | $(ms "${RES[version]}") vs $(ms "${RES[true]}") | $(ratio "${RES[version]}" "${RES[true]}") ($(spread version true)) | $(le "$r" 3) |"
    if [ "$HAVE_AGENT" = 1 ]; then
        echo "| CLI find through the agent at 10,000 items ≤ 3 ms | $(ms "${RES[agentfind]}") | $(printf '%s\n' ${ROUND_MEDIANS[agentfind]} | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END { printf "rounds %.2f–%.2f ms", lo * 1000, hi * 1000 }') | $(le "${RES[agentfind]}" 0.003) |"
        if [ "$HAVE_PASS" = 1 ]; then
            r=$(awk -v a="${RES[passshow]}" -v b="${RES[agentfind]}" 'BEGIN { print a / b }')
            echo "| … ≥ 8× faster than \`pass show\` | $(ms "${RES[passshow]}") | $(ratio "${RES[passshow]}" "${RES[agentfind]}") ($(spread passshow agentfind)) | $(ge "$r" 8) |"
        else
            echo "| … ≥ 8× faster than \`pass show\` | pass or gpg not installed | | not measured |"
        fi
    else
        echo "| CLI find through the agent at 10,000 items | no agent could be started, or 10,000 not among the sizes | | not measured |"
    fi
    echo "| library find by unique key $at ≤ 5 µs | ${RES[libfind.$LAST]:-–} µs (${RES[libfind.$FIRST]:-–} µs at $(commas "$FIRST")) | | $(le "${RES[libfind.$LAST]:-}" 5) |"
    echo "| with a passcode: KDF + 30 ms per single-item command | \`make bench-peers\` | | not measured here |"
    [ "$LAST" != 1000000 ] && echo && echo "The targets are stated at 1,000,000 items; this run stops at $(commas "$LAST") (SCALE_1M=1 adds 1M)."
    if [ -n "$BASE" ]; then
        echo
        echo "Before and after, side by side in the same rounds on the same keychains: before = $BASE_COMMIT ($("$BASE" --version 2>/dev/null | head -1)), after = $LK_COMMIT. Ratio after/before of the medians, per-round ratios beside it."
        echo
        echo "| what | items | before | after | after/before |"
        echo "|---|---|---|---|---|"
        for op in find add update delete label; do
            for N in $SIZES; do
                echo "| $op | $(commas "$N") | $(ms "${RES[$op.$N.base]}") | $(ms "${RES[$op.$N]}") | $(ratio "${RES[$op.$N]}" "${RES[$op.$N.base]}") ($(spread "$op.$N" "$op.$N.base")) |"
            done
        done
        for N in $SIZES; do
            echo "| verify (one run each) | $(commas "$N") | $(ms "${RES[verify.$N.base]}") | $(ms "${RES[verify.$N]}") | $(ratio "${RES[verify.$N]}" "${RES[verify.$N.base]}") |"
        done
        echo "| --version | | $(ms "${RES[version.base]}") | $(ms "${RES[version]}") | $(ratio "${RES[version]}" "${RES[version.base]}") ($(spread version version.base)) |"
        [ -n "${LIBFIND_PAIRS:-}" ] && echo "| library find by unique key (200,000 finds, median; two alternating runs each) | $(commas "$LAST") | $LIBFIND_PAIRS | | |"
    fi
    true
} > "$REPORT"
cat "$REPORT"
say "bench-scale: report in $REPORT"
