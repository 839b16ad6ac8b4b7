import LatchkeyCrypto
import LatchkeyFormat

extension KeychainStore {
    // MARK: Passcode change

    /// Changes, sets or removes the passcode (spec §11.6). Every class whose wrapping changes
    /// gets a new random class key (all but dk and dku, whose entries are kept byte for byte),
    /// each live item key of those classes is rewrapped under its class's new key, and the
    /// whole file is rewritten as compaction rewrites it: so no keybag of the old passcode
    /// survives in the keychain, and nothing added or changed afterwards can be read with the
    /// old passcode and an old copy of the file. Removing the passcode deletes the
    /// WhenPasscodeSetThisDeviceOnly (akpu) items, as iOS does. A kill at any moment leaves the
    /// old file with the old passcode or the new file with the new one.
    /// - Parameters:
    ///   - old: the current passcode; nil for a keychain without one.
    ///   - new: the new passcode; nil removes the passcode.
    /// - Returns: the number of akpu items deleted (only when the passcode is removed).
    /// - Throws: errSecAuthFailed for a wrong current passcode (throttled as an unlock);
    ///   errSecParam for an empty new passcode, for a current passcode given to a keychain
    ///   without one, or for removing a passcode that is not set; errSecIO.
    @discardableResult
    package func changePasscode(old: [UInt8]?, new: [UInt8]?, logN: UInt8 = KDFParameters.defaultLogN) throws -> Int {
        if let new, new.isEmpty {
            throw KeychainError(
                .param, "the new passcode is empty; choose a non-empty passcode, or remove the passcode instead")
        }
        return try write { tx in
            let bag = log.keybag
            var current: [ProtectionClass: SecretKey] = [:]
            if bag.hasPasscode {
                guard let old else {
                    throw KeychainError(.authFailed, "the current passcode of \(path) is needed to change it")
                }
                current = try throttledPasscodeAttempt { () throws -> [ProtectionClass: SecretKey] in
                    let oldKey = try keys.passcodeKey(passcode: old, kdf: bag.kdf)
                    var all: [ProtectionClass: SecretKey] = [:]
                    for e in bag.entries {
                        do {
                            all[e.protectionClass] = try Crypto.unwrap(
                                e.wrappedKey, with: e.wrap == .passcode ? oldKey : keys.deviceWrap)
                        } catch {
                            throw KeychainError(.authFailed, "wrong current passcode for the keychain \(path)")
                        }
                    }
                    return all
                }
            } else {
                if old != nil { throw KeychainError.passcodeForKeychainWithout(path) }
                guard new != nil else { throw KeychainError(.param, "the keychain \(path) has no passcode to remove") }
                for e in bag.entries {
                    current[e.protectionClass] = try Crypto.unwrap(e.wrappedKey, with: keys.deviceWrap)
                }
            }
            var fresh: [ProtectionClass: SecretKey] = [:]
            for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly || new != nil {
                fresh[pc] = pc.isAlwaysAvailable ? current[pc]! : try SecretKey.random()
            }
            let kdf: KDFParameters =
                new == nil ? .none : .scrypt(salt: try Crypto.randomBytes(FormatConstants.saltSize), logN: logN)
            let newKey = try new.map { try keys.passcodeKey(passcode: $0, kdf: kdf) }
            var newBag = try KeychainStore.wrapKeybag(fresh, kdf: kdf, keys: keys, passcodeKey: newKey)
            // dk and dku keep their keys and their entries, byte for byte.
            newBag.entries = newBag.entries.map { e in
                e.wrap == .device && e.protectionClass.isAlwaysAvailable ? (bag.entry(for: e.protectionClass) ?? e) : e
            }
            var dropped = 0
            try rewrite(tx, keybag: newBag, keys: fresh, operation: "change the passcode of") { payload, isHistory in
                let pc = ProtectionClass(rawValue: payload[20])!
                guard let newClassKey = fresh[pc] else {
                    if !isHistory { dropped += 1 }
                    return false
                }
                if pc.isAlwaysAvailable { return true }
                guard let oldClassKey = current[pc] else {
                    throw KeychainError(
                        .decode,
                        "the keychain \(path) holds a \(pc.code) item but its keybag has no \(pc.code) class key (damaged)"
                    )
                }
                let wrapped = Array(payload[40..<80])
                let itemKey: SecretKey
                do {
                    itemKey = try Crypto.unwrap(wrapped, with: oldClassKey)
                } catch {
                    throw KeychainError(
                        .decode,
                        "an item of the keychain \(path) does not unwrap with its class key (damaged or tampered); nothing was changed",
                        remedy: .verifyAndRestore)
                }
                payload.replaceSubrange(40..<80, with: try Crypto.wrap(itemKey, with: newClassKey))
                return true
            }
            return dropped
        }
    }

    // MARK: Compaction

