import Testing
@testable import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport

/// A full verification checks every history record as spec/FORMAT.md §7.7 says: well-formed,
/// and, when its embedded put's class key is available, decrypted and valid as an item is
/// (§8.3, §8.4). A history record is never applied, so one that fails leaves the keychain
/// opening and its live items reading; a compaction refuses a malformed one.
@Suite struct HistoryVerifyTests {
    /// Where a record is in the file, and what it holds.
    struct Record {
        var offset: Int
        var frame: FrameHeader
        var payload: [UInt8]
    }

    static func records(_ file: [UInt8]) throws -> [Record] {
        var offset = try FileHeader.peekLength(Array(file.prefix(16)))
        var out: [Record] = []
        while offset < file.count {
            let frame = try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize])
            out.append(
                Record(
                    offset: offset, frame: frame,
                    payload: Array(
                        file[
                            offset + FormatConstants.frameHeaderSize..<offset + frame.recordSize
                                - FormatConstants.frameTagSize])))
            offset += frame.recordSize
        }
        return out
    }

    /// A keychain with a passcode where alice was updated (a kind-1 history record) and bob
    /// deleted (kind 2), both whenUnlocked; carol is live and untouched. The store keeps history
    /// whatever the environment says.
    static func keychainWithHistory() throws -> MemoryFileSystem {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        kc.localStore!.historyPolicy = .standard
        for name in ["alice", "bob", "carol"] {
            try kc.add(
                .genericPassword, attributes: attrs(["acct": name, "svce": "history"]), data: bytes("\(name)-1"),
                protection: .whenUnlocked)
        }
        try kc.update(Query(.genericPassword, attrs(["acct": "alice"])), attributes: [:], data: bytes("alice-2"))
        try kc.delete(Query(.genericPassword, attrs(["acct": "bob"])))
        return disk
    }

    /// The file's history records, in file order.
    static func historyRecords(_ disk: MemoryFileSystem) throws -> [Record] {
        try records(disk.keychainBytes).filter { $0.frame.type == RecordType.history.rawValue }
    }

    /// Replaces the payload of `record` by `change(payload)` (the same length), its tag computed
    /// again with the record MAC key, as someone holding the device secret (not the passcode)
    /// can; returns the file written.
    @discardableResult
    static func forge(_ disk: MemoryFileSystem, _ record: Record, _ change: (inout [UInt8]) -> Void) throws -> [UInt8] {
        var file = disk.keychainBytes
        let keys = try FileKeys(
            device: try DeviceSecret.decodeFile(TestEnv.deviceFile), fileUUID: headerOf(file).fileUUID)
        var payload = record.payload
        change(&payload)
        #expect(payload.count == record.payload.count)
        let reframed = RecordFrame.encode(
            type: record.frame.type, flags: record.frame.flags, sequence: record.frame.sequence, payload: payload,
            offset: UInt64(record.offset), macKey: keys.recordMAC)
        file.replaceSubrange(record.offset..<record.offset + reframed.count, with: reframed)
        disk.setContents(TestEnv.keychainPath, file)
        return file
    }

    /// The live items as they must still read after any forgery of a history record.
    static func expectLiveItemsRead(_ disk: MemoryFileSystem) throws {
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        let found = try kc.find(Query(.genericPassword))
        #expect(
            Set(found.map { String(decoding: $0.data, as: UTF8.self) }) == ["alice-2", "carol-1"],
            "history records are never applied")
    }

    @Test func wellFormedHistory_passes_andEveryVersionIsDecrypted() throws {
        let disk = try Self.keychainWithHistory()
        let history = try Self.historyRecords(disk)
        #expect(history.map { $0.payload[16] } == [1, 2], "one replaced, one deleted")
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        let report = kc.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.historyRecords == 2)
        #expect(report.checkedVersions == 2)
        #expect(report.liveItems == 2 && report.checkedItems == 2)
    }

    /// Locked, a version's ciphertext cannot be checked (its class key is not available): the
    /// record is counted, well-formed, and not decrypted.
    @Test func lockedClass_historyIsCountedButNotDecrypted() throws {
        let disk = try Self.keychainWithHistory()
        try Self.forge(disk, try Self.historyRecords(disk)[0]) { $0[HistoryRecord.fixedSize + 80] ^= 0x01 }
        let report = try openKeychain(on: disk).verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.historyRecords == 2 && report.checkedVersions == 0)
    }

    enum Defect: String, CaseIterable, CustomTestStringConvertible {
        /// The embedded put is another item's: the record's UUID field names bob.
        case anotherUUID
        case kind3
        case zeroVersionBound
        case reservedByte
        /// One bit of the embedded put's ciphertext, re-tagged (the GCM tag fails).
        case ciphertextBit
        var testDescription: String { rawValue }
    }

    @Test(arguments: Defect.allCases)
    func damagedHistoryRecord_isReportedByVerify_andTheKeychainStillReads(_ defect: Defect) throws {
        let disk = try Self.keychainWithHistory()
        let history = try Self.historyRecords(disk)
        let replaced = history[0], deleted = history[1]
        try Self.forge(disk, replaced) { p in
            switch defect {
            case .anotherUUID: p.replaceSubrange(0..<16, with: deleted.payload[0..<16])
            case .kind3: p[16] = 3
            case .zeroVersionBound: p[17] = 0
            case .reservedByte: p[30] = 1
            case .ciphertextBit: p[HistoryRecord.fixedSize + 80] ^= 0x01
            }
        }
        try Self.expectLiveItemsRead(disk)
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        let report = kc.verify()
        #expect(!report.ok)
        #expect(report.problems.count == 1, "\(report.problems)")
        #expect(
            report.problems.first?.hasPrefix("history record at byte \(replaced.offset) ") == true,
            "\(report.problems)")
        #expect(report.historyRecords == 2)
        #expect(report.checkedVersions == 1, "the other version is checked and sound")
        #expect(report.checkedItems == 2, "the live items are sound")
    }

    /// §8.4: a version whose clear class tag is another class's, sealed with the right class key
    /// (as someone holding the device secret and the class key could), is reported.
    @Test func versionWithAnotherClassTag_isReported() throws {
        let disk = try Self.keychainWithHistory()
        let replaced = try Self.historyRecords(disk)[0]
        let file = disk.keychainBytes
        let keys = try FileKeys(
            device: try DeviceSecret.decodeFile(TestEnv.deviceFile), fileUUID: headerOf(file).fileUUID)
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        let classKey = try kc.localStore!.classKey(.whenUnlocked)
        let old = try HistoryRecord.decode(replaced.payload[...])
        let plaintext = try old.decodedPut().open(classKey: classKey, fileUUID: headerOf(file).fileUUID)
        let resealed = try ItemPutPayload.seal(
            plaintext, uuid: old.uuid, protectionClass: .whenUnlocked, flags: 0, keys: keys, classKey: classKey,
            fileUUID: headerOf(file).fileUUID, itemKey: try Crypto.randomBytes(32),
            classTag: keys.classTag(.internetPassword), uniqueKeyHash: nil
        ).encode()
        #expect(resealed.count == old.put.count)
        try Self.forge(disk, replaced) { $0.replaceSubrange(HistoryRecord.fixedSize..., with: resealed) }
        let again = try openKeychain(on: disk)
        try again.unlock(passcode: TestEnv.passcode)
        let report = again.verify()
        #expect(report.problems.count == 1, "\(report.problems)")
        #expect(report.problems.first?.contains("class tag") == true, "\(report.problems)")
    }

    /// §7.7: a compactor that meets a history record that is not well-formed refuses to compact,
    /// and the file keeps every byte.
    @Test(arguments: [Defect.anotherUUID, .kind3, .zeroVersionBound])
    func compaction_refusesAMalformedHistoryRecord_leavingTheFileUnchanged(_ defect: Defect) throws {
        let disk = try Self.keychainWithHistory()
        let history = try Self.historyRecords(disk)
        let forged = try Self.forge(disk, history[1]) { p in
            switch defect {
            case .anotherUUID: p.replaceSubrange(0..<16, with: history[0].payload[0..<16])
            case .kind3: p[16] = 3
            default: p[17] = 0
            }
        }
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        expectKeychainError(.decode) { try kc.compact() }
        #expect(disk.keychainBytes == forged, "a refused compaction changes no byte")
    }
}
