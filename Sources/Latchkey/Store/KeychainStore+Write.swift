import LatchkeyCrypto
import LatchkeyFormat

/// One change inside a transaction.
enum Mutation {
    case put(id: ID16, plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8)
    case delete(ID16)
}

extension KeychainStore {
    // MARK: Writing

    /// Runs `body` with the exclusive file lock held and the log caught up: the place for
    /// read-check-write sequences such as "fail if the unique key exists, else add".
    func withWriteLock<T>(_ body: () throws -> T) throws -> T {
        mutex.lock(); defer { mutex.unlock() }
        if let readOnlyReason {
            throw KeychainError(.readOnly, "the keychain \(path) can be read but not changed: \(readOnlyReason)")
        }
        while true {
            try io({ try fs.lock(fd) }, "lock the keychain")
            let now = try io({ try fs.identity(path: path) }, "lock the keychain")
            if now == identity { break }
            fs.unlock(fd)
            try reopen()
            directoryUnsynced = true
        }
        defer { fs.unlock(fd) }
        removeLeftoversOnce()
        try catchUpLocked()
        if directoryUnsynced {
            // Another process (or a failed directory fsync of ours) put this file at the path;
            // an append to it is durable only once that name is (spec §11.4).
            try io({ try fs.syncDirectory(directoryOf(path)) }, "sync the keychain's directory")
            directoryUnsynced = false
        }
        let result = try body()
        maybeWriteIndex()
        return result
    }

    private func catchUpLocked() throws {
        try cutTornTail(try scanMapped())
    }

    /// Appends one transaction: every record in one write, then one fsync. Call inside
    /// `withWriteLock`. Checks unique keys first; on any failure nothing changes.
    /// - Throws: errSecDuplicateItem, errSecItemNotFound (delete of a missing item), class-key
    ///   errors, errSecIO.
    func commit(_ mutations: [Mutation]) throws {
        guard !mutations.isEmpty else { return }
        let planned = try withIndexFallback { try plan(mutations) }
        try append(planned)
    }

    /// Seals and checks the records of a transaction against the live items (read, not
    /// changed).
    func plan(_ mutations: [Mutation]) throws -> [(type: RecordType, payload: [UInt8], op: PendingOp)] {
        // Validate against small overlays on the live indexes (copying the indexes would
        // cost O(items) per commit): nil in an overlay means "removed by this transaction".
        var owners: [ID16: ID16?] = [:]
        var slots: [ID16: ItemSlot?] = [:]
        func owner(_ hash: ID16) throws -> ID16? { if let o = owners[hash] { return o }; return try log.items.owner(hash) }
        func slot(_ id: ID16) throws -> ItemSlot? { if let s = slots[id] { return s }; return try log.items.slot(id) }
        var planned: [(type: RecordType, payload: [UInt8], op: PendingOp)] = []
        for m in mutations {
            switch m {
            case .put(let id, let plaintext, let pc, let flags):
                let sealed = try seal(plaintext, uuid: id.bytes, protection: pc, flags: flags)
                let hash = ID16(sealed.uniqueKeyHash)
                if let o = try owner(hash), o != id {
                    throw KeychainError(.duplicateItem, "an item with the same unique key already exists (for a password: same class, account, service and access group)")
                }
                if let old = try slot(id) { owners[old.uniqueHash] = .some(nil) }
                owners[hash] = id
                let s = ItemSlot(offset: 0, recordSize: 0, classTag: sealed.classTag.readBE(UInt32.self, at: 0),
                                 protection: pc, flags: flags, uniqueHash: hash, sequence: 0)
                slots[id] = s
                let encoded = sealed.encode()
                planned.append((.itemPut, encoded, .put(id, s)))
                // Right after its put, in the same transaction (spec §7.6).
                let hashes = keys.attributeHashRecord(for: plaintext, putPayload: encoded)
                planned.append((.attributeHashes, hashes.encode(), .hashes(id, hashes.hashes)))
            case .delete(let id):
                guard let old = try slot(id) else {
                    throw KeychainError(.itemNotFound, "the item to delete no longer exists")
                }
                slots[id] = .some(nil)
                owners[old.uniqueHash] = .some(nil)
                planned.append((.itemDelete, ItemDeletePayload(uuid: id.bytes).encode(), .delete(id)))
            }
        }
        return planned
    }

