import LatchkeyBackup
import LatchkeyCrypto
import LatchkeyFormat

/// The fixture generator's deterministic bytes, as the backup writer's random source.
final class DeterministicBackupRandom: BackupRandomSource {
    private var rng: DeterministicRandom
    init(label: String) { rng = DeterministicRandom(label: label) }
    func bytes(_ count: Int) throws -> [UInt8] { rng.bytes(count) }
}

/// Collects the entries a backup writer emits, in order, so fixtures can alter them.
final class EntryCollector: BackupEntrySink {
    var entries: [(name: String, bytes: [UInt8])] = []
    func writeEntry(name: String, bytes: [UInt8]) throws { entries.append((name, bytes)) }
}

/// What a restore on one device must give: the items restored and those skipped.
struct BackupOutcome {
    var restored: [FixtureItem]
    var skippedOtherDevice: Int
}

/// One directory under fixtures/backup/.
struct BackupFixture {
    var name: String
    var expect: Expectation
    var description: String
    var defect: String?
    var archive: [UInt8]
    /// password.txt; nil for a device-only backup.
    var password: String?
    var sourceDevice: DeviceSecret
    var otherDevice: DeviceSecret
    /// Success fixtures: the outcome on the source device and on the other device (nil: the
    /// other device must refuse the backup with an authentication error).
    var sameDevice: BackupOutcome?
    var otherDeviceOutcome: BackupOutcome?
    var notExported = 0
}

/// Every backup fixture: two goldens (a password backup over three items entries, a
/// device-only backup), a golden of a newer minor version, and negative fixtures that are
/// golden_password with exactly one defect each.
enum BackupFixtureCatalog {
    static let password = "fixture backup password"
    static let wrongPassword = "not the fixture backup password"
    /// The backups are made a day after the keychain fixtures: 2025-01-02T00:00:00Z.
    static let createdAt: UInt64 = KeychainBuilder.createdAt + 86_400
    static let logN: UInt8 = 10
    /// Three records per items entry, so that the golden has three items entries.
    static let itemsPerEntry = 3

    /// The golden backups' source keychain: a genp item in each of the 7 protection classes
    /// (akpu is never exported), an inet item and a key.
    static func sourceItems(_ rng: inout DeterministicRandom) -> [FixtureItem] {
        var out: [FixtureItem] = []
        func item(_ c: ItemClass, _ attrs: [String: AttributeValue], _ data: [UInt8], _ pc: ProtectionClass, minute: Int) {
            var a = attrs
            a["cdat"] = .date(KeychainBuilder.createdAtAbsolute + Double(minute * 60))
            a["mdat"] = .date(KeychainBuilder.createdAtAbsolute + Double(minute * 60 + 30))
            out.append(FixtureItem(uuid: rng.uuid(), plaintext: ItemPlaintext(itemClass: c, attributes: a, data: data), protection: pc))
        }
        for (i, pc) in ProtectionClass.allCases.enumerated() {
            item(.genericPassword, ["acct": .string("user-\(pc.code)"), "svce": .string("backup.latchkey.example"),
                                    "labl": .string("Backup \(pc.longName)")], Array("secret-\(pc.code)".utf8), pc, minute: i)
        }
        item(.internetPassword, ["acct": .string("bob"), "srvr": .string("www.example.com"), "port": .integer(443),
                                 "icmt": .string("non-ASCII: clé ключ 🔑")], Array("pw-for-web".utf8), .afterFirstUnlock, minute: 7)
        item(.key, ["kcls": .integer(1), "atag": .data([0x00, 0x01, 0xfe, 0xff]), "labl": .string("Backup key")],
             [UInt8](repeating: 0x5A, count: 32), .alwaysThisDeviceOnly, minute: 8)
        return out
    }

    struct Golden {
        var entries: [(name: String, bytes: [UInt8])]
        var items: [FixtureItem]
        var source: DeviceSecret
        var other: DeviceSecret
        var manifest: Manifest
        var keys: BackupKeys
    }

    /// A golden backup's entries, written by the LatchkeyBackup encoder with deterministic
    /// randomness.
    static func golden(_ label: String, password: String?) throws -> Golden {
        var rng = DeterministicRandom(label: "backup " + label)
        let source = DeviceSecret(uuid: rng.uuid(), secret: SecretKey(copying: rng.bytes(32)))
        let other = DeviceSecret(uuid: rng.uuid(), secret: SecretKey(copying: rng.bytes(32)))
        let keychainUUID = rng.uuid()
        let items = sourceItems(&rng)
        let sink = EntryCollector()
        let encoder = try BackupEncoder(device: source, keychainUUID: keychainUUID, createdAt: createdAt,
                                        password: password.map { Array($0.utf8) }, logN: logN,
                                        random: DeterministicBackupRandom(label: "backup " + label + " writer"), sink: sink,
                                        itemsPerEntry: itemsPerEntry)
        for item in items {
            if item.protection == .whenPasscodeSetThisDeviceOnly {
                encoder.noteNotExported()
            } else {
                try encoder.add(uuid: item.uuid, protection: item.protection, flags: item.flags, plaintext: item.plaintext)
            }
        }
        let manifest = try encoder.finish()
        let c = encoder.common
        let keys = BackupKeys(passwordKey: try password.map { try BackupKeys.passwordKey(password: Array($0.utf8), kdf: c.kdf, backupUUID: c.backupUUID) },
                              deviceKey: try BackupKeys.deviceKey(device: source, backupUUID: c.backupUUID))
        return Golden(entries: sink.entries, items: items, source: source, other: other, manifest: manifest, keys: keys)
    }

