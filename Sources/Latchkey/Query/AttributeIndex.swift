#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyFormat

/// Decrypted attributes of the items this keychain has read, kept as columns so that a query
/// on attributes that are not the unique key (one service among many) neither decrypts every
/// item again nor hashes anything per item.
///
/// One row per live item. A column per attribute name that queries use holds, for every row,
/// the code of the row's value in that column's table of distinct values (−1: the item has no
/// such attribute, or the row is not decrypted). A query tests each distinct value once, then compares small
/// integers row by row. Apple keeps SHA-1 columns on disk for the same purpose (reference
/// §9.2); this keeps nothing on disk.
///
/// Rows follow the store: the journal of the log (`LogState.journal`) says which items changed
/// since the last query; a row whose record changed (new sequence number) is decrypted again
/// when a query needs it. Rows are used only while the item's class key is available:
/// `drop(protections:)` (called by `lock()`) forgets the WhenUnlocked rows, so a locked class
/// still answers errSecInteractionNotAllowed. Secret data is never kept.
final class AttributeIndex: @unchecked Sendable {
    /// A test of one attribute: `test` for a present value, `absent` for an item without it.
    struct Predicate {
        var name: String
        var absent: Bool
        var test: (AttributeValue) -> Bool
    }

    struct Column {
        var codes: [Int32]
        var values: [AttributeValue] = []
        var codeOf: [Exact: Int32] = [:]

        mutating func intern(_ v: AttributeValue) -> Int32 {
            if let c = codeOf[Exact(v)] { return c }
            let c = Int32(values.count)
            values.append(v)
            codeOf[Exact(v)] = c
            return c
        }
    }

    /// A value compared by kind and exact bytes. AttributeValue's own `==` compares strings by
    /// canonical equivalence, which would make an NFC and an NFD spelling one value (no Unicode
    /// normalization, spec/FORMAT.md §7.5; ResultShapeTests checks it).
    struct Exact: Hashable {
        var value: AttributeValue
        init(_ value: AttributeValue) { self.value = value }

        static func == (a: Exact, b: Exact) -> Bool {
            switch (a.value, b.value) {
            case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
            case (.data(let x), .data(let y)): return x == y
            case (.integer(let x), .integer(let y)): return x == y
            case (.date(let x), .date(let y)): return x.bitPattern == y.bitPattern
            default: return false
            }
        }

        func hash(into h: inout Hasher) {
            h.combine(value.typeCode)
            switch value {
            case .string(let s):
                var s = s
                s.withUTF8 { h.combine(bytes: UnsafeRawBufferPointer($0)) }
            case .data(let d): d.withUnsafeBytes { h.combine(bytes: $0) }
            case .integer(let i): h.combine(i)
            case .date(let d): h.combine(d.bitPattern)
            }
        }
    }

    /// Where in the store's log the rows were last brought up to date.
    private struct Position: Equatable {
        var epoch: UInt64
        var journalEnd: UInt64
    }

    private let mutex = Lock()
    private var position: Position?
    /// The store the rows follow (held, so that its identity cannot be reused).
    private var followed: KeychainStore?
    private var ids: [ID16] = []
    private var slots: [ItemSlot] = []
    private var live: [Bool] = []
    private var seen: [UInt32] = []
    private var syncs: UInt32 = 0
    /// Attributes of decrypted rows (data always empty, `pdmn` set); nil: not decrypted.
    private var plaintexts: [ItemPlaintext?] = []
    /// `plaintexts[r] != nil`, without touching the plaintext.
    private var decoded: [Bool] = []
    private var rowOf: [ID16: Int] = [:]
    private var columns: [String: Column] = [:]
    private var deadRows = 0
    /// Rows decrypted again or forgotten since the last rebuild: each may have left values in
    /// the columns that no row uses any more.
    private var forgottenRows = 0

    /// The live items of class `classTag` (and protection class `protection`, when given) whose
    /// attributes pass every predicate, in file order, with their cached attributes.
    /// `decrypt` reads an item the index does not know yet (it throws for a locked class, and
    /// then the whole call fails, as on iOS).
    func select(
        store: KeychainStore, classTag: UInt32, protection: ProtectionClass?,
        available: (ProtectionClass) -> Bool, predicates: [Predicate],
        decrypt: (ID16, ItemSlot) throws -> ItemPlaintext
    ) throws -> [(ID16, ItemSlot, ItemPlaintext)] {
        // The store's lock first, then the index's: the order `update` and `delete` take them
        // in (they query inside the store's write lock). The other order could deadlock two
        // threads sharing a Keychain.
        try store.withStoreLock {
            mutex.lock(); defer { mutex.unlock() }
            return try selectLocked(
                store: store, classTag: classTag, protection: protection, available: available,
                predicates: predicates, decrypt: decrypt)
        }
    }

