#!/bin/sh
# Makes latchkey_VERSION_ARCH.deb from a tree that `make install DESTDIR=STAGE PREFIX=/usr`
# filled (`make deb` runs both): it adds what Debian wants of a package and builds it with
# dpkg-deb. No debhelper: the package holds one static executable and text files.
#
# - /usr/bin/latchkey stripped (the debug information is half of the release build's size),
#   the man page compressed (gzip -9n) with git-credential-latchkey(1) a link to it;
# - /usr/share/doc/latchkey/copyright (dist/debian/copyright), a Debian changelog, and
#   lintian's overrides (dist/debian/lintian-overrides, each with its reason);
# - DEBIAN/control: Version is the release `latchkey --version` prints, and when the work tree
#   is N commits past the tag v<release>, <release>+gitN.<commit> (which sorts after the
#   release and before the next), with +modified when the tree had changes; Architecture from
#   dpkg; no Depends (the executable is static and needs no library at run time); Recommends
#   git (sync over git remotes, the credential helper); Built-Using the Debian sources linked
#   into the executable (Debian's field for content of other packages in this one; bookworm's
#   lintian does not know Static-Built-Using);
# - DEBIAN/postinst (dist/debian/postinst): on the first installation, how a user enables the
#   user units; no conffiles (nothing is installed under /etc);
# - DEBIAN/md5sums; every file's time is the commit's (SOURCE_DATE_EPOCH), so the same commit
#   gives the same files.
#
# usage: deb.sh STAGE OUTDIR     (DEB_MAINTAINER overrides the Maintainer field)
set -eu
stage=$1
out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "make deb: $*" >&2; exit 1; }
umask 022

bin="$stage/usr/bin/latchkey"
[ -x "$bin" ] || fail "$bin is missing: run 'make install DESTDIR=$stage PREFIX=/usr' first"
if readelf -d "$bin" 2>/dev/null | grep -q NEEDED; then
    fail "$bin needs shared libraries (LINK=shared?); the package holds the static build only"
fi

# The version.
release=$("$bin" --version | cut -d' ' -f1)
case "$release" in [0-9]*.[0-9]*.[0-9]*) ;; *) fail "latchkey --version printed '$release', not a release" ;; esac
version=$release
commit=""
if command -v git >/dev/null 2>&1 && git -C "$here" rev-parse --git-dir >/dev/null 2>&1; then
    commit=$(git -C "$here" rev-parse --short=12 HEAD)
    described=$(git -C "$here" describe --tags --long --match "v$release" 2>/dev/null || true)
    # v0.6.0-98-g34636b9a1b2c: 98 commits past the release's tag.
    count=$(printf '%s' "$described" | sed -n "s/^v$release-\([0-9][0-9]*\)-g[0-9a-f]*\$/\1/p")
    if [ -n "$count" ] && [ "$count" != 0 ]; then version="$release+git$count.$commit"; fi
    # Built from a tree whose tracked files differ from the commit, as --version says too.
    case "$("$bin" --version)" in *-modified*) version="$version+modified" ;; esac
fi
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$( [ -n "$commit" ] && git -C "$here" log -1 --format=%ct || date +%s)}
export SOURCE_DATE_EPOCH
arch=$(dpkg --print-architecture)
maintainer=${DEB_MAINTAINER:-Latchkey maintainers <maintainers@latchkey.invalid>}

# Files as Debian wants them.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$bin"
# bash-completion sources the file: the generator's "#!/bin/bash" line means nothing there.
completion="$stage/usr/share/bash-completion/completions/latchkey"
sed -i '1{/^#!/d}' "$completion"
man="$stage/usr/share/man/man1"
gzip -9nf "$man/latchkey.1"
rm -f "$man/git-credential-latchkey.1"
ln -s latchkey.1.gz "$man/git-credential-latchkey.1.gz"
doc="$stage/usr/share/doc/latchkey"
install -d "$doc"
install -m 0644 "$here/dist/debian/copyright" "$doc/copyright"
install -d "$stage/usr/share/lintian/overrides"
install -m 0644 "$here/dist/debian/lintian-overrides" "$stage/usr/share/lintian/overrides/latchkey"
{
    printf 'latchkey (%s) stable; urgency=medium\n\n' "$version"
    printf '  * latchkey %s%s, packaged by make deb.\n' "$release" "${commit:+ at commit $commit}"
    printf '    What changed is in the CHANGELOG.md of the source.\n\n'
    printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# What the executable holds of Debian's packages, from the static libraries it was linked with.
built_using=""
for lib in libcrypto.a libarchive.a libz.a libzstd.a libc.a libstdc++.a; do
    path=$(gcc -print-file-name="$lib" 2>/dev/null) || continue
    [ -f "$path" ] || continue
    pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -n 1 | cut -d: -f1) || continue
    [ -n "$pkg" ] || continue
    src=$(dpkg-query -W -f='${source:Package} (= ${source:Version})' "$pkg" 2>/dev/null) || continue
    case ", $built_using, " in *", $src, "*) ;; *) built_using="${built_using:+$built_using, }$src" ;; esac
done

# Control files.
find "$stage" -type d -exec chmod 0755 {} +
rm -rf "$stage/DEBIAN"
install -d "$stage/DEBIAN"
install -m 0755 "$here/dist/debian/postinst" "$stage/DEBIAN/postinst"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) \
    > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
{
    echo "Package: latchkey"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $size"
    echo "Recommends: git"
    echo "Suggests: wl-clipboard | xclip"
    [ -z "$built_using" ] || echo "Built-Using: $built_using"
    echo "Section: utils"
    echo "Priority: optional"
    echo "Homepage: https://github.com/latchkey-project/latchkey"
    echo "Description: Apple's keychain model on Linux: encrypted items, CLI and agent"
    sed 's/^/ /; s/^ $/ ./' <<'EOF'
Latchkey keeps passwords, keys and certificates as Apple's Keychain
Services does: items with classes and attributes, protection classes
such as WhenUnlocked and ThisDeviceOnly, and class keys locked by a
passcode. Its keychain file is append-only, encrypted and
authenticated, and bound to a device secret kept beside it.

This package holds the latchkey command (add, find, update and delete
items, import and dump them, encrypted backups, sync between machines
over git), its manual page, bash, zsh and fish completions, git's
credential helper, and systemd user units for the agent that keeps
keychains unlocked and for a daily backup, which each user enables.
EOF
} > "$stage/DEBIAN/control"
chmod 0644 "$stage/DEBIAN/control"

find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
rm -f "$out"/latchkey_*.deb
deb="$out/latchkey_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "make deb: $deb ($(stat -c %s "$deb") bytes), version $version"
echo "  install: sudo apt install $deb   (or: sudo dpkg -i $deb)"
