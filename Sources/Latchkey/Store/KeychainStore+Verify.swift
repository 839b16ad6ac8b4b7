import LatchkeyCrypto
import LatchkeyFormat

/// What `verify` found (spec §10 rules, applied to every byte).
public struct VerifyReport: Sendable, Codable {
    public var ok: Bool { problems.isEmpty }
    public var problems: [String] = []
    public var fileSize: UInt64 = 0
    public var records = 0
    public var liveItems = 0
    /// Items decrypted and checked.
    public var checkedItems = 0
    /// Items whose class key was locked, so only their record tags were checked.
    public var lockedItems = 0
    /// History records (spec §7.7) of the committed records, each checked to be well-formed.
    public var historyRecords = 0
    /// Of them, those whose earlier version was decrypted and checked as an item is (the others'
    /// class keys were locked, or they are reported among the problems).
    public var checkedVersions = 0
    public var recoveredTailBytes: UInt64 = 0
}

extension KeychainStore {
    /// Re-reads the whole file from its first byte with a fresh state (not trusting what is
    /// in memory), and decrypts every live item whose class key is available.
    ///
    /// One sequential read: each item record is decrypted from the bytes whose tag the scan
    /// just verified, on a second thread while the scan goes on (`ItemChecker`), so the file
    /// is neither read nor authenticated twice. Records a later one superseded are decrypted
    /// too, and their failures ignored: only live items are reported, in file order.
    ///
    /// The first pass holds no lock, so writers go on. A change by another process between
    /// its scan and a later check (an import that writes a new index, a commit that records
    /// its sequence number in the device state, a compaction) can make a healthy keychain look
    /// damaged; so a problem is reported only when a second pass finds it holding the
    /// exclusive lock (spec §11.2), while nobody writes the file, its index or its state.
    func verify() -> VerifyReport {
        let first = verifyPass(locked: false) ?? VerifyReport()
        if first.ok { return first }
        return verifyPass(locked: true) ?? first
    }