    private func selectLocked(
        store: KeychainStore, classTag: UInt32, protection: ProtectionClass?,
        available: (ProtectionClass) -> Bool, predicates: [Predicate],
        decrypt: (ID16, ItemSlot) throws -> ItemPlaintext
    ) throws -> [(ID16, ItemSlot, ItemPlaintext)] {
        try follow(store)
        var open = [Bool](repeating: false, count: 256)
        for pc in ProtectionClass.allCases { open[Int(pc.rawValue)] = available(pc) }
        // Pass 1: the candidate rows; decrypt those not known yet (this may add column values).
        var candidates: [Int] = []
        do {
            let live = self.live, slots = self.slots, decoded = self.decoded, ids = self.ids
            for r in 0..<slots.count where live[r] && slots[r].classTag == classTag {
                let pc = slots[r].protection
                if let protection, pc != protection { continue }
                candidates.append(r)
                if decoded[r] && open[Int(pc.rawValue)] { continue }
                var p = try decrypt(ids[r], slots[r])
                p.data = []
                p.attributes["pdmn"] = .string(pc.code)
                remember(row: r, p)
            }
        }
        // Pass 2: each predicate becomes a table over its column's distinct values.
        var tables: [(codes: [Int32], ok: [Bool], absent: Bool)] = []
        for pred in predicates {
            let column = self.column(pred.name)
            tables.append((column.codes, column.values.map(pred.test), pred.absent))
        }
        var hits: [Int] = []
        rows: for r in candidates {
            for t in tables {
                let c = t.codes[r]
                if c < 0 ? !t.absent : !t.ok[Int(c)] { continue rows }
            }
            hits.append(r)
        }
        hits.sort { slots[$0].offset < slots[$1].offset }
        return hits.map { (ids[$0], slots[$0], plaintexts[$0]!) }
    }

    /// Forgets the attributes of the items of these classes (their class keys were dropped).
    func drop(protections: Set<ProtectionClass>) {
        mutex.lock(); defer { mutex.unlock() }
        for r in 0..<ids.count where decoded[r] && protections.contains(slots[r].protection) {
            forget(row: r)
        }
    }

    // MARK: Rows

    private func remember(row r: Int, _ p: ItemPlaintext) {
        if decoded[r] { forget(row: r) }
        plaintexts[r] = p
        decoded[r] = true
        for name in columns.keys where name != "pdmn" {
            if let value = p.attributes[name] { columns[name]!.codes[r] = columns[name]!.intern(value) }
        }
    }

    /// The column of an attribute, made from the decrypted rows the first time a query names
    /// it (columns exist only for attributes that queries use). `pdmn` is in the rows for the
    /// results, never a column: on disk no item has it, and a query that names it matches
    /// nothing (as the unique-key path does).
    private func column(_ name: String) -> Column {
        if let c = columns[name] { return c }
        var c = Column(codes: [Int32](repeating: -1, count: ids.count))
        if name != "pdmn" {
            for r in 0..<ids.count {
                if let value = plaintexts[r]?.attributes[name] { c.codes[r] = c.intern(value) }
            }
        }
        columns[name] = c
        return c
    }

    private func forget(row r: Int) {
        guard decoded[r] else { return }
        plaintexts[r] = nil
        decoded[r] = false
        forgottenRows += 1
        for name in columns.keys { columns[name]!.codes[r] = -1 }
    }

    private func kill(row r: Int) {
        forget(row: r)
        live[r] = false
        rowOf[ids[r]] = nil
        deadRows += 1
    }

    /// The row for a live item: the same one if its record did not change.
    @discardableResult
    private func place(_ id: ID16, _ slot: ItemSlot) -> Int {
        if let r = rowOf[id] {
            if slots[r].sequence != slot.sequence {
                forget(row: r)
                slots[r] = slot
            }
            return r
        }
        let r = ids.count
        ids.append(id)
        slots.append(slot)
        live.append(true)
        seen.append(0)
        plaintexts.append(nil)
        decoded.append(false)
        for name in columns.keys { columns[name]!.codes.append(-1) }
        rowOf[id] = r
        return r
    }

    /// Brings the rows up to date with the store: through the journal when it reaches back to
    /// the last visit, else by comparing every live item.
    private func follow(_ store: KeychainStore) throws {
        try store.withLogState { log, epoch in
            if followed !== store {
                reset()
                followed = store
                position = nil
            }
            let now = Position(epoch: epoch, journalEnd: log.journalEnd)
            if now == position { return }
            if let p = position, p.epoch == now.epoch,
                p.journalEnd >= log.journalBase, p.journalEnd <= now.journalEnd
            {
                for id in log.journal[Int(p.journalEnd - log.journalBase)...] {
                    if let slot = log.items[id] { place(id, slot) } else if let r = rowOf[id] { kill(row: r) }
                }
            } else {
                syncs &+= 1
                for (id, slot) in log.items { seen[place(id, slot)] = syncs }
                for r in 0..<ids.count where live[r] && seen[r] != syncs { kill(row: r) }
            }
            position = now
        }
        if deadRows + forgottenRows > max(4096, ids.count) {
            rebuild()
        }
    }

    private func reset() {
        ids = []; slots = []; live = []; seen = []; plaintexts = []; decoded = []
        rowOf = [:]; columns = [:]; deadRows = 0; forgottenRows = 0
    }

    /// Drops dead rows and the values no row uses any more.
    private func rebuild() {
        let keep = (0..<ids.count).filter { live[$0] }
        let oldIDs = ids, oldSlots = slots, oldPlaintexts = plaintexts
        reset()
        for r in keep {
            let row = place(oldIDs[r], oldSlots[r])
            if let p = oldPlaintexts[r] { remember(row: row, p) }
        }
    }
}
