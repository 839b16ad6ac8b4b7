import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// `--merge` and `--dry-run`: for the same UUID or unique key the newer mdat wins.
@Suite struct MergeTests {
    /// A keychain whose three items then change: one updated after the backup (newer in the
    /// keychain), one deleted, one re-added under a new UUID (so only its unique key matches).
    func scenario() throws -> (BackupSandbox, Keychain) {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        for name in ["kept", "deleted", "readded", "unchanged"] {
            try kc.add(.genericPassword, attributes: ["acct": .string(name)], data: Array("old-\(name)".utf8))
        }
        try s.backup(kc)
        Thread.sleep(forTimeInterval: 0.01)  // mdat moves on
        try kc.update(Query(.genericPassword, ["acct": .string("kept")]), attributes: [:], data: Array("new-kept".utf8))
        try kc.delete(Query(.genericPassword, ["acct": .string("deleted")]))
        try kc.delete(Query(.genericPassword, ["acct": .string("readded")]))
        try kc.add(.genericPassword, attributes: ["acct": .string("readded")], data: Array("new-readded".utf8))
        return (s, kc)
    }

    func data(_ kc: Keychain, _ account: String) throws -> String? {
        try kc.find(Query(.genericPassword, ["acct": .string(account)])).first.map {
            String(decoding: $0.data, as: UTF8.self)
        }
    }

    @Test func merge_newerModificationDateWins() throws {
        let (s, kc) = try scenario()
        let report = try s.merge(into: kc)
        #expect(report.merge && !report.createdKeychain)
        #expect(report.restored == 1)  // "deleted" comes back
        #expect(report.replaced == 0)
        #expect(report.kept == 3)  // kept (newer here), readded (newer here), unchanged (same mdat)
        #expect(report.keptByReason == [RestoreSkipReason.destinationNewer.rawValue: 3])
        #expect(report.skipped == 0 && report.skippedByReason.isEmpty, "a kept item is not also counted as skipped")
        #expect(try data(kc, "kept") == "new-kept")
        #expect(try data(kc, "deleted") == "old-deleted")
        #expect(try data(kc, "readded") == "new-readded")
        #expect(kc.verify().ok)
    }

    @Test func merge_backupNewer_replacesByUUIDAndByUniqueKey() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("a")], data: Array("keychain-a".utf8))
        try kc.add(.genericPassword, attributes: ["acct": .string("b")], data: Array("keychain-b".utf8))
        let refA = try kc.find(Query(.genericPassword, ["acct": .string("a")]))[0].persistentRef
        // A second keychain on the same device with newer versions: "a" under the same UUID
        // is impossible to make there, so back it up, then make the source older.
        let other = try Keychain.create(
            path: s.path("newer.keychain"), devicePath: s.devicePath, passcode: nil, kdfLogN: 10)
        Thread.sleep(forTimeInterval: 0.01)
        try other.add(.genericPassword, attributes: ["acct": .string("b")], data: Array("backup-b".utf8))
        try s.backup(other, to: s.path("newer.backup"))
        let report = try s.merge(s.path("newer.backup"), into: kc)
        // The backup holds one item: it is counted once, as replaced (it used to be counted
        // as restored and as replaced).
        #expect(report.restored == 0 && report.replaced == 1 && report.kept == 0 && report.skipped == 0)
        #expect(report.replacedKeychainItems == 1)
        #expect(report.restoredByClass == ["genp": 1], "the item written")
        #expect(try data(kc, "b") == "backup-b")
        #expect(try data(kc, "a") == "keychain-a")
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("a")]))[0].persistentRef == refA)
        // The replaced "b" now has the backup's persistent reference.
        let backupRef = try other.find(Query(.genericPassword, ["acct": .string("b")]))[0].persistentRef
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("b")]))[0].persistentRef == backupRef)
        #expect(kc.verify().ok)
    }

    @Test func dryRun_reportsTheSameAsTheRestore_andWritesNothing() throws {
        let (s, kc) = try scenario()
        let before = try s.bytes(s.keychainPath)
        let plan = try s.merge(into: kc, dryRun: true)
        #expect(plan.dryRun)
        #expect(try s.bytes(s.keychainPath) == before)
        var done = try s.merge(into: kc)
        done.dryRun = true
        #expect(done == plan)
    }

    @Test func dryRun_ofANewKeychain_createsNothing() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try s.populate(kc)
        try s.backup(kc)
        let plan = try s.restoreNew(devicePath: s.otherDevicePath, dryRun: true)
        #expect(plan.restored == 4 && plan.skipped == 4 && plan.dryRun && plan.createdKeychain)
        #expect(!FileManager.default.fileExists(atPath: s.path("restored.keychain")))
        #expect(!FileManager.default.fileExists(atPath: s.otherDevicePath))
    }

    @Test func merge_intoALockedKeychain_isRefusedBeforeWriting() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try kc.add(.genericPassword, attributes: ["acct": .string("x")], data: [1])
        try s.backup(kc)
        try kc.delete(Query(.genericPassword))
        let locked = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        let before = try s.bytes(s.keychainPath)
        let e = keychainError { _ = try s.merge(into: locked) }
        #expect(e?.status == .interactionNotAllowed)
        #expect(try s.bytes(s.keychainPath) == before)
    }

    @Test func restore_whenTheKeychainExists_isRefused() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource()
        try s.backup(kc)
        _ = try Keychain.create(path: s.path("restored.keychain"), devicePath: s.devicePath, passcode: nil, kdfLogN: 10)
        let before = try s.bytes(s.path("restored.keychain"))
        let e = keychainError { _ = try s.restoreNew(devicePath: s.devicePath) }
        #expect(e?.status == .duplicateKeychain)
        #expect(try s.bytes(s.path("restored.keychain")) == before)
    }
}
