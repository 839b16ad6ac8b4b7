import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// A commit or a compaction by another process that lands while a keychain is being opened,
/// between the scan of the file and the read of the device state, must not be taken for a
/// rollback (ConcurrencyTests found `find` failing with "has been rolled back" under load).
@Suite struct RollbackRaceTests {
    /// Forwards to a MemoryFileSystem and runs `hook` once, just before the device state is
    /// first opened for reading (that is, after the opening store has scanned the file); then
    /// `hooks` one per read of the state, and `indexHooks` one per read of the index: each
    /// stands for another process that commits while this one is paused there.
    final class HookedFileSystem: FileSystem, @unchecked Sendable {
        let disk: MemoryFileSystem
        var hook: (() throws -> Void)?
        /// Run one per read of the device state, after `hook`.
        var hooks: [() throws -> Void] = []
        /// Run one per opening of the index file for reading.
        var indexHooks: [() throws -> Void] = []
        /// Calls that fail with EIO, and how many more times: "fsync" (of a file), "ftruncate".
        var failing: [String: Int] = [:]
        private func fails(_ call: String) -> Bool {
            guard let n = failing[call], n > 0 else { return false }
            failing[call] = n - 1
            return true
        }
        var hookError: Error?
        init(_ disk: MemoryFileSystem) { self.disk = disk }

