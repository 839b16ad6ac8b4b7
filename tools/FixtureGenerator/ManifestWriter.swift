import Foundation
import LatchkeyCrypto
import LatchkeyFormat

/// Writes fixtures/manifest.json: every fixture of keychain/, backup/ and sync/ with the operation a
/// conforming implementation runs on it, the outcome it must reach and where the expected items
/// are, so that another implementation's test runner reads expectations instead of parsing the
/// READMEs (schema: spec/CONFORMANCE.md). Built from the same values that write each fixture's
/// FIXTURE.txt, so the two cannot disagree.
enum ManifestWriter {
    /// The schema version of manifest.json (spec/CONFORMANCE.md §3); a new field raises the minor.
    static let schema = "latchkey-fixtures-manifest 1.2"

    static func write(
        keychains: [Fixture], backups: [BackupFixture], sync: [(name: String, expected: SyncFixtures.Expected)],
        to root: URL
    ) throws {
        try FixtureWriter.write(
            Array(manifest(keychains: keychains, backups: backups, sync: sync).utf8),
            to: root.appendingPathComponent("manifest.json"))
    }

    static func manifest(
        keychains: [Fixture], backups: [BackupFixture], sync: [(name: String, expected: SyncFixtures.Expected)]
    ) -> String {
        var entries: [String] = keychains.sorted { $0.name < $1.name }.map(keychainEntry)
        entries += backups.sorted { $0.name < $1.name }.map(backupEntry)
        entries += sync.sorted { $0.name < $1.name }.map { syncEntry($0.name, $0.expected) }
        return "{\n  \"schema\": \(q(schema)),\n  \"spec\": \"spec/CONFORMANCE.md\",\n  \"fixtures\": [\n"
            + entries.joined(separator: ",\n") + "\n  ]\n}\n"
    }

    // MARK: Keychain fixtures

    static func keychainEntry(_ f: Fixture) -> String {
        var fields: [(String, String)] = [
            ("name", q(f.name)),
            ("path", q("keychain/\(f.name)")),
            ("format", q("keychain")),
            ("operation", q("open")),
            ("expect", q(f.expect.rawValue)),
            ("description", q(f.description))
        ]
        if let d = f.defect { fields.append(("defect", q(d))) }
        if let feature = f.feature { fields.append(("feature", q(feature))) }
        var inputs: [(String, String)] = [("keychain", q("keychain")), ("deviceSecret", q("device.secret"))]
        inputs.append(("deviceState", f.state == nil ? "null" : q("device.secret.state/\(hexString(f.fileUUID))")))
        inputs.append(("passcode", f.passcode == nil ? "null" : q("passcode.txt")))
        inputs.append(("index", f.index == nil ? "null" : q("keychain.index")))
        fields.append(("inputs", object(inputs, indent: 8)))
        if f.expect == .success {
            fields.append(("items", q("expected.json")))
            fields.append(("itemCount", "\(f.items.count)"))
            fields.append(("recoveredTailBytes", "\(f.recoveredTailBytes)"))
        }
        if let h = f.history {
            fields.append(("history", q("expected-history.json")))
            fields.append(("historyCount", "\(h.listed.count)"))
            fields.append(("historyNow", "\(h.now)"))
        }
        if f.index != nil { fields.append(("indexUse", q(indexUse(f)))) }
        for (key, value) in f.notes where key == "old-passcode-must-fail" {
            fields.append(("wrongPasscodes", "[\(q(value))]"))
        }
        let other = f.notes.filter { $0.0 != "old-passcode-must-fail" }
        if !other.isEmpty { fields.append(("notes", object(other.map { ($0.0, q($0.1)) }, indent: 8))) }
        return object(fields, indent: 6, first: true)
    }

    /// Whether a reader uses the fixture's index (spec/FORMAT.md §17.5): "used" or "not-used",
    /// from the fixture's `index:` note, which every fixture with an index carries.
    static func indexUse(_ f: Fixture) -> String {
        guard let note = f.notes.first(where: { $0.0 == "index" })?.1 else {
            preconditionFailure("\(f.name): a fixture with an index needs an 'index:' note saying whether it is used")
        }
        if note.hasPrefix("used") { return "used" }
        precondition(note.hasPrefix("not used"), "\(f.name): the index note must start with 'used' or 'not used'")
        return "not-used"
    }

    // MARK: Sync fixtures

