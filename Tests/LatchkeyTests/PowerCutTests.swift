import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// Power cuts between any two mutating file operations (spec §11.4, §11.5, §11.6).
///
/// For each operation, the power is cut at its 0th, 1st, 2nd … mutating file operation until
/// one run completes without reaching the cut. After each cut the disk is rebooted in every
/// `CrashMode` and opened: it must open, verify, and hold either exactly the old items or
/// exactly the new ones, never a mix.
@Suite struct PowerCutTests {
    static let modes: [MemoryFileSystem.CrashMode] = [.loseUnsynced, .keepUnsynced, .tearUnsynced]

    /// After a call returns, a power cut loses nothing of the keychain file, whatever the
    /// crash mode: every byte of it is durable (spec §11.4, §11.5).
    func expectDurable(
        _ disk: MemoryFileSystem, _ scenario: FaultScenario, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for mode in Self.modes {
            let after = disk.rebooted(mode)
            let durable = after.keychainBytes == disk.keychainBytes
            #expect(
                durable, "\(scenario) returned, then a power cut (\(mode)) lost part of the keychain file",
                sourceLocation: sourceLocation)
            do {
                let kc = try openKeychain(on: after)
                try kc.unlock(passcode: scenario.changesPasscode ? TestEnv.newPasscode : TestEnv.passcode)
            } catch {
                Issue.record(
                    "\(scenario) returned, then a power cut (\(mode)): \(error)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func create_afterPowerCutAtEveryStep_leavesNoKeychainOrAWholeOne() throws {
        var k = 0
        while k < 50 {
            let disk = try makeDisk()
            let start = disk.mutations
            disk.plan = (at: k, fault: .powerCut)
            let created = (try? createKeychain(on: disk)) != nil
            let hit = disk.mutations - start > k
            disk.plan = nil
            if !hit { break }
            for mode in Self.modes {
                let after = disk.rebooted(mode)
                guard after.contents(TestEnv.keychainPath) != nil else {
                    #expect(!created, "cut at \(k), \(mode): create returned but the keychain is gone")
                    continue
                }
                #expect(throws: Never.self, "cut at \(k), \(mode): a keychain file that does not open") {
                    try openKeychain(on: after).unlock(passcode: TestEnv.passcode)
                }
            }
            k += 1
        }
        #expect(k > 0 && k < 50)
    }

    @Test(arguments: FaultScenario.all)
    func open_afterPowerCutAtEveryStep_hasOldOrNewStateNeverMix(_ scenario: FaultScenario) throws {
        let prepared = try PreparedKeychain.make()
        let old = prepared.items
        let knownRefs = Set(old.keys)

        // A clean run gives the shape of the new state.
        let reference = try prepared.openCopy()
        try scenario.operation(reference.keychain)
        let newState = try openKeychain(on: reference.disk)
        try newState.unlock(passcode: scenario.changesPasscode ? TestEnv.newPasscode : TestEnv.passcode)
        let newShape = shape(try newState.snapshot(), knownRefs: knownRefs)
        if scenario.changesItems {
            #expect(newShape != shape(old, knownRefs: knownRefs), "the operation should change the items")
        } else {
            #expect(try newState.snapshot() == old)
        }

        var sawOld = false, sawNew = false
        var k = 0
        while true {
            #expect(k < 50, "the operation never completed")
            if k >= 50 { break }
            let run = try prepared.openCopy()
            let start = run.disk.mutations
            run.disk.plan = (at: k, fault: .powerCut)
            let reportedSuccess = (try? scenario.operation(run.keychain)) != nil
            let hit = run.disk.mutations - start > k
            run.disk.plan = nil
            guard hit else {
                #expect(reportedSuccess, "the run without a fault failed")
                expectDurable(run.disk, scenario)
                break
            }
            let at =
                "power cut at mutation \(k) (\(run.tracer.operation(at: start + k).map { "\($0)" } ?? "?")) during \(scenario)"

            var states: [MemoryFileSystem.CrashMode: Snapshot] = [:]
            for mode in Self.modes {
                let kc: Keychain
                do {
                    kc = try openKeychain(on: run.disk.rebooted(mode))
                } catch {
                    Issue.record("\(at), \(mode): the keychain does not open: \(error)")
                    continue
                }
                let unlocks = passcodesThatUnlock(kc)
                if scenario.changesPasscode && reportedSuccess {
                    #expect(unlocks.new && !unlocks.old, "\(at), \(mode): the passcode change succeeded but was lost")
                }
                if scenario.changesPasscode {
                    #expect(
                        unlocks.old != unlocks.new,
                        "\(at), \(mode): exactly one of the old and new passcodes must unlock, got \(unlocks)")
                    if unlocks.new { sawNew = true } else { sawOld = true }
                } else {
                    #expect(unlocks.old, "\(at), \(mode): the passcode no longer unlocks")
                }
                let report = kc.verify()
                #expect(report.ok, "\(at), \(mode): \(report.problems)")
                states[mode] = try kc.snapshot()
            }

            // Keeping every unsynced write gives the most advanced state this cut can leave;
            // every mode must give it or the old one, and it must be the old or the new state.
            guard let furthest = states[.keepUnsynced] else { continue }
            for (mode, state) in states {
                let isOld = state == old
                #expect(
                    isOld || state == furthest,
                    "\(at), \(mode): neither the old state nor the state the operation wrote")
                // A call that reported success was durable: no crash mode may lose it.
                if reportedSuccess && scenario.changesItems {
                    #expect(!isOld, "\(at), \(mode): the call succeeded but its change was lost")
                }
            }
            if furthest == old {
                sawOld = true
            } else if scenario.changesItems {
                let isNew = shape(furthest, knownRefs: knownRefs) == newShape
                #expect(isNew, "\(at): a mix of old and new items")
                for (ref, item) in furthest where old[ref] != nil {
                    #expect(item.attributes["cdat"] == old[ref]!.attributes["cdat"], "\(at): cdat changed")
                }
                sawNew = true
            } else {
                Issue.record("\(at): \(scenario) changed the items")
            }
            k += 1
        }
        #expect(k > 0, "the operation made no mutating file operation")
        #expect(k < 50)
        #expect(sawOld, "no cut left the old state: the loop did not exercise the operation")
        if scenario.changesItems || scenario.changesPasscode {
            #expect(sawNew, "no cut after the commit point: the durability point was never crossed")
        }
    }
}
