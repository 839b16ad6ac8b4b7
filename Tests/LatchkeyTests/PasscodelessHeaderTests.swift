import Foundation
import Testing
@testable import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport

/// A keychain whose header someone with the device secret but not the passcode replaced by one
/// whose keybag has no passcode (issue 27, finding 11; spec/SECURITY.md §2.5): the device state
/// remembers that the keychain had a passcode, so the open is refused, with a message, before
/// anything is added under the forger's keys.
@Suite struct PasscodelessHeaderTests {
    /// The victim's keychain replaced by a header of the same file UUID, without a passcode,
    /// whose class keys the forger chose (wrapped with the device key alone), and whose base
    /// sequence is the victim's last: no rollback to see.
    static func forge(_ disk: MemoryFileSystem) throws {
        let file = disk.keychainBytes
        let (victim, _, _) = try FileHeader.decode(
            Array(file.prefix(try FileHeader.peekLength(Array(file.prefix(16))))))
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        let keys = try FileKeys(device: device, fileUUID: victim.fileUUID)
        var classKeys: [ProtectionClass: SecretKey] = [:]
        for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly {
            classKeys[pc] = try SecretKey.random()
        }
        let bag = try KeychainStore.wrapKeybag(classKeys, kdf: .none, keys: keys, passcodeKey: nil)
        let state = try #require(try Device.load(path: TestEnv.devicePath, fs: disk).state(fileUUID: victim.fileUUID))
        let forged = FileHeader(
            fileUUID: victim.fileUUID, deviceUUID: victim.deviceUUID, baseSequence: state.newestSequence,
            createdAt: victim.createdAt, keybag: bag)
        disk.setContents(TestEnv.keychainPath, forged.encode(macKey: keys.headerMAC))
        try? disk.remove(TestEnv.keychainPath + ".index")
    }

    static func victim() throws -> MemoryFileSystem {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        try kc.add(contentsOf: [
            NewItem(.genericPassword, attributes: attrs(["acct": "a", "svce": "s"]), data: bytes("secret-a"))
        ])
        kc.close()
        return disk
    }

    @Test func headerWithoutThePasscode_isRefusedAtOpen_withAMessage() throws {
        let disk = try Self.victim()
        try Self.forge(disk)
        let forgedBytes = disk.keychainBytes
        #expect {
            let kc = try openKeychain(on: disk)
            try kc.add(contentsOf: [
                NewItem(
                    .genericPassword, attributes: attrs(["acct": "new", "svce": "s"]),
                    data: bytes("readable by the forger"))
            ])
        } throws: { error in
            guard let e = error as? KeychainError else { return false }
            return e.status == .decode
                && e.message.contains("has no passcode, but this device remembers that it had one")
                && e.message.contains("nothing was read or written")
        }
        #expect(disk.keychainBytes == forgedBytes, "something was written")
    }

    /// The user's own passcode removal is recorded, and the keychain opens as before.
    @Test func passcodeRemovedByTheUser_opens() throws {
        let disk = try Self.victim()
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        _ = try kc.changePasscode(old: TestEnv.passcode, new: nil, kdfLogN: TestEnv.logN)
        kc.close()
        let reopened = try openKeychain(on: disk)
        #expect(!reopened.hasPasscode)
        #expect(try reopened.find(Query(.genericPassword)).map(\.data) == [bytes("secret-a")])
    }

    /// Adopting the file (as after a rollback) is the way to say "I removed it myself".
    @Test func adoptingTheFile_opensIt_andIsRemembered() throws {
        let disk = try Self.victim()
        try Self.forge(disk)
        _ = try openKeychain(on: disk, acceptRollback: true)
        let again = try openKeychain(on: disk)
        #expect(!again.hasPasscode)
    }
}
