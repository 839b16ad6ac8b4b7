#!/bin/sh
# Writes OUTPUT_DIR/BuildInfo.swift with the git commit PACKAGE_DIR is checked out at; run
# before every build of `latchkey` by the LatchkeyBuildInfo plugin (Plugins/).
#
# The commit is recorded only when PACKAGE_DIR is itself the top of a git work tree (not a
# tarball unpacked inside some other repository), with "-modified" when tracked files differ
# from it. Without git, outside a work tree, or when git refuses the directory, the commit is
# nil and `latchkey --version` prints the release alone. The file is rewritten only when its
# content changes, so an unchanged commit recompiles nothing.
#
# usage: build-info.sh PACKAGE_DIR OUTPUT_DIR
set -u
pkg=$1
out=$2
mkdir -p "$out" || exit 1
commit=""
if command -v git >/dev/null 2>&1 &&
   top=$(git -C "$pkg" rev-parse --show-toplevel 2>/dev/null) &&
   [ "$(cd "$top" && pwd -P)" = "$(cd "$pkg" && pwd -P)" ] &&
   head=$(git -C "$pkg" rev-parse --short=12 HEAD 2>/dev/null); then
    commit=$head
    # --no-optional-locks: never take index.lock, so a build cannot collide with a commit.
    git --no-optional-locks -C "$pkg" diff --quiet HEAD -- 2>/dev/null || commit="$head-modified"
fi
if [ -n "$commit" ]; then value="\"$commit\""; else value="nil"; fi
new="// Generated before every build by scripts/build-info.sh (Plugins/LatchkeyBuildInfo); never committed.
enum BuildInfo {
    /// The git commit of the package when it was built from a work tree (\"-modified\" when
    /// tracked files differed from it), else nil.
    static let commit: String? = $value
}"
[ "$(cat "$out/BuildInfo.swift" 2>/dev/null)" = "$new" ] || printf '%s\n' "$new" > "$out/BuildInfo.swift"
