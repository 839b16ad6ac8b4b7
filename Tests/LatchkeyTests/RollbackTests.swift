import Testing
@testable import Latchkey

/// An older copy of the file put back in place is detected (spec §13).
@Suite struct RollbackTests {
    @Test func open_ofOlderCopyPutBack_throwsDecodeRolledBack_untilAccepted() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("old password"))
        let oldCopy = disk.keychainBytes
        let oldItems = try kc.snapshot()
        try kc.update(Query(.genericPassword), attributes: [:], data: bytes("new password"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"))

        disk.setContents(TestEnv.keychainPath, oldCopy)
        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("rolled back") == true, "\(String(describing: error))")
        #expect(disk.keychainBytes == oldCopy, "detection changes nothing")
        // Still refused on the next try: nothing was adopted silently.
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }

        let adopted = try openKeychain(on: disk, acceptRollback: true)
        #expect(try adopted.snapshot() == oldItems)
        let normal = try openKeychain(on: disk)
        #expect(try normal.snapshot() == oldItems)
        // And it is a working keychain again.
        try normal.add(.genericPassword, attributes: attrs(["acct": "carol"]), data: bytes("c"))
        #expect(try openKeychain(on: disk).snapshot().count == 2)
    }

    /// A file cut inside a record the device already counts as committed is a rollback, and
    /// refusing it must not first cut off the tail (spec §10.5): every byte stays.
    @Test func open_ofFileCutInsideACommittedRecord_refusesAsRolledBack_withoutTruncating() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"))
        let committed = disk.keychainBytes.count
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"))
        let full = disk.keychainBytes
        let cut = Array(full.prefix(committed + (full.count - committed) / 2))
        disk.setContents(TestEnv.keychainPath, cut)
        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("rolled back") == true, "\(String(describing: error))")
        #expect(disk.keychainBytes == cut, "a refused file keeps every byte, its tail included")
        // Adopting it deliberately then recovers the committed part.
        let adopted = try openKeychain(on: disk, acceptRollback: true)
        #expect(adopted.recoveredTailBytes == UInt64(cut.count - committed))
        #expect(try adopted.find(Query(.genericPassword)).map(\.data) == [bytes("a")])
    }

    @Test func open_ofPreCompactionCopyPutBackAfterCompaction_throwsDecodeRolledBack() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"))
        try kc.delete(Query(.genericPassword, attrs(["acct": "alice"])))
        let preCompaction = disk.keychainBytes
        let (before, after) = try kc.compact()
        #expect(after < before)

        disk.setContents(TestEnv.keychainPath, preCompaction)
        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("rolled back") == true)
        let adopted = try openKeychain(on: disk, acceptRollback: true)
        try adopted.unlock(passcode: TestEnv.passcode)
        #expect(try adopted.find(Query(.genericPassword)).map(\.data) == [bytes("b")])
        _ = try openKeychain(on: disk)
    }

    @Test func open_ofOlderCopyAfterPasscodeChange_throwsDecodeRolledBack() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        let oldCopy = disk.keychainBytes
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        // Putting back the file from before the change must not bring the old passcode back quietly.
        disk.setContents(TestEnv.keychainPath, oldCopy)
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
    }

    @Test func open_ofCurrentFileCopiedAway_isNotARollback() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"))
        let copy = disk.keychainBytes
        disk.setContents(TestEnv.keychainPath, copy)
        #expect(try openKeychain(on: disk).snapshot().count == 1)
    }
}
