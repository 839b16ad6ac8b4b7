import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// `verify` runs while other processes write: a change that lands between its scan of the
/// log and a later check (the index, the device state) must not make a healthy keychain look
/// damaged, since the advice for damage (restore from a backup) would lose that change.
@Suite struct VerifyRaceTests {
    typealias Hooked = RollbackRaceTests.HookedFileSystem

    func prepared() throws -> (MemoryFileSystem, Keychain) {
        let disk = try makeDisk()
        let writer = try createKeychain(on: disk, passcode: nil)
        writer.localStore!.indexTailLimit = 0  // every commit writes an index
        for i in 0..<3 {
            try writer.add(
                .genericPassword, attributes: attrs(["acct": "a\(i)", "svce": "s"]), data: bytes("x"),
                protection: .always)
        }
        #expect(disk.contents(TestEnv.keychainPath + ".index") != nil)
        return (disk, writer)
    }

    @Test func anImportBetweenTheScanAndTheIndexCheck_isNoProblem() throws {
        let (disk, writer) = try prepared()
        let hooked = Hooked(disk)
        let verifier = try openKeychain(on: hooked)
        hooked.indexHooks = [
            {
                try writer.add(
                    contentsOf: (0..<5).map {
                        NewItem(
                            .genericPassword, attributes: attrs(["acct": "import-\($0)", "svce": "s"]),
                            data: bytes("y"), protection: .always)
                    })
            }
        ]
        let report = verifier.verify()
        #expect(hooked.hookError == nil, "\(String(describing: hooked.hookError))")
        #expect(hooked.indexHooks.isEmpty, "the import never ran")
        #expect(report.ok, "\(report.problems)")
        #expect(report.liveItems == 8)
    }

    @Test func aCompactionBetweenTheScanAndTheIndexCheck_isNoProblem() throws {
        let (disk, writer) = try prepared()
        try writer.delete(Query(.genericPassword, ["acct": .string("a0")]))
        let hooked = Hooked(disk)
        let verifier = try openKeychain(on: hooked)
        hooked.indexHooks = [
            {
                try writer.compact()
                try writer.add(
                    .genericPassword, attributes: attrs(["acct": "late", "svce": "s"]), data: bytes("y"),
                    protection: .always)
            }
        ]
        let report = verifier.verify()
        #expect(hooked.hookError == nil, "\(String(describing: hooked.hookError))")
        #expect(hooked.indexHooks.isEmpty, "the compaction never ran")
        #expect(report.ok, "\(report.problems)")
    }

    /// The scan meets another process's append half written (a record that fails its
    /// checks at the end of the file); the append completes and records its sequence number
    /// in the device state before `verify` reads the state.
    @Test func aCommitCompletingBetweenTheScanAndTheStateRead_isNoDamage() throws {
        let (disk, writer) = try prepared()
        let hooked = Hooked(disk)
        let verifier = try openKeychain(on: hooked)
        // What a reader sees of an append in progress: bytes that fail the frame's CRC.
        let fd = try disk.open(TestEnv.keychainPath, create: false, exclusive: false, mode: 0o600)
        try disk.write(fd, offset: try disk.size(fd), Array(repeating: 0xA5, count: 64))
        disk.close(fd)
        hooked.hook = {
            try writer.add(
                .genericPassword, attributes: attrs(["acct": "late", "svce": "s"]), data: bytes("y"),
                protection: .always)
        }
        let report = verifier.verify()
        #expect(hooked.hookError == nil, "\(String(describing: hooked.hookError))")
        #expect(hooked.hook == nil, "the commit never ran")
        #expect(report.ok, "\(report.problems)")
        #expect(report.liveItems == 4)
    }

    /// An unfinished write that is still there when nobody can be writing (the second pass
    /// holds the lock) is named as what it is.
    @Test func anUnfinishedWriteNobodyIsMaking_isReportedAsLeftBehind() throws {
        let (disk, _) = try prepared()
        let verifier = try openKeychain(on: disk)
        let fd = try disk.open(TestEnv.keychainPath, create: false, exclusive: false, mode: 0o600)
        let end = try disk.size(fd)
        try disk.write(fd, offset: end, Array(repeating: 0xA5, count: 64))
        disk.close(fd)
        let report = verifier.verify()
        #expect(
            report.problems == [
                "unfinished write at byte \(end) (64 bytes): left by a write that never finished (a killed process, a power cut); it is cut off at the next write"
            ])
    }

    /// Real damage is still reported: the pass that holds the lock finds it too.
    @Test func damageFoundWhileNobodyWrites_isStillReported() throws {
        let (disk, _) = try prepared()
        let verifier = try openKeychain(on: disk)
        var bytes = try #require(disk.contents(TestEnv.keychainPath))
        bytes[bytes.count - 40] ^= 1  // inside the last item's put record
        disk.setContents(TestEnv.keychainPath, bytes)
        let report = verifier.verify()
        #expect(!report.ok)
        #expect(report.problems.first?.contains("damage") == true, "\(report.problems)")
    }
}