    /// Appends planned records as one transaction (see `commit`).
    func append(_ planned: [(type: RecordType, payload: [UInt8], op: PendingOp)]) throws {
        let start = log.end
        var offset = start
        var sequence = log.lastSequence
        var records: [UInt8] = []
        var applied: [(PendingOp, UInt64)] = []
        var lastOffset = start
        for (i, p) in planned.enumerated() {
            sequence += 1
            let flags = i < planned.count - 1 ? FrameHeader.continuesFlag : 0
            let record = RecordFrame.encode(type: p.type.rawValue, flags: flags, sequence: sequence, payload: p.payload,
                                            offset: offset, macKey: keys.recordMAC)
            if case .put(let id, var s) = p.op {
                (s.offset, s.recordSize, s.sequence) = (offset, UInt32(record.count), sequence)
                applied.append((.put(id, s), offset))
            } else {
                applied.append((p.op, offset))
            }
            lastOffset = offset
            offset += UInt64(record.count)
            records.append(contentsOf: record)
        }
        do {
            try fs.write(fd, offset: start, records)
            try fs.sync(fd)
        } catch {
            // Leave the file as it was: cut back whatever part of the write landed.
            let cutBack = Result { () throws -> Void in
                try fs.truncate(fd, to: start)
                try fs.sync(fd)
            }
            if case .failure = cutBack { throw changeMayHaveLanded(error) }
            _ = try io({ throw error }, "write to the keychain")
        }
        // Durable from here: the call succeeds whatever follows (spec §11.4). The records are
        // applied as a reader would apply them, from what was written rather than by reading
        // it back, so a failing read cannot turn a commit into a reported failure.
        do {
            for (op, at) in applied { try log.apply(op, at: at) }
            log.lastRecordOffset = lastOffset
            log.end = offset
            log.lastSequence = sequence
            log.recordCount += planned.count
            log.skippedAncillary += planned.filter { RecordType.isAncillary($0.type.rawValue) }.count
            highestSeen = max(highestSeen, sequence)
        } catch {
            needsReopen = true
        }
        recordCommit(sequence)
    }

    /// The error for a transaction whose write or fsync failed after its closing record was
    /// handed to the file, when cutting the file back failed too: the records may be in the
    /// file whole, or come back whole after a power cut, and every reader then takes them as
    /// committed (spec §10.4). "Nothing changed" cannot be promised, and trying again blindly
    /// could make the change twice. The next operation reads the file again.
    func changeMayHaveLanded(_ error: Error) -> KeychainError {
        needsReopen = true
        let what = "what was written could not be cut back either, so the change may be in the keychain: check with 'latchkey find' before trying again"
        if let e = error as? KeychainError {
            return KeychainError(.io, "\(e.message); \(what)", underlying: e.underlying)
        }
        return KeychainError(.io, "could not write to the keychain \(path): \(ioHint(error)); \(what)", underlying: String(describing: error))
    }

    /// Records a durable commit's last sequence number in the device state (spec §9.3): best
    /// effort, after the data is durable, never failing the commit.
    /// `hasPasscode`: whether the keychain has a passcode after this commit (default: the
    /// header's keybag), which the state remembers (spec §9.2) so that a header replaced by
    /// one without a passcode is refused at the next open.
    func recordCommit(_ sequence: UInt64, hasPasscode: Bool? = nil) {
        highestSeen = max(highestSeen, sequence)
        // saveState reads the state under its lock and keeps the other fields (attempt counter).
        try? device.saveState(DeviceState(fileUUID: header.fileUUID, newestSequence: sequence),
                              passcodeSet: hasPasscode ?? header.keybag.hasPasscode)
    }

    /// Encrypts an item for a put record under a fresh item key. Every writer seals through
    /// here, so the size limit of spec §6.4 is checked before any byte is written.
    /// - Throws: errSecParam for an item over the limit; class-key errors.
    func seal(_ plaintext: ItemPlaintext, uuid: [UInt8], protection: ProtectionClass, flags: UInt8) throws -> ItemPutPayload {
        let key = try classKey(protection)
        do {
            return try ItemPutPayload.seal(plaintext, uuid: uuid, protectionClass: protection, flags: flags,
                                           keys: keys, classKey: key, fileUUID: header.fileUUID)
        } catch let e as FormatError {
            throw KeychainError.fromFormat("the item", e)
        }
    }
}
