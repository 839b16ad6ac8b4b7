import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// One directory of fixtures/backup/, as written by tools/FixtureGenerator.
struct BackupFixture: Sendable, CustomStringConvertible {
    static let root = packageRoot.appendingPathComponent("fixtures/backup")

    static let all: [BackupFixture] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.sorted().compactMap { name in
            let dir = root.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: dir.appendingPathComponent("FIXTURE.txt").path) else {
                return nil
            }
            return BackupFixture(name: name, directory: dir)
        }
    }()

    let name: String
    let directory: URL
    var description: String { name }

    func header() throws -> [String: String] {
        try fixtureHeader(in: directory)
    }

    func password() throws -> [UInt8]? {
        let url = directory.appendingPathComponent("password.txt")
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return [UInt8](try Data(contentsOf: url))
    }

    /// A writable copy with the device secrets at mode 0600 (git does not keep modes).
    func workspace() throws -> URL {
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("latchkey-backup-conformance-\(UUID().uuidString)")
        try fm.copyItem(at: directory, to: dir)
        for secret in ["source-device.secret", "other-device.secret"] {
            try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: dir.appendingPathComponent(secret).path)
        }
        return dir
    }

    /// One expected-*.json: the device and destination of the restore, the items it restores,
    /// and the records it skips, by reason (spec/BACKUP.md §9.2).
    struct Expected {
        var device: String
        var destinationPasscode: Bool
        var items: [ExpectedItem]
        var skipped: [String: Int]
        var notExported: Int
    }

    func expected(_ file: String) throws -> Expected {
        let data = try Data(contentsOf: directory.appendingPathComponent(file))
        guard let top = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let device = top["device"] as? String,
            let passcode = top["destinationPasscode"] as? Bool,
            let items = top["restored"] as? [[String: Any]],
            let skipped = top["skipped"] as? [String: NSNumber],
            let notExported = top["notExported"] as? NSNumber
        else {
            throw FixtureProblem("\(name): \(file) lacks device, destinationPasscode, restored, skipped or notExported")
        }
        return Expected(
            device: device, destinationPasscode: passcode, items: try items.map { try ExpectedItem($0, fixture: name) },
            skipped: skipped.mapValues(\.intValue), notExported: notExported.intValue)
    }
}

/// Every fixture of fixtures/backup/ through LatchkeyBackup: restored on the source device and
/// on another one, or refused as its FIXTURE.txt says, with the destination keychain byte for
/// byte unchanged after every refusal.
@Suite struct BackupFixtureTests {
    static let required = [
        "golden_password", "golden_device_only", "golden_newer_minor", "backup_wrong_password",
        "entry_flipped_byte_keybag", "entry_flipped_byte_items1", "entry_flipped_byte_items2",
        "entry_flipped_byte_items3", "entry_flipped_byte_manifest", "archive_truncated", "keybag_unknown_major",
        "entry_missing", "entry_extra", "entry_path_dotdot", "entry_path_absolute", "entry_symlink", "entry_device",
        "entry_oversized", "entry_larger_than_manifest",
        // Identification and versions (spec/FORMAT.md §1.4, spec/BACKUP.md §2.1, §6.4)
        "archive_not_tar", "keybag_bad_magic", "entry_first_not_keybag", "manifest_major_differs",
        "entry_ancillary_name_invalid",
        // User presence and the destination's passcode (§9.2)
        "golden_user_presence",
        // The tar subset (§2.1)
        "tar_pax_header", "tar_pax_global_header", "tar_gnu_longname_header", "tar_gnu_longlink_header",
        "tar_header_prefix_used", "tar_header_size_base256", "tar_header_gnu_magic", "tar_entry_contiguous",
        "tar_header_checksum_mismatch", "tar_end_marker_missing", "tar_end_marker_one_block",
        "tar_bytes_after_end_marker",
        "tar_end_not_block_aligned", "tar_padding_not_zero", "golden_record_padded",
        "golden_gzip", "golden_zstd", "gzip_trailing_bytes", "gzip_trailing_zeros", "zstd_trailing_bytes",
        // Fixed header fields (§2.1 rule 6), a leading skippable zstd frame (§2.2)
        "tar_header_mode", "tar_header_mtime", "tar_header_linkname", "tar_header_name_padding",
        "tar_header_owner_name",
        "zstd_skippable_frame",
        // Short inputs (§2.1 (a), §3.3, §5.4, §6.4) and the date ceiling (§9.2)
        "archive_short", "keybag_short_version", "keybag_short_unknown_major", "items_entry_short", "manifest_short",
        "golden_future_dated"
    ]

    @Test func fixtureDirectory_holdsEveryRequiredFixture() {
        let found = Set(BackupFixture.all.map(\.name))
        for name in Self.required {
            #expect(found.contains(name), "fixtures/backup/\(name) is missing; run 'make fixtures'")
        }
    }

