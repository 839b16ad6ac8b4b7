#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// The I/O-fault loop of issue 14: for each writing operation of the library
/// (`WriteOperation.all`), its calls through the `FileSystem` seam are counted on a clean run,
/// then the N-th call is failed, for every N, in every way a POSIX file system can fail it:
///
/// - EIO, at every call (open, stat, fstat, read, write, fsync, ftruncate, rename, unlink,
///   flock, mkdir);
/// - ENOSPC, at every call that can allocate space (an open that creates, write, fsync,
///   ftruncate, rename, a directory fsync, mkdir);
/// - a short write (half of the bytes land, then ENOSPC: the disk filled in the middle of
///   the write), at every write;
/// - a short write followed by EIO, at every write.
///
/// After each, whatever the operation reported:
/// - a new process finds the keychain exactly as it was before the operation or exactly as
///   the clean run left it (items compared decrypted), and it verifies;
/// - what it finds survives a power cut right then (nothing it relies on is only in the page
///   cache or in a name change not yet made durable);
/// - success is reported exactly when the change is durable: a failure after the fsync of
///   the commit returned (the read that follows it, the device-state update) must still
///   report success (issue 14 point 5), and a failure before it must report an error;
/// - the error is errSecIO and its text names the failure ("the disk is full" or "No space
///   left on device" for ENOSPC, "an I/O error" or "Input/output error" for EIO);
/// - the instance that ran the operation verifies and sees that state, and the next add
///   through it works and is durable.
///
/// Every call is failed in `make test` (there is no sample); the count of faults is printed.
/// `make fault-test` also cuts each write at many more places (LATCHKEY_FAULT_SHORT_WRITES).
@Suite struct IOFaultLoopTests {
    /// With LATCHKEY_FAULT_SHORT_WRITES=all (`make fault-test`), each write is also cut after
    /// its first byte, before its last, and at every 512-byte boundary inside it (at most 64
    /// cuts a write), not only in its middle.
    static let everyShortWrite = ProcessInfo.processInfo.environment["LATCHKEY_FAULT_SHORT_WRITES"] == "all"

    static func faults(for call: MemoryFileSystem.Call) -> [MemoryFileSystem.CallFault] {
        var out: [MemoryFileSystem.CallFault] = [.error(EIO)]
        if call.allocates { out.append(.error(ENOSPC)) }
        guard call.name == "write" && call.bytes >= 2 else { return out }
        var cuts: [Int?] = [nil]
        if everyShortWrite {
            let boundaries = stride(from: 512, to: call.bytes, by: 512).map { $0 }
            let step = max(1, boundaries.count / 62)
            cuts += [1, call.bytes - 1] + stride(from: 0, to: boundaries.count, by: step).map { boundaries[$0] }
        }
        for kept in cuts {
            out += [.shortWrite(errno: ENOSPC, kept: kept), .shortWrite(errno: EIO, kept: kept)]
        }
        return out
    }

    /// What the text of an error caused by `fault` must contain, as the CLI prints it (message
    /// and cause): one of these.
    static func words(for fault: MemoryFileSystem.CallFault) -> [String] {
        switch fault {
        case .error(let e), .shortWrite(let e, _):
            return e == ENOSPC ? ["disk is full", "No space left on device"] : ["I/O error", "Input/output error"]
        }
    }

    @Test(arguments: WriteOperation.all)
    func everyCallFailingEveryWay_leavesBeforeOrAfter_reportsWhatIsDurable(_ op: WriteOperation) throws {
        let start = try op.start()
        let knownRefs = persistentRefs(start)
        let before = Observed.of(start.clone(), knownRefs: knownRefs)

        // The clean run: the calls to fail, and the state after.
        let reference = start.clone()
        let referenceKeychain = try op.setup?(reference)
        let referenceBytes = reference.contents(TestEnv.keychainPath)
        reference.recordCalls = true
        let clean = Result { try op.run(reference, referenceKeychain) }
        reference.recordCalls = false
        let calls = reference.callLog
        if let status = op.alwaysFails {
            #expect((clean.failure as? KeychainError)?.status == status, "\(op): the clean run")
        } else {
            #expect(throws: Never.self, "\(op): the clean run") { try clean.get() }
        }
        let after = Observed.of(reference, knownRefs: knownRefs)
        if case .broken(let why) = after { Issue.record("\(op): the clean run leaves a broken keychain: \(why)") }
        if op.writesKeychain {
            #expect(
                reference.contents(TestEnv.keychainPath) != referenceBytes,
                "\(op): the clean run left the file as it was")
        }

