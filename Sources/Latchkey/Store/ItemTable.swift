import LatchkeyFormat

/// The live items of a log and who holds each unique key: either all in memory (built by a
/// scan from the start of the log), or an index file (`IndexBase`, the items as of its covered
/// end) with the changes the records after it made on top.
///
/// Lookups through an index read pages and can fail (`IndexBase.Unusable`); the store then
/// drops the index and rebuilds the table from the log. Enumeration and the subscript need the
/// table in memory (`materialize`).
///
/// **The records after the index are applied without reading it** (spec/FORMAT.md §17.5). Two
/// rules of §10.3 need the state at the covered end: a put's unique-key hash must not be held
/// by another live item, and a delete must name a live item. Checking them as the records come
/// would cost two index lookups a record (O(log N) pages each), which dominates an open at a
/// million items. So a record is checked at once against what the records after the index
/// did (`changed`, which also answers who holds a hash), and what only the index can answer
/// is left in `firstTouch` (unchecked entries) and `uncheckedHashes`; it is checked for a UUID
/// or a hash before any answer about it is given (`slot`, `owner`, `remove`) and for all of them before the
/// table is enumerated or an index is written (`checkAll`). A rule found broken then throws
/// `IndexBase.Unusable` (`contradictsLog`): the store drops the index and scans the log from
/// its start, which reports the broken rule at its record as an open without an index does.
struct ItemTable: Sequence, Sendable {
    private(set) var base: IndexBase?
    /// With a base: the items changed since its covered end (nil: deleted). Without: every live
    /// item (never nil). Its live items are also found by unique-key hash (`owner`); no two
    /// hold the same one (§10.3, checked before every `set`).
    private var changed = SlotMap()
    /// With a base: for each item of `changed`, the first record after the covered end that put
    /// or deleted it, and whether its liveness at the covered end is known yet (`checked`).
    private var firstTouch = IDMap<FirstTouch>()
    /// The entries of `firstTouch` not yet checked.
    private var uncheckedIDs = 0
    /// Unique-key hashes put, after the covered end, while no item changed since held them:
    /// the earliest such put. The index's owner of the hash, if any, must have been touched
    /// before it (it then no longer held the hash, or `changed` would hold it under the hash).
    private var uncheckedHashes = IDMap<UInt64>()
    /// Live items: exact once every first touch is checked (`isChecked`).
    private(set) var count = 0

    /// A delete first needs the item live at the covered end; a put first is of a new item or
    /// a replacement (`count` assumes new until checked).
    struct FirstTouch: Sendable {
        var offset: UInt64
        var isDelete: Bool
        var checked: Bool
    }

    init() {}

    init(base: IndexBase) {
        self.base = base
        count = Int(base.header.itemCount)
    }

    var isMaterialized: Bool { base == nil }

    /// True when every rule the records after the index left for later has been checked (and
    /// `count` is exact).
    var isChecked: Bool { uncheckedIDs == 0 && uncheckedHashes.isEmpty }

    /// The item's slot. Checks first what the records after the index left unchecked for it.
    mutating func slot(_ id: ID16) throws -> ItemSlot? {
        if let c = changed[id] {
            if uncheckedIDs > 0, firstTouch[id]?.checked == false { try check(id: id) }
            return c
        }
        return try base?.slot(id)
    }

    /// The live item whose unique-key hash is `hash`. Checks first what the records after
    /// the index left unchecked for the hash.
    mutating func owner(_ hash: ID16) throws -> ID16? {
        try item(uniqueHash: hash)?.id
    }

    /// The live item whose unique-key hash is `hash`, with its slot (`owner` then `slot`, in
    /// one lookup when the item changed since the index or there is none).
    mutating func item(uniqueHash hash: ID16) throws -> (id: ID16, slot: ItemSlot)? {
        if !uncheckedHashes.isEmpty, uncheckedHashes.contains(hash) { try check(hash: hash) }
        if let found = changed.owner(hash) {
            if uncheckedIDs > 0, firstTouch[found.id]?.checked == false { try check(id: found.id) }
            return found
        }
        guard let base, let id = try base.owner(hash) else { return nil }
        // Changed since the index: had it kept this key, `changed` would hold it under the hash.
        guard changed[id] == nil, let slot = try base.slot(id) else { return nil }
        return (id, slot)
    }

    /// Applies a put read from the log (or appended by this process) at `offset`, checking
    /// §10.3's unique-key rule against the records after the index now and against the index
    /// later (`uncheckedHashes`). `ownerChecked`: the caller has just looked up the hash's
    /// owner (`owner`) and found none or this item (a writer's own check), so nothing is left
    /// for later.
    mutating func put(_ id: ID16, _ slot: ItemSlot, at offset: UInt64, ownerChecked: Bool = false) throws {
        let hash = slot.uniqueHash
        if let holder = changed.owner(hash), holder.id != id {
            throw ItemTable.RuleBroken(offset: offset, reason: "two live items share a unique key")
        }
        if let old = changed[id] {
            if old == nil { count += 1 }
        } else if base != nil {
            firstTouch.insert(id, FirstTouch(offset: offset, isDelete: false, checked: false))
            uncheckedIDs += 1
            count += 1
        } else {
            count += 1
        }
        // No other changed item holds the hash now (checked above; this item's own earlier
        // put of it is replaced): only the index can.
        if base != nil, !ownerChecked, uncheckedHashes[hash] == nil {
            uncheckedHashes.insert(hash, offset)
        }
        changed.set(id, slot)
    }

