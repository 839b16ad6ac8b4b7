/// A map from `ID16` (an item UUID or a unique-key hash: random 128-bit values) to `Value`,
/// compact and without per-lookup hashing cost: the entries in two dense arrays, and an
/// open-addressing table of 32-bit positions into them (linear probing, at most half full).
/// At 1,000,000 entries of `ItemSlot?` it takes about 88 MB where a `Dictionary` took about
/// 150 MB, and a lookup hashes with a few multiplies instead of SipHash.
///
/// The bucket of a key mixes all 128 bits with a per-process random seed, so keys chosen to
/// collide (UUIDs come from files, backups included) cannot be prepared in advance. Removal
/// moves the last entry into the hole (order is not kept) and shifts the probe chain back (no
/// tombstones). A value type with copy-on-write, like the Dictionary it replaces.
struct IDMap<Value>: Sequence {
    private(set) var keys: [ID16] = []
    private(set) var values: [Value] = []
    /// Position + 1 in `keys`/`values`; 0: empty. The count is a power of two (or 0).
    private var buckets: [UInt32] = []
    private var mask = 0

    private static var seed: UInt64 { IDMapSeed.value }

    init() {}

    var count: Int { keys.count }
    var isEmpty: Bool { keys.isEmpty }

    mutating func reserveCapacity(_ n: Int) {
        keys.reserveCapacity(n)
        values.reserveCapacity(n)
        if n * 2 > buckets.count { rehash(minimumBuckets: n * 2) }
    }

    /// SplitMix64's finalizer: every input bit moves every output bit.
    @inline(__always)
    private static func mix(_ z: UInt64) -> UInt64 {
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
            if keys[Int(p) - 1] == k { return (b, Int(p) - 1) }
            b = (b + 1) & mask
        }
    }

    subscript(key: ID16) -> Value? {
        get {
            guard let (_, p) = find(key) else { return nil }
            return values[p]
        }
        set {
            if let newValue { insert(key, newValue) } else { removeValue(forKey: key) }
        }
    }

    func contains(_ key: ID16) -> Bool { find(key) != nil }

    mutating func insert(_ key: ID16, _ value: Value) {
        if let (_, p) = find(key) {
            values[p] = value
            return
        }
        if (keys.count + 1) * 2 > buckets.count { rehash(minimumBuckets: Swift.max(16, (keys.count + 1) * 2)) }
        var b = bucket(key)
        while buckets[b] != 0 { b = (b + 1) & mask }
        keys.append(key)
        values.append(value)
        buckets[b] = UInt32(keys.count)
    }

    @discardableResult
    mutating func removeValue(forKey key: ID16) -> Value? {
        guard let (b, p) = find(key) else { return nil }
        let old = values[p]
        deleteBucket(b)
        let last = keys.count - 1
        if p != last {
            // Move the last entry into the hole and point its bucket there.
            let moved = keys[last]
            var mb = bucket(moved)
            while buckets[mb] != UInt32(last + 1) { mb = (mb + 1) & mask }
            buckets[mb] = UInt32(p + 1)
            keys[p] = moved
            values.swapAt(p, last)
        }
        keys.removeLast()
        values.removeLast()
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
            let home = bucket(keys[Int(p) - 1])
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
        buckets = [UInt32](repeating: 0, count: n)
        mask = n - 1
        for (i, k) in keys.enumerated() {
            var b = bucket(k)
            while buckets[b] != 0 { b = (b + 1) & mask }
            buckets[b] = UInt32(i + 1)
        }
    }

    /// Lets `body` change every value in place (the keys and their buckets stay).
    mutating func updateEach(_ body: (ID16, inout Value) -> Void) {
        for i in values.indices { body(keys[i], &values[i]) }
    }

    struct Iterator: IteratorProtocol {
        fileprivate let map: IDMap
        fileprivate var i = 0
        mutating func next() -> (key: ID16, value: Value)? {
            guard i < map.keys.count else { return nil }
            defer { i += 1 }
            return (map.keys[i], map.values[i])
        }
    }

    func makeIterator() -> Iterator { Iterator(map: self) }
    var underestimatedCount: Int { count }
}

extension IDMap: Sendable where Value: Sendable {}

/// The process's random seed for `IDMap` buckets.
private enum IDMapSeed {
    static let value: UInt64 = UInt64.random(in: .min ... .max)
}
