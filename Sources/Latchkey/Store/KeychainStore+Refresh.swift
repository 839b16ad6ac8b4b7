import LatchkeyCrypto
import LatchkeyFormat

extension KeychainStore {
    // MARK: Reading the log

    /// Applies records appended since the last look. With `mayTruncate` (a writer, or open),
    /// an incomplete tail is confirmed under the lock and cut off.
    func catchUp(mayTruncate: Bool) throws {
        let found = try scanMapped()
        guard found.tornAt != nil, mayTruncate else { return }
        try lockExclusively(followingThePath: false) { lock in
            // Another writer may have been mid-append: look again now that nobody can be.
            try cutTornTail(try scanMapped(), holding: lock)
        }
    }

    /// Cuts off the torn tail a scan found, under the exclusive lock (spec §10.4). A
    /// tail that holds a record failing its checksum or tag is cut only when this device has
    /// acknowledged no commit beyond the committed end: otherwise the failure is damage to
    /// an acknowledged record, which is reported and never dropped.
    func cutTornTail(_ found: ScanEnd, holding _: ExclusiveLock) throws {
        guard let torn = found.tornAt else { return }
        if let failure = found.failure, let acknowledged = try acknowledgedBeyond(log.lastSequence) {
            throw damagedTail(failure, acknowledged: acknowledged, last: log.lastSequence)
        }
        try io(
            {
                try fs.truncate(fd, to: torn)
                try fs.sync(fd)
            }, "cut off the incomplete end of the keychain")
        recoveredTailBytes += found.fileSize - torn
    }

    /// Scans a state without an index over the open file (see `scan`).
    func scanFresh(_ state: inout LogState) throws -> ScanEnd {
        try scan(&state, fd: fd, keys: keys)
    }

    /// Scans the records of `state`'s file from where it stopped, mapping damage to errors.
    func scan(_ state: inout LogState, fd: Int32, keys: FileKeys) throws -> ScanEnd {
        do {
            return try io({ try state.scan(fs: fs, fd: fd, keys: keys) }, "read the keychain")
        } catch let c as Corruption {
            switch c {
            case .damaged(let offset, let reason):
                throw KeychainError(
                    .decode, "the keychain \(path) is damaged at byte \(offset) (\(reason)); nothing was changed",
                    remedy: .repairOrRestore)
            case .newerVersion(let offset, let type):
                throw KeychainError(
                    .decode,
                    "the keychain \(path) holds a record of type \(type) at byte \(offset) that this Latchkey does not know; upgrade Latchkey"
                )
            case .retiredKeybagChange(let offset):
                throw KeychainError(
                    .decode,
                    "the keychain \(path) holds a passcode change appended as a keybag record at byte \(offset); such records are no longer accepted because anyone holding the device secret could forge one (spec/FORMAT.md §6.6); if you changed this keychain's passcode with Latchkey 0.1, run 'latchkey compact' with that version first, then open it here; otherwise the record is forged: restore from a backup"
                )
            }
        }
    }

    func scanMapped() throws -> ScanEnd {
        let found: ScanEnd
        do {
            found = try scan(&log, fd: fd, keys: keys)
        } catch is IndexBase.Unusable {
            found = try rebuildWithoutIndex()
        }
        highestSeen = max(highestSeen, log.lastSequence)
        lastScan = found
        return found
    }

    /// The newest sequence number this device acknowledged for this keychain when it is beyond
    /// `last`: the device state's, or this handle's own memory of the file when that is
    /// higher (a state deleted or replaced by an older copy). nil when nothing beyond `last`
    /// was acknowledged.
    private func acknowledgedBeyond(_ last: UInt64) throws -> UInt64? {
        let remembered = try acknowledgedSequence()
        return remembered > last ? remembered : nil
    }

    /// The newest sequence number this device acknowledged for this keychain: the device
    /// state's, or this handle's own memory of the file when that is higher.
    private func acknowledgedSequence() throws -> UInt64 {
        max(highestSeen, (try device.state(fileUUID: header.fileUUID))?.newestSequence ?? 0)
    }

    private func damagedTail(_ failure: TailFailure, acknowledged: UInt64, last: UInt64) -> KeychainError {
        KeychainError(
            .decode,
            "the keychain \(path) is damaged at byte \(failure.offset) (\(failure.reason)): this device acknowledged changes up to \(acknowledged), and the intact part ends at change \(last); nothing was changed",
            remedy: .repairOrRestore)
    }

    /// The error for a file older than what this device acknowledged: damage when the scan
    /// stopped at a record that fails its checks, a rollback otherwise (spec §10.4, §13).
    private func olderThanAcknowledged(_ acknowledged: UInt64, last: UInt64, scan found: ScanEnd?) -> KeychainError {
        if let failure = found?.failure { return damagedTail(failure, acknowledged: acknowledged, last: last) }
        return KeychainError(
            .decode,
            "the keychain \(path) has been rolled back: this device last saw change \(acknowledged), the file ends at change \(last) (an older copy was put back?)",
            remedy: .adoptRollback)
    }

    /// A keychain without a passcode whose device state remembers one (spec/SECURITY.md §2.5):
    /// someone with the device secret but not the passcode can write a header whose keybag has
    /// no passcode, so that the items added next are readable without it.
    static func passcodeRemovedBehindYourBack(_ path: String) -> KeychainError {
        KeychainError(
            .decode,
            "the keychain \(path) has no passcode, but this device remembers that it had one at its last change here: its header may have been replaced by someone who has the device secret, so that what is added to it would be readable without your passcode; nothing was read or written. If you did not remove the passcode yourself, do not use this file: restore the keychain from a backup",
            remedy: .adoptRollback)
    }