    /// Applies a delete read from the log at `offset`: §10.3's rule that it names a live item
    /// is checked against the records after the index now and against the index later
    /// (`firstTouch`).
    mutating func delete(_ id: ID16, at offset: UInt64) throws {
        if let old = changed[id] {
            guard old != nil else {
                throw ItemTable.RuleBroken(offset: offset, reason: "a delete names an item that does not exist")
            }
        } else if base != nil {
            firstTouch.insert(id, FirstTouch(offset: offset, isDelete: true, checked: false))
            uncheckedIDs += 1
        } else {
            throw ItemTable.RuleBroken(offset: offset, reason: "a delete names an item that does not exist")
        }
        count -= 1
        if base == nil { changed.remove(id) } else { changed.set(id, nil) }
    }

    /// Removes a live item (a writer's delete, appended at `offset`): nil, and nothing changes,
    /// when there is none.
    @discardableResult
    mutating func remove(_ id: ID16, at offset: UInt64) throws -> ItemSlot? {
        guard let old = try slot(id) else { return nil }
        if changed[id] == nil, base != nil {
            // First touched now, and known live at the covered end.
            firstTouch.insert(id, FirstTouch(offset: offset, isDelete: true, checked: true))
        }
        count -= 1
        if base == nil { changed.remove(id) } else { changed.set(id, nil) }
        return old
    }

    /// A rule of §10.3 broken by a record (`offset`).
    struct RuleBroken: Error {
        var offset: UInt64
        var reason: String
    }

    /// Checks an item's first touch after the index against the index (its liveness at the
    /// covered end): a delete needs it live; a put of an item live then replaced it (`count`
    /// assumed a new one).
    private mutating func check(id: ID16) throws {
        guard var first = firstTouch[id], !first.checked, let base else { return }
        let live = try base.slot(id) != nil
        if first.isDelete, !live {
            throw IndexBase.Unusable(
                reason: "the record at byte \(first.offset) deletes an item it does not hold", contradictsLog: true)
        }
        if !first.isDelete, live { count -= 1 }
        first.checked = true
        firstTouch.insert(id, first)
        uncheckedIDs -= 1
    }

    /// Checks the earliest put of `hash` after the index made while no changed item held it:
    /// the index's owner of the hash must have been touched (replaced or deleted) before it.
    private mutating func check(hash: ID16) throws {
        guard let put = uncheckedHashes[hash], let base else { return }
        if let holder = try base.owner(hash), (firstTouch[holder]?.offset ?? .max) > put {
            throw IndexBase.Unusable(
                reason: "the record at byte \(put) puts a unique key that an item it holds has", contradictsLog: true)
        }
        _ = uncheckedHashes.removeValue(forKey: hash)
    }

    /// Checks everything the records after the index left for later, in key order (pages
    /// touched once each). Before enumerating the table or writing an index.
    mutating func checkAll() throws {
        if uncheckedIDs > 0 {
            for id in firstTouch.compactMap({ $0.value.checked ? nil : $0.key }).sorted() { try check(id: id) }
        }
        for hash in uncheckedHashes.keys.sorted() { try check(hash: hash) }
    }

    /// Reads the whole index into memory (every page authenticated) and drops it.
    mutating func materialize() throws {
        guard let base else { return }
        try checkAll()
        var all = SlotMap()
        all.reserveCapacity(count)
        var shared = false
        try base.forEachItem { id, slot in
            guard !changed.contains(id) else { return }
            // Each entry names its item's own put (as every lookup checks, `IndexBase.slot`):
            // an entry naming another item's record makes the index unusable here, never an
            // item served under another's UUID.
            try base.checkRecord(of: id, slot)
            if all.owner(slot.uniqueHash) != nil { shared = true; return }
            all.set(id, slot)
        }
        for (id, slot) in changed {
            guard let slot else { continue }
            if all.owner(slot.uniqueHash) != nil { shared = true; continue }
            all.set(id, slot)
        }
        // checkAll() found no hash put after the index held by an item of it; two of its own
        // items holding one is a damaged index (its pages are authenticated: a bug's, not an
        // attacker's), never a table with one of them silently dropped.
        if shared { throw IndexBase.Unusable(reason: "two of its items share a unique key") }
        guard all.count == count else {
            throw IndexBase.Unusable(reason: "it holds \(base.header.itemCount) items where its header says otherwise")
        }
        changed = all
        self.base = nil
        firstTouch = IDMap()
        uncheckedIDs = 0
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
