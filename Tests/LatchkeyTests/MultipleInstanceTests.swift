import Foundation
import Testing
@testable import Latchkey

/// Several processes on one keychain: readers see appended records; a compaction by one is
/// noticed by the others (spec §10.5, §11.2, §11.5).
@Suite struct MultipleInstanceTests {
    enum Disk: String, CaseIterable, CustomStringConvertible {
        case memory, real
        var description: String { rawValue }
    }

    /// Two instances on the same keychain; `cleanup` removes a temporary directory.
    func twoInstances(_ kind: Disk) throws -> (Keychain, Keychain, cleanup: () -> Void) {
        switch kind {
        case .memory:
            let disk = try makeDisk()
            let a = try createKeychain(on: disk)
            let b = try openKeychain(on: disk)
            try b.unlock(passcode: TestEnv.passcode)
            return (a, b, {})
        case .real:
            let dir = try TemporaryDirectory()
            let path = dir.path + "/login.keychain", device = dir.path + "/device.secret"
            let a = try Keychain.create(
                path: path, devicePath: device, passcode: TestEnv.passcode, kdfLogN: TestEnv.logN)
            let b = try Keychain.open(path: path, devicePath: device)
            try b.unlock(passcode: TestEnv.passcode)
            return (a, b, dir.remove)
        }
    }

    @Test(arguments: Disk.allCases)
    func readers_seeRecordsAppendedByAnotherInstance(_ kind: Disk) throws {
        let (a, b, cleanup) = try twoInstances(kind)
        defer { cleanup() }
        let added = try a.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("from a"))
        #expect(try b.find(Query(.genericPassword, attrs(["acct": "alice", "svce": "mail"]))) == [added])

        try b.update(
            Query(.genericPassword, attrs(["acct": "alice"])), attributes: attrs(["labl": "by b"]),
            data: bytes("from b"))
        let seen = try #require(try a.find(Query(.genericPassword)).first)
        #expect(seen.data == bytes("from b"))
        #expect(seen.attributes["labl"] == .string("by b"))

        // Unique keys hold across instances: b's view is caught up under the write lock.
        expectKeychainError(.duplicateItem) {
            try b.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: [])
        }
        try b.delete(Query(.genericPassword))
        #expect(try a.find(Query(.genericPassword)).isEmpty)
        try a.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("again"))
        #expect(try b.snapshot() == a.snapshot())
    }

    /// A reader skips the stat of the path while its file's status (size, links, ctime) is
    /// unchanged; a compaction unlinks the file and so moves its ctime. With a second hard link
    /// the old file keeps a link after the compaction: the reader must still notice.
    @Test(arguments: [false, true])
    func compaction_isNoticedByAReader_evenWithAHardLink(_ hardLinked: Bool) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/login.keychain", device = dir.path + "/device.secret"
        let a = try Keychain.create(path: path, devicePath: device, passcode: TestEnv.passcode, kdfLogN: TestEnv.logN)
        for i in 0..<4 {
            try a.add(.genericPassword, attributes: attrs(["acct": "user\(i)"]), data: bytes("secret \(i)"))
        }
        if hardLinked { try FileManager.default.linkItem(atPath: path, toPath: dir.path + "/other-name.keychain") }
        let b = try Keychain.open(path: path, devicePath: device)
        try b.unlock(passcode: TestEnv.passcode)
        try a.delete(Query(.genericPassword, attrs(["acct": "user0"])))
        // b follows the old file to its end, so that after the compaction nothing but its links
        // and ctime differ.
        for _ in 0..<3 { #expect(try b.find(Query(.genericPassword)).count == 3) }
        try a.compact()
        try a.add(.genericPassword, attributes: attrs(["acct": "after"]), data: bytes("new"))
        #expect(try b.find(Query(.genericPassword, attrs(["acct": "after"]))).count == 1)
        #expect(try b.snapshot() == a.snapshot())
    }

    @Test(arguments: Disk.allCases)
    func compactionByOneInstance_otherStillReadsAndWrites(_ kind: Disk) throws {
        let (a, b, cleanup) = try twoInstances(kind)
        defer { cleanup() }
        for i in 0..<6 {
            try a.add(.genericPassword, attributes: attrs(["acct": "user\(i)"]), data: bytes("secret \(i)"))
        }
        try a.delete(Query(.genericPassword, attrs(["acct": "user0"])))
        try a.update(Query(.genericPassword, attrs(["acct": "user1"])), attributes: attrs(["labl": "x"]))
        let live = try b.snapshot()

        let (before, after) = try a.compact()
        #expect(after < before)
        // b's descriptor still names the old file: it must notice the replacement.
        #expect(try b.snapshot() == live)
        let report = b.verify()
        #expect(report.ok, "\(report.problems)")
        try b.add(.genericPassword, attributes: attrs(["acct": "from-b"]), data: bytes("b"))
        try b.update(Query(.genericPassword, attrs(["acct": "user2"])), attributes: attrs(["labl": "y"]))
        expectKeychainError(.duplicateItem) {
            try b.add(.genericPassword, attributes: attrs(["acct": "user3"]), data: [])
        }
        #expect(try a.snapshot() == b.snapshot())
        #expect(a.verify().ok)

        // And the other way round: b compacts, a keeps going.
        try b.delete(Query(.genericPassword, attrs(["acct": "user4"])))
        try b.compact()
        try a.add(.genericPassword, attributes: attrs(["acct": "from-a"]), data: bytes("a"))
        #expect(try a.snapshot() == b.snapshot())
        #expect(try b.snapshot().count == 6)
    }

    @Test func verify_afterAnotherInstanceCompacted_checksTheNewFile() throws {
        let (a, b, cleanup) = try twoInstances(.memory)
        defer { cleanup() }
        // Records of different sizes, so that the compacted file's offsets do not line up
        // with the old file's records.
        for i in 0..<4 {
            try a.add(
                .genericPassword, attributes: attrs(["acct": "user\(i)"]),
                data: Array(repeating: UInt8(i), count: 10 + 37 * i))
        }
        try a.delete(Query(.genericPassword, attrs(["acct": "user0"])))
        let live = try b.snapshot()
        try a.compact()
        // No find in between: verify alone must check the file now at the path, consistently.
        let report = b.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.checkedItems == 3)
        #expect(report.liveItems == 3)
        #expect(try b.snapshot() == live)
    }
}
