import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import Testing
@testable import Latchkey
import LatchkeyFormat

/// Creating and opening keychains; passcodes; device binding (spec §2, §10.1).
@Suite struct KeychainLifecycleTests {
    @Test func create_withPasscode_isUnlockedAndReopensLocked() throws {
        let disk = try makeDisk()
        let created = try createKeychain(on: disk)
        #expect(created.hasPasscode)
        #expect(ProtectionClass.allCases.allSatisfy { created.isAvailable($0) }, "create leaves the keychain unlocked")
        try created.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("s3cret"))

        let reopened = try openKeychain(on: disk)
        #expect(reopened.hasPasscode)
        #expect(reopened.recoveredTailBytes == 0)
        for pc in ProtectionClass.allCases {
            #expect(reopened.isAvailable(pc) == pc.isAlwaysAvailable, "\(pc.code) after open")
        }
        try reopened.unlock(passcode: TestEnv.passcode)
        #expect(ProtectionClass.allCases.allSatisfy { reopened.isAvailable($0) })
        #expect(try reopened.find(Query(.genericPassword)).map(\.data) == [bytes("s3cret")])
    }

    /// Issue 13 §5: new keychains use scrypt N = 2^17, r = 8, p = 1 unless told otherwise.
    @Test func newKeychain_defaultsToScryptAt2To17() throws {
        #expect(KDFParameters.defaultLogN == 17)
        let disk = try makeDisk()
        _ = try Keychain.create(
            path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, passcode: TestEnv.passcode, fs: disk)
        let kdf = try openKeychain(on: disk).localStore!.kdf
        #expect(kdf.logN == 17 && kdf.r == 8 && kdf.p == 1)
    }

    @Test func unlock_withWrongPasscode_throwsAuthFailedAndStaysLocked() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let kc = try openKeychain(on: disk)
        expectKeychainError(.authFailed) { try kc.unlock(passcode: TestEnv.wrongPasscode) }
        expectKeychainError(.authFailed) { try kc.unlock(passcode: []) }
        #expect(!kc.isAvailable(.whenUnlocked))
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(kc.isAvailable(.whenUnlocked))
    }

    @Test func keychainWithoutPasscode_opensWithEveryClassButAkpu() throws {
        let disk = try makeDisk()
        let created = try createKeychain(on: disk, passcode: nil)
        #expect(!created.hasPasscode)
        try created.add(
            .genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("one"), protection: .whenUnlocked)
        try created.add(
            .genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("two"),
            protection: .afterFirstUnlockThisDeviceOnly)

        let kc = try openKeychain(on: disk)
        #expect(!kc.hasPasscode)
        for pc in ProtectionClass.allCases {
            #expect(kc.isAvailable(pc) == (pc != .whenPasscodeSetThisDeviceOnly), "\(pc.code)")
        }
        #expect(try kc.find(Query(.genericPassword)).count == 2)
        kc.lock()
        #expect(try kc.find(Query(.genericPassword)).count == 2, "lock() is meaningless without a passcode")
    }

    @Test func create_overAnExistingKeychain_throwsDuplicateKeychainAndLeavesItUnchanged() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("s3cret"))
        let before = disk.keychainBytes
        let files = disk.listFiles()

        expectKeychainError(.duplicateKeychain) { _ = try createKeychain(on: disk) }
        expectKeychainError(.duplicateKeychain) { _ = try createKeychain(on: disk, passcode: nil) }
        #expect(disk.keychainBytes == before)
        #expect(disk.listFiles() == files)
        let reopened = try openKeychain(on: disk)
        try reopened.unlock(passcode: TestEnv.passcode)
        #expect(try reopened.find(Query(.genericPassword)).count == 1)
    }

    @Test func create_overAnyExistingFile_throwsDuplicateKeychainAndLeavesItUnchanged() throws {
        let disk = try makeDisk()
        disk.setContents(TestEnv.keychainPath, bytes("not a keychain, but mine"))
        expectKeychainError(.duplicateKeychain) { _ = try createKeychain(on: disk) }
        #expect(disk.keychainBytes == bytes("not a keychain, but mine"))
    }

    @Test func open_whenNoFileExists_throwsIO() throws {
        let disk = try makeDisk()
        expectKeychainError(.io) { _ = try openKeychain(on: disk) }
    }

    @Test func open_notAKeychain_throwsDecode() throws {
        let disk = try makeDisk()
        disk.setContents(TestEnv.keychainPath, Array(repeating: 0x41, count: 600))
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        disk.setContents(TestEnv.keychainPath, [])
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
    }

    @Test func open_withAnotherDevicesSecret_throwsAuthFailed() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk)
        let otherDevice = "/device/other.secret"
        disk.setContents(otherDevice, TestEnv.otherDeviceFile)
        let error = expectKeychainError(.authFailed) {
            _ = try Keychain.open(path: TestEnv.keychainPath, devicePath: otherDevice, fs: disk)
        }
        #expect(error?.message.contains("another device") == true)
    }

    @Test func create_onRealDisk_writesDeviceSecret0600AndStateDirectory0700() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let device = dir.path + "/device.secret"
        let kc = try Keychain.create(
            path: dir.path + "/login.keychain", devicePath: device, passcode: nil, kdfLogN: TestEnv.logN)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("s3cret"))
        #expect(try PosixFileSystem.shared.permissions(device) == 0o600)
        #expect(try PosixFileSystem.shared.permissions(device + ".state") == 0o700)
        #expect(try PosixFileSystem.shared.permissions(dir.path + "/login.keychain") == 0o600)
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o601] as [UInt32])
    func open_withDeviceSecretReadableByOthers_refusesWithIO(mode: UInt32) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let keychain = dir.path + "/login.keychain"
        let device = dir.path + "/device.secret"
        _ = try Keychain.create(path: keychain, devicePath: device, passcode: TestEnv.passcode, kdfLogN: TestEnv.logN)
        #expect(chmod(device, mode_t(mode)) == 0)

        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(error?.message.contains("chmod 600") == true, "the message says how to fix it")
        expectKeychainError(.io) { _ = try Device.load(path: device) }
        expectKeychainError(.io, "create must not adopt an unsafe device secret either") {
            _ = try Keychain.create(
                path: dir.path + "/second.keychain", devicePath: device, passcode: nil, kdfLogN: TestEnv.logN)
        }

        #expect(chmod(device, 0o600) == 0)
        _ = try Keychain.open(path: keychain, devicePath: device)
    }
}
