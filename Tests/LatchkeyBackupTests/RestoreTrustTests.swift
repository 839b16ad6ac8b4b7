#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// What a restore believes of an archive written by someone else (issue 13, point 7): a
/// password backup made on another device never replaces a ThisDeviceOnly item of the
/// keychain, and no date in an archive counts beyond the archive's own creation time.
@Suite struct RestoreTrustTests {
    func item(_ kc: Keychain, _ account: String) throws -> Item? {
        try kc.find(Query(.genericPassword, ["acct": .string(account)])).first
    }

    /// Another device's keychain with the same item (same unique key), made later, so newer.
    func foreignBackup(_ s: BackupSandbox, account: String, protection: ProtectionClass = .whenUnlocked) throws
        -> String
    {
        let theirs = try Keychain.create(
            path: s.path("theirs.keychain"), devicePath: s.otherDevicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        Thread.sleep(forTimeInterval: 0.01)  // a later mdat than the victim's item
        try theirs.add(
            .genericPassword, attributes: ["acct": .string(account)], data: Array("theirs".utf8), protection: protection
        )
        try s.backup(theirs, to: s.path("theirs.backup"))
        return s.path("theirs.backup")
    }

    @Test(arguments: [
        ProtectionClass.whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly
    ])
    func anotherDevicesBackup_neverReplacesAThisDeviceOnlyItem(_ mine: ProtectionClass) throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("bank")], data: Array("mine".utf8), protection: mine)
        let backup = try foreignBackup(s, account: "bank")

        let report = try s.merge(backup, into: kc)
        #expect(report.replaced == 0 && report.restored == 0)
        #expect(report.keptByReason == [RestoreSkipReason.destinationThisDeviceOnly.rawValue: 1])
        #expect(report.kept == 1 && report.skipped == 0)
        let kept = try #require(try item(kc, "bank"))
        #expect(kept.data == Array("mine".utf8), "the local secret stays")
        #expect(kept.protection == mine, "and stays ThisDeviceOnly")
        #expect(kc.verify().ok)
    }

    /// This device's own backup still replaces an older ThisDeviceOnly item (it proved its
    /// origin by unwrapping the ThisDeviceOnly classes with this device's secret).
    @Test func thisDevicesOwnBackup_stillReplacesAnOlderThisDeviceOnlyItem() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(
            .genericPassword, attributes: ["acct": .string("bank")], data: Array("old".utf8),
            protection: .whenUnlockedThisDeviceOnly)
        let newer = try Keychain.create(
            path: s.path("newer.keychain"), devicePath: s.devicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        Thread.sleep(forTimeInterval: 0.01)
        try newer.add(
            .genericPassword, attributes: ["acct": .string("bank")], data: Array("new".utf8),
            protection: .whenUnlockedThisDeviceOnly)
        try s.backup(newer, to: s.path("newer.backup"))
        let report = try s.merge(s.path("newer.backup"), into: kc)
        #expect(report.replaced == 1)
        #expect(try item(kc, "bank")?.data == Array("new".utf8))
    }

    /// A migratory item of the keychain may still be replaced by a newer one of another
    /// device's password backup (that is what a password backup is for).
    @Test func anotherDevicesBackup_stillReplacesAnOlderMigratoryItem() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(
            .genericPassword, attributes: ["acct": .string("mail")], data: Array("old".utf8), protection: .whenUnlocked)
        let report = try s.merge(try foreignBackup(s, account: "mail"), into: kc)
        #expect(report.replaced == 1)
        #expect(try item(kc, "mail")?.data == Array("theirs".utf8))
    }

    /// A backup that says it was made an hour ago, holding an item modified just now: the
    /// item's date is taken as the archive's creation, so it is older than the keychain's.
    func backdatedBackup(_ s: BackupSandbox, account: String) throws -> (path: String, createdAt: UInt64) {
        let theirs = try Keychain.create(
            path: s.path("theirs.keychain"), devicePath: s.otherDevicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        try theirs.add(
            .genericPassword, attributes: ["acct": .string(account)], data: Array("theirs".utf8),
            protection: .whenUnlocked)
        let createdAt = UInt64(Date().timeIntervalSince1970) - 3600
        let path = s.path("backdated.backup")
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        defer { close(fd) }
        try BackupArchive.write(
            theirs, to: fd, options: BackupOptions(password: BackupSandbox.password, kdfLogN: BackupSandbox.logN),
            createdAt: createdAt, random: SystemRandomSource())
        return (path, createdAt)
    }

    @Test func datesLaterThanTheArchive_doNotWinAMerge() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(
            .genericPassword, attributes: ["acct": .string("mail")], data: Array("mine".utf8), protection: .whenUnlocked
        )
        Thread.sleep(forTimeInterval: 0.01)
        let backup = try backdatedBackup(s, account: "mail")  // its item's mdat is later than ours

        let report = try s.merge(backup.path, into: kc)
        #expect(report.replaced == 0)
        #expect(report.keptByReason == [RestoreSkipReason.destinationNewer.rawValue: 1])
        #expect(try item(kc, "mail")?.data == Array("mine".utf8))
    }

    @Test func datesLaterThanTheArchive_areStoredAsTheArchivesCreation() throws {
        let s = try BackupSandbox()
        let backup = try backdatedBackup(s, account: "mail")
        _ = try s.restoreNew(backup.path, devicePath: s.devicePath)
        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.devicePath)
        try restored.unlock(passcode: BackupSandbox.passcode)
        let found = try #require(try item(restored, "mail"))
        let ceiling = Double(backup.createdAt) + 1 - Date.timeIntervalBetween1970AndReferenceDate
        guard case .date(let mdat)? = found.attributes["mdat"], case .date(let cdat)? = found.attributes["cdat"] else {
            Issue.record("no dates")
            return
        }
        #expect(mdat == ceiling && cdat == ceiling, "clamped to the end of the archive's creation second")
    }
}

