#!/bin/sh
# Checks the Debian package `make deb` built, then installs it into a fresh Debian 12 and
# removes it again (`make test-deb`; CI runs it after `make release`):
#
# 1. Its contents (dpkg-deb -c): exactly the expected paths, owned by root, all under /usr;
#    its control fields (dpkg-deb -I): name, version, architecture, no Depends, no conffiles;
#    its md5sums against the files.
# 2. A Debian 12 minbase root made by debootstrap (essential packages and apt: less than any
#    installed system has), as root, in a temporary directory; .build-deb/ keeps a tarball of
#    it for the next run (remove it to fetch a new one). In its chroot:
#    `apt-get install ./latchkey_*.deb` (what the README says; --no-install-recommends, since
#    the root has no package lists and no network), then `latchkey --version`, a keychain with
#    an add and a find, git's credential helper through its link, the manual page rendered by
#    `man -l`, the bash completion loaded, and the units checked by `systemd-analyze verify`;
#    then `apt-get remove` (dpkg -r) must leave exactly the files there were before; then
#    `dpkg -i` and `dpkg --purge` the same.
#
# Needs root (chroot), debootstrap and man (make deps installs both), and systemd-analyze when
# there is one. About a minute and three quarters the first time (most of it debootstrap), 15 s
# with the tarball.
#
# usage: test-deb.sh latchkey_VERSION_ARCH.deb
set -eu
[ $# = 1 ] && [ -f "$1" ] || { echo "usage: $0 latchkey_VERSION_ARCH.deb" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
if [ "$(id -u)" != 0 ]; then exec sudo "$0" "$deb"; fi
fail() { echo "test-deb: FAILED: $*" >&2; exit 1; }
step() { echo "test-deb: $*"; }
for tool in dpkg-deb debootstrap chroot man; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (make deps installs debootstrap)"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-test-deb.XXXXXX")
cleanup() {
    if mountpoint -q "$work/root/proc" 2>/dev/null; then umount "$work/root/proc"; fi
    # --one-file-system: never into a file system still mounted under the root.
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
started=$(date +%s)

# ---- 1. The package's contents and control fields ----
step "contents of $(basename "$deb")"
dpkg-deb -c "$deb" > "$work/listing"
# "drwxr-xr-x root/root 0 2026-12-07 20:00 ./usr/bin/" -> owner and path (a link's target after " -> ").
awk '{ print $2 }' "$work/listing" | sort -u > "$work/owners"
[ "$(cat "$work/owners")" = "root/root" ] || fail "entries not owned by root/root: $(cat "$work/owners")"
awk '{ $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }' "$work/listing" | sed 's|/$||' | sort > "$work/paths"
cat > "$work/expected" <<'EOF'
.
./usr
./usr/bin
./usr/bin/git-credential-latchkey -> latchkey
./usr/bin/latchkey
./usr/lib
./usr/lib/systemd
./usr/lib/systemd/user
./usr/lib/systemd/user/latchkey-agent.service
./usr/lib/systemd/user/latchkey-backup.service
./usr/lib/systemd/user/latchkey-backup.timer
./usr/share
./usr/share/bash-completion
./usr/share/bash-completion/completions
./usr/share/bash-completion/completions/latchkey
./usr/share/doc
./usr/share/doc/latchkey
./usr/share/doc/latchkey/changelog.gz
./usr/share/doc/latchkey/copyright
./usr/share/doc/latchkey/examples
./usr/share/doc/latchkey/examples/backup.env
./usr/share/fish
./usr/share/fish/vendor_completions.d
./usr/share/fish/vendor_completions.d/latchkey.fish
./usr/share/lintian
./usr/share/lintian/overrides
./usr/share/lintian/overrides/latchkey
./usr/share/man
./usr/share/man/man1
./usr/share/man/man1/git-credential-latchkey.1.gz -> latchkey.1.gz
./usr/share/man/man1/latchkey.1.gz
./usr/share/zsh
./usr/share/zsh/vendor-completions
./usr/share/zsh/vendor-completions/_latchkey
EOF
sort -o "$work/expected" "$work/expected"
diff -u "$work/expected" "$work/paths" || fail "the package holds other paths than expected (- expected, + found)"

field() { dpkg-deb -f "$deb" "$1"; }
dpkg-deb -I "$deb" > "$work/info"
[ "$(field Package)" = latchkey ] || fail "Package: $(field Package)"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture: $(field Architecture)"
for f in Depends Pre-Depends Conflicts Breaks; do
    [ -z "$(field $f)" ] || fail "$f: $(field $f) (the executable is static and needs nothing)"
done
[ "$(field Recommends)" = git ] || fail "Recommends: $(field Recommends)"
version=$(field Version)
dpkg --compare-versions "$version" ge 0.0.1 || fail "Version: $version"
mkdir "$work/control" "$work/files"
dpkg-deb -e "$deb" "$work/control"
[ ! -e "$work/control/conffiles" ] || fail "conffiles: $(cat "$work/control/conffiles")"
dpkg-deb -x "$deb" "$work/files"
(cd "$work/files" && md5sum --quiet -c "$work/control/md5sums") || fail "md5sums do not match the files"
[ "$(wc -l < "$work/control/md5sums")" = "$(find "$work/files" -type f | wc -l)" ] || fail "md5sums misses files"
case "$("$work/files/usr/bin/latchkey" --version)" in
    "${version%%+*}"*) ;;
    *) fail "Version $version, but latchkey --version prints $("$work/files/usr/bin/latchkey" --version)" ;;