    /// Rewrites the live records into a new file: temp file, fsync, rename, fsync directory
    /// (spec §11). Works while locked: item payloads are copied unchanged. The history records
    /// that are not expired are copied too (§7.7), unless `dropHistory`: then every earlier
    /// version leaves the keychain.
    /// - Returns: bytes before and after.
    @discardableResult
    package func compact(dropHistory: Bool = false) throws -> (before: UInt64, after: UInt64) {
        try write { tx in
            let before = log.end
            try rewrite(tx, keybag: log.keybag, keys: nil, operation: "compact", dropHistory: dropHistory) { _, _ in
                true
            }
            return (before, log.end)
        }
    }

    /// Writes the live items into a new file with the header's `keybag` and takes it in place
    /// of the keychain (spec §11.5): a temporary file in the same directory (0600), fsync,
    /// rename over the path, fsync of the directory, then the device state. Each live put
    /// record is read, authenticated again, and passed to `transform`, which may change its
    /// wrapped item key (bytes 40–79) and returns false to leave the item out; the frames and
    /// tags are recomputed. Before them go the history records that are not expired (spec
    /// §7.7), unless `dropHistory`: each read and authenticated again, its embedded put passed
    /// to `transform` (with `true`) the same way. `newKeys` are the class keys of `keybag` when it has other keys
    /// than the file's (a passcode change). It takes the write transaction it runs in: the lock
    /// is held from the temporary file to the rename. On any failure before
    /// the rename the keychain is untouched and the temporary file removed; once the new file
    /// is renamed into place it is the keychain, and the call succeeds only when the directory
    /// fsync that makes the rename durable returns.
    private func rewrite(
        _ tx: WriteTransaction, keybag: Keybag, keys newKeys: [ProtectionClass: SecretKey]?, operation: String,
        dropHistory: Bool = false, _ transform: (inout [UInt8], _ isHistory: Bool) throws -> Bool
    ) throws {
        tx.requireOpen()
        // Found before the new file is made: a history record that is not well-formed stops the
        // rewrite with nothing changed (§7.7).
        let history = dropHistory ? [] : try liveHistoryRefs()
        // The new file takes a sequence number of its own: it is newer than every copy of the
        // old one even with no live item, so putting an old copy back is a rollback (§11.5).
        var newHeader = header
        newHeader.baseSequence = log.lastSequence + 1
        newHeader.keybag = keybag
        newHeader.minor = FormatConstants.fileMinor
        newHeader.extensionBytes = []
        let headerBytes = newHeader.encode(macKey: keys.headerMAC)
        tx.removeAbandonedCompactions()
        let temp = path + ".compact-" + hexString(try Crypto.randomBytes(4))
        var offset = UInt64(headerBytes.count)
        var sequence = newHeader.baseSequence
        let tfd = try io(
            { try fs.open(temp, create: true, exclusive: true, mode: 0o600) },
            "create the new file to \(operation) the keychain")
        do {
            try io({ try fs.write(tfd, offset: 0, headerBytes) }, "write the new file to \(operation) the keychain")
            var batch: [UInt8] = []
            batch.reserveCapacity(1 << 20)
            func flush() throws {
                try io(
                    { try fs.write(tfd, offset: offset - UInt64(batch.count), batch) },
                    "write the new file to \(operation) the keychain")
                batch.removeAll(keepingCapacity: true)
            }
            for ref in history {
                var payload = try readHistoryPayload(ref)
                var put = Array(payload[HistoryRecord.fixedSize...])
                guard try transform(&put, true) else { continue }
                payload.replaceSubrange(HistoryRecord.fixedSize..., with: put)
                sequence += 1
                let reframed = RecordFrame.encode(
                    type: RecordType.history.rawValue, flags: 0, sequence: sequence, payload: payload, offset: offset,
                    macKey: keys.recordMAC)
                offset += UInt64(reframed.count)
                batch.append(contentsOf: reframed)
                if batch.count >= 1 << 20 { try flush() }
            }
            for (id, slot) in try liveSlotsInFileOrder() {
                let record = try io(
                    { try fs.read(fd, offset: slot.offset, count: Int(slot.recordSize)) }, "read the keychain")
                var payload = Array(try authenticatedPayload(record[...], slot, id: id))
                // A put without one (an older writer's) gets its hash record here when its class
                // key is available (spec §11.5), so compacting makes such items hashed.
                let hashes = try boundHashRecord(after: slot, put: record) ?? hashRecordByDecrypting(payload)
                guard try transform(&payload, false) else { continue }
                sequence += 1
                let reframed = RecordFrame.encode(
                    type: RecordType.itemPut.rawValue, flags: hashes == nil ? 0 : FrameHeader.continuesFlag,
                    sequence: sequence, payload: payload, offset: offset, macKey: keys.recordMAC)
                offset += UInt64(reframed.count)
                batch.append(contentsOf: reframed)
                if var h = hashes {
                    // The put's hash record goes with it, hashes unchanged; a passcode change
                    // rewraps the item key, so the binding is taken from the new payload (§11.6).
                    h.binding = Array(payload[AttributeHashRecord.bindingRange])
                    sequence += 1
                    let hashRecord = RecordFrame.encode(
                        type: RecordType.attributeHashes.rawValue, flags: 0, sequence: sequence,
                        payload: h.encode(), offset: offset, macKey: keys.recordMAC)
                    offset += UInt64(hashRecord.count)
                    batch.append(contentsOf: hashRecord)
                }
                if batch.count >= 1 << 20 { try flush() }
            }
            if !batch.isEmpty { try flush() }
            try io({ try fs.sync(tfd) }, "write the new file to \(operation) the keychain")
            if !keybag.hasPasscode, header.keybag.hasPasscode {
                // The passcode goes: the device state forgets it first, so that a process killed
                // between the rename and `recordCommit` leaves no state that refuses the new
                // file (spec §9.2, §10.5). Killed before the rename, the old file keeps its
                // passcode and the flag is set again at its next commit.
                try? device.saveState(DeviceState(fileUUID: header.fileUUID, newestSequence: 0), passcodeSet: false)
            }
            try io({ try fs.rename(temp, path) }, "replace the keychain with the new file")
        } catch {
            fs.close(tfd)
            try? fs.remove(temp)
            throw error
        }
        fs.close(tfd)
        // From here on the new file is the keychain, for every process. The old file's index
        // no longer matches its header (§17.5); the next index is written for the new one.
        try? fs.remove(indexPath)
        let synced = Result { try fs.syncDirectory(directoryOf(path)) }
        if let newKeys {
            classKeys = newKeys
            keybagOfKeys = keybag
            unlockedOnce = true
        }
        do {
            try reopen()
        } catch {
            needsReopen = true
        }
        if case .failure(let error) = synced {
            directoryUnsynced = true
            throw KeychainError(
                .io,
                "the keychain \(path) was replaced by its new file, which is in force now, but the directory could not be synced, so after a power cut the old file may come back",
                underlying: String(describing: error), remedy: .compactAgain)
        }
        recordCommit(sequence, hasPasscode: keybag.hasPasscode)
    }

