import LatchkeyFormat
import Testing

/// The item plaintext (spec §8).
@Suite struct ItemPlaintextTests {
    /// A plaintext built field by field, so that tests can write what an encoder never would.
    struct Raw {
        var version: UInt8 = 1
        var classCode: [UInt8] = Array("genp".utf8)
        var attributes: [(name: [UInt8], type: UInt8, value: [UInt8])] = []
        var data: [UInt8] = []
        var count: UInt16? = nil

        func encode() -> [UInt8] {
            var w = ByteWriter()
            w.writeInteger(version, as: UInt8.self)
            w.writeBytes(classCode)
            w.writeInteger(count ?? UInt16(attributes.count), as: UInt16.self)
            for a in attributes {
                w.writeInteger(UInt8(a.name.count), as: UInt8.self)
                w.writeBytes(a.name)
                w.writeInteger(a.type, as: UInt8.self)
                w.writeInteger(UInt32(a.value.count), as: UInt32.self)
                w.writeBytes(a.value)
            }
            w.writeInteger(UInt32(data.count), as: UInt32.self)
            w.writeBytes(data)
            return w.bytes
        }

        static func string(_ name: String, _ value: String) -> (name: [UInt8], type: UInt8, value: [UInt8]) {
            (Array(name.utf8), 1, Array(value.utf8))
        }
    }

    static let sample = ItemPlaintext(
        itemClass: .internetPassword,
        attributes: [
            "acct": .string("alice"), "srvr": .string("例え.jp"), "port": .integer(-443), "cdat": .date(7.25e8),
            "gena": .data([0, 0xFF, 0x10]), "labl": .string(""), "Z": .string("upper case sorts first")
        ], data: Array("p@ssw0rd".utf8))

    @Test func plaintext_roundTrips() throws {
        #expect(try ItemPlaintext.decode(Self.sample.encode()) == Self.sample)
        for c in ItemClass.allCases {
            let empty = ItemPlaintext(itemClass: c, attributes: [:], data: [])
            #expect(try ItemPlaintext.decode(empty.encode()) == empty)
            #expect(empty.encode() == [1] + c.code + [0, 0, 0, 0, 0, 0])
        }
    }

    @Test func encode_sortsNamesAsBytesAndUsesSpecTypes() throws {
        let bytes = ItemPlaintext(
            itemClass: .genericPassword,
            attributes: ["b": .integer(1), "a": .date(0.5), "B": .data([9]), "ab": .string("x")],
            data: [7]
        ).encode()
        var r = ByteReader(bytes)
        _ = try r.readBytes(count: 7, "head")
        var names: [String] = [], types: [UInt8] = []
        for _ in 0..<4 {
            let n = Int(try r.readInteger(as: UInt8.self, "len"))
            names.append(String(decoding: try r.readBytes(count: n, "name"), as: UTF8.self))
            types.append(try r.readInteger(as: UInt8.self, "type"))
            _ = try r.readBytes(count: Int(try r.readInteger(as: UInt32.self, "vlen")), "value")
        }
        #expect(names == ["B", "a", "ab", "b"], "byte order: upper case first, a prefix before its extensions")
        #expect(types == [2, 4, 1, 3])
    }

    @Test(arguments: [0, 2, 0xFF] as [UInt8])
    func unknownVersion_isUnsupportedVersion(version: UInt8) {
        expectRejection(.unsupportedVersion) { try ItemPlaintext.decode(Raw(version: version).encode()) }
    }

    @Test(arguments: ["idnt", "GENP", "gen\u{0}", "\u{0}\u{0}\u{0}\u{0}"])
    func unknownClassCode_isRejected(code: String) {
        expectRejection(.invalidField) { try ItemPlaintext.decode(Raw(classCode: Array(code.utf8)).encode()) }
    }

