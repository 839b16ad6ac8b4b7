import LatchkeyFormat

/// The attribute pages and unhashed pages of an index file (spec/FORMAT.md §17.2, version
/// 1.1): every (attribute hash, item) pair of the hashed live items, sorted by hash then UUID,
/// and the UUIDs of the live items without a bound hash record. A lookup reads the O(log N)
/// pages of two binary searches; every page is authenticated before use.
extension IndexBase {
    private var attributesPerPage: Int { IndexTable.attributes.entriesPerPage }
    private var firstAttributePage: UInt32 { 1 + header.itemPages + header.uniquePages }
    private var firstUnhashedPage: UInt32 { firstAttributePage + header.attributePages }
    private var attributeCount: Int { Int(header.attributeCount) }

    /// Attribute page `p` (0-based among the attribute pages), authenticated and checked to be
    /// strictly increasing.
    private func attributePage(_ p: Int) throws -> IndexEntryPage {
        let n = firstAttributePage + UInt32(p)
        if let page = attributeCache[n] { return page }
        let page = try readVerified(n)
        var previous: (UInt64, ID16)?
        for i in 0..<page.count {
            let e = IndexBase.attributeEntry(page, i)
            if let q = previous, !(q < e) { throw Unusable(reason: "attribute page \(p) is not sorted") }
            previous = e
        }
        cacheAttributePage(page, n)
        return page
    }

    private func cacheAttributePage(_ page: IndexEntryPage, _ n: UInt32) {
        if attributeCache.count >= IndexBase.cacheLimit { attributeCache.removeAll(keepingCapacity: true) }
        attributeCache[n] = page
    }

    private static func attributeEntry(_ page: IndexEntryPage, _ i: Int) -> (UInt64, ID16) {
        let e = page.attribute(i)
        return (e.hash, ID16(e.uuid))
    }

    /// The position of the first attribute entry whose hash is ≥ `hash`: a binary search over
    /// the pages (by their last entry), then inside one page.
    private func lowerBound(_ hash: UInt64) throws -> Int {
        let pages = Int(header.attributePages)
        var lo = 0, hi = pages
        while lo < hi {
            let mid = (lo + hi) / 2
            let page = try attributePage(mid)
            guard page.count > 0 else { throw Unusable(reason: "attribute page \(mid) is empty") }
            if page.attributeHash(page.count - 1) < hash { lo = mid + 1 } else { hi = mid }
        }
        guard lo < pages else { return attributeCount }
        let page = try attributePage(lo)
        var l = 0, h = page.count
        while l < h {
            let m = (l + h) / 2
            if page.attributeHash(m) < hash { l = m + 1 } else { h = m }
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
            let page = try attributePage(i / attributesPerPage)
            let (h, id) = IndexBase.attributeEntry(page, i % attributesPerPage)
            guard h == hash else { throw Unusable(reason: "its attribute table is not sorted") }
            out.append(id)
        }
        return out
    }

    /// Every attribute entry, in order, each page authenticated (for the index writer).
    func forEachAttribute(_ body: (UInt64, ID16) throws -> Void) throws {
        var previous: (UInt64, ID16)?
        for p in 0..<Int(header.attributePages) {
            let page =
                try attributeCache[firstAttributePage + UInt32(p)] ?? readVerified(firstAttributePage + UInt32(p))
            for i in 0..<page.count {
                let e = IndexBase.attributeEntry(page, i)
                if let q = previous, !(q < e) { throw Unusable(reason: "its attribute table is not sorted") }
                previous = e
                try body(e.0, e.1)
            }
        }
    }

    /// Every unhashed item, in UUID order, each page authenticated.
    func forEachUnhashed(_ body: (ID16) throws -> Void) throws {
        var previous: ID16?
        for p in 0..<Int(header.unhashedPages) {
            let n = firstUnhashedPage + UInt32(p)
            let page: IndexEntryPage
            if let cached = attributeCache[n] {
                page = cached
            } else {
                page = try readVerified(n)
                cacheAttributePage(page, n)
            }
            for i in 0..<page.count {
                let id = ID16(page.key(i))
                if let q = previous, !(q < id) { throw Unusable(reason: "its unhashed table is not sorted") }
                previous = id
                try body(id)
            }
        }
    }
}
