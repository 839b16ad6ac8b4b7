#!/usr/bin/env bash
# bench-peers.sh — `make bench-peers`: the same CLI workload on latchkey, keepassxc-cli and
# pass, each at its default security settings, measured in one run (issue 8, items 2 and 3).
#
# For each N in PEERS_SIZES (default "100 1000 10000") every tool gets a fresh store of N
# items, then hyperfine times single CLI commands on it: add one, find one (print one secret),
# update one, delete one, list all; plus create, backup and restore, and the bytes on disk per
# item. The bulk of each store is written the fast way (`latchkey import`, `keepassxc-cli
# import` of a KeePass XML file, gpg --multifile for pass) because 10,000 single
# `keepassxc-cli add`s take hours; the timed adds are real single CLI adds into the N-item
# store. latchkey is timed twice: through an unlocked agent (as pass relies on gpg-agent) and
# without one (each command opens the file and runs the KDF).
#
# Everything happens in a temporary directory with its own HOME, GNUPGHOME, XDG directories,
# agent socket and password store; every agent started here is stopped on exit. Passwords and
# passcodes reach the tools through 0600 files on stdin or the environment, never argv.
#
# Environment: PEERS_SIZES, PEERS_RUNS (runs per fast command, default 20), PEERS_SLOW_RUNS
# (keepassxc-cli and other commands that take ≥ 0.1 s, default 10), PEERS_WARMUP (default 2),
# PEERS_ROUNDS (rounds of latchkey's single-item commands across the sizes, default 3),
# PEERS_KEEP=1 keeps the temporary directory, PEERS_BUILD=0 uses the binaries already built,
# PEERS_STATIC=0 links latchkey's Swift runtime dynamically, PEERS_BASELINE=DIR (a checkout of
# an earlier commit with its release latchkey built: latchkey's single-item commands and list all
# also run through that build, with and without its own agent, on a copy of each keychain, in the
# same rounds; the report ends with a before/after table), PEERS_OUT (where the hyperfine JSON and the
# table go; default $SCRATCH/bench-peers), SCRATCH (SwiftPM scratch path), SWIFT.
set -euo pipefail

