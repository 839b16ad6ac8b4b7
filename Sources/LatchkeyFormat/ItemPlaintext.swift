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
    public var encodedSize: Int { 1 + 4 + AttributeList.encodedSize(attributes) + 4 + data.count }

    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 64 + data.count + attributes.count * 24)
        w.writeInteger(FormatConstants.itemPlaintextVersion, as: UInt8.self)
        w.writeBytes(itemClass.code)
        AttributeList.write(attributes, into: &w)
        w.writeInteger(UInt32(data.count), as: UInt32.self)
        w.writeBytes(data)
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> ItemPlaintext { try decode(bytes[...]) }

    public static func decode(_ bytes: ArraySlice<UInt8>) throws -> ItemPlaintext {
        if let p = bytes.withUnsafeBytes({ decodeChecked($0) }) { return p }
        return try decodeReading(bytes)
    }

    /// `decode` of a plaintext that `check` accepts, built while `check` walks it (through raw
    /// pointers: a find decodes one plaintext per call, and the reader's slices cost a
    /// retain and a release per field); nil when `check` refuses it, and then `decodeReading`
    /// says why. The values are those `decodeReading` makes: `check` has already validated the
    /// UTF-8 of every string and the length of every number, and names in strictly ascending
    /// byte order are distinct Strings.
    private static func decodeChecked(_ raw: UnsafeRawBufferPointer) -> ItemPlaintext? {
        guard raw.count >= 7 else { return nil }
        var attributes = [String: AttributeValue](minimumCapacity: (Int(raw[5]) << 8 | Int(raw[6])) + 1)
        var end = 7  // where the last attribute read ends: the data length follows
        let checked = check(raw) { name, type, value in
            let v: AttributeValue
            switch type {
            case 1: v = .string(String(decoding: value, as: UTF8.self))
            case 2: v = .data(Array(value))
            default:
                var bits: UInt64 = 0
                for b in value { bits = bits << 8 | UInt64(b) }
                v = type == 3 ? .integer(Int64(bitPattern: bits)) : .date(Double(bitPattern: bits))
            }
            attributes[String(decoding: name, as: UTF8.self)] = v
            if let base = value.baseAddress, let start = raw.baseAddress { end = base - start + value.count }
        }
        guard let itemClass = checked, attributes.count == Int(raw[5]) << 8 | Int(raw[6]) else { return nil }
        return ItemPlaintext(itemClass: itemClass, attributes: attributes, data: Array(raw[(end + 4)...]))
    }

    /// `decode`, field by field through a `ByteReader`, throwing what is wrong. (Also the
    /// reference that tests hold `check` and `decode` to.)
    package static func decodeReading(_ bytes: ArraySlice<UInt8>) throws -> ItemPlaintext {
        var r = ByteReader(bytes)
        let version = try r.readInteger(as: UInt8.self, "item plaintext version")
        guard version == FormatConstants.itemPlaintextVersion else {
            throw FormatError.unsupportedVersion(what: "item plaintext", major: UInt16(version), minor: 0)
        }
        let code = String(decoding: try r.readSlice(count: 4, "item class"), as: UTF8.self)
        guard let cls = ItemClass(rawValue: code) else {
            throw FormatError.invalidField(field: "item class", reason: "unknown class")
        }
        let attributes = try AttributeList.read(&r)
        let dataLength = Int(try r.readInteger(as: UInt32.self, "item data length"))
        let data = try r.readBytes(count: dataLength, "item data")
        try r.expectEnd("item plaintext")
        return ItemPlaintext(itemClass: cls, attributes: attributes, data: data)
    }
}

extension ItemPlaintext {
    /// Walks an encoded plaintext exactly as `decode` reads it, building nothing (no dictionary,
    /// array or String): the item class when `decode` would return a plaintext, nil when it
    /// would throw. `attribute` sees each attribute as it is read (name bytes, type code 1–4,
    /// value bytes), possibly before a later byte makes the whole plaintext invalid.
    ///
    /// For `verify`, which checks a million plaintexts and needs no value from them: decoding
    /// was half of its CPU. ItemPlaintextCheckTests hold it to `decode` over the fixtures and
    /// over random and mutated plaintexts.
    public static func check(
        _ bytes: UnsafeRawBufferPointer,
        attribute: (_ name: UnsafeRawBufferPointer, _ type: UInt8, _ value: UnsafeRawBufferPointer) -> Void
    ) -> ItemClass? {
        let n = bytes.count
        guard bytes.first == FormatConstants.itemPlaintextVersion, let itemClass = encodedClass(bytes) else {
            return nil
        }
        func u32(_ at: Int) -> Int {
            Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        }
        var i = 5
        guard n - i >= 2 else { return nil }
        let count = Int(bytes[i]) << 8 | Int(bytes[i + 1])
        i += 2
        var previous = 0..<0
        for k in 0..<count {
            guard n - i >= 1 else { return nil }
            let nameLength = Int(bytes[i])
            i += 1
            guard (1...maxNameLength).contains(nameLength), n - i >= nameLength else { return nil }
            let name = i..<i + nameLength
            for j in name where !(0x21...0x7e).contains(bytes[j]) { return nil }
            // Names strictly ascending in byte order (which also makes them unique: printable
            // ASCII names are equal Strings only when their bytes are equal).
            if k > 0, !bytes[previous].lexicographicallyPrecedes(bytes[name]) { return nil }
            previous = name
            i += nameLength
            guard n - i >= 5 else { return nil }
            let type = bytes[i]
            let length = u32(i + 1)
            i += 5
            guard n - i >= length else { return nil }
            let value = UnsafeRawBufferPointer(rebasing: bytes[i..<i + length])
            i += length
            switch type {
            case 1:
                guard
                    value.allSatisfy({ $0 < 0x80 })
                        || String(validating: value.bindMemory(to: UInt8.self), as: UTF8.self) != nil
                else {
                    return nil
                }
            case 2: break
            case 3, 4: guard length == 8 else { return nil }
            default: return nil
            }
            attribute(UnsafeRawBufferPointer(rebasing: bytes[name]), type, value)
        }
        guard n - i >= 4 else { return nil }
        let dataLength = u32(i)
        i += 4
        guard n - i == dataLength else { return nil }
        return itemClass
    }

    /// The item class an encoded plaintext names (its bytes 1–4), if any: the four codes are
    /// ASCII, so byte equality is the String equality `decode` applies.
    public static func encodedClass(_ bytes: UnsafeRawBufferPointer) -> ItemClass? {
        guard bytes.count >= 5 else { return nil }
        switch (bytes[1], bytes[2], bytes[3], bytes[4]) {
        case (0x67, 0x65, 0x6e, 0x70): return .genericPassword  // genp
        case (0x69, 0x6e, 0x65, 0x74): return .internetPassword  // inet
        case (0x63, 0x65, 0x72, 0x74): return .certificate  // cert
        case (0x6b, 0x65, 0x79, 0x73): return .key  // keys
        default: return nil
        }
    }
}
