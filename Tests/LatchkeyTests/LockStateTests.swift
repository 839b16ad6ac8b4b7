import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// Protection classes and lock states (spec §5.3).
@Suite struct LockStateTests {
    static let locked: [ProtectionClass] = [
        .whenUnlocked, .afterFirstUnlock, .whenUnlockedThisDeviceOnly,
        .afterFirstUnlockThisDeviceOnly, .whenPasscodeSetThisDeviceOnly
    ]
    static let droppedByLock: [ProtectionClass] = [
        .whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly
    ]

    /// A keychain with a passcode holding one generic password per protection class, the
    /// account named after the class code.
    func keychainWithOneItemPerClass() throws -> MemoryFileSystem {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        for pc in ProtectionClass.allCases {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": pc.code]), data: bytes("secret-\(pc.code)"), protection: pc
            )
        }
        return disk
    }

    func expectReadable(_ kc: Keychain, _ pc: ProtectionClass, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let found = try kc.find(Query(.genericPassword, attrs(["acct": pc.code]), protection: pc))
            #expect(found.map(\.data) == [bytes("secret-\(pc.code)")], sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(pc.code) should be readable: \(error)", sourceLocation: sourceLocation)
        }
    }

    func expectLocked(_ kc: Keychain, _ pc: ProtectionClass, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!kc.isAvailable(pc), sourceLocation: sourceLocation)
        expectKeychainError(.interactionNotAllowed, "find \(pc.code)", sourceLocation: sourceLocation) {
            _ = try kc.find(Query(.genericPassword, protection: pc))
        }
        expectKeychainError(.interactionNotAllowed, "find \(pc.code) by unique key", sourceLocation: sourceLocation) {
            _ = try kc.find(Query(.genericPassword, attrs(["acct": pc.code])))
        }
    }

    @Test func beforeUnlock_passcodeClassesAreRefusedAndAlwaysClassesWork() throws {
        let disk = try keychainWithOneItemPerClass()
        let kc = try openKeychain(on: disk)
        for pc in Self.locked {
            expectLocked(kc, pc)
            expectKeychainError(.interactionNotAllowed, "add \(pc.code)") {
                try kc.add(.genericPassword, attributes: attrs(["acct": "new-\(pc.code)"]), data: [], protection: pc)
            }
            expectKeychainError(.interactionNotAllowed, "update \(pc.code)") {
                try kc.update(Query(.genericPassword, attrs(["acct": pc.code])), attributes: attrs(["labl": "x"]))
            }
        }
        expectKeychainError(.interactionNotAllowed, "a dk item cannot be moved into a locked class") {
            try kc.update(
                Query(.genericPassword, attrs(["acct": "dk"]), protection: .always), attributes: [:],
                protection: .whenUnlocked)
        }
        for pc in [ProtectionClass.always, .alwaysThisDeviceOnly] {
            #expect(kc.isAvailable(pc))
            expectReadable(kc, pc)
            try kc.add(.genericPassword, attributes: attrs(["acct": "new-\(pc.code)"]), data: [], protection: pc)
            try kc.update(
                Query(.genericPassword, attrs(["acct": "new-\(pc.code)"]), protection: pc),
                attributes: attrs(["labl": "x"]))
        }
        // Delete needs to read the candidates, so a query over locked items is refused too.
        expectKeychainError(.interactionNotAllowed) { try kc.delete(Query(.genericPassword)) }
        #expect(try openKeychain(on: disk).find(Query(.genericPassword, protection: .always)).count == 2)
    }

    @Test func afterUnlock_everyClassIsUsable() throws {
        let disk = try keychainWithOneItemPerClass()
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        for pc in ProtectionClass.allCases {
            #expect(kc.isAvailable(pc))
            expectReadable(kc, pc)
            try kc.add(.genericPassword, attributes: attrs(["acct": "new-\(pc.code)"]), data: [], protection: pc)
        }
        #expect(try kc.find(Query(.genericPassword)).count == 14)
    }

    @Test func lock_dropsWhenUnlockedClassesButAfterFirstUnlockStaysReadable() throws {
        let disk = try keychainWithOneItemPerClass()
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        kc.lock()
        for pc in Self.droppedByLock { expectLocked(kc, pc) }
        for pc in [ProtectionClass.afterFirstUnlock, .afterFirstUnlockThisDeviceOnly, .always, .alwaysThisDeviceOnly] {
            #expect(kc.isAvailable(pc))
            expectReadable(kc, pc)
        }
        try kc.add(.genericPassword, attributes: attrs(["acct": "after-lock"]), data: [], protection: .afterFirstUnlock)
        // Unlocking again restores everything.
        try kc.unlock(passcode: TestEnv.passcode)
        for pc in ProtectionClass.allCases { expectReadable(kc, pc) }
    }

    @Test func reopening_dropsAfterFirstUnlockClasses() throws {
        let disk = try keychainWithOneItemPerClass()
        let first = try openKeychain(on: disk)
        try first.unlock(passcode: TestEnv.passcode)
        first.lock()
        expectReadable(first, .afterFirstUnlock)

        // A new instance is a reboot: ck and cku need the passcode again.
        let second = try openKeychain(on: disk)
        expectLocked(second, .afterFirstUnlock)
        expectLocked(second, .afterFirstUnlockThisDeviceOnly)
        expectReadable(second, .always)
    }

    @Test func akpu_onKeychainWithoutPasscode_throwsNotAvailable() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        let file = disk.keychainBytes
        expectKeychainError(.notAvailable) {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": "alice"]), data: [],
                protection: .whenPasscodeSetThisDeviceOnly)
        }
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: [], protection: .whenUnlocked)
        expectKeychainError(.notAvailable, "moving an item into akpu") {
            try kc.update(Query(.genericPassword), attributes: [:], protection: .whenPasscodeSetThisDeviceOnly)
        }
        #expect(!kc.isAvailable(.whenPasscodeSetThisDeviceOnly))
        #expect(disk.keychainBytes.count > file.count)
        #expect(try kc.find(Query(.genericPassword)).map { $0.protection } == [.whenUnlocked])
    }
}
