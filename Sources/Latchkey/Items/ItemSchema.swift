#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyFormat

/// The attributes of each item class, with Apple's 4-character codes and value kinds, as
/// `AttributeSchema` lists them.
public enum ItemSchema {
    /// How a value given by a caller is coerced (reference §1.2).
    public enum Kind: Sendable, Equatable {
        /// String, data or number, stored as given (a string stays a string).
        case blob
        /// Data; a string becomes its UTF-8 bytes, a number 4 bytes.
        case data
        /// String; data is decoded as UTF-8.
        case string
        /// Number; a boolean becomes 0/1, a decimal string a number, any other string is kept.
        case number
        /// Date only.
        case date
        /// `pdmn`: one of ak, ck, dk, aku, cku, dku, akpu.
        case access
    }

    // One table per class, chosen by a switch: a dictionary keyed by class would hash the
    // class's name on every lookup (a bulk import looks up each attribute of each item).
    private static let tables = PerItemClass { table(of: $0) }

    /// The rows of `AttributeSchema` that class `c` has, by code.
    private static func table(of c: ItemClass) -> [String: Kind] {
        var out: [String: Kind] = [:]
        for row in AttributeSchema.all where row.classes.contains(c) { out[row.code] = row.kind }
        return out
    }

    /// The attributes of `c` and their kinds.
    public static func attributes(of c: ItemClass) -> [String: Kind] { tables[c] }

    /// The kind of attribute `code` in class `c`, or nil when the class has no such attribute
    /// (errSecNoSuchAttr, −25303).
    public static func kind(_ code: String, in c: ItemClass) -> Kind? { attributes(of: c)[code] }

    /// The protection class a new item gets when none is given (reference §3.2).
    public static func defaultProtection(for c: ItemClass) -> ProtectionClass {
        c == .certificate ? .always : .whenUnlocked
    }

    /// The value a unique-key attribute has when an item does not set it (reference §2.2):
    /// empty data, 0, or the reference date; nil for an attribute outside the unique key.
    public static func defaultValue(_ name: String, _ c: ItemClass) -> AttributeValue? {
        guard let kind = UniqueKey.attributes(for: c).first(where: { $0.name == name })?.kind else { return nil }
        switch kind {
        case .bytes: return .data([])
        case .integer: return .integer(0)
        case .date: return .date(0)
        }
    }
}

/// A value as a caller hands it over, before coercion to the attribute's kind.
public enum InputValue: Sendable, Equatable {
    case string(String)
    case data([UInt8])
    case integer(Int64)
    case bool(Bool)
    case date(Double)

    /// Coerces to the kind of `code` (reference §1.2).
    /// - Throws: errSecParam when the value cannot be coerced.
    public func coerced(to kind: ItemSchema.Kind, code: String) throws -> AttributeValue {
        func bad() -> KeychainError {
            KeychainError(.param, "the value given for attribute '\(code)' has the wrong type")
        }
        switch (kind, self) {
        case (.blob, .string(let s)): return .string(s)
        case (.blob, .data(let d)): return .data(d)
        case (.blob, .integer(let i)): return .integer(i)
        case (.blob, .bool(let b)): return .integer(b ? 1 : 0)
        case (.data, .data(let d)): return .data(d)
        case (.data, .string(let s)): return .data(Array(s.utf8))
        case (.data, .integer(let i)):
            let v = Int32(truncatingIfNeeded: i)
            return .data(withUnsafeBytes(of: v.littleEndian) { Array($0) })
        case (.string, .string(let s)): return .string(s)
        case (.string, .data(let d)):
            guard let s = String(validating: d, as: UTF8.self) else { throw bad() }
            return .string(s)
        case (.number, .integer(let i)): return .integer(i)
        case (.number, .bool(let b)): return .integer(b ? 1 : 0)
        case (.number, .string(let s)):
            if let i = Int64(s) { return .integer(i) }
            return .string(s)
        case (.date, .date(let d)): return .date(d)
        case (.access, .string(let s)):
            guard let pc = ProtectionClass(code: s) else {
                throw KeychainError(.param, "'\(s)' is not a protection class; use ak, ck, dk, aku, cku, dku or akpu")
            }
            return .string(pc.code)
        default: throw bad()
        }
    }
}
