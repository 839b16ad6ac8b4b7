import LatchkeyFormat

/// The attribute hashes of the live items (spec/FORMAT.md §7.6): for each item, the hashes of
/// the hash record bound to its newest put, or "unhashed" when there is none. Either all in
/// memory (a scan from the start of the log), or an index file's attribute and unhashed pages
/// (§17.2, as of its covered end) with the items put or deleted since on top.
///
/// Only a filter: every candidate it gives is decrypted and matched by the caller, and every
/// unhashed item is a candidate, so no hash (missing, stale, forged) can make a query miss
/// an item or return one that does not match.
///
/// Memory: the hashes of all items share one pool (`pool`), and each changed item has an
/// 8-byte entry in an `IDMap` saying where its hashes are: about 70 bytes an item with four
/// hashes, where a dictionary of arrays took about twice that (an array is its own heap
/// object). Hashes replaced or removed stay in the pool as garbage until they pass half of it;
/// then the pool is compacted.
struct AttributeHashTable: Sendable {
    enum State: Sendable, Equatable {
        case hashed([UInt64])
        case unhashed
        /// Deleted since the base (only with a base).
        case deleted
    }

    /// Where a changed item's hashes are in `pool`, or that it is unhashed or deleted.
    struct Entry: Sendable {
        var start: UInt32
        var count: UInt8

        static let unhashedMark: UInt8 = 0xFE
        static let deletedMark: UInt8 = 0xFF
        static let unhashed = Entry(start: 0, count: unhashedMark)
        static let deleted = Entry(start: 0, count: deletedMark)

        var isHashed: Bool { count <= UInt8(AttributeHashRecord.maxHashes) }
        var range: Range<Int> { Int(start)..<Int(start) + (isHashed ? Int(count) : 0) }
    }

    private(set) var base: IndexBase?
    /// Items put or deleted since the base's covered end; without a base, every live item.
    private var changed = IDMap<Entry>()
    /// The hashes of every hashed entry, each item's contiguous.
    private var pool: [UInt64] = []
    /// Hashes in `pool` that no entry names any more.
    private var garbage = 0

    init() {}

    init(base: IndexBase) { self.base = base }

    /// A put applied: the item is unhashed until a hash record bound to this put follows.
    mutating func put(_ id: ID16) { replace(id, with: .unhashed) }

    /// The hash record bound to the item's newest put (applied right after it).
    mutating func setHashes(_ id: ID16, _ hashes: [UInt64]) {
        precondition(
            hashes.count <= AttributeHashRecord.maxHashes,
            "a hash record holds at most \(AttributeHashRecord.maxHashes) hashes")
        precondition(pool.count + hashes.count <= Int(UInt32.max), "the attribute hash pool is full")
        // Hashes that replace hashes (a writer's put, which no `put(_:)` precedes): the old
        // ones are dropped first, since dropping them may compact the pool, which moves every
        // entry but one not yet inserted.
        if let old = changed[id], old.isHashed { replace(id, with: .unhashed) }
        let entry = Entry(start: UInt32(pool.count), count: UInt8(hashes.count))
        pool.append(contentsOf: hashes)
        replace(id, with: entry)
    }

    mutating func remove(_ id: ID16) {
        if base == nil {
            if let old = changed.removeValue(forKey: id) { discard(old) }
        } else {
            replace(id, with: .deleted)
        }
    }

    private mutating func replace(_ id: ID16, with entry: Entry) {
        if let old = changed[id] { discard(old) }
        changed.insert(id, entry)
    }

    private mutating func discard(_ old: Entry) {
        guard old.isHashed else { return }
        garbage += Int(old.count)
        if garbage > 4096, garbage * 2 > pool.count { compact() }
    }

    /// Copies the live hashes to a new pool, in entry order.
    private mutating func compact() {
        var fresh: [UInt64] = []
        fresh.reserveCapacity(pool.count - garbage)
        let old = pool
        changed.updateEach { _, entry in
            guard entry.isHashed else { return }
            let r = entry.range
            entry.start = UInt32(fresh.count)
            fresh.append(contentsOf: old[r])
        }
        pool = fresh
        garbage = 0
    }

    /// The state of an item changed since the base (without a base: of every live item).
    func state(_ id: ID16) -> State? {
        guard let e = changed[id] else { return nil }
        switch e.count {
        case Entry.unhashedMark: return .unhashed
        case Entry.deletedMark: return .deleted
        default: return .hashed(Array(pool[e.range]))
        }
    }

    /// How many items carry `hash` (an estimate: the base's entries count items changed since).
    func count(_ hash: UInt64) throws -> Int {
        var n = 0
        if let base { n += try base.attributeRange(hash).count }
        for (_, e) in changed where e.isHashed && pool[e.range].contains(hash) { n += 1 }
        return n
    }

    /// The items that may have `hash`: those whose hashes hold it, and every unhashed item.
    /// Deleted items are not given; the caller still checks each item against the live table.
    func candidates(_ hash: UInt64) throws -> Set<ID16> {
        var out = Set<ID16>()
        if let base {
            for id in try base.attributeItems(hash) where !changed.contains(id) { out.insert(id) }
            try base.forEachUnhashed { id in if !changed.contains(id) { out.insert(id) } }
        }
        for (id, e) in changed {
            switch e.count {
            case Entry.unhashedMark: out.insert(id)
            case Entry.deletedMark: break
            default: if pool[e.range].contains(hash) { out.insert(id) }
            }
        }
        return out
    }

    func hasChanged(_ id: ID16) -> Bool { changed.contains(id) }

    /// The changed items that are unhashed, in UUID order (for the index writer).
    func unhashedChanges() -> [ID16] {
        var out: [ID16] = []
        for (id, e) in changed where e.count == Entry.unhashedMark { out.append(id) }
        return out.sorted()
    }

    /// Calls `body` with each changed item's hashes, each value once (an item may carry one
    /// value under two attributes), in no particular order.
    private func forEachDistinctHash(_ body: (UInt64, ID16) -> Void) {
        for (id, e) in changed where e.isHashed {
            let r = e.range
            for j in r where !pool[r.lowerBound..<j].contains(pool[j]) { body(pool[j], id) }
        }
    }

    /// The (hash, item) entries of the changed items with a bound hash record, each pair once,
    /// in (hash, item) order: what the index writer merges into its attribute pages (§17.2),
    /// made a range of hash values at a time (`SortedInChunks`).
    func sortedFreshEntries() -> SortedInChunks<(UInt64, ID16)> {
        SortedInChunks(produce: { body in forEachDistinctHash { body(($0, $1)) } }, key: { $0.0 }, less: { $0 < $1 })
    }
}
