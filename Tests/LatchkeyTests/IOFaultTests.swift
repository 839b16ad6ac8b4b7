#if canImport(Glibc)
    import Glibc
#endif
import Testing
@testable import Latchkey

/// ENOSPC and EIO at every mutating file operation (spec §11.3, §11.5): the call fails with
/// errSecIO and the keychain keeps exactly its previous state, both in the instance that
/// failed and for a fresh open of the same disk.
@Suite struct IOFaultTests {
    struct Case: CustomStringConvertible, Sendable {
        var scenario: FaultScenario
        var errno: Int32
        var description: String { "\(scenario) with \(errno == ENOSPC ? "ENOSPC" : "EIO")" }
    }

    static let cases: [Case] = FaultScenario.all.flatMap { s in [ENOSPC, EIO].map { Case(scenario: s, errno: $0) } }

    @Test(arguments: cases)
    func operation_failingAtEveryStep_throwsIOAndKeepsPreviousState(_ c: Case) throws {
        let prepared = try PreparedKeychain.make()
        let old = prepared.items
        let knownRefs = Set(old.keys)
        let reference = try prepared.openCopy()
        try c.scenario.operation(reference.keychain)
        let newShape = shape(try reference.keychain.snapshot(), knownRefs: knownRefs)

        var k = 0
        while true {
            #expect(k < 50, "the operation never completed")
            if k >= 50 { break }
            let run = try prepared.openCopy()
            let start = run.disk.mutations
            run.disk.plan = (at: k, fault: .error(c.errno))
            let result = Result { try c.scenario.operation(run.keychain) }
            let hit = run.disk.mutations - start > k
            run.disk.plan = nil
            guard hit else {
                #expect(throws: Never.self) { try result.get() }
                #expect(shape(try run.keychain.snapshot(), knownRefs: knownRefs) == newShape)
                break
            }
            let faulted = run.tracer.operation(at: start + k)
            let at = "\(c) at mutation \(k) (\(faulted.map { "\($0)" } ?? "?"))"

            if let f = faulted, f.path.hasPrefix(TestEnv.stateDirectory) {
                // The commit was durable before the device state update failed; that update is
                // best effort (spec §9.3), so the call succeeds with the new state.
                #expect(throws: Never.self, "\(at)") { try result.get() }
                #expect(shape(try run.keychain.snapshot(), knownRefs: knownRefs) == newShape, "\(at)")
                k += 1
                continue
            }

            if let f = faulted, f.name == "fsync directory", f.path == "/keychains",
                (start..<start + k).contains(where: { run.tracer.operation(at: $0)?.name == "rename" })
            {
                // The new file was renamed into place before the directory fsync failed: it is
                // the keychain now, and the error says so (issue 14 §5), never "nothing changed".
                let error = result.failure as? KeychainError
                #expect(
                    error?.status == .io && error?.message.contains("in force now") == true,
                    "\(at): got \(String(describing: error))")
                #expect(shape(try run.keychain.snapshot(), knownRefs: knownRefs) == newShape, "\(at)")
                let fresh = try openKeychain(on: run.disk)
                if c.scenario.changesPasscode { #expect(passcodesThatUnlock(fresh).new, "\(at)") }
                k += 1
                continue
            }

            switch result {
            case .success:
                Issue.record("\(at): the call succeeded although a write to the keychain failed")
            case .failure(let error):
                #expect((error as? KeychainError)?.status == .io, "\(at): got \(error)")
            }
            // The same instance still sees exactly the old items, and the file verifies.
            #expect(try run.keychain.snapshot() == old, "\(at): the failing instance sees changed items")
            let report = run.keychain.verify()
            #expect(report.ok, "\(at): \(report.problems)")
            // A new process sees the same.
            let fresh = try openKeychain(on: run.disk)
            let unlocks = passcodesThatUnlock(fresh)
            #expect(unlocks.old && !unlocks.new, "\(at): passcodes that unlock after the failure: \(unlocks)")
            #expect(try fresh.snapshot() == old, "\(at): a fresh open sees changed items")
            #expect(fresh.verify().ok, "\(at)")
            #expect(
                run.disk.listFiles().filter { $0.contains(".compact-") || $0.contains(".create-") }.isEmpty,
                "\(at): temporary files left behind: \(run.disk.listFiles())")
            // And the failure did not wedge the instance: once the disk works, so does the call.
            try c.scenario.operation(run.keychain)
            #expect(shape(try run.keychain.snapshot(), knownRefs: knownRefs) == newShape, "\(at): retry")
            k += 1
        }
        #expect(k > 0)
    }

    @Test(arguments: [ENOSPC, EIO])
    func create_failingAtEveryStep_leavesNoHalfMadeKeychain(errno: Int32) throws {
        var k = 0
        while k < 50 {
            let disk = try makeDisk()
            let tracer = TracingFileSystem(disk)
            let start = disk.mutations
            disk.plan = (at: k, fault: .error(errno))
            let result = Result { try createKeychain(on: tracer) }
            let hit = disk.mutations - start > k
            disk.plan = nil
            if !hit {
                #expect(throws: Never.self) { try result.get() }
                break
            }
            let at =
                "create with errno \(errno) at mutation \(k) (\(tracer.operation(at: start + k).map { "\($0)" } ?? "?"))"
            if case .failure(let error) = result {
                #expect((error as? KeychainError)?.status == .io, "\(at): \(error)")
            }
            #expect(
                disk.listFiles().filter { $0.contains(".create-") }.isEmpty,
                "\(at): temporary file left: \(disk.listFiles())")
            // Either there is no keychain, and creating it again works, or there is a whole one.
            if disk.contents(TestEnv.keychainPath) == nil {
                #expect(throws: Never.self, "\(at)") { try createKeychain(on: disk) }
            } else {
                #expect(throws: Never.self, "\(at): a keychain file was left that does not open") {
                    try openKeychain(on: disk).unlock(passcode: TestEnv.passcode)
                }
            }
            k += 1
        }
        #expect(k > 0 && k < 50)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