esac
if command -v readelf >/dev/null && readelf -d "$work/files/usr/bin/latchkey" | grep -q NEEDED; then
    fail "usr/bin/latchkey needs shared libraries"
fi
if command -v lintian >/dev/null 2>&1; then
    step "lintian"
    lintian --fail-on error,warning "$deb" || fail "lintian"
fi

# ---- 2. A fresh Debian 12 ----
cache="$here/.build-deb/bookworm-minbase.tar.gz"
root="$work/root"
mkdir "$root"
if [ -f "$cache" ]; then
    step "Debian 12 minbase from $cache"
    tar -xzf "$cache" -C "$root"
else
    step "debootstrap --variant=minbase bookworm (kept in $cache for the next run)"
    debootstrap --variant=minbase bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
        > "$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
    rm -rf "$root/var/cache/apt/archives/"*.deb
    mkdir -p "$(dirname "$cache")"
    tar -czf "$cache.tmp" -C "$root" . && mv "$cache.tmp" "$cache"
fi
grep -q '^12\.' "$root/etc/debian_version" || fail "not Debian 12: $(cat "$root/etc/debian_version")"
# As on a running system (the Swift runtime reads /proc/self to find itself; without /proc,
# `latchkey init` aborts with "Unable to obtain Swift runtime path").
mount -t proc proc "$root/proc"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

# Every path of the root but dpkg's and apt's own records, logs and caches, and /tmp.
snapshot() {
    (cd "$root" && find . -xdev \
        \( -path ./proc -o -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache -o -path ./var/lib/apt -o -path ./tmp \) -prune \
        -o -printf '%p %M %s\n' | sort)
}
snapshot > "$work/before"
cp "$deb" "$root/tmp/"
pkg="/tmp/$(basename "$deb")"

step "apt-get install $pkg in the chroot"
in_root apt-get install -y -q --no-install-recommends "$pkg" > "$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "apt-get install"; }
grep -q 'systemctl --user enable --now latchkey-agent.service' "$work/install.log" ||
    { cat "$work/install.log" >&2; fail "the postinst did not say how to enable the units"; }
in_root dpkg -s latchkey | grep -qx 'Status: install ok installed' || fail "dpkg -s: not installed"

