import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import Latchkey
import LatchkeyFormat

/// A file system over a `MemoryFileSystem` that can refuse to write (a read-only medium) or
/// fail every read once a keychain fsync has returned (issue 14 §4, §5).
final class GuardedFileSystem: FileSystem, @unchecked Sendable {
    let disk: MemoryFileSystem
    var readOnly = false
    /// Once true, the next fsync of the keychain file arms `failReads`.
    var failReadsAfterNextSync = false
    var failReads = false

    init(_ disk: MemoryFileSystem) { self.disk = disk }

    private func writable(_ op: String, _ path: String) throws {
        if readOnly { throw IOFailure(op, path, EROFS) }
    }

    func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
        try writable("open", path)
        return try disk.open(path, create: create, exclusive: exclusive, mode: mode)
    }
    func openReadOnly(_ path: String) throws -> Int32 { try disk.openReadOnly(path) }
    func close(_ fd: Int32) { disk.close(fd) }
    func size(_ fd: Int32) throws -> UInt64 { try disk.size(fd) }
    func status(_ fd: Int32) throws -> FileStatus? { try disk.status(fd) }
    func identity(_ fd: Int32) throws -> FileIdentity { try disk.identity(fd) }
    func identity(path: String) throws -> FileIdentity? { try disk.identity(path: path) }
    func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        if failReads { throw IOFailure("read", "fd \(fd)", EIO) }
        return try disk.read(fd, offset: offset, count: count)
    }
    func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws {
        try writable("write", "fd \(fd)")
        try disk.write(fd, offset: offset, bytes)
    }
    func sync(_ fd: Int32) throws {
        try disk.sync(fd)
        if failReadsAfterNextSync { failReads = true }
    }
    func truncate(_ fd: Int32, to size: UInt64) throws {
        try writable("ftruncate", "fd \(fd)")
        try disk.truncate(fd, to: size)
    }
    func rename(_ from: String, _ to: String) throws {
        try writable("rename", from)
        try disk.rename(from, to)
    }
    func syncDirectory(_ path: String) throws { try disk.syncDirectory(path) }
    func lock(_ fd: Int32) throws { try disk.lock(fd) }
    func unlock(_ fd: Int32) { disk.unlock(fd) }
    func remove(_ path: String) throws {
        try writable("unlink", path)
        try disk.remove(path)
    }
    func permissions(_ path: String) throws -> UInt32? { try disk.permissions(path) }
    func createDirectory(_ path: String, mode: UInt32) throws -> Bool {
        try writable("mkdir", path)
        return try disk.createDirectory(path, mode: mode)
    }
    func list(_ directory: String) -> [String] { disk.list(directory) }
    func renameNoReplace(_ from: String, _ to: String) throws {
        try writable("rename", from)
        try disk.renameNoReplace(from, to)
    }
    func link(_ from: String, _ to: String) throws {
        try writable("link", from)
        try disk.link(from, to)
    }
    func removeDirectory(_ path: String) throws {
        try writable("rmdir", path)
        try disk.removeDirectory(path)
    }
    func openNoFollow(_ path: String, writable write: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        if write || create { try writable("open", path) }
        return try disk.openNoFollow(path, writable: write, create: create, mode: mode)
    }
    func ownership(path: String) throws -> FileOwnership? { try disk.ownership(path: path) }
    func ownership(_ fd: Int32) throws -> FileOwnership { try disk.ownership(fd) }
    func resolvedPath(_ path: String) throws -> String { try disk.resolvedPath(path) }
    var userID: UInt32 { disk.userID }
}

