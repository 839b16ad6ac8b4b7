import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// Damage anywhere in the file is an integrity error, never a torn tail and never altered
/// data (spec §1.4, §10.2, §10.4).
@Suite struct DamageTests {
    struct Small {
        var disk: MemoryFileSystem
        var items: Snapshot
        var file: [UInt8]
        var hasPasscode: Bool
        /// Offsets of the records after the header.
        var records: [Int]
    }

    /// A header and five records (four puts, one of them an update, and a delete). With a
    /// passcode, the items are in dk/dku so that a locked open could read them.
    func small(passcode: Bool) throws -> Small {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: passcode ? TestEnv.passcode : nil)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "alice", "svce": "mail"]), data: bytes("a-secret"),
            protection: .always)
        try kc.add(
            .genericPassword, attributes: attrs(["acct": "bob", "svce": "mail"]), data: bytes("b-secret"),
            protection: .alwaysThisDeviceOnly)
        try kc.update(
            Query(.genericPassword, attrs(["acct": "alice"])), attributes: attrs(["labl": "changed"]), data: bytes("a2")
        )
        try kc.add(
            .internetPassword, attributes: attrs(["acct": "carol", "srvr": "example.com"]), data: bytes("c-secret"),
            protection: .always)
        try kc.delete(Query(.genericPassword, attrs(["acct": "bob"])))
        let file = disk.keychainBytes
        return Small(
            disk: disk, items: try kc.snapshot(), file: file, hasPasscode: passcode, records: try recordOffsets(file))
    }

    func recordOffsets(_ file: [UInt8]) throws -> [Int] {
        var offset = try FileHeader.peekLength(file)
        var out: [Int] = []
        while offset < file.count {
            out.append(offset)
            offset += try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize]).recordSize
        }
        return out
    }

    /// Opens `damaged` on a copy of `base` and checks the outcome.
    func expectDetected(
        _ base: Small, _ damaged: [UInt8], _ what: String,
        allowed: Set<KeychainStatus> = [.decode], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let disk = base.disk.clone()
        disk.setContents(TestEnv.keychainPath, damaged)
        let kc: Keychain
        do {
            kc = try openKeychain(on: disk)
        } catch let e as KeychainError {
            #expect(allowed.contains(e.status), "\(what): \(e)", sourceLocation: sourceLocation)
            #expect(
                disk.keychainBytes == damaged, "\(what): a refused open must not change the file",
                sourceLocation: sourceLocation)
            return
        } catch {
            Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
            return
        }
        // It opened: verify must notice, and nothing read may differ from what was written.
        #expect(!kc.verify().ok, "\(what) went unnoticed", sourceLocation: sourceLocation)
        if base.hasPasscode { try? kc.unlock(passcode: TestEnv.passcode) }
        for c in ItemClass.allCases {
            guard let found = try? kc.find(Query(c)) else { continue }
            for item in found {
                #expect(
                    base.items[item.persistentRef] == item, "\(what): find returned an altered item",
                    sourceLocation: sourceLocation)
            }
        }
    }

    @Test(arguments: [false, true])
    func everySingleByteFlip_isRefusedOrCaughtByVerify(passcode: Bool) throws {
        let base = try small(passcode: passcode)
        #expect(
            base.records.count == 11,
            "four puts, each with its attribute-hash record, a delete, and the history records of the update and the delete"
        )
        for offset in base.file.indices {
            var damaged = base.file
            damaged[offset] ^= 0x01
            // Only the device UUID (header bytes 32..<48) makes it "another device's keychain".
            let allowed: Set<KeychainStatus> = (32..<48).contains(offset) ? [.authFailed] : [.decode]
            expectDetected(base, damaged, "flip at byte \(offset)", allowed: allowed)
        }
    }

    @Test func damagedLengthOfMiddleRecord_isDamageNotTornTail() throws {
        let base = try small(passcode: false)
        let record = base.records[2]
        for bit in 0..<32 {
            var damaged = base.file
            damaged[record + 3 - bit / 8] ^= UInt8(1 << (bit % 8))
            expectDetected(base, damaged, "length bit \(bit) of the middle record")
        }
        // A length that runs past the end of the file looks like an incomplete record: the CRC
        // tells it apart.
        var damaged = base.file
        damaged.replaceSubrange(record..<record + 4, with: [0x00, 0x01, 0x00, 0x00])
        expectDetected(base, damaged, "middle record length 65536")
    }

    @Test func damagedLengthOfLastRecord_isDamageNotTornTail() throws {
        let base = try small(passcode: false)
        let record = base.records.last!
        for bit in 0..<32 {
            var damaged = base.file
            damaged[record + 3 - bit / 8] ^= UInt8(1 << (bit % 8))
            expectDetected(base, damaged, "length bit \(bit) of the last record")
        }
    }

    @Test func zeroedMiddleRecordHeader_isDamageNotTornTail() throws {
        let base = try small(passcode: false)
        var damaged = base.file
        let record = base.records[1]
        damaged.replaceSubrange(
            record..<record + FormatConstants.frameHeaderSize,
            with: repeatElement(0, count: FormatConstants.frameHeaderSize))
        expectDetected(base, damaged, "zeroed frame header with records after it")
    }

    @Test func removedMiddleRecord_isDamage() throws {
        let base = try small(passcode: false)
        var damaged = base.file
        damaged.removeSubrange(base.records[1]..<base.records[2])
        expectDetected(base, damaged, "a record cut out of the middle")
        // And two records swapped.
        var swapped = Array(base.file[..<base.records[1]])
        swapped += base.file[base.records[2]..<base.records[3]]
        swapped += base.file[base.records[1]..<base.records[2]]
        swapped += base.file[base.records[3]...]
        expectDetected(base, swapped, "two records swapped")
    }

    @Test func itemDamagedWhileOpen_isReportedByVerifyAndFind() throws {
        let base = try small(passcode: false)
        let disk = base.disk.clone()
        let kc = try openKeychain(on: disk)
        #expect(kc.verify().ok)
        // Damage the ciphertext of the last put record (carol) behind the open instance's back.
        var damaged = base.file
        let carol = base.records[6]
        damaged[carol + FormatConstants.frameHeaderSize + 100] ^= 0x80
        disk.setContents(TestEnv.keychainPath, damaged)
        let report = kc.verify()
        #expect(!report.ok)
        #expect(!report.problems.isEmpty)
        expectKeychainError(.decode) { _ = try kc.find(Query(.internetPassword)) }
        #expect(try kc.find(Query(.genericPassword)).map(\.data) == [bytes("a2")], "undamaged items still read")
    }
}
