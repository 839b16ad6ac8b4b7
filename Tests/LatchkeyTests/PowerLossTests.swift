import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// The power-loss replay of issue 14: for each writing operation of the library
/// (`WriteOperation.all`), the power is cut before its 0th, 1st, 2nd … mutating file
/// operation and after it returned; for each cut, the disks the next boot may find are
/// replayed and opened as a new process would.
///
/// What a crash may keep (`MemoryFileSystem.CrashModel`, both at 4 KiB and at 512 B blocks):
/// - everything fsync'd;
/// - plus any subset of the blocks written since the last fsync of their file, the others
///   holding what they held at that fsync (zeros past its old end): a later block may be
///   kept while an earlier one is a hole;
/// - a file's size is its size at its last fsync, the end of any block written since, or
///   its size now (a file cut shorter since: the old size or the new one);
/// - names created, renamed or removed since the last fsync of their directory: any prefix
///   of those changes, in order (none, some, all).
///
/// Every state must open (with `acceptRollback` off: a crash is no rollback), unlock with
/// exactly one of the passcodes, verify, and hold exactly the state before the operation or
/// exactly the state after it (items compared decrypted); and when the operation had
/// returned success before the cut, the state after it: nothing acknowledged is lost.
///
/// All states of a cut are replayed when they are at most LATCHKEY_POWERLOSS_STATES
/// (default 40); beyond, a sample of that many with a fixed seed: the extremes, each torn
/// tail, each single hole, then random subsets. `make powerloss-test` replays many more.
@Suite struct PowerLossTests {
    static let statesPerCut = environmentCount("LATCHKEY_POWERLOSS_STATES", default: 40)

    struct Case: CustomStringConvertible, Sendable {
        var operation: WriteOperation
        var blockSize: Int
        var description: String { "\(operation) at \(blockSize) B blocks" }
    }

    static let cases: [Case] = WriteOperation.all.flatMap { op in [4096, 512].map { Case(operation: op, blockSize: $0) }
    }

    @Test(arguments: cases)
    func powerCutAtEveryStep_everyStateOpens_beforeOrAfter_nothingAcknowledgedLost(_ c: Case) throws {
        let op = c.operation
        let start = try op.start()
        let knownRefs = persistentRefs(start)
        let before = Observed.of(start.clone(), knownRefs: knownRefs)
        let reference = start.clone()
        _ = try? op.run(reference, try op.setup?(reference))
        let after = Observed.of(reference, knownRefs: knownRefs)

        var replayed = 0, lost = 0, refused = 0
        let began = Date()
        var k = 0
        while true {
            #expect(k < 200, "\(c): the operation never completed")
            if k >= 200 { break }
            let disk = start.clone()
            let keychain = try op.setup?(disk)
            let base = disk.mutations
            disk.plan = (at: k, fault: .powerCut)
            let returned = (try? op.run(disk, keychain)) != nil
            let cut = disk.mutations - base > k
            disk.plan = nil
            let acknowledged = !cut && returned && op.alwaysFails == nil
            let at =
                cut
                ? "\(c): power cut before mutation \(k)"
                : "\(c): power cut after it returned \(returned ? "success" : "an error")"

            for (i, state) in disk.crashStates(.init(blockSize: c.blockSize, limit: Self.statesPerCut)).enumerated() {
                replayed += 1
                let found = Observed.of(state, knownRefs: knownRefs)
                if case .broken(let why) = found {
                    refused += 1
                    Issue.record("\(at), state \(i): does not open: \(why)")
                    continue
                }
                #expect(
                    found == before || found == after,
                    "\(at), state \(i): neither before (\(before)) nor after (\(after)): \(found)")
                if acknowledged && found != after {
                    lost += 1
                    Issue.record("\(at), state \(i): the operation returned success, but the state is \(found)")
                }
            }
            if !cut { break }
            k += 1
        }
        print(
            "power loss: \(c): \(k + 1) cuts, \(replayed) states replayed, \(refused) refused, \(lost) with an acknowledged change lost, \(Int(Date().timeIntervalSince(began) * 1000)) ms"
        )
    }
}

/// The crash model and `rebooted()` are one model: the first crash state (no pending name
/// change, no unsynced byte kept) is the disk `rebooted(.loseUnsynced)` finds, so PowerCutTests
/// and PowerLossTests judge directory durability alike.
@Suite struct CrashModelTests {
    @Test func theFirstCrashState_isTheRebootedDisk() throws {
        let disk = MemoryFileSystem()
        #expect(try disk.createDirectory("/kept", mode: 0o700))
        try disk.syncDirectory("/")
        let kept = try disk.open("/kept/file", create: true, exclusive: true, mode: 0o600)
        try disk.write(kept, offset: 0, Array(repeating: 1, count: 5000))
        try disk.sync(kept)
        try disk.syncDirectory("/kept")
        try disk.write(kept, offset: 5000, Array(repeating: 2, count: 5000))  // never synced
        // A directory whose name was never synced in its parent: gone, with what is inside.
        #expect(try disk.createDirectory("/lost", mode: 0o700))
        let lost = try disk.open("/lost/file", create: true, exclusive: true, mode: 0o600)
        try disk.write(lost, offset: 0, [3])
        try disk.sync(lost)
        try disk.syncDirectory("/lost")
        try disk.link("/kept/file", "/kept/second")  // a name change never synced

        let rebooted = disk.rebooted(.loseUnsynced)
        let first = try #require(disk.crashStates(.init(blockSize: 4096, limit: 1000)).first)
        #expect(rebooted.listFiles() == ["/kept/file"])
        #expect(rebooted.list("/") == ["kept"])
        #expect(first.listFiles() == rebooted.listFiles())
        #expect(first.list("/") == rebooted.list("/"))
        #expect(first.contents("/kept/file") == rebooted.contents("/kept/file"))
        #expect(rebooted.contents("/kept/file") == Array(repeating: 1, count: 5000))
        #expect(try first.ownership(path: "/kept") == rebooted.ownership(path: "/kept"))
    }
}
