import LatchkeyFormat

/// The attribute pages and unhashed pages of an index file (spec/FORMAT.md §17.2, version
/// 1.1): every (attribute hash, item) pair of the hashed live items, sorted by hash then UUID,
/// and the UUIDs of the live items without a bound hash record. A lookup reads the O(log N)
/// pages of two binary searches; every page is authenticated before use.
extension IndexBase {
    private var attributesPerPage: Int { FormatConstants.indexAttributesPerPage }
    private var attributeSize: Int { FormatConstants.indexAttributeEntrySize }
    private var firstAttributePage: UInt32 { 1 + header.itemPages + header.uniquePages }
    private var firstUnhashedPage: UInt32 { firstAttributePage + header.attributePages }
    private var attributeCount: Int { Int(header.attributeCount) }

    private func attributeEntries(onPage p: Int) -> Int { min(attributesPerPage, attributeCount - p * attributesPerPage) }

    /// Attribute page `p` (0-based among the attribute pages), authenticated and checked to be
    /// strictly increasing.
    private func attributePage(_ p: Int) throws -> [UInt8] {
        let n = firstAttributePage + UInt32(p)
        if let page = attributeCache[n] { return page }
        let bytes = try readVerified(n)
        var previous: (UInt64, ID16)?
        for i in 0..<attributeEntries(onPage: p) {
            let e = IndexBase.attributeEntry(bytes, at: i * attributeSize)
            if let q = previous, !(q < e) { throw Unusable(reason: "attribute page \(p) is not sorted") }
            previous = e
        }
        if attributeCache.count >= IndexBase.cacheLimit { attributeCache.removeAll(keepingCapacity: true) }
        attributeCache[n] = bytes
        return bytes
    }

    private static func attributeEntry(_ bytes: [UInt8], at: Int) -> (UInt64, ID16) {
        (bytes.readBE(UInt64.self, at: at), IndexBase.key(bytes, at: at + 8))
    }

    /// The position of the first attribute entry whose hash is ≥ `hash`: a binary search over
    /// the pages (by their last entry), then inside one page.
    private func lowerBound(_ hash: UInt64) throws -> Int {
        let pages = Int(header.attributePages)
        var lo = 0, hi = pages
        while lo < hi {
            let mid = (lo + hi) / 2
            let bytes = try attributePage(mid)
            if bytes.readBE(UInt64.self, at: (attributeEntries(onPage: mid) - 1) * attributeSize) < hash { lo = mid + 1 } else { hi = mid }
        }
        guard lo < pages else { return attributeCount }
        let bytes = try attributePage(lo)
        var l = 0, h = attributeEntries(onPage: lo)
        while l < h {
            let m = (l + h) / 2
            if bytes.readBE(UInt64.self, at: m * attributeSize) < hash { l = m + 1 } else { h = m }
        }
        return lo * attributesPerPage + l
    }

    /// The positions of the entries with this hash.
    func attributeRange(_ hash: UInt64) throws -> Range<Int> {
        let start = try lowerBound(hash)
        let end = hash == .max ? attributeCount : try lowerBound(hash + 1)
        guard start <= end else { throw Unusable(reason: "its attribute table is not sorted") }
        return start..<end
    }

    /// The items whose entries hold this hash, as of the covered end.
    func attributeItems(_ hash: UInt64) throws -> [ID16] {
        var out: [ID16] = []
        for i in try attributeRange(hash) {
            let bytes = try attributePage(i / attributesPerPage)
            let (h, id) = IndexBase.attributeEntry(bytes, at: (i % attributesPerPage) * attributeSize)
            guard h == hash else { throw Unusable(reason: "its attribute table is not sorted") }
            out.append(id)
        }
        return out
    }

    /// Every attribute entry, in order, each page authenticated (for the index writer).
    func forEachAttribute(_ body: (UInt64, ID16) throws -> Void) throws {
        var previous: (UInt64, ID16)?
        for p in 0..<Int(header.attributePages) {
            let bytes = try attributeCache[firstAttributePage + UInt32(p)] ?? readVerified(firstAttributePage + UInt32(p))
            for i in 0..<attributeEntries(onPage: p) {
                let e = IndexBase.attributeEntry(bytes, at: i * attributeSize)
                if let q = previous, !(q < e) { throw Unusable(reason: "its attribute table is not sorted") }
                previous = e
                try body(e.0, e.1)
            }
        }
    }

    /// Every unhashed item, in UUID order, each page authenticated.
    func forEachUnhashed(_ body: (ID16) throws -> Void) throws {
        let perPage = FormatConstants.indexUnhashedPerPage
        let count = Int(header.unhashedCount)
        var previous: ID16?
        for p in 0..<Int(header.unhashedPages) {
            let n = firstUnhashedPage + UInt32(p)
            let bytes: [UInt8]
            if let cached = attributeCache[n] {
                bytes = cached
            } else {
                bytes = try readVerified(n)
                if attributeCache.count >= IndexBase.cacheLimit { attributeCache.removeAll(keepingCapacity: true) }
                attributeCache[n] = bytes
            }
            for i in 0..<min(perPage, count - p * perPage) {
                let id = IndexBase.key(bytes, at: i * FormatConstants.indexUnhashedEntrySize)
                if let q = previous, !(q < id) { throw Unusable(reason: "its unhashed table is not sorted") }
                previous = id
                try body(id)
            }
        }
    }
}