    /// A sync fixture (spec/CONFORMANCE.md §5): the reader syncs `remote/` (after the remote of
    /// `after`, when there is one) and reaches `expect`, with the items of expected.json.
    static func syncEntry(_ name: String, _ e: SyncFixtures.Expected) -> String {
        var fields: [(String, String)] = [
            ("name", q(name)),
            ("path", q("sync/\(name)")),
            ("format", q("sync")),
            ("operation", q("sync")),
            ("expect", q(e.outcome)),
            ("description", q(e.description)),
            ("inputs", object([("remote", q("remote")), ("expected", q("expected.json"))], indent: 8)),
            ("readerSecret", q(hexString(SyncFixtures.recoverySecret)))
        ]
        if let after = e.after { fields.append(("after", q(after))) }
        if e.outcome == "success" {
            fields.append(("items", q("expected.json")))
            fields.append(("itemCount", "\(e.items.count)"))
        }
        fields.append(("warnings", "[" + e.warnings.map(q).joined(separator: ", ") + "]"))
        return object(fields, indent: 6, first: true)
    }

    // MARK: Backup fixtures

    static func backupEntry(_ f: BackupFixture) -> String {
        var fields: [(String, String)] = [
            ("name", q(f.name)),
            ("path", q("backup/\(f.name)")),
            ("format", q("backup")),
            ("operation", q("restore")),
            ("expect", q(f.expect.rawValue)),
            ("description", q(f.description))
        ]
        if let d = f.defect { fields.append(("defect", q(d))) }
        fields.append(
            (
                "inputs",
                object(
                    [
                        ("archive", q("backup.tar")),
                        ("password", f.password == nil ? "null" : q("password.txt")),
                        ("sourceDeviceSecret", q("source-device.secret")),
                        ("otherDeviceSecret", q("other-device.secret"))
                    ], indent: 8)
            ))
        var restores: [String] = []
        if f.expect == .success {
            let cases: [(String, String, BackupOutcome?, Bool, Bool)] = [
                ("same-device", "source-device.secret", f.sameDevice, false, true),
                ("same-device-passcode", "source-device.secret", f.sameDevicePasscode, true, false),
                ("other-device", "other-device.secret", f.otherDeviceOutcome, false, true),
                ("other-device-passcode", "other-device.secret", f.otherDevicePasscode, true, false)
            ]
            for (key, device, outcome, passcode, required) in cases {
                if let o = outcome {
                    restores.append(
                        object(
                            [
                                ("device", q(device)),
                                ("destinationPasscode", "\(o.destinationPasscode)"),
                                ("expect", q("success")),
                                ("items", q("expected-\(key).json")),
                                ("itemCount", "\(o.restored.count)"),
                                ("skippedThisDeviceOnlyFromAnotherDevice", "\(o.skippedOtherDevice)"),
                                ("skippedUserPresenceNeedsPasscode", "\(o.skippedUserPresence)")
                            ], indent: 10, first: true))
                } else if required {
                    restores.append(
                        object(
                            [
                                ("device", q(device)),
                                ("destinationPasscode", "\(passcode)"),
                                ("expect", q(Expectation.authenticationError.rawValue))
                            ], indent: 10, first: true))
                }
            }
            fields.append(("notExported", "\(f.notExported)"))
        } else {
            restores.append(
                object(
                    [
                        ("device", q("source-device.secret")),
                        ("destinationPasscode", "false"),
                        ("expect", q(f.expect.rawValue))
                    ], indent: 10, first: true))
        }
        fields.append(("restores", "[\n" + restores.joined(separator: ",\n") + "\n      ]"))
        return object(fields, indent: 6, first: true)
    }

    // MARK: JSON, by hand (FixtureWriter: bytes independent of the Foundation version)

    static func q(_ s: String) -> String { FixtureWriter.json(s) }

    /// `{ "key": value, … }` with one field a line, its fields indented by `indent`; `first`
    /// indents the opening brace too (an element of an array).
    static func object(_ fields: [(String, String)], indent: Int, first: Bool = false) -> String {
        let pad = String(repeating: " ", count: indent)
        let close = String(repeating: " ", count: indent - 2)
        let body = fields.map { "\(pad)\(q($0.0)): \($0.1)" }.joined(separator: ",\n")
        return (first ? close : "") + "{\n" + body + "\n" + close + "}"
    }
}
