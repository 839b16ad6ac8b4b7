/// The name of an item attribute: Apple's four-character code (`acct` for `kSecAttrAccount`),
/// with a constant for each attribute a class has, named as Apple's constant is (made from
/// `AttributeSchema`'s rows, in AttributeKey+Schema.swift).
///
/// ```swift
/// try keychain.add(.genericPassword, [.account: "alice", .service: "mail"], secret: "s3cret")
/// ```
///
/// A key that is not an attribute of the item's class is refused with errSecNoSuchAttr, and the
/// message suggests the code meant when the name looks like one of these constants (`"account"`,
/// `"kSecAttrAccount"`).
public struct AttributeKey: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The four-character code, as stored in the item (spec/FORMAT.md §8).
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    /// An attribute by its code, for attributes without a constant here.
    public init(_ code: String) { self.rawValue = code }

    public var description: String { rawValue }
    public static func < (a: AttributeKey, b: AttributeKey) -> Bool { a.rawValue < b.rawValue }

    /// The constant a caller probably meant by `name` — its Swift name or Apple's `kSecAttr…`
    /// name, in any case (`"account"`, `"kSecAttrAccount"`, `"Account"`) — or nil.
    static func suggestion(for name: String) -> (name: String, key: AttributeKey)? {
        var folded = name.lowercased().filter { $0 != "_" && $0 != "-" && $0 != " " }
        if folded.hasPrefix("ksecattr") { folded.removeFirst("ksecattr".count) }
        for row in AttributeSchema.all {
            guard let swiftName = row.name else { continue }
            if swiftName.lowercased() == folded || row.constant.dropFirst("kSecAttr".count).lowercased() == folded {
                return (swiftName, AttributeKey(row.code))
            }
        }
        return nil
    }
}

extension Dictionary where Key == AttributeKey, Value == AttributeValue {
    /// The same attributes keyed by their codes, as the rest of the API takes them.
    var byCode: [String: AttributeValue] {
        var out: [String: AttributeValue] = [:]
        out.reserveCapacity(count)
        for (k, v) in self { out[k.rawValue] = v }
        return out
    }
}
