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
    final class HookedFileSystem: ForwardingFileSystem, @unchecked Sendable {
        let disk: MemoryFileSystem
        var inner: FileSystem { disk }
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

        func sync(_ fd: Int32) throws {
            if fails("fsync") { throw IOFailure("fsync", "fd \(fd)", EIO) }
            try disk.sync(fd)
        }
        func truncate(_ fd: Int32, to size: UInt64) throws {
            if fails("ftruncate") { throw IOFailure("ftruncate", "fd \(fd)", EIO) }
            try disk.truncate(fd, to: size)
        }
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
