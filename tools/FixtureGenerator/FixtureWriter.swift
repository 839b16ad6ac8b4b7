import Foundation
import LatchkeyCrypto
import LatchkeyFormat

/// Writes fixtures to disk. The JSON is emitted by hand (not JSONEncoder) so its bytes do not
/// depend on the Foundation version that regenerates them.
enum FixtureWriter {
    static func writeAll(_ fixtures: [Fixture], hexDump: String, to directory: URL) throws {
        let fm = FileManager.default
        if fm.fileExists(atPath: directory.path) { try fm.removeItem(at: directory) }
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        for f in fixtures { try write(f, to: directory.appendingPathComponent(f.name)) }
        try write(Array(hexDump.utf8), to: directory.appendingPathComponent("golden_small/hexdump.txt"))
        try write(Array(readme(fixtures).utf8), to: directory.appendingPathComponent("README.md"))
    }

    static func write(_ f: Fixture, to dir: URL) throws {
        let fm = FileManager.default
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        try write(f.keychain, to: dir.appendingPathComponent("keychain"))
        if let index = f.index { try write(index, to: dir.appendingPathComponent("keychain.index"), mode: 0o600) }
        try write(f.device.encodeFile(), to: dir.appendingPathComponent("device.secret"), mode: 0o600)
        if let state = f.state {
            let stateDir = dir.appendingPathComponent("device.secret.state")
            try fm.createDirectory(
                at: stateDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try write(state, to: stateDir.appendingPathComponent(hexString(f.fileUUID)), mode: 0o600)
        }
        if let p = f.passcode { try write(Array(p.utf8), to: dir.appendingPathComponent("passcode.txt")) }
        if f.expect == .success {
            try write(Array(expectedJSON(f).utf8), to: dir.appendingPathComponent("expected.json"))
        }
        if f.history != nil {
            try write(Array(expectedHistoryJSON(f).utf8), to: dir.appendingPathComponent("expected-history.json"))
        }
        for (name, bytes) in f.extraFiles { try write(bytes, to: dir.appendingPathComponent(name)) }
        try write(Array(fixtureText(f).utf8), to: dir.appendingPathComponent("FIXTURE.txt"))
    }

    static func write(_ bytes: [UInt8], to url: URL, mode: Int = 0o644) throws {
        try Data(bytes).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
    }

    // MARK: FIXTURE.txt

    static func fixtureText(_ f: Fixture) -> String {
        var lines = ["expect: \(f.expect.rawValue)", "description: \(f.description)"]
        if f.expect == .success { lines.append("recovered-tail-bytes: \(f.recoveredTailBytes)") }
        if let h = f.history {
            lines.append("history: expected-history.json")
            lines.append("history-now: \(h.now) (\(isoDate(h.now)))")
        }
        if let d = f.defect { lines.append("defect: \(d)") }
        if let feature = f.feature { lines.append("feature: \(feature)") }
        lines.append("passcode: \(f.passcode == nil ? "none (no passcode.txt; do not unlock)" : "passcode.txt")")
        for (k, v) in f.notes { lines.append("\(k): \(v)") }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: expected.json

    static func expectedJSON(_ f: Fixture) -> String {
        let items = f.items.sorted {
            ($0.plaintext.itemClass.rawValue, $0.protection.rawValue, hexString($0.uuid))
                < ($1.plaintext.itemClass.rawValue, $1.protection.rawValue, hexString($1.uuid))
        }
        var out = "{\n  \"fixture\": \(json(f.name)),\n  \"items\": ["
        for (i, item) in items.enumerated() {
            out += i == 0 ? "\n" : ",\n"
            out += "    {\n" + itemFields(item) + "\n    }"
        }
        out += items.isEmpty ? "]\n}\n" : "\n  ]\n}\n"
        return out
    }

    /// An item's fields after `leading`, one a line at six spaces, without the closing brace.
    static func itemFields(_ item: FixtureItem, _ leading: [(String, String)] = []) -> String {
        var out = ""
        for (key, value) in leading { out += "      \(json(key)): \(value),\n" }
        out += "      \"class\": \(json(item.plaintext.itemClass.rawValue)),\n"
        out += "      \"uuid\": \(json(hexString(item.uuid))),\n"
        out += "      \"protection\": \(json(item.protection.code)),\n"
        out += "      \"protectionClass\": \(item.protection.rawValue),\n"
        out += "      \"flags\": \(item.flags),\n"
        out += "      \"attributes\": {"
        let names = item.plaintext.attributes.keys.sorted()
        for (j, name) in names.enumerated() {
            out += j == 0 ? "\n" : ",\n"
            out += "        \(json(name)): \(json(item.plaintext.attributes[name]!))"
        }
        out += "\n      },\n"
        out += "      \"data\": \(json(Data(item.plaintext.data).base64EncodedString()))"
        return out
    }

    // MARK: expected-history.json

    /// The history at `now` (spec §7.7): each version not expired then, in file order (oldest
    /// first), with its record's kind and time, then the item as it was, in expected.json's style.
    static func expectedHistoryJSON(_ f: Fixture) -> String {
        let h = f.history!
        var out = "{\n  \"fixture\": \(json(f.name)),\n  \"now\": \(h.now),\n  \"versions\": ["
        for (i, v) in h.listed.enumerated() {
            out += i == 0 ? "\n" : ",\n"
            out +=
                "    {\n"
                + itemFields(
                    v.item,
                    [("kind", "\(v.record.kind.rawValue)"), ("supersededAt", "\(v.record.supersededAt)")])
                + "\n    }"
        }
        out += h.listed.isEmpty ? "]\n}\n" : "\n  ]\n}\n"
        return out
    }

    /// `{"string": …}`, `{"data": base64}`, `{"integer": n}` or `{"date": seconds since 2001}`.
    /// A date is its exact binary64 value: a whole number of seconds as an integer, any other
    /// as the shortest decimal that reads back as the same double (Swift's `description`).
    static func json(_ v: AttributeValue) -> String {
        switch v {
        case .string(let s): return "{\"string\": \(json(s))}"
        case .data(let d): return "{\"data\": \(json(Data(d).base64EncodedString()))}"
        case .integer(let i): return "{\"integer\": \(i)}"
        case .date(let t):
            precondition(t.isFinite, "fixture dates are finite")
            if t == t.rounded(), abs(t) < 9_007_199_254_740_992 { return "{\"date\": \(Int64(t))}" }
            precondition(Double(t.description) == t)
            return "{\"date\": \(t.description)}"
        }
    }

    static func json(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where u.value < 0x20: out += "\\u" + String(u.value, radix: 16).leftPadded(4)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    // MARK: README.md

    static func readme(_ fixtures: [Fixture]) -> String {
        var s = """
            # Keychain fixtures

            Generated by `tools/FixtureGenerator` — never edit by hand. Regenerate with `make fixtures`
            (that is, `swift run latchkey-fixtures fixtures`); the generator deletes and rewrites
            `fixtures/keychain/` and produces the same bytes on every run (`ConformanceTests` checks
            both that and that the committed files match a fresh run).

            The generator is a second, independent writer of the format: it composes the
            `LatchkeyFormat` encoders directly (no storage engine), takes every "random" byte from
            HMAC-SHA256(SHA-256("latchkey fixtures v1 seed: " ‖ seed label), u64 counter), uses fixed
            timestamps (2025-01-01T00:00:00Z) and scrypt logN = 10 so readers test quickly.
            `ConformanceTests` opens every fixture with the Latchkey engine and checks the outcome.

            ## Files in each directory

            | File | What it is |
            |---|---|
            | `keychain` | the keychain file (spec/FORMAT.md §3–§8) |
            | `device.secret` | the device secret file (§2) the keychain was made with |
            | `device.secret.state/<file UUID hex>` | the device state (§9): the newest sequence this device saw |
            | `passcode.txt` | the passcode, UTF-8, no trailing newline; absent when the keychain has none |
            | `expected.json` | `success` fixtures only: every live item, sorted by class, protection class number, UUID |
            | `expected-history.json` | fixtures with a `history:` line only: the history a reader lists at `now` (spec §7.7), below |
            | `FIXTURE.txt` | `key: value` lines: `expect`, `description`, `recovered-tail-bytes` (success), `history` and `history-now` (fixtures with an expected history), `defect` (negative fixtures), `feature` (the part of the format beyond the rules every reader follows that the fixture tests: `history`, spec §7.7), `passcode`, and notes such as `old-passcode-must-fail` (that passcode must be refused with an authentication error) |
            | `golden_small/hexdump.txt` | golden_small's header and first record, annotated field by field (spec §14) |
            | `history/hexdump.txt` | one history record of `history`, its frame, fixed part and the clear part of the put it keeps, annotated (spec §7.7) |

            `expect:` is what a conforming reader must do: succeed, or report one of the outcomes of
            spec/FORMAT.md §1.4, named here exactly as the spec names them:

            - `success`: open, unlock with `passcode.txt`, find exactly the items of `expected.json`
              (attributes, data and item flags identical), verify cleanly. `recovered-tail-bytes`
              is the size of the torn tail (spec §10.4): a reader that holds the writer lock (as
              Latchkey's open does when it can write the file) cuts exactly that many bytes off the
              end; a reader without the lock leaves the file as it is and ignores those bytes. An
              item whose `flags` has bit 0 set needs user presence: its data is given only after
              the passcode has been asked for again and checked;
            - `not-a-latchkey-file`: refuse the file as not a Latchkey file, before reading anything
              else (errSecDecode, a message that says so);
            - `unsupported-version`: refuse the file, or the item, as needing a newer Latchkey
              (errSecDecode, a message that says to upgrade);
            - `integrity-error`: refuse the file, or the damaged item, as damaged (errSecDecode);
            - `authentication-error`: refuse to open the file with this device secret, or to unlock it
              with the passcode given (errSecAuthFailed);
            - `rolled-back`: refuse the file as older than the device state remembers (errSecDecode,
              a message that says so).

            Each negative fixture is a golden keychain (golden_small unless its description says
            otherwise) with exactly one defect, named for it and spelled out on its `defect:` line.

            In `expected.json` an attribute value is `{"string": …}`, `{"data": base64}`,
            `{"integer": n}` or `{"date": seconds since 2001-01-01 (CFAbsoluteTime)}`. A date is the
            exact IEEE 754 binary64 value stored: an integer when it is a whole number of seconds,
            else the shortest decimal that reads back as the same double; compare dates exactly,
            never rounded to a second. `flags` is the item flags byte of the item's put record
            (spec §7.1). `pdmn` (Apple's kSecAttrAccessible) is not stored (spec §7.1): a reader
            reports it from the protection class, so it is not among the attributes here (it is the
            `protection` field).

            `expected-history.json` holds `now` (Unix seconds; the manifest's `historyNow`, and
            `history-now:` in `FIXTURE.txt`) and `versions`: the history records not expired at
            `now` (spec §7.7), in file order, oldest first, each with `kind` (1: replaced, 2:
            deleted), `supersededAt` (the record's time, Unix seconds) and then, in the style of
            `expected.json`, the item as that version held it (class, UUID, protection class, item
            flags, attributes, data). A reader that lists history must list exactly these at `now`;
            one that lists none still passes the fixture by its live items, and cannot reach the
            outcome of `history_malformed`, whose defect only a reader of history records meets
            (its `feature:` line says so).

            ## Using a fixture

            Git does not keep file modes, so `device.secret` comes out of a checkout as 0644, and
            Latchkey refuses a device secret that others can read. Copy the fixture directory
            somewhere writable (opening may cut off an incomplete tail, and updates the device
            state), then `chmod 600 device.secret` before use:

                cp -R fixtures/keychain/golden_small /tmp/gs && chmod 600 /tmp/gs/device.secret
                latchkey --keychain /tmp/gs/keychain --device /tmp/gs/device.secret \\
                         --passcode-file /tmp/gs/passcode.txt verify

            ## The fixtures

            | Fixture | Expect | What it is |
            |---|---|---|

            """
        for f in fixtures {
            s +=
                "| `\(f.name)` | \(f.expect.rawValue) | \(f.description.replacingOccurrences(of: "|", with: "\\|")) |\n"
        }
        return s
    }
}
