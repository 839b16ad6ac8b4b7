/// Item UUID → slot (nil: deleted since the index), with the live entries indexed a second time
/// by their unique-key hash: `ItemTable`'s changed items.
///
/// A find by unique key looks up the hash and needs the slot. Two maps (hash → UUID, then UUID
/// → slot) cost four random reads at 1,000,000 items (each map's bucket, then its entry), each
/// a cache miss and, in a virtual machine, often a TLB miss walking two sets of page tables.
/// Here the hash's buckets point straight at the entry of the UUID map: two reads.
///
/// Each hash bucket holds the entry's position + 1 (low 32 bits; 0: empty) and the low 32 bits
/// of the hash's mixed value (high 32 bits), from which the bucket's home is recomputed and
/// most probes of other entries are told apart without reading them. A hit is confirmed
/// against the entry's own hash. Linear probing, at most half full, no tombstones.
///
/// Invariant (the caller's, `ItemTable`): no two live entries hold the same unique-key hash.
struct SlotMap: Sequence, Sendable {
    private var items = IDMap<ItemSlot?>()
    private var byHash: [UInt64] = []
    private var hashMask = 0
    /// Live entries: those in `byHash`.
    private var live = 0

    init() {}

    var count: Int { items.count }
    var keys: [ID16] { items.keys }

    /// The entry of `id`: nil when absent, .some(nil) when deleted.
    subscript(id: ID16) -> ItemSlot?? { items[id] }

    func contains(_ id: ID16) -> Bool { items.contains(id) }

    mutating func reserveCapacity(_ n: Int) {
        items.reserveCapacity(n)
        if n * 2 > byHash.count { rehashHashes(minimumBuckets: n * 2) }
    }

    @inline(__always)
    private static func mixed(_ hash: ID16) -> UInt32 {
        UInt32(
            truncatingIfNeeded: IDMap<ItemSlot?>.mix(IDMap<ItemSlot?>.mix(hash.high ^ IDMap<ItemSlot?>.seed) ^ hash.low)
        )
    }

    /// The live entry whose unique-key hash is `hash`.
    @inline(__always)
    func owner(_ hash: ID16) -> (id: ID16, slot: ItemSlot)? {
        guard live > 0 else { return nil }
        let m = SlotMap.mixed(hash)
        var b = Int(m) & hashMask
        while true {
            let v = byHash[b]
            if v == 0 { return nil }
            if UInt32(truncatingIfNeeded: v >> 32) == m {
                let e = items.entry(at: Int(UInt32(truncatingIfNeeded: v)) - 1)
                if let slot = e.value, slot.uniqueHash == hash { return (e.key, slot) }
            }
            b = (b + 1) & hashMask
        }
    }

    /// Sets `id`'s entry (nil: deleted). The new slot's hash must not be held by another live
    /// entry.
    mutating func set(_ id: ID16, _ value: ItemSlot?) {
        if let p = items.position(of: id) {
            if let old = items.entry(at: p).value { removeHash(old.uniqueHash, position: p) }
            items.setValue(value, at: p)
            if let value { insertHash(value.uniqueHash, position: p) }
        } else {
            let p = items.insert(id, value)
            if let value { insertHash(value.uniqueHash, position: p) }
        }
    }

    /// Removes `id`'s entry (the last entry moves into its place).
    mutating func remove(_ id: ID16) {
        guard let p = items.position(of: id) else { return }
        if let old = items.entry(at: p).value { removeHash(old.uniqueHash, position: p) }
        let last = items.count - 1
        if p != last, let moving = items.entry(at: last).value {
            repointHash(moving.uniqueHash, from: last, to: p)
        }
        items.removeValue(forKey: id)
    }

    // MARK: The hash buckets

    private mutating func insertHash(_ hash: ID16, position: Int) {
        if (live + 1) * 2 > byHash.count { rehashHashes(minimumBuckets: Swift.max(16, (live + 1) * 2)) }
        let m = SlotMap.mixed(hash)
        var b = Int(m) & hashMask
        while byHash[b] != 0 { b = (b + 1) & hashMask }
        byHash[b] = UInt64(m) << 32 | UInt64(position + 1)
        live += 1
    }

    /// The bucket of `hash` that points at `position`.
    private func hashBucket(_ hash: ID16, position: Int) -> Int {
        var b = Int(SlotMap.mixed(hash)) & hashMask
        while UInt32(truncatingIfNeeded: byHash[b]) != UInt32(position + 1) {
            precondition(byHash[b] != 0, "SlotMap: a live entry missing from the hash buckets")
            b = (b + 1) & hashMask
        }
        return b
    }

    private mutating func repointHash(_ hash: ID16, from: Int, to: Int) {
        let b = hashBucket(hash, position: from)
        byHash[b] = byHash[b] & 0xFFFF_FFFF_0000_0000 | UInt64(to + 1)
    }

    /// Empties the bucket and shifts later buckets of its probe chain back (Knuth's
    /// algorithm R), as `IDMap` does.
    private mutating func removeHash(_ hash: ID16, position: Int) {
        var hole = hashBucket(hash, position: position)
        var b = hole
        while true {
            b = (b + 1) & hashMask
            let v = byHash[b]
            if v == 0 { break }
            let home = Int(UInt32(truncatingIfNeeded: v >> 32)) & hashMask
            let inRange = hole <= b ? (home > hole && home <= b) : (home > hole || home <= b)
            if !inRange {
                byHash[hole] = v
                hole = b
            }
        }
        byHash[hole] = 0
        live -= 1
    }

    private mutating func rehashHashes(minimumBuckets: Int) {
        var n = 16
        while n < minimumBuckets { n <<= 1 }
        let old = byHash
        byHash = [UInt64](unsafeUninitializedCapacity: n) { b, count in
            adviseHugePages(UnsafeRawPointer(b.baseAddress!), byteCount: n * 8)
            b.initialize(repeating: 0)
            count = n
        }
        hashMask = n - 1
        for v in old where v != 0 {
            var b = Int(UInt32(truncatingIfNeeded: v >> 32)) & hashMask
            while byHash[b] != 0 { b = (b + 1) & hashMask }
            byHash[b] = v
        }
    }

    func makeIterator() -> IDMap<ItemSlot?>.Iterator { items.makeIterator() }
    var underestimatedCount: Int { count }
}
