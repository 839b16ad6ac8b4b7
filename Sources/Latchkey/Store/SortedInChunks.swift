/// Elements delivered in ascending order without holding them all, for the index writer's
/// merges (KeychainStore+Index.swift): `produce` gives every element, in any order, once per
/// pass; a pass keeps those whose `key` has the pass's value in its top bits, sorts them and
/// delivers them. So memory holds about `chunk` elements (more only when many share the top
/// bits of their key), each pass's buffer allocated at its size (a first pass counts) and
/// sorted in place, where sorting all of them at once held every element about twice over
/// (the array's growth and the sort's buffer): at 1,000,000 items 24 to 32 bytes each for the item, unique-
/// key and attribute pages. The cost is one `produce` per pass (⌈count / chunk⌉ rounded up to
/// a power of two). `key` must agree with `less`: a < b only when key(a)'s top bits ≤ key(b)'s.
struct SortedInChunks<Element>: IteratorProtocol {
    private let produce: ((Element) -> Void) -> Void
    private let key: (Element) -> UInt64
    private let less: (Element, Element) -> Bool
    /// How many elements `produce` gives.
    let count: Int
    /// A pass takes the elements whose key's top `bits` bits are `partition`.
    private let bits: Int
    private var partition: UInt64 = 0
    private var buffer: [Element] = []
    private var i = 0

    /// How many elements each pass takes (so that its buffer is allocated once, at its size).
    private let sizes: [Int]

    init(
        chunk: Int = 1 << 18, produce: @escaping ((Element) -> Void) -> Void, key: @escaping (Element) -> UInt64,
        less: @escaping (Element, Element) -> Bool
    ) {
        self.produce = produce
        self.key = key
        self.less = less
        // One pass counts the elements by the top 16 bits of their key.
        var histogram = [Int](repeating: 0, count: 1 << 16)
        produce { histogram[Int(truncatingIfNeeded: key($0) >> 48)] += 1 }
        let n = histogram.reduce(0, +)
        count = n
        var bits = 0
        while bits < 16, (n >> bits) > chunk { bits += 1 }
        self.bits = bits
        let group = 1 << (16 - bits)
        sizes = (0..<(1 << bits)).map { histogram[$0 * group..<($0 + 1) * group].reduce(0, +) }
    }

    /// The next element without consuming it.
    mutating func peek() -> Element? {
        while i == buffer.count {
            guard partition < (UInt64(1) << bits) else { return nil }
            i = 0
            // `>>` by the whole width gives 0: one pass takes everything when bits is 0.
            let p = partition, shift = UInt64(64 - bits), key = self.key
            var taken: [Element] = []
            buffer = []
            taken.reserveCapacity(sizes[Int(p)])
            produce { e in if key(e) >> shift == p { taken.append(e) } }
            taken.withUnsafeMutableBufferPointer { SortedInChunks.sortInPlace($0, by: less) }
            buffer = taken
            partition += 1
        }
        return buffer[i]
    }

    /// Quicksort (median of three, insertion sort for short ranges, the shorter side first):
    /// in place, where the standard library's stable sort allocates a buffer of half the
    /// elements. Not stable; the callers' elements are all distinct.
    static func sortInPlace(_ a: UnsafeMutableBufferPointer<Element>, by less: (Element, Element) -> Bool) {
        var stack: [(Int, Int)] = [(0, a.count - 1)]
        while let (lo0, hi0) = stack.popLast() {
            var lo = lo0, hi = hi0
            while hi - lo > 16 {
                let mid = lo + (hi - lo) / 2
                if less(a[mid], a[lo]) { a.swapAt(mid, lo) }
                if less(a[hi], a[lo]) { a.swapAt(hi, lo) }
                if less(a[hi], a[mid]) { a.swapAt(hi, mid) }
                let pivot = a[mid]
                var i = lo, j = hi
                while i <= j {
                    while less(a[i], pivot) { i += 1 }
                    while less(pivot, a[j]) { j -= 1 }
                    if i <= j {
                        a.swapAt(i, j)
                        i += 1
                        j -= 1
                    }
                }
                // Now a[lo...j] ≤ pivot ≤ a[i...hi]: continue with the shorter side, stack the other.
                if j - lo < hi - i {
                    stack.append((i, hi))
                    hi = j
                } else {
                    stack.append((lo, j))
                    lo = i
                }
            }
            if hi > lo {
                for k in (lo + 1)...hi {
                    let x = a[k]
                    var m = k - 1
                    while m >= lo && less(x, a[m]) {
                        a[m + 1] = a[m]
                        m -= 1
                    }
                    a[m + 1] = x
                }
            }
        }
    }

    mutating func next() -> Element? {
        guard let e = peek() else { return nil }
        i += 1
        return e
    }
}
