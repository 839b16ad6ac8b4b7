#!/usr/bin/env bash
# make bench-secret-service: the Secret Service targets of issue 30, side by side in one run
# (docs/RESULTS.md records the runs):
#   1. `secret-tool lookup` through latchkey-secret-service and through gnome-keyring-daemon,
#      each alone on a private bus (scripts/secret-service/bus.sh), RUNS runs each, median;
#   2. SearchItems on one attribute at each of SS_SIZES items (default "100 100000"): the first
#      search after the items arrive (the provider reads them and writes their index records)
#      and then the median of RUNS searches, with the provider's resident memory;
#   3. `git credential fill` with credential.helper latchkey through the unlocked agent.
# Binaries: LATCHKEY_BIN (default .build/debug/latchkey), latchkey-secret-service beside it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-30}
sizes=${SS_SIZES:-"100 100000"}
export LATCHKEY_BIN=${LATCHKEY_BIN:-$root/.build/debug/latchkey}
bus="$root/scripts/secret-service/bus.sh"
py=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-bench-ss.XXXXXX")
cleanup() { for d in "$work"/*/; do [ -f "$d/env" ] && "$bus" stop "$d" || true; done; rm -rf "$work"; }
trap cleanup EXIT

median_ms() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1e6}'; }
timed() { # runs "$@" $runs times; prints each duration in ns
  for _ in $(seq "$runs"); do
    s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $((e - s))
  done
}

echo "machine: $(nproc) cores, $(uname -srm); commit $(git -C "$root" rev-parse --short HEAD); $(date -u +%FT%TZ)"
echo "binaries: $LATCHKEY_BIN (+ latchkey-secret-service); runs: $runs"

echo "== 1. secret-tool lookup, median of $runs"
for kind in gnome-keyring latchkey; do
  d="$work/$kind"; "$bus" start "$d" "$kind"
  ( . "$d/env"; printf 'hunter2' | secret-tool store --label bench service bench user alice
    printf '%-14s %s ms\n' "$kind" "$(timed secret-tool lookup service bench user alice | median_ms)" )
  "$bus" stop "$d"
done

echo "== 2. SearchItems on one attribute"
for n in $sizes; do
  d="$work/search-$n"; "$bus" start "$d" latchkey
  # N items as the provider stores them (spec/SECRET-SERVICE.md §2), imported in one transaction;
  # the provider writes their index records at the first search.
  $py - "$n" > "$d/items.jsonl" <<'PY'
import base64, os, sys
def meta(attrs, ct="text/plain"):
    out = bytes([1]) + len(attrs).to_bytes(4, "big")
    for k in sorted(attrs, key=lambda s: s.encode()):
        for t in (k, attrs[k]):
            out += len(t.encode()).to_bytes(4, "big") + t.encode()
    return out + len(ct.encode()).to_bytes(4, "big") + ct.encode()
for i in range(int(sys.argv[1])):
    print('{"class":"genp","svce":"org.freedesktop.Secret.Item","agrp":"org.freedesktop.secrets.login",'
          '"acct":"%016x","labl":"item %d","gena":"%s","v_Data":"%s"}' % (
              i, i, base64.b64encode(meta({"service": "svc-%d" % i, "user": "u%d" % (i % 7)})).decode(),
              base64.b64encode(os.urandom(16)).decode()))
PY
  ( . "$d/env"
    LATCHKEY_APP_ID=org.freedesktop.secrets.login "$LATCHKEY_BIN" import "$d/items.jsonl" >/dev/null
    $py - "$n" "$runs" "$(cat "$d/provider.pid")" <<'PY'
import sys, time
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
n, runs, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = open_dbus_connection(bus="SESSION")
a = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service")
def search(i):
    t = time.perf_counter_ns()
    r = c.send_and_get_reply(new_method_call(a, "SearchItems", "a{ss}", ({"service": "svc-%d" % i},)), timeout=600)
    d = time.perf_counter_ns() - t
    assert len(r.body[0]) == 1, r.body
    return d
first = search(n // 2)
times = sorted(search((n * k) // runs) for k in range(runs))
rss = [l for l in open("/proc/%s/status" % pid) if l.startswith("VmRSS")][0].split()[1]
print("%7d items: first search %8.1f ms; then median %.2f ms (min %.2f, max %.2f); provider RSS %d MiB" % (
    n, first / 1e6, times[len(times) // 2] / 1e6, times[0] / 1e6, times[-1] / 1e6, int(rss) // 1024))
PY
  )
  "$bus" stop "$d"
done

echo "== 3. git credential fill through the unlocked agent, median of $runs"
d="$work/git"; "$bus" start "$d" latchkey
( . "$d/env"
  mkdir -p "$d/bin"; ln -sf "$LATCHKEY_BIN" "$d/bin/git-credential-latchkey"; export PATH="$d/bin:$PATH"
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
  printf 'protocol=https\nhost=example.com\nusername=alice\npassword=s3cret\n\n' | git -c credential.helper=latchkey credential approve
  fill() { printf 'protocol=https\nhost=example.com\n\n' | git -c credential.helper=latchkey credential fill; }
  printf 'git credential fill %s ms\n' "$(timed fill | median_ms)" )