    /// The hash record bound to the put record at `slot` (spec §7.6), read again from the file
    /// and authenticated at its offset: the record right after the put, in its transaction,
    /// with the put's UUID and binding. Nil when there is none (the item is unhashed).
    private func boundHashRecord(after slot: ItemSlot, put record: [UInt8]) throws -> AttributeHashRecord? {
        let at = slot.offset + UInt64(slot.recordSize)
        let headerSize = FormatConstants.frameHeaderSize
        let largest =
            headerSize + FormatConstants.frameTagSize + AttributeHashRecord.fixedSize
            + AttributeHashRecord.maxHashes * AttributeHashRecord.hashSize
        guard let put = try? FrameHeader.decode(record[...]), put.continues, at + UInt64(headerSize) <= log.end else {
            return nil
        }
        let head = try io({ try fs.read(fd, offset: at, count: headerSize) }, "read the keychain")
        guard let frame = try? FrameHeader.decode(head[...]), frame.type == RecordType.attributeHashes.rawValue,
            frame.sequence == slot.sequence + 1, frame.recordSize <= largest, at + UInt64(frame.recordSize) <= log.end
        else { return nil }
        let bytes = try io({ try fs.read(fd, offset: at, count: frame.recordSize) }, "read the keychain")
        guard bytes.count == frame.recordSize,
            RecordFrame.verify(record: bytes[...], offset: at, macKey: keys.recordMAC),
            let h = AttributeHashRecord.decode(bytes.dropFirst(headerSize).dropLast(FormatConstants.frameTagSize)),
            let binding = AttributeHashRecord.binding(
                ofPut: record.dropFirst(headerSize).dropLast(FormatConstants.frameTagSize)),
            h.uuid.elementsEqual(record[headerSize..<headerSize + 16]), h.binding.elementsEqual(binding)
        else { return nil }
        return h
    }

    /// The hash record of a put payload computed from its plaintext (spec §7.6), or nil when
    /// its class key is not available or it does not decrypt (it is then copied unhashed, as it
    /// was).
    private func hashRecordByDecrypting(_ payload: [UInt8]) -> AttributeHashRecord? {
        guard let put = try? ItemPutPayload.decode(payload[...]), let key = try? classKey(put.protectionClass),
            let plaintext = try? put.open(classKey: key, fileUUID: header.fileUUID)
        else { return nil }
        return keys.attributeHashRecord(for: plaintext, putPayload: payload)
    }

    private func liveSlotsInFileOrder() throws -> [(ID16, ItemSlot)] {
        try materializeItems()
        return log.items.map { ($0.key, $0.value) }.sorted { $0.1.offset < $1.1.offset }
    }
}

extension WriteTransaction {
    /// Removes the temporary files of compactions that died before their rename (a killed
    /// process, a power cut). A method of the write transaction: a live compaction holds the
    /// lock from creating its temporary file until the rename, so none of them can be live now
    /// (spec §11.5). Best effort: a file that cannot be removed stays.
    func removeAbandonedCompactions() {
        requireOpen()
        let (path, fs) = (store.path, store.fs)
        let directory = directoryOf(path)
        let prefix = lastPathComponent(path) + ".compact-"
        for name in fs.list(directory) where isTemporaryName(name, prefix: prefix) {
            try? fs.remove(path.contains("/") ? directory + "/" + name : name)
        }
    }
}
