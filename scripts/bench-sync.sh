#!/usr/bin/env bash
# bench-sync: what `latchkey sync` costs (issue 29's targets), measured side by side in one run.
#   SYNC_SIZES="100 100000" (items on each machine), SYNC_RUNS=5, SYNC_BUILD=1 (0: use the built binary)
# For each size: two machines share a bare git repository (file://); machine A changes one
# item and runs `latchkey sync`; B runs `latchkey sync` and receives it. Then the first sync of a
# new machine that joins a circle of that size (time and peak memory, GNU time). With `pass`
# installed, the same one change through `pass git push` / `pass git pull` on a pass store of the
# same size, on the same machine, for comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SYNC_SIZES:-"100 100000"}
RUNS=${SYNC_RUNS:-5}
if [ "${SYNC_BUILD:-1}" = 1 ]; then make -s release >/dev/null; fi
BIN=$(swift build -c release --show-bin-path)/latchkey
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lk-bench-sync.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 LATCHKEY_PASSCODE=bench
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
machine() { # name → env prefix
  echo "env LATCHKEY_KEYCHAIN=$WORK/$1/login.keychain LATCHKEY_DEVICE=$WORK/$1/device XDG_RUNTIME_DIR=$WORK/$1"
}
echo "# bench-sync $(date -u +%F) commit $(git rev-parse --short HEAD) on $(nproc) cores, $(uname -r)"
echo "# median of $RUNS runs, seconds"
printf '%-8s %-22s %-22s %-26s\n' items "sync (A sends 1)" "sync (B receives 1)" "first sync of a new machine"
for n in $SIZES; do
  rm -rf "$WORK"/*
  git init -q --bare "$WORK/remote.git"
  for m in a b; do mkdir -p "$WORK/$m"; $(machine $m) "$BIN" init --kdf-log-n 10 </dev/null 2>/dev/null; done
  python3 - "$n" > "$WORK/items.jsonl" <<'PY'
import sys, base64, json
for i in range(int(sys.argv[1])):
    print(json.dumps({"class": "genp", "svce": "bench", "acct": "user%d" % i, "sync": 1, "pdmn": "ck",
                      "v_Data": base64.b64encode(b"secret-%d" % i).decode()}))
PY
  $(machine a) "$BIN" import "$WORK/items.jsonl" >/dev/null
  $(machine a) "$BIN" sync init --remote "file://$WORK/remote.git" --name a >/dev/null 2>&1
  code=$($(machine b) "$BIN" sync join --remote "file://$WORK/remote.git" --name b 2>/dev/null)
  $(machine a) "$BIN" sync approve "$code" 2>/dev/null
  $(machine b) "$BIN" sync 2>/dev/null
  send=(); recv=()
  for r in $(seq "$RUNS"); do
    printf 'changed-%s' "$r" | $(machine a) "$BIN" update --service bench --account user1 --synchronizable yes --set-data >/dev/null
    t0=$(now); $(machine a) "$BIN" sync 2>/dev/null; t1=$(now)
    $(machine b) "$BIN" sync 2>/dev/null; t2=$(now)
    send+=("$(echo "$t1 - $t0" | bc)"); recv+=("$(echo "$t2 - $t1" | bc)")
  done
  got=$($(machine b) "$BIN" find --service bench --account user1 --synchronizable yes)
  [ "$got" = "changed-$RUNS" ] || { echo "bench-sync: B did not receive the change ($got)"; exit 1; }
  # A new machine joins and makes its first sync (GNU time: elapsed and peak RSS).
  mkdir -p "$WORK/c"; $(machine c) "$BIN" init --kdf-log-n 10 </dev/null 2>/dev/null
  code=$($(machine c) "$BIN" sync join --remote "file://$WORK/remote.git" --name c 2>/dev/null)
  $(machine a) "$BIN" sync approve "$code" 2>/dev/null
  first=$( { /usr/bin/time -f '%e s, %M KiB' $(machine c) "$BIN" sync 2>&1 >/dev/null; } | tail -1)
  count=$($(machine c) "$BIN" find --service bench --synchronizable yes --limit all --return attributes | grep -c '"acct"' || true)
  printf '%-8s %-22s %-22s %-26s\n' "$n" "$(printf '%s\n' "${send[@]}" | median)" "$(printf '%s\n' "${recv[@]}" | median)" "$first ($count items)"
done
if command -v pass >/dev/null && command -v gpg >/dev/null; then
  echo "# pass: one change, 'pass git push' on one store and 'pass git pull' on a clone (same sizes)"
  for n in $SIZES; do
    P="$WORK/pass-$n"; mkdir -p "$P/gnupg"; chmod 700 "$P/gnupg"
    export GNUPGHOME="$P/gnupg"
    gpg --batch --passphrase '' --quick-gen-key bench@example.com default default never 2>/dev/null
    export PASSWORD_STORE_DIR="$P/store"
    pass init bench@example.com >/dev/null; pass git init >/dev/null
    # Entries written directly (pass insert at 100,000 would take hours): one gpg call encrypts a template.
    mkdir -p "$P/store/bench"; echo secret | gpg --batch -e -r bench@example.com -o "$P/template.gpg"
    python3 - "$n" "$P" <<'PY'
import sys, shutil
n, p = int(sys.argv[1]), sys.argv[2]
for i in range(n): shutil.copyfile(p + "/template.gpg", "%s/store/bench/user%d.gpg" % (p, i))
PY
    git -C "$P/store" add -A >/dev/null; git -C "$P/store" commit -qm init
    git init -q --bare "$P/remote.git"; git -C "$P/store" remote add origin "$P/remote.git"
    git -C "$P/store" push -q origin HEAD:master 2>/dev/null; git -C "$P/store" branch -q -u origin/master 2>/dev/null || true
    git clone -q -b master "$P/remote.git" "$P/clone"
    push=(); pull=()
    for r in $(seq "$RUNS"); do
      echo "changed-$r" | pass insert -f -e bench/user1 >/dev/null
      t0=$(now); pass git push -q origin HEAD:master 2>/dev/null; t1=$(now)
      PASSWORD_STORE_DIR="$P/clone" pass git pull -q origin master 2>/dev/null; t2=$(now)
      push+=("$(echo "$t1 - $t0" | bc)"); pull+=("$(echo "$t2 - $t1" | bc)")
    done
    printf '%-8s %-22s %-22s\n' "$n" "$(printf '%s\n' "${push[@]}" | median) (pass git push)" "$(printf '%s\n' "${pull[@]}" | median) (pass git pull)"
  done
else
  echo "# pass or gpg not installed: no comparison (make deps installs pass)"
fi