    /// One pass of `verify` over the file now at the path; `locked`: holding the exclusive lock
    /// on it for the whole pass. Nil only when `locked` and the lock cannot be taken.
    private func verifyPass(locked: Bool) -> VerifyReport? {
        var report = VerifyReport()
        report.recoveredTailBytes = recoveredTailBytes
        var available: [ProtectionClass: SecretKey] = [:]
        for pc in ProtectionClass.allCases where isAvailable(pc) {
            if let key = try? classKey(pc) { available[pc] = key }
        }
        let checker = ItemChecker(classKeys: available, path: path)
        var finished = false
        defer { if !finished { _ = checker.finish() } }
        do {
            let fd: Int32
            if locked {
                guard let held = lockedFileAtPath() else { return nil }
                fd = held
            } else {
                fd = try io({ try fs.openReadOnly(path) }, "open the keychain")
            }
            defer {
                if locked { fs.unlock(fd) }
                fs.close(fd)
            }
            try KeychainStore.requireRegularFile(fs: fs, fd: fd, path: path)
            let (h, size, k) = try KeychainStore.readHeader(fs: fs, fd: fd, path: path, device: device)
            checker.start(fileUUID: h.fileUUID, keys: k)
            var fresh = LogState(header: h, headerSize: size)
            // The hash records are checked by the workers against each decrypted item (each
            // comes with its put), so the state need not keep them.
            fresh.keepsAttributeHashes = false
            fresh.appliesLongTransactionsEarly = true
            // History records are never applied (spec §7.7) but are checked as a full
            // verification must: well-formed here, and their embedded puts decrypted and checked
            // by the workers as items are, under the history record's offset.
            var history: [(offset: UInt64, protection: ProtectionClass?, malformed: String?)] = []
            let onHistory = { (record: AuthenticatedRecord) in
                do {
                    let put = try HistoryRecord.decode(record.buffer[record.payload]).decodedPut()
                    history.append((record.offset, put.protectionClass, nil))
                    checker.submit(
                        AuthenticatedPut(
                            buffer: record.buffer,
                            payload: record.payload.lowerBound + HistoryRecord.fixedSize..<record.payload.upperBound,
                            offset: record.offset, protection: put.protectionClass, inHistoryRecord: true))
                } catch {
                    history.append((record.offset, nil, String(describing: error)))
                }
            }
            do {
                let end = try io(
                    {
                        try fresh.scan(
                            fs: fs, fd: fd, keys: k, onPut: checker.submit, onBoundHashes: checker.bind,
                            onHistory: onHistory)
                    }, "read the keychain")
                report.fileSize = end.fileSize
                let seen = (try? device.state(fileUUID: h.fileUUID))??.newestSequence ?? 0
                if let failure = end.failure, seen > fresh.lastSequence {
                    report.problems.append(
                        "damage at byte \(failure.offset) (\(failure.reason)) in a change this device acknowledged (up to change \(seen)); a repair plan shows what cutting it off would drop"
                    )
                } else if let torn = end.tornAt {
                    // Under the lock nobody is writing: a writer stopped in the middle.
                    let why =
                        locked
                        ? "left by a write that never finished (a killed process, a power cut);"
                        : "another process may be writing; otherwise"
                    report.problems.append(
                        "unfinished write at byte \(torn) (\(end.fileSize - torn) bytes): \(why) it is cut off at the next write"
                    )
                }
            } catch Corruption.damaged(let offset, let reason) {
                report.problems.append(
                    "damage at byte \(offset): \(reason); a repair plan shows what cutting it off would drop")
            } catch Corruption.newerVersion(let offset, let type) {
                report.problems.append("record type \(type) at byte \(offset) needs a newer Latchkey")
            } catch Corruption.retiredKeybagChange(let offset) {
                report.problems.append(
                    "a passcode change appended as a keybag record at byte \(offset), which is no longer accepted (spec/FORMAT.md §6.6)"
                )
            }
            report.records = fresh.recordCount
            report.liveItems = fresh.items.count
            // While the other thread decrypts.
            if report.problems.isEmpty,
                let problem = indexDisagreement(fd: fd, header: h, headerSize: size, keys: k, truth: fresh)
            {
                report.problems.append(problem)
            }
            let (failed, mismatched) = checker.finish()
            finished = true
            var problems: [(UInt64, String)] = []
            for (id, slot) in fresh.items {
                guard available[slot.protection] != nil else { report.lockedItems += 1; continue }
                if let f = failed[slot.offset] {
                    problems.append((slot.offset, "item at byte \(slot.offset): \(f)")); continue
                }
                report.checkedItems += 1
                // The hash record bound to the item's newest put is not the item's (spec §7.6).
                if mismatched.contains(slot.offset) {
                    problems.append(
                        (slot.offset, "item at byte \(slot.offset): \(KeychainStore.attributeHashMismatch(id))"))
                }
            }
            // Only the committed ones: a record of an unfinished write is reported as such.
            for entry in history where entry.offset < fresh.end {
                report.historyRecords += 1
                let what = "history record at byte \(entry.offset) of \(path)"
                if let malformed = entry.malformed {
                    problems.append(
                        (
                            entry.offset,
                            "\(what) is malformed (\(malformed)); its tag verifies, so it was written so: damaged by a faulty writer or tampered with by someone who holds the device secret (spec/FORMAT.md §7.7); compaction refuses the keychain while it is there"
                        ))
                } else if let f = failed[entry.offset] {
                    problems.append((entry.offset, "\(what): \(f)"))
                } else if let pc = entry.protection, available[pc] != nil {
                    report.checkedVersions += 1
                }
            }
            problems.sort { $0.0 < $1.0 }
            report.problems += problems.map(\.1)
        } catch {
            report.problems.append(String(describing: error))
        }
        return report
    }

    /// The file at the path, opened read-only and holding its exclusive lock (a file a writer
    /// replaced while this waited for the lock is let go and the new one taken); nil when the
    /// lock cannot be had.
    private func lockedFileAtPath() -> Int32? {
        for _ in 0..<100 {
            guard let fd = try? fs.openReadOnly(path) else { return nil }
            do {
                if try fs.lock(fd, stillAt: path) { return fd }
            } catch {
                fs.close(fd)
                return nil
            }
            fs.close(fd)
        }
        return nil
    }
}

