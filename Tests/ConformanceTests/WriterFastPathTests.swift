import LatchkeyCrypto
import LatchkeyFormat
import LatchkeyTestSupport
import Testing

/// A bulk import seals each item through `ItemPlaintext.encode` and hashes its indexed
/// attributes through `FileKeys.attributeHashes(for:)`, both written for speed: they must give
/// the bytes and the hashes, in order, that the spec's definitions give (§8.1's list sorted by
/// the names' bytes; §7.6's one hash per indexed attribute, each `attributeHash(itemClass:name:value:)`),
/// so the records on disk are the same whichever way they were computed.
@Suite struct WriterFastPathTests {
    static let keys = ItemPlaintextCheckTests.keys

    /// §8.1 written out plainly: count, then each attribute in ascending byte order of the name.
    static func referenceEncoding(_ p: ItemPlaintext) -> [UInt8] {
        var w = ByteWriter()
        w.writeInteger(FormatConstants.itemPlaintextVersion, as: UInt8.self)
        w.writeBytes(p.itemClass.code)
        w.writeInteger(UInt16(p.attributes.count), as: UInt16.self)
        for name in p.attributes.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let value = p.attributes[name]!
            w.writeInteger(UInt8(name.utf8.count), as: UInt8.self)
            w.writeBytes(Array(name.utf8))
            w.writeInteger(value.typeCode, as: UInt8.self)
            let bytes = value.keyBytes
            w.writeInteger(UInt32(bytes.count), as: UInt32.self)
            w.writeBytes(bytes)
        }
        w.writeInteger(UInt32(p.data.count), as: UInt32.self)
        w.writeBytes(p.data)
        return w.bytes
    }

    static func referenceHashes(_ p: ItemPlaintext) -> [UInt64] {
        AttributeHashRecord.indexedAttributes(for: p.itemClass).compactMap {
            keys.attributeHash(itemClass: p.itemClass, name: $0, value: p.attributes[$0])
        }
    }

    /// Seeded plaintexts of every class: indexed attributes present or absent, with values of
    /// every type, other attributes with names that sort differently as bytes and as strings.
    static func plaintexts() -> [ItemPlaintext] {
        var rng = SplitMix(seed: 0x5ea1_0fa5)
        let names = [
            "acct", "svce", "labl", "gena", "srvr", "sdmn", "subj", "issr", "pkhh", "skid", "klbl", "atag",
            "agrp", "sync", "cdat", "Zed", "a", "ab", "é", "e\u{301}", "日本", "~", "_x", "A1"
        ]
        let strings = ["", "alice", "é", "e\u{301}", "日本語", "😀", "with space", String(repeating: "x", count: 70)]
        var out: [ItemPlaintext] = []
        for _ in 0..<3000 {
            let c: ItemClass = [.genericPassword, .internetPassword, .certificate, .key][Int(rng.next() % 4)]
            var attributes: [String: AttributeValue] = [:]
            for name in names where rng.next() % 3 == 0 {
                switch rng.next() % 4 {
                case 0: attributes[name] = .string(strings[Int(rng.next() % UInt64(strings.count))])
                case 1:
                    attributes[name] = .data(
                        (0..<Int(rng.next() % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
                case 2: attributes[name] = .integer(Int64(bitPattern: rng.next()))
                default: attributes[name] = .date(Double(Int64(bitPattern: rng.next() >> 20)) / 1000)
                }
            }
            out.append(
                ItemPlaintext(
                    itemClass: c, attributes: attributes,
                    data: (0..<Int(rng.next() % 8)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
        }
        return out
    }

    @Test func encode_isTheSpecsByteOrder() {
        for p in Self.plaintexts() { #expect(p.encode() == Self.referenceEncoding(p), "\(p.attributes.keys.sorted())") }
    }

    @Test func attributeHashes_areEachAttributesHash_inTheListsOrder() {
        var nonEmpty = 0
        for p in Self.plaintexts() {
            let hashes = Self.keys.attributeHashes(for: p)
            #expect(hashes == Self.referenceHashes(p), "\(p.itemClass) \(p.attributes.keys.sorted())")
            // The transaction places the hash record by this count before the sealer hashes.
            #expect(AttributeHashRecord.hashCount(for: p) == hashes.count)
            if !hashes.isEmpty { nonEmpty += 1 }
        }
        #expect(nonEmpty > 2000)
    }
}
