#if canImport(Glibc)
    import Glibc
#endif
import Testing
@testable import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport

/// Attacks by someone who can write the keychain file and holds the device secret (issue 13
/// §2, §3): forged keybag changes, older records copied over newer ones, older copies renamed
/// into place under a long-lived reader.
@Suite struct FileAttackTests {
    /// Issue 13 §2: a keybag-change record with no passcode and class keys of the attacker's
    /// choosing, tagged with the device-derived record MAC key (which the attacker has), used to
    /// make the passcode silently disappear. It is refused, whatever it holds.
    @Test func forgedKeybagChange_withTheDeviceSecretAlone_isRefused() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"), protection: .whenUnlocked)

        // The attacker's side: the device secret and the file, nothing else.
        let device = try DeviceSecret.decodeFile(TestEnv.deviceFile)
        var file = disk.keychainBytes
        let header = try headerOf(file)
        let keys = try FileKeys(device: device, fileUUID: header.fileUUID)
        var entries: [KeybagEntry] = []
        for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly {
            entries.append(
                KeybagEntry(
                    protectionClass: pc, wrap: .device,
                    wrappedKey: try Crypto.wrap(try SecretKey.random(), with: keys.deviceWrap)))
        }
        let forged = Keybag(kdf: .none, entries: entries)
        let last = try openKeychain(on: disk.clone()).localStore!.lastSequence
        file += RecordFrame.encode(
            type: RecordType.keybagChange.rawValue, flags: 0, sequence: last + 1,
            payload: forged.encode(), offset: UInt64(file.count), macKey: keys.recordMAC)
        disk.setContents(TestEnv.keychainPath, file)

        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("keybag record") == true, "\(String(describing: error))")
        #expect(disk.keychainBytes == file, "a refused file keeps every byte")
    }

    /// Overwrites the put that `file` ends with (from `firstEnd`) with the one record before it
    /// (from the end of the header): the item's older, authentic put, of the same size.
    static func copyOlderPutOverTheNewer(_ disk: MemoryFileSystem, file: [UInt8], firstEnd: Int) throws {
        let header = try FileHeader.peekLength(Array(file.prefix(16)))
        let older = Array(file[header..<firstEnd])
        #expect(older.count == file.count - firstEnd, "both put records have the same size")
        var attacked = file
        attacked.replaceSubrange(firstEnd..<file.count, with: older)
        disk.setContents(TestEnv.keychainPath, attacked)
    }

    /// Issue 13 §3: after a long-lived reader scanned the file, the newest put record of an item
    /// is overwritten in place with that item's older (authentic) put record. The reader must
    /// refuse it, not return the superseded secret.
    @Test func olderRecordCopiedOverTheNewer_isRefusedByALongLivedReader() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        // The older put and the newer one back to back, as the copy below needs (a history record,
        // spec §7.7, would stand between them; the attack is on put records either way).
        kc.localStore!.historyPolicy = .off
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("secret-ONE"), protection: .always)
        let firstEnd = disk.keychainBytes.count
        try kc.update(Query(.genericPassword, attrs(["acct": "alice"])), attributes: [:], data: bytes("secret-TWO"))
        let file = disk.keychainBytes
        let reader = try openKeychain(on: disk)
        #expect(try reader.find(Query(.genericPassword)).map(\.data) == [bytes("secret-TWO")])

        try Self.copyOlderPutOverTheNewer(disk, file: file, firstEnd: firstEnd)
        expectKeychainError(.decode) { _ = try reader.find(Query(.genericPassword)) }
        #expect(!reader.verify().ok)
    }

    /// Issue 13 §3: an older copy of the file renamed into place while a long-lived handle (an
    /// agent) holds the keychain is refused as a rollback, not served or written on top of;
    /// also when the device state was deleted (the handle remembers what it has seen).
    @Test(arguments: [false, true])
    func olderCopyRenamedIntoPlace_isRefusedByALongLivedHandle(deleteState: Bool) throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"), protection: .always)
        let oldCopy = disk.keychainBytes
        let handle = try openKeychain(on: disk)
        try handle.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"), protection: .always)
        #expect(try handle.find(Query(.genericPassword)).count == 2)

        disk.setContents("/keychains/old-copy", oldCopy)
        try disk.rename("/keychains/old-copy", TestEnv.keychainPath)
        if deleteState {
            for name in disk.listFiles() where name.hasPrefix(TestEnv.stateDirectory + "/") { try disk.remove(name) }
        }
        let error = expectKeychainError(.decode) { _ = try handle.find(Query(.genericPassword)) }
        #expect(error?.message.contains("rolled back") == true, "\(String(describing: error))")
        expectKeychainError(.decode) {
            try handle.add(
                .genericPassword, attributes: attrs(["acct": "carol"]), data: bytes("c"), protection: .always)
        }
        #expect(disk.keychainBytes == oldCopy, "nothing was written on top of the old copy")
    }
}
