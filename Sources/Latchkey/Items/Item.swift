import LatchkeyFormat

/// A keychain item as the typed API returns it.
public struct Item: Sendable, Equatable, CustomStringConvertible {
    public var itemClass: ItemClass
    /// Attributes by Apple's 4-character code (`acct`, `svce`, `agrp`, `labl`, `cdat`, …),
    /// including `pdmn` (the protection class) and the dates the keychain sets.
    public var attributes: [String: AttributeValue]
    /// The secret data (kSecValueData). Never printed.
    public var data: [UInt8]
    public var protection: ProtectionClass
    /// Persistent reference: class code (4 bytes) ‖ item UUID (16 bytes).
    public var persistentRef: [UInt8]
    /// Reading the data asks for the passcode again (kSecAttrAccessControl, user presence).
    public var requiresUserPresence: Bool = false

    public var description: String {
        let attrs = attributes.keys.sorted().map { "\($0)=\(attributes[$0]!)" }.joined(separator: ", ")
        return "Item(\(itemClass.rawValue), \(attrs), data: <redacted>)"
    }
}

/// Which items a call acts on: a class and attribute values that must all match.
public struct Query: Sendable {
    public var itemClass: ItemClass
    /// Attributes that must be equal. A string and data with the same bytes are equal.
    public var attributes: [String: AttributeValue]
    /// Only items of these protection classes (nil: any).
    public var protection: ProtectionClass?
    /// Compare string attributes ignoring case (Unicode case folding) — except `agrp`, which is
    /// compared byte for byte: case folding never reaches access control (AccessPolicy).
    public var caseInsensitive: Bool
    /// kSecAttrSynchronizable: by default only items with sync = 0 match.
    public var synchronizable: SyncFilter
    /// Find exactly this item (kSecValuePersistentRef); other filters must then be absent.
    public var persistentRef: [UInt8]?

    public init(
        _ itemClass: ItemClass, _ attributes: [String: AttributeValue] = [:],
        protection: ProtectionClass? = nil, caseInsensitive: Bool = false,
        synchronizable: SyncFilter = .notSynchronizable, persistentRef: [UInt8]? = nil
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.protection = protection
        self.caseInsensitive = caseInsensitive
        self.synchronizable = synchronizable
        self.persistentRef = persistentRef
    }
}

/// The implicit `sync` filter of queries (reference §5.11).
public enum SyncFilter: Sendable, Equatable {
    /// sync = 0 (the default of every query).
    case notSynchronizable
    /// sync = 1.
    case synchronizable
    /// kSecAttrSynchronizableAny: both.
    case any
}

extension AttributeValue {
    /// Matching as the keychain does it: same kind of key and same bytes; with
    /// `caseInsensitive`, two strings compare after Unicode case folding (no normalization).
    func matches(_ other: AttributeValue, caseInsensitive: Bool) -> Bool {
        if caseInsensitive, case .string(let a) = self, case .string(let b) = other {
            // Compare the folded strings' bytes: String's == is canonical equivalence, which
            // would make NFC and NFD spellings equal (no Unicode normalization, spec/FORMAT.md §7.5).
            return a.lowercased().utf8.elementsEqual(b.lowercased().utf8)
                && a.uppercased().utf8.elementsEqual(b.uppercased().utf8)
        }
        // The same test as `keyKind == other.keyKind && keyBytes == other.keyBytes`, without
        // building byte arrays (this runs once per candidate item in a query).
        switch (self, other) {
        case (.string(var a), .string(var b)):
            // Native strings hold their UTF-8 contiguously: compared as two buffers, not byte
            // by byte through the UTF-8 views' iterators.
            return a.utf8.count == b.utf8.count && a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
        case (.data(let a), .data(let b)): return a == b
        case (.string(let a), .data(let b)), (.data(let b), .string(let a)): return a.utf8.elementsEqual(b)
        case (.integer(let a), .integer(let b)): return a == b
        case (.date(let a), .date(let b)): return a.bitPattern == b.bitPattern
        default: return false
        }
    }
}
