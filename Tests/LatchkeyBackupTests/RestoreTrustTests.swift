#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Latchkey
import LatchkeyBackup
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
    func foreignBackup(_ s: BackupSandbox, account: String, protection: ProtectionClass = .whenUnlocked) throws -> String {
        let theirs = try Keychain.create(path: s.path("theirs.keychain"), devicePath: s.otherDevicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        Thread.sleep(forTimeInterval: 0.01)   // a later mdat than the victim's item
        try theirs.add(.genericPassword, attributes: ["acct": .string(account)], data: Array("theirs".utf8), protection: protection)
        try s.backup(theirs, to: s.path("theirs.backup"))
        return s.path("theirs.backup")
    }

    @Test(arguments: [ProtectionClass.whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly])
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
        try kc.add(.genericPassword, attributes: ["acct": .string("bank")], data: Array("old".utf8), protection: .whenUnlockedThisDeviceOnly)
        let newer = try Keychain.create(path: s.path("newer.keychain"), devicePath: s.devicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        Thread.sleep(forTimeInterval: 0.01)
        try newer.add(.genericPassword, attributes: ["acct": .string("bank")], data: Array("new".utf8), protection: .whenUnlockedThisDeviceOnly)
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
        try kc.add(.genericPassword, attributes: ["acct": .string("mail")], data: Array("old".utf8), protection: .whenUnlocked)
        let report = try s.merge(try foreignBackup(s, account: "mail"), into: kc)
        #expect(report.replaced == 1)
        #expect(try item(kc, "mail")?.data == Array("theirs".utf8))
    }

    /// A backup that says it was made an hour ago, holding an item modified just now: the
    /// item's date is taken as the archive's creation, so it is older than the keychain's.
    func backdatedBackup(_ s: BackupSandbox, account: String) throws -> (path: String, createdAt: UInt64) {
        let theirs = try Keychain.create(path: s.path("theirs.keychain"), devicePath: s.otherDevicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        try theirs.add(.genericPassword, attributes: ["acct": .string(account)], data: Array("theirs".utf8), protection: .whenUnlocked)
        let createdAt = UInt64(Date().timeIntervalSince1970) - 3600
        let path = s.path("backdated.backup")
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        defer { close(fd) }
        try BackupArchive.write(theirs, to: fd, options: BackupOptions(password: BackupSandbox.password, kdfLogN: BackupSandbox.logN),
                                createdAt: createdAt, random: SystemRandomSource())
        return (path, createdAt)
    }

    @Test func datesLaterThanTheArchive_doNotWinAMerge() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("mail")], data: Array("mine".utf8), protection: .whenUnlocked)
        Thread.sleep(forTimeInterval: 0.01)
        let backup = try backdatedBackup(s, account: "mail")   // its item's mdat is later than ours

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