/// A password backup spliced by someone who knows its password but not this device's secret
/// (issue 27, point 5): they keep the genuine keybag of a backup this device made, put their
/// own record in a migratory class (the only classes whose keys the password alone opens) and
/// reseal the manifest with the password-derived MAC key. Nothing in such an archive but its
/// ThisDeviceOnly classes proves it was made here.
@Suite struct SplicedBackupTests {
    /// The spliced archive: `genuine`'s keybag, one ak record of the attacker's for `account`,
    /// dated now, and a manifest resealed over them.
    func splice(_ s: BackupSandbox, genuine: String, account: String, secret: String) throws -> String {
        let tar = try s.bytes(genuine)
        let e = DamageTests.entries(tar)
        let keybag = Array(tar[e[0].offset..<e[0].offset + e[0].size])
        let bag = try BackupKeybag.decode(keybag)
        let c = bag.common
        let keys = BackupKeys(
            passwordKey: try BackupKeys.passwordKey(
                password: BackupSandbox.password, kdf: c.kdf, backupUUID: c.backupUUID),
            deviceKey: nil)
        let ak = try #require(bag.entries.first { $0.protectionClass == .whenUnlocked })
        let akKey = try Crypto.unwrap(ak.wrappedKey, with: try #require(try keys.kek(.password)))
        let now = Date().timeIntervalSinceReferenceDate
        let plaintext = ItemPlaintext(
            itemClass: .genericPassword,
            attributes: ["acct": .string(account), "cdat": .date(now), "mdat": .date(now)],
            data: Array(secret.utf8))
        let record = try BackupItemRecord.seal(
            plaintext, uuid: try Crypto.randomBytes(16), protectionClass: .whenUnlocked, flags: 0,
            classKey: akKey, itemKey: try Crypto.randomBytes(32), backupUUID: c.backupUUID,
            entry: 1, index: 0)
        var records: [UInt8] = []
        record.encode(into: &records)
        let entries: [(name: String, bytes: [UInt8])] = [
            (BackupConstants.keybagName, keybag),
            (BackupConstants.itemsName(1), ItemsEntry.encode(number: 1, count: 1, records: records))
        ]
        let last = try #require(e.last)
        var manifest = try Manifest.decode(Array(tar[last.offset..<last.offset + last.size]))
        manifest.entries = entries.map {
            ManifestEntry(name: $0.name, size: UInt64($0.bytes.count), sha256: Crypto.sha256($0.bytes))
        }
        manifest.itemCount = 1
        manifest.countsByClass = [1, 0, 0, 0, 0, 0]
        let sealed = manifest.encode(macKey: try #require(try keys.manifestMACKey(mode: .password)))
        let path = s.path("spliced.backup")
        try s.write(TestTar.archive(entries + [(BackupConstants.manifestName, sealed)], mtime: c.createdAt), to: path)
        return path
    }

    @Test(
        arguments: [ProtectionClass.whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly],
        [RestoreConflictPolicy.newerWins, .backupWins])
    func splicedPasswordBackup_neverReplacesAThisDeviceOnlyItem(
        _ mine: ProtectionClass, _ policy: RestoreConflictPolicy
    ) throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("bank")], data: Array("mine".utf8), protection: mine)
        try s.backup(kc)  // genuine, made on this device, with the password the attacker knows
        let spliced = try splice(s, genuine: s.backupPath, account: "bank", secret: "attacker's")

        // The archive is intact as far as the password can tell, and its keybag is this device's.
        let plan = try s.merge(spliced, into: kc, dryRun: true, conflicts: policy)
        #expect(plan.backup.sameDevice)
        #expect(plan.backup.origin.hasPrefix("its ThisDeviceOnly items made on this device"), "\(plan.backup.origin)")

        let report = try s.merge(spliced, into: kc, conflicts: policy, listItems: true)
        #expect(report.replaced == 0 && report.restored == 0)
        #expect(report.keptByReason == [RestoreSkipReason.destinationThisDeviceOnly.rawValue: 1])
        #expect(report.items?.first?.reason == RestoreSkipReason.destinationThisDeviceOnly.rawValue)
        let kept = try #require(try kc.find(Query(.genericPassword, ["acct": .string("bank")])).first)
        #expect(kept.data == Array("mine".utf8), "the victim's secret stays")
        #expect(kept.protection == mine, "and stays ThisDeviceOnly")
        #expect(kc.verify().ok)
    }

    /// The genuine backup's own ThisDeviceOnly record still replaces an older copy: its class
    /// key needed this device's secret. And only a device-only backup is "made on this device"
    /// as a whole.
    @Test func genuineThisDeviceOnlyRecord_stillReplaces_andOriginSaysWhatIsProven() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(
            .genericPassword, attributes: ["acct": .string("bank")], data: Array("new".utf8),
            protection: .whenUnlockedThisDeviceOnly)
        try s.backup(kc)
        try kc.update(
            Query(.genericPassword, ["acct": .string("bank")]), attributes: [:],
            data: Array("newer, but backupWins".utf8))
        let report = try s.merge(into: kc, conflicts: .backupWins)
        #expect(report.replaced == 1)
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("bank")])).first?.data == Array("new".utf8))

        try s.backup(kc, password: nil, to: s.path("device-only.backup"))
        #expect(
            try s.merge(s.path("device-only.backup"), into: kc, password: nil, dryRun: true).backup.origin
                == "made on this device")
    }
}
