#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyFormat

/// The typed surface: attributes by `AttributeKey`, secrets as `Data` or `String`, one item or
/// none as an optional, add-or-update, and open-or-create.
///
/// ```swift
/// let keychain = try Keychain.openOrCreate(path: "app.keychain", devicePath: "device.secret")
/// try keychain.save(.genericPassword, [.account: "alice", .service: "mail"], secret: "s3cret")
/// let password = try keychain.first(.genericPassword, [.account: "alice"])?.secretString
/// ```
extension Keychain {
    /// Opens the keychain at `path`, creating it (and the device secret, when absent) if there
    /// is none; with a passcode, the keychain is unlocked with it (and a new one gets it).
    /// Two processes that race to create the same keychain both end with it open.
    /// - Throws: as `open` and `create`: errSecAuthFailed for a wrong passcode, errSecDecode for
    ///   a damaged file, errSecIO for a missing device secret beside an existing keychain.
    public static func openOrCreate(path: String, devicePath: String, passcode: [UInt8]? = nil) throws -> Keychain {
        func open() throws -> Keychain {
            if let passcode { return try Keychain.open(path: path, devicePath: devicePath, unlockingWith: passcode) }
            return try Keychain.open(path: path, devicePath: devicePath)
        }
        do {
            return try create(path: path, devicePath: devicePath, passcode: passcode)
        } catch let error as KeychainError where error.status == .duplicateKeychain {
            return try open()  // it exists, or another process created it first
        }
    }

    /// Adds an item with a secret given as bytes.
    /// - Throws: as `add(_:attributes:data:protection:requiresUserPresence:)`; errSecDuplicateItem
    ///   when an item with the same unique key exists (`save` replaces it instead).
    @discardableResult
    public func add(
        _ itemClass: ItemClass, _ attributes: [AttributeKey: AttributeValue], secret: Data,
        protection: ProtectionClass? = nil, requiresUserPresence: Bool = false
    ) throws -> Item {
        try add(
            itemClass, attributes: attributes.byCode, data: [UInt8](secret), protection: protection,
            requiresUserPresence: requiresUserPresence)
    }

    /// Adds an item with a secret given as text (stored as its UTF-8 bytes).
    @discardableResult
    public func add(
        _ itemClass: ItemClass, _ attributes: [AttributeKey: AttributeValue], secret: String,
        protection: ProtectionClass? = nil, requiresUserPresence: Bool = false
    ) throws -> Item {
        try add(
            itemClass, attributes: attributes.byCode, data: Array(secret.utf8), protection: protection,
            requiresUserPresence: requiresUserPresence)
    }

    /// Items of `itemClass` whose attributes equal all of `attributes`, at most `limit`; an
    /// empty array when none match.
    public func find(
        _ itemClass: ItemClass, _ attributes: [AttributeKey: AttributeValue] = [:], limit: Int? = nil,
        includeData: Bool = true
    ) throws -> [Item] {
        try find(Query(itemClass, attributes), limit: limit, includeData: includeData)
    }

    /// The first item matching, or nil when none does (where `update` and `delete` throw
    /// errSecItemNotFound).
    public func first(
        _ itemClass: ItemClass, _ attributes: [AttributeKey: AttributeValue] = [:],
        includeData: Bool = true
    ) throws -> Item? {
        try find(Query(itemClass, attributes), limit: 1, includeData: includeData).first
    }

    /// Adds the item, or, when an item with the same unique key exists (the same account and
    /// service for a generic password; spec/FORMAT.md §7.5), gives that item this secret and
    /// these attributes. Returns the item as stored.
    /// - Throws: as `add` and `update`, except errSecDuplicateItem.
    @discardableResult
    public func save(
        _ itemClass: ItemClass, _ attributes: [AttributeKey: AttributeValue], secret: Data,
        protection: ProtectionClass? = nil
    ) throws -> Item {
        try save(NewItem(itemClass, attributes: attributes.byCode, data: [UInt8](secret), protection: protection))
    }

    /// `save` with a secret given as text (stored as its UTF-8 bytes).
    @discardableResult
    public func save(
        _ itemClass: ItemClass, _ attributes: [AttributeKey: AttributeValue], secret: String,
        protection: ProtectionClass? = nil
    ) throws -> Item {
        try save(NewItem(itemClass, attributes: attributes.byCode, data: Array(secret.utf8), protection: protection))
    }

