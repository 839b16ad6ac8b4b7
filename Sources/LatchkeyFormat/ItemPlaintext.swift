/// The plaintext sealed inside an item record: class, attributes and secret data (spec §8).
/// It only ever exists in memory; on disk it is AES-256-GCM ciphertext.
public struct ItemPlaintext: Equatable, Sendable {
    public var itemClass: ItemClass
    public var attributes: [String: AttributeValue]
    public var data: [UInt8]

    public init(itemClass: ItemClass, attributes: [String: AttributeValue], data: [UInt8]) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
    }

    public static let maxNameLength = 32

    /// The size of `encode()`'s output, computed without encoding.
    public var encodedSize: Int {
        var size = 1 + 4 + 2 + 4 + data.count
        for (name, value) in attributes {
            let v: Int
            switch value {
            case .string(let s): v = s.utf8.count
            case .data(let d): v = d.count
            default: v = 8
            }
            size += 1 + name.utf8.count + 1 + 4 + v
        }
        return size
    }

    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 64 + data.count + attributes.count * 24)
        w.u8(FormatConstants.itemPlaintextVersion)
        w.raw(itemClass.code)
        w.u16(UInt16(attributes.count))
        for name in attributes.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let value = attributes[name]!
            let nameBytes = Array(name.utf8)
            w.u8(UInt8(nameBytes.count))
            w.raw(nameBytes)
            w.u8(value.typeCode)
            let v: [UInt8]
            switch value {
            case .string(let s): v = Array(s.utf8)
            default: v = value.keyBytes
            }
            w.u32(UInt32(v.count))
            w.raw(v)
        }
        w.u32(UInt32(data.count))
        w.raw(data)
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> ItemPlaintext {
        var r = ByteReader(bytes)
        let version = try r.u8("item plaintext version")
        guard version == FormatConstants.itemPlaintextVersion else {
            throw FormatError.unsupportedVersion(what: "item plaintext", major: UInt16(version), minor: 0)
        }
        let code = String(decoding: try r.take(4, "item class"), as: UTF8.self)
        guard let cls = ItemClass(rawValue: code) else {
            throw FormatError.invalidField(field: "item class", reason: "unknown class")
        }
        let count = Int(try r.u16("item attribute count"))
        var attributes: [String: AttributeValue] = [:]
        attributes.reserveCapacity(count)
        var previous: ArraySlice<UInt8>? = nil
        for _ in 0..<count {
            let nameLength = Int(try r.u8("attribute name length"))
            guard (1...maxNameLength).contains(nameLength) else {
                throw FormatError.invalidField(field: "attribute name length", reason: "must be 1 to \(maxNameLength)")
            }
            let nameBytes = try r.take(nameLength, "attribute name")
            guard nameBytes.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                throw FormatError.invalidField(field: "attribute name", reason: "must be printable ASCII")
            }
            if let p = previous, !p.lexicographicallyPrecedes(nameBytes) {
                throw FormatError.invalidField(field: "attribute names", reason: "must be unique and sorted")
            }
            previous = nameBytes
            let type = try r.u8("attribute type")
            let length = Int(try r.u32("attribute value length"))
            let raw = try r.take(length, "attribute value")
            let value: AttributeValue
            switch type {
            case 1:
                guard let s = String(validating: raw, as: UTF8.self) else {
                    throw FormatError.invalidField(field: "attribute value", reason: "string is not valid UTF-8")
                }
                value = .string(s)
            case 2: value = .data(Array(raw))
            case 3, 4:
                guard length == 8 else { throw FormatError.invalidField(field: "attribute value", reason: "numbers and dates take 8 bytes") }
                let bits = raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                value = type == 3 ? .integer(Int64(bitPattern: bits)) : .date(Double(bitPattern: bits))
            default:
                throw FormatError.invalidField(field: "attribute type", reason: "unknown type \(type)")
            }
            attributes[String(decoding: nameBytes, as: UTF8.self)] = value
        }
        let dataLength = Int(try r.u32("item data length"))
        let data = try r.bytes(dataLength, "item data")
        try r.expectEnd("item plaintext")
        return ItemPlaintext(itemClass: cls, attributes: attributes, data: data)
    }
}
