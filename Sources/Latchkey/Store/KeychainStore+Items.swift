import LatchkeyCrypto
import LatchkeyFormat

// The live items as the other modules of the package (backup, restore, import) see them: by
// UUID and unique key, as a list in file order, or as a snapshot listed without bringing them
// all into memory.

/// A live item as another module of the package sees it: its UUID and where its newest put
/// record is. Read it with `KeychainStore.read(_:)`.
package struct StoredItem: Sendable {
    package let uuid: [UInt8]
    let slot: ItemSlot
    package var protection: ProtectionClass { slot.protection }
    package var flags: UInt8 { slot.flags }
    /// The sequence number of the item's newest put: above a keychain's `lastSequence` of an
    /// earlier moment exactly when the item was written since (a compaction writes every put
    /// again, with numbers above the old file's; spec/FORMAT.md §6.5).
    package var sequence: UInt64 { slot.sequence }
}

extension KeychainStore {
    /// The live items with this UUID or this unique key (at most two).
    package func conflicts(uuid: [UInt8], uniqueKey: UniqueKey) throws -> [StoredItem] {
        var out: [StoredItem] = []
        if let s = try slot(id: ID16(uuid)) { out.append(StoredItem(uuid: uuid, slot: s)) }
        if let (id, s) = try slot(uniqueKey: uniqueKey), id != ID16(uuid) {
            out.append(StoredItem(uuid: id.bytes, slot: s))
        }
        return out
    }

    /// The live item with this UUID, if any.
    package func liveItem(uuid: [UInt8]) throws -> StoredItem? {
        try withStoreLock { try slot(id: ID16(uuid)).map { StoredItem(uuid: uuid, slot: $0) } }
    }

    /// The items put or deleted after sequence number `since`, from what the records after the
    /// index changed, without reading the index's pages; nil when that is not enough to
    /// answer (no index, or one that covers records after `since`): then list every live item
    /// (`liveItemSnapshot`). Deleted lists the UUIDs deleted after the index (some perhaps
    /// before `since`). For sync's change feed (spec/SYNC.md §9.2).
    package func changedItems(since: UInt64) throws -> (live: [StoredItem], deleted: [[UInt8]])? {
        try withStoreLock {
            guard let base = log.items.base, base.header.lastSequence <= since else { return nil }
            var live: [StoredItem] = []
            var deleted: [[UInt8]] = []
            for id in log.items.changedIDsInOrder() {
                if let slot = log.items.change(id) ?? nil {
                    if slot.sequence > since { live.append(StoredItem(uuid: id.bytes, slot: slot)) }
                } else {
                    deleted.append(id.bytes)
                }
            }
            return (live, deleted)
        }
    }

    /// Every live item, in file order (a snapshot: later changes are not seen).
    package func storedItems() throws -> [StoredItem] {
        try slots().sorted { $0.1.offset < $1.1.offset }.map { StoredItem(uuid: $0.0.bytes, slot: $0.1) }
    }

    /// Decrypts a live item found by `storedItems` or `conflicts`.
    /// - Throws: as `read(_:)`; errSecInternal for an item written by an open transaction.
    package func read(_ item: StoredItem) throws -> ItemPlaintext {
        guard item.slot.recordSize > 0 else {
            throw KeychainError(.internal, "an item written by the open transaction cannot be read before it closes")
        }
        return try read(item.slot, id: ID16(item.uuid))
    }

    /// The path of the index file of the keychain at `keychain` (spec/FORMAT.md §17).
    package static func indexPath(of keychain: String) -> String { IndexBase.path(of: keychain) }

    /// The device this keychain is bound to.
    package var boundDevice: Device { device }

    /// The live item count. With an index, checks what the records after it left for later
    /// (`ItemTable.checkAll`), which makes the count exact, and reads no more of it.
    package var liveItemCount: Int {
        get throws {
            try withStoreLock {
                do {
                    return try withIndexFallback {
                        try log.items.checkAll()
                        return log.items.count
                    }
                } catch {
                    needsReopen = true
                    throw error
                }
            }
        }
    }

    /// The class keys a restore needs for items of `pc` are present.
    package func canWrite(_ pc: ProtectionClass) -> Bool { isAvailable(pc) }
}

/// The live items of one moment, listed one at a time without bringing them all into memory:
/// with an index, its item pages in UUID order (every page authenticated as
/// it is read) with the changes since merged in; without, the table the open built. Made by
/// `KeychainStore.liveItemSnapshot`, which reads the whole list once first, so that the count
/// is known and a damaged index is met before any item is handed out.
package struct LiveItemSnapshot {
    let store: KeychainStore
    let items: ItemTable
    /// The live items.
    package let count: Int
    /// The protection classes of the live items, and how many each.
    package let countsByProtection: [ProtectionClass: Int]
    /// How many live items each class tag has (the file's tags, `KeychainStore.itemClass(of:)`).
    package let countsByClassTag: [UInt32: Int]

    /// Calls `body` with every live item of the snapshot, holding the store's lock (the index
    /// pages are read under it), so other threads of this process wait for the whole pass.
    /// - Throws: errSecDecode when the index fails a check it passed when the snapshot was
    ///   made (changed in place on disk since); the index is then set aside, and the next
    ///   snapshot is taken from the log. What `body` throws.
    package func forEach(_ body: (StoredItem) throws -> Void) throws {
        try store.withStoreLock {
            do {
                try KeychainStore.forEachLive(items) { id, slot in try body(StoredItem(uuid: id.bytes, slot: slot)) }
            } catch let u as IndexBase.Unusable {
                _ = try? store.rebuildWithoutIndex()
                throw KeychainError(
                    .decode,
                    "the index of the keychain \(store.path) failed a check while its items were being read (\(u.reason)); it was set aside and will be rebuilt from the keychain, whose items are intact; run the command again"
                )
            }
        }
    }
}

extension KeychainStore {
    /// The live items now, to be listed once or more (`LiveItemSnapshot`). Memory: the changes
    /// since the index, not the items. Reads the whole item table once (every index page
    /// authenticated); when the index fails, the items are rebuilt from the log first.
    /// - Throws: errSecDecode / errSecIO when the index fails and the log cannot be read
    ///   either (the next call opens the file again).
    package func liveItemSnapshot() throws -> LiveItemSnapshot {
        try withStoreLock {
            do {
                return try withIndexFallback {
                    try log.items.checkAll()
                    let items = log.items
                    var count = 0
                    var byProtection: [ProtectionClass: Int] = [:]
                    var byClassTag: [UInt32: Int] = [:]
                    try KeychainStore.forEachLive(items) { _, slot in
                        count += 1
                        byProtection[slot.protection, default: 0] += 1
                        byClassTag[slot.classTag, default: 0] += 1
                    }
                    return LiveItemSnapshot(
                        store: self, items: items, count: count, countsByProtection: byProtection,
                        countsByClassTag: byClassTag)
                }
            } catch {
                needsReopen = true
                throw error
            }
        }
    }

    /// Every live item of a checked table (`ItemTable.checkAll`): the index's entries not
    /// changed since, in UUID order, then the live changed ones in UUID order; or the table in
    /// memory.
    static func forEachLive(_ items: ItemTable, _ body: (ID16, ItemSlot) throws -> Void) throws {
        guard let base = items.base else {
            for (id, slot) in items { try body(id, slot) }
            return
        }
        try base.forEachItem { id, slot in
            if !items.hasChanged(id) { try body(id, slot) }
        }
        for id in items.changedIDsInOrder() {
            if let slot = items.change(id) ?? nil { try body(id, slot) }
        }
    }
}