step "latchkey in the chroot"
printed=$(in_root latchkey --version)
case "$printed" in "${version%%+*}"*) ;; *) fail "latchkey --version: $printed" ;; esac
export_vars="LATCHKEY_KEYCHAIN=/tmp/lk/login.keychain LATCHKEY_DEVICE=/tmp/lk/device.secret LATCHKEY_AGENT_SOCK=none"
in_root sh -c "mkdir -m 700 /tmp/lk && export $export_vars &&
    latchkey init --no-passcode 2>/dev/null && printf 's3cret\n' | latchkey add --account alice --service mail &&
    [ \"\$(latchkey find --account alice --service mail)\" = s3cret ] &&
    printf 'protocol=https\nhost=example.com\nusername=bob\npassword=hunter2\n\n' | git-credential-latchkey store &&
    printf 'protocol=https\nhost=example.com\n\n' | git-credential-latchkey get | grep -qx password=hunter2 &&
    latchkey backup --no-password --output-dir /tmp/lk/backups --keep 1 >/dev/null &&
    latchkey verify >/dev/null" || fail "add, find, the credential helper, backup or verify in the chroot"
rm -rf "$root/tmp/lk"

man -l "$root/usr/share/man/man1/latchkey.1.gz" 2>"$work/man.err" | grep -q 'latchkey' ||
    { cat "$work/man.err" >&2; fail "man -l latchkey.1.gz"; }
[ ! -s "$work/man.err" ] || { cat "$work/man.err" >&2; fail "man -l warned"; }
[ "$(readlink -f "$root/usr/share/man/man1/git-credential-latchkey.1.gz")" = "$(readlink -f "$root/usr/share/man/man1/latchkey.1.gz")" ] ||
    fail "git-credential-latchkey(1) is not latchkey(1)"
bash -c ". '$root/usr/share/bash-completion/completions/latchkey' && complete -p latchkey" >/dev/null ||
    fail "the bash completion does not load"

# systemd-analyze has no --root for verify: the units, with the chroot's executable's path.
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir "$work/units"
    for u in "$root"/usr/lib/systemd/user/latchkey-*; do
        sed "s|/usr/bin/latchkey|$root/usr/bin/latchkey|g" "$u" > "$work/units/$(basename "$u")"
    done
    (cd "$work/units" && systemd-analyze verify --man=no latchkey-*) 2>"$work/verify.err" ||
        { cat "$work/verify.err" >&2; fail "systemd-analyze verify"; }
    [ ! -s "$work/verify.err" ] || { cat "$work/verify.err" >&2; fail "systemd-analyze verify warned"; }
else
    # A machine without systemd (a container); make test verifies the same units' sources.
    step "systemd-analyze is not installed: the installed units were not verified by systemd"
fi

step "apt-get remove latchkey (dpkg -r)"
in_root apt-get remove -y -q latchkey > "$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; fail "apt-get remove"; }
in_root dpkg -s latchkey >/dev/null 2>&1 && fail "dpkg -s still knows latchkey after apt-get remove (no conffiles)"
rm -f "$root$pkg"
snapshot > "$work/after-remove"
diff -u "$work/before" "$work/after-remove" || fail "apt-get remove left the root different (- before, + after)"

step "dpkg -i, then dpkg --purge"
cp "$deb" "$root/tmp/"
in_root dpkg -i "$pkg" > "$work/dpkg-i.log" 2>&1 || { cat "$work/dpkg-i.log" >&2; fail "dpkg -i"; }
in_root latchkey --version >/dev/null || fail "latchkey after dpkg -i"
in_root dpkg --purge latchkey > "$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "dpkg --purge"; }
rm -f "$root$pkg"
snapshot > "$work/after-purge"
diff -u "$work/before" "$work/after-purge" || fail "dpkg --purge left the root different (- before, + after)"
[ -z "$(in_root dpkg-query -W -f='${db:Status-Abbrev}' latchkey 2>/dev/null)" ] || fail "dpkg still lists latchkey"

step "passed in $(($(date +%s) - started)) s: $(basename "$deb") ($(stat -c %s "$deb") bytes)"
