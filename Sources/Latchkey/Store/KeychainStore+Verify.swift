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
    /// in memory), then decrypts every live item whose class key is available.
    func verify() -> VerifyReport {
        var report = VerifyReport()
        report.recoveredTailBytes = recoveredTailBytes
        do {
            let fd = try io({ try fs.openReadOnly(path) }, "open the keychain")
            defer { fs.close(fd) }
            let (h, size, k) = try KeychainStore.readHeader(fs: fs, fd: fd, path: path, device: device)
            var fresh = LogState(header: h, headerSize: size)
            do {
                let end = try io({ try fresh.scan(fs: fs, fd: fd, keys: k) }, "read the keychain")
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
            if report.problems.isEmpty, let problem = indexDisagreement(fd: fd, header: h, headerSize: size, keys: k, truth: fresh) {
                report.problems.append(problem)
            }
            for (id, slot) in fresh.items.sorted(by: { $0.value.offset < $1.value.offset }) {
                guard isAvailable(slot.protection) else { report.lockedItems += 1; continue }
                do {
                    // The slot's offset is in the file just scanned, not necessarily the one
                    // this store has open (another process may have compacted it).
                    let plaintext = try read(slot, from: fd)
                    report.checkedItems += 1
                    if let problem = attributeHashProblem(id, plaintext, in: fresh, keys: k) { report.problems.append(problem) }
                } catch {
                    report.problems.append("item at byte \(slot.offset): \(error)")
                }
            }
        } catch {
            report.problems.append(String(describing: error))
        }
        return report
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
        do {
            _ = try indexed.scan(fs: fs, fd: fd, keys: keys)
            try indexed.items.materialize()
        } catch is IndexBase.Unusable {
            return nil
        } catch {
            return "\(what) (\(error)); \(fix)"
        }
        guard indexed.items.count == truth.items.count, indexed.end == truth.end else {
            return "\(what) (\(indexed.items.count) items where the log has \(truth.items.count)); \(fix)"
        }
        for (id, slot) in truth.items where indexed.items[id] != slot {
            return "\(what) (item \(hexString(id.bytes)) differs); \(fix)"
        }
        return nil
    }
}