/// Decrypts the item records a scan hands it (`LogState.scan`'s `onPut`) on two threads of
/// its own, in batches, and keeps each failure by record offset; each put comes with the hashes
/// of the hash record bound to it (`onBoundHashes`), which are compared with the hashes of its
/// decrypted attributes (spec §7.6). Two workers beside the scanning thread keep two cores
/// busy (at 1M items the scan now takes about as long as decrypting). The scan waits when a few
/// batches are queued, so memory holds at most about six of its read buffers. Without a thread
/// the records are decrypted in `submit`.
///
/// Per item, nothing is kept but a failure or a mismatch: each worker decrypts into a buffer
/// of its own, checks the plaintext without decoding it (`FileKeys.attributeHashes(ofEncoded:)`,
/// which accepts exactly what `ItemPlaintext.decode` does) and, only for an item that fails,
/// runs the full decoder to report what `KeychainStore.open` says.
final class ItemChecker: @unchecked Sendable {
    private let classKeys: [ProtectionClass: SecretKey]
    private let path: String
    private var fileUUID: [UInt8] = []
    private let condition = Condition()
    /// Guarded by `condition`.
    private var queue: [[AuthenticatedPut]] = []
    private var closed = false
    private var running = 0
    private var threaded = false
    /// The failures and the offsets of puts whose bound hash record is not theirs, merged under
    /// `condition` by each worker when it ends (and by `submit` without threads).
    private var failures: [UInt64: String] = [:]
    private var mismatches = Set<UInt64>()
    private static let workers = 2
    /// The scan thread's batch being filled. Its last put stays in it until the next put
    /// comes, so that the hash record that follows it can be attached (`bind`).
    private var batch: [AuthenticatedPut] = []
    private static let batchSize = 1024
    private static let maxQueued = 4

    /// Keys the attribute hashes of each item decrypted (spec §7.6).
    private var keys: FileKeys?
    /// What the thread that runs `submit` checks with when there are no workers.
    private var inline = Scratch()

    /// A worker's buffers and cipher context, reused for every item.
    private struct Scratch {
        var plaintext: [UInt8] = []
        var hashes: [UInt64] = []
        /// The canonical encoding of the item's unique key (spec §7.5), rebuilt for each item.
        var uniqueKey: [UInt8] = []
        var found: [UInt64: String] = [:]
        var mismatched = Set<UInt64>()
        let gcm = GCMContext()
        /// A group's wrapped item keys, and the keys unwrapped (zeroed after each group).
        var wrapped = [UInt8](repeating: 0, count: Crypto.keyUnwrapBatch * FormatConstants.wrappedKeySize)
        var itemKeys = [UInt8](repeating: 0, count: Crypto.keyUnwrapBatch * 32)
        var unwrapped = [UInt8](repeating: 0, count: Crypto.keyUnwrapBatch)
        /// Per put of the group: where its item key is in `itemKeys` (nil: not unwrapped).
        var keyIndex = [Int?](repeating: nil, count: Crypto.keyUnwrapBatch)
    }

    init(classKeys: [ProtectionClass: SecretKey], path: String) {
        self.classKeys = classKeys
        self.path = path
    }

    func start(fileUUID: [UInt8], keys: FileKeys) {
        self.fileUUID = fileUUID
        self.keys = keys
        for _ in 0..<ItemChecker.workers {
            condition.lock()
            running += 1
            condition.unlock()
            if DetachedThread.start({ [self] in work() }) {
                threaded = true
            } else {
                condition.lock()
                running -= 1
                condition.unlock()
            }
        }
    }

    func submit(_ put: AuthenticatedPut) {
        guard classKeys[put.protection] != nil else { return }
        if batch.count >= ItemChecker.batchSize { flush() }
        batch.append(put)
    }

    /// The hashes of the hash record bound to the put at `offset`, which the scan read just
    /// before it (so it is the batch's last put, when its class key is available).
    func bind(toPutAt offset: UInt64, _ hashes: [UInt64]) {
        guard let last = batch.indices.last, batch[last].offset == offset else { return }
        batch[last].boundHashes = hashes
    }

