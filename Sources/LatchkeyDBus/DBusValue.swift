/// A D-Bus value with its type: what a message carries, read and written by sd-bus
/// (`DBusMessage`), never by hand.
public indirect enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// `ay`: an array of bytes, read and written in one piece.
    case bytes([UInt8])
    /// An array whose elements have the signature `element` (never `y`: that is `bytes`).
    case array(element: String, [DBusValue])
    /// `a{KV}`: a dictionary, its entries in the order given.
    case dict(key: String, value: String, [(DBusValue, DBusValue)])
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's D-Bus signature.
    public var signature: String {
        switch self {
        case .byte: return "y"
        case .bool: return "b"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .bytes: return "ay"
        case .array(let e, _): return "a" + e
        case .dict(let k, let v, _): return "a{" + k + v + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }

    public static func == (a: DBusValue, b: DBusValue) -> Bool {
        switch (a, b) {
        case (.byte(let x), .byte(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.int32(let x), .int32(let y)): return x == y
        case (.uint32(let x), .uint32(let y)): return x == y
        case (.int64(let x), .int64(let y)): return x == y
        case (.uint64(let x), .uint64(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)), (.objectPath(let x), .objectPath(let y)),
            (.signature(let x), .signature(let y)):
            return x == y
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.array(let e1, let x), .array(let e2, let y)): return e1 == e2 && x == y
        case (.dict(let k1, let v1, let x), .dict(let k2, let v2, let y)):
            return k1 == k2 && v1 == v2 && x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.structure(let x), .structure(let y)): return x == y
        case (.variant(let x), .variant(let y)): return x == y
        default: return false
        }
    }

    // MARK: Reading

    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): return s
        case .variant(let v): return v.stringValue
        default: return nil
        }
    }

    public var boolValue: Bool? {
        switch self {
        case .bool(let b): return b
        case .variant(let v): return v.boolValue
        default: return nil
        }
    }

    public var bytesValue: [UInt8]? {
        switch self {
        case .bytes(let b): return b
        case .variant(let v): return v.bytesValue
        case .array(let e, let items) where e == "y":
            return items.compactMap { if case .byte(let b) = $0 { return b } else { return nil } }
        default: return nil
        }
    }

    /// The object paths of an `ao` (or a variant holding one).
    public var objectPaths: [String]? {
        switch self {
        case .array(let e, let items) where e == "o": return items.compactMap(\.stringValue)
        case .variant(let v): return v.objectPaths
        default: return nil
        }
    }

    /// The entries of an `a{ss}` (or a variant holding one); nil for any other type. A key
    /// given twice keeps its last value, as GLib's dictionaries do.
    public var stringDictionary: [String: String]? {
        switch self {
        case .dict(let k, let v, let entries) where k == "s" && v == "s":
            var out: [String: String] = [:]
            for (key, value) in entries {
                guard let key = key.stringValue, let value = value.stringValue else { return nil }
                out[key] = value
            }
            return out
        case .variant(let inner): return inner.stringDictionary
        default: return nil
        }
    }

    /// The entries of an `a{sv}`, the variants unwrapped; nil for any other type.
    public var properties: [String: DBusValue]? {
        guard case .dict(let k, let v, let entries) = self, k == "s", v == "v" else { return nil }
        var out: [String: DBusValue] = [:]
        for (key, value) in entries {
            guard let key = key.stringValue, case .variant(let inner) = value else { return nil }
            out[key] = inner
        }
        return out
    }

    // MARK: Writing

    /// `a{ss}` in the order of the sorted keys.
    public static func stringDictionary(_ d: [String: String]) -> DBusValue {
        .dict(key: "s", value: "s", d.keys.sorted().map { (.string($0), .string(d[$0]!)) })
    }

    /// `a{sv}` in the order of the sorted keys.
    public static func properties(_ d: [String: DBusValue]) -> DBusValue {
        .dict(key: "s", value: "v", d.keys.sorted().map { (.string($0), .variant(d[$0]!)) })
    }

    /// `ao`.
    public static func objectPaths(_ paths: [String]) -> DBusValue {
        .array(element: "o", paths.map { .objectPath($0) })
    }
}
