import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// `verify` applies a long transaction (an import's) as its records come instead of when it
/// closes (LogState.appliesLongTransactionsEarly). It must report what applying at the close
/// reports: the items of a transaction that closes, the first invalid operation of one that
/// closes (wherever it lies, before or after the point where early application starts), and
/// nothing of one that never closes.
@Suite struct VerifyLongTransactionTests {
    static let count = 5000

    /// A keychain holding one import of `count` items (one transaction), and the records of
    /// that transaction (type, payload) as the file has them.
    static func imported() throws -> (MemoryFileSystem, Keychain, [(UInt8, [UInt8])]) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        let before = disk.keychainBytes.count
        let n = try kc.importItems { importer in
            for i in 0..<count {
                try importer.add(
                    NewItem(.genericPassword, attributes: attrs(["acct": "user-\(i)"]), data: bytes("secret-\(i)")))
            }
            return importer.accepted
        }
        #expect(n == count)
        let file = disk.keychainBytes
        var records: [(UInt8, [UInt8])] = []
        var offset = before
        while offset < file.count {
            let frame = try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize])
            records.append(
                (
                    frame.type,
                    Array(
                        file[
                            offset + FormatConstants.frameHeaderSize..<offset + frame.recordSize
                                - FormatConstants.frameTagSize])
                ))
            offset += frame.recordSize
        }
        return (disk, kc, records)
    }

    /// Appends `records` as one transaction (closed unless `closes` is false); returns the
    /// offset of each record.
    static func append(
        _ records: [(UInt8, [UInt8])], to disk: MemoryFileSystem, after kc: Keychain, closes: Bool = true
    ) throws -> [Int] {
        var file = disk.keychainBytes
        let forger = try FormatEvolutionTests.Forger(file)
        var sequence = kc.localStore!.lastSequence
        var offsets: [Int] = []
        for (i, (type, payload)) in records.enumerated() {
            sequence += 1
            offsets.append(file.count)
            file += forger.record(
                type: type, continues: !closes || i < records.count - 1, sequence: sequence, payload: payload,
                at: file.count)
        }
        disk.setContents(TestEnv.keychainPath, file)
        return offsets
    }

    @Test func longTransaction_isVerifiedItemByItem() throws {
        let (_, kc, records) = try Self.imported()
        #expect(records.count >= 2 * Self.count, "one put and one hash record per item, in one transaction")
        let report = kc.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.liveItems == Self.count && report.checkedItems == Self.count)
    }

    /// The import's records again (each item put anew: valid), with a delete of an item that
    /// does not exist among them: early (after the 4096th operation) or before that.
    @Test(arguments: [100, 9000])
    func invalidOperation_inALongTransactionThatCloses_isTheDamageReported(position: Int) throws {
        let (disk, kc, records) = try Self.imported()
        var again = records
        again.insert((RecordType.itemDelete.rawValue, [UInt8](repeating: 0xAB, count: 16)), at: position)
        let offsets = try Self.append(again, to: disk, after: kc)
        // verify reads the file anew from its first byte, so the handle opened before will do.
        let report = kc.verify().problems
        #expect(
            report == [
                "damage at byte \(offsets[position]): a delete names an item that does not exist; a repair plan shows what cutting it off would drop"
            ])
    }

    /// The same transaction, valid but never closed: an unfinished write, and the items as
    /// before it.
    @Test func longTransaction_thatNeverCloses_changesNothing() throws {
        let (disk, kc, records) = try Self.imported()
        var again = records
        again.insert((RecordType.itemDelete.rawValue, [UInt8](repeating: 0xAB, count: 16)), at: 9000)
        let offsets = try Self.append(again, to: disk, after: kc, closes: false)
        let report = kc.verify()
        #expect(
            report.problems.count == 1 && report.problems[0].hasPrefix("unfinished write at byte \(offsets[0]) "),
            "\(report.problems)")
        #expect(report.liveItems == Self.count && report.checkedItems == Self.count)
    }
}
