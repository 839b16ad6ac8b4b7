import Latchkey
import LatchkeyFormat

/// The item of an `import` line in the form nearly every line has: one flat JSON object whose
/// keys and values are all plain ASCII strings (no escape, no number, no nesting), each key
/// once, a class other than a certificate, and canonical base64 for data. It reads the bytes
/// once into the item, where the general path (`JSONParser`, then `ImportCommand.newItem`)
/// builds a dictionary of JSON values first: at a million lines that was a fifth of the
/// import's main thread.
///
/// It answers nil for every line outside that form, and for every line the general path would
/// refuse; the caller then takes the general path, which gives the item or the error. So a
/// line it accepts yields exactly the item the general path yields (the tests compare the two).
enum ImportLine {
    /// The most members a line may have here (more: the general path).
    static let maxMembers = 24

    static func item(_ line: [UInt8]) -> NewItem? {
        line.withUnsafeBufferPointer { item($0) }
    }

    static func item(_ bytes: UnsafeBufferPointer<UInt8>) -> NewItem? {
        // Each member as the byte ranges of its key and its value (between the quotes).
        var keys: [Range<Int>] = []
        var values: [Range<Int>] = []
        keys.reserveCapacity(8)
        values.reserveCapacity(8)
        guard members(bytes, &keys, &values) else { return nil }
        func text(_ r: Range<Int>) -> String {
            String(decoding: UnsafeBufferPointer(rebasing: bytes[r]), as: UTF8.self)
        }
        func equals(_ r: Range<Int>, _ s: StaticString) -> Bool {
            r.count == s.utf8CodeUnitCount && (0..<r.count).allSatisfy { bytes[r.lowerBound + $0] == s.utf8Start[$0] }
        }
        var itemClass: ItemClass?
        var data: [UInt8] = []
        var protection: ProtectionClass?
        var others: [Int] = []
        for k in keys.indices {
            let key = keys[k], value = values[k]
            if equals(key, "class") {
                guard let c = ItemClass(rawValue: text(value)), c != .certificate else { return nil }
                itemClass = c
            } else if equals(key, "v_Data") {
                guard let d = base64(bytes, value) else { return nil }
                data = d
            } else if equals(key, "pdmn") {
                guard let pc = ProtectionClass(code: text(value)) else { return nil }
                protection = pc
            } else if !equals(key, "cdat") && !equals(key, "mdat") {
                others.append(k)
            }
        }
        guard let itemClass else { return nil }
        let schema = Schema.of(itemClass)
        var attributes = [String: AttributeValue](minimumCapacity: others.count)
        for k in others {
            guard let (name, kind) = schema.attribute(bytes, keys[k]), kind != .access else { return nil }
            let input: InputValue
            switch kind {
            case .data:
                guard let d = base64(bytes, values[k]) else { return nil }
                input = .data(d)
            case .date:
                guard let t = ISODate.parse(text(values[k])) else { return nil }
                input = .date(t)
            default:
                input = .string(text(values[k]))
            }
            guard let value = try? input.coerced(to: kind, code: name) else { return nil }
            attributes[name] = value
        }
        return NewItem(itemClass, attributes: attributes, data: data, protection: protection)
    }

    /// The attributes of a class as `ItemSchema.kind` knows them, each name also as its bytes
    /// packed into an integer, so that a key is found without making a string of it and
    /// without hashing (two dictionary lookups a key were a fifth of this reader's time).
    struct Schema: Sendable {
        private var packed: [UInt64] = []
        private var names: [String] = []
        private var kinds: [ItemSchema.Kind] = []

        init(_ c: ItemClass) {
            for (name, kind) in ItemSchema.attributes(of: c) {
                guard let p = Schema.pack(Array(name.utf8)[...]) else { continue }
                packed.append(p)
                names.append(name)
                kinds.append(kind)
            }
        }

        /// The name and kind of the attribute whose name is `bytes[r]`; nil when the class has
        /// none of that name, or the name is longer than 7 bytes (the general path then decides).
        func attribute(_ bytes: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> (String, ItemSchema.Kind)? {
            guard let p = Schema.pack(bytes[r]) else { return nil }
            guard let i = packed.firstIndex(of: p) else { return nil }
            return (names[i], kinds[i])
        }

        /// Up to 7 bytes and their count in one integer.
        static func pack<C: Collection>(_ name: C) -> UInt64? where C.Element == UInt8 {
            guard name.count <= 7 else { return nil }
            var p = UInt64(name.count)
            for b in name { p = p << 8 | UInt64(b) }
            return p
        }

        static let genericPassword = Schema(.genericPassword)
        static let internetPassword = Schema(.internetPassword)
        static let certificate = Schema(.certificate)
        static let key = Schema(.key)

        static func of(_ c: ItemClass) -> Schema {
            switch c {
            case .genericPassword: return genericPassword
            case .internetPassword: return internetPassword
            case .certificate: return certificate
            case .key: return key
            }
        }
    }

