#if canImport(Glibc)
    import Glibc
#endif
import LatchkeyCrypto
import LatchkeyFormat

/// How a writer keeps the earlier versions of the items it replaces and deletes (spec/FORMAT.md
/// §7.7): the bound it writes into each history record. Each record keeps its own bound, so a
/// compaction by any process drops the same records whatever its own policy.
package struct HistoryPolicy: Equatable, Sendable {
    /// How many later versions of its item a version outlives, 1–255; 0 keeps no history.
    package var versions: UInt8
    /// How many days a version outlives the change that replaced it; 0: no bound by age.
    package var days: UInt16

    package init(versions: UInt8, days: UInt16) {
        self.versions = versions
        self.days = days
    }

    /// Ten versions and a year (the sync history's default, spec/SYNC.md §8.6).
    package static let standard = HistoryPolicy(versions: 10, days: 365)
    package static let off = HistoryPolicy(versions: 0, days: 0)

    package var keepsHistory: Bool { versions > 0 }

    /// The variable that sets how many versions are kept (0: none).
    package static let versionsVariable = "LATCHKEY_HISTORY_VERSIONS"
    /// The variable that sets how many days a version is kept (0: no bound by age).
    package static let daysVariable = "LATCHKEY_HISTORY_DAYS"

    /// The policy the environment sets, `standard` where it is silent.
    /// - Throws: errSecParam naming the variable, for a value out of its range.
    package init(lookup: (String) -> String?) throws {
        self = .standard
        if let v = lookup(Self.versionsVariable), !v.isEmpty {
            guard let n = UInt8(v) else {
                throw KeychainError(
                    .param, "\(Self.versionsVariable) is '\(v)'; give a number of versions from 0 (keep none) to 255")
            }
            versions = n
        }
        if let v = lookup(Self.daysVariable), !v.isEmpty {
            guard let n = UInt16(v) else {
                throw KeychainError(
                    .param, "\(Self.daysVariable) is '\(v)'; give a number of days from 0 (no bound by age) to 65535")
            }
            days = n
        }
    }

    /// From this process's variables; `standard` when they are malformed (the CLI checks them
    /// first and says what is wrong, `HistoryPolicy(lookup:)`).
    package static func fromProcessEnvironment() -> HistoryPolicy {
        (try? HistoryPolicy(lookup: { getenv($0).map { String(cString: $0) } })) ?? .standard
    }
}

/// One earlier version of an item (spec §7.7), as the store reads it: where its history record
/// is, what it says in the clear, and its plaintext when its class key is available.
package struct StoredVersion: Sendable {
    package var uuid: [UInt8]
    /// The history record's sequence number: with the UUID, names the version until the next
    /// compaction.
    package var sequence: UInt64
    package var kind: HistoryRecord.Kind
    /// Unix seconds, by the clock of the writer that replaced or deleted it.
    package var supersededAt: UInt64
    package var protection: ProtectionClass
    package var flags: UInt8
    /// nil while its class is locked.
    package var plaintext: ItemPlaintext?
}

/// Where a history record is, and what the bound of §7.7 needs of it: found by one pass over
/// the committed records (`historyRecordRefs`), read again by `readHistoryRecord`.
struct HistoryRecordRef {
    var offset: UInt64
    var recordSize: Int
    var sequence: UInt64
    var bound: HistoryBound.Entry
}

extension KeychainStore {
    /// Unix seconds now, for the history's bound and times (`clock`, which tests replace).
    var historyNow: UInt64 { UInt64(max(0, clock())) }

    /// The payload of the history record a writer puts before replacing (`kind` `.replaced`)
    /// or deleting the item `id` whose newest put is `slot` (spec §7.7): that put's payload, read
    /// again and authenticated at its offset. nil when this store keeps no history, or when the
    /// put is too large to fit a record.
    func historyPayload(of id: ID16, slot: ItemSlot, kind: HistoryRecord.Kind) throws -> [UInt8]? {
        guard historyPolicy.keepsHistory,
            HistoryRecord.fits(
                putPayloadSize: Int(slot.recordSize) - FormatConstants.frameHeaderSize - FormatConstants.frameTagSize)
        else { return nil }
        let record = try io(
            { try fs.read(fd, offset: slot.offset, count: Int(slot.recordSize)) }, "read the keychain")
        let payload = try authenticatedPayload(record[...], slot, id: id)
        return HistoryRecord(
            uuid: id.bytes, kind: kind, keepVersions: historyPolicy.versions, keepDays: historyPolicy.days,
            supersededAt: historyNow, put: Array(payload)
        ).encode()
    }