    static func tar(_ entries: [(name: String, bytes: [UInt8])]) -> [UInt8] {
        var t = TarBuilder(mtime: createdAt)
        for e in entries { t.add(e.name, e.bytes) }
        t.end()
        return t.bytes
    }

    /// A manifest recomputed for `entries` (all but the manifest), with its MAC.
    static func resealed(_ g: Golden, entries: [(name: String, bytes: [UInt8])], edit: (inout Manifest) -> Void = { _ in }) throws -> [(name: String, bytes: [UInt8])] {
        var m = g.manifest
        m.entries = entries.map { ManifestEntry(name: $0.name, size: UInt64($0.bytes.count), sha256: Crypto.sha256($0.bytes)) }
        edit(&m)
        return entries + [(BackupConstants.manifestName, m.encode(macKey: try g.keys.manifestMACKey(mode: m.common.mode)!))]
    }

    static func outcome(_ g: Golden, sameDevice: Bool) -> BackupOutcome {
        let exported = g.items.filter { $0.protection != .whenPasscodeSetThisDeviceOnly }
        if sameDevice { return BackupOutcome(restored: exported, skippedOtherDevice: 0) }
        let migratory = exported.filter { !$0.protection.isThisDeviceOnly }
        return BackupOutcome(restored: migratory, skippedOtherDevice: exported.count - migratory.count)
    }

    static func all() throws -> [BackupFixture] {
        let g = try golden("golden_password", password: password)
        let d = try golden("golden_device_only", password: nil)
        var out: [BackupFixture] = []
        func fixture(_ name: String, _ expect: Expectation, _ description: String, defect: String? = nil,
                     archive: [UInt8], password pw: String? = password, from base: Golden? = nil) -> BackupFixture {
            let b = base ?? g
            return BackupFixture(name: name, expect: expect, description: description, defect: defect, archive: archive,
                                 password: pw, sourceDevice: b.source, otherDevice: b.other, notExported: 1)
        }

        var golden = fixture("golden_password", .success,
                             "a password backup of 9 items (a genp item in each protection class, an inet item, a key) in three items entries; akpu is not exported",
                             archive: tar(g.entries))
        golden.sameDevice = outcome(g, sameDevice: true)
        golden.otherDeviceOutcome = outcome(g, sameDevice: false)
        out.append(golden)

        var deviceOnly = fixture("golden_device_only", .success,
                                 "the same items backed up with --no-password: every class wrapped by the source device; the other device must refuse it (auth-failure)",
                                 archive: tar(d.entries), password: nil, from: d)
        deviceOnly.sameDevice = outcome(d, sameDevice: true)
        out.append(deviceOnly)

        // A newer minor version: extension bytes in the keybag and the manifest and an
        // ancillary entry, which a 1.0 reader skips (spec/BACKUP.md §10).
        var keybag = try BackupKeybag.decode(g.entries[0].bytes)
        keybag.common.minor = 1
        keybag.extensionBytes = Array("future keybag field".utf8)
        var newer = [(BackupConstants.keybagName, keybag.encode())] + Array(g.entries.dropFirst().dropLast())
        newer.append((BackupConstants.ancillaryPrefix + "note", Array("An ancillary entry of format 1.1: a 1.0 reader checks and skips it.\n".utf8)))
        newer = try resealed(g, entries: newer) { m in
            m.common.minor = 1
            m.extensionBytes = Array("future manifest field".utf8)
        }
        var newerMinor = fixture("golden_newer_minor", .success,
                                 "golden_password as a format 1.1 writer might make it: minor version 1, extension bytes in the keybag and the manifest, an ancillary entry latchkey-backup/x-note; a 1.0 reader restores what it understands",
                                 archive: tar(newer))
        newerMinor.sameDevice = golden.sameDevice
        newerMinor.otherDeviceOutcome = golden.otherDeviceOutcome
        out.append(newerMinor)

        out += try negatives(g, fixture)
        return out.sorted { $0.name < $1.name }
    }

