import Foundation
import Testing
@testable import Latchkey

/// `Keychain.open(…, unlockingWith:)` derives the passcode key on another thread while the file
/// is read; the key is used only when the current keybag (which a passcode change replaces by a
/// keybag record, spec §4, §11.6) has the KDF parameters it was derived with.
@Suite struct OpenUnlockingTests {
    func made(passcode: [UInt8]?) throws -> (TemporaryDirectory, String, String) {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/login.keychain", device = dir.path + "/device.secret"
        let kc = try Keychain.create(path: path, devicePath: device, passcode: passcode, kdfLogN: TestEnv.logN)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "ak"]), data: bytes("secret"), protection: .whenUnlocked)
        return (dir, path, device)
    }

    func secret(_ kc: Keychain) throws -> [UInt8]? {
        try kc.find(Query(.genericPassword, attrs(["acct": "ak"]))).first?.data
    }

    @Test func rightPasscode_unlocksWhileOpening() throws {
        let (dir, path, device) = try made(passcode: TestEnv.passcode)
        defer { dir.remove() }
        let kc = try Keychain.open(path: path, devicePath: device, unlockingWith: TestEnv.passcode)
        #expect(kc.isAvailable(.whenUnlocked))
        #expect(try secret(kc) == bytes("secret"))
    }

    @Test func wrongPasscode_isAuthFailed_andCountedOnce() throws {
        let (dir, path, device) = try made(passcode: TestEnv.passcode)
        defer { dir.remove() }
        expectKeychainError(.authFailed) {
            _ = try Keychain.open(path: path, devicePath: device, unlockingWith: TestEnv.wrongPasscode)
        }
        let kc = try Keychain.open(path: path, devicePath: device)
        #expect(try kc.localStore!.device.state(fileUUID: kc.localStore!.fileUUID)?.failedAttempts == 1)
    }

    @Test func afterAPasscodeChange_theKeybagRecordDecides() throws {
        let (dir, path, device) = try made(passcode: TestEnv.passcode)
        defer { dir.remove() }
        let kc = try Keychain.open(path: path, devicePath: device)
        try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        // The key derived from the first keybag must not be used.
        expectKeychainError(.authFailed) {
            _ = try Keychain.open(path: path, devicePath: device, unlockingWith: TestEnv.passcode)
        }
        #expect(
            try secret(try Keychain.open(path: path, devicePath: device, unlockingWith: TestEnv.newPasscode))
                == bytes("secret"))
        try kc.compact()  // now the header holds the new keybag
        #expect(
            try secret(try Keychain.open(path: path, devicePath: device, unlockingWith: TestEnv.newPasscode))
                == bytes("secret"))
    }

    /// Issue 13 §2: a passcode given for a keychain that has none is an error, never ignored
    /// (a keychain that lost its passcode may have been replaced by someone else's).
    @Test func keychainWithoutPasscode_refusesAGivenPasscode() throws {
        let (dir, path, device) = try made(passcode: nil)
        defer { dir.remove() }
        let error = expectKeychainError(.param) {
            _ = try Keychain.open(path: path, devicePath: device, unlockingWith: bytes("anything"))
        }
        #expect(error?.message.contains("has no passcode") == true)
        expectKeychainError(.param) {
            try Keychain.open(path: path, devicePath: device).unlock(passcode: bytes("anything"))
        }
        #expect(try secret(try Keychain.open(path: path, devicePath: device)) == bytes("secret"))
    }
}
