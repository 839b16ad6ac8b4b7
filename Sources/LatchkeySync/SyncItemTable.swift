import Latchkey
import LatchkeyFormat

/// What the sync state knows of each item (§9.1), paged so that a sync reads and writes only
/// the pages of the items it touches: 256 **item pages** by the first byte of the sync id, and
/// 256 **unique pages** by the first byte of the unique digest, each listing the live items
/// whose winner has that digest (what the unique-key check of §8.3 looks up). Each page is a
/// file of its own, sealed like the state, read when first used and written when changed.
///
/// The table also keeps, in the state itself, the count of live items and the **unsettled**
/// items: those whose keychain copy is not the merged winner (§8.5), or that wait for a locked
/// class. Applying the merge looks at those only. Every change goes through the subscript's
/// setter, which keeps the unique pages, the count and the unsettled set true.
///
/// A page that cannot be read or opened (a damaged file) reads as empty and is remembered:
/// `check()` throws then, and a sync calls it before anything leaves memory.
package final class ItemTable: @unchecked Sendable {
    static let pageCount = 256
    enum Kind: UInt8 {
        case items = 0x69  // "i"
        case unique = 0x75  // "u"
    }

    /// Reads the plaintext of a page file: (kind, page, generation) → bytes. Set by the engine.
    var reader: ((Kind, Int, UInt64) throws -> [UInt8])?
    /// The generation of the file of each page (0: the page is empty and has no file).
    package internal(set) var itemGenerations: [UInt64]
    package internal(set) var uniqueGenerations: [UInt64]
    private var itemPages: [Int: [SyncID: SyncedItem]] = [:]
    private var uniquePages: [Int: [[UInt8]: [SyncID]]] = [:]
    private(set) var dirtyItemPages = Set<Int>()
    private(set) var dirtyUniquePages = Set<Int>()
    package private(set) var liveCount: Int
    package private(set) var unsettled: Set<SyncID>
    private var damage: String?

    init(
        itemGenerations: [UInt64] = Array(repeating: 0, count: ItemTable.pageCount),
        uniqueGenerations: [UInt64] = Array(repeating: 0, count: ItemTable.pageCount),
        liveCount: Int = 0, unsettled: Set<SyncID> = []
    ) {
        self.itemGenerations = itemGenerations
        self.uniqueGenerations = uniqueGenerations
        self.liveCount = liveCount
        self.unsettled = unsettled
    }

    /// Whether something changed since the last save.
    var isDirty: Bool { !dirtyItemPages.isEmpty || !dirtyUniquePages.isEmpty }

    /// - Throws: errSecDecode when a page could not be read (the state is damaged).
    func check() throws {
        if let damage { throw KeychainError(.decode, damage) }
    }

    package subscript(id: SyncID) -> SyncedItem? {
        get { itemPage(Int(id[0]))[id] }
        set {
            let p = Int(id[0])
            let old = itemPage(p)[id]
            guard old != newValue else { return }
            itemPages[p]![id] = newValue
            dirtyItemPages.insert(p)
            let oldUnique = old.flatMap { $0.isLive ? $0.winner?.unique : nil }
            let newUnique = newValue.flatMap { $0.isLive ? $0.winner?.unique : nil }
            if oldUnique != newUnique {
                if let u = oldUnique { changeUnique(u) { $0.removeAll { $0 == id } } }
                if let u = newUnique { changeUnique(u) { $0.append(id) } }
            }
            liveCount += (newValue?.isLive == true ? 1 : 0) - (old?.isLive == true ? 1 : 0)
            if let n = newValue, !Self.isSettled(n) { unsettled.insert(id) } else { unsettled.remove(id) }
        }
    }

    /// Whether the keychain holds what the merge decided, and nothing waits for a locked class.
    static func isSettled(_ i: SyncedItem) -> Bool {
        let desired = i.isLive ? i.winner!.content : nil
        if i.isLive && desired == nil { return false }
        return desired == i.materialized
    }

    /// The live items whose winner has the unique digest `u`.
    func ids(unique u: [UInt8]) -> [SyncID] { uniquePage(Int(u[0]))[u] ?? [] }

    /// Every item (reads every page: for the full scan of a keychain without a change feed).
    func all() -> [(SyncID, SyncedItem)] {
        var out: [(SyncID, SyncedItem)] = []
        for p in 0..<Self.pageCount { out += itemPage(p).map { ($0.key, $0.value) } }
        return out
    }

    private func changeUnique(_ u: [UInt8], _ body: (inout [SyncID]) -> Void) {
        let p = Int(u[0])
        _ = uniquePage(p)
        var ids = uniquePages[p]![u] ?? []
        body(&ids)
        uniquePages[p]![u] = ids.isEmpty ? nil : ids
        dirtyUniquePages.insert(p)
    }

    private func itemPage(_ p: Int) -> [SyncID: SyncedItem] {
        if let page = itemPages[p] { return page }
        var page: [SyncID: SyncedItem] = [:]
        if itemGenerations[p] != 0 {
            do {
                page = try Self.decodeItems(try read(.items, p, itemGenerations[p]), page: p)
            } catch {
                damage = "the sync state's item page \(p) cannot be read (\(error)); the sync state is damaged"
            }
        }
        itemPages[p] = page
        return page
    }

    private func uniquePage(_ p: Int) -> [[UInt8]: [SyncID]] {
        if let page = uniquePages[p] { return page }
        var page: [[UInt8]: [SyncID]] = [:]
        if uniqueGenerations[p] != 0 {
            do {
                page = try Self.decodeUnique(try read(.unique, p, uniqueGenerations[p]), page: p)
            } catch {
                damage = "the sync state's unique page \(p) cannot be read (\(error)); the sync state is damaged"
            }
        }
        uniquePages[p] = page
        return page
    }

    private func read(_ kind: Kind, _ p: Int, _ generation: UInt64) throws -> [UInt8] {
        guard let reader else { throw SyncFormatError("no page reader") }
        return try reader(kind, p, generation)
    }

    // MARK: Saving

    /// Calls `body` with each page changed since the last save, encoded (an empty page: nil, it
    /// has no file), one at a time: a first sync does not hold every page encoded at once.
    func forEachChangedPage(_ body: (_ kind: Kind, _ page: Int, _ plaintext: [UInt8]?) throws -> Void) rethrows {
        for p in dirtyItemPages.sorted() {
            let page = itemPages[p]!
            try body(.items, p, page.isEmpty ? nil : Self.encodeItems(page))
        }
        for p in dirtyUniquePages.sorted() {
            let page = uniquePages[p]!
            try body(.unique, p, page.isEmpty ? nil : Self.encodeUnique(page))
        }
    }

    /// After the state that names them was saved: the changed pages are at `generation` now
    /// (0 for the empty ones).
    func saved(generation: UInt64) {
        for p in dirtyItemPages { itemGenerations[p] = itemPages[p]!.isEmpty ? 0 : generation }
        for p in dirtyUniquePages { uniqueGenerations[p] = uniquePages[p]!.isEmpty ? 0 : generation }
        dirtyItemPages = []
        dirtyUniquePages = []
    }

    // MARK: Page layouts (§9.1)

    static func encodeItems(_ page: [SyncID: SyncedItem]) -> [UInt8] {
        var w = ByteWriter(capacity: 8 + page.count * 120)
        w.writeInteger(UInt32(page.count))
        for (id, i) in page {
            w.writeBytes(id)
            SyncState.writeVersion(&w, i.winner)
            SyncState.writeVersion(&w, i.deleted)
            SyncState.writeOptional(&w, i.shadowedBy)
            SyncState.writeOptional(&w, i.materialized)
            w.writeInteger(i.materializedSequence)
        }
        return w.bytes
    }

    static func decodeItems(_ bytes: [UInt8], page p: Int) throws -> [SyncID: SyncedItem] {
        var r = ByteReader(bytes)
        let n = Int(try r.readInteger(as: UInt32.self, "items"))
        guard n <= bytes.count / 16 else { throw SyncFormatError("item page: count") }
        var page: [SyncID: SyncedItem] = [:]
        page.reserveCapacity(n)
        for _ in 0..<n {
            let id = try r.readBytes(count: 16, "id")
            guard Int(id[0]) == p, page[id] == nil else { throw SyncFormatError("item page: id") }
            page[id] = SyncedItem(
                winner: try SyncState.readVersion(&r), deleted: try SyncState.readVersion(&r),
                shadowedBy: try SyncState.readOptional(&r), materialized: try SyncState.readOptional(&r),
                materializedSequence: try r.readInteger("materialized sequence"))
        }
        try r.expectEnd("item page")
        return page
    }

    static func encodeUnique(_ page: [[UInt8]: [SyncID]]) -> [UInt8] {
        var w = ByteWriter(capacity: 8 + page.count * 40)
        w.writeInteger(UInt32(page.count))
        for (u, ids) in page {
            w.writeBytes(u)
            w.writeInteger(UInt32(ids.count))
            for id in ids { w.writeBytes(id) }
        }
        return w.bytes
    }

    static func decodeUnique(_ bytes: [UInt8], page p: Int) throws -> [[UInt8]: [SyncID]] {
        var r = ByteReader(bytes)
        let n = Int(try r.readInteger(as: UInt32.self, "digests"))
        guard n <= bytes.count / 16 else { throw SyncFormatError("unique page: count") }
        var page: [[UInt8]: [SyncID]] = [:]
        page.reserveCapacity(n)
        for _ in 0..<n {
            let u = try r.readBytes(count: 16, "digest")
            let k = Int(try r.readInteger(as: UInt32.self, "ids"))
            guard Int(u[0]) == p, k > 0, k <= r.remaining / 16, page[u] == nil else {
                throw SyncFormatError("unique page: digest")
            }
            page[u] = try (0..<k).map { _ in try r.readBytes(count: 16, "id") }
        }
        try r.expectEnd("unique page")
        return page
    }
}