SWIFT=${SWIFT:-swift}
SIZES=${PEERS_SIZES:-100 1000 10000}
RUNS=${PEERS_RUNS:-20}
SLOW_RUNS=${PEERS_SLOW_RUNS:-10}
WARMUP=${PEERS_WARMUP:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPM_FLAGS=()
[ -n "${SCRATCH:-}" ] && SPM_FLAGS=(--scratch-path "$SCRATCH")
OUT=${PEERS_OUT:-$ROOT/${SCRATCH:-.build}/bench-peers}
# latchkey is built as `make release` builds it (LATCHKEY_RELEASE_FLAGS, from the Makefile;
# else the Swift runtime linked statically), PEERS_STATIC=0 for the dynamically linked binary.
read -r -a STATIC_FLAGS <<< "${LATCHKEY_RELEASE_FLAGS:---static-swift-stdlib}"
[ "${PEERS_STATIC:-1}" = 0 ] && STATIC_FLAGS=()

say() { printf '%s\n' "$*" >&2; }

# ---- 1. the peers, from Debian's packages, when missing ----
missing=""
command -v keepassxc-cli >/dev/null || missing="$missing keepassxc"
command -v pass >/dev/null || missing="$missing pass"
command -v gpg >/dev/null || missing="$missing gnupg"
command -v hyperfine >/dev/null || missing="$missing hyperfine"
command -v jq >/dev/null || missing="$missing jq"
if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    say "bench-peers: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

# ---- 2. the release latchkey (and latchkey-bench, for the KDF alone) ----
cd "$ROOT"
if [ "${PEERS_BUILD:-1}" != 0 ]; then
    say "bench-peers: building latchkey and latchkey-bench (release)"
    "$SWIFT" build -c release --product latchkey "${STATIC_FLAGS[@]}" "${SPM_FLAGS[@]}" >&2
    "$SWIFT" build -c release --product latchkey-bench "${SPM_FLAGS[@]}" >&2
fi
BIN=$("$SWIFT" build -c release "${SPM_FLAGS[@]}" --show-bin-path)
LK=$BIN/latchkey
LKBENCH=$BIN/latchkey-bench
BASE=""; BASE_COMMIT=""
if [ -n "${PEERS_BASELINE:-}" ]; then
    BASE=$(cd "$PEERS_BASELINE" && "$SWIFT" build -c release --show-bin-path)/latchkey
    [ -x "$BASE" ] || { say "bench-peers: no release latchkey in $PEERS_BASELINE: build it there first"; exit 2; }
    BASE_COMMIT=$(git -C "$PEERS_BASELINE" rev-parse --short HEAD 2>/dev/null || echo unknown)
fi

# ---- 3. a private world in a temporary directory ----
umask 077
W=$(mktemp -d /tmp/lk-peers.XXXXXX)
mkdir -p "$OUT" "$W/home" "$W/gnupg" "$W/run" "$W/data" "$W/config" "$W/cache" "$W/t"
export HOME=$W/home GNUPGHOME=$W/gnupg XDG_RUNTIME_DIR=$W/run XDG_DATA_HOME=$W/data \
       XDG_CONFIG_HOME=$W/config XDG_CACHE_HOME=$W/cache TMPDIR=$W/t
export LATCHKEY_AGENT_SOCK=$W/run/latchkey-agent.sock LATCHKEY_APP_ID=bench.app
unset LATCHKEY_KEYCHAIN LATCHKEY_DEVICE LATCHKEY_PASSCODE LATCHKEY_ENTITLEMENTS LATCHKEY_BACKUP_PASSWORD \
      PASSWORD_STORE_DIR PASSWORD_STORE_KEY PASSWORD_STORE_GIT 2>/dev/null || true

cleanup() {
    set +e
    env -u LATCHKEY_PASSCODE "$LK" agent --stop >/dev/null 2>&1
    [ -n "$BASE" ] && env -u LATCHKEY_PASSCODE LATCHKEY_AGENT_SOCK="$W/run/base-agent.sock" "$BASE" agent --stop >/dev/null 2>&1
    gpgconf --kill all >/dev/null 2>&1
    if [ "${PEERS_KEEP:-0}" = 1 ]; then say "bench-peers: kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Secrets: random per run, in 0600 files (umask 077); only their paths are ever in argv.
PASSCODE=$(head -c 18 /dev/urandom | base64)
printf '%s\n' "$PASSCODE" > "$W/kx.pw"                                      # keepassxc: open
printf '%s\n%s\n' "$PASSCODE" "$PASSCODE" > "$W/kx.pw2"                     # keepassxc: set, repeat
printf '%s\nnew secret 0123456789abcdefghij\n' "$PASSCODE" > "$W/kx.pwitem" # keepassxc: open, entry password
SECRET="correct horse battery staple 0123456789"                             # 39 bytes, as latchkey-bench
printf '%s\n' "$SECRET" > "$W/secret"
printf 'new secret 0123456789abcdefghij\n' > "$W/newsecret"
export LATCHKEY_BACKUP_PASSWORD=$(head -c 18 /dev/urandom | base64)
# Commands without the agent take the passcode from this variable (LATCHKEY_PASSCODE=$LK_PC
# in the timed command); commands through the agent get no passcode at all.
export LK_PC=$PASSCODE

KEEPASSXC_VERSION=$(keepassxc-cli --version 2>/dev/null | head -1)
PASS_VERSION=$(pass version 2>/dev/null | sed -n 's/.*\(v[0-9][0-9.]*\).*/\1/p' | head -1)
GPG_VERSION=$(gpg --version | head -1 | awk '{print $3}')
LK_VERSION=$("$LK" --version 2>/dev/null | head -1)
LK_LINK="Swift runtime linked statically"
ldd "$LK" 2>/dev/null | grep -q libswiftCore && LK_LINK="Swift runtime linked dynamically"
LK_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$ROOT" status --porcelain -- Sources Package.swift 2>/dev/null)" ] && LK_COMMIT="$LK_COMMIT + uncommitted changes"
[ "${PEERS_BUILD:-1}" = 0 ] && LK_COMMIT="binary built $(date -u -r "$LK" '+%H:%M UTC'), tree now at $LK_COMMIT"
HYPERFINE_VERSION=$(hyperfine --version | awk '{print $2}')

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
say "bench-peers: load average at start $LOAD_START; work directory $W"

# ---- measuring ----
# hyperfine NAME RUNS [hyperfine options...] -- COMMAND: the median in seconds goes into
# RES[NAME]; the JSON is kept in $OUT. Commands run under sh; a command that fails aborts.
declare -A RES
measure() {
    local name=$1 runs=$2; shift 2
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    local json="$OUT/$name.json"
    if ! hyperfine --style none --warmup "$WARMUP" --runs "$runs" "${opts[@]}" --export-json "$json" \
            -n "$name" "$1" > "$W/hyperfine.log" 2>&1; then
        say "bench-peers: '$name' failed:"; cat "$W/hyperfine.log" >&2; exit 1
    fi
    RES[$name]=$(jq -r '.results[0].median' "$json")
    say "$(awk -v n="$name" -v s="${RES[$name]}" -v r="$runs" 'BEGIN { printf "  %-26s %10.2f ms  (%d runs)", n, s * 1000, r }')"
}
elapsed() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { print a - b }'; }

# A counter kept in a file and advanced with shell builtins only, so that every run of a
# mutating command (add, delete) names another item at no measurable cost.
counter() { printf '%s\n' "$2" > "$W/$1.ctr"; }
next() { printf 'read i < %s/%s.ctr; echo $((i+1)) > %s/%s.ctr' "$W" "$1" "$W" "$1"; }

# ---- KDF alone and the process floor ----
say "bench-peers: KDF alone (latchkey-bench, 3 runs) and the start-up floor"
KDFS=()
for _ in 1 2 3; do
    line=$("$LKBENCH" --items 100 | grep 'kdf(')
    KDFS+=("$(printf '%s' "$line" | sed -n 's/.*kdf([^)]*)=\([0-9.]*\)ms.*/\1/p')")
    KDF_PARAMS=$(printf '%s' "$line" | sed -n 's/.*kdf(\([^)]*\)).*/\1/p')
done
KDF_MS=$(printf '%s\n' "${KDFS[@]}" | sort -n | sed -n 2p)
[ -n "$KDF_MS" ] && [ -n "$KDF_PARAMS" ] || { say "bench-peers: could not read kdf(…)=…ms from latchkey-bench"; exit 1; }
say "  KDF scrypt($KDF_PARAMS): ${KDFS[*]} ms → median $KDF_MS ms"
measure version "$RUNS" -- "$LK --version"

# pass needs a GPG key without a passphrase: batch generation, default algorithm.
cat > "$W/keygen" <<EOF
%no-protection
Key-Type: default
Subkey-Type: default
Name-Real: Latchkey Bench
Name-Email: bench@latchkey.invalid
Expire-Date: 0
%commit
EOF
T0=$(date +%s.%N)
gpg --batch --quiet --gen-key "$W/keygen" 2>/dev/null
GPG_KEYGEN_S=$(elapsed "$T0")
GPG_KEY_ALGO=$(gpg --list-keys --with-colons bench@latchkey.invalid | awk -F: '$1=="pub"{print ($4==1?"RSA":"algo" $4) "-" $3}')

# The agent, unlocked per keychain below (no passcode in its environment).
eval "$(env -u LATCHKEY_PASSCODE "$LK" agent --daemon)" >/dev/null
export LATCHKEY_AGENT_SOCK=$W/run/latchkey-agent.sock

# ---- generators for the bulk of each store ----
# latchkey: JSON lines; keepassxc: KeePass 2 XML (entry 0 carries custom data, which makes
# KeePassXC 2.7 write KDBX 4; its db-create alone writes KDBX 3.1); pass: plaintext files
# encrypted with one gpg --multifile run, as `pass insert` encrypts them.
SECRET_B64=$(printf '%s' "$SECRET" | base64)
gen_jsonl() {
    awk -v n="$1" -v d="$SECRET_B64" 'BEGIN { for (i = 0; i < n; i++)
        printf "{\"class\":\"genp\",\"acct\":\"user%d\",\"svce\":\"bench\",\"labl\":\"Bench item %d\",\"v_Data\":\"%s\"}\n", i, i, d }'
}
gen_xml() {
    awk -v n="$1" -v s="$SECRET" 'BEGIN {
        b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        print "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>"
        print "<KeePassFile><Meta><Generator>latchkey bench-peers</Generator><RecycleBinEnabled>True</RecycleBinEnabled></Meta>"
        print "<Root><Group><UUID>bGF0Y2hrZXlwZWVyAAAAAA==</UUID><Name>Passwords</Name>"
        for (i = 0; i < n; i++) {
            v = i + 1; u = ""
            for (k = 0; k < 5; k++) { u = substr(b64, v % 64 + 1, 1) u; v = int(v / 64) }
            cd = (i == 0) ? "<CustomData><Item><Key>bench-peers</Key><Value>kdbx4</Value></Item></CustomData>" : ""
            printf "<Entry><UUID>bGF0Y2hrZXlwZWVy%sA==</UUID><String><Key>Title</Key><Value>user%d</Value></String><String><Key>UserName</Key><Value>user%d</Value></String><String><Key>Password</Key><Value ProtectInMemory=\"True\">%s</Value></String>%s</Entry>\n", u, i, i, s, cd
        }
        print "</Group></Root></KeePassFile>" }'
}

