import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// `restore --replace` (the backup's item wins), and the per-item outcomes of a restore: every
/// item of the backup counted exactly once, as restored, replaced, kept or skipped (issue 18 §3).
@Suite struct ReplaceTests {
    func data(_ kc: Keychain, _ account: String) throws -> String? {
        try kc.find(Query(.genericPassword, ["acct": .string(account)])).first.map {
            String(decoding: $0.data, as: UTF8.self)
        }
    }

    /// The keychain's item is newer than the backup's: `--merge` keeps it, `--replace` does not.
    @Test func replace_theBackupWins_evenOverANewerItem() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        for name in ["edited", "readded", "deleted"] {
            try kc.add(.genericPassword, attributes: ["acct": .string(name)], data: Array("old-\(name)".utf8))
        }
        try s.backup(kc)
        Thread.sleep(forTimeInterval: 0.01)
        try kc.update(
            Query(.genericPassword, ["acct": .string("edited")]), attributes: [:], data: Array("new-edited".utf8))
        try kc.delete(Query(.genericPassword, ["acct": .string("readded")]))
        try kc.add(.genericPassword, attributes: ["acct": .string("readded")], data: Array("new-readded".utf8))
        try kc.delete(Query(.genericPassword, ["acct": .string("deleted")]))

        let plan = try s.merge(into: kc, dryRun: true)
        #expect(plan.kept == 2 && plan.restored == 1, "--merge would keep the two newer items")

        let report = try s.merge(into: kc, conflicts: .backupWins)
        #expect(report.conflicts == .backupWins)
        #expect(report.restored == 1 && report.replaced == 2 && report.kept == 0 && report.skipped == 0)
        #expect(try data(kc, "edited") == "old-edited")
        #expect(try data(kc, "readded") == "old-readded", "matched by its unique key, under another UUID")
        #expect(try data(kc, "deleted") == "old-deleted")
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("readded")])).count == 1)
        #expect(kc.verify().ok)
    }

    /// `--replace` keeps the rule that protects this device's items: a ThisDeviceOnly item of
    /// the keychain is never replaced from another device's backup.
    @Test func replace_neverReplacesAThisDeviceOnlyItem_fromAnotherDevice() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(
            .genericPassword, attributes: ["acct": .string("bank")], data: Array("mine".utf8),
            protection: .whenUnlockedThisDeviceOnly)
        let theirs = try Keychain.create(
            path: s.path("theirs.keychain"), devicePath: s.otherDevicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        try theirs.add(.genericPassword, attributes: ["acct": .string("bank")], data: Array("theirs".utf8))
        try s.backup(theirs, to: s.path("theirs.backup"))
        let report = try s.merge(s.path("theirs.backup"), into: kc, conflicts: .backupWins)
        #expect(report.kept == 1 && report.replaced == 0)
        #expect(report.keptByReason == [RestoreSkipReason.destinationThisDeviceOnly.rawValue: 1])
        #expect(try data(kc, "bank") == "mine")
    }

    /// One backup of another device holding an item for every outcome: each is counted once,
    /// the counts add up to the backup's items, and the list says what became of each.
    @Test func everyOutcome_countedOnce_andListedPerItem() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("older-here")], data: Array("mine".utf8))
        let theirs = try Keychain.create(
            path: s.path("theirs.keychain"), devicePath: s.otherDevicePath, passcode: nil, kdfLogN: BackupSandbox.logN)
        Thread.sleep(forTimeInterval: 0.01)
        var uuids: [String: String] = [:]
        for (name, pc) in [
            ("new", ProtectionClass.whenUnlocked), ("older-here", .whenUnlocked), ("newer-here", .afterFirstUnlock),
            ("device-bound", .whenUnlockedThisDeviceOnly), ("bank", .always)
        ] {
            let item = try theirs.add(
                .genericPassword, attributes: ["acct": .string(name)], data: Array("theirs".utf8), protection: pc)
            uuids[name] = hexString(Array(item.persistentRef.suffix(16)))
        }
        try s.backup(theirs, to: s.path("theirs.backup"))
        Thread.sleep(forTimeInterval: 1.1)  // later than the archive's creation second
        try kc.add(.genericPassword, attributes: ["acct": .string("newer-here")], data: Array("mine".utf8))
        try kc.add(
            .genericPassword, attributes: ["acct": .string("bank")], data: Array("mine".utf8),
            protection: .alwaysThisDeviceOnly)

        let report = try s.merge(s.path("theirs.backup"), into: kc, listItems: true)
        #expect(report.backup.items == 5)
        #expect(report.restored == 1 && report.replaced == 1 && report.kept == 2 && report.skipped == 1)
        #expect(report.restored + report.replaced + report.kept + report.skipped == report.backup.items)
        #expect(
            report.keptByReason == [
                RestoreSkipReason.destinationNewer.rawValue: 1, RestoreSkipReason.destinationThisDeviceOnly.rawValue: 1
            ])
        #expect(report.skippedByReason == [RestoreSkipReason.thisDeviceOnlyFromAnotherDevice.rawValue: 1])
        let items = try #require(report.items)
        #expect(items.count == 5)
        let byUUID = Dictionary(uniqueKeysWithValues: items.map { ($0.uuid, $0) })
        #expect(byUUID[uuids["new"]!]?.outcome == .restored)
        #expect(byUUID[uuids["older-here"]!]?.outcome == .replaced)
        #expect(byUUID[uuids["newer-here"]!]?.outcome == .kept)
        #expect(byUUID[uuids["newer-here"]!]?.reason == RestoreSkipReason.destinationNewer.rawValue)
        #expect(byUUID[uuids["bank"]!]?.outcome == .kept)
        #expect(byUUID[uuids["bank"]!]?.reason == RestoreSkipReason.destinationThisDeviceOnly.rawValue)
        let bound = try #require(byUUID[uuids["device-bound"]!])
        #expect(bound.outcome == .skipped && bound.reason == RestoreSkipReason.thisDeviceOnlyFromAnotherDevice.rawValue)
        #expect(bound.class == nil, "its class is inside the ciphertext, which does not open here")
        #expect(try data(kc, "new") == "theirs" && data(kc, "older-here") == "theirs")
        #expect(try data(kc, "newer-here") == "mine" && data(kc, "bank") == "mine")
        #expect(try s.merge(s.path("theirs.backup"), into: kc).items == nil, "listed only when asked")
    }
}