    func checkRollback(accept: Bool) throws {
        let state = try device.state(fileUUID: header.fileUUID)
        if let s = state, log.lastSequence < s.newestSequence, !accept {
            // The state is written only after the commit it records is durable (spec §9.3), so
            // a commit or a compaction by another process between our scan and our read of the
            // state looks like a file older than the state. Look at the file again (reopening
            // it if a compaction replaced it): a file still older than the state we read was
            // put back.
            try refresh()
        }
        if let s = state, log.lastSequence < s.newestSequence, !accept {
            throw olderThanAcknowledged(s.newestSequence, last: log.lastSequence, scan: lastScan)
        }
        if let s = state, s.passcodeSet, !header.keybag.hasPasscode, !accept {
            throw KeychainStore.passcodeRemovedBehindYourBack(path)
        }
        if state == nil || state!.newestSequence != log.lastSequence
            || (accept && state!.passcodeSet != header.keybag.hasPasscode)
        {
            var s = state ?? DeviceState(fileUUID: header.fileUUID, newestSequence: 0)
            if accept || log.lastSequence > s.newestSequence {
                s.newestSequence = log.lastSequence
                try? device.saveState(s, allowLower: accept, passcodeSet: accept ? header.keybag.hasPasscode : nil)
            }
        }
        if accept {
            highestSeen = log.lastSequence
            // An index of the newer history is ignored anyway (§17.5); removing it keeps it
            // from ever meeting a later append to the adopted file.
            if readOnlyReason == nil, let s = state, s.newestSequence > log.lastSequence { try? fs.remove(indexPath) }
        }
    }

    /// Sees what other processes appended, and reopens when compaction replaced the file.
    ///
    /// One fstat when nothing changed since the last look: `verifiedStatus` is the file's status
    /// when the path was last seen to name it. Any append, write or change of the file's links
    /// (a compaction renaming its file over the path unlinks ours) moves the inode's ctime, and
    /// then the path is compared as well. Writers compare the path under the lock every time
    /// (§11.2), so a reader could only miss a replacement whose links went 1 → 2 → 1 within one
    /// tick of the coarse ctime clock with no append: someone hard-linking the file during a
    /// compaction.
    package func refresh() throws {
        mutex.lock(); defer { mutex.unlock() }
        if needsReopen {
            try reopen()
            needsReopen = false
            return
        }
        let status = try io({ try fs.status(fd) }, "read the keychain")
        if let status, status == verifiedStatus, status.links == 1, status.size == log.end { return }
        let now = try io({ try fs.identity(path: path) }, "read the keychain")
        if now != identity {
            verifiedStatus = nil
            try reopen()
            directoryUnsynced = true
            return
        }
        if try status?.size ?? io({ try fs.size(fd) }, "read the keychain") != log.end {
            _ = try scanMapped()
        }
        // Taken before the path was compared: a change after it moves the stamp again.
        verifiedStatus = status
    }

    /// Reads the file now at the path from its start (another process compacted it, changed
    /// its passcode, or put another file there) and takes it in place of the one open, after
    /// the checks `open` makes: the same keychain (file UUID), and not older than what this
    /// device acknowledged or this handle has seen (spec §13) — an older copy renamed into
    /// place is refused, never served or written on top of. The class keys in memory are kept
    /// when the keybag is the same (a compaction); a new keybag (a passcode change, §11.6)
    /// has new class keys, so the store is locked again.
    func reopen() throws {
        // What this device acknowledged is read once, before the file is opened: the state is
        // written only after the commit it records is durable in the file then at the path
        // (spec §9.3), and every file later put there by a compaction or a passcode change
        // continues that file's numbering, so the file opened after this read holds every
        // commit it records unless an older copy was put back. Read after the scan instead, it
        // could meet a commit that landed since and take a healthy file for a rolled-back one.
        let acknowledged = try acknowledgedSequence()
        let (newFD, writable) = try KeychainStore.openFile(fs: fs, path: path)
        do {
            let (h, size, k) = try KeychainStore.readHeader(fs: fs, fd: newFD, path: path, device: device)
            guard h.fileUUID == header.fileUUID else {
                throw KeychainError(.decode, "the file at \(path) was replaced by a different keychain; open it again")
            }
            var (fresh, covered) = initialState(fd: newFD, header: h, headerSize: size, keys: k)
            var damaged = false
            let found: ScanEnd
            do {
                found = try scan(&fresh, fd: newFD, keys: k)
            } catch is IndexBase.Unusable {
                fresh = LogState(header: h, headerSize: size)
                (covered, damaged) = (0, true)
                found = try scan(&fresh, fd: newFD, keys: k)
            }
            if fresh.lastSequence < acknowledged {
                throw olderThanAcknowledged(acknowledged, last: fresh.lastSequence, scan: found)
            }
            let sameKeys = h.keybag == keybagOfKeys
            fs.close(fd)
            fd = newFD
            identity = try io({ try fs.identity(newFD) }, "open the keychain")
            header = h
            headerSize = size
            keys = k
            log = fresh
            indexedEnd = covered
            if damaged { indexDamaged = true }
            lastScan = found
            highestSeen = max(highestSeen, log.lastSequence)
            if !writable, readOnlyReason == nil {
                readOnlyReason = KeychainStore.notWritable
            }
            epoch += 1
            verifiedStatus = nil
            if !sameKeys {
                classKeys = [:]
                unlockedOnce = false
                keybagOfKeys = h.keybag
                try unwrapDeviceClasses()
            }
        } catch {
            fs.close(newFD)
            throw error
        }
    }
}
