import LatchkeyFormat

/// One version of an item in its history (spec/FORMAT.md §7.7): the item as it is now, or as
/// it was before a change replaced it or a delete removed it. Never carries the secret data.
package struct ItemVersion: Sendable, Equatable {
    package enum Kind: String, Sendable {
        /// The item as it is now.
        case current
        /// An earlier version, replaced by an update (or a restore).
        case replaced
        /// The version a delete removed.
        case deleted
    }

    /// The item's attributes as this version had them, `data` empty; the persistent reference
    /// names the item (its UUID), which every version of it shares.
    package var item: Item
    package var kind: Kind
    /// When this version stopped being current, in Unix seconds (by the clock of the writer
    /// that replaced or deleted it); for the current version, its `mdat`.
    package var date: Double
    /// Names the version with `uuid`, until the keychain is next compacted: the sequence number
    /// of its history record; 0 for the current version.
    package var sequence: UInt64
    /// Whether the item is live now (a deleted item's versions say false).
    package var itemIsLive: Bool

    /// The item's UUID (the persistent reference's last 16 bytes).
    package var uuid: [UInt8] { Array(item.persistentRef.suffix(16)) }

    package init(item: Item, kind: Kind, date: Double, sequence: UInt64, itemIsLive: Bool) {
        self.item = item
        self.kind = kind
        self.date = date
        self.sequence = sequence
        self.itemIsLive = itemIsLive
    }
}

/// The history of the items a query names (`Keychain.history`): every version of each, newest
/// first per item, and how many earlier versions are not shown because their class is locked.
package struct ItemHistory: Sendable, Equatable {
    package var versions: [ItemVersion]
    /// Versions whose class is locked: their attributes, and so their item and group, cannot be
    /// read; `latchkey unlock` shows them.
    package var locked: Int

    package init(versions: [ItemVersion], locked: Int) {
        self.versions = versions
        self.locked = locked
    }
}

extension Keychain {
    /// The history of the items `query` matches (spec/FORMAT.md §7.7): an item is named when
    /// its current version or any earlier one matches, and then every version of it the caller
    /// may see is listed (an item renamed since, or deleted, keeps its history). Secret data is
    /// never returned.
    /// - Throws: errSecDecode for a damaged history record; errSecIO.
    package func history(_ query: Query) throws -> ItemHistory {
        try openBackend().history(query, context)
    }

    /// Puts an earlier version back: as an update of the item when it is live (its current
    /// version then joins the history), else as a new item (a new UUID). `mdat` becomes now.
    /// - Returns: the item as restored (no data), and whether it was added as a new item.
    /// - Throws: errSecItemNotFound when the version left the history (expired, or compacted
    ///   away); errSecInteractionNotAllowed when its class is locked; errSecDuplicateItem
    ///   when another item holds its unique key now; errSecNoAccessForItem.
    @discardableResult
    package func restore(_ version: ItemVersion) throws -> (item: Item, asNew: Bool) {
        try openBackend().restoreVersion(uuid: version.uuid, sequence: version.sequence, context)
    }
}