    private func flush() {
        guard !batch.isEmpty else { return }
        guard threaded else {
            check(batch, &inline)
            batch.removeAll(keepingCapacity: true)
            return
        }
        condition.lock()
        while queue.count >= ItemChecker.maxQueued { condition.wait(seconds: 1) }
        queue.append(batch)
        condition.broadcast()
        condition.unlock()
        batch = []
        batch.reserveCapacity(ItemChecker.batchSize)
    }

    /// Waits until every record submitted is decrypted.
    /// - Returns: the failures by offset, and the offsets of the puts whose bound hash record
    ///   does not hold their attributes' hashes.
    func finish() -> (failures: [UInt64: String], mismatches: Set<UInt64>) {
        flush()
        if threaded {
            condition.lock()
            closed = true
            condition.broadcast()
            while running > 0 { condition.wait(seconds: 1) }
            condition.unlock()
            threaded = false
        }
        failures.merge(inline.found) { a, _ in a }
        mismatches.formUnion(inline.mismatched)
        Crypto.cleanse(&inline.plaintext)
        inline = Scratch()
        return (failures, mismatches)
    }

    private func work() {
        var scratch = Scratch()
        while true {
            condition.lock()
            while queue.isEmpty && !closed { condition.wait(seconds: 1) }
            if queue.isEmpty {
                failures.merge(scratch.found) { a, _ in a }
                mismatches.formUnion(scratch.mismatched)
                running -= 1
                condition.broadcast()
                condition.unlock()
                Crypto.cleanse(&scratch.plaintext)
                return
            }
            let next = queue.removeFirst()
            condition.broadcast()
            condition.unlock()
            check(next, &scratch)
        }
    }

    private func check(_ puts: [AuthenticatedPut], _ scratch: inout Scratch) {
        guard let keys else { return }
        var start = 0
        while start < puts.count {
            let group = start..<min(start + Crypto.keyUnwrapBatch, puts.count)
            start = group.upperBound
            unwrapKeys(puts[group], &scratch)
            defer { Crypto.cleanse(&scratch.itemKeys) }
            for (k, put) in zip(0..., puts[group]) {
                guard let key = classKeys[put.protection] else { continue }
                let payload = put.buffer[put.payload]
                var checked: Bool?
                var clearPartAgrees = true
                if let i = scratch.keyIndex[k] {
                    checked = scratch.itemKeys.withUnsafeBytes { itemKeys in
                        ItemPutPayload.withOpened(
                            payload, itemKey: UnsafeRawBufferPointer(rebasing: itemKeys[i * 32..<i * 32 + 32]),
                            fileUUID: fileUUID, context: scratch.gcm, scratch: &scratch.plaintext
                        ) { plaintext in
                            guard let c = keys.attributeHashes(ofEncoded: plaintext, into: &scratch.hashes) else {
                                return false
                            }
                            clearPartAgrees = withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { hash in
                                keys.uniqueKeyHash(ofEncoded: plaintext, scratch: &scratch.uniqueKey, into: hash)
                                    && ItemChecker.clearPart(
                                        of: payload, agreesWith: c, uniqueKeyHash: UnsafeRawBufferPointer(hash), keys)
                            }
                            return true
                        }
                    }
                }
                if checked == true {
                    if !clearPartAgrees { scratch.found[put.offset] = ItemChecker.clearPartProblem(put, path) }
                    if let bound = put.boundHashes, !ItemChecker.sameSet(bound, scratch.hashes) {
                        scratch.mismatched.insert(put.offset)
                    }
                    continue
                }
                // Refused: the full decoder says why (and decides, should the two ever disagree).
                do {
                    let plaintext = try KeychainStore.open(
                        payload, offset: put.offset, classKey: key, fileUUID: fileUUID, path: path)
                    let hash = keys.uniqueKeyHash(
                        UniqueKey(itemClass: plaintext.itemClass, attributes: plaintext.attributes))
                    if !hash.withUnsafeBytes({
                        ItemChecker.clearPart(of: payload, agreesWith: plaintext.itemClass, uniqueKeyHash: $0, keys)
                    }) {
                        scratch.found[put.offset] = ItemChecker.clearPartProblem(put, path)
                    }
                    if let bound = put.boundHashes, !ItemChecker.sameSet(bound, keys.attributeHashes(for: plaintext)) {
                        scratch.mismatched.insert(put.offset)
                    }
                } catch {
                    scratch.found[put.offset] =
                        put.inHistoryRecord
                        ? "the earlier version it keeps does not decrypt to a valid item with its class key (written so, or tampered with by someone who holds the device secret; spec/FORMAT.md §7.7): \(error)"
                        : String(describing: error)
                }
            }
        }
    }

