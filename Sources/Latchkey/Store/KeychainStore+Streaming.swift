import LatchkeyCrypto
import LatchkeyFormat

/// One transaction of any size, written as it goes (spec/FORMAT.md §6.5, §10.4, §11.3):
/// every record but the last carries the continues flag and is appended in batches of about
/// 1 MiB without an fsync; closing it appends the closing record and fsyncs once. Until then
/// the records are an unclosed group, which every reader ignores and a writer's recovery cuts
/// off, so the transaction lands whole or not at all. On any failure the file is truncated back
/// to where the transaction began. Memory holds a few batches and the scratch item index, never
/// the whole transaction. Made only by `WriteTransaction.stream`, so only with the write lock
/// held; it can put and delete until the body it was given returns.
///
/// This thread checks and places each operation as a batched commit does (`CheckedPut`,
/// `TransactionLayout`), against its own copy of the item table; sealing, attribute hashing,
/// framing and writing the records runs on a worker thread (`RecordSealer`).
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
package final class StreamingTransaction {
    private let writer: WriteTransaction
    private var store: KeychainStore { writer.store }
    /// The live items as this transaction has left them so far (in memory), each slot where
    /// its record lands; the store takes it over when the transaction closes.
    private(set) var items: ItemTable
    /// The attribute hashes of the live items as this transaction has left them (spec §7.6),
    /// kept by the worker that computes them: complete once `finish` returned; taken over
    /// with `items`.
    var attributes: AttributeHashTable { sealer.attributes }
    /// Where each record lands, the counts and the items touched.
    private(set) var layout: TransactionLayout
    /// Records appended so far.
    package var recordCount: Int { layout.recordCount }
    private let sealer: RecordSealer
    /// Records are written in batches of about this many bytes.
    static var batchSize: Int { RecordSealer.batchSize }
    /// The index failed under a lookup and the table was rebuilt from the log (`fallBack`).
    private(set) var fellBack = false
    /// False once the body it was given has returned: then nothing more can be added.
    private var isOpen = true

    fileprivate init(_ writer: WriteTransaction) {
        self.writer = writer
        let store = writer.store
        items = store.log.items
        layout = TransactionLayout(start: store.log.end, sequence: store.log.lastSequence)
        sealer = RecordSealer(
            .streaming, fs: store.fs, fd: store.fd, keys: store.keys, fileUUID: store.header.fileUUID,
            attributes: store.log.attributes, offset: store.log.end, sequence: store.log.lastSequence)
    }

    private func requireOpen() {
        precondition(isOpen, "a StreamingTransaction is used only inside the body given to the call that made it")
    }

    /// Puts an item with the given UUID: a new item, or a replacement of the live item with
    /// that UUID. The plaintext is stored as given (its `cdat`/`mdat` included).
    /// A replaced item's version goes into the history first (spec §7.7); `isNew` says the
    /// caller knows no live item has this UUID (a fresh random one, or one it looked up), which
    /// saves looking the UUID up (on an indexed keychain, an index page read per put).
    /// - Throws: errSecDuplicateItem when another live item has the same unique key; class-key
    ///   errors (locked class); errSecParam for an item over the size limit; errSecIO.
    package func put(
        uuid: [UInt8], plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8, isNew: Bool = false
    ) throws {
        requireOpen()
        let put = try writer.check(
            put: ID16(uuid), uuid: uuid, plaintext: plaintext, protection: protection, flags: flags)
        try put.requireUnique(holder: lookup { try $0.owner(put.hash) })
        if !isNew, store.historyPolicy.keepsHistory, let old = try lookup({ try $0.slot(put.id) }),
            let h = try writer.keepHistory(of: put.id, old, .replaced, layout)
        {
            try sealer.submit(layout.placeHistory(h))
        }
        let slot = layout.slot(for: put)
        try items.put(put.id, slot, at: slot.offset, ownerChecked: true)
        try sealer.submit(layout.place(put, at: slot))
    }

    /// Deletes the live item with this UUID. - Throws: errSecItemNotFound when there is none.
    package func delete(uuid: [UInt8]) throws {
        requireOpen()
        let id = ID16(uuid)
        guard let old = try lookup({ try $0.slot(id) }) else { throw CheckedPut.noSuchItem }
        if let h = try writer.keepHistory(of: id, old, .deleted, layout) { try sealer.submit(layout.placeHistory(h)) }
        let at = layout.end
        guard try lookup({ try $0.remove(id, at: at) }) != nil else { throw CheckedPut.noSuchItem }
        try sealer.submit(layout.placeDelete(uuid))
    }

    /// The live items, as this transaction has left them so far, that have this UUID or this
    /// unique key (at most two).
    /// - Throws: errSecDecode / errSecIO when the index fails and the log cannot be read.
    package func conflicts(uuid: [UInt8], uniqueKey: UniqueKey) throws -> [StoredItem] {
        requireOpen()
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
        guard items.base != nil else {
            throw KeychainError(.internal, "the item table failed without an index under it")
        }
        let before = store.log.items
        var mine: [(ID16, ItemSlot?)] = []
        items.forEachChange { id, slot in
            if let was = before.change(id), was == slot { return }
            mine.append((id, slot))
        }
        try store.rebuildWithoutIndex()
        var table = store.log.items
        fellBack = true
        for (id, _) in mine { _ = try table.remove(id, at: layout.start) }
        for case let (id, slot?) in mine {
            do {
                try table.put(id, slot, at: slot.offset)
            } catch is ItemTable.RuleBroken {
                throw KeychainError(
                    .duplicateItem,
                    "an item with the same unique key already exists (found once the keychain's index was set aside after it failed a check); nothing was imported"
                )
            }
        }
        items = table
    }

    /// A slot of this transaction's records carries offset and size 0: its bytes may not be
    /// in the file yet, and it is not readable until the transaction closes.
    private func unwritten(_ s: ItemSlot) -> ItemSlot {
        guard s.offset >= layout.start else { return s }
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
    fileprivate func finish() throws {
        isOpen = false
        try sealer.finish()
    }

    /// Hands the item table over (the transaction is done with it).
    fileprivate func takeItems() -> ItemTable {
        defer { items = ItemTable() }
        return items
    }

    /// Stops the worker, then cuts the file back to where the transaction began.
    /// - Returns: whether the file was cut back (and the cut made durable).
    fileprivate func abandon() -> Bool {
        isOpen = false
        sealer.abandon()
        do {
            try store.fs.truncate(store.fd, to: layout.start)
            try store.fs.sync(store.fd)
            return true
        } catch {
            return false
        }
    }
}

extension WriteTransaction {
    /// Runs `body` with a streaming transaction; when `body` returns, the transaction is closed
    /// and made durable, then applied and recorded in the device state. When `body` or the
    /// closing write throws, the file is cut back to its size before the transaction, and
    /// nothing changes.
    func stream<T>(_ body: (StreamingTransaction) throws -> T) throws -> T {
        requireOpen()
        let store = self.store
        // The transaction checks every put against the live items: in memory, or through the
        // index without reading all of it (see StreamingTransaction).
        let tx = StreamingTransaction(self)
        let result: T
        var closing = false
        do {
            result = try body(tx)
            closing = true
            try tx.finish()
        } catch {
            // Records without their closing one are never committed, whatever stays of them;
            // once the closing record may have been written, they may be.
            if !tx.abandon(), closing { throw store.changeMayHaveLanded(error) }
            throw error
        }
        guard tx.recordCount > 0 else { return result }
        if tx.fellBack {
            // The state was rebuilt from the log up to the transaction's start; its records,
            // durable now, are applied by reading them (O(transaction)), which also takes
            // their attribute hashes. Should that fail the next call opens the file again.
            do {
                _ = try store.scanMapped()
            } catch {
                store.needsReopen = true
            }
            store.recordCommit(tx.layout.lastSequence)
            return result
        }
        // The records are durable, so the call succeeds whatever follows (spec §11.4). The
        // transaction checked every operation against the live items as a reader applies them
        // (unique keys, deletes of live items) and placed each slot where its record landed,
        // so its table is the state after the records: no second read.
        store.log.items = tx.takeItems()
        store.log.attributes = tx.attributes
        store.log.close(tx.layout)
        store.recordCommit(tx.layout.lastSequence)
        return result
    }
}

extension KeychainStore {
    /// `write { try $0.stream(body) }`: one streaming transaction under the write lock (for
    /// the other modules of the package: backup restore).
    package func withStreamingTransaction<T>(_ body: (StreamingTransaction) throws -> T) throws -> T {
        try write { try $0.stream(body) }
    }
}

extension Device {
    /// The device secret, for the backup key schedule (spec/BACKUP.md). Never leaves memory.
    package var deviceSecret: DeviceSecret { secret }

    /// The state file of a keychain (spec/FORMAT.md §9.1), so a failed restore can remove the
    /// state of the keychain it created.
    package func stateFilePath(fileUUID: [UInt8]) -> String { statePath(fileUUID: fileUUID) }
}