    @Test(arguments: BackupFixture.all)
    func fixture_hasTheOutcomeItsHeaderNames(_ fixture: BackupFixture) throws {
        let dir = try fixture.workspace()
        defer { try? FileManager.default.removeItem(at: dir) }
        let header = try fixture.header()
        let expect = header["expect"] ?? ""
        if expect == "success" {
            #expect(
                header["same-device"] != nil && header["other-device"] != nil,
                "FIXTURE.txt lacks same-device or other-device")
            for (key, device) in [
                ("same-device", "source-device.secret"), ("other-device", "other-device.secret"),
                ("same-device-passcode", "source-device.secret"), ("other-device-passcode", "other-device.secret")
            ] {
                guard let expected = header[key] else { continue }
                try checkRestore(fixture, dir, device: device, expected: expected, passcode: key.hasSuffix("-passcode"))
            }
            return
        }
        let status: KeychainStatus = expect == "authentication-error" ? .authFailed : .decode
        #expect(
            ["not-a-latchkey-file", "unsupported-version", "integrity-error", "authentication-error"].contains(expect),
            "unknown expect '\(expect)'")
        let source = dir.appendingPathComponent("source-device.secret").path

        // Into a new keychain: refused, and nothing created.
        let fresh = dir.appendingPathComponent("fresh.keychain").path
        let e1 = refusal { _ = try restore(fixture, dir, device: source, into: .newKeychain(path: fresh)) }
        #expect(e1?.status == status, "\(fixture.name): \(String(describing: e1))")
        #expect(!FileManager.default.fileExists(atPath: fresh))

        // Into an existing keychain (--merge): refused, and the keychain byte for byte unchanged.
        let existing = dir.appendingPathComponent("existing.keychain").path
        let kc = try Keychain.create(path: existing, devicePath: source, passcode: nil, kdfLogN: 10)
        try kc.add(.genericPassword, attributes: ["acct": .string("user-ak")], data: Array("already here".utf8))
        let before = try Data(contentsOf: URL(fileURLWithPath: existing))
        let e2 = refusal { _ = try restore(fixture, dir, device: source, into: .existing(kc)) }
        #expect(e2?.status == status, "\(fixture.name): \(String(describing: e2))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: existing)) == before, "\(fixture.name): the keychain changed")
        for e in [e1, e2].compactMap({ $0 }) {
            #expect(
                e.message.contains("upgrade Latchkey") == (expect == "unsupported-version"), "\(fixture.name): \(e)")
            #expect(e.message.contains("not a Latchkey") == (expect == "not-a-latchkey-file"), "\(fixture.name): \(e)")
        }
    }

    enum Into {
        case newKeychain(path: String)
        case existing(Keychain)
    }

    /// The passcode of a destination keychain that has one.
    static let destinationPasscode = Array("destination passcode".utf8)

    func restore(_ fixture: BackupFixture, _ dir: URL, device: String, into: Into, passcode: Bool = false) throws
        -> RestoreReport
    {
        let source = try BackupSource.file(dir.appendingPathComponent("backup.tar").path)
        let password = try fixture.password()
        switch into {
        case .newKeychain(let path):
            let verified = try VerifiedBackup.verify(
                source, device: try Device.load(path: device), password: { password },
                target: .newKeychain(hasPasscode: passcode))
            return try verified.restoreNewKeychain(
                path: path, devicePath: device, passcode: passcode ? Self.destinationPasscode : nil,
                kdfLogN: 10)
        case .existing(let kc):
            return try VerifiedBackup.verify(source, device: nil, password: { password }, target: .existing(kc))
                .restore()
        }
    }

    func refusal(_ body: () throws -> Void) -> KeychainError? {
        do {
            try body()
            Issue.record("the restore succeeded")
            return nil
        } catch let e as KeychainError {
            return e
        } catch {
            Issue.record("not a KeychainError: \(error)")
            return nil
        }
    }

    /// Restores with `device` into a new keychain (with a passcode when `passcode`) and
    /// compares with the expected JSON, or expects an authentication error.
    func checkRestore(_ fixture: BackupFixture, _ dir: URL, device: String, expected: String, passcode: Bool) throws {
        let devicePath = dir.appendingPathComponent(device).path
        let path = dir.appendingPathComponent("restored-\(device)\(passcode ? "-passcode" : "").keychain").path
        if expected == "authentication-error" {
            let e = refusal {
                _ = try restore(fixture, dir, device: devicePath, into: .newKeychain(path: path), passcode: passcode)
            }
            #expect(e?.status == .authFailed, "\(fixture.name) on \(device): \(String(describing: e))")
            #expect(!FileManager.default.fileExists(atPath: path))
            return
        }
        let want = try fixture.expected(expected)
        #expect(
            want.device == device && want.destinationPasscode == passcode,
            "\(fixture.name): \(expected) describes another restore")
        let report = try restore(fixture, dir, device: devicePath, into: .newKeychain(path: path), passcode: passcode)
        #expect(report.restored == want.items.count, "\(fixture.name) on \(device)")
        #expect(report.skipped == want.skipped.values.reduce(0, +), "\(fixture.name) on \(device)")
        for reason in [RestoreSkipReason.thisDeviceOnlyFromAnotherDevice, .userPresenceNeedsPasscode] {
            #expect(
                report.skippedByReason[reason.rawValue, default: 0] == want.skipped[reason.rawValue, default: -1],
                "\(fixture.name) on \(device): skipped for \(reason.rawValue)")
        }
        #expect(report.backup.notExported == want.notExported)
        let kc = try Keychain.open(path: path, devicePath: devicePath)
        if passcode { try kc.unlock(passcode: Self.destinationPasscode) }
        kc.authenticationHandler = { _ in Self.destinationPasscode }
        var got: [String: Item] = [:]
        for c in ItemClass.allCases {
            for item in try kc.find(Query(c, synchronizable: .any)) { got[hexString(item.persistentRef)] = item }
        }
        #expect(got.count == want.items.count, "\(fixture.name) on \(device)")
        for w in want.items {
            guard let item = got[w.reference] else {
                Issue.record("\(fixture.name) on \(device): item \(hexString(w.uuid)) was not restored")
                continue
            }
            var attrs = item.attributes
            attrs["pdmn"] = nil
            #expect(attrs == w.attributes, "\(fixture.name): item \(hexString(w.uuid))")
            #expect(item.data == w.data)
            #expect(item.protection.code == w.protection && Int(item.protection.rawValue) == w.protectionClass)
            #expect(
                item.requiresUserPresence == (w.flags & 0x01 != 0),
                "\(fixture.name): item \(hexString(w.uuid)) flags \(w.flags)")
        }
        #expect(kc.verify().ok)
    }

    // MARK: The date ceiling (spec/BACKUP.md §9.2)

    /// golden_future_dated's ak item says it was modified on 2100-01-01. Its date counts only
    /// up to the ceiling C = creation time + 1 − 978 307 200 (757 468 801, in the items' own
    /// scale): in a merge it loses to a keychain item modified today, under the same unique
    /// key, and the keychain keeps its own. A reader that compared the item's date with the
    /// Unix creation time would let it win.
    @Test func futureDatedItem_isClampedInAMerge() throws {
        let fixture = try #require(BackupFixture.all.first { $0.name == "golden_future_dated" })
        let dir = try fixture.workspace()
        defer { try? FileManager.default.removeItem(at: dir) }
        let device = dir.appendingPathComponent("source-device.secret").path
        let kc = try Keychain.create(
            path: dir.appendingPathComponent("existing.keychain").path, devicePath: device,
            passcode: nil, kdfLogN: 10)
        let mine = try kc.add(
            .genericPassword,
            attributes: ["acct": .string("future-dated"), "svce": .string("backup.latchkey.example/dates")],
            data: Array("mine, modified today".utf8))
        let report = try restore(fixture, dir, device: device, into: .existing(kc))
        #expect(report.replaced == 0)
        #expect(report.keptByReason == [RestoreSkipReason.destinationNewer.rawValue: 1], "\(report.keptByReason)")
        let found = try kc.find(Query(.genericPassword, ["acct": .string("future-dated")]))
        #expect(found.count == 1 && found.first?.data == mine.data && found.first?.persistentRef == mine.persistentRef)

        // Into a new keychain the item is stored with both dates at the ceiling.
        let fresh = dir.appendingPathComponent("fresh.keychain").path
        _ = try restore(fixture, dir, device: device, into: .newKeychain(path: fresh))
        let restored = try #require(
            try Keychain.open(path: fresh, devicePath: device)
                .find(Query(.genericPassword, ["acct": .string("future-dated")])).first)
        let ceiling = Double(1_735_776_000 + 1) - 978_307_200
        #expect(restored.attributes["mdat"] == .date(ceiling) && restored.attributes["cdat"] == .date(ceiling))
    }

    // MARK: The generator and the spec

    /// spec/BACKUP.md §12 embeds golden_password's annotated entries; the two must not drift.
    @Test func backupSpecWorkedExample_equalsGeneratedDump() throws {
        let spec = try String(contentsOf: packageRoot.appendingPathComponent("spec/BACKUP.md"), encoding: .utf8)
        let dump = try String(
            contentsOf: BackupFixture.root.appendingPathComponent("golden_password/annotated.txt"), encoding: .utf8)
        let begin = try #require(spec.range(of: "<!-- BEGIN annotated.txt -->\n```text\n"))
        let end = try #require(spec.range(of: "```\n<!-- END annotated.txt -->"))
        #expect(String(spec[begin.upperBound..<end.lowerBound]) == dump)
    }

    @Test(.enabled(if: FixtureGeneratorTests.binary != nil, "latchkey-fixtures is not built beside the tests"))
    func committedBackupFixtures_matchAFreshGeneration() throws {
        let root = try FixtureGeneratorTests.generateRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let fresh = try FixtureGeneratorTests.files(under: root.appendingPathComponent("backup"))
        let committed = try FixtureGeneratorTests.files(under: BackupFixture.root)
        #expect(!fresh.isEmpty)
        #expect(
            FixtureGeneratorTests.differences(fresh, committed) == [],
            "fixtures/backup is stale or hand-edited; run 'make fixtures'")
    }
}
