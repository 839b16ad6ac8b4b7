import LatchkeyCrypto
import LatchkeyFormat

/// A live item as another module of the package sees it: its UUID and where its newest put
/// record is. Read it with `KeychainStore.read(_:)`.
package struct StoredItem: Sendable {
    package let uuid: [UInt8]
    let slot: ItemSlot
    package var protection: ProtectionClass { slot.protection }
    package var flags: UInt8 { slot.flags }
}

/// One transaction of any size, written as it goes (spec/FORMAT.md §6.5, §10.4, §11.3):
/// every record but the last carries the continues flag and is appended in batches of about
/// 1 MiB without an fsync; `finish` appends the closing record and fsyncs once. Until then the
/// records are an unclosed group, which every reader ignores and a writer's recovery cuts off,
/// so the transaction lands whole or not at all. On any failure the file is truncated back to
/// where the transaction began. Memory holds a few batches and the scratch item index, never
/// the whole transaction.
///
/// This thread checks and places each operation (unique keys, the item table, where each
/// record lands); sealing, attribute hashing, framing and writing the records runs on a
/// worker thread (`RecordSealer`).
///
/// **On top of an index** the item table is not brought into memory: each put looks its
/// unique key up in the index (O(log N) pages) and the table keeps only the changes. Such a
/// lookup can find the index unusable (a page that fails its check, a read error, a rule the
/// index and the log break together) after records of the transaction were written, and the
/// input cannot be read again. The transaction then falls back instead of failing
/// (`fallBack`): the store's state is rebuilt from a scan of the log up to where the
/// transaction began (its unclosed records are ignored, as by any reader), the transaction's
/// own changes (every entry of its table that differs from the store's state at its start,
/// all of them placed in this transaction's records) are applied on top, and the lookup runs
/// again in memory. If the log itself is damaged, or the rebuilt state contradicts an answer
/// the index gave (a unique key another item holds), the transaction fails and the file is
/// cut back: nothing of it lands. After a fallback the store takes its state from a scan of
/// the transaction's records once they are durable, not from the transaction's table.
///
/// Use it only inside `KeychainStore.withStreamingTransaction`, and do not write to the
/// keychain through any other API from its body.
package final class StreamingTransaction {
    private let store: KeychainStore
    /// The live items as this transaction has left them so far (in memory), each slot where
    /// its record lands; the store takes it over when the transaction closes.
    private(set) var items: ItemTable
    /// The attribute hashes of the live items as this transaction has left them (spec §7.6),
    /// kept by the worker that computes them: complete once `finish` returned; taken over
    /// with `items`.
    var attributes: AttributeHashTable { sealer.attributes }
    /// The items put or deleted, in order: all of them while they fit the log's journal
    /// (`LogState.journalLimit`), then only the count.
    private(set) var touched: [ID16] = []
    private(set) var touchedCount = 0
    /// Where the newest record starts (0: none yet).
    private(set) var lastRecordOffset: UInt64 = 0
    /// Where the transaction began: the committed end of the file.
    let start: UInt64
    /// Where the next record lands.
    private var offset: UInt64
    private let startSequence: UInt64
    /// The sequence number of the newest record.
    var lastSequence: UInt64 { startSequence + UInt64(recordCount) }
    /// Records appended so far.
    package private(set) var recordCount = 0
    /// Of them, ancillary records (the attribute-hash records).
    private(set) var ancillaryCount = 0
    private let sealer: RecordSealer
    /// Records are written in batches of about this many bytes.
    static var batchSize: Int { RecordSealer.batchSize }
    /// The class tag of each item class (one per file).
    private var classTags: [ItemClass: [UInt8]] = [:]
    /// The index failed under a lookup and the table was rebuilt from the log (`fallBack`).
    private(set) var fellBack = false

    init(store: KeychainStore) {
        self.store = store
        items = store.log.items
        start = store.log.end
        offset = store.log.end
        startSequence = store.log.lastSequence
        sealer = RecordSealer(fs: store.fs, fd: store.fd, keys: store.keys, fileUUID: store.header.fileUUID,
                              attributes: store.log.attributes, offset: store.log.end, sequence: store.log.lastSequence)
    }

    /// Puts an item with the given UUID: a new item, or a replacement of the live item with
    /// that UUID. The plaintext is stored as given (its `cdat`/`mdat` included).
    /// - Throws: errSecDuplicateItem when another live item has the same unique key; class-key
    ///   errors (locked class); errSecParam for an item over the size limit; errSecIO.
    package func put(uuid: [UInt8], plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8) throws {
        let id = ID16(uuid)
        // In the order `KeychainStore.seal` checks: the class key, then the size.
        let classKey = try store.classKey(protection)
        let size: Int
        do {
            size = try ItemPutPayload.checkSize(plaintext)
        } catch let e as FormatError {
            throw KeychainError.fromFormat("the item", e)
        }
        let keys = store.keys
        let uniqueKeyHash = keys.uniqueKeyHash(UniqueKey(itemClass: plaintext.itemClass, attributes: plaintext.attributes))
        let hash = ID16(uniqueKeyHash)
        if let owner = try lookup({ try $0.owner(hash) }), owner != id {
            throw KeychainError(.duplicateItem, "an item with the same unique key already exists")
        }
        let classTag = classTags[plaintext.itemClass] ?? keys.classTag(plaintext.itemClass)
        classTags[plaintext.itemClass] = classTag
        let putSize = RecordSealer.recordSize(payloadSize: ItemPutPayload.sealedSize(plaintextSize: size))
        let at = offset
        let slot = ItemSlot(offset: at, recordSize: UInt32(putSize), classTag: keys.classTagWord(plaintext.itemClass),
                            protection: protection, flags: flags, uniqueHash: hash, sequence: lastSequence + 1)
        try items.put(id, slot, at: at, ownerChecked: true)
        note(id)
        // The put, then its attribute-hash record (spec §7.6), which the worker makes.
        let hashCount = AttributeHashRecord.hashCount(for: plaintext)
        placed(putSize, ancillary: false)
        placed(RecordSealer.recordSize(payloadSize: AttributeHashRecord.fixedSize + hashCount * AttributeHashRecord.hashSize),
               ancillary: true)
        try sealer.submit(.put(uuid: uuid, plaintext: plaintext, protection: protection, flags: flags, classKey: classKey,
                               classTag: classTag, uniqueKeyHash: uniqueKeyHash, at: at, size: putSize, hashCount: hashCount))
    }

    /// A record of `size` bytes lands at `offset`.
    private func placed(_ size: Int, ancillary: Bool) {
        lastRecordOffset = offset
        offset += UInt64(size)
        recordCount += 1
        if ancillary { ancillaryCount += 1 }
    }

    private func note(_ id: ID16) {
        touchedCount += 1
        if touchedCount <= LogState.journalLimit { touched.append(id) } else { touched = [] }
    }

    /// Deletes the live item with this UUID. - Throws: errSecItemNotFound when there is none.
    package func delete(uuid: [UInt8]) throws {
        let at = offset
        guard try lookup({ try $0.remove(ID16(uuid), at: at) }) != nil else {
            throw KeychainError(.itemNotFound, "the item to delete no longer exists")
        }
        note(ID16(uuid))
        placed(RecordSealer.recordSize(payloadSize: uuid.count), ancillary: false)
        try sealer.submit(.delete(uuid: uuid))
    }

    /// The live items, as this transaction has left them so far, that have this UUID or this
    /// unique key (at most two).
    /// - Throws: errSecDecode / errSecIO when the index fails and the log cannot be read.
    package func conflicts(uuid: [UInt8], uniqueKey: UniqueKey) throws -> [StoredItem] {
        var out: [StoredItem] = []
        let id = ID16(uuid)
        let hash = ID16(store.keys.uniqueKeyHash(uniqueKey))
        if let s = try lookup({ try $0.slot(id) }) { out.append(StoredItem(uuid: uuid, slot: unwritten(s))) }
        if let (owner, s) = try lookup({ try $0.item(uniqueHash: hash) }), owner != id {
            out.append(StoredItem(uuid: owner.bytes, slot: unwritten(s)))
        }
        return out
    }

    /// Runs a lookup on the table; when the index under it fails, falls back to the table in
    /// memory (`fallBack`) and runs it again there, where it cannot fail that way.
    private func lookup<R>(_ body: (inout ItemTable) throws -> R) throws -> R {
        do {
            return try body(&items)
        } catch is IndexBase.Unusable {
            try fallBack()
            return try body(&items)
        }
    }

    /// Replaces the table on top of the failed index with one in memory: the store's state
    /// rebuilt from the log up to `start` (the scan stops at this transaction's unclosed
    /// records), with this transaction's changes applied on top. Those changes are the
    /// entries of the table that differ from the store's state at `start`, which this
    /// transaction has not changed: a put's slot lies at or after `start`, so it differs from
    /// any older one; a delete differs from the live slot it removed (a put then a delete of
    /// the same new item leaves nothing to apply). Every touched item is removed first, then
    /// the live ones put back, so that a unique key moving between touched items is no
    /// conflict, and one held by an untouched item is.
    /// - Throws: the scan's errors (the log is damaged); errSecDuplicateItem when an item the
    ///   index did not show holds a unique key this transaction put. The caller abandons the
    ///   transaction then.
    private func fallBack() throws {
        guard items.base != nil else { throw KeychainError(.internal, "the item table failed without an index under it") }
        let before = store.log.items
        var mine: [(ID16, ItemSlot?)] = []
        items.forEachChange { id, slot in
            if let was = before.change(id), was == slot { return }
            mine.append((id, slot))
        }
        try store.rebuildWithoutIndex()
        var table = store.log.items
        fellBack = true
        for (id, _) in mine { _ = try table.remove(id, at: start) }
        for case let (id, slot?) in mine {
            do {
                try table.put(id, slot, at: slot.offset)
            } catch is ItemTable.RuleBroken {
                throw KeychainError(.duplicateItem, "an item with the same unique key already exists (found once the keychain's index was set aside after it failed a check); nothing was imported")
            }
        }
        items = table
    }

    /// A slot of this transaction's records carries offset and size 0: its bytes may not be
    /// in the file yet, and it is not readable until the transaction closes.
    private func unwritten(_ s: ItemSlot) -> ItemSlot {
        guard s.offset >= start else { return s }
        var placeholder = s
        (placeholder.offset, placeholder.recordSize) = (0, 0)
        return placeholder
    }

    /// Waits until the records of the operations so far are framed, and all but the newest
    /// batch written, as `RecordSealer.settle` says (tests look at the file mid-transaction).
    /// - Throws: a failure of the worker.
    func settle() throws { try sealer.settle() }

    /// Writes every record still queued, appends the closing record and makes the whole
    /// transaction durable with one fsync.
    func finish() throws {
        try sealer.finish()
    }

    /// The committed end of the file once the transaction closed.
    var end: UInt64 { offset }

    /// Hands the item table over (the transaction is done with it).
    func takeItems() -> ItemTable {
        defer { items = ItemTable() }
        return items
    }

    /// Stops the worker, then cuts the file back to where the transaction began.
    /// - Returns: whether the file was cut back (and the cut made durable).
    @discardableResult
    func abandon() -> Bool {
        sealer.abandon()
        do {
            try store.fs.truncate(store.fd, to: start)
            try store.fs.sync(store.fd)
            return true
        } catch {
            return false
        }
    }
}