@Suite struct WriterEdgeTests {
    /// Issue 14 §5: once the fsync of a commit has returned, the call succeeds, even when
    /// every read after it fails; the next call reads the file again.
    @Test func readFailingAfterADurableCommit_stillReportsSuccess() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk, passcode: nil)
        let fs = GuardedFileSystem(disk)
        let kc = try Keychain.open(path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, fs: fs)
        fs.failReadsAfterNextSync = true
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"), protection: .always)
        fs.failReads = false
        fs.failReadsAfterNextSync = false
        #expect(try kc.find(Query(.genericPassword)).map(\.data) == [bytes("a")])
        #expect(try openKeychain(on: disk).find(Query(.genericPassword)).map(\.data) == [bytes("a")])
        // A retried add is a duplicate: the first one stood.
        expectKeychainError(.duplicateItem) {
            try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"), protection: .always)
        }
    }

    /// Issue 14 §4: a keychain on a medium that cannot be written opens for reading; finds,
    /// verify and info work, and writers fail with a message that says it is read-only.
    @Test func keychainOnAReadOnlyMedium_canBeReadButNotWritten() throws {
        let disk = try makeDisk()
        let created = try createKeychain(on: disk, passcode: TestEnv.passcode)
        try created.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"), protection: .whenUnlocked)
        let before = disk.keychainBytes
        let fs = GuardedFileSystem(disk)
        fs.readOnly = true
        let kc = try Keychain.open(path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, fs: fs)
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(try kc.find(Query(.genericPassword)).map(\.data) == [bytes("a")])
        #expect(kc.verify().ok)
        #expect(try kc.info().liveItems == 1)
        let error = expectKeychainError(.readOnly) {
            try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"), protection: .always)
        }
        #expect(error?.message.contains("read-only") == true, "\(String(describing: error))")
        expectKeychainError(.readOnly) { try kc.compact() }
        expectKeychainError(.readOnly) { try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN) }
        #expect(disk.keychainBytes == before)
    }

    /// Issue 14 §1: an item one byte over the format's limit is refused with errSecParam before
    /// anything is written, and one at the limit is stored and read back; the keychain stays
    /// usable either way.
    @Test func itemSize_atTheLimitIsStored_oneByteOverIsRefusedBeforeWriting() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "small"]), data: bytes("s"), protection: .always)
        let before = disk.keychainBytes
        // The keychain adds agrp (none: no caller), sync, cdat and mdat to what is given.
        let given: [String: AttributeValue] = ["acct": .string("big")]
        var probe = ItemPlaintext(itemClass: .genericPassword, attributes: given, data: [])
        probe.attributes["sync"] = .integer(0)
        probe.attributes["cdat"] = .date(0)
        probe.attributes["mdat"] = .date(0)
        let room = FormatConstants.maxItemPlaintextSize - probe.encodedSize

        let error = expectKeychainError(.param) {
            try kc.add(.genericPassword, attributes: given, data: [UInt8](repeating: 7, count: room + 1), protection: .always)
        }
        #expect(error?.message.contains("16777120") == true, "the message names the limit: \(String(describing: error))")
        #expect(disk.keychainBytes == before, "nothing was written")
        expectKeychainError(.param) {
            try kc.update(Query(.genericPassword, attrs(["acct": "small"])), attributes: [:], data: [UInt8](repeating: 7, count: room + 100))
        }
        #expect(disk.keychainBytes == before)

        try kc.add(.genericPassword, attributes: given, data: [UInt8](repeating: 7, count: room), protection: .always)
        let reopened = try openKeychain(on: disk)
        #expect(try reopened.find(Query(.genericPassword, given)).first?.data.count == room)
        #expect(reopened.verify().ok)
    }

    /// Issue 14 §8: a keychain path that is a directory says so, on open and on create.
    @Test func keychainPathThatIsADirectory_saysSo() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let device = dir.path + "/device.secret"
        _ = try Keychain.create(path: dir.path + "/k", devicePath: device, passcode: nil)
        let calls: [() throws -> Void] = [{ _ = try Keychain.open(path: dir.path, devicePath: device) },
                                          { _ = try Keychain.create(path: dir.path, devicePath: device, passcode: nil) }]
        for call in calls {
            let error = expectKeychainError(.param) { try call() }
            #expect(error?.message.contains("is a directory") == true, "\(String(describing: error))")
        }
    }
}
