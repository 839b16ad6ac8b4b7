import Foundation
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// spec/FORMAT.md §17 through the fixtures: the engine and the fixture generator (two
/// independent writers) produce the same index for the same log, byte for byte except the
/// random generation and the MACs that depend on it; and the index fixtures decode as the spec
/// says.
@Suite struct IndexFixtureTests {
    static func fixture(_ name: String) throws -> KeychainFixture {
        try #require(KeychainFixture.all.first { $0.name == name })
    }

    static func keys(_ w: Workspace) throws -> FileKeys {
        let device = try DeviceSecret.decodeFile([UInt8](try Data(contentsOf: URL(fileURLWithPath: w.devicePath))))
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: w.keychainPath)))
        let (h, _, _) = try FileHeader.decode(Array(file.prefix(try FileHeader.peekLength(Array(file.prefix(16))))))
        return try FileKeys(device: device, fileUUID: h.fileUUID)
    }

    /// index_valid: every item unhashed (no hash records: the unhashed pages list them all);
    /// attribute_hashes_index: every item hashed (attribute pages, no unhashed page).
    @Test(arguments: ["index_valid", "attribute_hashes_index"])
    func engineAndGenerator_writeTheSameIndex(_ name: String) throws {
        let w = try Self.fixture(name).workspace()
        defer { w.remove() }
        let indexPath = w.keychainPath + ".index"
        let generated = [UInt8](try Data(contentsOf: URL(fileURLWithPath: indexPath)))
        try FileManager.default.removeItem(atPath: indexPath)

        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        kc.localStore!.indexTailLimit = 0
        // a write with nothing in it: the index is written after it
        try kc.localStore!.withStreamingTransaction { _ in }
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: indexPath)))

        let keys = try Self.keys(w)
        var a = try IndexHeader.decode(Array(generated.prefix(4096)), macKey: keys.indexFileMAC)
        var b = try IndexHeader.decode(Array(written.prefix(4096)), macKey: keys.indexFileMAC)
        #expect(a.generation != b.generation)
        (a.generation, b.generation) = ([], [])
        #expect(a == b)
        #expect(
            name == "index_valid"
                ? a.unhashedCount == a.itemCount && a.attributeCount == 0
                : a.unhashedCount == 0 && a.attributeCount > a.itemCount)
        #expect(generated.count == written.count)
        for page in 1..<generated.count / 4096 {
            let body = page * 4096..<page * 4096 + 4064
            #expect(generated[body] == written[body], "page \(page) differs")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: indexPath)[.posixPermissions] as? Int == 0o600)
    }

    @Test func indexValid_decodesAsTheSpecSays() throws {
        let w = try Self.fixture("index_valid").workspace()
        defer { w.remove() }
        let keys = try Self.keys(w)
        let index = [UInt8](try Data(contentsOf: URL(fileURLWithPath: w.keychainPath + ".index")))
        let log = [UInt8](try Data(contentsOf: URL(fileURLWithPath: w.keychainPath)))
        let h = try IndexHeader.decode(Array(index.prefix(4096)), macKey: keys.indexFileMAC)
        let expected = try Self.fixture("index_valid").expectedItems()
        #expect(h.coveredEnd == UInt64(log.count))
        #expect(h.itemCount == UInt64(expected.count))
        #expect(UInt64(index.count) == h.fileSize)
        #expect(Array(log[Int(h.coveredEnd) - 16..<Int(h.coveredEnd)]) == h.lastRecordTag)
        let headerMAC = IndexHeader.mac(of: Array(index.prefix(4096)))
        for page in 1..<index.count / 4096 {
            #expect(
                IndexPage.verify(
                    Array(index[page * 4096..<(page + 1) * 4096]), page: UInt32(page), headerMAC: headerMAC,
                    macKey: keys.indexFileMAC))
        }
        let firstPage = Array(index[4096..<8192])
        var uuids: [String] = []
        for i in 0..<expected.count {
            let e = try IndexItemEntry.decode(firstPage, at: i * FormatConstants.indexItemEntrySize)
            uuids.append(hexString(e.uuidBytes))
            let record = Array(log[Int(e.recordOffset)..<Int(e.recordOffset) + Int(e.recordSize)])
            let frame = try FrameHeader.decode(record[...])
            #expect(frame.sequence == e.sequence && frame.type == RecordType.itemPut.rawValue)
            #expect(Array(record[20..<36]) == e.uuidBytes, "the entry's record is the item's put")
        }
        #expect(uuids == uuids.sorted())
        #expect(Set(uuids) == Set(expected.map { hexString($0.uuid) }))
    }

    /// index_swapped (spec §17.5, reading through the index): its pages all verify and its first
    /// two item entries name each other's records. Looked up by persistent reference (the
    /// entry's UUID) and by unique key, each of the two items is found with its own data under
    /// its own UUID; so is every item when all are listed.
    @Test func indexSwapped_neverAnswersForTheOtherItem() throws {
        let fixture = try Self.fixture("index_swapped")
        let w = try fixture.workspace()
        defer { w.remove() }
        let keys = try Self.keys(w)
        let index = [UInt8](try Data(contentsOf: URL(fileURLWithPath: w.keychainPath + ".index")))
        let log = [UInt8](try Data(contentsOf: URL(fileURLWithPath: w.keychainPath)))
        let headerMAC = IndexHeader.mac(of: Array(index.prefix(4096)))
        #expect(IndexPage.verify(Array(index[4096..<8192]), page: 1, headerMAC: headerMAC, macKey: keys.indexFileMAC))
        let expected = Dictionary(uniqueKeysWithValues: try fixture.expectedItems().map { ($0.uuid, $0) })
        let passcode = try fixture.passcode()
        for i in 0..<2 {
            let e = try IndexItemEntry.decode(Array(index[4096..<8192]), at: i * FormatConstants.indexItemEntrySize)
            #expect(
                Array(log[Int(e.recordOffset) + 20..<Int(e.recordOffset) + 36]) != e.uuidBytes,
                "entry \(i) names its own record")
            let want = try #require(expected[e.uuidBytes])
            let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
            if let passcode { try kc.unlock(passcode: passcode) }
            let found = try kc.find(
                Query(want.itemClass, persistentRef: want.itemClass.code + e.uuidBytes), includeData: false)
            #expect(found.count == 1)
            #expect(found.first.map { Array($0.persistentRef.suffix(16)) } == e.uuidBytes)
            var attrs = found.first?.attributes ?? [:]
            attrs["pdmn"] = nil
            #expect(attrs == want.attributes, "entry \(i): another item's attributes")
        }
        let kc = try Keychain.open(path: w.keychainPath, devicePath: w.devicePath)
        if let passcode { try kc.unlock(passcode: passcode) }
        for c in ItemClass.allCases {
            for item in try kc.find(Query(c), includeData: false) {
                let want = try #require(expected[Array(item.persistentRef.suffix(16))])
                var attrs = item.attributes
                attrs["pdmn"] = nil
                #expect(
                    attrs == want.attributes,
                    "\(hexString(item.persistentRef)) is listed with another item's attributes")
            }
        }
    }
}