    @Test func nameLength_outside1to32_isRejected() throws {
        expectRejection(.invalidField, "empty name") {
            try ItemPlaintext.decode(Raw(attributes: [([], 1, [])]).encode())
        }
        let long = [UInt8](repeating: 0x61, count: 33)
        expectRejection(.invalidField, "33 bytes") {
            try ItemPlaintext.decode(Raw(attributes: [(long, 1, [])]).encode())
        }
        let longest = [UInt8](repeating: 0x61, count: 32)
        #expect(try ItemPlaintext.decode(Raw(attributes: [(longest, 1, [])]).encode()).attributes.count == 1)
    }

    @Test(arguments: [0x20, 0x7F, 0x00, 0x0A, 0x80, 0xFF] as [UInt8])
    func nameByteOutsidePrintableASCII_isRejected(byte: UInt8) {
        expectRejection(.invalidField) { try ItemPlaintext.decode(Raw(attributes: [([0x61, byte], 1, [])]).encode()) }
    }

    @Test func namesUnsortedOrDuplicated_areRejected() {
        expectRejection(.invalidField, "unsorted") {
            try ItemPlaintext.decode(Raw(attributes: [Raw.string("svce", "x"), Raw.string("acct", "y")]).encode())
        }
        expectRejection(.invalidField, "duplicate") {
            try ItemPlaintext.decode(Raw(attributes: [Raw.string("acct", "x"), Raw.string("acct", "y")]).encode())
        }
        expectRejection(.invalidField, "longer name before its prefix") {
            try ItemPlaintext.decode(Raw(attributes: [Raw.string("ab", "x"), Raw.string("a", "y")]).encode())
        }
        expectRejection(.invalidField, "lower case before upper case") {
            try ItemPlaintext.decode(Raw(attributes: [Raw.string("a", "x"), Raw.string("B", "y")]).encode())
        }
    }

    @Test(arguments: [0, 5, 0xFF] as [UInt8])
    func unknownValueType_isRejected(type: UInt8) {
        expectRejection(.invalidField) {
            try ItemPlaintext.decode(Raw(attributes: [(Array("acct".utf8), type, [1])]).encode())
        }
    }

    @Test func invalidUTF8String_isRejected() {
        for bad: [UInt8] in [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0x61, 0xE2, 0x82]] {
            expectRejection(.invalidField, "\(bad)") {
                try ItemPlaintext.decode(Raw(attributes: [(Array("acct".utf8), 1, bad)]).encode())
            }
        }
    }

    @Test(arguments: [0, 1, 7, 9, 16])
    func integerOrDateNotEightBytes_isRejected(length: Int) {
        for type: UInt8 in [3, 4] {
            let value = [UInt8](repeating: 0, count: length)
            expectRejection(.invalidField, "type \(type)") {
                try ItemPlaintext.decode(Raw(attributes: [(Array("port".utf8), type, value)]).encode())
            }
        }
    }

    @Test func truncatedPlaintext_atEveryLength_isTruncated() {
        let bytes = Self.sample.encode()
        for length in 0..<bytes.count {
            expectRejection(.truncated, "length \(length)") { try ItemPlaintext.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func lengthsThatRunPastTheEnd_areRejected() {
        expectRejection(.anyFormatError, "attribute count too high") {
            try ItemPlaintext.decode(Raw(attributes: [Raw.string("a", "x")], count: 2).encode())
        }
        var bytes = Raw(data: [1, 2, 3]).encode()
        bytes = bytes.setting(UInt32(4), at: bytes.count - 7)
        expectRejection(.truncated, "data length too high") { try ItemPlaintext.decode(bytes) }
    }

    @Test func trailingBytes_areRejected() {
        expectRejection(.invalidField) { try ItemPlaintext.decode(Self.sample.encode() + [0]) }
        expectRejection(.anyFormatError, "attribute count too low") {
            try ItemPlaintext.decode(Raw(attributes: [Raw.string("a", "x"), Raw.string("b", "y")], count: 1).encode())
        }
    }
}