    /// Reads `{ "key": "value", … }` (JSON whitespace anywhere between tokens, a comma before
    /// the `}` allowed, as `JSONParser` allows it) where every key and value is a string of
    /// bytes 0x20–0x7F other than `"` and `\`, and no key repeats. False for anything else.
    static func members(_ bytes: UnsafeBufferPointer<UInt8>, _ keys: inout [Range<Int>], _ values: inout [Range<Int>])
        -> Bool
    {
        let n = bytes.count
        var at = 0
        func space() {
            while at < n, bytes[at] == 0x20 || bytes[at] == 0x09 || bytes[at] == 0x0A || bytes[at] == 0x0D { at += 1 }
        }
        /// A plain string from its opening quote; nil when it is not one.
        func string() -> Range<Int>? {
            guard at < n, bytes[at] == UInt8(ascii: "\"") else { return nil }
            at += 1
            let start = at
            while at < n {
                let b = bytes[at]
                if b == UInt8(ascii: "\"") {
                    at += 1
                    return start..<at - 1
                }
                guard b >= 0x20, b < 0x80, b != UInt8(ascii: "\\") else { return nil }
                at += 1
            }
            return nil
        }
        space()
        guard at < n, bytes[at] == UInt8(ascii: "{") else { return false }
        at += 1
        space()
        while at < n, bytes[at] != UInt8(ascii: "}") {
            guard keys.count < maxMembers, let key = string() else { return false }
            space()
            guard at < n, bytes[at] == UInt8(ascii: ":") else { return false }
            at += 1
            space()
            guard let value = string() else { return false }
            let repeated = keys.contains { other in
                other.count == key.count
                    && (0..<key.count).allSatisfy { bytes[other.lowerBound + $0] == bytes[key.lowerBound + $0] }
            }
            guard !repeated else { return false }
            keys.append(key)
            values.append(value)
            space()
            if at < n, bytes[at] == UInt8(ascii: ",") {
                at += 1
                space()
            } else if at >= n || bytes[at] != UInt8(ascii: "}") {
                return false
            }
        }
        guard at < n else { return false }
        at += 1
        space()
        return at == n
    }

    /// Canonical base64 (RFC 4648 §4: the standard alphabet, padded to a multiple of four, the
    /// unused bits of the last group zero), which every decoder reads the same way; nil for
    /// anything else, including the empty string (the general path decides those).
    static func base64(_ bytes: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> [UInt8]? {
        let count = r.count
        guard count > 0, count % 4 == 0 else { return nil }
        var padding = 0
        if bytes[r.upperBound - 1] == UInt8(ascii: "=") {
            padding = bytes[r.upperBound - 2] == UInt8(ascii: "=") ? 2 : 1
        }
        let outCount = count / 4 * 3 - padding
        var failed = false
        let out = [UInt8](unsafeUninitializedCapacity: outCount) { buffer, written in
            var o = 0
            var i = r.lowerBound
            while i < r.upperBound {
                let last = i + 4 == r.upperBound
                let a = sextet(bytes[i]), b = sextet(bytes[i + 1])
                let c = last && padding == 2 ? 0 : sextet(bytes[i + 2])
                let d = last && padding >= 1 ? 0 : sextet(bytes[i + 3])
                guard a | b | c | d < 64 else { failed = true; break }
                let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                if last && padding > 0 {
                    // The bits that fall outside the decoded bytes must be zero.
                    guard v & (padding == 2 ? 0xFFFF : 0xFF) == 0 else { failed = true; break }
                }
                buffer[o] = UInt8(truncatingIfNeeded: v >> 16)
                if o + 1 < outCount { buffer[o + 1] = UInt8(truncatingIfNeeded: v >> 8) }
                if o + 2 < outCount { buffer[o + 2] = UInt8(truncatingIfNeeded: v) }
                o += 3
                i += 4
            }
            written = failed ? 0 : outCount
        }
        return failed ? nil : out
    }

    /// The value of a base64 character, 255 for any other byte (`=` included).
    private static func sextet(_ b: UInt8) -> UInt8 {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return b - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return b - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return 255
        }
    }
}
