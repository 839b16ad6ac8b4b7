import LatchkeyCrypto
import LatchkeyFormat

/// A put as every writer checks it before placing it, in this order: its class key (the class
/// is unlocked), its size (spec/FORMAT.md §6.4), then its unique key (no other live item holds
/// it, §10.3). Made by `WriteTransaction.check(put:)`; the batched and the streaming writer
/// differ only in where they look the unique key's holder up.
struct CheckedPut {
    let id: ID16
    let uuid: [UInt8]
    let plaintext: ItemPlaintext
    let protection: ProtectionClass
    let flags: UInt8
    let classKey: SecretKey
    /// The encoded plaintext's size, which fixes the sealed record's.
    let plaintextSize: Int
    let uniqueKeyHash: [UInt8]
    let hash: ID16
    let classTag: [UInt8]
    /// The class tag as the slot holds it.
    let classTagWord: UInt32

    /// Refuses the put when another live item holds its unique key (`holder`: the item that
    /// holds it now, as the transaction has left the items so far).
    /// - Throws: errSecDuplicateItem.
    func requireUnique(holder: ID16?) throws {
        if let holder, holder != id {
            throw KeychainError(
                .duplicateItem,
                "an item with the same unique key already exists (for a password: same class, account, service and access group)"
            )
        }
    }

    /// The error for a delete of an item that is not live.
    static let noSuchItem = KeychainError(.itemNotFound, "the item to delete no longer exists")
}

/// Where the records of one transaction land, decided before any of them is sealed: the sealed
/// size of a put follows from its plaintext size, its hash record's from the attributes it has.
/// So a writer knows each item's slot (offset, size, sequence number) as it checks it, and the
/// sealer (`RecordSealer`) only has to produce the bytes; it checks that they land where this
/// placed them. After the closing fsync, `LogState.close(_:)` takes the end, the counts and the
/// journal from here, the same for the batched and the streaming writer.
struct TransactionLayout {
    /// Where the transaction begins: the committed end of the file.
    let start: UInt64
    let startSequence: UInt64
    /// Where the next record lands; the committed end once the transaction closed.
    private(set) var end: UInt64
    /// Records placed so far.
    private(set) var recordCount = 0
    /// Of them, ancillary records (the attribute-hash and history records).
    private(set) var ancillaryCount = 0
    /// Where the newest record starts (0: none yet).
    private(set) var lastRecordOffset: UInt64 = 0
    /// The items put or deleted, in order: all of them while they fit the log's journal
    /// (`LogState.journalLimit`), then only the count.
    private(set) var touched: [ID16] = []
    private(set) var touchedCount = 0

    init(start: UInt64, sequence: UInt64) {
        self.start = start
        self.startSequence = sequence
        end = start
    }

    /// The sequence number of the newest record.
    var lastSequence: UInt64 { startSequence + UInt64(recordCount) }

    /// The slot the put's record will have when it is placed next (`place(_:at:)`).
    func slot(for put: CheckedPut) -> ItemSlot {
        let size = RecordSealer.recordSize(payloadSize: ItemPutPayload.sealedSize(plaintextSize: put.plaintextSize))
        return ItemSlot(
            offset: end, recordSize: UInt32(size), classTag: put.classTagWord,
            protection: put.protection, flags: put.flags, uniqueHash: put.hash, sequence: lastSequence + 1)
    }

    /// Places the put at `slot` (from `slot(for:)`), then its attribute-hash record right
    /// after it (spec §7.6), and returns the sealer's job for both.
    mutating func place(_ put: CheckedPut, at slot: ItemSlot) -> RecordSealer.Job {
        precondition(slot.offset == end, "a put is placed where `slot(for:)` said")
        note(put.id)
        placed(Int(slot.recordSize), ancillary: false)
        let hashCount = AttributeHashRecord.hashCount(for: put.plaintext)
        placed(
            RecordSealer.recordSize(
                payloadSize: AttributeHashRecord.fixedSize + hashCount * AttributeHashRecord.hashSize),
            ancillary: true)
        return .put(
            uuid: put.uuid, plaintext: put.plaintext, protection: put.protection, flags: put.flags,
            classKey: put.classKey,
            classTag: put.classTag, uniqueKeyHash: put.uniqueKeyHash, at: slot.offset, size: Int(slot.recordSize),
            hashCount: hashCount)
    }

    /// Places a history record (spec §7.7) and returns the sealer's job; it goes right before
    /// the put or delete of its item, so the caller places that next.
    mutating func placeHistory(_ payload: [UInt8]) -> RecordSealer.Job {
        placed(RecordSealer.recordSize(payloadSize: payload.count), ancillary: true)
        return .history(payload: payload)
    }

    /// Places a delete of the item `uuid` and returns the sealer's job.
    mutating func placeDelete(_ uuid: [UInt8]) -> RecordSealer.Job {
        note(ID16(uuid))
        placed(RecordSealer.recordSize(payloadSize: uuid.count), ancillary: false)
        return .delete(uuid: uuid)
    }

    private mutating func placed(_ size: Int, ancillary: Bool) {
        lastRecordOffset = end
        end += UInt64(size)
        recordCount += 1
        if ancillary { ancillaryCount += 1 }
    }

    private mutating func note(_ id: ID16) {
        touchedCount += 1
        if touchedCount <= LogState.journalLimit { touched.append(id) } else { touched = [] }
    }
}

extension LogState {
    /// Takes the end, the sequence number, the record counts and the journal of a transaction
    /// this process appended and made durable (`layout`), as a scan of its records would leave
    /// them. The items and their attribute hashes are the writer's to apply.
    mutating func close(_ layout: TransactionLayout) {
        precondition(layout.start == end, "a transaction closes on the state it began from")
        end = layout.end
        lastSequence = layout.lastSequence
        lastRecordOffset = layout.lastRecordOffset
        recordCount += layout.recordCount
        skippedAncillary += layout.ancillaryCount
        if layout.touched.count == layout.touchedCount {
            for id in layout.touched { noteTouched(id) }
        } else {
            // Too many to list: the journal moves past them, so a follower compares every item.
            journalBase += UInt64(journal.count + layout.touchedCount)
            journal.removeAll(keepingCapacity: true)
        }
    }
}
