#!/usr/bin/env bash
# The main job, end to end, in a temporary directory. Run by `make demo` (which installs what is
# missing and builds first); LATCHKEY_BIN names the binary (default: latchkey on PATH).
#
#   1. a keychain with a passcode; three apps: Mail and Calendar share an access group, Notes
#      (another team) does not; items of every class and of several protection classes;
#   2. what each app can see; import; errors and their exit codes;
#   3. a password-protected backup, restored on a "new machine" (another device secret): the
#      ThisDeviceOnly items stay behind, the rest comes over; then every byte is verified;
#   4. sync with a third machine over a bare git repository: a synchronizable item and its
#      delete follow, nothing else does, and the history keeps the versions.
set -euo pipefail
BIN="${LATCHKEY_BIN:-latchkey}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/latchkey-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
# Machine 1: its keychain and device secret. The passcode comes from the environment, never argv.
export LATCHKEY_KEYCHAIN="$WORK/machine1/login.keychain"
export LATCHKEY_DEVICE="$WORK/machine1/device/device.secret"
export LATCHKEY_PASSCODE='correct horse battery staple'
unset LATCHKEY_NEW_PASSCODE LATCHKEY_ENTITLEMENTS LATCHKEY_APP_ID LATCHKEY_BACKUP_PASSWORD

if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then
    step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
else
    step() { printf '\n== %s\n' "$*" >&2; }
fi
say() { printf '   %s\n' "$*" >&2; }
show() { local line="$*"; printf '$ %s\n' "${line//$BIN/latchkey}" >&2; }
run() { show "$@"; "$@"; }
# Runs a command that is meant to fail and shows its exit status; `fails -i TEXT cmd…` gives it
# TEXT on stdin (from a file, so that no pipe can break when the command stops early).
fails() {
    local input=/dev/null
    if [ "$1" = -i ]; then printf '%s' "$2" > "$WORK/.stdin"; input="$WORK/.stdin"; shift 2; fi
    show "$@"
    set +e; "$@" < "$input"; local status=$?; set -e
    say "exit status: $status"
}

# Three apps, as on iOS: an application-identifier and keychain-access-groups each.
entitlements() { # file app-id group...
    local file="$1" app="$2"; shift 2
    {
        printf '<?xml version="1.0" encoding="UTF-8"?>\n'
        printf '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        printf '<plist version="1.0"><dict>\n  <key>application-identifier</key><string>%s</string>\n' "$app"
        printf '  <key>keychain-access-groups</key><array>'
        for g in "$@"; do printf '<string>%s</string>' "$g"; done
        printf '</array>\n</dict></plist>\n'
    } > "$file"
}
entitlements Mail.entitlements     ABCDE12345.com.example.mail     ABCDE12345.com.example.shared ABCDE12345.com.example.mail
entitlements Calendar.entitlements ABCDE12345.com.example.calendar ABCDE12345.com.example.shared
entitlements Notes.entitlements    VWXYZ67890.org.example.notes    VWXYZ67890.org.example.notes
MAIL=(--entitlements Mail.entitlements)
CALENDAR=(--entitlements Calendar.entitlements)
NOTES=(--entitlements Notes.entitlements)

step "0. latchkey $("$BIN" --version), in $WORK"

step "1. Create a keychain protected by a passcode (LATCHKEY_PASSCODE; a terminal would be asked)"
run "$BIN" init
ls -l "$WORK/machine1" "$WORK/machine1/device" | sed 's/^/   /' >&2

step "2. Three apps: Mail and Calendar (team ABCDE12345) share ABCDE12345.com.example.shared; Notes does not"
sed 's/^/   /' Mail.entitlements >&2