declare -A BYTES_APP BYTES_DU
KX_FORMAT=""

for N in $SIZES; do
    say "bench-peers: N = $N"
    K=$((N / 2))           # the item found and updated; deletes take user0, user1, … (fewer than N/2)
    D=$W/n$N; mkdir -p "$D"

    # ---------------- latchkey ----------------
    # The N-item keychain stays until the end: its single-item commands are timed in rounds
    # across all sizes below, so that a change of the machine's load does not pass for a cost in N.
    mkdir -p "$W/lk$N"
    export LATCHKEY_KEYCHAIN=$W/lk$N/login.keychain LATCHKEY_DEVICE=$W/lk$N/device.secret
    measure "lk.create.$N" "$SLOW_RUNS" --prepare "rm -f $D/new.keychain $D/new.device" -- \
        "LATCHKEY_PASSCODE=\$LK_PC LATCHKEY_AGENT_SOCK=none $LK init --keychain $D/new.keychain --device $D/new.device"
    gen_jsonl "$N" > "$D/items.jsonl"
    LATCHKEY_PASSCODE=$PASSCODE LATCHKEY_AGENT_SOCK=none "$LK" init >/dev/null
    T0=$(date +%s.%N)
    LATCHKEY_PASSCODE=$PASSCODE LATCHKEY_AGENT_SOCK=none "$LK" import "$D/items.jsonl" >/dev/null
    RES[lk.bulk.$N]=$(elapsed "$T0")
    BYTES_APP[lk.$N]=$(stat -c %s "$LATCHKEY_KEYCHAIN")
    BYTES_DU[lk.$N]=$(du -B1 -s "$LATCHKEY_KEYCHAIN" | cut -f1)
    # Backup and restore open the file themselves (passcode KDF + the backup password's KDF).
    measure "lk.backup.$N" "$SLOW_RUNS" --prepare "rm -f $D/lk.backup" -- \
        "LATCHKEY_PASSCODE=\$LK_PC $LK backup --output $D/lk.backup"
    measure "lk.restore.$N" "$SLOW_RUNS" --prepare "rm -f $D/restored.keychain $D/restored.device" -- \
        "LATCHKEY_PASSCODE=\$LK_PC $LK restore --keychain $D/restored.keychain --device $D/restored.device $D/lk.backup"
    env -u LATCHKEY_PASSCODE "$LK" lock >/dev/null 2>&1 || true

    # ---------------- keepassxc-cli ----------------
    KDB=$D/db.kdbx
    measure "kx.create.$N" "$SLOW_RUNS" --prepare "rm -f $D/new.kdbx" -- \
        "keepassxc-cli db-create -q --set-password $D/new.kdbx < $W/kx.pw2"
    gen_xml "$N" > "$D/items.xml"
    T0=$(date +%s.%N)
    keepassxc-cli import -q --set-password "$D/items.xml" "$KDB" < "$W/kx.pw2" >/dev/null 2>&1
    RES[kx.bulk.$N]=$(elapsed "$T0")
    rm -f "$D/items.xml"
    KX_FORMAT=$(od -An -tu2 -j8 -N4 "$KDB" | awk '{print $2 "." $1}')
    BYTES_APP[kx.$N]=$(stat -c %s "$KDB")
    BYTES_DU[kx.$N]=$(du -B1 -s "$KDB" | cut -f1)
    counter kxadd 0; counter kxdel 0
    measure "kx.add.$N" "$SLOW_RUNS" -- "$(next kxadd); keepassxc-cli add -q -u add\$i -p $KDB add\$i < $W/kx.pwitem"
    measure "kx.find.$N" "$SLOW_RUNS" -- "keepassxc-cli show -q -s -a password $KDB user$K < $W/kx.pw"
    measure "kx.update.$N" "$SLOW_RUNS" -- "keepassxc-cli edit -q -p $KDB user$K < $W/kx.pwitem"
    measure "kx.delete.$N" "$SLOW_RUNS" -- "$(next kxdel); keepassxc-cli rm -q $KDB user\$i < $W/kx.pw"
    measure "kx.list.$N" "$SLOW_RUNS" -- "keepassxc-cli ls -q -R -f $KDB < $W/kx.pw"
    # The .kdbx is its own encrypted backup: backup = a copy; restore = copy back and open it.
    measure "kx.backup.$N" "$RUNS" --prepare "rm -f $D/backup.kdbx" -- "cp $KDB $D/backup.kdbx"
    measure "kx.restore.$N" "$SLOW_RUNS" --prepare "rm -f $D/restored.kdbx" -- \
        "cp $D/backup.kdbx $D/restored.kdbx && keepassxc-cli db-info -q $D/restored.kdbx < $W/kx.pw"
    # The tool's own export and import (a plaintext XML file in between), for the record.
    measure "kx.export.$N" "$SLOW_RUNS" -- "keepassxc-cli export -q -f xml $KDB < $W/kx.pw > $D/export.xml"
    measure "kx.import.$N" "$SLOW_RUNS" --prepare "rm -f $D/imported.kdbx" -- \
        "keepassxc-cli import -q --set-password $D/export.xml $D/imported.kdbx < $W/kx.pw2"
    rm -f "$D/export.xml"

    # ---------------- pass ----------------
    # The store stays until the end too: pass's single-item commands are in the rounds below.
    export PASSWORD_STORE_DIR=$W/pass$N
    measure "pass.create.$N" "$RUNS" --prepare "rm -rf $D/newstore" -- \
        "PASSWORD_STORE_DIR=$D/newstore pass init bench@latchkey.invalid"
    pass init bench@latchkey.invalid >/dev/null
    T0=$(date +%s.%N)
    mkdir -p "$D/plain" "$PASSWORD_STORE_DIR/bench"
    awk -v n="$N" -v d="$D/plain" -v s="$SECRET" 'BEGIN { for (i = 0; i < n; i++) { f = d "/user" i; print s > f; close(f) } }'
    (cd "$D/plain" && find . -name 'user*' -printf '%f\0' | xargs -0 gpg --batch --quiet --yes --compress-algo=none \
        --no-encrypt-to --trust-model always -r bench@latchkey.invalid --encrypt --multifile)
    mv "$D/plain"/*.gpg "$PASSWORD_STORE_DIR/bench/" 2>/dev/null || \
        find "$D/plain" -name '*.gpg' -exec mv -t "$PASSWORD_STORE_DIR/bench/" {} +
    rm -rf "$D/plain"
    RES[pass.bulk.$N]=$(elapsed "$T0")
    BYTES_APP[pass.$N]=$(find "$PASSWORD_STORE_DIR" -type f -name '*.gpg' -printf '%s\n' | awk '{s += $1} END {print s}')
    BYTES_DU[pass.$N]=$(du -B1 -s "$PASSWORD_STORE_DIR" | cut -f1)
    # A tar of the store is its backup (the GPG secret key has to be backed up separately).
    measure "pass.backup.$N" "$SLOW_RUNS" --prepare "rm -f $D/pass.tar" -- "tar -cf $D/pass.tar -C $W pass$N"
    measure "pass.restore.$N" "$SLOW_RUNS" --prepare "rm -rf $D/restored && mkdir $D/restored" -- \
        "tar -xf $D/pass.tar -C $D/restored"
    unset PASSWORD_STORE_DIR
    rm -rf "$D"
done

# ---- the single-item commands and list all of latchkey and pass, in rounds across the sizes ----
# Each round times add, find, update, delete and list all at every N back to back: latchkey
# through the agent, pass, then latchkey without the agent (the KDF sampled after each of
# those); the medians are over the runs of all rounds.
# (keepassxc-cli's, at up to 2 s a command, stay in the per-size measurements above.)
ROUNDS=${PEERS_ROUNDS:-3}
PER_ROUND=$(( (RUNS + ROUNDS - 1) / ROUNDS ))
DIRECT="LATCHKEY_PASSCODE=\$LK_PC LATCHKEY_AGENT_SOCK=none"
for N in $SIZES; do counter "lkadd$N" 0; counter "lkdel$N" 0; counter "passadd$N" 0; counter "passdel$N" 0; done
lk_key() { if [ "$1" = pass ]; then echo "pass.$2.$3"; else echo "lk.$1.$2.$3"; fi; }
MODES="agent pass direct"
# The baseline: its own agent and a copy of each keychain (same items, same passcode), so that
# neither build's agent or caches serve the other's commands.
if [ -n "$BASE" ]; then
    MODES="agent agentbase pass direct directbase"
    env -u LATCHKEY_PASSCODE LATCHKEY_AGENT_SOCK="$W/run/base-agent.sock" "$BASE" agent --daemon >/dev/null
    for N in $SIZES; do
        cp -a "$W/lk$N" "$W/lkb$N"; counter "lkbadd$N" 0; counter "lkbdel$N" 0
    done
fi
lk_op() { # mode op N → the command
    local mode=$1 op=$2 N=$3 pre="" lk=$LK kc=lk ctr=lk
    case $mode in *base) lk=$BASE; kc=lkb; ctr=lkb ;; esac
    local K=$((N / 2)) env="LATCHKEY_KEYCHAIN=$W/$kc$N/login.keychain LATCHKEY_DEVICE=$W/$kc$N/device.secret"
    case $mode in direct*) env="$env $DIRECT" ;; agentbase) env="$env LATCHKEY_AGENT_SOCK=$W/run/base-agent.sock" ;; esac
    if [ "$mode" = pass ]; then
        env="PASSWORD_STORE_DIR=$W/pass$N"
        case $op in
            add) printf '%s; %s pass insert -m bench/add$i < %s' "$(next "passadd$N")" "$env" "$W/secret" ;;
            find) printf '%s pass show bench/user%d' "$env" "$K" ;;
            list) printf '%s pass ls' "$env" ;;
            update) printf '%s pass insert -f -m bench/user%d < %s' "$env" "$K" "$W/newsecret" ;;
            delete) printf '%s; %s pass rm -f bench/user$i' "$(next "passdel$N")" "$env" ;;
        esac
        return
    fi
    case $op in
        add) printf '%s; %s %s add --account add$i --service bench < %s' "$(next "${ctr}add$N")" "$env" "$lk" "$W/secret" ;;
        find) printf '%s %s find --account user%d --service bench' "$env" "$lk" "$K" ;;
        list) printf '%s %s dump' "$env" "$lk" ;;
        update) printf '%s %s update --account user%d --service bench --set-data < %s' "$env" "$lk" "$K" "$W/newsecret" ;;
        delete) printf '%s; %s %s delete --account user$i --service bench' "$(next "${ctr}del$N")" "$env" "$lk" ;;
    esac
}
# "The KDF" of the goal KDF + 30 ms is sampled right before each run of a command without the
# agent, under the same load (hyperfine's --prepare, which also runs before each warm-up run):
# one `latchkey-bench --kdf-only` (one scrypt in a fresh process, as a command runs it, timed in
# process: no process start or exit in it). Each timed run is then paired with the KDF sampled
# just before it, and the goal is checked on the median of the differences: scrypt's own spread
# on this machine (hundreds of milliseconds between runs, memory-bound on 2 shared cores) moved
# the difference of two separately taken medians by tens of milliseconds from run to run.
for r in $(seq 1 "$ROUNDS"); do
    say "bench-peers: single-item commands and list all of latchkey and pass, round $r of $ROUNDS"
    for N in $SIZES; do
        LATCHKEY_KEYCHAIN=$W/lk$N/login.keychain LATCHKEY_DEVICE=$W/lk$N/device.secret LATCHKEY_PASSCODE=$PASSCODE \
            "$LK" unlock >/dev/null
        [ -n "$BASE" ] && LATCHKEY_KEYCHAIN=$W/lkb$N/login.keychain LATCHKEY_DEVICE=$W/lkb$N/device.secret LATCHKEY_PASSCODE=$PASSCODE \
            LATCHKEY_AGENT_SOCK=$W/run/base-agent.sock "$BASE" unlock >/dev/null
    done
    for mode in $MODES; do
        for op in add find update delete list; do
            for N in $SIZES; do
                key=$(lk_key "$mode" "$op" "$N").r$r
                if [ "${mode#direct}" != "$mode" ]; then
                    : > "$OUT/$key.kdf"
                    measure "$key" "$PER_ROUND" --prepare "$LKBENCH --kdf-only >> $OUT/$key.kdf" -- "$(lk_op "$mode" "$op" "$N")"
                else
                    measure "$key" "$PER_ROUND" -- "$(lk_op "$mode" "$op" "$N")"
                fi
            done
        done
    done
done
cat "$OUT"/lk.direct.*.kdf "$OUT"/lk.directbase.*.kdf 2>/dev/null | sed -n 's/^kdf-only \([0-9.]*\)$/\1/p' > "$OUT/kdf.samples"
KDF_N=$(wc -l < "$OUT/kdf.samples")
[ "$KDF_N" -gt 0 ] || { say "bench-peers: no KDF samples (latchkey-bench --kdf-only printed nothing usable)"; exit 1; }
KDF_ROUNDS_MS=$(sort -n "$OUT/kdf.samples" | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
KDF_RANGE=$(sort -n "$OUT/kdf.samples" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f–%.0f", lo, hi}')
say "  KDF sampled in the rounds: median $KDF_ROUNDS_MS ms of $KDF_N ($KDF_RANGE ms)"
for mode in $MODES; do
    for op in add find update delete list; do
        for N in $SIZES; do
            key=$(lk_key "$mode" "$op" "$N"); files=()
            for r in $(seq 1 "$ROUNDS"); do files+=("$OUT/$key.r$r.json"); done
            RES[$key]=$(jq -s '[.[].results[0].times[]] | sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end' "${files[@]}")
            if [ "${mode#direct}" != "$mode" ]; then
                # Each run's time minus the KDF sampled just before it (the last lines of the
                # .kdf file: the first ones preceded the warm-up runs), in seconds.
                : > "$W/pairs"
                for r in $(seq 1 "$ROUNDS"); do
                    paste <(jq -r '.results[0].times[]' "$OUT/$key.r$r.json") \
                          <(sed -n 's/^kdf-only \([0-9.]*\)$/\1/p' "$OUT/$key.r$r.kdf" | tail -n "$PER_ROUND") \
                        | awk 'NF == 2 { printf "%.6f\n", $1 - $2 / 1000 }' >> "$W/pairs"
                done
                [ "$(wc -l < "$W/pairs")" -eq $(( ROUNDS * PER_ROUND )) ] || { say "bench-peers: $key: runs and KDF samples do not pair up"; exit 1; }
                RES[over.$key]=$(sort -g "$W/pairs" | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
            fi
        done
    done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the report ----
ms() { # seconds → "12.3 ms" / "1.23 s"
    awk -v s="$1" 'BEGIN { if (s == "") print "–"; else if (s >= 1) printf "%.2f s", s; else if (s >= 0.1) printf "%.0f ms", s * 1000; else printf "%.1f ms", s * 1000 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "–"; else { r = a / b
    if (r >= 10) printf "%.0f×", r; else if (r >= 0.1) printf "%.1f×", r; else printf "%.2g×", r } }'; }
commas() { printf '%s' "$1" | sed -e :a -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/;ta'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

REPORT=$OUT/report.md
{
    echo "latchkey $LK_VERSION ($LK_COMMIT, release build, $LK_LINK); keepassxc-cli $KEEPASSXC_VERSION (KDBX $KX_FORMAT, its default AES-KDF and cipher); pass $PASS_VERSION with GnuPG $GPG_VERSION ($GPG_KEY_ALGO key, no passphrase); hyperfine $HYPERFINE_VERSION"
    echo "$(nproc) cores, $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME"); $(date -u '+%Y-%m-%d %H:%M UTC'); load average $LOAD_START at start, $LOAD_END at the end"
    echo "A ratio is the peer's median over latchkey's: above 1, latchkey is faster (or smaller)."
    echo "Medians of $RUNS runs ($SLOW_RUNS for commands of 0.1 s or more, and all of keepassxc-cli) after $WARMUP warm-up runs; add, find, update, delete and list all of latchkey and pass: $ROUNDS rounds of $PER_ROUND runs across all sizes, after the other measurements."
    echo
    echo "- latchkey process floor (\`latchkey --version\`): $(ms "${RES[version]}")"
    echo "- latchkey KDF alone, scrypt($KDF_PARAMS): in a warm process (latchkey-bench, median of 3, before the rest) $KDF_MS ms; in a fresh process, sampled between the commands without the agent (\`latchkey-bench --kdf-only\`, timed in process) $(printf '%.1f' "$KDF_ROUNDS_MS") ms, the median of $KDF_N ($KDF_RANGE ms): the KDF of the goal below"
    echo "- GnuPG key generation for pass (once): $(ms "$GPG_KEYGEN_S")"
    for N in $SIZES; do
        echo
        echo "#### $(commas "$N") items"
        echo
        echo "| operation | latchkey, agent | latchkey, no agent | keepassxc-cli | keepassxc ÷ latchkey (agent / no agent) | pass | pass ÷ latchkey (agent / no agent) |"
        echo "|---|---|---|---|---|---|---|"
        row_cmp() { # label op
            local a=${RES[lk.agent.$2.$N]:-} d=${RES[lk.direct.$2.$N]:-} k=${RES[kx.$2.$N]:-} p=${RES[pass.$2.$N]:-}
            echo "| $1 | $(ms "$a") | $(ms "$d") | $(ms "$k") | $(ratio "$k" "$a") / $(ratio "$k" "$d") | $(ms "$p") | $(ratio "$p" "$a") / $(ratio "$p" "$d") |"
        }
        row_one() { # label latchkey-key keepassxc-key pass-key
            local l=${RES[$2]:-} k=${RES[$3]:-} p=${RES[$4]:-}
            echo "| $1 | $(ms "$l") | | $(ms "$k") | $(ratio "$k" "$l") | $(ms "$p") | $(ratio "$p" "$l") |"
        }
        row_one "create (init / db-create / pass init)" "lk.create.$N" "kx.create.$N" "pass.create.$N"
        row_cmp "add one" add
        row_cmp "find one (print its secret)" find
        row_cmp "update one (new secret)" update
        row_cmp "delete one" delete
        row_cmp "list all" list
        row_one "backup" "lk.backup.$N" "kx.backup.$N" "pass.backup.$N"
        row_one "restore" "lk.restore.$N" "kx.restore.$N" "pass.restore.$N"
        bl=$(awk -v b="${BYTES_APP[lk.$N]}" -v n="$N" 'BEGIN{printf "%.0f", b/n}')
        bk=$(awk -v b="${BYTES_APP[kx.$N]}" -v n="$N" 'BEGIN{printf "%.0f", b/n}')
        bp=$(awk -v b="${BYTES_APP[pass.$N]}" -v n="$N" 'BEGIN{printf "%.0f", b/n}')
        dl=$(awk -v b="${BYTES_DU[lk.$N]}" -v n="$N" 'BEGIN{printf "%.0f", b/n}')
        dk=$(awk -v b="${BYTES_DU[kx.$N]}" -v n="$N" 'BEGIN{printf "%.0f", b/n}')
        dp=$(awk -v b="${BYTES_DU[pass.$N]}" -v n="$N" 'BEGIN{printf "%.0f", b/n}')
        echo "| bytes on disk per item (file sizes; blocks used) | $bl; $dl | | $bk; $dk | $(ratio "$bk" "$bl") | $bp; $dp | $(ratio "$bp" "$bl") |"
        echo
        echo "Bulk load of the $(commas "$N") items (not single adds): latchkey import $(ms "${RES[lk.bulk.$N]}"), keepassxc-cli import $(ms "${RES[kx.bulk.$N]}"), gpg --multifile into the pass store $(ms "${RES[pass.bulk.$N]}"). keepassxc-cli export to plaintext XML $(ms "${RES[kx.export.$N]}"), import of it into a new database $(ms "${RES[kx.import.$N]}")."
    done
    echo
    echo "Backup and restore: latchkey \`backup\` (an archive sealed with a backup password, scrypt N=2^17) and \`restore\` into a new keychain and device secret (verifies every record); keepassxc: a copy of the .kdbx, and restore = copy it back and open it (\`db-info\`); pass: \`tar\` of the store and untar into an empty directory (no check; the GPG secret key is not in it)."
    echo
    echo "#### Goals (issue 8, item 3)"
    echo
    SMALL=$(printf '%s\n' $SIZES | sort -n | head -1); BIG=$(printf '%s\n' $SIZES | sort -n | tail -1)
    verdict() { if "$@"; then echo "met"; else echo "**missed**"; fi; }
    line=""
    for op in find add update delete; do
        r=$(awk -v a="${RES[lk.agent.$op.$BIG]}" -v b="${RES[lk.agent.$op.$SMALL]}" 'BEGIN{printf "%.2f", a/b}')
        rd=$(awk -v a="${RES[lk.direct.$op.$BIG]}" -v b="${RES[lk.direct.$op.$SMALL]}" 'BEGIN{printf "%.2f", a/b}')
        line="$line $op ${r}× (no agent ${rd}×): $(verdict le "$r" 1.5);"
    done
    echo "- Flat in N, at most 1.5× from $(commas "$SMALL") to $(commas "$BIG") items, through the agent:${line%;}"
    line=""
    for op in find add update delete; do
        a=${RES[lk.agent.$op.$BIG]}; k=${RES[kx.$op.$BIG]}
        line="$line $op $(ratio "$k" "$a") ($(ms "$k") vs $(ms "$a")): $(verdict ge "$(awk -v k="$k" -v a="$a" 'BEGIN{print k/a}')" 20);"
    done
    echo "- At $(commas "$BIG") items with the agent, at least 20× faster than keepassxc-cli:${line%;}"
    line=""
    for op in find add update delete; do
        a=${RES[lk.agent.$op.$BIG]}; p=${RES[pass.$op.$BIG]}
        line="$line $op $(ms "$a") vs pass $(ms "$p"): $(verdict le "$a" "$p");"
    done
    echo "- At $(commas "$BIG") items with the agent, no slower than pass:${line%;}"
    limit=$(awk -v k="$KDF_ROUNDS_MS" 'BEGIN{print (k + 30) / 1000}')
    over() { awk -v v="$1" -v k="$KDF_ROUNDS_MS" 'BEGIN{d = v * 1000 - k; printf "%s%.1f ms", (d < 0 ? "−" : "+"), (d < 0 ? -d : d)}'; }
    signed() { awk -v d="$1" 'BEGIN{d *= 1000; printf "%s%.1f ms", (d < 0 ? "−" : "+"), (d < 0 ? -d : d)}'; }
    # The goal bounds a single-item command (the per-operation cost of the goals above): list
    # all decrypts every item, so like import, backup or verify it grows with N and is stated.
    line=""; lines=""; unpaired=""
    for N in $SIZES; do
        worst=""; worstop=""; each=""; each2=""
        for op in find add update delete; do
            v=${RES[over.lk.direct.$op.$N]}
            each="$each $op $(signed "$v"),"
            each2="$each2 $op $(over "${RES[lk.direct.$op.$N]}"),"
            if [ -z "$worst" ] || ge "$v" "$worst"; then worst=$v; worstop=$op; fi
        done
        each=${each%,}
        line="$line $(commas "$N") items: most $worstop $(signed "$worst") $(verdict le "$worst" 0.030) (${each# });"
        unpaired="$unpaired $(commas "$N") items:${each2%,};"
        lines="$lines $(commas "$N") items $(ms "${RES[lk.direct.list.$N]}") (KDF $(over "${RES[lk.direct.list.$N]}"));"
    done
    echo "- Without the agent, a single-item command (find, add, update, delete) costs at most the KDF + 30 ms: each run minus the KDF sampled just before it, median over the $(( ROUNDS * PER_ROUND )) runs of each command:${line%;}"
    echo "- The same against the median KDF of all samples ($(printf '%.1f' "$KDF_ROUNDS_MS") ms; unpaired, moved by scrypt's spread, stated only):${unpaired%;}"
    per=$(awk -v a="${RES[lk.direct.list.$BIG]}" -v b="${RES[lk.direct.list.$SMALL]}" -v n="$BIG" -v m="$SMALL" 'BEGIN{printf "%.1f", (a - b) * 1e6 / (n - m)}')
    echo "- List all without the agent (stated, no bound: it decrypts and prints every item, so it grows with N):${lines%;}; $per µs per item from $(commas "$SMALL") to $(commas "$BIG")"
    echo "- Process start-up floor (\`latchkey --version\`): $(ms "${RES[version]}") (stated, no goal)"
    if [ -n "$BASE" ]; then
        echo
        echo "#### Before and after"
        echo
        echo "Before = $BASE_COMMIT ($("$BASE" --version 2>/dev/null | head -1)), after = $LK_COMMIT: the same commands in the same rounds, each build on its own copy of each keychain and with its own agent; without the agent, each run minus the KDF sampled just before it."
        echo
        echo "| operation | items | agent: before | after | after/before | no agent, over the KDF: before | after |"
        echo "|---|---|---|---|---|---|---|"
        for op in find add update delete list; do
            for N in $SIZES; do
                echo "| $op | $(commas "$N") | $(ms "${RES[lk.agentbase.$op.$N]}") | $(ms "${RES[lk.agent.$op.$N]}") | $(ratio "${RES[lk.agent.$op.$N]}" "${RES[lk.agentbase.$op.$N]}") | $(signed "${RES[over.lk.directbase.$op.$N]}") | $(signed "${RES[over.lk.direct.$op.$N]}") |"
            done
        done
    fi
} > "$REPORT"
missed=$({ grep -o 'missed\*\*' "$REPORT" || true; } | wc -l)   # grep finds nothing when all are met
{ echo; if [ "$missed" = 0 ]; then echo "All goals met."; else echo "$missed of the goal checks above missed."; fi; } >> "$REPORT"
cat "$REPORT"
say "bench-peers: report in $REPORT, hyperfine JSON beside it"
