import LatchkeyFormat

/// An item to add in a batch.
public struct NewItem: Sendable {
    public var itemClass: ItemClass
    public var attributes: [String: AttributeValue]
    public var data: [UInt8]
    /// nil: the class default (ak; certificates dk).
    public var protection: ProtectionClass?
    public var requiresUserPresence: Bool

    public init(
        _ itemClass: ItemClass, attributes: [String: AttributeValue], data: [UInt8],
        protection: ProtectionClass? = nil, requiresUserPresence: Bool = false
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
        self.protection = protection
        self.requiresUserPresence = requiresUserPresence
    }
}
