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

/// What a restore on one device, into a new keychain with or without a passcode, must give:
/// the items restored and those skipped (spec/BACKUP.md §9.2 steps 1 and 2).
struct BackupOutcome {
    var destinationPasscode: Bool
    var restored: [FixtureItem]
    var skippedOtherDevice: Int
    var skippedUserPresence: Int
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
    /// other device must refuse the backup with an authentication error), restoring into a new
    /// keychain without a passcode; and, when the backup holds items that need user presence,
    /// into one with a passcode too (the `-passcode` outcomes).
    var sameDevice: BackupOutcome?
    var otherDeviceOutcome: BackupOutcome?
    var sameDevicePasscode: BackupOutcome?
    var otherDevicePasscode: BackupOutcome?
    var notExported = 0

    /// Sets every outcome from the golden backup it restores like.
    mutating func restoresLike(_ g: BackupFixtureCatalog.Golden, otherDeviceRefuses: Bool = false) {
        sameDevice = BackupFixtureCatalog.outcome(g, sameDevice: true, passcode: false)
        otherDeviceOutcome =
            otherDeviceRefuses ? nil : BackupFixtureCatalog.outcome(g, sameDevice: false, passcode: false)
        if g.items.contains(where: { $0.flags & ItemPutPayload.userPresenceFlag != 0 }) {
            sameDevicePasscode = BackupFixtureCatalog.outcome(g, sameDevice: true, passcode: true)
            otherDevicePasscode =
                otherDeviceRefuses ? nil : BackupFixtureCatalog.outcome(g, sameDevice: false, passcode: true)
        }
    }
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
        func item(
            _ c: ItemClass, _ attrs: [String: AttributeValue], _ data: [UInt8], _ pc: ProtectionClass, minute: Int
        ) {
            var a = attrs
            a["cdat"] = .date(KeychainBuilder.createdAtAbsolute + Double(minute * 60))
            a["mdat"] = .date(KeychainBuilder.createdAtAbsolute + Double(minute * 60 + 30))
            out.append(
                FixtureItem(
                    uuid: rng.uuid(), plaintext: ItemPlaintext(itemClass: c, attributes: a, data: data), protection: pc)
            )
        }
        for (i, pc) in ProtectionClass.allCases.enumerated() {
            item(
                .genericPassword,
                [
                    "acct": .string("user-\(pc.code)"), "svce": .string("backup.latchkey.example"),
                    "labl": .string("Backup \(pc.longName)")
                ], Array("secret-\(pc.code)".utf8), pc, minute: i)
        }
        item(
            .internetPassword,
            [
                "acct": .string("bob"), "srvr": .string("www.example.com"), "port": .integer(443),
                "icmt": .string("non-ASCII: clé ключ 🔑")
            ], Array("pw-for-web".utf8), .afterFirstUnlock, minute: 7)
        item(
            .key, ["kcls": .integer(1), "atag": .data([0x00, 0x01, 0xfe, 0xff]), "labl": .string("Backup key")],
            [UInt8](repeating: 0x5A, count: 32), .alwaysThisDeviceOnly, minute: 8)
        return out
    }

    /// The date ceiling of spec/BACKUP.md §9.2 for the fixtures' backups, in the scale of
    /// `cdat` and `mdat` (seconds since 2001-01-01): the end of the creation second,
    /// 2025-01-02T00:00:01Z = 757 468 801.
    static let dateCeiling = Double(createdAt) + 1 - 978_307_200

    /// golden_future_dated's source keychain: an ak item dated 2100-01-01T00:00:00Z (its cdat
    /// and mdat), which a restore stores as the ceiling, and a ck item dated before the backup.
    static func futureDatedItems(_ rng: inout DeterministicRandom) -> [FixtureItem] {
        let future = 3_155_760_000.0  // 2100-01-01T00:00:00Z, seconds since 2001-01-01
        let past = KeychainBuilder.createdAtAbsolute + 60
        return [
            (ProtectionClass.whenUnlocked, "future-dated", future), (.afterFirstUnlock, "dated-before-the-backup", past)
        ].map { pc, account, date in
            FixtureItem(
                uuid: rng.uuid(),
                plaintext: ItemPlaintext(
                    itemClass: .genericPassword,
                    attributes: [
                        "acct": .string(account), "svce": .string("backup.latchkey.example/dates"),
                        "cdat": .date(date), "mdat": .date(date)
                    ],
                    data: Array("secret-\(account)".utf8)),
                protection: pc)
        }
    }

    /// `item` as a restore stores it: `cdat` and `mdat` no later than the date ceiling.
    static func clamped(_ item: FixtureItem) -> FixtureItem {
        var out = item
        for name in ["cdat", "mdat"] {
            if case .date(let d)? = item.plaintext.attributes[name], d > dateCeiling {
                out.plaintext.attributes[name] = .date(dateCeiling)
            }
        }
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

    /// golden_user_presence's source keychain: an ak and a dku item that need user presence
    /// (item flag bit 0), and a ck item that does not, whose mdat is not a whole second.
    static func userPresenceItems(_ rng: inout DeterministicRandom) -> [FixtureItem] {
        var out: [FixtureItem] = []
        for (i, pc) in [ProtectionClass.whenUnlocked, .alwaysThisDeviceOnly, .afterFirstUnlock].enumerated() {
            let presence = pc != .afterFirstUnlock
            var attrs: [String: AttributeValue] = [
                "acct": .string(presence ? "needs-presence-\(pc.code)" : "no-presence-\(pc.code)"),
                "svce": .string("backup.latchkey.example/presence"),
                "cdat": .date(KeychainBuilder.createdAtAbsolute + Double(i * 60)),
                "mdat": .date(KeychainBuilder.createdAtAbsolute + Double(i * 60 + 30))
            ]
            if !presence { attrs["mdat"] = .date(KeychainBuilder.createdAtAbsolute + Double(i * 60) + 1.0 / 3.0) }
            out.append(
                FixtureItem(
                    uuid: rng.uuid(),
                    plaintext: ItemPlaintext(
                        itemClass: .genericPassword, attributes: attrs, data: Array("secret-\(pc.code)".utf8)),
                    protection: pc, flags: presence ? ItemPutPayload.userPresenceFlag : 0))
        }
        return out
    }

    /// A golden backup's entries, written by the LatchkeyBackup encoder with deterministic
    /// randomness.
    static func golden(
        _ label: String, password: String?,
        items makeItems: (inout DeterministicRandom) -> [FixtureItem] = sourceItems
    ) throws -> Golden {
        var rng = DeterministicRandom(label: "backup " + label)
        let source = DeviceSecret(uuid: rng.uuid(), secret: SecretKey(copying: rng.bytes(32)))
        let other = DeviceSecret(uuid: rng.uuid(), secret: SecretKey(copying: rng.bytes(32)))
        let keychainUUID = rng.uuid()
        let items = makeItems(&rng)
        let sink = EntryCollector()
        let encoder = try BackupEncoder(
            device: source, keychainUUID: keychainUUID, createdAt: createdAt,
            password: password.map { Array($0.utf8) }, logN: logN,
            random: DeterministicBackupRandom(label: "backup " + label + " writer"), sink: sink,
            itemsPerEntry: itemsPerEntry)
        for item in items {
            if item.protection == .whenPasscodeSetThisDeviceOnly {
                encoder.noteNotExported()
            } else {
                try encoder.add(
                    uuid: item.uuid, protection: item.protection, flags: item.flags, plaintext: item.plaintext)
            }
        }
        let manifest = try encoder.finish()
        let c = encoder.common
        let keys = BackupKeys(
            passwordKey: try password.map {
                try BackupKeys.passwordKey(password: Array($0.utf8), kdf: c.kdf, backupUUID: c.backupUUID)
            },
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
    static func resealed(
        _ g: Golden, entries: [(name: String, bytes: [UInt8])], edit: (inout Manifest) -> Void = { _ in }
    ) throws -> [(name: String, bytes: [UInt8])] {
        var m = g.manifest
        m.entries = entries.map {
            ManifestEntry(name: $0.name, size: UInt64($0.bytes.count), sha256: Crypto.sha256($0.bytes))
        }
        edit(&m)
        return entries + [
            (BackupConstants.manifestName, m.encode(macKey: try g.keys.manifestMACKey(mode: m.common.mode)!))
        ]
    }

    /// spec/BACKUP.md §9.2 for a new keychain: step 1 (a ThisDeviceOnly class of another
    /// device's backup) before step 2 (user presence without a passcode), else restored.
    static func outcome(_ g: Golden, sameDevice: Bool, passcode: Bool) -> BackupOutcome {
        var o = BackupOutcome(
            destinationPasscode: passcode, restored: [], skippedOtherDevice: 0, skippedUserPresence: 0)
        for item in g.items where item.protection != .whenPasscodeSetThisDeviceOnly {
            if !sameDevice && item.protection.isThisDeviceOnly {
                o.skippedOtherDevice += 1
            } else if item.flags & ItemPutPayload.userPresenceFlag != 0 && !passcode {
                o.skippedUserPresence += 1
            } else {
                o.restored.append(clamped(item))
            }
        }
        return o
    }

    static func all() throws -> [BackupFixture] {
        let g = try golden("golden_password", password: password)
        let d = try golden("golden_device_only", password: nil)
        var out: [BackupFixture] = []
        func fixture(
            _ name: String, _ expect: Expectation, _ description: String, defect: String? = nil,
            archive: [UInt8], password pw: String? = password, from base: Golden? = nil
        ) -> BackupFixture {
            let b = base ?? g
            return BackupFixture(
                name: name, expect: expect, description: description, defect: defect, archive: archive,
                password: pw, sourceDevice: b.source, otherDevice: b.other,
                notExported: b.items.filter { $0.protection == .whenPasscodeSetThisDeviceOnly }.count)
        }

        var passwordGolden = fixture(
            "golden_password", .success,
            "a password backup of 9 items (a genp item in each protection class, an inet item, a key); akpu is not exported; its 8 records are split 3, 3 and 2 over three items entries, a split Latchkey itself would not choose (it fills entries up to 1,024 records or 4 MiB), to show that any split is valid (spec/BACKUP.md §7)",
            archive: tar(g.entries))
        passwordGolden.restoresLike(g)
        out.append(passwordGolden)

        var deviceOnly = fixture(
            "golden_device_only", .success,
            "the same items backed up with --no-password: every class wrapped by the source device; the other device must refuse it (authentication-error)",
            archive: tar(d.entries), password: nil, from: d)
        deviceOnly.restoresLike(d, otherDeviceRefuses: true)
        out.append(deviceOnly)

        let u = try BackupFixtureCatalog.golden("golden_user_presence", password: password, items: userPresenceItems)
        var presence = fixture(
            "golden_user_presence", .success,
            "a password backup of an ak and a dku item that need user presence (item flag bit 0) and a ck item that does not, whose mdat is not a whole second; restored into a keychain without a passcode the flagged items are skipped (userPresenceNeedsPasscode, spec/BACKUP.md §9.2 step 2), into one with a passcode they are restored with their flag; on the other device the dku item is skipped first as ThisDeviceOnly (step 1 comes before step 2)",
            archive: tar(u.entries), from: u)
        presence.restoresLike(u)
        out.append(presence)

        let f = try BackupFixtureCatalog.golden("golden_future_dated", password: password, items: futureDatedItems)
        var future = fixture(
            "golden_future_dated", .success,
            "operation: restore into a new keychain (and, in the conformance suite, --merge); expect: success. A password backup made 2025-01-02T00:00:00Z holding an ak item whose cdat and mdat are 2100-01-01T00:00:00Z (3155760000 seconds since 2001-01-01) and a ck item dated before the backup. The date ceiling is the end of the creation second in the items' own scale, 1735776000 + 1 - 978307200 = 757468801 seconds since 2001-01-01 (spec/BACKUP.md §9.2): the future-dated item is restored with cdat = mdat = 757468801 (expected-*.json), and in a merge it loses to a keychain item modified after 2025-01-02T00:00:01Z (a comparison with the Unix value 1735776001 would never clamp)",
            archive: tar(f.entries), from: f)
        future.restoresLike(f)
        out.append(future)

        // A newer minor version: extension bytes in the keybag and the manifest and an
        // ancillary entry, which a 1.0 reader skips (spec/BACKUP.md §10).
        var keybag = try BackupKeybag.decode(g.entries[0].bytes)
        keybag.common.minor = 1
        keybag.extensionBytes = Array("future keybag field".utf8)
        var newer = [(BackupConstants.keybagName, keybag.encode())] + Array(g.entries.dropFirst().dropLast())
        newer.append(
            (
                BackupConstants.ancillaryPrefix + "note",
                Array("An ancillary entry of format 1.1: a 1.0 reader checks and skips it.\n".utf8)
            ))
        newer = try resealed(g, entries: newer) { m in
            m.common.minor = 1
            m.extensionBytes = Array("future manifest field".utf8)
        }
        var newerMinor = fixture(
            "golden_newer_minor", .success,
            "golden_password as a format 1.1 writer might make it: minor version 1, extension bytes in the keybag and the manifest, an ancillary entry latchkey-backup/x-note; a 1.0 reader restores what it understands",
            archive: tar(newer))
        newerMinor.restoresLike(g)
        out.append(newerMinor)

        var badName = newer
        let ancillary = badName.firstIndex { $0.name.hasPrefix(BackupConstants.ancillaryPrefix) }!
        badName[ancillary].name = BackupConstants.ancillaryPrefix + "Note.txt"
        badName = try resealed(g, entries: Array(badName.dropLast())) { m in
            m.common.minor = 1
            m.extensionBytes = Array("future manifest field".utf8)
        }
        out.append(
            fixture(
                "entry_ancillary_name_invalid", .integrityError,
                "golden_newer_minor whose ancillary entry is named latchkey-backup/x-Note.txt: an ancillary name is latchkey-backup/x- followed by lower-case letters, digits and hyphens only (spec/BACKUP.md §10), so even a reader of an older minor refuses it as an unknown entry",
                defect:
                    "the entry latchkey-backup/x-note renamed latchkey-backup/x-Note.txt (manifest resealed to match)",
                archive: tar(badName)))

        // Record padding: tar writers pad the stream with zero blocks to a record (10 240 bytes by
        // default); any number of zero blocks may follow the end-of-archive marker (§2.1).
        var padded = TarBuilder(mtime: createdAt)
        for e in g.entries { padded.add(e.name, e.bytes) }
        padded.end(zeroBlocks: 2 + (20 - (padded.count / 512 + 2) % 20) % 20)
        var recordPadded = fixture(
            "golden_record_padded", .success,
            "golden_password's entries padded with zero blocks to a whole 10,240-byte tar record, as tar and bsdtar write by default; zero blocks after the end-of-archive marker are part of it (spec/BACKUP.md §2.1)",
            archive: padded.bytes)
        recordPadded.restoresLike(g)
        out.append(recordPadded)

        // Compressed as a whole: one gzip member, one zstd frame (stored, not compressed, so the
        // bytes depend on no compression library).
        var gz = fixture(
            "golden_gzip", .success,
            "golden_password's archive as one gzip member (RFC 1952; deflate stored blocks), which a reader detects by its first bytes 1F 8B",
            archive: StoredCompression.gzip(tar(g.entries)))
        gz.restoresLike(g)
        out.append(gz)
        var zst = fixture(
            "golden_zstd", .success,
            "golden_password's archive as one zstd frame (RFC 8878; raw blocks), which a reader detects by its first bytes 28 B5 2F FD",
            archive: StoredCompression.zstd(tar(g.entries)))
        zst.restoresLike(g)
        out.append(zst)
        // pzstd puts a skippable frame first: magic 0x184D2A50, its 4-byte size, then the size
        // of the frame that follows (RFC 8878 §3.1.2); detection and decoding skip it (§2.2).
        let frame = StoredCompression.zstd(tar(g.entries))
        let skippable =
            StoredCompression.le32(0x184D_2A50) + StoredCompression.le32(4)
            + StoredCompression.le32(UInt32(frame.count))
        var skipped = fixture(
            "zstd_skippable_frame", .success,
            "operation: restore; expect: success, the same items as golden_zstd. golden_zstd behind a 12-byte skippable frame (magic 50 2A 4D 18, size 4, the size of the frame that follows), as pzstd writes one: a stream whose first four bytes are a skippable frame magic (0x184D2A50-0x184D2A5F) is zstd, and skippable frames are skipped whole (spec/BACKUP.md §2.2)",
            archive: skippable + frame)
        skipped.restoresLike(g)
        out.append(skipped)

        out += try negatives(g, fixture)
        out += try tarSubset(g, fixture)
        return out.sorted { $0.name < $1.name }
    }

    static func negatives(
        _ g: Golden, _ fixture: (String, Expectation, String, String?, [UInt8], String?, Golden?) -> BackupFixture
    ) throws -> [BackupFixture] {
        var out: [BackupFixture] = []
        func add(
            _ name: String, _ expect: Expectation, _ description: String, _ defect: String, _ archive: [UInt8],
            password: String? = password
        ) {
            out.append(fixture(name, expect, description, defect, archive, password, nil))
        }
        let entries = g.entries
        let plain = tar(entries)

        add(
            "backup_wrong_password", .authenticationError, "golden_password with a wrong password in password.txt",
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
            add(
                "entry_flipped_byte_\(short)", .integrityError, "golden_password with one bit flipped in \(e.name)",
                defect, bad)
            at = dataStart + (e.bytes.count + 511) / 512 * 512
        }

        // Truncated in the middle of the second items entry.
        let cut =
            512 + (entries[0].bytes.count + 511) / 512 * 512 + 512 + (entries[1].bytes.count + 511) / 512 * 512 + 512
            + 100
        add(
            "archive_truncated", .integrityError, "golden_password cut short inside latchkey-backup/items-000002",
            "the archive ends at byte \(cut) of \(plain.count)", Array(plain.prefix(cut)))

        // Unknown major version (the keybag's checksum recomputed so only the version is wrong).
        var keybag = try BackupKeybag.decode(entries[0].bytes)
        keybag.common.major = 2
        add(
            "keybag_unknown_major", .unsupportedVersion, "golden_password with major version 2 in its keybag entry",
            "keybag entry bytes 8–9 set to 00 02 (checksum recomputed)",
            tar([(entries[0].name, keybag.encode())] + entries.dropFirst()))

        // Identification (spec/BACKUP.md §2.1): not a Latchkey backup at all.
        let text = Array(String(repeating: "This file is a note, not a Latchkey backup.\n", count: 40).utf8)
        add(
            "archive_not_tar", .notALatchkeyFile,
            "a text file given as a backup: its first block is not a ustar header, so it is not a Latchkey backup (spec/BACKUP.md §2.1), which is not damage",
            "the file is \(text.count) bytes of text", text)
        var badMagic = entries
        let magicDefect = flip(&badMagic[0].bytes, at: 3, what: "keybag entry magic, 4th byte")
        add(
            "keybag_bad_magic", .notALatchkeyFile,
            "golden_password whose keybag entry does not begin with the magic LKBACKUP: not a Latchkey backup (spec/BACKUP.md §2.1, §3.3), reported before anything else in the entry is read",
            "in latchkey-backup/keybag, " + magicDefect, tar(badMagic))
        add(
            "entry_first_not_keybag", .notALatchkeyFile,
            "golden_password without its keybag entry, so that latchkey-backup/items-000001 comes first: a backup is identified by its first entry, latchkey-backup/keybag (spec/BACKUP.md §2.1)",
            "the entry latchkey-backup/keybag removed", tar(Array(entries.dropFirst())))

        // Short inputs: shorter than a fixed part (§2.1 (a), §3.3, §5.4, §6.4).
        add(
            "archive_short", .notALatchkeyFile,
            "operation: restore; expect: not-a-latchkey-file. The first 300 bytes of golden_password: a stream of 1 to 511 bytes has no complete first block, hence no ustar header to identify it by (spec/BACKUP.md §2.1 (a))",
            "the archive is cut to its first 300 bytes", Array(plain.prefix(300)))
        add(
            "keybag_short_version", .integrityError,
            "operation: restore; expect: integrity-error. golden_password whose keybag entry is only its magic and the major version 00 02 (10 bytes): an entry of 8 to 11 bytes lacks a complete version field, so it is a damaged backup, not an unsupported version (spec/BACKUP.md §3.3 rule 2)",
            "latchkey-backup/keybag is the 10 bytes \"LKBACKUP\" 00 02",
            tar([(entries[0].name, Array(entries[0].bytes.prefix(8)) + [0, 2])] + entries.dropFirst()))
        add(
            "keybag_short_unknown_major", .unsupportedVersion,
            "operation: restore; expect: unsupported-version. golden_password whose keybag entry is only its magic and the versions 2.0 (12 bytes): once both version fields are there, a major version other than 1 is an unsupported version whatever the entry's length (spec/BACKUP.md §3.3 rule 2)",
            "latchkey-backup/keybag is the 12 bytes \"LKBACKUP\" 00 02 00 00",
            tar([(entries[0].name, Array(entries[0].bytes.prefix(8)) + [0, 2, 0, 0])] + entries.dropFirst()))
        add(
            "items_entry_short", .integrityError,
            "operation: restore; expect: integrity-error. golden_password whose latchkey-backup/items-000001 is cut to its first 12 bytes, shorter than the 16 fixed bytes of an items entry (spec/BACKUP.md §5.4 rule 1)",
            "latchkey-backup/items-000001 cut to 12 bytes (its tar size says so; the manifest does not)",
            tar([entries[0], (entries[1].name, Array(entries[1].bytes.prefix(12)))] + entries.dropFirst(2)))
        add(
            "manifest_short", .integrityError,
            "operation: restore; expect: integrity-error. golden_password whose manifest is cut to 207 bytes, one short of the 208 of its fixed part (176) and MAC (32): nothing shorter has a MAC to check (spec/BACKUP.md §6.4 rule 1)",
            "latchkey-backup/manifest cut to its first 207 bytes",
            tar(Array(entries.dropLast()) + [(entries.last!.name, Array(entries.last!.bytes.prefix(207)))]))

        // The manifest's version fields only repeat the keybag entry's (§6.4, §10).
        add(
            "manifest_major_differs", .integrityError,
            "golden_password whose manifest claims major version 2 while its keybag entry says 1, under a valid manifest MAC: the backup's version is the keybag entry's, and a manifest that disagrees with it in bytes [8..104) is damage, not a newer version (spec/BACKUP.md §6.4)",
            "manifest bytes 8–9 (major version) set to 00 02; MAC recomputed",
            tar(try resealed(g, entries: Array(entries.dropLast())) { m in m.common.major = 2 }))

        add(
            "entry_missing", .integrityError, "golden_password without latchkey-backup/items-000002",
            "the entry latchkey-backup/items-000002 removed",
            tar(entries.enumerated().filter { $0.offset != 2 }.map(\.element)))

        var extra = Array(entries.dropLast())
        extra.append((BackupConstants.directory + "README.txt", Array("not part of any backup\n".utf8)))
        extra.append(entries.last!)
        add(
            "entry_extra", .integrityError, "golden_password with an extra regular file before the manifest",
            "an entry latchkey-backup/README.txt (23 bytes) added before the manifest", tar(extra))

        func withEntry(
            _ name: String, _ data: [UInt8], kind: TarBuilder.Kind, link: String = "", declaredSize: UInt64? = nil,
            replacing index: Int? = nil
        ) -> [UInt8] {
            var t = TarBuilder(mtime: createdAt)
            for (i, e) in entries.enumerated() {
                if i == index {
                    t.add(name, data, kind: kind, linkTarget: link, declaredSize: declaredSize)
                    continue
                }
                if index == nil, i == entries.count - 1 {
                    t.add(name, data, kind: kind, linkTarget: link, declaredSize: declaredSize)
                }
                t.add(e.name, e.bytes)
            }
            t.end()
            return t.bytes
        }
        add(
            "entry_path_dotdot", .integrityError, "golden_password with an entry whose name climbs out of the archive",
            "an entry latchkey-backup/../../etc/latchkey-evil added before the manifest",
            withEntry(BackupConstants.directory + "../../etc/latchkey-evil", Array("x".utf8), kind: .regular))
        add(
            "entry_path_absolute", .integrityError, "golden_password with an entry named by an absolute path",
            "an entry /etc/latchkey-evil added before the manifest",
            withEntry("/etc/latchkey-evil", Array("x".utf8), kind: .regular))
        add(
            "entry_symlink", .integrityError, "golden_password whose second items entry is a symbolic link",
            "latchkey-backup/items-000002 replaced by a symbolic link to /etc/passwd",
            withEntry(entries[2].name, [], kind: .symlink, link: "/etc/passwd", replacing: 2))
        add(
            "entry_device", .integrityError, "golden_password with a character device entry",
            "a character device latchkey-backup/null (1, 3) added before the manifest",
            withEntry(BackupConstants.directory + "null", [], kind: .characterDevice))
        add(
            "entry_oversized", .integrityError,
            "golden_password whose second items entry claims 1 GiB: a reader must refuse it before reading or allocating that much",
            "latchkey-backup/items-000002's tar header claims 1073741824 bytes (the manifest says \(entries[2].bytes.count)); the archive ends after its real bytes",
            Array(
                withEntry(entries[2].name, entries[2].bytes, kind: .regular, declaredSize: 1 << 30, replacing: 2)
                    .dropLast(1024)))
        var longer = entries
        longer[2].bytes += [UInt8](repeating: 0, count: 4096)
        add(
            "entry_larger_than_manifest", .integrityError,
            "golden_password whose second items entry has 4096 bytes more than the manifest says",
            "4096 zero bytes appended to latchkey-backup/items-000002 (its tar size says so; the manifest does not)",
            tar(longer))
        return out
    }

    /// The tar subset (spec/BACKUP.md §2.1): each fixture is golden_password's archive with one
    /// departure from it, most of which libarchive alone would accept.
    static func tarSubset(
        _ g: Golden, _ fixture: (String, Expectation, String, String?, [UInt8], String?, Golden?) -> BackupFixture
    ) throws -> [BackupFixture] {
        var out: [BackupFixture] = []
        func add(
            _ name: String, _ description: String, _ defect: String, _ archive: [UInt8],
            expect: Expectation = .integrityError
        ) {
            out.append(fixture(name, expect, description, defect, archive, password, nil))
        }
        let entries = g.entries
        let target = 2  // latchkey-backup/items-000002
        /// golden_password's tar, with `before` run before entry `target` and `quirks` on its header.
        func archive(
            quirks: TarBuilder.Quirks = TarBuilder.Quirks(), kind: TarBuilder.Kind = .regular, name: String? = nil,
            link: String = "", before: ((inout TarBuilder) -> Void)? = nil, zeroBlocks: Int = 2
        ) -> [UInt8] {
            var t = TarBuilder(mtime: createdAt)
            for (i, e) in entries.enumerated() {
                if i == target {
                    before?(&t)
                    t.add(name ?? e.name, e.bytes, kind: kind, linkTarget: link, quirks: quirks)
                } else {
                    t.add(e.name, e.bytes)
                }
            }
            t.end(zeroBlocks: zeroBlocks)
            return t.bytes
        }
        let itemsName = entries[target].name
        let plain = tar(entries)

        add(
            "tar_pax_header",
            "golden_password in which \(itemsName) is named by a pax extended header (type x, path=\(itemsName)) in front of a ustar header named latchkey-backup/pax-renamed: a pax reader would see a valid backup, a ustar reader an unknown entry, so a backup holds no extension headers at all (spec/BACKUP.md §2.1)",
            "a type x header (records: path=\(itemsName)) before the header of \(itemsName), whose name field says latchkey-backup/pax-renamed",
            archive(name: "latchkey-backup/pax-renamed") { t in
                t.add(
                    "latchkey-backup/PaxHeaders/items", TarBuilder.paxRecords([("path", itemsName)]), kind: .paxExtended
                )
            })
        var global = TarBuilder(mtime: createdAt)
        global.add(
            "pax_global_header", TarBuilder.paxRecords([("comment", "made by a repacking tool")]), kind: .paxGlobal)
        for e in entries { global.add(e.name, e.bytes) }
        global.end()
        add(
            "tar_pax_global_header",
            "golden_password behind a pax global header (type g, as git archive writes one): a backup holds no extension headers (spec/BACKUP.md §2.1); the first block is a ustar header, so this is damage, not a foreign file",
            "a type g header (records: comment=made by a repacking tool) before latchkey-backup/keybag", global.bytes)
        add(
            "tar_gnu_longname_header",
            "golden_password in which \(itemsName) is named by a GNU long-name header (type L) in front of a ustar header named latchkey-backup/gnu-renamed: libarchive applies it, a strict ustar reader does not (spec/BACKUP.md §2.1)",
            "a type L header (data: \(itemsName) and a NUL) before the header of \(itemsName), whose name field says latchkey-backup/gnu-renamed",
            archive(name: "latchkey-backup/gnu-renamed") { t in
                t.add("././@LongLink", Array(itemsName.utf8) + [0], kind: .gnuLongName)
            })
        add(
            "tar_gnu_longlink_header",
            "golden_password with a GNU long-link header (type K) in front of \(itemsName): a backup holds no extension headers (spec/BACKUP.md §2.1)",
            "a type K header (data: /etc/passwd and a NUL) before the header of \(itemsName)",
            archive { t in t.add("././@LongLink", Array("/etc/passwd".utf8) + [0], kind: .gnuLongLink) })
        add(
            "tar_header_prefix_used",
            "golden_password whose \(itemsName) header splits its name over the ustar prefix field (latchkey-backup) and the name field (items-000002): a backup's names fit the name field alone, and the prefix field is empty (spec/BACKUP.md §2.1)",
            "the header of \(itemsName) has prefix \"latchkey-backup\" and name \"items-000002\"",
            archive(quirks: TarBuilder.Quirks(prefix: "latchkey-backup"), name: "items-000002"))
        add(
            "tar_header_size_base256",
            "golden_password whose \(itemsName) header gives its size in GNU base-256 form (first byte 0x80) instead of octal digits: sizes are octal (spec/BACKUP.md §2.1)",
            "size field of the header of \(itemsName) is "
                + ([0x80]
                + (0..<11).reversed().map { UInt8(truncatingIfNeeded: entries[target].bytes.count >> (8 * $0)) }).map {
                    hexString([$0])
                }.joined(separator: " "),
            archive(quirks: TarBuilder.Quirks(base256Size: true)))
        add(
            "tar_header_gnu_magic",
            "golden_password whose \(itemsName) header carries the GNU magic \"ustar  \" instead of POSIX \"ustar\" version \"00\": every header is a POSIX ustar header (spec/BACKUP.md §2.1)",
            "bytes 257–264 of the header of \(itemsName) are 75 73 74 61 72 20 20 00",
            archive(quirks: TarBuilder.Quirks(gnuMagic: true)))
        add(
            "tar_entry_contiguous",
            "golden_password whose \(itemsName) has type flag 7 (a contiguous file, which libarchive reads as a regular one): every entry is type 0 (spec/BACKUP.md §2.1)",
            "type flag of the header of \(itemsName) is 7", archive(kind: .contiguous))

        var badSum = plain
        let headerAt =
            512 + (entries[0].bytes.count + 511) / 512 * 512 + 512 + (entries[1].bytes.count + 511) / 512 * 512
        let sumDefect = flip(
            &badSum, at: headerAt + 136 + 10,
            what: "last digit of the mtime field of the header of \(itemsName); checksum left as it was")
        add(
            "tar_header_checksum_mismatch",
            "golden_password with one bit flipped in a field of the \(itemsName) header that no reader uses (its mtime): only the header checksum catches it, and a damaged header is damage (spec/BACKUP.md §2.1)",
            sumDefect, badSum)

        var noEnd = TarBuilder(mtime: createdAt)
        for e in entries { noEnd.add(e.name, e.bytes) }
        add(
            "tar_end_marker_missing",
            "golden_password without its end-of-archive marker: the stream stops after the manifest's last block; a tar stream ends with two zero blocks (spec/BACKUP.md §2.1)",
            "the two zero blocks after the manifest removed", noEnd.bytes)
        var oneBlock = noEnd
        oneBlock.end(zeroBlocks: 1)
        add(
            "tar_end_marker_one_block",
            "golden_password that ends with one zero block instead of the two of the end-of-archive marker (spec/BACKUP.md §2.1)",
            "one of the two zero blocks after the manifest removed", oneBlock.bytes)
        var after = TarBuilder(mtime: createdAt)
        for e in entries { after.add(e.name, e.bytes) }
        after.end()
        var junk = Array("bytes after the end of the archive, which nothing authenticates\n".utf8)
        junk += [UInt8](repeating: 0, count: 512 - junk.count)
        after.append(junk)
        add(
            "tar_bytes_after_end_marker",
            "golden_password followed, after its end-of-archive marker, by a block that is not zero: only zero blocks may follow the marker (spec/BACKUP.md §2.1)",
            "a 512-byte block beginning with text appended after the two zero blocks", after.bytes)
        var partial = TarBuilder(mtime: createdAt)
        for e in entries { partial.add(e.name, e.bytes) }
        partial.end()
        partial.append([UInt8](repeating: 0, count: 100))
        add(
            "tar_end_not_block_aligned",
            "golden_password followed by 100 zero bytes after its end-of-archive marker: a tar stream is whole 512-byte blocks (spec/BACKUP.md §2.1)",
            "100 zero bytes appended after the two zero blocks", partial.bytes)
        // Fields no reader needs hold fixed values (§2.1 rule 6): nothing outside the
        // manifest's hashes may carry anything.
        add(
            "tar_header_mode",
            "operation: restore; expect: integrity-error. golden_password whose \(itemsName) header gives the mode 4755 (set-user-ID, executable) instead of 0600: every header holds mode 0600, owner and group 0, no names but the entry's own, the backup's creation time (spec/BACKUP.md §2.1 rule 6)",
            "mode field of the header of \(itemsName) is 0004755 (checksum recomputed)",
            archive(quirks: TarBuilder.Quirks(mode: 0o4755)))
        add(
            "tar_header_mtime",
            "operation: restore; expect: integrity-error. golden_password whose \(itemsName) header gives a modification time one hour after the backup's creation time: every header's mtime is the creation time of the keybag entry (offset 64), which the manifest authenticates (spec/BACKUP.md §2.1 rule 6)",
            "mtime field of the header of \(itemsName) is \(createdAt + 3600) (the keybag says \(createdAt); checksum recomputed)",
            archive(quirks: TarBuilder.Quirks(mtime: createdAt + 3600)))
        add(
            "tar_header_linkname",
            "operation: restore; expect: integrity-error. golden_password whose \(itemsName) header, a regular file, carries a link name (/etc/passwd) that tar readers ignore for type 0: the link name field is all NUL (spec/BACKUP.md §2.1 rule 6)",
            "link name field (bytes 157–256) of the header of \(itemsName) is \"/etc/passwd\" (checksum recomputed)",
            archive(link: "/etc/passwd"))
        add(
            "tar_header_name_padding",
            "operation: restore; expect: integrity-error. golden_password whose \(itemsName) header hides text after the NUL that ends the name: every byte of the name field after the name is NUL (spec/BACKUP.md §2.1 rule 6)",
            "name field of the header of \(itemsName) is \"\(itemsName)\", a NUL, then \"hidden\" (checksum recomputed)",
            archive(quirks: TarBuilder.Quirks(afterName: Array("hidden".utf8))))
        add(
            "tar_header_owner_name",
            "operation: restore; expect: integrity-error. golden_password whose \(itemsName) header names the owner root: the user and group name fields are all NUL (spec/BACKUP.md §2.1 rule 6)",
            "user name field (bytes 265–296) of the header of \(itemsName) is \"root\" (checksum recomputed)",
            archive(quirks: TarBuilder.Quirks(userName: "root")))

        var pad = TarBuilder(mtime: createdAt)
        for (i, e) in entries.enumerated() {
            pad.add(e.name, e.bytes, quirks: TarBuilder.Quirks(paddingByte: i == entries.count - 1 ? 0x41 : 0))
        }
        pad.end()
        let manifestPad = (512 - entries.last!.bytes.count % 512) % 512
        add(
            "tar_padding_not_zero",
            "golden_password whose manifest entry is padded to its 512-byte block with the letter A instead of zero bytes: bytes outside every entry must be zero, so that nothing unauthenticated rides along (spec/BACKUP.md §2.1)",
            "the \(manifestPad) padding bytes after the manifest's data are 0x41", pad.bytes)

        let gz = StoredCompression.gzip(plain)
        let zst = StoredCompression.zstd(plain)
        let trailing = Array("GARBAGE\n".utf8)
        add(
            "gzip_trailing_bytes",
            "golden_gzip followed by 8 bytes that are not a gzip member: nothing may follow the last member (spec/BACKUP.md §2.1), which libarchive alone would ignore",
            "\"GARBAGE\\n\" appended at byte \(gz.count)", gz + trailing)
        add(
            "gzip_trailing_zeros",
            "golden_gzip padded with 512 zero bytes after its member, as a writer that pads its output to a block would: nothing may follow the last member (spec/BACKUP.md §2.1)",
            "512 zero bytes appended at byte \(gz.count)", gz + [UInt8](repeating: 0, count: 512))
        add(
            "zstd_trailing_bytes",
            "golden_zstd followed by 8 bytes that are not a zstd frame: nothing may follow the last frame (spec/BACKUP.md §2.1)",
            "\"GARBAGE\\n\" appended at byte \(zst.count)", zst + trailing)
        return out
    }
}