        func openReadOnly(_ path: String) throws -> Int32 { try disk.openReadOnly(path) }
        func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
            try disk.open(path, create: create, exclusive: exclusive, mode: mode)
        }
        func close(_ fd: Int32) { disk.close(fd) }
        func size(_ fd: Int32) throws -> UInt64 { try disk.size(fd) }
        func status(_ fd: Int32) throws -> FileStatus? { try disk.status(fd) }
        func identity(_ fd: Int32) throws -> FileIdentity { try disk.identity(fd) }
        func identity(path: String) throws -> FileIdentity? { try disk.identity(path: path) }
        func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
            try disk.read(fd, offset: offset, count: count)
        }
        func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws { try disk.write(fd, offset: offset, bytes) }
        func sync(_ fd: Int32) throws {
            if fails("fsync") { throw IOFailure("fsync", "fd \(fd)", EIO) }
            try disk.sync(fd)
        }
        func truncate(_ fd: Int32, to size: UInt64) throws {
            if fails("ftruncate") { throw IOFailure("ftruncate", "fd \(fd)", EIO) }
            try disk.truncate(fd, to: size)
        }
        func rename(_ from: String, _ to: String) throws { try disk.rename(from, to) }
        func renameNoReplace(_ from: String, _ to: String) throws { try disk.renameNoReplace(from, to) }
        func link(_ from: String, _ to: String) throws { try disk.link(from, to) }
        func removeDirectory(_ path: String) throws { try disk.removeDirectory(path) }
        func syncDirectory(_ path: String) throws { try disk.syncDirectory(path) }
        func lock(_ fd: Int32) throws { try disk.lock(fd) }
        func unlock(_ fd: Int32) { disk.unlock(fd) }
        func remove(_ path: String) throws { try disk.remove(path) }
        func permissions(_ path: String) throws -> UInt32? { try disk.permissions(path) }
        func createDirectory(_ path: String, mode: UInt32) throws -> Bool { try disk.createDirectory(path, mode: mode) }
        /// The device state is read through here (never following a symlink).
        func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
            if path.contains(".state/"), !writable, let h = hook ?? (hooks.isEmpty ? nil : hooks.removeFirst()) {
                hook = nil
                do { try h() } catch { hookError = error }
            }
            if path.hasSuffix(".index"), !writable, !indexHooks.isEmpty {
                do { try indexHooks.removeFirst()() } catch { hookError = error }
            }
            return try disk.openNoFollow(path, writable: writable, create: create, mode: mode)
        }
        func ownership(path: String) throws -> FileOwnership? { try disk.ownership(path: path) }
        func ownership(_ fd: Int32) throws -> FileOwnership { try disk.ownership(fd) }
        func resolvedPath(_ path: String) throws -> String { try disk.resolvedPath(path) }
        var userID: UInt32 { disk.userID }
        func list(_ directory: String) -> [String] { disk.list(directory) }
    }

    func prepared() throws -> (MemoryFileSystem, Keychain) {
        let disk = try makeDisk()
        let writer = try createKeychain(on: disk, passcode: nil)
        for i in 0..<3 {
            try writer.add(
                .genericPassword, attributes: attrs(["acct": "a\(i)", "svce": "s"]), data: bytes("x"),
                protection: .always)
        }
        return (disk, writer)
    }

    @Test func aCommitBetweenScanAndStateRead_isNotARollback() throws {
        let (disk, writer) = try prepared()
        let hooked = HookedFileSystem(disk)
        hooked.hook = {
            try writer.add(
                .genericPassword, attributes: attrs(["acct": "late", "svce": "s"]), data: bytes("y"),
                protection: .always)
        }
        let reader = try openKeychain(on: hooked)
        #expect(hooked.hookError == nil, "\(String(describing: hooked.hookError))")
        #expect(hooked.hook == nil, "the hook never ran")
        #expect(try reader.find(Query(.genericPassword, ["acct": .string("late")])).count == 1)
    }

    @Test func aCompactionBetweenScanAndStateRead_isNotARollback() throws {
        let (disk, writer) = try prepared()
        try writer.delete(Query(.genericPassword, ["acct": .string("a0")]))
        let hooked = HookedFileSystem(disk)
        hooked.hook = { try writer.compact() }
        let reader = try openKeychain(on: hooked)
        #expect(hooked.hookError == nil, "\(String(describing: hooked.hookError))")
        #expect(try reader.find(Query(.genericPassword), limit: nil).count == 2)
        #expect(reader.verify().ok)
    }

    /// A reader that finds the file compacted under it reopens the path; commits landing
    /// while it does (each one here at a read of the device state, where a process can be
    /// paused) must not make the new file look older than the state.
    @Test func commitsWhileAReaderReopensAfterACompaction_areNotARollback() throws {
        let (disk, writer) = try prepared()
        let hooked = HookedFileSystem(disk)
        let reader = try openKeychain(on: hooked)
        try writer.compact()
        hooked.hooks = (0..<3).map { i in
            {
                try writer.add(
                    .genericPassword, attributes: attrs(["acct": "late\(i)", "svce": "s"]), data: bytes("y"),
                    protection: .always)
            }
        }
        let found = try reader.find(Query(.genericPassword, ["acct": .string("late0")]))
        #expect(hooked.hookError == nil, "\(String(describing: hooked.hookError))")
        #expect(hooked.hooks.count < 3, "no commit landed during the reopen")
        #expect(found.count == 1)
        #expect(try reader.find(Query(.genericPassword), limit: nil).count == 6 - hooked.hooks.count)
    }

    /// The same through a writer: it finds the path replaced when it takes the lock.
    @Test func commitsWhileAWriterReopensAfterACompaction_areNotARollback() throws {
        let (disk, writer) = try prepared()
        let hooked = HookedFileSystem(disk)
        let other = try openKeychain(on: hooked)
        try writer.compact()
        hooked.hooks = (0..<3).map { i in
            {
                try writer.add(
                    .genericPassword, attributes: attrs(["acct": "late\(i)", "svce": "s"]), data: bytes("y"),
                    protection: .always)
            }
        }
        try other.add(
            .genericPassword, attributes: attrs(["acct": "mine", "svce": "s"]), data: bytes("z"), protection: .always)
        #expect(hooked.hookError == nil, "\(String(describing: hooked.hookError))")
        #expect(hooked.hooks.count < 3, "no commit landed during the reopen")
        #expect(try writer.find(Query(.genericPassword, ["acct": .string("mine")])).count == 1)
    }

    @Test func aFileReallyPutBack_isStillARollback() throws {
        let (disk, writer) = try prepared()
        let old = disk.keychainBytes
        try writer.add(
            .genericPassword, attributes: attrs(["acct": "new", "svce": "s"]), data: bytes("y"), protection: .always)
        disk.setContents(TestEnv.keychainPath, old)
        let e = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(e?.message.contains("rolled back") == true)
    }

    @Test func theRememberedSequenceNeverGoesDown_exceptWhenAdoptingARollback() throws {
        let (disk, writer) = try prepared()
        let device = writer.localStore!.device
        let uuid = writer.localStore!.fileUUID
        let newest = try #require(try device.state(fileUUID: uuid)).newestSequence
        // A process that read the file before the last commit saves what it saw.
        try device.saveState(DeviceState(fileUUID: uuid, newestSequence: newest - 1))
        #expect(try device.state(fileUUID: uuid)?.newestSequence == newest)
        try device.saveState(DeviceState(fileUUID: uuid, newestSequence: newest - 1), allowLower: true)
        #expect(try device.state(fileUUID: uuid)?.newestSequence == newest - 1)
        _ = disk
    }
}
