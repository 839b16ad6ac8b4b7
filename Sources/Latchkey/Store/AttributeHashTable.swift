import LatchkeyFormat

/// The attribute hashes of the live items (spec/FORMAT.md §7.6): for each item, the hashes of
/// the hash record bound to its newest put, or "unhashed" when there is none. Either all in
/// memory (a scan from the start of the log), or an index file's attribute and unhashed pages
/// (§17.2, as of its covered end) with the items put or deleted since on top.
///
/// Only a filter: every candidate it gives is decrypted and matched by the caller, and every
/// unhashed item is a candidate, so no hash (missing, stale, forged) can make a query miss
/// an item or return one that does not match.
struct AttributeHashTable: Sendable {
    enum State: Sendable, Equatable {
        case hashed([UInt64])
        case unhashed
        /// Deleted since the base (only with a base).
        case deleted
    }

    private(set) var base: IndexBase?
    /// Items put or deleted since the base's covered end; without a base, every live item.
    private(set) var changed: [ID16: State] = [:]

    init() {}

    init(base: IndexBase) { self.base = base }

    /// A put applied: the item is unhashed until a hash record bound to this put follows.
    mutating func put(_ id: ID16) { changed[id] = .unhashed }

    /// The hash record bound to the item's newest put (applied right after it).
    mutating func setHashes(_ id: ID16, _ hashes: [UInt64]) { changed[id] = .hashed(hashes) }

    mutating func remove(_ id: ID16) {
        if base == nil { changed[id] = nil } else { changed[id] = .deleted }
    }

    /// How many items carry `hash` (an estimate: the base's entries count items changed since).
    func count(_ hash: UInt64) throws -> Int {
        var n = 0
        if let base { n += try base.attributeRange(hash).count }
        for case .hashed(let hs) in changed.values where hs.contains(hash) { n += 1 }
        return n
    }

    /// The items that may have `hash`: those whose hashes hold it, and every unhashed item.
    /// Deleted items are not given; the caller still checks each item against the live table.
    func candidates(_ hash: UInt64) throws -> Set<ID16> {
        var out = Set<ID16>()
        if let base {
            for id in try base.attributeItems(hash) where changed[id] == nil { out.insert(id) }
            try base.forEachUnhashed { id in if changed[id] == nil { out.insert(id) } }
        }
        for (id, state) in changed {
            switch state {
            case .hashed(let hs): if hs.contains(hash) { out.insert(id) }
            case .unhashed: out.insert(id)
            case .deleted: break
            }
        }
        return out
    }

    /// The items changed since the base, in UUID order (for the index writer).
    func changes() -> [(ID16, State)] {
        changed.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
    }

    func hasChanged(_ id: ID16) -> Bool { changed[id] != nil }
}