    /// Whether the clear part of a put (its class tag at bytes 16–19 and unique-key hash at
    /// 24–39) is what its plaintext gives (spec §8.4).
    static func clearPart(
        of payload: ArraySlice<UInt8>, agreesWith c: ItemClass, uniqueKeyHash: UnsafeRawBufferPointer,
        _ keys: FileKeys
    ) -> Bool {
        let s = payload.startIndex
        guard payload.count >= 40, uniqueKeyHash.count == 16 else { return false }
        return payload[s + 16..<s + 20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } == keys.classTagWord(c)
            && payload[s + 24..<s + 40].elementsEqual(uniqueKeyHash)
    }

    static func clearPartProblem(_ put: AuthenticatedPut, _ path: String) -> String {
        if put.inHistoryRecord {
            return
                "the earlier version it keeps has a class tag or unique-key hash that its contents do not give (written by a faulty writer, or by someone who held its class key; spec/FORMAT.md §7.7, §8.4)"
        }
        return
            "the item record at byte \(put.offset) of \(path) has a class tag or unique-key hash that its contents do not give (written by a faulty writer, or by someone who held its class key): a find by unique key may miss it or find it twice"
    }

    /// Unwraps the item keys of the well-formed puts of `group` into `scratch.itemKeys`, all of
    /// one class key at once (`Crypto.aesKeyUnwrap(kek:many:...)`), and sets `scratch.keyIndex`.
    private func unwrapKeys(_ group: ArraySlice<AuthenticatedPut>, _ scratch: inout Scratch) {
        let wrappedSize = FormatConstants.wrappedKeySize
        for k in 0..<group.count { scratch.keyIndex[k] = nil }
        var done = 0
        var pending = Array(group.indices)
        while let first = pending.first {
            let protection = group[first].protection
            let members = pending.filter { group[$0].protection == protection }
            pending.removeAll { group[$0].protection == protection }
            guard let kek = classKeys[protection] else { continue }
            var well: [Int] = []
            for i in members where ItemPutPayload.isWellFormed(group[i].buffer[group[i].payload]) {
                let put = group[i]
                let s = put.payload.lowerBound + 40
                scratch.wrapped.withUnsafeMutableBytes { w in
                    put.buffer.withUnsafeBytes { b in
                        UnsafeMutableRawBufferPointer(
                            rebasing: w[well.count * wrappedSize..<(well.count + 1) * wrappedSize]
                        )
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: b[s..<s + wrappedSize]))
                    }
                }
                well.append(i)
            }
            guard !well.isEmpty else { continue }
            let base = done * 32, count = well.count
            var ok = false
            scratch.wrapped.withUnsafeBytes { w in
                scratch.itemKeys.withUnsafeMutableBytes { out in
                    scratch.unwrapped.withUnsafeMutableBufferPointer { flags in
                        ok = Crypto.aesKeyUnwrap(
                            kek: kek, many: w, each: wrappedSize, count: count,
                            into: UnsafeMutableRawBufferPointer(rebasing: out[base..<out.count]), ok: flags)
                    }
                }
            }
            for (j, i) in well.enumerated() where ok && scratch.unwrapped[j] == 1 {
                scratch.keyIndex[i - group.startIndex] = done + j
            }
            done += well.count
        }
    }

    /// Whether two short lists of hashes hold the same values (order and repeats aside).
    static func sameSet(_ a: [UInt64], _ b: [UInt64]) -> Bool {
        a.allSatisfy { b.contains($0) } && b.allSatisfy { a.contains($0) }
    }
}

/// Facts about a keychain for `latchkey info`.
public struct KeychainInfo: Sendable, Codable {
    public var path: String
    public var formatVersion: String
    public var fileUUID: String
    public var deviceUUID: String
    public var hasPasscode: Bool
    public var kdf: String
    public var fileSize: UInt64
    public var records: Int
    public var liveItems: Int
    /// Count per class code; items whose class key is locked are counted under "locked".
    public var itemsByClass: [String: Int]
    public var itemsByProtection: [String: Int]
    public var unlockedClasses: [String]
}

