#if canImport(Glibc)
    import Glibc
#endif

/// A map from `ID16` (an item UUID or a unique-key hash: random 128-bit values) to `Value`,
/// compact and without per-lookup hashing cost: the entries in one dense array (each key next
/// to its value, so that a hit costs one cache miss there, not two), and an open-addressing
/// table of 32-bit positions into it (linear probing, at most half full).
/// It holds the same entries in little more than half a `Dictionary`'s memory (docs/RESULTS.md,
/// "Figures behind the code"), and a lookup hashes with a few multiplies instead of SipHash.
///
/// The bucket of a key mixes all 128 bits with a per-process random seed, so keys chosen to
/// collide (UUIDs come from files, backups included) cannot be prepared in advance. Removal
/// moves the last entry into the hole (order is not kept) and shifts the probe chain back (no
/// tombstones). A value type with copy-on-write, like the Dictionary it replaces.
struct IDMap<Value>: Sequence {
    private var entries: [Entry] = []
    /// Position + 1 in `entries`; 0: empty. The count is a power of two (or 0).
    private var buckets: [UInt32] = []
    private var mask = 0

    static var seed: UInt64 { IDMapSeed.value }

    fileprivate struct Entry {
        var key: ID16
        var value: Value
    }

    init() {}

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    /// The keys, in the map's (unspecified) order.
    var keys: [ID16] { entries.map(\.key) }

    mutating func reserveCapacity(_ n: Int) {
        entries.reserveCapacity(n)
        entries.withUnsafeBufferPointer {
            if let base = $0.baseAddress {
                adviseHugePages(UnsafeRawPointer(base), byteCount: entries.capacity * MemoryLayout<Entry>.stride)
            }
        }
        if n * 2 > buckets.count { rehash(minimumBuckets: n * 2) }
    }

