import Foundation
import LatchkeyFormat
import LatchkeyTestSupport
import Testing

@testable import Latchkey

/// The keychain's exclusive lock is released on every way out of a write, including a failure
/// while checking that the path still names the open file: a lock kept after an error would
/// stop every other process's writes until this one closed the keychain.
@Suite struct ExclusiveLockTests {
    /// Forwards to a MemoryFileSystem, counts locks and unlocks, and fails `stat` of a path
    /// with EIO while `failPathStat` is set.
    final class LockCountingFileSystem: FileSystem, @unchecked Sendable {
        let disk: MemoryFileSystem
        var failPathStat = false
        private(set) var held = 0
        init(_ disk: MemoryFileSystem) { self.disk = disk }

        func lock(_ fd: Int32) throws {
            try disk.lock(fd)
            held += 1
        }
        func unlock(_ fd: Int32) {
            held -= 1
            disk.unlock(fd)
        }
        func identity(path: String) throws -> FileIdentity? {
            if failPathStat { throw IOFailure("stat", path, EIO) }
            return try disk.identity(path: path)
        }

        func openReadOnly(_ path: String) throws -> Int32 { try disk.openReadOnly(path) }
        func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
            try disk.open(path, create: create, exclusive: exclusive, mode: mode)
        }
        func close(_ fd: Int32) { disk.close(fd) }
        func size(_ fd: Int32) throws -> UInt64 { try disk.size(fd) }
        func status(_ fd: Int32) throws -> FileStatus? { try disk.status(fd) }
        func identity(_ fd: Int32) throws -> FileIdentity { try disk.identity(fd) }
        func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
            try disk.read(fd, offset: offset, count: count)
        }
        func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws { try disk.write(fd, offset: offset, bytes) }
        func sync(_ fd: Int32) throws { try disk.sync(fd) }
        func truncate(_ fd: Int32, to size: UInt64) throws { try disk.truncate(fd, to: size) }
        func rename(_ from: String, _ to: String) throws { try disk.rename(from, to) }
        func renameNoReplace(_ from: String, _ to: String) throws { try disk.renameNoReplace(from, to) }
        func link(_ from: String, _ to: String) throws { try disk.link(from, to) }
        func removeDirectory(_ path: String) throws { try disk.removeDirectory(path) }
        func syncDirectory(_ path: String) throws { try disk.syncDirectory(path) }
        func remove(_ path: String) throws { try disk.remove(path) }
        func permissions(_ path: String) throws -> UInt32? { try disk.permissions(path) }
        func createDirectory(_ path: String, mode: UInt32) throws -> Bool { try disk.createDirectory(path, mode: mode) }
        func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
            try disk.openNoFollow(path, writable: writable, create: create, mode: mode)
        }
        func ownership(path: String) throws -> FileOwnership? { try disk.ownership(path: path) }
        func ownership(_ fd: Int32) throws -> FileOwnership { try disk.ownership(fd) }
        func resolvedPath(_ path: String) throws -> String { try disk.resolvedPath(path) }
        var userID: UInt32 { disk.userID }
        func list(_ directory: String) -> [String] { disk.list(directory) }
    }

    @Test func aFailedPathCheck_releasesTheLock_andTheNextWriteSucceeds() throws {
        let fs = LockCountingFileSystem(try makeDisk())
        let keychain = try createKeychain(on: fs, passcode: nil)
        try keychain.add(
            .genericPassword, attributes: attrs(["acct": "a", "svce": "s"]), data: bytes("x"), protection: .always)
        #expect(fs.held == 0)

        fs.failPathStat = true
        #expect(throws: KeychainError.self) {
            try keychain.add(
                .genericPassword, attributes: attrs(["acct": "b", "svce": "s"]), data: bytes("y"), protection: .always)
        }
        #expect(fs.held == 0, "the write failed with the keychain's lock still held")

        fs.failPathStat = false
        try keychain.add(
            .genericPassword, attributes: attrs(["acct": "b", "svce": "s"]), data: bytes("y"), protection: .always)
        #expect(fs.held == 0)
    }
}
