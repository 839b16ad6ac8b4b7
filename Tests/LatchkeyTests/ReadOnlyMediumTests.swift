import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport
import LatchkeyBackup

/// A keychain on a read-only file system (issue 14 defect 4), through the seam: every open for
/// writing and every change fails with EROFS (`MemoryFileSystem.readOnlyMedium`). Readers work
/// (open, unlock, find, info, verify, backup); writers fail with a message that says the file
/// system is read-only, and change nothing. CLITests RealDiskTests does the same on a tmpfs
/// remounted read-only, where the machine allows it.
@Suite struct ReadOnlyMediumTests {
    @Test func readersWork_writersSayTheFileSystemIsReadOnly() throws {
        let prepared = try PreparedKeychain.make()
        let disk = prepared.disk.clone()
        disk.readOnlyMedium = true
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        let items = try kc.snapshot()
        #expect(items == prepared.items)
        #expect(try kc.find(Query(.genericPassword, attrs(["acct": "alice"]))).first?.data == bytes("a-secret"))
        #expect(try kc.info().liveItems == prepared.items.count)
        let report = kc.verify()
        #expect(report.ok, "\(report.problems)")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let summary = try BackupArchive.write(
            kc, toFile: directory.path + "/ro.backup",
            options: BackupOptions(password: nil, kdfLogN: TestEnv.logN))
        #expect(summary.items == prepared.items.count - 1, "every item but the akpu one")

        let bytesBefore = disk.keychainBytes
        let writers: [(String, () throws -> Void)] = [
            ("add", { try kc.add(.genericPassword, attributes: attrs(["acct": "new"]), data: [1]) }),
            (
                "update",
                { try kc.update(Query(.genericPassword, attrs(["acct": "alice"])), attributes: attrs(["labl": "x"])) }
            ),
            ("delete", { try kc.delete(Query(.genericPassword, attrs(["acct": "bob"]))) }),
            (
                "changePasscode",
                { try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN) }
            ),
            ("compact", { try kc.compact() })
        ]
        for (name, write) in writers {
            do {
                try write()
                Issue.record("\(name) on a read-only medium succeeded")
            } catch let e as KeychainError {
                #expect(e.status == .readOnly || e.status == .io, "\(name): \(e)")
                #expect(e.message.contains("read-only"), "\(name): the message does not say read-only: \(e)")
            }
        }
        let unchanged = disk.keychainBytes == bytesBefore
        #expect(unchanged)
        #expect(try kc.snapshot() == prepared.items)
    }
}
