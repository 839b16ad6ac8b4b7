import LatchkeyFormat

/// The live items of a log and who holds each unique key: either all in memory (built by a
/// scan from the start of the log), or an index file (`IndexBase`, the items as of its covered
/// end) with the changes the records after it made on top.
///
/// Lookups through an index read pages and can fail (`IndexBase.Unusable`); the store then
/// drops the index and rebuilds the table from the log. Enumeration and the subscript need the
/// table in memory (`materialize`).
struct ItemTable: Sequence, Sendable {
    private(set) var base: IndexBase?
    /// With a base: the items changed since its covered end (nil: deleted). Without: every live
    /// item (never nil).
    private var changed = IDMap<ItemSlot?>()
    /// Unique-key hash → item, for the items in `changed` that are live.
    private var owners = IDMap<ID16>()
    private(set) var count = 0

    init() {}

    init(base: IndexBase) {
        self.base = base
        count = Int(base.header.itemCount)
    }

    var isMaterialized: Bool { base == nil }

    func slot(_ id: ID16) throws -> ItemSlot? {
        if let c = changed[id] { return c }
        return try base?.slot(id)
    }

    /// The live item whose unique-key hash is `hash`.
    func owner(_ hash: ID16) throws -> ID16? {
        if let id = owners[hash] { return id }
        guard let base, let id = try base.owner(hash) else { return nil }
        // Changed since the index: had it kept this key, `owners` would name it.
        return changed[id] == nil ? id : nil
    }

    mutating func put(_ id: ID16, _ slot: ItemSlot) throws {
        let old = try self.slot(id)
        if let old {
            if owners[old.uniqueHash] == id { owners[old.uniqueHash] = nil }
        } else {
            count += 1
        }
        changed[id] = slot
        owners[slot.uniqueHash] = id
    }

    @discardableResult
    mutating func remove(_ id: ID16) throws -> ItemSlot? {
        guard let old = try slot(id) else { return nil }
        count -= 1
        if owners[old.uniqueHash] == id { owners[old.uniqueHash] = nil }
        if base == nil { changed[id] = nil } else { changed[id] = .some(nil) }
        return old
    }

    /// Reads the whole index into memory (every page authenticated) and drops it.
    mutating func materialize() throws {
        guard let base else { return }
        var all = IDMap<ItemSlot?>()
        all.reserveCapacity(count)
        var owners = self.owners
        owners.reserveCapacity(count)
        try base.forEachItem { id, slot in
            guard !changed.contains(id) else { return }
            all.insert(id, slot)
            owners.insert(slot.uniqueHash, id)
        }
        for (id, slot) in changed {
            if let slot { all.insert(id, slot) }
        }
        guard all.count == count else {
            throw IndexBase.Unusable(reason: "it holds \(base.header.itemCount) items where its header says otherwise")
        }
        changed = all
        self.owners = owners
        self.base = nil
    }

    /// Whether the item changed since the index (or, without one, is live).
    func hasChanged(_ id: ID16) -> Bool { changed.contains(id) }

    /// The UUIDs of the items changed since the index, in order; every item when there is no
    /// index. For the index writer, which looks each up with `change(_:)` (16 bytes an item
    /// rather than a sorted copy of every slot).
    func changedIDsInOrder() -> [ID16] { changed.keys.sorted() }

    /// Calls `body` with each item changed since the index (nil: deleted), in no order.
    func forEachChange(_ body: (ID16, ItemSlot?) -> Void) {
        for (id, slot) in changed { body(id, slot) }
    }

    /// What changed for an item since the index: .some(nil) deleted, nil unchanged.
    func change(_ id: ID16) -> ItemSlot?? { changed[id] }

    // MARK: In memory only

    subscript(id: ID16) -> ItemSlot? {
        precondition(base == nil, "ItemTable: enumerate only a materialized table")
        return changed[id] ?? nil
    }

    var keys: [ID16] {
        precondition(base == nil, "ItemTable: enumerate only a materialized table")
        return changed.keys
    }

    struct Iterator: IteratorProtocol {
        var inner: IDMap<ItemSlot?>.Iterator
        mutating func next() -> (key: ID16, value: ItemSlot)? {
            while let (k, v) = inner.next() {
                if let v { return (k, v) }
            }
            return nil
        }
    }

    func makeIterator() -> Iterator {
        precondition(base == nil, "ItemTable: enumerate only a materialized table")
        return Iterator(inner: changed.makeIterator())
    }

    var underestimatedCount: Int { base == nil ? count : 0 }
}
