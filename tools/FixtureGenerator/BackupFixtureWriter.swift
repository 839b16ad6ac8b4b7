import Foundation
import LatchkeyBackup
import LatchkeyCrypto
import LatchkeyFormat

/// Writes fixtures/backup/: one directory per backup fixture, a README, and the annotated
/// dump of golden_password that spec/BACKUP.md §12 quotes.
enum BackupFixtureWriter {
    static func writeAll(_ fixtures: [BackupFixture], example: String, to directory: URL) throws {
        let fm = FileManager.default
        if fm.fileExists(atPath: directory.path) { try fm.removeItem(at: directory) }
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        for f in fixtures { try write(f, to: directory.appendingPathComponent(f.name)) }
        try FixtureWriter.write(
            Array(example.utf8), to: directory.appendingPathComponent("golden_password/annotated.txt"))
        try FixtureWriter.write(Array(readme(fixtures).utf8), to: directory.appendingPathComponent("README.md"))
    }

    static func write(_ f: BackupFixture, to dir: URL) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FixtureWriter.write(f.archive, to: dir.appendingPathComponent("backup.tar"))
        try FixtureWriter.write(
            f.sourceDevice.encodeFile(), to: dir.appendingPathComponent("source-device.secret"), mode: 0o600)
        try FixtureWriter.write(
            f.otherDevice.encodeFile(), to: dir.appendingPathComponent("other-device.secret"), mode: 0o600)
        if let p = f.password { try FixtureWriter.write(Array(p.utf8), to: dir.appendingPathComponent("password.txt")) }
        var lines = ["expect: \(f.expect.rawValue)", "description: \(f.description)"]
        if let d = f.defect { lines.append("defect: \(d)") }
        lines.append("password: \(f.password == nil ? "none (a device-only backup; no password.txt)" : "password.txt")")
        if f.expect == .success {
            let outcomes: [(key: String, device: String, outcome: BackupOutcome?, required: Bool)] = [
                ("same-device", "source-device.secret", f.sameDevice, true),
                ("same-device-passcode", "source-device.secret", f.sameDevicePasscode, false),
                ("other-device", "other-device.secret", f.otherDeviceOutcome, true),
                ("other-device-passcode", "other-device.secret", f.otherDevicePasscode, false)
            ]
            for (key, device, outcome, required) in outcomes {
                if let o = outcome {
                    let file = "expected-\(key).json"
                    try FixtureWriter.write(
                        Array(expected(f, o, device: device).utf8), to: dir.appendingPathComponent(file))
                    lines.append("\(key): \(file)")
                } else if required {
                    lines.append("\(key): \(Expectation.authenticationError.rawValue)")
                }
            }
        } else {
            lines.append("device: source-device.secret")
        }
        try FixtureWriter.write(
            Array((lines.joined(separator: "\n") + "\n").utf8), to: dir.appendingPathComponent("FIXTURE.txt"))
    }

    /// The items a restore on `device` must produce, sorted as expected.json of the keychain
    /// fixtures is, and the count it must skip.
    static func expected(_ f: BackupFixture, _ o: BackupOutcome, device: String) -> String {
        let items = o.restored.sorted {
            ($0.plaintext.itemClass.rawValue, $0.protection.rawValue, hexString($0.uuid))
                < ($1.plaintext.itemClass.rawValue, $1.protection.rawValue, hexString($1.uuid))
        }
        var out = "{\n  \"fixture\": \(FixtureWriter.json(f.name)),\n  \"device\": \(FixtureWriter.json(device)),\n"
        out += "  \"destinationPasscode\": \(o.destinationPasscode),\n"
        out +=
            "  \"skipped\": {\"thisDeviceOnlyFromAnotherDevice\": \(o.skippedOtherDevice), \"userPresenceNeedsPasscode\": \(o.skippedUserPresence)},\n"
        out += "  \"notExported\": \(f.notExported),\n  \"restored\": ["
        for (i, item) in items.enumerated() {
            out += i == 0 ? "\n" : ",\n"
            out += "    {\n"
            out += "      \"class\": \(FixtureWriter.json(item.plaintext.itemClass.rawValue)),\n"
            out += "      \"uuid\": \(FixtureWriter.json(hexString(item.uuid))),\n"
            out += "      \"protection\": \(FixtureWriter.json(item.protection.code)),\n"
            out += "      \"protectionClass\": \(item.protection.rawValue),\n"
            out += "      \"flags\": \(item.flags),\n"
            out += "      \"attributes\": {"
            for (j, name) in item.plaintext.attributes.keys.sorted().enumerated() {
                out += j == 0 ? "\n" : ",\n"
                out += "        \(FixtureWriter.json(name)): \(FixtureWriter.json(item.plaintext.attributes[name]!))"
            }
            out += "\n      },\n"
            out += "      \"data\": \(FixtureWriter.json(Data(item.plaintext.data).base64EncodedString()))\n"
            out += "    }"
        }
        out += items.isEmpty ? "]\n}\n" : "\n  ]\n}\n"
        return out
    }

    // MARK: Annotated dump (spec/BACKUP.md §12)

    static func annotated(_ g: BackupFixtureCatalog.Golden) throws -> String {
        var lines: [String] = []
        let keybagBytes = g.entries[0].bytes
        let bag = try BackupKeybag.decode(keybagBytes)
        let c = bag.common
        lines.append("# golden_password: annotated entries of fixtures/backup/golden_password/backup.tar.")
        lines.append("# Generated by tools/FixtureGenerator (swift run latchkey-fixtures fixtures); do not edit.")
        lines.append("# All integers are big-endian. The first column is the offset from the start of each entry's")
        lines.append(
            "# data, in hex; numbers in the notes are decimal. B[i..j) is bytes i to j-1 of B (spec/FORMAT.md §1.2).")
        lines.append("#")
        lines.append("# Inputs (fixture secrets, public on purpose):")
        lines.append("#   source device UUID    \(hexString(g.source.uuid))")
        lines.append("#   source device secret  \(hexString(g.source.secret.copyBytes()))")
        lines.append("#   backup password       \"\(BackupFixtureCatalog.password)\" (UTF-8)")
        lines.append("# Keys (spec/BACKUP.md §4):")
        func key(_ name: String, _ k: SecretKey) {
            lines.append("#   " + name.padding(toLength: 40, withPad: " ", startingAt: 0) + hexString(k.copyBytes()))
        }
        key("PK  (password key)", g.keys.passwordKey!)
        key("DBK (device backup key)", g.keys.deviceKey!)
        key("password wrap key (kind 2)", try g.keys.kek(.password)!)
        key("password and device wrap key (kind 3)", try g.keys.kek(.passwordAndDevice)!)
        key("manifest MAC key", try g.keys.manifestMACKey(mode: c.mode)!)
        lines.append("# Backup class keys (§4.2), unwrapped from the keybag entry with the KEK of each wrap kind:")
        var classKeys: [ProtectionClass: SecretKey] = [:]
        for e in bag.entries {
            let k = try Crypto.unwrap(e.wrappedKey, with: try g.keys.kek(e.wrap)!)
            classKeys[e.protectionClass] = k
            key("\(e.protectionClass.code) (class \(e.protectionClass.rawValue), kind \(e.wrap.rawValue))", k)
        }
        lines.append("")
        lines.append("## Archive: \(g.entries.count) entries, in this order")
        for e in g.entries {
            lines.append("##   \(e.name)  \(e.bytes.count) bytes  SHA-256 \(hexString(Crypto.sha256(e.bytes)))")
        }
        lines.append("")
        lines.append("## \(BackupConstants.keybagName) (§3)")
        var d = AnnotatedDump(keybagBytes, from: 0)
        d.field(8, "magic \"LKBACKUP\"")
        d.field(2, "major version = \(c.major)")
        d.field(2, "minor version = \(c.minor)")
        d.field(1, "mode = 1 (password)")
        d.field(3, "reserved")
        d.field(16, "backup UUID")
        d.field(16, "source device UUID")
        d.field(16, "keychain UUID")
        d.field(8, "creation time = \(c.createdAt) (2025-01-02T00:00:00Z)")
        d.field(1, "KDF id = 1 (scrypt)")
        d.field(1, "logN = \(c.kdf.logN)")
        d.field(2, "reserved")
        d.field(4, "r = \(c.kdf.r)")
        d.field(4, "p = \(c.kdf.p)")
        d.field(4, "reserved")
        d.field(16, "scrypt salt")
        d.field(1, "entry count = 6")
        d.field(3, "reserved")
        for e in bag.entries {
            d.field(1, "class \(e.protectionClass.rawValue) (\(e.protectionClass.code))")
            d.field(1, "wrap kind \(e.wrap.rawValue) (\(e.wrap == .password ? "password" : "password and device"))")
            d.field(40, "Wrap(KEK, \(e.protectionClass.code) backup class key)")
        }
        d.field(32, "checksum = SHA-256(entry[0..360))")
        lines += d.lines
        lines.append("")

        let items = g.entries[1].bytes
        lines.append("## \(g.entries[1].name) (§5), its first record")
        var i = AnnotatedDump(items, from: 0)
        i.field(8, "magic \"LKBITEMS\"")
        i.field(4, "entry number = 1")
        i.field(4, "record count = \(ByteReader(items).getInteger(at: 12, as: UInt32.self)!)")
        let first = g.items[0]
        let length = Int(ByteReader(items).getInteger(at: 16 + 20, as: UInt32.self)!)
        i.field(16, "item UUID")
        i.field(1, "protection class \(first.protection.rawValue) (\(first.protection.code))")
        i.field(1, "item flags")
        i.field(2, "reserved")
        i.field(4, "ciphertext length = \(length)")
        i.field(40, "Wrap(\(first.protection.code) backup class key, item key)")
        i.field(length, "AES-256-GCM ciphertext of the item plaintext (spec/FORMAT.md §8)")
        i.field(16, "GCM tag")
        lines += i.lines
        let record = Array(items[16..<(16 + 80 + length)])
        let itemKey = try Crypto.unwrap(Array(record[24..<64]), with: classKeys[first.protection]!)
        var aad = BackupConstants.itemAADPrefix + c.backupUUID
        aad += [0, 0, 0, 1] + [0, 0, 0, 0] + record[0..<24]
        lines.append("# This record (§5.3), entry number e = 1, index i = 0:")
        lines.append("#   item key  = Unwrap(\(first.protection.code) backup class key, record[24..64))")
        lines.append("#             = \(hexString(itemKey.copyBytes()))")
        lines.append(
            "#   AAD       = \"LKBKitem\" ‖ backup UUID ‖ u32(1) ‖ u32(0) ‖ record[0..24)  (\(aad.count) bytes)")
        lines.append("#             = \(hexString(aad))")
        lines.append(
            "#   plaintext = AES-256-GCM-Decrypt(item key, nonce 0^12, AAD, ciphertext, tag)  (\(length) bytes)")
        lines.append("#             = \(hexString(first.plaintext.encode()))")
        lines.append("")

        let manifest = g.entries.last!.bytes
        let m = try Manifest.decode(manifest)
        lines.append("## \(BackupConstants.manifestName) (§6)")
        var md = AnnotatedDump(manifest, from: 0)
        md.field(8, "magic \"LKBMANIF\"")
        md.field(96, "bytes [8..104): identical to the keybag entry's")
        md.field(8, "item count = \(m.itemCount)")
        for (k, n) in m.countsByClass.enumerated() {
            md.field(8, "items of class \(k + 6) (\(ProtectionClass(rawValue: UInt8(k + 6))!.code)) = \(n)")
        }
        md.field(8, "akpu items not exported = \(m.notExported)")
        md.field(4, "entry count = \(m.entries.count)")
        md.field(4, "reserved")
        for e in m.entries {
            md.field(1, "name length = \(e.name.utf8.count)")
            md.field(e.name.utf8.count, "\"\(e.name)\"")
            md.field(8, "size = \(e.size)")
            md.field(32, "SHA-256 of the entry")
        }
        md.field(32, "MAC = HMAC(manifest MAC key, manifest[0..\(manifest.count - 32)))")
        lines += md.lines
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: README.md

    static func readme(_ fixtures: [BackupFixture]) -> String {
        var s = """
            # Backup fixtures

            Generated by `tools/FixtureGenerator` — never edit by hand. Regenerate with `make fixtures`
            (that is, `swift run latchkey-fixtures fixtures`); the generator deletes and rewrites
            `fixtures/backup/` and produces the same bytes on every run (`ConformanceTests` checks both).

            The archives are made by the `LatchkeyBackup` encoder with deterministic randomness
            (HMAC-SHA256(SHA-256("latchkey fixtures v1 seed: backup " ‖ label), u64 counter)), and
            wrapped in tar by the generator's own ustar writer, not libarchive, so their bytes do not
            depend on the library's version and the negative fixtures can hold entries no honest
            writer makes. The compressed ones store their input (deflate stored blocks, zstd raw
            blocks), for the same reason. Times are fixed (the backups: 2025-01-02T00:00:00Z); scrypt
            uses logN = 10.

            ## Files in each directory

            | File | What it is |
            |---|---|
            | `backup.tar` | the archive (spec/BACKUP.md) |
            | `source-device.secret` | the device secret file (spec/FORMAT.md §2) of the device that made the backup |
            | `other-device.secret` | a device secret of another machine |
            | `password.txt` | the backup password, UTF-8, no trailing newline; absent for a device-only backup |
            | `expected-same-device.json` | success fixtures: what a restore with `source-device.secret` into a new keychain **without** a passcode gives |
            | `expected-other-device.json` | success fixtures of a password backup: the same with `other-device.secret` |
            | `expected-same-device-passcode.json`, `expected-other-device-passcode.json` | success fixtures holding items that need user presence: the same restores into a new keychain **with** a passcode |
            | `FIXTURE.txt` | `key: value` lines: `expect`, `description`, `defect` (negative fixtures), `password`, and for success fixtures `same-device`, `other-device`, `same-device-passcode`, `other-device-passcode` (each names its expected file, or `authentication-error`), for negative ones `device` |
            | `golden_password/annotated.txt` | golden_password's keybag entry, first item record and manifest, annotated field by field (spec/BACKUP.md §12) |

            `expect:` is what a conforming reader must do when it restores `backup.tar` with
            `password.txt`, on the source device unless the line says otherwise: succeed, or report
            one of the outcomes of spec/FORMAT.md §1.4, named here exactly as the spec names them:

            - `success`: for each expected file, restore into a new keychain, with the device secret
              its `device` names and a passcode exactly when its `destinationPasscode` is true,
              exactly its `restored` items (attributes, data, UUIDs, protection classes and item
              flags identical), and skip as many records for each reason as its `skipped` says
              (spec/BACKUP.md §9.2); where a key says `authentication-error`, refuse that restore
              with an authentication error;
            - `not-a-latchkey-file`: refuse the file as not a Latchkey backup (errSecDecode; exit 5),
              before anything else;
            - `unsupported-version`: refuse it as needing a newer Latchkey (errSecDecode; exit 5);
            - `integrity-error`: refuse the archive as damaged (errSecDecode; exit 5);
            - `authentication-error`: refuse it with an authentication error (errSecAuthFailed;
              exit 4).

            A refused archive leaves the destination keychain byte for byte as it was.

            In the JSON files an attribute value is `{"string": …}`, `{"data": base64}`,
            `{"integer": n}` or `{"date": seconds since 2001-01-01 (CFAbsoluteTime)}`. A date is the
            exact binary64 value: an integer when it is a whole number of seconds, else the shortest
            decimal that reads back as the same double; compare dates exactly. `flags` is the item
            flags byte of the record (spec/BACKUP.md §5.2).

            ## Using a fixture

            Git does not keep file modes: copy the fixture somewhere and `chmod 600` the device
            secret before use:

                cp -R fixtures/backup/golden_password /tmp/gp && chmod 600 /tmp/gp/*.secret
                latchkey restore /tmp/gp/backup.tar --keychain /tmp/gp/restored.keychain \\
                         --device /tmp/gp/other-device.secret --password-file /tmp/gp/password.txt --no-passcode

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