    /// Every history record of the committed records, in file order, each authenticated at its
    /// offset and well-formed (spec §7.7): one pass over the file, reading it in large blocks.
    /// - Throws: errSecDecode when a record changed since the scan, or when a history record
    ///   is not well-formed; errSecIO.
    func historyRecordRefs() throws -> [HistoryRecordRef] {
        mutex.lock(); defer { mutex.unlock() }
        var out: [HistoryRecordRef] = []
        var offset = UInt64(headerSize)
        var sequence = header.baseSequence
        let end = log.end
        let chunk = 8 << 20
        var buffer: [UInt8] = []
        var bufferStart = offset
        func bytes(_ at: UInt64, _ count: Int) throws -> ArraySlice<UInt8> {
            if at < bufferStart || at + UInt64(count) > bufferStart + UInt64(buffer.count) {
                let want = max(count, min(chunk, Int(end - at)))
                buffer = try io({ try fs.read(fd, offset: at, count: want) }, "read the keychain")
                bufferStart = at
                guard buffer.count >= count else { throw changed(at, "ends early") }
            }
            let s = Int(at - bufferStart)
            return buffer[s..<s + count]
        }
        func changed(_ at: UInt64, _ why: String) -> KeychainError {
            needsReopen = true
            return KeychainError(
                .decode,
                "the record at byte \(at) of \(path) \(why) since the keychain was read (damaged or tampered); nothing was changed",
                remedy: .verifyAndRestore)
        }
        while offset < end {
            guard end - offset >= UInt64(FormatConstants.frameHeaderSize) else { throw changed(offset, "changed") }
            // A failed read is an I/O error; bytes that read but no longer check are damage.
            let head = try bytes(offset, FormatConstants.frameHeaderSize)
            guard let frame = try? FrameHeader.decode(head), frame.sequence == sequence + 1,
                offset + UInt64(frame.recordSize) <= end
            else { throw changed(offset, "changed") }
            sequence = frame.sequence
            if frame.type == RecordType.history.rawValue {
                let record = try bytes(offset, frame.recordSize)
                guard RecordFrame.verify(record: record, offset: offset, macKey: keys.recordMAC) else {
                    throw changed(offset, "changed")
                }
                let payload = record.dropFirst(FormatConstants.frameHeaderSize).dropLast(FormatConstants.frameTagSize)
                let h: HistoryRecord.Header
                do {
                    h = try HistoryRecord.decodeHeader(payload)
                } catch {
                    throw KeychainError(
                        .decode,
                        "the history record at byte \(offset) of \(path) is malformed (\(error)); it was written so (spec/FORMAT.md §7.7)",
                        remedy: .verifyAndRestore)
                }
                out.append(
                    HistoryRecordRef(
                        offset: offset, recordSize: frame.recordSize, sequence: frame.sequence,
                        bound: HistoryBound.Entry(
                            uuid: Array(h.uuid), keepVersions: h.keepVersions, keepDays: h.keepDays,
                            supersededAt: h.supersededAt)))
            }
            offset += UInt64(frame.recordSize)
        }
        return out
    }

    /// The history records that are not expired now (spec §7.7), in file order.
    func liveHistoryRefs() throws -> [HistoryRecordRef] {
        let refs = try historyRecordRefs()
        let expired = HistoryBound.expired(refs.map(\.bound), now: historyNow)
        return zip(refs, expired).filter { !$0.1 }.map(\.0)
    }

    /// A history record read again and authenticated at its offset: its payload.
    func readHistoryPayload(_ ref: HistoryRecordRef) throws -> [UInt8] {
        mutex.lock(); defer { mutex.unlock() }
        let record = try io({ try fs.read(fd, offset: ref.offset, count: ref.recordSize) }, "read the keychain")
        guard record.count == ref.recordSize, let frame = try? FrameHeader.decode(record[...]),
            frame.type == RecordType.history.rawValue, frame.sequence == ref.sequence,
            RecordFrame.verify(record: record[...], offset: ref.offset, macKey: keys.recordMAC)
        else {
            needsReopen = true
            throw KeychainError(
                .decode,
                "the history record at byte \(ref.offset) of \(path) changed since it was read (damaged or tampered); nothing was changed",
                remedy: .verifyAndRestore)
        }
        return Array(record.dropFirst(FormatConstants.frameHeaderSize).dropLast(FormatConstants.frameTagSize))
    }

    /// A version read again: its record's clear fields and, when its class key is available,
    /// its plaintext (decrypted and checked as an item is, spec §7.7). nil when `itemClass` is
    /// given and the version's class tag (in the clear) is another class's: not decrypted.
    func version(_ ref: HistoryRecordRef, itemClass: ItemClass? = nil) throws -> StoredVersion? {
        mutex.lock(); defer { mutex.unlock() }
        let payload = try readHistoryPayload(ref)
        let h: HistoryRecord.Header
        do {
            h = try HistoryRecord.decodeHeader(payload[...])
        } catch {
            throw KeychainError(
                .decode, "the history record at byte \(ref.offset) of \(path) is malformed (\(error))",
                remedy: .verifyAndRestore)
        }
        let put = h.put
        if let itemClass, put.classTag != keys.classTagWord(itemClass) { return nil }
        var plaintext: ItemPlaintext?
        if isAvailable(put.protectionClass) {
            let slot = ItemSlot(
                offset: ref.offset, recordSize: UInt32(ref.recordSize), classTag: put.classTag,
                protection: put.protectionClass, flags: put.flags, uniqueHash: ID16(put.uniqueKeyHash),
                sequence: ref.sequence)
            plaintext = try open(payload[HistoryRecord.fixedSize...], slot)
        }
        return StoredVersion(
            uuid: Array(h.uuid), sequence: ref.sequence, kind: h.kind, supersededAt: h.supersededAt,
            protection: put.protectionClass, flags: put.flags, plaintext: plaintext)
    }

    /// The earlier versions of every item (of `itemClass`, when given: the others are not
    /// decrypted), those not expired now (spec §7.7), in file order (oldest first); the
    /// plaintext of each whose class key is available.
    package func history(itemClass: ItemClass? = nil) throws -> [StoredVersion] {
        mutex.lock(); defer { mutex.unlock() }
        try refresh()
        return try liveHistoryRefs().compactMap { try version($0, itemClass: itemClass) }
    }

    /// The version whose history record has this sequence number and UUID, if it is still in
    /// the history (not expired, not compacted away).
    /// `refreshing`: false inside `write`, which has caught up already.
    package func version(sequence: UInt64, uuid: [UInt8], refreshing: Bool = true) throws -> StoredVersion? {
        mutex.lock(); defer { mutex.unlock() }
        if refreshing { try refresh() }
        guard let ref = try liveHistoryRefs().first(where: { $0.sequence == sequence && $0.bound.uuid == uuid })
        else { return nil }
        return try version(ref)!
    }
}