extension KeychainStore {
    /// Runs `body` with a streaming transaction under the exclusive lock; when `body` returns,
    /// the transaction is closed and made durable, then applied and recorded in the device
    /// state. When `body` or the closing write throws, the file is cut back to its size before
    /// the transaction, and nothing changes.
    package func withStreamingTransaction<T>(_ body: (StreamingTransaction) throws -> T) throws -> T {
        try withWriteLock {
            // The transaction checks every put against the live items: in memory, or through
            // the index without reading all of it (see StreamingTransaction).
            let tx = StreamingTransaction(store: self)
            let result: T
            var closing = false
            do {
                result = try body(tx)
                closing = true
                try tx.finish()
            } catch {
                // Records without their closing one are never committed, whatever stays of
                // them; once the closing record may have been written, they may be.
                if !tx.abandon(), closing { throw changeMayHaveLanded(error) }
                throw error
            }
            guard tx.recordCount > 0 else { return result }
            if tx.fellBack {
                // The state was rebuilt from the log up to the transaction's start; its
                // records, durable now, are applied by reading them (O(transaction)), which
                // also takes their attribute hashes. Should that fail the next call opens
                // the file again.
                do {
                    _ = try scanMapped()
                } catch {
                    needsReopen = true
                }
                recordCommit(tx.lastSequence)
                return result
            }
            // The records are durable, so the call succeeds whatever follows (spec §11.4).
            // The transaction checked every operation against the live items as a reader
            // applies them (unique keys, deletes of live items) and placed each slot where its
            // record landed, so its table is the state after the records: no second read.
            log.adoptTransaction(items: tx.takeItems(), attributes: tx.attributes, end: tx.end, lastSequence: tx.lastSequence,
                                 lastRecordOffset: tx.lastRecordOffset, records: tx.recordCount, ancillary: tx.ancillaryCount,
                                 touched: tx.touched, touchedCount: tx.touchedCount)
            recordCommit(tx.lastSequence)
            return result
        }
    }

