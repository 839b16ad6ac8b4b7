#!/usr/bin/env bash
# A private session bus with one Secret Service on it, for the tests and benchmarks
# (spec/SECRET-SERVICE.md): nothing of the user's session is reached, and nothing is activated
# but what DIR/services holds.
#
#   bus.sh start DIR latchkey|gnome-keyring   starts dbus-daemon and the provider; DIR/env
#                                             then holds the variables a client needs
#   bus.sh stop DIR                           stops what start started
#
# latchkey: LATCHKEY_BIN and LATCHKEY_SS_BIN name the binaries (default: .build/debug); the
# keychain is made in DIR with the passcode "pw" (scrypt 2^10) and unlocked in an agent.
# LATCHKEY_PINENTRY, when set, is handed to the provider. gnome-keyring: a login keyring with
# the password "pw", unlocked.
set -euo pipefail
# Close every descriptor above 2 inherited from the caller: the daemons started here would keep
# them open for their whole life, and a caller such as Foundation's Process (the tests) learns
# that its child ended only when they are closed.
for fd in /proc/$$/fd/*; do
  n=${fd##*/}
  if [ "$n" -gt 2 ] 2>/dev/null; then eval "exec $n>&-" 2>/dev/null || true; fi
done
cmd=${1:?start or stop}
dir=${2:?directory}
root=$(cd "$(dirname "$0")/../.." && pwd)

stop() {
  if [ -f "$dir/latchkey.bin" ] && [ -f "$dir/env" ]; then
    # shellcheck disable=SC1091
    ( . "$dir/env"; "$(cat "$dir/latchkey.bin")" agent --stop >/dev/null 2>&1 || true )
  fi
  for f in "$dir"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

# The latchkey provider, with LATCHKEY_PINENTRY when set.
start_provider() {
  local ss
  ss=$(dirname "$(cat "$dir/latchkey.bin")")/latchkey-secret-service
  [ -n "${LATCHKEY_SS_BIN:-}" ] && ss=$LATCHKEY_SS_BIN
  local args=()
  [ -n "${LATCHKEY_PINENTRY:-}" ] && args+=(--pinentry "$LATCHKEY_PINENTRY")
  setsid "$ss" "${args[@]}" >"$dir/provider.log" 2>&1 </dev/null &
  echo $! > "$dir/provider.pid"
}

# Waits until the name has an owner.
ready() {
  for _ in $(seq 200); do
    if dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'; then
      return 0
    fi
    sleep 0.05
  done
  echo "bus.sh: the Secret Service did not come up; its log:" >&2
  cat "$dir/provider.log" >&2
  return 1
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi

# restart DIR: the latchkey provider again (LATCHKEY_PINENTRY as given now), the rest kept.
if [ "$cmd" = restart ]; then
  # shellcheck disable=SC1091
  . "$dir/env"
  old=$(cat "$dir/provider.pid")
  kill "$old" 2>/dev/null || true
  while kill -0 "$old" 2>/dev/null; do sleep 0.05; done
  start_provider
  ready
  exit
fi

kind=${3:?latchkey or gnome-keyring}
mkdir -p "$dir/run" "$dir/services" "$dir/data"
chmod 700 "$dir/run"
cat > "$dir/bus.conf" <<CONF
<busconfig>
  <type>session</type>
  <listen>unix:path=$dir/run/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$dir/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$dir/bus.conf" --fork --print-pid=3 3>"$dir/bus.pid" >/dev/null 2>&1 </dev/null
cat > "$dir/env" <<ENV
export DBUS_SESSION_BUS_ADDRESS=unix:path=$dir/run/bus
export XDG_RUNTIME_DIR=$dir/run
export XDG_DATA_HOME=$dir/data
export HOME=$dir
export LATCHKEY_AGENT_SOCK=$dir/run/agent.sock
export LATCHKEY_KEYCHAIN=$dir/login.keychain
export LATCHKEY_DEVICE=$dir/device.secret
ENV
# shellcheck disable=SC1091
. "$dir/env"
for _ in $(seq 100); do [ -S "$dir/run/bus" ] && break; sleep 0.05; done

case "$kind" in
latchkey)
  bin=${LATCHKEY_BIN:-$root/.build/debug/latchkey}
  printf 'pw' > "$dir/passcode"
  chmod 600 "$dir/passcode"
  "$bin" init --passcode-file "$dir/passcode" --kdf-log-n 10 2>/dev/null
  echo "$bin" > "$dir/latchkey.bin"
  "$bin" agent --daemon --idle-timeout 0 >"$dir/agent.log" 2>&1 </dev/null
  "$bin" unlock --passcode-file "$dir/passcode"
  start_provider
  ;;
gnome-keyring)
  # --unlock reads the login keyring's password ("pw"; the keyring is made with it) on stdin.
  printf pw | setsid gnome-keyring-daemon --foreground --unlock --components=secrets >"$dir/provider.log" 2>&1 &
  echo $! > "$dir/provider.pid"
  ;;
*) echo "bus.sh: unknown provider $kind" >&2; stop; exit 2 ;;
esac

ready || { stop; exit 1; }