step "3. Mail adds items of several classes and protection classes (new items go to its first group, the shared one)"
printf 'hunter2' | run "$BIN" add "${MAIL[@]}" --account alice@example.com --service imap.example.com --label 'Mail account' --accessible WhenUnlocked
printf 'smtp-pw' | run "$BIN" add "${MAIL[@]}" --class inet --server smtp.example.com --protocol smtp --port 587 --account alice --accessible AfterFirstUnlock
printf 'push-token' | run "$BIN" add "${MAIL[@]}" --account push --service apns --access-group ABCDE12345.com.example.mail --accessible AfterFirstUnlockThisDeviceOnly
run "$BIN" add "${MAIL[@]}" --class cert --data-file "$ROOT/fixtures/certs/rsa2048-cert.der"
run "$BIN" add "${MAIL[@]}" --class keys --data-file "$ROOT/fixtures/certs/rsa2048-key.der" --application-tag com.example.mail.signing --can-sign yes --accessible WhenUnlockedThisDeviceOnly

step "4. Calendar and Notes add theirs"
printf 'caldav-pw' | run "$BIN" add "${CALENDAR[@]}" --class inet --server cal.example.com --protocol htps --port 443 --account alice --accessible AfterFirstUnlock
head -c 32 /dev/urandom | run "$BIN" add "${CALENDAR[@]}" --class keys --key-class symmetric --application-tag com.example.calendar.db \
    --access-group ABCDE12345.com.example.calendar --accessible AlwaysThisDeviceOnly
printf 'notes-sync-token' | run "$BIN" add "${NOTES[@]}" --account notes --service sync.example.org --accessible Always

step "5. What each app can see: Mail and Calendar share items, Notes sees only its own"
for app in Mail Calendar Notes; do
    say "--- $app"
    run "$BIN" dump --entitlements "$app.entitlements"
done

step "6. Read a secret back (raw bytes on stdout) and the attributes as JSON (Apple's 4-character keys)"
run "$BIN" find "${CALENDAR[@]}" --account alice@example.com --service imap.example.com; echo >&2
run "$BIN" find "${MAIL[@]}" --class inet --server SMTP.example.com --case-insensitive --return attributes --json

step "7. Errors say what to do, with Apple's OSStatus and the contract's exit status"
fails -i x "$BIN" add "${MAIL[@]}" --account alice@example.com --service imap.example.com          # 3 duplicate
fails -i x "$BIN" add "${NOTES[@]}" --account sneaky --access-group ABCDE12345.com.example.shared   # 6 not its group
fails "$BIN" find "${NOTES[@]}" --account alice@example.com --service imap.example.com              # 1 cannot see it
fails env -u LATCHKEY_PASSCODE "$BIN" find "${MAIL[@]}" --account alice@example.com                 # 4 locked

step "8. Notes imports items from JSON lines, all in one transaction"
cat > notes.jsonl <<'JSON'
{"class":"genp","acct":"bob","svce":"notes.example.org","labl":"Bob","v_Data":"czNjcjN0"}
{"class":"genp","acct":"carol","svce":"notes.example.org","v_Data":"cGFzc3dvcmQ=","pdmn":"cku"}
{"class":"inet","acct":"dave","srvr":"ftp.example.org","ptcl":"ftp ","port":21,"v_Data":"ZnRw"}
JSON
run "$BIN" import "${NOTES[@]}" notes.jsonl
say "a bad line is named and nothing is imported:"
fails -i $'{"class":"genp","acct":"eve"}\n{"class":"genp","acct":"eve","colour":"red"}\n' "$BIN" import "${NOTES[@]}" -

step "9. The keychain at a glance"
run "$BIN" info

HAVE_BACKUP=no
# (`latchkey help X` exits 0 even for an unknown X, so ask the commands themselves.)
if "$BIN" backup --help >/dev/null 2>&1 && "$BIN" restore --help >/dev/null 2>&1; then HAVE_BACKUP=yes; fi

