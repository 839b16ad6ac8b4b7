import Testing
@testable import Latchkey
import LatchkeyTestSupport

import LatchkeyCrypto
import LatchkeyFormat

/// Passcode change (spec §11.6): new class keys for every class whose wrapping changes, item
/// keys rewrapped, the file rewritten so that no keybag of the old passcode survives.
@Suite struct PasscodeChangeTests {
    func keychainWithItems(passcode: [UInt8]?) throws -> (MemoryFileSystem, Keychain, Snapshot) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: passcode)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("a"),
            protection: .whenUnlocked)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "bob", "svce": "mail"]), data: bytes("b"),
            protection: .afterFirstUnlockThisDeviceOnly)
        try kc.add(
            .internetPassword, attributes: attrs(["acct": "carol", "srvr": "example.com"]), data: bytes("c"),
            protection: .always)
        return (disk, kc, try kc.snapshot())
    }

    @Test func changePasscode_oldStopsWorkingNewWorksItemsIntact() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: TestEnv.passcode)
        let before = try headerOf(disk.keychainBytes)
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        #expect(try kc.snapshot() == items, "the instance that changed it stays unlocked")

        let after = try headerOf(disk.keychainBytes)
        #expect(after.fileUUID == before.fileUUID)
        #expect(after.keybag != before.keybag, "the header carries the new keybag")
        for pc in ProtectionClass.allCases {
            let old = before.keybag.entry(for: pc), new = after.keybag.entry(for: pc)
            if pc.isAlwaysAvailable {
                #expect(old == new, "\(pc.code): dk and dku entries are kept byte for byte")
            } else {
                #expect(old?.wrappedKey != new?.wrappedKey, "\(pc.code) is wrapped anew")
            }
        }
        let reopened = try openKeychain(on: disk)
        expectKeychainError(.authFailed) { try reopened.unlock(passcode: TestEnv.passcode) }
        #expect(!reopened.isAvailable(.whenUnlocked))
        try reopened.unlock(passcode: TestEnv.newPasscode)
        #expect(try reopened.snapshot() == items)
        #expect(reopened.verify().ok)
    }

    /// The attack of issue 13 §1: someone who kept a copy of the file from before a passcode
    /// change, and knows the old passcode and the device secret, unwraps the class keys of
    /// that copy and tries them on the items added after the change. The class keys changed,
    /// so no item key added since unwraps with them.
    @Test func oldCopyAndOldPasscode_openNothingAddedAfterTheChange() throws {
        let (disk, kc, _) = try keychainWithItems(passcode: TestEnv.passcode)
        let oldCopy = disk.clone()
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "added-later"]), data: bytes("new secret"),
            protection: .whenUnlocked)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "added-later-cku"]), data: bytes("new secret"),
            protection: .afterFirstUnlockThisDeviceOnly)

        let old = try openKeychain(on: oldCopy)
        try old.unlock(passcode: TestEnv.passcode)
        let current = try openKeychain(on: disk)
        try current.unlock(passcode: TestEnv.newPasscode)
        for account in ["added-later", "added-later-cku"] {
            let (_, slot) = try #require(
                current.localStore!.slots().first { _, s in
                    (try? current.localStore!.read(s).attributes["acct"]) == .string(account)
                })
            let record = try disk.read(
                try disk.openReadOnly(TestEnv.keychainPath), offset: slot.offset, count: Int(slot.recordSize))
            let payload = try ItemPutPayload.decode(record[20..<(record.count - 16)])
            let oldClassKey = try old.localStore!.classKey(slot.protection)
            #expect(throws: (any Error).self, "\(account): an old class key opens an item added after the change") {
                _ = try payload.open(classKey: oldClassKey, fileUUID: current.localStore!.fileUUID)
            }
        }
    }

    /// Issue 13 §1: a keychain created without a passcode and given one later must not keep
    /// device-wrapped copies of the passcode classes anywhere in the file.
    @Test func givingAPasscode_leavesNoDeviceWrappedPasscodeClassInTheFile() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: nil)
        try kc.changePasscode(old: nil, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        try kc.add(.genericPassword, attributes: attrs(["acct": "after"]), data: bytes("s"), protection: .whenUnlocked)
        let header = try headerOf(disk.keychainBytes)
        for e in header.keybag.entries where !e.protectionClass.isAlwaysAvailable {
            #expect(e.wrap == .passcode, "\(e.protectionClass.code) is still wrapped by the device key alone")
        }
        // No record in the file carries another keybag.
        let locked = try openKeychain(on: disk)
        #expect(!locked.isAvailable(.whenUnlocked))
        expectKeychainError(.interactionNotAllowed) {
            _ = try locked.find(Query(.genericPassword, attrs(["acct": "after"])))
        }
        try locked.unlock(passcode: TestEnv.newPasscode)
        #expect(try locked.snapshot().count == items.count + 1)
    }

    @Test func removingThePasscode_deletesAkpuItemsAndOpensTheRestWithoutOne() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: TestEnv.passcode)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "pinned"]), data: bytes("p"),
            protection: .whenPasscodeSetThisDeviceOnly)
        expectKeychainError(.param, "nothing to remove on a keychain without one") {
            try createKeychain(on: try makeDisk(), passcode: nil).changePasscode(old: nil, new: nil)
        }
        let deleted = try kc.changePasscode(old: TestEnv.passcode, new: nil, kdfLogN: TestEnv.logN)
        #expect(deleted == 1)
        #expect(!kc.hasPasscode)
        #expect(try kc.snapshot() == items)
        let reopened = try openKeychain(on: disk)
        #expect(!reopened.hasPasscode)
        #expect(try reopened.snapshot() == items, "every item but the akpu one, without a passcode")
        expectKeychainError(.notAvailable) {
            try reopened.add(
                .genericPassword, attributes: attrs(["acct": "x"]), data: [], protection: .whenPasscodeSetThisDeviceOnly
            )
        }
    }

    /// An instance that had the keychain unlocked when another process changed the passcode
    /// must not go on writing with the old class keys: it finds the new keybag and is locked.
    @Test func anotherInstance_isLockedAfterTheChange_andNeverWritesWithOldKeys() throws {
        let (disk, kc, _) = try keychainWithItems(passcode: TestEnv.passcode)
        let other = try openKeychain(on: disk)
        try other.unlock(passcode: TestEnv.passcode)
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        expectKeychainError(.interactionNotAllowed) {
            _ = try other.find(Query(.genericPassword, attrs(["acct": "alice"])))
        }
        expectKeychainError(.interactionNotAllowed) {
            try other.add(
                .genericPassword, attributes: attrs(["acct": "late"]), data: bytes("l"), protection: .whenUnlocked)
        }
        try other.unlock(passcode: TestEnv.newPasscode)
        try other.add(
            .genericPassword, attributes: attrs(["acct": "late"]), data: bytes("l"), protection: .whenUnlocked)
        let fresh = try openKeychain(on: disk)
        try fresh.unlock(passcode: TestEnv.newPasscode)
        #expect(try fresh.find(Query(.genericPassword, attrs(["acct": "late"]))).first?.data == bytes("l"))
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
        expectKeychainError(.param, "a current passcode given to a keychain without one") {
            try createKeychain(on: try makeDisk(), passcode: nil).changePasscode(
                old: TestEnv.passcode, new: TestEnv.newPasscode,
                kdfLogN: TestEnv.logN)
        }
        #expect(disk.keychainBytes == before)
        try openKeychain(on: disk).unlock(passcode: TestEnv.passcode)
    }

    @Test func changePasscode_onKeychainWithoutPasscode_addsPasscodeAndAkpu() throws {
        let (disk, kc, items) = try keychainWithItems(passcode: nil)
        expectKeychainError(.notAvailable) {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": "dan"]), data: [],
                protection: .whenPasscodeSetThisDeviceOnly)
        }
        try kc.changePasscode(old: nil, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        #expect(kc.hasPasscode)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "dan"]), data: bytes("d"),
            protection: .whenPasscodeSetThisDeviceOnly)

        let reopened = try openKeychain(on: disk)
        #expect(reopened.hasPasscode)
        #expect(!reopened.isAvailable(.whenUnlocked), "a passcode now guards ak")
        #expect(!reopened.isAvailable(.afterFirstUnlockThisDeviceOnly))
        #expect(reopened.isAvailable(.always))
        #expect(try reopened.find(Query(.internetPassword)).map(\.data) == [bytes("c")], "dk items stay readable")
        expectKeychainError(.interactionNotAllowed) { _ = try reopened.find(Query(.genericPassword)) }
        try reopened.unlock(passcode: TestEnv.newPasscode)
        var expected = items
        let akpu = try #require(
            try reopened.find(Query(.genericPassword, protection: .whenPasscodeSetThisDeviceOnly)).first)
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

/// The header of a keychain file's bytes.
func headerOf(_ file: [UInt8]) throws -> FileHeader {
    let length = try FileHeader.peekLength(Array(file.prefix(16)))
    return try FileHeader.decode(Array(file.prefix(length))).header
}
