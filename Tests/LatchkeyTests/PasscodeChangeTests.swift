import Testing
@testable import Latchkey

/// Passcode change: one keybag record, class keys rewrapped, items untouched (spec §11.6).
@Suite struct PasscodeChangeTests {
    func keychainWithItems(passcode: [UInt8]?) throws -> (MemoryFileSystem, Keychain, Snapshot) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: passcode)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("a"), protection: .whenUnlocked)
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob", "svce": "mail"]), data: bytes("b"), protection: .afterFirstUnlockThisDeviceOnly)
        try kc.add(.internetPassword, attributes: attrs(["acct": "carol", "srvr": "example.com"]), data: bytes("c"), protection: .always)
        return (disk, kc, try kc.snapshot())
    }

    @Test func changePasscode_oldStopsWorkingNewWorksItemsIntact() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: TestEnv.passcode)
        let before = disk.keychainBytes
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        #expect(try kc.snapshot() == items, "the instance that changed it stays unlocked")

        let appended = Array(disk.keychainBytes[before.count...])
        #expect(Array(disk.keychainBytes.prefix(before.count)) == before, "nothing before the end is rewritten")
        let frame = try FrameHeader.decode(appended[0..<FormatConstants.frameHeaderSize])
        #expect(frame.type == RecordType.keybagChange.rawValue)
        #expect(frame.recordSize == appended.count, "one keybag-change record")

        let reopened = try openKeychain(on: disk)
        expectKeychainError(.authFailed) { try reopened.unlock(passcode: TestEnv.passcode) }
        #expect(!reopened.isAvailable(.whenUnlocked))
        try reopened.unlock(passcode: TestEnv.newPasscode)
        #expect(try reopened.snapshot() == items)
        #expect(reopened.verify().ok)
    }

    @Test func changePasscode_withWrongOldPasscode_throwsAuthFailedAndWritesNothing() throws {
        let (disk, kc, _) = try keychainWithItems(passcode: TestEnv.passcode)
        let before = disk.keychainBytes
        expectKeychainError(.authFailed) {
            try kc.changePasscode(old: TestEnv.wrongPasscode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        }
        expectKeychainError(.authFailed, "the old passcode is required when there is one") {
            try kc.changePasscode(old: nil, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        }
        expectKeychainError(.param) { try kc.changePasscode(old: TestEnv.passcode, new: [], kdfLogN: TestEnv.logN) }
        #expect(disk.keychainBytes == before)
        try openKeychain(on: disk).unlock(passcode: TestEnv.passcode)
    }

    @Test func changePasscode_onKeychainWithoutPasscode_addsPasscodeAndAkpu() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: nil)
        expectKeychainError(.notAvailable) {
            try kc.add(.genericPassword, attributes: attrs(["acct": "dan"]), data: [], protection: .whenPasscodeSetThisDeviceOnly)
        }
        try kc.changePasscode(old: nil, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        #expect(kc.hasPasscode)
        try kc.add(.genericPassword, attributes: attrs(["acct": "dan"]), data: bytes("d"), protection: .whenPasscodeSetThisDeviceOnly)

        let reopened = try openKeychain(on: disk)
        #expect(reopened.hasPasscode)
        #expect(!reopened.isAvailable(.whenUnlocked), "a passcode now guards ak")
        #expect(!reopened.isAvailable(.afterFirstUnlockThisDeviceOnly))
        #expect(reopened.isAvailable(.always))
        #expect(try reopened.find(Query(.internetPassword)).map(\.data) == [bytes("c")], "dk items stay readable")
        expectKeychainError(.interactionNotAllowed) { _ = try reopened.find(Query(.genericPassword)) }
        try reopened.unlock(passcode: TestEnv.newPasscode)
        var expected = items
        let akpu = try #require(try reopened.find(Query(.genericPassword, protection: .whenPasscodeSetThisDeviceOnly)).first)
        expected[akpu.persistentRef] = akpu
        #expect(try reopened.snapshot() == expected)
        #expect(akpu.data == bytes("d"))
    }

    @Test func changePasscode_seenByAnotherOpenInstance() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: TestEnv.passcode)
        let other = try openKeychain(on: disk)
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        expectKeychainError(.authFailed) { try other.unlock(passcode: TestEnv.passcode) }
        try other.unlock(passcode: TestEnv.newPasscode)
        #expect(try other.snapshot() == items)
    }

    @Test func changePasscode_twice_thenCompaction_keepsOnlyLatestPasscode() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: TestEnv.passcode)
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        try kc.changePasscode(old: TestEnv.newPasscode, new: TestEnv.wrongPasscode, kdfLogN: TestEnv.logN)
        try kc.compact()
        let reopened = try openKeychain(on: disk)
        expectKeychainError(.authFailed) { try reopened.unlock(passcode: TestEnv.passcode) }
        expectKeychainError(.authFailed) { try reopened.unlock(passcode: TestEnv.newPasscode) }
        try reopened.unlock(passcode: TestEnv.wrongPasscode)
        #expect(try reopened.snapshot() == items)
    }
}