        var tried = 0
        let began = Date()
        for (n, call) in calls.enumerated() {
            for fault in Self.faults(for: call) {
                tried += 1
                check(
                    op, failing: n, call, with: fault, start: start, knownRefs: knownRefs, before: before, after: after)
            }
        }
        print(
            "fault loop: \(op): \(calls.count) calls, \(tried) faults injected, \(Int(Date().timeIntervalSince(began) * 1000)) ms"
        )
        #expect(calls.count > 0)
    }

    func check(
        _ op: WriteOperation, failing n: Int, _ call: MemoryFileSystem.Call, with fault: MemoryFileSystem.CallFault,
        start: MemoryFileSystem, knownRefs: Set<[UInt8]>, before: Observed, after: Observed
    ) {
        let at = "\(op): \(fault) at call \(n) (\(call))"
        let disk = start.clone()
        var keychain: Keychain?
        do {
            keychain = try op.setup?(disk)
        } catch {
            Issue.record("\(at): setup: \(error)")
            return
        }
        // The keychain file as it is on disk when the operation starts.
        let startBytes = disk.rebooted(.loseUnsynced).contents(TestEnv.keychainPath)
        let base = disk.calls
        disk.callPlan = (at: n, fault: fault)
        let result = Result { try op.run(disk, keychain) }
        let hit = disk.calls - base > n
        disk.callPlan = nil
        guard hit else {
            Issue.record("\(at): the run made fewer calls than the clean run (the loop is not deterministic)")
            return
        }
        if case .success(let made?) = result { keychain = made }

        // What the operation left on disk (for "success exactly when durable"); then what a new
        // process finds, and whether that survives a power cut once it has looked. (The device
        // state is written without fsync, spec §9.3; an older one never makes a file look
        // rolled back.)
        let durableBytes = disk.rebooted(.loseUnsynced).contents(TestEnv.keychainPath)
        let now = Observed.of(disk, knownRefs: knownRefs)
        #expect(now == before || now == after, "\(at): neither the state before nor the state after: \(now)")
        // The one exception the spec makes (§11.5): a rename whose directory fsync failed is in
        // force but may be undone by a power cut, and the error says exactly that; either state
        // may then survive (no item is lost in either).
        let renameMayBeUndone =
            (result.failureValue as? KeychainError)?.message.contains("the old file may come back") == true
        if !(disk.isDurable(TestEnv.keychainPath) && disk.isDurable(TestEnv.devicePath)) {
            let durable = Observed.of(disk.rebooted(.loseUnsynced), knownRefs: knownRefs)
            if renameMayBeUndone {
                #expect(durable == before || durable == after, "\(at): a power cut now would leave \(durable)")
            } else {
                #expect(durable == now, "\(at): a new process sees \(now), a power cut now would leave \(durable)")
            }
        }

        // Success exactly when the change is durable.
        let committed = op.writesKeychain && durableBytes != startBytes
        switch result {
        case .success:
            if op.alwaysFails != nil {
                Issue.record("\(at): succeeded")
            } else {
                #expect(now == after, "\(at): reported success, but a new process sees \(now)")
                if op.writesKeychain {
                    #expect(committed, "\(at): reported success, but the keychain file is as it was on disk")
                }
            }
        case .failure(let error):
            let e = error as? KeychainError
            #expect(
                !committed,
                "\(at): reported failure although the change is durable (issue 14 point 5: once the fsync has returned, the operation reports success): \(error)"
            )
            // An operation that fails anyway (a wrong passcode) may fail for that reason, when
            // the fault hit a call whose failure it may ignore (the attempt counter).
            if let status = op.alwaysFails, e?.status == status { break }
            #expect(e?.status == .io, "\(at): not errSecIO: \(error)")
            let words = Self.words(for: fault)
            #expect(
                words.contains { "\(error)".contains($0) }, "\(at): the message does not say \"\(words[0])\": \(error)")
        }

        // The instance that ran the operation: verifies, sees that state, and adds.
        var nextAdd = keychain
        if nextAdd == nil {
            nextAdd = try? (now == .noKeychain ? createKeychain(on: disk) : openKeychain(on: disk))
            try? nextAdd?.unlock(passcode: now.usesNewPasscode ? TestEnv.newPasscode : TestEnv.passcode)
        }
        guard let kc = nextAdd else {
            Issue.record("\(at): the keychain can be neither opened nor created again")
            return
        }
        let report = kc.verify()
        #expect(report.ok, "\(at): the instance's verify: \(report.problems)")
        if case .keychain(let items, _, _) = now, keychain != nil {
            let same = (try? shape(kc.snapshot(), knownRefs: knownRefs)) == items
            #expect(same, "\(at): the instance sees other items than a new process")
        }
        let expected = (now.itemCount ?? 0) + 1
        do {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": "next-add", "svce": "after a fault"]),
                data: bytes("n-secret"))
        } catch {
            Issue.record("\(at): the next add fails: \(error)")
            return
        }
        // Durable: the file and its name survive a power cut, and a new process finds the item.
        #expect(
            disk.isDurable(TestEnv.keychainPath) && disk.isDurable(TestEnv.devicePath),
            "\(at): the next add, or the keychain or device secret under it, would not survive a power cut")
        let reopened = try? openKeychain(on: disk.rebooted(.loseUnsynced))
        let found = try? reopened?.localStore!.liveItemCount
        #expect(found == expected, "\(at): after the next add, a new process finds \(found ?? -1) items")
    }
}

private extension Result {
    var failureValue: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