    /// SplitMix64's finalizer: every input bit moves every output bit.
    @inline(__always)
    static func mix(_ z: UInt64) -> UInt64 {
        var z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    @inline(__always)
    private func bucket(_ k: ID16) -> Int {
        Int(truncatingIfNeeded: IDMap.mix(IDMap.mix(k.high ^ IDMap.seed) ^ k.low)) & mask
    }

    /// The bucket holding `k`, or nil.
    @inline(__always)
    private func find(_ k: ID16) -> (bucket: Int, position: Int)? {
        guard !buckets.isEmpty else { return nil }
        var b = bucket(k)
        while true {
            let p = buckets[b]
            if p == 0 { return nil }
            if entries[Int(p) - 1].key == k { return (b, Int(p) - 1) }
            b = (b + 1) & mask
        }
    }

    subscript(key: ID16) -> Value? {
        get {
            guard let (_, p) = find(key) else { return nil }
            return entries[p].value
        }
        set {
            if let newValue { insert(key, newValue) } else { removeValue(forKey: key) }
        }
    }

    func contains(_ key: ID16) -> Bool { find(key) != nil }

    // MARK: Positions (for `SlotMap`, which indexes the entries by a second key)

    /// Where `key`'s entry is in the dense array, or nil. Stable until a removal moves the
    /// last entry into a hole (`remove(_:)` says which).
    @inline(__always)
    func position(of key: ID16) -> Int? { find(key)?.position }

    /// The entry at a position `position(of:)` or `insert` gave.
    @inline(__always)
    func entry(at position: Int) -> (key: ID16, value: Value) {
        let e = entries[position]
        return (e.key, e.value)
    }

    /// Replaces the value at a position (its key stays).
    mutating func setValue(_ value: Value, at position: Int) { entries[position].value = value }

    /// Inserts or replaces; returns the entry's position (`position(of:)`).
    @discardableResult
    mutating func insert(_ key: ID16, _ value: Value) -> Int {
        if let (_, p) = find(key) {
            entries[p].value = value
            return p
        }
        if (entries.count + 1) * 2 > buckets.count { rehash(minimumBuckets: Swift.max(16, (entries.count + 1) * 2)) }
        var b = bucket(key)
        while buckets[b] != 0 { b = (b + 1) & mask }
        entries.append(Entry(key: key, value: value))
        buckets[b] = UInt32(entries.count)
        return entries.count - 1
    }

    @discardableResult
    mutating func removeValue(forKey key: ID16) -> Value? {
        guard let (b, p) = find(key) else { return nil }
        let old = entries[p].value
        deleteBucket(b)
        let last = entries.count - 1
        if p != last {
            // Move the last entry into the hole and point its bucket there.
            var mb = bucket(entries[last].key)
            while buckets[mb] != UInt32(last + 1) { mb = (mb + 1) & mask }
            buckets[mb] = UInt32(p + 1)
            entries.swapAt(p, last)
        }
        entries.removeLast()
        return old
    }

    /// Empties bucket `hole` and shifts later entries of its probe chain back (Knuth's
    /// algorithm R), so that every key stays reachable from its home bucket.
    private mutating func deleteBucket(_ hole: Int) {
        var hole = hole
        var b = hole
        while true {
            b = (b + 1) & mask
            let p = buckets[b]
            if p == 0 { break }
            let home = bucket(entries[Int(p) - 1].key)
            // Movable when its home is not cyclically in (hole, b].
            let inRange = hole <= b ? (home > hole && home <= b) : (home > hole || home <= b)
            if !inRange {
                buckets[hole] = p
                hole = b
            }
        }
        buckets[hole] = 0
    }

    private mutating func rehash(minimumBuckets: Int) {
        var n = 16
        while n < minimumBuckets { n <<= 1 }
        buckets = [UInt32](unsafeUninitializedCapacity: n) { b, count in
            adviseHugePages(UnsafeRawPointer(b.baseAddress!), byteCount: n * 4)
            b.initialize(repeating: 0)
            count = n
        }
        mask = n - 1
        for i in entries.indices {
            var b = bucket(entries[i].key)
            while buckets[b] != 0 { b = (b + 1) & mask }
            buckets[b] = UInt32(i + 1)
        }
    }

    /// Lets `body` change every value in place (the keys and their buckets stay).
    mutating func updateEach(_ body: (ID16, inout Value) -> Void) {
        for i in entries.indices { body(entries[i].key, &entries[i].value) }
    }

    struct Iterator: IteratorProtocol {
        fileprivate let map: IDMap
        fileprivate var i = 0
        mutating func next() -> (key: ID16, value: Value)? {
            guard i < map.entries.count else { return nil }
            defer { i += 1 }
            return (map.entries[i].key, map.entries[i].value)
        }
    }

    func makeIterator() -> Iterator { Iterator(map: self) }
    var underestimatedCount: Int { count }
}

extension IDMap: Sendable where Value: Sendable {}
extension IDMap.Entry: Sendable where Value: Sendable {}

/// The process's random seed for `IDMap` buckets.
private enum IDMapSeed {
    static let value: UInt64 = UInt64.random(in: .min ... .max)
}

/// Asks the kernel to back the 2 MiB-aligned pages inside a large table with huge pages
/// (transparent huge pages in `madvise` mode; a hint, without effect elsewhere), before they
/// are first touched. A million-item table spans tens of megabytes that lookups hit at random:
/// with 4 KiB pages nearly every lookup also missed the TLB, and in a virtual machine each
/// such miss walks two sets of page tables.
func adviseHugePages(_ start: UnsafeRawPointer, byteCount: Int) {
    #if os(Linux)
        let huge = 2 << 20
        guard byteCount >= 2 * huge else { return }
        let from = (Int(bitPattern: start) + huge - 1) & ~(huge - 1)
        let to = (Int(bitPattern: start) + byteCount) & ~(huge - 1)
        guard to > from, let p = UnsafeMutableRawPointer(bitPattern: from) else { return }
        _ = madvise(p, to - from, MADV_HUGEPAGE)
    #endif
}
