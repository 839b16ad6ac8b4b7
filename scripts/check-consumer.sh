#!/usr/bin/env bash
# Depend on this package as a stranger would: by version, through a URL (README "Use it from
# Swift"). Run by `make test`; offline (dependencies resolve from the local git mirrors) and
# bounded in time (CONSUMER_TIMEOUT seconds for the whole check, default 900).
#
# 1. Copies the work tree (tracked files and new ones not ignored, as they are now, uncommitted
#    changes included; or the whole directory when it is not a git work tree) into a new git
#    repository in a temporary directory, commits it and tags it v<version> itself, so the
#    check never depends on tags having been pushed.
# 2. Makes a package with the README's `Package.swift`, its URL replaced by the file:// URL of
#    that repository (SwiftPM refuses `unsafeFlags` in a dependency used by version, so this
#    build fails if they come back), and the README's `main.swift`.
# 3. Builds it (with the code of the documentation's getting-started article and the README's
#    "The library in ten lines" beside it, compiled only), runs it and compares its output with the README's expected output.
#
# Environment: SWIFT (default swift), CONSUMER_TIMEOUT, CONSUMER_KEEP=1 keeps the directory.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
SWIFT=${SWIFT:-swift}
limit=${CONSUMER_TIMEOUT:-900}
started=$(date +%s)

say() { printf 'check-consumer: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
left() { local l=$((limit - ($(date +%s) - started))); [ "$l" -gt 0 ] || fail "over ${limit} s"; echo "$l"; }

version=$(sed -n 's/^    static let release = "\([0-9][0-9.]*\)"$/\1/p' Sources/latchkey/Support/Version.swift)
[ -n "$version" ] || fail "no release in Sources/latchkey/Support/Version.swift"

work=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-consumer.XXXXXX")
if [ "${CONSUMER_KEEP:-0}" = 1 ]; then say "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

# The README's section, and its first two swift blocks and first text block.
section=$(awk '/^## Use it from Swift$/ {on=1; next} on && /^## / {exit} on' README.md)
[ -n "$section" ] || fail "README.md has no section \"## Use it from Swift\""
block() { # block KIND N: the Nth fenced block of KIND in the section
    awk -v kind="$1" -v n="$2" '
        $0 == "```" kind { k++; if (k == n) { on = 1; next } }
        on && $0 == "```" { exit }
        on' <<<"$section"
}
manifest=$(block swift 1); program=$(block swift 2); expected=$(block text 1)
[ -n "$manifest" ] && [ -n "$program" ] && [ -n "$expected" ] || fail "the README section needs two swift blocks and a text block"
grep -q '\.package(url: "[^"]*", from: "'"$version"'")' <<<"$manifest" \
    || fail "the README's Package.swift must depend on from: \"$version\" (Sources/latchkey/Support/Version.swift)"

# 1. A tagged repository of this tree, named latchkey as the README's URL is.
repo="$work/latchkey"
mkdir -p "$repo"
if git rev-parse --show-toplevel >/dev/null 2>&1 && [ "$(git rev-parse --show-toplevel)" = "$root" ]; then
    git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
        | tar --null -T - -cf - | tar -xf - -C "$repo"
else
    tar --exclude='./.build*' --exclude='./Benchmarks/.build*' -cf - . | tar -xf - -C "$repo"
fi
(
    cd "$repo"
    git init -q
    git add -A
    git -c user.name=check-consumer -c user.email=check-consumer@localhost -c commit.gpgsign=false \
        commit -q -m "snapshot for check-consumer"
    git -c user.name=check-consumer -c user.email=check-consumer@localhost -c tag.gpgsign=false \
        tag -a "v$version" -m "check-consumer"
)

# 2. The consumer package.
app="$work/MyApp"
mkdir -p "$app/Sources/MyApp"
sed -E 's#\.package\(url: "[^"]*"#.package(url: "file://'"$repo"'"#' <<<"$manifest" >"$app/Package.swift"
printf '%s\n' "$program" >"$app/Sources/MyApp/main.swift"
# The getting-started article of the documentation (Sources/Latchkey/Latchkey.docc): its code
# blocks, in order, as the body of one function, so the article's code compiles as written.
article=Sources/Latchkey/Latchkey.docc/GettingStarted.md
[ -f "$article" ] || fail "no $article"
{
    printf 'import Foundation\nimport Latchkey\n\nfunc gettingStarted() throws {\n'
    awk '$0 == "```swift" { on = 1; next } on && $0 == "```" { on = 0; next } on && !/^import / { print "    " $0 }' "$article"
    printf '}\n'
} >"$app/Sources/MyApp/GettingStarted.swift"
# The README's "The library in ten lines", compiled the same way.
tenlines=$(awk '/^## The library in ten lines$/ {on=1; next} on && /^## / {exit} on' README.md \
    | awk '$0 == "```swift" { on = 1; next } on && $0 == "```" { exit } on && !/^import / { print "    " $0 }')
[ -n "$tenlines" ] || fail "README.md has no swift block under \"## The library in ten lines\""
printf 'import Foundation\nimport Latchkey\n\nfunc libraryInTenLines() throws {\n%s\n}\n' "$tenlines" \
    >"$app/Sources/MyApp/LibraryInTenLines.swift"

# 3. Build (dependencies from the mirrors, caches inside $work) and run.
say "building MyApp against latchkey $version by version from file://$repo"
if ! timeout "$(left)" "$SWIFT" build --package-path "$app" --cache-path "$work/cache" \
        --config-path "$work/config" --security-path "$work/security" >"$work/build.log" 2>&1; then
    cat "$work/build.log" >&2
    grep -q "unsafe build flags" "$work/build.log" && fail "SwiftPM refuses the package by version: unsafeFlags are back in Package.swift"
    fail "the README's program, its ten-line example or the getting-started article's code does not build against the tagged package"
fi
bin=$("$SWIFT" build --package-path "$app" --cache-path "$work/cache" --config-path "$work/config" \
        --security-path "$work/security" --show-bin-path)
actual=$(cd "$work" && env -u LATCHKEY_KEYCHAIN -u LATCHKEY_DEVICE -u LATCHKEY_PASSCODE -u LATCHKEY_APP_ID \
        -u LATCHKEY_ENTITLEMENTS LATCHKEY_AGENT_SOCK=none timeout "$(left)" "$bin/MyApp") \
    || fail "the README's program exited with status $?"
if [ "$actual" != "$expected" ]; then
    diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") >&2 || true
    fail "the README's program printed something else than the README says (expected < > actual)"
fi
say "ok: latchkey $version used by version through file:// ($(($(date +%s) - started)) s)"
