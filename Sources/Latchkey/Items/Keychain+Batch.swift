import LatchkeyFormat

/// An item to add in a batch.
public struct NewItem: Sendable {
    public var itemClass: ItemClass
    public var attributes: [String: AttributeValue]
    public var data: [UInt8]
    public var protection: ProtectionClass

    public init(_ itemClass: ItemClass, attributes: [String: AttributeValue], data: [UInt8],
                protection: ProtectionClass = .whenUnlocked) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
        self.protection = protection
    }
}

extension Keychain {
    /// Adds every item in one transaction (one write, one fsync): all or none.
    /// - Throws: errSecDuplicateItem if any unique key exists or repeats within the batch.
    public func add(contentsOf items: [NewItem]) throws {
        guard !items.isEmpty else { return }
        let t = Keychain.now()
        var mutations: [Mutation] = []
        mutations.reserveCapacity(items.count)
        for item in items {
            var attrs = item.attributes.filter { !Keychain.keychainOwned.contains($0.key) }
            attrs["cdat"] = .date(t)
            attrs["mdat"] = .date(t)
            mutations.append(.put(id: try ID16.random(), plaintext: ItemPlaintext(itemClass: item.itemClass, attributes: attrs, data: item.data),
                                  protection: item.protection, flags: 0))
        }
        try store.withWriteLock { try store.commit(mutations) }
    }
}