if [ "$HAVE_BACKUP" = yes ]; then
    step "10. Back up with a password (LATCHKEY_BACKUP_PASSWORD); the archive is a plain pax tar of ciphertext"
    export LATCHKEY_BACKUP_PASSWORD='backup password 2026'
    run "$BIN" backup --output "$WORK/keychain.backup"
    tar -tvf "$WORK/keychain.backup" | sed 's/^/   /' >&2
    say "What an administrator checks before relying on it: every byte, with no keychain in the way,"
    say "and what is inside (never a secret)"
    run "$BIN" backup-verify "$WORK/keychain.backup"
    run "$BIN" backup-list "$WORK/keychain.backup"

    step "11. A new machine: another device secret, a new keychain path; restore creates both"
    on_machine2() { LATCHKEY_KEYCHAIN="$WORK/machine2/login.keychain" LATCHKEY_DEVICE="$WORK/machine2/device/device.secret" "$@"; }
    say "on_machine2 runs a command with LATCHKEY_KEYCHAIN=$WORK/machine2/login.keychain"
    say "and LATCHKEY_DEVICE=$WORK/machine2/device/device.secret (no device secret there yet)"
    run on_machine2 "$BIN" restore "$WORK/keychain.backup"

    step "12. On the new machine: the ThisDeviceOnly items (aku, cku, dku) stayed behind, the rest came over"
    for app in Mail Calendar Notes; do
        say "--- $app, new machine"
        run on_machine2 "$BIN" dump --entitlements "$app.entitlements"
    done
    fails on_machine2 "$BIN" find "${MAIL[@]}" --account push --service apns     # cku: stayed on machine 1
    run on_machine2 "$BIN" find "${MAIL[@]}" --account alice@example.com --service imap.example.com; echo >&2
    run on_machine2 "$BIN" info

    step "13. Verify every byte, on both machines"
    run "$BIN" verify
    run on_machine2 "$BIN" verify
else
    step "10-12. Backup and restore"
    echo "backup: not available in this build" >&2
    step "13. Verify every byte"
    run "$BIN" verify
fi

step "14. Change the passcode, compact, and see damage detected (never silently dropped)"
LATCHKEY_NEW_PASSCODE='new passcode 2026' run "$BIN" passwd
export LATCHKEY_PASSCODE='new passcode 2026'
run "$BIN" compact
cp "$LATCHKEY_KEYCHAIN" "$WORK/damaged.keychain"
size=$(stat -c %s "$WORK/damaged.keychain"); off=$((size / 2))
printf '\xff' | dd of="$WORK/damaged.keychain" bs=1 seek=$off conv=notrunc status=none
fails env LATCHKEY_KEYCHAIN="$WORK/damaged.keychain" "$BIN" verify                 # 5 damaged

if command -v git >/dev/null 2>&1 && "$BIN" sync --help >/dev/null 2>&1; then
    step "15. Sync: a synchronizable item follows you to another machine, end-to-end encrypted, over git"
    git init -q --bare "$WORK/remote.git"
    printf 'tr4vel' | run "$BIN" add "${MAIL[@]}" --account alice@example.com --service sync.example.com --synchronizable yes
    show "$BIN" sync init --remote "file://$WORK/remote.git" --name laptop "> recovery.key"
    "$BIN" sync init --remote "file://$WORK/remote.git" --name laptop > "$WORK/recovery.key"
    say "the circle's recovery key went to recovery.key (shown once: keep it offline)"
    on_machine3() { LATCHKEY_KEYCHAIN="$WORK/machine3/login.keychain" LATCHKEY_DEVICE="$WORK/machine3/device/device.secret" "$@"; }
    say "on_machine3: a third machine, with its own keychain and device secret"
    run on_machine3 "$BIN" init
    run on_machine3 "$BIN" sync join --remote "file://$WORK/remote.git" --name desktop --recovery-key-file "$WORK/recovery.key"
    run on_machine3 "$BIN" find "${MAIL[@]}" --account alice@example.com --service sync.example.com --synchronizable yes; echo >&2
    say "Only that item came over: what is not synchronizable (or is ThisDeviceOnly) never leaves machine 1"
    run on_machine3 "$BIN" dump "${MAIL[@]}"

    step "16. A delete syncs too; the history keeps every version (never a secret shown)"
    run "$BIN" delete "${MAIL[@]}" --account alice@example.com --service sync.example.com --synchronizable yes --yes
    run "$BIN" sync
    run on_machine3 "$BIN" sync
    fails on_machine3 "$BIN" find "${MAIL[@]}" --account alice@example.com --service sync.example.com --synchronizable yes
    run on_machine3 "$BIN" history "${MAIL[@]}" --service sync.example.com --account alice@example.com
fi

step "Done: the demo ran end to end."
