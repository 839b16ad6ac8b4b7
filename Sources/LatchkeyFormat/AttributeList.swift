/// A set of item attributes as spec/FORMAT.md §8.1 lays them out: `u16` count, then each
/// attribute (name length, name, type, value length, value) in strictly ascending byte order of
/// the names. The item plaintext (§8) and the agent protocol (spec/AGENT.md §4) both use it.
public enum AttributeList {
    /// What a name may be.
    public enum Names: Sendable {
        /// §8.1 and §8.3: 1 to 32 bytes of printable ASCII (`0x21`–`0x7E`), as stored in items.
        case stored
        /// 0 to 255 bytes of UTF-8, for the agent protocol: it carries whatever names a caller
        /// gave, so that the keychain the agent runs refuses them as a direct open would.
        case any
    }

    /// The bytes `write` appends for `attributes`.
    public static func encodedSize(_ attributes: [String: AttributeValue]) -> Int {
        var size = 2
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

    /// Appends the list. The caller keeps to the limits (at most 65,535 attributes, names of at
    /// most 255 bytes, values of at most 2^32 − 1 bytes): the item size limit (§6.4) and the
    /// agent's request limit are far below them.
    public static func write(_ attributes: [String: AttributeValue], into w: inout ByteWriter) {
        w.writeInteger(UInt16(attributes.count), as: UInt16.self)
        // The pairs sorted by name as bytes: no lookup after the sort, and names compared in
        // place (a generic comparison of the UTF-8 views was a tenth of sealing an item).
        var pairs: [(name: String, value: AttributeValue)] = []
        pairs.reserveCapacity(attributes.count)
        for (name, value) in attributes { pairs.append((name, value)) }
        pairs.sort { utf8Precedes($0.name, $1.name) }
        for (name, value) in pairs {
            w.writeInteger(UInt8(name.utf8.count), as: UInt8.self)
            w.writeBytes(name.utf8)
            w.writeInteger(value.typeCode, as: UInt8.self)
            switch value {
            case .string(let s):
                w.writeInteger(UInt32(s.utf8.count), as: UInt32.self)
                w.writeBytes(s.utf8)
            case .data(let d):
                w.writeInteger(UInt32(d.count), as: UInt32.self)
                w.writeBytes(d)
            case .integer(let i):
                w.writeInteger(8, as: UInt32.self)
                w.writeInteger(UInt64(bitPattern: i), as: UInt64.self)
            case .date(let t):
                w.writeInteger(8, as: UInt32.self)
                w.writeInteger(t.bitPattern, as: UInt64.self)
            }
        }
    }

    /// Whether `a` comes before `b` in the byte order of their UTF-8 (§8.1's order of names).
    static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let n = min(x.count, y.count)
                var i = 0
                while i < n {
                    if x[i] != y[i] { return x[i] < y[i] }
                    i += 1
                }
                return x.count < y.count
            }
        }
    }

    /// The string of UTF-8 bytes, nil when they are not valid UTF-8. ASCII (most values) is
    /// valid as it stands and takes the decoder's fast path; the rest is validated.
    static func string(validating raw: ArraySlice<UInt8>) -> String? {
        raw.withUnsafeBufferPointer { buf in
            var high: UInt8 = 0
            for b in buf { high |= b }
            return high < 0x80 ? String(decoding: buf, as: UTF8.self) : String(validating: buf, as: UTF8.self)
        }
    }

    /// Reads a list, rejecting what §8.3 rejects (items 3 to 6; with `.any`, the name rule of
    /// `Names.any` instead of item 3).
    public static func read(_ r: inout ByteReader, names: Names = .stored) throws -> [String: AttributeValue] {
        let count = Int(try r.readInteger(as: UInt16.self, "item attribute count"))
        // One more than stored: a reader adds the item's protection class (pdmn) to what it returns.
        var attributes = [String: AttributeValue](minimumCapacity: min(count, r.remaining / 6) + 1)
        var previous: ArraySlice<UInt8>? = nil
        for _ in 0..<count {
            let nameLength = Int(try r.readInteger(as: UInt8.self, "attribute name length"))
            let nameBytes: ArraySlice<UInt8>
            let name: String
            switch names {
            case .stored:
                guard (1...ItemPlaintext.maxNameLength).contains(nameLength) else {
                    throw FormatError.invalidField(
                        field: "attribute name length", reason: "must be 1 to \(ItemPlaintext.maxNameLength)")
                }
                nameBytes = try r.readSlice(count: nameLength, "attribute name")
                guard nameBytes.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                    throw FormatError.invalidField(field: "attribute name", reason: "must be printable ASCII")
                }
                name = String(decoding: nameBytes, as: UTF8.self)
            case .any:
                nameBytes = try r.readSlice(count: nameLength, "attribute name")
                guard let s = String(validating: nameBytes, as: UTF8.self) else {
                    throw FormatError.invalidField(field: "attribute name", reason: "must be valid UTF-8")
                }
                name = s
            }
            if let p = previous, !p.lexicographicallyPrecedes(nameBytes) {
                throw FormatError.invalidField(field: "attribute names", reason: "must be unique and sorted")
            }
            previous = nameBytes
            let type = try r.readInteger(as: UInt8.self, "attribute type")
            let length = Int(try r.readInteger(as: UInt32.self, "attribute value length"))
            let raw = try r.readSlice(count: length, "attribute value")
            let value: AttributeValue
            switch type {
            case 1:
                guard let s = AttributeList.string(validating: raw) else {
                    throw FormatError.invalidField(field: "attribute value", reason: "string is not valid UTF-8")
                }
                value = .string(s)
            case 2: value = .data(Array(raw))
            case 3, 4:
                guard length == 8 else {
                    throw FormatError.invalidField(field: "attribute value", reason: "numbers and dates take 8 bytes")
                }
                let bits = raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                value = type == 3 ? .integer(Int64(bitPattern: bits)) : .date(Double(bitPattern: bits))
            default:
                throw FormatError.invalidField(field: "attribute type", reason: "unknown type \(type)")
            }
            // Two names with different bytes are one Swift String when they are canonically
            // equivalent (NFC and NFD spellings): such a pair is refused as a duplicate.
            guard attributes.updateValue(value, forKey: name) == nil else {
                throw FormatError.invalidField(field: "attribute names", reason: "must be unique and sorted")
            }
        }
        return attributes
    }
}
