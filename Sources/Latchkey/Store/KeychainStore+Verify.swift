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
    func verify() -> VerifyReport {
        var report = VerifyReport()
        report.recoveredTailBytes = recoveredTailBytes
        var available: [ProtectionClass: SecretKey] = [:]
        for pc in ProtectionClass.allCases where isAvailable(pc) {
            if let key = try? classKey(pc) { available[pc] = key }
        }
        let checker = ItemChecker(classKeys: available, path: path)
        var failures: [UInt64: String]?
        defer { if failures == nil { _ = checker.finish() } }
        do {
            let fd = try io({ try fs.openReadOnly(path) }, "open the keychain")
            defer { fs.close(fd) }
            let (h, size, k) = try KeychainStore.readHeader(fs: fs, fd: fd, path: path, device: device)
            checker.start(fileUUID: h.fileUUID, keys: k)
            var fresh = LogState(header: h, headerSize: size)
            do {
                let end = try io({ try fresh.scan(fs: fs, fd: fd, keys: k, onPut: checker.submit) }, "read the keychain")
                report.fileSize = end.fileSize
                let seen = (try? device.state(fileUUID: h.fileUUID))??.newestSequence ?? 0
                if let failure = end.failure, seen > fresh.lastSequence {
                    report.problems.append("damage at byte \(failure.offset) (\(failure.reason)) in a change this device acknowledged (up to change \(seen)); a repair plan shows what cutting it off would drop")
                } else if let torn = end.tornAt {
                    report.problems.append("unfinished write at byte \(torn) (\(end.fileSize - torn) bytes): another process may be writing; otherwise it is cut off at the next write")
                }
            } catch Corruption.damaged(let offset, let reason) {
                report.problems.append("damage at byte \(offset): \(reason); a repair plan shows what cutting it off would drop")
            } catch Corruption.newerVersion(let offset, let type) {
                report.problems.append("record type \(type) at byte \(offset) needs a newer Latchkey")
            } catch Corruption.retiredKeybagChange(let offset) {
                report.problems.append("a passcode change appended as a keybag record at byte \(offset), which is no longer accepted (spec/FORMAT.md §6.6)")
            }
            report.records = fresh.recordCount
            report.liveItems = fresh.items.count
            // While the other thread decrypts.
            if report.problems.isEmpty, let problem = indexDisagreement(fd: fd, header: h, headerSize: size, keys: k, truth: fresh) {
                report.problems.append(problem)
            }
            let failed = checker.finish()
            failures = failed
            var problems: [(UInt64, String)] = []
            for (id, slot) in fresh.items {
                guard available[slot.protection] != nil else { report.lockedItems += 1; continue }
                if let f = failed[slot.offset] { problems.append((slot.offset, f)); continue }
                report.checkedItems += 1
                // A bound hash record whose hashes are not the item's (spec §7.6).
                if case .hashed(let have)? = fresh.attributes.state(id),
                   let decrypted = checker.attributeDigests[slot.offset], decrypted != ItemChecker.digest(have) {
                    problems.append((slot.offset, KeychainStore.attributeHashMismatch(id)))
                }
            }
            problems.sort { $0.0 < $1.0 }
            report.problems += problems.map { "item at byte \($0.0): \($0.1)" }
        } catch {
            report.problems.append(String(describing: error))
        }
        return report
    }
}

/// Decrypts the item records a scan hands it (`LogState.scan`'s `onPut`) on two threads of
/// its own, in batches, and keeps each failure by record offset. Decryption (and decoding the
/// plaintext) costs more than the scan, so two workers beside the scanning thread keep two
/// cores busy. The scan waits when a few batches are queued, so memory holds at most about
/// six of its read buffers. Without a thread the records are decrypted in `submit`.
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
    /// The failures, merged under `condition` by each worker when it ends (and by `submit`
    /// without threads).
    private var failures: [UInt64: String] = [:]
    private static let workers = 2
    /// The scan thread's batch being filled.
    private var batch: [AuthenticatedPut] = []
    private static let batchSize = 1024
    private static let maxQueued = 4

    /// Keys the attribute hashes of each item decrypted (spec §7.6).
    private var keys: FileKeys?
    /// Per record offset, `digest` of the attribute hashes its plaintext has (guarded by
    /// `condition` while workers run; complete after `finish`).
    private(set) var attributeDigests: [UInt64: UInt64] = [:]

    /// One number for a set of attribute hashes (order and repeats do not matter), so that
    /// verify keeps 16 bytes per item, not the hashes, to compare with the hash records.
    static func digest(_ hashes: [UInt64]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        var last: UInt64?
        for x in hashes.sorted() where x != last {
            h = (h ^ x) &* 0x0000_0100_0000_01b3
            h ^= h >> 29
            last = x
        }
        return h
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
        batch.append(put)
        guard batch.count >= ItemChecker.batchSize else { return }
        flush()
    }

    private func flush() {
        guard !batch.isEmpty else { return }
        guard threaded else {
            check(batch, into: &failures, digests: &attributeDigests)
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

    /// Waits until every record submitted is decrypted. - Returns: the failures by offset.
    func finish() -> [UInt64: String] {
        flush()
        if threaded {
            condition.lock()
            closed = true
            condition.broadcast()
            while running > 0 { condition.wait(seconds: 1) }
            condition.unlock()
            threaded = false
        }
        return failures
    }

    private func work() {
        var found: [UInt64: String] = [:]
        var digests: [UInt64: UInt64] = [:]
        while true {
            condition.lock()
            while queue.isEmpty && !closed { condition.wait(seconds: 1) }
            if queue.isEmpty {
                failures.merge(found) { a, _ in a }
                attributeDigests.merge(digests) { a, _ in a }
                running -= 1
                condition.broadcast()
                condition.unlock()
                return
            }
            let next = queue.removeFirst()
            condition.broadcast()
            condition.unlock()
            check(next, into: &found, digests: &digests)
        }
    }

    private func check(_ puts: [AuthenticatedPut], into found: inout [UInt64: String], digests: inout [UInt64: UInt64]) {
        for put in puts {
            guard let key = classKeys[put.protection] else { continue }
            do {
                let plaintext = try KeychainStore.open(put.buffer[put.payload], offset: put.offset, classKey: key, fileUUID: fileUUID, path: path)
                if let keys { digests[put.offset] = ItemChecker.digest(keys.attributeHashes(for: plaintext)) }
            } catch {
                found[put.offset] = String(describing: error)
            }
        }
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
        guard case .success(let base) = IndexBase.load(indexPath: indexPath, fs: fs, logFD: fd, logHeader: header,
                                                       logHeaderSize: headerSize, keys: keys) else { return nil }
        var indexed = LogState(header: header, index: base)
        let what = "the index file \(indexPath) does not describe the keychain"
        let fix = "readers check every record they read, so nothing wrong was returned; remove the index file, and the next change writes a new one"
        struct Differs: Error { var id: ID16 }
        do {
            _ = try indexed.scan(fs: fs, fd: fd, keys: keys)
            guard indexed.items.count == truth.items.count, indexed.end == truth.end else {
                return "\(what) (\(indexed.items.count) items where the log has \(truth.items.count)); \(fix)"
            }
            // One pass over the index's item table (each page authenticated), without a second
            // copy of the items in memory: every entry not changed since must be the scan's,
            // and so must every item the records after it left.
            let items = indexed.items
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