    /// The live items with this UUID or this unique key (at most two).
    package func conflicts(uuid: [UInt8], uniqueKey: UniqueKey) throws -> [StoredItem] {
        var out: [StoredItem] = []
        if let s = try slot(id: ID16(uuid)) { out.append(StoredItem(uuid: uuid, slot: s)) }
        if let (id, s) = try slot(uniqueKey: uniqueKey), id != ID16(uuid) { out.append(StoredItem(uuid: id.bytes, slot: s)) }
        return out
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

extension Keychain {
    /// The open file, for the streaming transactions of backup and restore (other modules of
    /// the package). - Throws: errSecNotAvailable for a keychain served by the agent.
    package func streamingStore() throws -> KeychainStore { try backend.streamingStore() }
}

extension Device {
    /// The device secret, for the backup key schedule (spec/BACKUP.md). Never leaves memory.
    package var deviceSecret: DeviceSecret { secret }

    /// The state file of a keychain (spec/FORMAT.md §9.1), so a failed restore can remove the
    /// state of the keychain it created.
    package func stateFilePath(fileUUID: [UInt8]) -> String { statePath(fileUUID: fileUUID) }
}

/// The live items of one moment, listed one at a time without bringing them all into memory
/// (issue 16 §3): with an index, its item pages in UUID order (every page authenticated as
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
                throw KeychainError(.decode, "the index of the keychain \(store.path) failed a check while its items were being read (\(u.reason)); it was set aside and will be rebuilt from the keychain, whose items are intact; run the command again")
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
                    return LiveItemSnapshot(store: self, items: items, count: count, countsByProtection: byProtection,
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
