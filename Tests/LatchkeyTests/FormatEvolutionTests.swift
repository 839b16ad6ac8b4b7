import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// What the engine does with files from newer writers: record types it does not know, and
/// newer minor or major versions (spec §6.3, §12).
@Suite struct FormatEvolutionTests {
    /// Writes records and headers as this device would, for files the engine cannot make.
    struct Forger {
        let keys: FileKeys
        let header: FileHeader
        let headerSize: Int

        init(_ file: [UInt8]) throws {
            headerSize = try FileHeader.peekLength(file)
            header = try FileHeader.decode(Array(file.prefix(headerSize))).header
            keys = try FileKeys(device: DeviceSecret.decodeFile(TestEnv.deviceFile), fileUUID: header.fileUUID)
        }

        func record(type: UInt8, continues: Bool = false, sequence: UInt64, payload: [UInt8], at offset: Int) -> [UInt8]
        {
            RecordFrame.encode(
                type: type, flags: continues ? FrameHeader.continuesFlag : 0, sequence: sequence, payload: payload,
                offset: UInt64(offset), macKey: keys.recordMAC)
        }

        func header(_ change: (inout FileHeader) -> Void) -> [UInt8] {
            var h = header
            change(&h)
            return h.encode(macKey: keys.headerMAC)
        }
    }

    func keychainWithTwoItems() throws -> (MemoryFileSystem, Keychain, Snapshot) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"))
        try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"))
        return (disk, kc, try kc.snapshot())
    }

    @Test(arguments: [0x80, 0xC3, 0xFF] as [UInt8])
    func ancillaryRecord_isSkippedAndSequenceContinues(type: UInt8) throws {
        let (disk, kc, items) = try keychainWithTwoItems()
        var file = disk.keychainBytes
        let forger = try Forger(file)
        file += forger.record(
            type: type, sequence: kc.localStore!.lastSequence + 1, payload: Array("from a newer writer".utf8),
            at: file.count)
        disk.setContents(TestEnv.keychainPath, file)

        let reopened = try openKeychain(on: disk)
        #expect(reopened.recoveredTailBytes == 0)
        #expect(try reopened.snapshot() == items)
        #expect(reopened.verify().ok)
        try reopened.add(.genericPassword, attributes: attrs(["acct": "carol"]), data: bytes("c"))
        #expect(try openKeychain(on: disk).snapshot().count == 3)
    }

    @Test func ancillaryRecordOpeningAnUnclosedTransaction_isATornTail() throws {
        let (disk, kc, items) = try keychainWithTwoItems()
        let committed = disk.keychainBytes
        let forger = try Forger(committed)
        let file =
            committed
            + forger.record(
                type: 0x80, continues: true, sequence: kc.localStore!.lastSequence + 1, payload: [1, 2, 3],
                at: committed.count)
        let disk2 = disk.clone()
        disk2.setContents(TestEnv.keychainPath, file)
        let reopened = try openKeychain(on: disk2)
        #expect(reopened.recoveredTailBytes == UInt64(file.count - committed.count))
        #expect(disk2.keychainBytes == committed)
        #expect(try reopened.snapshot() == items)
    }

    @Test func ancillaryRecordInsideATransaction_isPartOfIt() throws {
        let (disk, kc, items) = try keychainWithTwoItems()
        var file = disk.keychainBytes
        let forger = try Forger(file)
        let alice = try #require(items.values.first { $0.attributes["acct"] == .string("alice") })
        file += forger.record(
            type: 0x90, continues: true, sequence: kc.localStore!.lastSequence + 1, payload: [], at: file.count)
        file += forger.record(
            type: RecordType.itemDelete.rawValue, sequence: kc.localStore!.lastSequence + 2,
            payload: Array(alice.persistentRef.suffix(16)), at: file.count)
        disk.setContents(TestEnv.keychainPath, file)
        let reopened = try openKeychain(on: disk)
        #expect(try reopened.snapshot().values.map { $0.attributes["acct"] } == [.string("bob")])
    }

    @Test(arguments: [0x00, 0x04, 0x7F] as [UInt8])
    func unknownCriticalRecordType_refusesTheFileAsNeedingANewerVersion(type: UInt8) throws {
        let (disk, kc, _) = try keychainWithTwoItems()
        var file = disk.keychainBytes
        file += try Forger(file).record(
            type: type, sequence: kc.localStore!.lastSequence + 1, payload: [], at: file.count)
        disk.setContents(TestEnv.keychainPath, file)
        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("upgrade") == true, "\(String(describing: error))")
        #expect(disk.keychainBytes == file)
    }

    @Test func sequenceNumberGap_isDamage() throws {
        let (disk, kc, _) = try keychainWithTwoItems()
        var file = disk.keychainBytes
        file += try Forger(file).record(
            type: 0x80, sequence: kc.localStore!.lastSequence + 2, payload: [], at: file.count)
        disk.setContents(TestEnv.keychainPath, file)
        expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(disk.keychainBytes == file)
    }

    @Test func newerMinorVersion_opensReadOnlyAndIsNeverModified() throws {
        let (disk, _, items) = try keychainWithTwoItems()
        let original = disk.keychainBytes
        let forger = try Forger(original)
        let newer = forger.header { $0.minor = 1 }
        #expect(newer.count == forger.headerSize, "same size, so the records' tags still hold")
        // A newer file with an incomplete record at its end: not ours to cut.
        let file = newer + original[forger.headerSize...] + [0, 0, 0, 40, 1, 0]
        disk.setContents(TestEnv.keychainPath, file)

        let kc = try openKeychain(on: disk)
        #expect(try kc.snapshot() == items, "what is understood is read")
        #expect(kc.recoveredTailBytes == 0)
        expectKeychainError(.readOnly) { try kc.add(.genericPassword, attributes: attrs(["acct": "carol"]), data: []) }
        expectKeychainError(.readOnly) { try kc.update(Query(.genericPassword), attributes: attrs(["labl": "x"])) }
        expectKeychainError(.readOnly) { try kc.delete(Query(.genericPassword)) }
        expectKeychainError(.readOnly) { try kc.compact() }
        expectKeychainError(.readOnly) {
            try kc.changePasscode(old: nil, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        }
        #expect(disk.keychainBytes == file)
    }

    @Test func newerMinorVersion_withExtensionBytes_isRead() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk, passcode: TestEnv.passcode)
        let forger = try Forger(disk.keychainBytes)
        disk.setContents(
            TestEnv.keychainPath,
            forger.header {
                $0.minor = 7; $0.extensionBytes = Array("future".utf8)
            })
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(try kc.snapshot().isEmpty)
    }

    @Test func unknownMajorVersion_isRefusedWithUpgradeMessage() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk, passcode: nil)
        let forger = try Forger(disk.keychainBytes)
        let file = forger.header { $0.major = 2 }
        disk.setContents(TestEnv.keychainPath, file)
        let error = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("upgrade") == true)
        #expect(disk.keychainBytes == file)
    }
}