    static func negatives(_ g: Golden, _ fixture: (String, Expectation, String, String?, [UInt8], String?, Golden?) -> BackupFixture) throws -> [BackupFixture] {
        var out: [BackupFixture] = []
        func add(_ name: String, _ expect: Expectation, _ description: String, _ defect: String, _ archive: [UInt8], password: String? = password) {
            out.append(fixture(name, expect, description, defect, archive, password, nil))
        }
        let entries = g.entries
        let plain = tar(entries)

        add("backup_wrong_password", .authFailure, "golden_password with a wrong password in password.txt",
            "password.txt holds \"\(wrongPassword)\"", plain, password: wrongPassword)

        // A flipped byte in each entry (in its data, not its tar header).
        var at = 0
        for e in entries {
            let dataStart = at + 512
            let spot = dataStart + e.bytes.count / 2
            var bad = plain
            let what = "\(e.name), byte \(e.bytes.count / 2) of its \(e.bytes.count)"
            let defect = flip(&bad, at: spot, what: what)
            var short = e.name.replacingOccurrences(of: BackupConstants.directory, with: "")
            if short.hasPrefix("items-") { short = "items" + String(Int(short.dropFirst(6))!) }
            add("entry_flipped_byte_\(short)", .integrityFailure, "golden_password with one bit flipped in \(e.name)", defect, bad)
            at = dataStart + (e.bytes.count + 511) / 512 * 512
        }

        // Truncated in the middle of the second items entry.
        let cut = 512 + (entries[0].bytes.count + 511) / 512 * 512 + 512 + (entries[1].bytes.count + 511) / 512 * 512 + 512 + 100
        add("archive_truncated", .integrityFailure, "golden_password cut short inside latchkey-backup/items-000002",
            "the archive ends at byte \(cut) of \(plain.count)", Array(plain.prefix(cut)))

        // Unknown major version (the keybag's checksum recomputed so only the version is wrong).
        var keybag = try BackupKeybag.decode(entries[0].bytes)
        keybag.common.major = 2
        add("keybag_unknown_major", .unsupportedVersion, "golden_password with major version 2 in its keybag entry",
            "keybag entry bytes 8-9 set to 00 02 (checksum recomputed)",
            tar([(entries[0].name, keybag.encode())] + entries.dropFirst()))

        add("entry_missing", .integrityFailure, "golden_password without latchkey-backup/items-000002",
            "the entry latchkey-backup/items-000002 removed", tar(entries.enumerated().filter { $0.offset != 2 }.map(\.element)))

        var extra = Array(entries.dropLast())
        extra.append((BackupConstants.directory + "README.txt", Array("not part of any backup\n".utf8)))
        extra.append(entries.last!)
        add("entry_extra", .integrityFailure, "golden_password with an extra regular file before the manifest",
            "an entry latchkey-backup/README.txt (23 bytes) added before the manifest", tar(extra))

        func withEntry(_ name: String, _ data: [UInt8], kind: TarBuilder.Kind, link: String = "", declaredSize: UInt64? = nil,
                       replacing index: Int? = nil) -> [UInt8] {
            var t = TarBuilder(mtime: createdAt)
            for (i, e) in entries.enumerated() {
                if i == index {
                    t.add(name, data, kind: kind, linkTarget: link, declaredSize: declaredSize)
                    continue
                }
                if index == nil, i == entries.count - 1 { t.add(name, data, kind: kind, linkTarget: link, declaredSize: declaredSize) }
                t.add(e.name, e.bytes)
            }
            t.end()
            return t.bytes
        }
        add("entry_path_dotdot", .integrityFailure, "golden_password with an entry whose name climbs out of the archive",
            "an entry latchkey-backup/../../etc/latchkey-evil added before the manifest",
            withEntry(BackupConstants.directory + "../../etc/latchkey-evil", Array("x".utf8), kind: .regular))
        add("entry_path_absolute", .integrityFailure, "golden_password with an entry named by an absolute path",
            "an entry /etc/latchkey-evil added before the manifest",
            withEntry("/etc/latchkey-evil", Array("x".utf8), kind: .regular))
        add("entry_symlink", .integrityFailure, "golden_password whose second items entry is a symbolic link",
            "latchkey-backup/items-000002 replaced by a symbolic link to /etc/passwd",
            withEntry(entries[2].name, [], kind: .symlink, link: "/etc/passwd", replacing: 2))
        add("entry_device", .integrityFailure, "golden_password with a character device entry",
            "a character device latchkey-backup/null (1, 3) added before the manifest",
            withEntry(BackupConstants.directory + "null", [], kind: .characterDevice))
        add("entry_oversized", .integrityFailure,
            "golden_password whose second items entry claims 1 GiB: a reader must refuse it before reading or allocating that much",
            "latchkey-backup/items-000002's tar header claims 1073741824 bytes (the manifest says \(entries[2].bytes.count)); the archive ends after its real bytes",
            Array(withEntry(entries[2].name, entries[2].bytes, kind: .regular, declaredSize: 1 << 30, replacing: 2).dropLast(1024)))
        var longer = entries
        longer[2].bytes += [UInt8](repeating: 0, count: 4096)
        add("entry_larger_than_manifest", .integrityFailure,
            "golden_password whose second items entry has 4096 bytes more than the manifest says",
            "4096 zero bytes appended to latchkey-backup/items-000002 (its tar size says so; the manifest does not)", tar(longer))
        return out
    }
}
