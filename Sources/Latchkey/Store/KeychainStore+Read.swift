import LatchkeyCrypto
import LatchkeyFormat

extension KeychainStore {
    // MARK: Items

    /// A snapshot of the live items (after `refresh`). Reads the whole index when one is in
    /// use; when that fails and the log cannot be read either (it is damaged), throws, and
    /// the next call opens the file again (`needsReopen`): never a shorter list.
    func slots() throws -> [(ID16, ItemSlot)] {
        mutex.lock(); defer { mutex.unlock() }
        do {
            try materializeItems()
        } catch {
            needsReopen = true
            throw error
        }
        return log.items.map { ($0.key, $0.value) }
    }

    /// Runs `body` holding the store's (recursive) lock, so that what it reads and decrypts is
    /// one consistent state. Locks taken inside `body` come after the store's: the attribute
    /// index takes its own there, as `update` and `delete` do (write → matches → index),
    /// so the two orders never meet.
    func withStoreLock<T>(_ body: () throws -> T) rethrows -> T {
        mutex.lock(); defer { mutex.unlock() }
        return try body()
    }

    /// Runs `body` on the current log state (live items and the journal of changes) and the
    /// reopen count, under the store's lock; no copy of the item table is made. The items are
    /// in memory (read from the index first when one is in use), so `body` may enumerate them.
    /// - Throws: errSecDecode / errSecIO when the index fails and the log cannot be read again.
    func withLogState<T>(_ body: (LogState, UInt64) throws -> T) throws -> T {
        mutex.lock(); defer { mutex.unlock() }
        try materializeItems()
        return try body(log, epoch)
    }

    func itemClass(of slot: ItemSlot) -> ItemClass? { itemClass(tag: slot.classTag) }

    func itemClass(tag: UInt32) -> ItemClass? { tagToClass[tag] }

    func classTag(_ c: ItemClass) -> UInt32 { keys.classTagWord(c) }

