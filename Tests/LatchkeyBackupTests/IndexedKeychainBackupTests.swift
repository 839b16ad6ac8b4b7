import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// Backup and restore --merge of a keychain with an index (issue 16 §3): the items are listed
/// from the index and looked up through it, never all brought into memory, and the result is
/// the same as from a keychain read whole.
@Suite struct IndexedKeychainBackupTests {
    static func account(_ i: Int) -> [String: AttributeValue] { ["acct": .string("user-\(i)"), "svce": .string("s")] }
    static func query(_ i: Int) -> Query { Query(.genericPassword, account(i)) }

    /// 600 items with an index, then a tail after it: an update, a delete, a re-add and new
    /// items, which the index does not hold. A new handle on it, using the index.
    static func indexedSource(_ s: BackupSandbox) throws -> Keychain {
        let writer = try s.makeSource(passcode: nil)
        writer.localStore!.indexTailLimit = 0
        try writer.add(
            contentsOf: (0..<600).map {
                NewItem(.genericPassword, attributes: account($0), data: Array("secret-\($0)".utf8))
            })
        writer.localStore!.indexTailLimit = .max
        try writer.update(query(1), attributes: [:], data: Array("new-1".utf8))
        try writer.delete(query(2))
        try writer.delete(query(3))
        try writer.add(.genericPassword, attributes: account(3), data: Array("reborn-3".utf8))
        try writer.add(.genericPassword, attributes: account(1000), data: Array("tail-1000".utf8))
        writer.close()
        let kc = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        kc.localStore!.indexTailLimit = .max
        #expect(kc.localStore!.usesIndex)
        return kc
    }

    /// Before, a backup first read every item of the index into memory (the handle no longer
    /// used it afterwards), and at 1,000,000 items peaked at 324 MiB.
    @Test func backupOfAnIndexedKeychain_listsTheItemsFromTheIndex() throws {
        let s = try BackupSandbox()
        let kc = try Self.indexedSource(s)
        let summary = try s.backup(kc, password: nil)
        #expect(summary.items == 600)
        #expect(kc.localStore!.usesIndex, "the backup brought every item into memory")

        let report = try s.restoreNew(devicePath: s.devicePath, password: nil, passcode: nil)
        #expect(report.restored == 600)
        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.devicePath)
        #expect(try BackupSandbox.allItems(restored) == BackupSandbox.allItems(kc))
        #expect(try restored.find(Self.query(1)).first?.data == Array("new-1".utf8))
        #expect(try restored.find(Self.query(2)).isEmpty)
        #expect(try restored.find(Self.query(3)).first?.data == Array("reborn-3".utf8))
        #expect(try restored.find(Self.query(1000)).first?.data == Array("tail-1000".utf8))
    }

    /// A merge into the keychain its backup came from, after changes: items the keychain no
    /// longer has (one only in the index, one only in the tail) come back, a newer one is
    /// kept, and the merge looks them up through the index.
    @Test func mergeIntoAnIndexedKeychain_looksItemsUpThroughTheIndex() throws {
        let s = try BackupSandbox()
        let source = try Self.indexedSource(s)
        try s.backup(source, password: nil)
        let before = try BackupSandbox.allItems(source)
        source.close()
        let writer = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        writer.localStore!.indexTailLimit = .max
        try writer.delete(Self.query(10))  // in the index
        try writer.delete(Self.query(1000))  // in the tail only
        Thread.sleep(forTimeInterval: 0.01)
        try writer.update(Self.query(20), attributes: [:], data: Array("newer-20".utf8))
        writer.close()

        let kc = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        kc.localStore!.indexTailLimit = .max
        let report = try s.merge(into: kc, password: nil)
        #expect(report.restored == 2)
        #expect(report.replaced == 0)
        #expect(kc.localStore!.usesIndex, "the merge brought every item into memory")
        #expect(try kc.find(Self.query(10)).first?.data == Array("secret-10".utf8))
        #expect(try kc.find(Self.query(1000)).first?.data == Array("tail-1000".utf8))
        #expect(try kc.find(Self.query(20)).first?.data == Array("newer-20".utf8))
        let after = try BackupSandbox.allItems(kc)
        #expect(after.count == before.count)
        let fresh = try Keychain.open(path: s.keychainPath, devicePath: s.devicePath)
        #expect(try BackupSandbox.allItems(fresh) == after)
        #expect(kc.verify().ok)
    }

    /// A restore large enough for its transaction to write an index (past 256 KiB of records)
    /// wrote it beside the temporary keychain, and left it there under the temporary name when
    /// the keychain was moved into place: 163 MB at 1,000,000 items, and a restored keychain
    /// without an index (its first open scanned the whole log).
    @Test func restoreNew_putsTheIndexBesideTheRestoredKeychain() throws {
        let s = try BackupSandbox()
        let kc = try s.makeSource(passcode: nil)
        try kc.add(
            contentsOf: (0..<1500).map {
                NewItem(.genericPassword, attributes: Self.account($0), data: Array("secret-\($0)".utf8))
            })
        try s.backup(kc, password: nil)
        let report = try s.restoreNew(devicePath: s.devicePath, password: nil, passcode: nil)
        #expect(report.restored == 1500)
        let left = try FileManager.default.contentsOfDirectory(atPath: s.directory).filter { $0.contains(".restore-") }
        #expect(left.isEmpty, "left behind: \(left)")
        #expect(FileManager.default.fileExists(atPath: s.path("restored.keychain.index")))
        let restored = try Keychain.open(path: s.path("restored.keychain"), devicePath: s.devicePath)
        #expect(restored.localStore!.usesIndex, "the restored keychain's open did not use an index")
        #expect(try restored.find(Self.query(777)).first?.data == Array("secret-777".utf8))
        #expect(try BackupSandbox.allItems(restored) == BackupSandbox.allItems(kc))
        #expect(restored.verify().ok)
    }
}
