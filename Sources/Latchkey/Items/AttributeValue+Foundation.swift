#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyFormat

/// `Data`, `Date` and `String` in and out of attribute values, for code that holds them so.
extension AttributeValue {
    /// A date attribute (stored as seconds since 2001-01-01, Apple's CFAbsoluteTime).
    public init(_ date: Date) { self = .date(date.timeIntervalSinceReferenceDate) }
    /// A data attribute.
    public init(_ data: Data) { self = .data([UInt8](data)) }
    /// A string attribute.
    public init(_ string: String) { self = .string(string) }
    /// An integer attribute.
    public init(_ integer: Int) { self = .integer(Int64(integer)) }

    /// The value as text: a string, or data that is valid UTF-8 (Apple returns either for the
    /// same attribute, depending on how it was given); nil otherwise.
    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        case .data(let d): return String(validating: d, as: UTF8.self)
        default: return nil
        }
    }
    /// The value's bytes: data, or the UTF-8 of a string; nil for numbers and dates.
    public var dataValue: Data? {
        switch self {
        case .string(let s): return Data(s.utf8)
        case .data(let d): return Data(d)
        default: return nil
        }
    }
    /// A date attribute as a `Date`; nil for any other kind.
    public var dateValue: Date? {
        if case .date(let t) = self { return Date(timeIntervalSinceReferenceDate: t) }
        return nil
    }
    /// An integer attribute; nil for any other kind.
    public var integerValue: Int64? {
        if case .integer(let i) = self { return i }
        return nil
    }
}
