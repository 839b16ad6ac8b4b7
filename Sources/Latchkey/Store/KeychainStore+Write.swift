import LatchkeyCrypto
import LatchkeyFormat

/// One change of a batched transaction (`WriteTransaction.commit`).
enum Mutation {
    case put(id: ID16, plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8)
    case delete(ID16)
}

extension KeychainStore {
    /// Runs `body` holding the keychain's write lock, with the only value that can change the
    /// keychain: the place for read-check-write sequences such as "fail if the unique key
    /// exists, else add".
    ///
    /// Before `body`: the exclusive `flock` is taken and the path checked to still name the
    /// open file (a compaction elsewhere renames a new one into place: then it is opened), the
    /// log caught up with what other processes appended (an interrupted write is cut off,
    /// spec/FORMAT.md §10.4), and the directory synced when the file is new at its name
    /// (§11.4). After it, a new index is written when one is due (§17.6). The transaction is
    /// closed when this returns: one kept past it traps rather than write without the lock.
    /// - Throws: errSecReadOnly for a keychain that may only be read; errSecIO; what `body`
    ///   throws.
    func write<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        mutex.lock(); defer { mutex.unlock() }
        if let readOnlyReason {
            throw KeychainError(.readOnly, "the keychain \(path) can be read but not changed: \(readOnlyReason)")
        }
        return try lockExclusively(followingThePath: true) { lock in
            let tx = WriteTransaction(store: self, lock: lock)
            defer { tx.close() }
            tx.removeLeftoversOnce()
            try cutTornTail(try scanMapped(), holding: lock)
            if directoryUnsynced {
                // Another process (or a failed directory fsync of ours) put this file at the path;
                // an append to it is durable only once that name is (spec §11.4).
                try io({ try fs.syncDirectory(directoryOf(path)) }, "sync the keychain's directory")
                directoryUnsynced = false
            }
            let result = try body(tx)
            maybeWriteIndex(holding: lock)
            return result
        }
    }

    /// The error for a transaction whose write or fsync failed after its closing record was
    /// handed to the file, when cutting the file back failed too: the records may be in the
    /// file whole, or come back whole after a power cut, and every reader then takes them as
    /// committed (spec §10.4). "Nothing changed" cannot be promised, and trying again blindly
    /// could make the change twice. The next operation reads the file again.
    func changeMayHaveLanded(_ error: Error) -> KeychainError {
        needsReopen = true
        let what =
            "what was written could not be cut back either, so the change may be in the keychain: check with 'latchkey find' before trying again"
        if let e = error as? KeychainError {
            return KeychainError(.io, "\(e.message); \(what)", underlying: e.underlying)
        }
        return KeychainError(
            .io, "could not write to the keychain \(path): \(ioHint(error)); \(what)",
            underlying: String(describing: error))
    }

    /// Records a durable commit's last sequence number in the device state (spec §9.3): best
    /// effort, after the data is durable, never failing the commit.
    /// `hasPasscode`: whether the keychain has a passcode after this commit (default: the
    /// header's keybag), which the state remembers (spec §9.2) so that a header replaced by
    /// one without a passcode is refused at the next open.
    func recordCommit(_ sequence: UInt64, hasPasscode: Bool? = nil) {
        highestSeen = max(highestSeen, sequence)
        // saveState reads the state under its lock and keeps the other fields (attempt counter).
        try? device.saveState(
            DeviceState(fileUUID: header.fileUUID, newestSequence: sequence),
            passcodeSet: hasPasscode ?? header.keybag.hasPasscode)
    }
}

/// The right to change the keychain, for the length of one `KeychainStore.write` call: made
/// only there, once the write lock is held and the log caught up, and closed when the call
/// returns. Every change to the file is a method of it, or takes it: a batched commit
/// (`commit`), a streaming transaction (`stream`), a rewrite (compaction and passcode change)
/// and the removal of what killed writers left. So none of them can run without the lock; a
/// transaction kept past its call traps when used.
///
/// Both kinds of commit check and place their records the same way (`check(put:…)`,
/// `CheckedPut.requireUnique`, `TransactionLayout`), make them with the same sealer
/// (`RecordSealer`), and leave the state in memory as a scan of their records would
/// (`ItemTable.put`/`delete`, `LogState.close`). They differ in where they look the live
/// items up while they run, and in when the records are written: a batched commit writes
/// nothing until every check has passed, then the whole transaction with one write and one
/// fsync; a streaming one writes as it goes and closes with one fsync.
final class WriteTransaction {
    let store: KeychainStore
    /// The keychain's exclusive lock, held for as long as the transaction is open.
    let lock: ExclusiveLock
    private var isOpen = true

    fileprivate init(store: KeychainStore, lock: ExclusiveLock) {
        self.store = store
        self.lock = lock
    }

    fileprivate func close() { isOpen = false }

    /// Traps when the transaction is used after the `write` call that made it returned.
    func requireOpen() {
        precondition(isOpen, "a WriteTransaction is used only inside the KeychainStore.write call that made it")
    }

