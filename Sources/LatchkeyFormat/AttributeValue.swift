/// A value of an item attribute as stored inside the encrypted item (spec/FORMAT.md §8.2).
public enum AttributeValue: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    case data([UInt8])
    case integer(Int64)
    /// Seconds since 2001-01-01T00:00:00Z (CFAbsoluteTime), as Apple's CFDate.
    case date(Double)

    /// Type byte on disk.
    public var typeCode: UInt8 {
        switch self {
        case .string: return 1
        case .data: return 2
        case .integer: return 3
        case .date: return 4
        }
    }

    /// The bytes that identify this value for matching and uniqueness: UTF-8 of a string and the
    /// bytes of data are the same key (Apple compares SHA-1 of these bytes, reference §1.2).
    public var keyBytes: [UInt8] {
        switch self {
        case .string(let s): return Array(s.utf8)
        case .data(let d): return d
        case .integer(let i):
            var w = ByteWriter(); w.writeInteger(UInt64(bitPattern: i), as: UInt64.self); return w.bytes
        case .date(let d): var w = ByteWriter(); w.writeInteger(d.bitPattern, as: UInt64.self); return w.bytes
        }
    }

    /// Kind used by the unique-key encoding (§7.5): 0 bytes (string or data), 1 integer, 2 date.
    public var keyKind: UInt8 {
        switch self {
        case .string, .data: return 0
        case .integer: return 1
        case .date: return 2
        }
    }

    public var description: String {
        switch self {
        case .string(let s): return "\"\(s)\""
        case .data(let d): return "<\(d.count) bytes>"
        case .integer(let i): return String(i)
        case .date(let d): return "date(\(d))"
        }
    }
}

/// Literals make attribute dictionaries read as Apple's do: `[.account: "alice", .port: 443]`.
extension AttributeValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A boolean attribute (`kSecAttrSynchronizable`, `kSecAttrIsInvisible`, …) is the integer 0 or 1.
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}
