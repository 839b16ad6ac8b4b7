import LatchkeyCrypto
import LatchkeyFormat

/// 16 bytes (an item UUID or a unique-key hash) as a cheap dictionary key.
struct ID16: Hashable, Sendable {
    var high: UInt64
    var low: UInt64

    init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        var h: UInt64 = 0, l: UInt64 = 0
        for (i, b) in bytes.enumerated() {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
        }
        high = h
        low = l
    }

    /// 16 bytes read as two big-endian words (the generic initializer above, without its loop):
    /// the scan and the lookups build one per record, where the generic loop cost 40 ns.
    init(_ bytes: ArraySlice<UInt8>) {
        guard bytes.count == 16 else {
            self.init(bytes.lazy.map { $0 })
            return
        }
        let words = bytes.withUnsafeBytes {
            (
                UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        self.init(high: words.0, low: words.1)
    }

    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var bytes: [UInt8] {
        var w = ByteWriter(capacity: 16)
        w.writeInteger(high, as: UInt64.self)
        w.writeInteger(low, as: UInt64.self)
        return w.bytes
    }

    static func random() throws -> ID16 {
        var b = try Crypto.randomBytes(16)
        b[6] = (b[6] & 0x0f) | 0x40
        b[8] = (b[8] & 0x3f) | 0x80
        return ID16(b)
    }
}

/// Where a live item's newest put record is, and its clear fields.
struct ItemSlot: Sendable, Hashable {
    var offset: UInt64
    var recordSize: UInt32
    var classTag: UInt32
    var protection: ProtectionClass
    var flags: UInt8
    var uniqueHash: ID16
    var sequence: UInt64
}

/// The state a reader builds from the log: live items, the unique-key index, the keybag (the
/// header's: no record changes it, spec §6.6) and how far the committed records reach.
struct LogState: Sendable {
    /// The live items and their unique keys (in memory, or an index file plus the changes
    /// after its covered end).
    var items = ItemTable()
    /// The attribute hashes of the live items (spec §7.6), for queries on other attributes.
    var attributes = AttributeHashTable()
    /// False for a state that answers no query (`verify`'s): `attributes` then stays empty,
    /// which spares a table of every item's hashes (about 100 bytes an item).
    var keepsAttributeHashes = true
    /// True for a scan that applies a long transaction (an import writes one of a million
    /// records) as its records come rather than when it closes (`scan`): `verify`'s, which
    /// then applies them while its workers decrypt instead of after, and holds none of them.
    var appliesLongTransactionsEarly = false
    var keybag: Keybag
    var end: UInt64
    var lastSequence: UInt64
    /// Where the record that ends at `end` starts; 0 when no record does (the index header
    /// names it, spec §17.2).
    var lastRecordOffset: UInt64 = 0
    var recordCount = 0
    var skippedAncillary = 0
    /// The items that committed operations put or deleted, newest last, so that a follower
    /// (AttributeIndex) can catch up without comparing every item. Bounded: once it holds
    /// `journalLimit` entries it is emptied and `journalBase` counts what was dropped; a
    /// follower that fell behind that far compares every item instead.
    var journal: [ID16] = []
    var journalBase: UInt64 = 0
    static let journalLimit = 4096
    /// Position just past the newest journal entry.
    var journalEnd: UInt64 { journalBase + UInt64(journal.count) }

    init(header: FileHeader, headerSize: Int) {
        keybag = header.keybag
        end = UInt64(headerSize)
        lastSequence = header.baseSequence
    }

    /// The state as of an index's covered end (checked by `IndexBase.load`); a scan goes on
    /// from there.
    init(header: FileHeader, index: IndexBase) {
        keybag = header.keybag
        items = ItemTable(base: index)
        attributes = AttributeHashTable(base: index)
        end = index.header.coveredEnd
        lastSequence = index.header.lastSequence
        lastRecordOffset = index.header.lastRecordOffset
        recordCount = Int(index.header.recordCount)
        skippedAncillary = Int(index.header.ancillaryCount)
    }
}

/// An item-put record whose tag verified during a scan: its payload is `buffer[payload]`
/// (the scan's read buffer, shared, not copied).
struct AuthenticatedPut: Sendable {
    var buffer: [UInt8]
    var payload: Range<Int>
    var offset: UInt64
    var protection: ProtectionClass
    /// The hashes of the hash record bound to this put (spec §7.6), once the scan has read it
    /// (`scan`'s `onBoundHashes`).
    var boundHashes: [UInt64]?
    /// The put embedded in a history record at `offset` (spec §7.7), not a put record: checked
    /// as an item is, and reported as a version.
    var inHistoryRecord = false
}

/// A record of another type than a put whose tag verified during a scan: its payload is
/// `buffer[payload]` (the scan's read buffer, shared, not copied).
struct AuthenticatedRecord: Sendable {
    var buffer: [UInt8]
    var payload: Range<Int>
    var offset: UInt64
}

/// A decoded record waiting for its transaction to close.
enum PendingOp: Sendable {
    case put(ID16, ItemSlot)
    case delete(ID16)
    /// The attribute hashes of a hash record bound to the put just before it (spec §7.6).
    case hashes(ID16, [UInt64])
}

/// What a scan found beyond the committed records.
struct ScanEnd: Sendable {
    /// Offset where an incomplete tail starts (nil when the file ends on a committed record).
    var tornAt: UInt64?
    /// Set when a record that failed its checksum or tag stopped the scan, rather than the end
    /// of the file. The tail from `tornAt` is then torn only if no commit this device
    /// acknowledged lies in it, which the caller decides with the device state (spec §10.4).
    var failure: TailFailure?
    var fileSize: UInt64
}

/// The first record of a tail that failed its frame checksum or its tag (spec §10.4).
struct TailFailure: Sendable, Equatable {
    var offset: UInt64
    var reason: String
}

enum Corruption: Error {
    case damaged(offset: UInt64, reason: String)
    case newerVersion(offset: UInt64, type: UInt8)
    case retiredKeybagChange(offset: UInt64)
}

extension LogState {
    /// Applies one committed operation, checking the invariants of spec §10.
    mutating func apply(_ op: PendingOp, at offset: UInt64) throws {
        switch op {
        case .put(let id, _), .delete(let id):
            noteTouched(id)
        case .hashes:
            break
        }
        switch op {
        case .put(let id, let slot):
            // The keybag is fixed for the file's life (spec §6.6): an item of a class it holds no
            // key for (akpu without a passcode) was written by no writer and can never be read.
            guard keybag.entry(for: slot.protection) != nil else {
                throw Corruption.damaged(
                    offset: offset,
                    reason:
                        "an item of protection class \(slot.protection.code) in a keychain whose keybag has no \(slot.protection.code) class key (a keychain without a passcode has no akpu items)"
                )
            }
            // The rules that need the index's entries are checked later (ItemTable).
            do {
                try items.put(id, slot, at: offset)
            } catch let broken as ItemTable.RuleBroken {
                throw brokenRule(broken)
            }
            if keepsAttributeHashes { attributes.put(id) }
        case .delete(let id):
            do {
                try items.delete(id, at: offset)
            } catch let broken as ItemTable.RuleBroken {
                throw brokenRule(broken)
            }
            if keepsAttributeHashes { attributes.remove(id) }
        case .hashes(let id, let hashes):
            // Scan and writer produce this only right after the put it is bound to.
            if keepsAttributeHashes { attributes.setHashes(id, hashes) }
        }
    }

    /// The error for a rule of §10.3 broken by a record. On top of an index, an earlier record
    /// may break a rule whose check is still pending (ItemTable): the index is given up, and the
    /// scan from the log's start that follows reports the first broken rule, as without one.
    private func brokenRule(_ broken: ItemTable.RuleBroken) -> Error {
        if items.base != nil {
            return IndexBase.Unusable(
                reason: "the record at byte \(broken.offset) breaks a rule (\(broken.reason))", contradictsLog: true)
        }
        return Corruption.damaged(offset: broken.offset, reason: broken.reason)
    }

    /// Pending operations from which a long transaction is applied early (`scan`).
    static let earlyThreshold = 4096

    /// Takes what `apply` changes (and nothing else) from `other`, a copy of this state to which
    /// the open transaction's operations were applied (`scan`).
    private mutating func takeApplied(from other: LogState) {
        items = other.items
        attributes = other.attributes
        journal = other.journal
        journalBase = other.journalBase
    }

    /// Adds an item put or deleted by a committed operation to the journal, emptying it first
    /// when it is full.
    mutating func noteTouched(_ id: ID16) {
        if journal.count >= LogState.journalLimit {
            journalBase += UInt64(journal.count)
            journal.removeAll(keepingCapacity: true)
        }
        journal.append(id)
    }

    /// Reads records from `end` to the end of the file and applies every closed transaction.
    /// Stops at an incomplete tail and reports where it starts; throws `Corruption` for damage.
    /// `onPut`, when given, sees every item-put record whose tag verified, as it is read (for
    /// `verify`, which decrypts them without reading the file again), `onBoundHashes` the
    /// hashes of each hash record bound to a put, with the put's offset, right after it, and
    /// `onHistory` every history record whose tag verified (spec §7.7; never applied), its
    /// payload uninterpreted: committed or not, which the caller decides from `end`.
    mutating func scan(
        fs: FileSystem, fd: Int32, keys: FileKeys, onPut: ((AuthenticatedPut) -> Void)? = nil,
        onBoundHashes: ((UInt64, [UInt64]) -> Void)? = nil, onHistory: ((AuthenticatedRecord) -> Void)? = nil
    ) throws -> ScanEnd {
        let fileSize = try fs.size(fd)
        var offset = end
        var pending: [(PendingOp, UInt64)] = []
        var groupStart = end
        // True from the first record of a transaction until the record that closes it
        // (ancillary records count: a group may open with one).
        var inGroup = false
        var sequence = lastSequence
        var buffer: [UInt8] = []
        var bufferStart = offset
        let chunk = 8 << 20
        // The put just before the current record, in the same transaction: a hash record
        // (spec §7.6) is bound to it only then, and only when it names its UUID and binding.
        var previousPut: (id: ID16, binding: ArraySlice<UInt8>, offset: UInt64)?
        var early: LogState?
        var earlyFailure: Error?

        // Makes bytes [at, at + count) available in `buffer`; false when the file is shorter.
        func ensure(_ at: UInt64, _ count: Int) throws -> Bool {
            if at + UInt64(count) > fileSize { return false }
            if at >= bufferStart, at + UInt64(count) <= bufferStart + UInt64(buffer.count) { return true }
            let want = max(count, min(chunk, Int(fileSize - at)))
            buffer = try fs.read(fd, offset: at, count: want)
            bufferStart = at
            return buffer.count >= count
        }
        func slice(_ at: UInt64, _ count: Int) -> ArraySlice<UInt8> {
            let s = Int(at - bufferStart)
            return buffer[s..<s + count]
        }

        while offset < fileSize {
            guard try ensure(offset, FormatConstants.frameHeaderSize) else {
                return ScanEnd(tornAt: inGroup ? groupStart : offset, fileSize: fileSize)
            }
            let frame: FrameHeader
            do {
                frame = try FrameHeader.decode(slice(offset, FormatConstants.frameHeaderSize))
            } catch FormatError.checksumMismatch {
                if try allZero(fs: fs, fd: fd, from: offset, to: fileSize) {
                    return ScanEnd(tornAt: inGroup ? groupStart : offset, fileSize: fileSize)
                }
                return try failedRecord(
                    at: offset, "record header checksum mismatch", frame: nil,
                    tornAt: inGroup ? groupStart : offset, fileSize: fileSize, fs: fs, fd: fd, keys: keys)
            } catch let e as FormatError {
                throw Corruption.damaged(offset: offset, reason: e.description)
            }
            let size = frame.recordSize
            guard try ensure(offset, size) else {
                return ScanEnd(tornAt: inGroup ? groupStart : offset, fileSize: fileSize)
            }
            let record = slice(offset, size)
            guard RecordFrame.verify(record: record, offset: offset, macKey: keys.recordMAC) else {
                return try failedRecord(
                    at: offset, "record tag does not verify", frame: frame,
                    tornAt: inGroup ? groupStart : offset, fileSize: fileSize, fs: fs, fd: fd, keys: keys)
            }
            guard frame.sequence == sequence + 1 else {
                throw Corruption.damaged(
                    offset: offset, reason: "sequence number \(frame.sequence) where \(sequence + 1) was expected")
            }
            let payload = record.dropFirst(FormatConstants.frameHeaderSize).dropLast(FormatConstants.frameTagSize)
            if !inGroup {
                groupStart = offset
                previousPut = nil
            }
            var nextPut: (id: ID16, binding: ArraySlice<UInt8>, offset: UInt64)?
            do {
                switch RecordType(rawValue: frame.type) {
                case .itemPut:
                    let p = try ItemPutPayload.decodeClear(payload)
                    if let b = AttributeHashRecord.binding(ofPut: payload) { nextPut = (ID16(p.uuid), b, offset) }
                    if let onPut {
                        let start = Int(offset - bufferStart)
                        onPut(
                            AuthenticatedPut(
                                buffer: buffer,
                                payload: start + FormatConstants.frameHeaderSize..<start + size
                                    - FormatConstants.frameTagSize,
                                offset: offset, protection: p.protectionClass))
                    }
                    pending.append(
                        (
                            .put(
                                ID16(p.uuid),
                                ItemSlot(
                                    offset: offset, recordSize: UInt32(size),
                                    classTag: p.classTag,
                                    protection: p.protectionClass, flags: p.flags,
                                    uniqueHash: ID16(p.uniqueKeyHash), sequence: frame.sequence)), offset
                        ))
                case .itemDelete:
                    pending.append((.delete(ID16(try ItemDeletePayload.decode(payload).uuid)), offset))
                case .attributeHashes:
                    // Ancillary: one that is malformed or not bound to the put before it is
                    // ignored, and that put stays unhashed (a candidate for every query).
                    if let h = AttributeHashRecord.decode(payload), let put = previousPut, put.id == ID16(h.uuid),
                        put.binding.elementsEqual(h.binding)
                    {
                        if keepsAttributeHashes { pending.append((.hashes(put.id, h.hashes), offset)) }
                        onBoundHashes?(put.offset, h.hashes)
                    }
                    skippedAncillary += 1
                case .history:
                    // Ancillary, never applied: read only when a history is asked for, or by a
                    // full verification (§7.7).
                    if let onHistory {
                        let start = Int(offset - bufferStart)
                        onHistory(
                            AuthenticatedRecord(
                                buffer: buffer,
                                payload: start + FormatConstants.frameHeaderSize..<start + size
                                    - FormatConstants.frameTagSize,
                                offset: offset))
                    }
                    skippedAncillary += 1
                case .keybagChange:
                    // Retired (spec §6.6): anyone holding the device secret could write one, so
                    // a passcode change rewrites the file instead (§11.6), and none is applied.
                    throw Corruption.retiredKeybagChange(offset: offset)
                case nil:
                    guard RecordType.isAncillary(frame.type) else {
                        throw Corruption.newerVersion(offset: offset, type: frame.type)
                    }
                    skippedAncillary += 1
                }
            } catch let e as FormatError {
                throw Corruption.damaged(offset: offset, reason: e.description)
            }
            previousPut = nextPut
            sequence = frame.sequence
            recordCount += 1
            inGroup = frame.continues
            // A long transaction, with `appliesLongTransactionsEarly`: its operations are applied
            // to a copy of the state made while it is open (`early`): the same operations in the
            // same order from the same state (nothing is applied while a transaction is open), so
            // the same result, or the same first failure, which is thrown only if the transaction
            // closes. If it does not, the copy is dropped as `pending` would be. At most as many
            // items are copied as operations are pending then.
            if appliesLongTransactionsEarly, earlyFailure == nil,
                early != nil || pending.count >= max(LogState.earlyThreshold, items.count)
            {
                if early == nil { early = self }
                do {
                    for (op, at) in pending { try early!.apply(op, at: at) }
                } catch {
                    earlyFailure = error
                    early = nil
                }
                pending.removeAll(keepingCapacity: true)
            }
            if !frame.continues {
                if let earlyFailure { throw earlyFailure }
                if let done = early {
                    takeApplied(from: done)
                    early = nil
                }
                for (op, at) in pending { try apply(op, at: at) }
                pending.removeAll(keepingCapacity: true)
                lastRecordOffset = offset
                end = offset + UInt64(size)
                lastSequence = sequence
            }
            offset += UInt64(size)
        }
        return ScanEnd(tornAt: inGroup ? groupStart : nil, fileSize: fileSize)
    }
}

/// The end of a scan stopped by a record that fails its checksum or tag. Such a record may be
/// part of the last append, whose blocks a power cut can keep in any subset (spec §10.4): it
/// ends the scan as a candidate torn tail from `tornAt`, unless a later transaction closed
/// after it, which proves that it was written before an acknowledged commit (damage).
private func failedRecord(
    at offset: UInt64, _ reason: String, frame: FrameHeader?, tornAt: UInt64, fileSize: UInt64,
    fs: FileSystem, fd: Int32, keys: FileKeys
) throws -> ScanEnd {
    if try transactionClosedAfter(offset, failedFrame: frame, fileSize: fileSize, fs: fs, fd: fd, keys: keys) {
        throw Corruption.damaged(offset: offset, reason: reason)
    }
    return ScanEnd(tornAt: tornAt, failure: TailFailure(offset: offset, reason: reason), fileSize: fileSize)
}

/// Whether a transaction was closed after the record that failed at `failed`, which shows
/// that the failed record was committed before another transaction began: a writer appends a
/// transaction only after the one before it was made durable (spec §10.2, §10.4). Proof is a
/// complete, authenticated record that closes a transaction (continues flag clear) and ends
/// before the end of the file; or, when the failed record's frame header is intact (its CRC
/// matches: only its payload or tag failed) and says it closes its transaction, any
/// authenticated record after it.
/// - Throws: `Corruption.damaged` at `failed` when the search runs out of its budget (§10.2):
///   bytes that carry that many well-formed frame headers whose tags fail were not written by
///   a crash.
func transactionClosedAfter(
    _ failed: UInt64, failedFrame: FrameHeader?, fileSize: UInt64, fs: FileSystem, fd: Int32,
    keys: FileKeys
) throws -> Bool {
    let closes = failedFrame.map { !$0.continues } ?? false
    let start = failed + UInt64(failedFrame?.recordSize ?? 1)
    var found = false
    do {
        try forEachAuthenticatedRecord(from: start, fileSize: fileSize, fs: fs, fd: fd, keys: keys) { at, frame, _ in
            if closes || (!frame.continues && at + UInt64(frame.recordSize) < fileSize) { found = true }
            return !found
        }
    } catch let e as SearchBudgetExceeded {
        throw Corruption.damaged(
            offset: failed,
            reason:
                "a record fails its check, and the \(fileSize - start) bytes after it hold well-formed record headers whose records fail their tags, \(e.spent) bytes of them by byte \(e.offset): not what a crash leaves, so the search for later records stopped there (spec/FORMAT.md §10.2)"
        )
    }
    return found
}

/// The search for authenticated records (§10.2) gave up: the candidates whose tags failed
/// would have taken more than its budget of bytes to authenticate.
struct SearchBudgetExceeded: Error {
    /// Where the candidate that would have exceeded it starts.
    var offset: UInt64
    /// Bytes of candidates authenticated in vain before it.
    var spent: UInt64
}

/// Calls `body` for every complete record in [start, fileSize) whose frame CRC matches and
/// whose tag verifies at its offset, in file order, until `body` returns false. A damaged
/// length cannot be followed, so every offset is tried, cheapest checks first: the bytes every
/// frame header has (a length of at most 16 MiB = 2^24, so byte 0 is zero, or one with bytes
/// 1–3 zero; a type other than 0; zero reserved bytes 6–7), then the CRC, then the tag, which
/// only the device can produce. After a record that verifies, the search goes on after its end.
///
/// **Budget.** The CRC is keyless: anyone who can write the file can fill it with overlapping
/// frame headers that pass it, each claiming a long payload, and each would cost a tag over up
/// to 16 MiB — quadratic in what they wrote. The sizes of the candidates whose tag fails are
/// therefore summed, and when the next one would take the sum past 4 × (fileSize − start) the
/// search throws `SearchBudgetExceeded` instead (§10.2). A file that Latchkey or a crash made
/// holds no such candidate but by chance (a CRC-32C match and four fixed bytes), so no file
/// that should open comes near it.
func forEachAuthenticatedRecord(
    from start: UInt64, fileSize: UInt64, fs: FileSystem, fd: Int32, keys: FileKeys,
    _ body: (UInt64, FrameHeader, [UInt8]) throws -> Bool
) throws {
    let headerSize = FormatConstants.frameHeaderSize
    let minimum = UInt64(headerSize + FormatConstants.frameTagSize)
    let chunk = 8 << 20
    let budget = fileSize > start ? 4 * (fileSize - start) : 0
    var spent: UInt64 = 0
    var chunkStart = start
    var next = start
    while chunkStart + minimum <= fileSize {
        let bytes = try fs.read(
            fd, offset: chunkStart, count: Int(min(UInt64(chunk + headerSize), fileSize - chunkStart)))
        if bytes.count < headerSize { break }
        for i in 0...(bytes.count - headerSize) {
            let at = chunkStart + UInt64(i)
            // Type 0 is never written (spec §6.3), so an all-zero stretch (a hole) costs one
            // comparison per offset; then the CRC, computed before anything is decoded.
            guard at >= next, bytes[i + 4] != 0, bytes[i + 6] == 0, bytes[i + 7] == 0,
                bytes[i] == 0 || (bytes[i] == 1 && bytes[i + 1] == 0 && bytes[i + 2] == 0 && bytes[i + 3] == 0),
                CRC32C.checksum(bytes[i..<i + 16]) == ByteReader(bytes).getInteger(at: i + 16, as: UInt32.self),
                let frame = try? FrameHeader.decode(bytes[i..<i + headerSize])
            else { continue }
            let end = at + UInt64(frame.recordSize)
            guard end <= fileSize else { continue }
            guard spent + UInt64(frame.recordSize) <= budget else {
                throw SearchBudgetExceeded(offset: at, spent: spent)
            }
            let record = try fs.read(fd, offset: at, count: frame.recordSize)
            guard record.count == frame.recordSize,
                RecordFrame.verify(record: record[...], offset: at, macKey: keys.recordMAC)
            else {
                spent += UInt64(frame.recordSize)
                continue
            }
            guard try body(at, frame, record) else { return }
            next = end
        }
        chunkStart += UInt64(chunk)
    }
}

private func allZero(fs: FileSystem, fd: Int32, from: UInt64, to: UInt64) throws -> Bool {
    var at = from
    while at < to {
        let block = try fs.read(fd, offset: at, count: Int(min(1 << 20, to - at)))
        if block.isEmpty { break }
        if block.contains(where: { $0 != 0 }) { return false }
        at += UInt64(block.count)
    }
    return true
}