    /// Checks a put as every writer does before placing it (`CheckedPut`): its class key, then
    /// its size; its unique-key hash and class tag come with it.
    /// - Throws: class-key errors (errSecInteractionNotAllowed, errSecNotAvailable);
    ///   errSecParam for an item over the size limit.
    func check(put id: ID16, uuid: [UInt8], plaintext: ItemPlaintext, protection: ProtectionClass, flags: UInt8) throws
        -> CheckedPut
    {
        let classKey = try store.classKey(protection)
        let size: Int
        do {
            size = try ItemPutPayload.checkSize(plaintext)
        } catch let e as FormatError {
            throw KeychainError.fromFormat("the item", e)
        }
        let uniqueKeyHash = store.keys.uniqueKeyHash(
            UniqueKey(itemClass: plaintext.itemClass, attributes: plaintext.attributes))
        return CheckedPut(
            id: id, uuid: uuid, plaintext: plaintext, protection: protection, flags: flags, classKey: classKey,
            plaintextSize: size, uniqueKeyHash: uniqueKeyHash, hash: ID16(uniqueKeyHash),
            classTag: store.classTags[plaintext.itemClass]!,
            classTagWord: store.keys.classTagWord(plaintext.itemClass))
    }

    /// Appends one transaction of `mutations`. Every check passes before any byte is written
    /// (on any failure nothing changes); then every record goes in one write, followed by one
    /// fsync. On a failed write or fsync the file is cut back to where the transaction began.
    /// - Throws: errSecDuplicateItem, errSecItemNotFound (delete of a missing item), class-key
    ///   errors, errSecParam (an item over the size limit), errSecIO.
    func commit(_ mutations: [Mutation]) throws {
        requireOpen()
        guard !mutations.isEmpty else { return }
        let store = self.store
        let (layout, jobs, changes) = try store.withIndexFallback { try place(mutations) }
        let sealer = RecordSealer(
            .batched(bytes: Int(layout.end - layout.start)), fs: store.fs, fd: store.fd, keys: store.keys,
            fileUUID: store.header.fileUUID, offset: layout.start, sequence: layout.startSequence)
        do {
            for job in jobs { try sealer.submit(job) }
            try sealer.finish()
        } catch {
            if sealer.hasWritten {
                // Leave the file as it was: cut back whatever part of the write landed.
                let cutBack = Result { () throws -> Void in
                    try store.fs.truncate(store.fd, to: layout.start)
                    try store.fs.sync(store.fd)
                }
                if case .failure = cutBack { throw store.changeMayHaveLanded(error) }
            }
            throw error
        }
        // Durable from here: the call succeeds whatever follows (spec §11.4). The records are
        // applied as a reader would apply them, from what was written rather than by reading
        // it back, so a failing read cannot turn a commit into a reported failure.
        do {
            for change in changes {
                if let slot = change.slot {
                    try store.log.items.put(change.id, slot, at: change.at, ownerChecked: true)
                } else {
                    try store.log.items.delete(change.id, at: change.at)
                }
            }
            if store.log.keepsAttributeHashes {
                for (id, hashes) in sealer.sealedHashes {
                    if let hashes {
                        store.log.attributes.setHashes(id, hashes)
                    } else {
                        store.log.attributes.remove(id)
                    }
                }
            }
            store.log.close(layout)
        } catch {
            store.needsReopen = true
        }
        store.recordCommit(layout.lastSequence)
    }

    /// Checks and places the records of a batched transaction against the live items (read,
    /// not changed), through small overlays: copying the item table would cost O(items) per
    /// commit. nil in an overlay means "removed by this transaction".
    private func place(_ mutations: [Mutation]) throws
        -> (TransactionLayout, [RecordSealer.Job], [(id: ID16, slot: ItemSlot?, at: UInt64)])
    {
        let store = self.store
        var holders: [ID16: ID16?] = [:]
        var slots: [ID16: ItemSlot?] = [:]
        func holder(_ hash: ID16) throws -> ID16? {
            if let o = holders[hash] { return o }; return try store.log.items.owner(hash)
        }
        func slot(_ id: ID16) throws -> ItemSlot? {
            if let s = slots[id] { return s }; return try store.log.items.slot(id)
        }
        var layout = TransactionLayout(start: store.log.end, sequence: store.log.lastSequence)
        var jobs: [RecordSealer.Job] = []
        var changes: [(id: ID16, slot: ItemSlot?, at: UInt64)] = []
        jobs.reserveCapacity(mutations.count)
        changes.reserveCapacity(mutations.count)
        for m in mutations {
            switch m {
            case .put(let id, let plaintext, let pc, let flags):
                let put = try check(put: id, uuid: id.bytes, plaintext: plaintext, protection: pc, flags: flags)
                try put.requireUnique(holder: holder(put.hash))
                if let old = try slot(id) {
                    holders[old.uniqueHash] = .some(nil)
                    if let h = try keepHistory(of: id, old, .replaced, layout) { jobs.append(layout.placeHistory(h)) }
                }
                let s = layout.slot(for: put)
                holders[put.hash] = id
                slots[id] = s
                changes.append((id, s, s.offset))
                jobs.append(layout.place(put, at: s))
            case .delete(let id):
                guard let old = try slot(id) else { throw CheckedPut.noSuchItem }
                if let h = try keepHistory(of: id, old, .deleted, layout) { jobs.append(layout.placeHistory(h)) }
                slots[id] = .some(nil)
                holders[old.uniqueHash] = .some(nil)
                changes.append((id, nil, layout.end))
                jobs.append(layout.placeDelete(id.bytes))
            }
        }
        return (layout, jobs, changes)
    }

    /// The history record to write before replacing or deleting the item `id`, whose newest put
    /// is `old` (spec §7.7): none when the put was written by this same transaction (no one
    /// could read that version), or when the store keeps no history.
    func keepHistory(of id: ID16, _ old: ItemSlot, _ kind: HistoryRecord.Kind, _ layout: TransactionLayout) throws
        -> [UInt8]?
    {
        guard old.offset < layout.start else { return nil }
        return try store.historyPayload(of: id, slot: old, kind: kind)
    }
}