    private func save(_ given: NewItem) throws -> Item {
        let context = self.context
        // An item deleted between the refused add and the update is added on the next round;
        // one added in that gap is updated. Two rounds settle any single interleaving.
        var lastError: Error?
        for _ in 0..<3 {
            do {
                return try add(contentsOf: [given], context: context)[0]
            } catch let error as KeychainError where error.status == .duplicateItem {
                lastError = error
            }
            let query = try ItemRules.uniqueKeyQuery(of: given, context)
            var changes = given.attributes
            changes.removeValue(forKey: "sync")  // part of the query, not a change
            do {
                try update(query, attributes: changes, data: given.data, protection: given.protection, context: context)
                if let item = try find(query, limit: 1, context: context).first { return item }
            } catch let error as KeychainError where error.status == .itemNotFound {
                lastError = error
            }
        }
        throw lastError!
    }

    /// Whether an item with the unique key `given` would have is in the keychain (as the
    /// caller sees it); `add` would refuse `given` with errSecDuplicateItem then.
    /// - Throws: as `find` (a locked class: errSecInteractionNotAllowed).
    package func containsItem(withUniqueKeyOf given: NewItem) throws -> Bool {
        let query = try ItemRules.uniqueKeyQuery(of: given, context)
        return try !find(query, limit: 1, includeData: false).isEmpty
    }

    /// Changes every item of `itemClass` matching `attributes`: `set` becomes their attributes,
    /// `secret` (when given) their data. Returns how many changed.
    /// - Throws: errSecItemNotFound when nothing matches; as `update(_:attributes:data:protection:)`.
    @discardableResult
    public func update(
        _ itemClass: ItemClass, matching attributes: [AttributeKey: AttributeValue],
        set changes: [AttributeKey: AttributeValue] = [:], secret: Data? = nil,
        protection: ProtectionClass? = nil
    ) throws -> Int {
        try update(
            Query(itemClass, attributes), attributes: changes.byCode, data: secret.map { [UInt8]($0) },
            protection: protection)
    }

    /// Deletes every item of `itemClass` matching `attributes`. Returns how many.
    /// - Throws: errSecItemNotFound when nothing matches.
    @discardableResult
    public func delete(_ itemClass: ItemClass, matching attributes: [AttributeKey: AttributeValue]) throws -> Int {
        try delete(Query(itemClass, attributes))
    }
}

extension Query {
    /// A query by typed attribute keys: `Query(.genericPassword, [.account: "alice"])`.
    public init(
        _ itemClass: ItemClass, _ attributes: [AttributeKey: AttributeValue],
        protection: ProtectionClass? = nil, caseInsensitive: Bool = false,
        synchronizable: SyncFilter = .notSynchronizable
    ) {
        self.init(
            itemClass, attributes.byCode, protection: protection, caseInsensitive: caseInsensitive,
            synchronizable: synchronizable)
    }
}

extension Item {
    /// The attribute `key`, or nil when the item does not have it.
    public subscript(key: AttributeKey) -> AttributeValue? { attributes[key.rawValue] }

    /// The secret data as `Data`.
    public var secretData: Data { Data(data) }
    /// The secret data as text, when it is valid UTF-8; nil otherwise.
    public var secretString: String? { String(validating: data, as: UTF8.self) }

    /// `kSecAttrAccount` as text.
    public var account: String? { self[.account]?.stringValue }
    /// `kSecAttrService` as text.
    public var service: String? { self[.service]?.stringValue }
    /// `kSecAttrLabel` as text.
    public var label: String? { self[.label]?.stringValue }
    /// `kSecAttrServer` as text.
    public var server: String? { self[.server]?.stringValue }
    /// `kSecAttrAccessGroup`.
    public var accessGroup: String? { self[.accessGroup]?.stringValue }
    /// `kSecAttrCreationDate`.
    public var creationDate: Date? { self[.creationDate]?.dateValue }
    /// `kSecAttrModificationDate`.
    public var modificationDate: Date? { self[.modificationDate]?.dateValue }
}