extension KeychainStore {
    /// Checks the index file (spec §17), when it passes the binding check, against a scan of
    /// the whole log: the items it gives with the records after it must be exactly the scan's.
    /// An index that fails a check is ignored by every reader and is no problem; one whose MACs
    /// verify and whose entries are wrong was written wrongly or forged (only the device can).
    func indexDisagreement(fd: Int32, header: FileHeader, headerSize: Int, keys: FileKeys, truth: LogState) -> String? {
        guard
            case .success(let base) = IndexBase.load(
                indexPath: indexPath, fs: fs, logFD: fd, logHeader: header,
                logHeaderSize: headerSize, keys: keys)
        else { return nil }
        var indexed = LogState(header: header, index: base)
        let what = "the index file \(indexPath) does not describe the keychain"
        let fix =
            "readers check the record each entry names (its item UUID, sequence number and clear fields) before they use the entry, and use the log instead when one does not match, so no item was returned or changed in the place of another because of it; remove the index file, and the next change writes a new one"
        struct Differs: Error { var id: ID16 }
        do {
            _ = try indexed.scan(fs: fs, fd: fd, keys: keys)
            do {
                try indexed.items.checkAll()
            } catch let u as IndexBase.Unusable where u.contradictsLog {
                return "\(what) (\(u.reason)); \(fix)"
            }
            guard indexed.items.count == truth.items.count, indexed.end == truth.end else {
                return "\(what) (\(indexed.items.count) items where the log has \(truth.items.count)); \(fix)"
            }
            // First one sequential pass over each side, summed into order-independent digests
            // keyed by this process's random Hasher seed: the index's item table (each page
            // authenticated) with the records after it on top, and the scan's items. Equal
            // digests and counts mean equal sets (index entries are unique: the table is
            // sorted). Only when they differ is the index walked again, looking each entry up
            // in the scan's table (a cache miss each: most of this check's time at 1M items),
            // to name what differs.
            let items = indexed.items
            var fromIndex = SlotSetDigest(), fromLog = SlotSetDigest()
            var listed = 0
            try base.forEachItem { id, slot in
                guard !items.hasChanged(id) else { return }
                fromIndex.add(id, slot)
                listed += 1
            }
            for id in items.changedIDsInOrder() {
                guard let slot = items.change(id) ?? nil else { continue }
                fromIndex.add(id, slot)
                listed += 1
            }
            for (id, slot) in truth.items { fromLog.add(id, slot) }
            if listed == truth.items.count, fromIndex == fromLog { return nil }
            // Without a second copy of the items in memory: every entry not changed since must
            // be the scan's, and so must every item the records after it left.
            var matched = 0
            try base.forEachItem { id, slot in
                guard !items.hasChanged(id) else { return }
                guard truth.items[id] == slot else { throw Differs(id: id) }
                matched += 1
            }
            for id in items.changedIDsInOrder() {
                guard let slot = items.change(id) ?? nil else { continue }
                guard truth.items[id] == slot else { throw Differs(id: id) }
                matched += 1
            }
            guard matched == truth.items.count else {
                return "\(what) (\(matched) items where the log has \(truth.items.count)); \(fix)"
            }
        } catch is IndexBase.Unusable {
            return nil
        } catch let d as Differs {
            return "\(what) (item \(hexString(d.id.bytes)) differs); \(fix)"
        } catch {
            return "\(what) (\(error)); \(fix)"
        }
        return nil
    }
}

/// An order-independent digest of a set of items: the wrapping sum of a keyed 64-bit hash (Swift's
/// Hasher, SipHash seeded at random per process, so no file can be made to collide but by
/// chance, about 2^-64) of each item and its slot, every field of which `ItemSlot`'s
/// synthesized `Hashable` covers.
struct SlotSetDigest: Equatable {
    private var sum: UInt64 = 0

    mutating func add(_ id: ID16, _ slot: ItemSlot) {
        var h = Hasher()
        h.combine(id)
        h.combine(slot)
        sum &+= UInt64(bitPattern: Int64(h.finalize()))
    }
}
