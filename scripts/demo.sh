#!/usr/bin/env bash
# The main job, end to end, in a temporary directory. Run by `make demo`.
set -euo pipefail
BIN="${LATCHKEY_BIN:-latchkey}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/latchkey-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export LATCHKEY_KEYCHAIN="$WORK/login.keychain"
export LATCHKEY_DEVICE="$WORK/device/device.secret"
unset LATCHKEY_PASSCODE LATCHKEY_NEW_PASSCODE LATCHKEY_ENTITLEMENTS LATCHKEY_APP_ID

step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
[ -n "${NO_COLOR:-}" ] && step() { printf '\n== %s\n' "$*" >&2; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }

step "1. Create a keychain protected by a passcode (the passcode comes from the environment, never argv)"
export LATCHKEY_PASSCODE='correct horse battery staple'
run "$BIN" init
ls -l "$WORK" "$WORK/device" | sed 's/^/   /' >&2

step "2. Add items of several classes and protection classes"
printf 'hunter2' | run "$BIN" add --account alice --service mail.example.com --label "Mail" --accessible WhenUnlocked
printf 'api-token-123' | run "$BIN" add --account deploy --service ci --accessible AfterFirstUnlock
printf 'boot-key' | run "$BIN" add --account boot --service disk --accessible AlwaysThisDeviceOnly
printf 'pw-for-web' | run "$BIN" add --class inet --account bob --server www.example.com --protocol htps --port 443 --accessible WhenUnlockedThisDeviceOnly
printf 'only-with-passcode' | run "$BIN" add --account carol --service vault --accessible WhenPasscodeSetThisDeviceOnly

step "3. Read a secret back (raw bytes on stdout)"
run "$BIN" find --account alice --service mail.example.com; echo >&2

step "4. Attributes as JSON (Apple's 4-char keys; no secret unless asked)"
run "$BIN" find --account alice --service mail.example.com --return attributes --json

step "5. Adding the same unique key again is refused (errSecDuplicateItem, exit 3)"
set +e; printf 'x' | "$BIN" add --account alice --service mail.example.com; echo "   exit status: $?" >&2; set -e

step "6. Without the passcode the keychain stays locked: WhenUnlocked fails, AlwaysThisDeviceOnly works"
set +e; env -u LATCHKEY_PASSCODE "$BIN" find --account alice --service mail.example.com </dev/null; echo "   exit status: $?" >&2; set -e
env -u LATCHKEY_PASSCODE "$BIN" find --account boot --service disk </dev/null; echo >&2

step "7. Update and delete"
run "$BIN" update --account deploy --service ci --set-label "CI token"
run "$BIN" delete --account carol --service vault

step "8. Change the passcode (appends a keybag record; items are untouched)"
LATCHKEY_NEW_PASSCODE='new passcode 2026' run "$BIN" passwd
export LATCHKEY_PASSCODE='new passcode 2026'
run "$BIN" find --account alice --service mail.example.com; echo >&2

step "9. Info, compaction and a full verification of every byte"
run "$BIN" info
run "$BIN" compact
run "$BIN" verify

step "10. Damage is detected, never silently dropped"
cp "$LATCHKEY_KEYCHAIN" "$WORK/damaged.keychain"
size=$(stat -c %s "$WORK/damaged.keychain"); off=$((size / 2))
printf '\xff' | dd of="$WORK/damaged.keychain" bs=1 seek=$off conv=notrunc status=none
set +e; LATCHKEY_KEYCHAIN="$WORK/damaged.keychain" "$BIN" verify; echo "   exit status: $? (5 = damaged)" >&2; set -e

step "Done: the demo ran end to end."
