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
    final class LockCountingFileSystem: ForwardingFileSystem, @unchecked Sendable {
        let inner: FileSystem
        var failPathStat = false
        private(set) var held = 0
        init(_ disk: MemoryFileSystem) { self.inner = disk }

        func lock(_ fd: Int32) throws {
            try inner.lock(fd)
            held += 1
        }
        func tryLock(_ fd: Int32) throws -> Bool {
            guard try inner.tryLock(fd) else { return false }
            held += 1
            return true
        }
        func unlock(_ fd: Int32) {
            held -= 1
            inner.unlock(fd)
        }
        func identity(path: String) throws -> FileIdentity? {
            if failPathStat { throw IOFailure("stat", path, EIO) }
            return try inner.identity(path: path)
        }
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