    /// The live item with this unique key. With an index in use this reads the O(log N) pages
    /// its search touches; when one fails, or the index and the records after it break a rule
    /// of the log together (ItemTable), the items are rebuilt from the log; when that fails too
    /// (the log is damaged) the error is thrown, and the next call opens the file again
    /// (`needsReopen`).
    func slot(uniqueKey: UniqueKey) throws -> (ID16, ItemSlot)? {
        mutex.lock(); defer { mutex.unlock() }
        let hash = keys.withUniqueKeyHash(uniqueKey) {
            ID16(
                high: UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                low: UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
        promoteIndexIfWorthIt()
        do {
            return try withIndexFallback { () throws -> (ID16, ItemSlot)? in
                try log.items.item(uniqueHash: hash)
            }
        } catch {
            needsReopen = true
            throw error
        }
    }

    /// The live item with this UUID (as `slot(uniqueKey:)`).
    func slot(id: ID16) throws -> ItemSlot? {
        mutex.lock(); defer { mutex.unlock() }
        promoteIndexIfWorthIt()
        do {
            return try withIndexFallback { try log.items.slot(id) }
        } catch {
            needsReopen = true
            throw error
        }
    }

    /// Decrypts one item.
    /// - Throws: errSecInteractionNotAllowed / errSecNotAvailable when its class is locked;
    ///   errSecDecode when it does not decrypt, or when its plaintext has a version this
    ///   Latchkey does not know (then the message says to upgrade, spec §12.5).
    /// `descriptor` is the file the slot was found in, when that is not the store's own
    /// (`verify` scans the file now at the path, which a compaction may have replaced).
    /// `id`, when the caller knows it, is the UUID the slot was found under: the record must
    /// carry it (`authenticatedPayload`).
    func read(_ slot: ItemSlot, id: ID16? = nil, from descriptor: Int32? = nil) throws -> ItemPlaintext {
        mutex.lock(); defer { mutex.unlock() }
        let record = try io(
            { try fs.read(descriptor ?? fd, offset: slot.offset, count: Int(slot.recordSize)) }, "read the keychain")
        return try open(authenticatedPayload(record[...], slot, id: id), slot)
    }

    /// Decrypts the payload of an item's put record (from `authenticatedPayload`).
    func open(_ payload: ArraySlice<UInt8>, _ slot: ItemSlot) throws -> ItemPlaintext {
        mutex.lock(); defer { mutex.unlock() }
        let key = try classKey(slot.protection)
        itemsDecrypted += 1
        // A buffer grown for a large item is not kept (it was zeroed when the item was decoded).
        defer { if plaintextScratch.count > 64 << 10 { plaintextScratch = [] } }
        let plaintext = try KeychainStore.open(
            payload, offset: slot.offset, classKey: key, fileUUID: header.fileUUID, path: path,
            context: gcm, scratch: &plaintextScratch)
        // The class the clear part files the item under must be the one it reports (spec §8.4).
        guard keys.classTagWord(plaintext.itemClass) == slot.classTag else {
            throw KeychainError(
                .decode,
                "the item at byte \(slot.offset) of \(path) is filed under another class than its contents say (written by a faulty writer, or by someone who held its class key); nothing was returned",
                remedy: .verifyAndRestore)
        }
        return plaintext
    }

    /// Decrypts an item's put payload with its class key; touches no state of a store, so
    /// `verify` runs it on a second thread.
    static func open(
        _ payload: ArraySlice<UInt8>, offset: UInt64, classKey key: SecretKey, fileUUID: [UInt8],
        path: String
    ) throws -> ItemPlaintext {
        var unused: [UInt8] = []
        return try open(
            payload, offset: offset, classKey: key, fileUUID: fileUUID, path: path, context: nil, scratch: &unused)
    }

    /// The same; with `context` (and its `scratch`, used by one thread at a time) the payload
    /// is opened in place (`ItemPutPayload.open(_:classKey:fileUUID:context:scratch:)`); when
    /// that fails, decoding and opening it again gives the error to report.
    static func open(
        _ payload: ArraySlice<UInt8>, offset: UInt64, classKey key: SecretKey, fileUUID: [UInt8],
        path: String, context: GCMContext?, scratch: inout [UInt8]
    ) throws -> ItemPlaintext {
        do {
            if let context,
                let p = try ItemPutPayload.open(
                    payload, classKey: key, fileUUID: fileUUID, context: context, scratch: &scratch)
            {
                return p
            }
            let put = try ItemPutPayload.decode(payload)
            return try put.open(classKey: key, fileUUID: fileUUID)
        } catch {
            // An unknown plaintext version needs a newer Latchkey; it is not damage (spec §1.4, §12.5).
            if let e = error as? FormatError, case .unsupportedVersion = e {
                throw KeychainError.fromFormat("an item at byte \(offset) of \(path)", e)
            }
            throw KeychainError(
                .decode, "an item at byte \(offset) of \(path) does not decrypt (damaged or tampered)",
                underlying: String(describing: error))
        }
    }

    /// The payload of an item's put record as read now, after checking that it is still the
    /// record the scan authenticated: its frame, its tag at the slot's offset and its sequence
    /// number. Bytes overwritten in place after the scan (an older record of the same item
    /// copied over the newer one, say) are refused, never served (spec §10.6).
    ///
    /// With `id` the record must also be the put of that item: a slot read from an index whose
    /// entries name other items' records (signed by someone with the device secret, spec
    /// §17.5) is never served as this item. The index is removed and the next call reads the
    /// keychain again from its log (`needsReopen`).
    func authenticatedPayload(_ record: ArraySlice<UInt8>, _ slot: ItemSlot, id: ID16? = nil) throws -> ArraySlice<
        UInt8
    > {
        guard record.count == Int(slot.recordSize) else {
            throw KeychainError(
                .decode,
                "the keychain \(path) ends inside an item record at byte \(slot.offset); it was truncated by something other than Latchkey",
                remedy: .verifyAndRestore)
        }
        guard let frame = try? FrameHeader.decode(record[...]), frame.type == RecordType.itemPut.rawValue,
            frame.sequence == slot.sequence, frame.recordSize == record.count,
            RecordFrame.verify(record: record[...], offset: slot.offset, macKey: keys.recordMAC),
            let clear = try? ItemPutPayload.decodeClear(
                record.dropFirst(FormatConstants.frameHeaderSize).dropLast(FormatConstants.frameTagSize)),
            clear.classTag == slot.classTag, clear.protectionClass == slot.protection,
            clear.flags == slot.flags, ID16(clear.uniqueKeyHash) == slot.uniqueHash
        else {
            // A slot from an index (spec §17) that does not match its record: the index goes.
            if !log.items.isMaterialized, readOnlyReason == nil { try? fs.remove(indexPath) }
            throw KeychainError(
                .decode,
                "the item record at byte \(slot.offset) of \(path) changed after the keychain was read (overwritten in place: damaged or tampered with); nothing was returned",
                remedy: .verifyAndRestore)
        }
        let payload = record.dropFirst(FormatConstants.frameHeaderSize).dropLast(FormatConstants.frameTagSize)
        if let id, !id.bytes.elementsEqual(payload.prefix(16)) {
            if readOnlyReason == nil { try? fs.remove(indexPath) }
            needsReopen = true
            throw KeychainError(
                .decode,
                "the index of \(path) named, for one item, the record of another item (at byte \(slot.offset)); nothing was returned, and the index will not be used again: run the command again (the keychain is then read from its log), then 'verify'",
                remedy: .verifyAndRestore)
        }
        return payload
    }
}
