import LatchkeyCrypto
import LatchkeyFormat

/// The index file beside the keychain (spec/FORMAT.md §17): loaded on open so that only the
/// records after its covered end are scanned, written by writers once that tail grows past
/// `indexTailLimit`, and dropped (the items rebuilt from the log) whenever any part of it
/// fails a check. It is a cache: nothing is lost without it.
extension KeychainStore {
    var indexPath: String { IndexBase.path(of: path) }

    /// The state to scan the log from: as of a valid index's covered end, or the start of
    /// the log when there is no valid index; and that covered end (0: none).
    func initialState(fd: Int32, header: FileHeader, headerSize: Int, keys: FileKeys) -> (LogState, UInt64) {
        // One that failed on this handle is not trusted again until a writer replaces it.
        if indexDamaged { return (LogState(header: header, headerSize: headerSize), 0) }
        switch IndexBase.load(
            indexPath: indexPath, fs: fs, logFD: fd, logHeader: header, logHeaderSize: headerSize, keys: keys)
        {
        case .success(let base):
            return (LogState(header: header, index: base), base.header.coveredEnd)
        case .failure:
            return (LogState(header: header, headerSize: headerSize), 0)
        }
    }

    /// Replaces the state with one scanned from the start of the log, after the index failed a
    /// check while in use (a damaged page, an entry that disagrees with another). The index
    /// file is removed where the keychain may be written, so that the next writer replaces it.
    @discardableResult
    func rebuildWithoutIndex() throws -> ScanEnd {
        if readOnlyReason == nil { try? fs.remove(indexPath) }
        indexDamaged = true
        var fresh = LogState(header: header, headerSize: headerSize)
        let found = try scanFresh(&fresh)
        log = fresh
        epoch += 1
        indexedEnd = 0
        return found
    }

    /// Runs `body`; when the index fails under it, rebuilds the state from the log and runs
    /// it again (on the state in memory, where it cannot fail that way).
    func withIndexFallback<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch is IndexBase.Unusable {
            try rebuildWithoutIndex()
            return try body()
        }
    }

    /// Brings every live item into memory (for enumerations).
    func materializeItems() throws {
        guard !log.items.isMaterialized else { return }
        try withIndexFallback { try log.items.materialize() }
    }

    /// Brings the whole index into memory once this handle's lookups have read enough of it
    /// (`IndexBase.worthMaterializing`): a process doing many finds then looks items up in
    /// memory, as it did before the index, and a single command never pays for it. Every
    /// page is authenticated as it is read; a failure leaves the index in use (the lookup
    /// that follows meets it and falls back).
    func promoteIndexIfWorthIt() {
        guard let base = log.items.base, base.worthMaterializing(minimum: indexPromotionPages) else { return }
        try? materializeItems()
    }

    /// After a write, under the write lock: writes a new index when the records after the
    /// newest valid one pass `indexTailLimit` bytes, or when the one in use failed. Best
    /// effort: a failure leaves the old index (or none), which readers check anyway.
    func maybeWriteIndex(holding lock: ExclusiveLock) {
        guard readOnlyReason == nil, !needsReopen else { return }
        let covered = max(indexedEnd, UInt64(headerSize))
        let limit = tailLimit
        guard indexDamaged || (log.end > covered && log.end - covered > limit) else { return }
        if !indexDamaged,
            case .success(let current) = IndexBase.load(
                indexPath: indexPath, fs: fs, logFD: fd, logHeader: header,
                logHeaderSize: headerSize, keys: keys),
            current.header.coveredEnd <= log.end, log.end - current.header.coveredEnd <= limit
        {
            // Another process wrote one recently enough.
            indexedEnd = current.header.coveredEnd
            return
        }
        do {
            try writeIndex(holding: lock)
        } catch is IndexBase.Unusable {
            if (try? rebuildWithoutIndex()) != nil { try? writeIndex(holding: lock) }
        } catch {}
    }

    /// The tail after which a writer writes a new index: `indexTailLimit`, or 1/64 of the
    /// index's size when that is more, so that rewriting the index costs at most 64 bytes
    /// written per byte appended to the log (a fixed limit would make a long run of writes
    /// quadratic: at 1,000,000 items every 256 KiB of appends would rewrite about 160 MB). An
    /// open then scans at most max(256 KiB, index size / 64) of the log: about 2.5 MB at
    /// 1,000,000 items (the attribute pages estimated at four hashes an item). `indexTailLimit`
    /// 0 writes after every write (tests).
    var tailLimit: UInt64 {
        guard indexTailLimit > 0 else { return 0 }
        let n = UInt64(log.items.count)
        let pages =
            1 + (n + UInt64(FormatConstants.indexItemsPerPage) - 1) / UInt64(FormatConstants.indexItemsPerPage)
            + (n + UInt64(FormatConstants.indexUniquesPerPage) - 1) / UInt64(FormatConstants.indexUniquesPerPage)
            + (4 * n + UInt64(FormatConstants.indexAttributesPerPage) - 1)
            / UInt64(FormatConstants.indexAttributesPerPage)
        return max(indexTailLimit, pages * UInt64(FormatConstants.indexPageSize) / 64)
    }

    /// Writes the index of the log as it is in memory (its committed end) to a temporary file
    /// (0600, never following a symlink), fsyncs it and renames it over the index path. Under
    /// the write lock, every record up to the end is one a writer committed,
    /// and the log is fsynced first so that the index never names a record a power cut could
    /// still take away. Cost: O(items) sequential I/O; memory: the changes since the old index.
    func writeIndex(holding lock: ExclusiveLock) throws {
        // Every rule the records after the old index left for later, and an exact item count.
        try log.items.checkAll()
        try fs.sync(fd)
        let logMAC = try fs.read(
            fd, offset: UInt64(headerSize - FormatConstants.headerMACSize), count: FormatConstants.headerMACSize)
        var tag = [UInt8](repeating: 0, count: FormatConstants.frameTagSize)
        if log.lastRecordOffset != 0 {
            tag = try fs.read(
                fd, offset: log.end - UInt64(FormatConstants.frameTagSize), count: FormatConstants.frameTagSize)
        }
        let records = log.lastSequence - header.baseSequence
        let attributes = try attributePagesPlan()
        let h = IndexHeader(
            fileUUID: header.fileUUID, logHeaderMAC: logMAC, coveredEnd: log.end, lastSequence: log.lastSequence,
            lastRecordOffset: log.lastRecordOffset, lastRecordTag: tag, itemCount: UInt64(log.items.count),
            recordCount: records, ancillaryCount: min(UInt64(log.skippedAncillary), records),
            generation: try Crypto.randomBytes(16), attributeCount: UInt64(attributes.count),
            unhashedCount: UInt64(attributes.unhashed.count))
        removeAbandonedIndexWrites(holding: lock)
        let temp = indexPath + "-" + hexString(try Crypto.randomBytes(4))
        let tfd = try fs.openNoFollow(temp, writable: true, create: true, mode: 0o600)
        do {
            var pages = IndexPageWriter(headerPage: h.encode(macKey: keys.indexFileMAC), macKey: keys.indexFileMAC)
            var written: UInt64 = 0
            func flush() throws {
                let batch = pages.takeSealed()
                try fs.write(tfd, offset: written, batch)
                written += UInt64(batch.count)
            }
            func flushIfLarge() throws { if pages.sealed.count >= 1 << 20 { try flush() } }
            func emit(_ id: ID16, _ s: ItemSlot) throws {
                pages.appendItem(
                    IndexItemEntry(
                        uuid: id.indexKey, recordOffset: s.offset, sequence: s.sequence,
                        recordSize: s.recordSize, classTag: s.classTag, uniqueKeyHash: s.uniqueHash.indexKey,
                        protectionClass: s.protection.rawValue, flags: s.flags))
                try flushIfLarge()
            }
            // Items in UUID order: the index's entries merged with the changes since (made in
            // order a range of UUIDs at a time, SortedInChunks).
            let items = log.items
            var changes = SortedInChunks<ID16>(
                produce: { body in items.forEachChange { id, _ in body(id) } },
                key: { $0.high }, less: { $0 < $1 })
            func emitChange(_ id: ID16) throws { if let s = items.change(id) ?? nil { try emit(id, s) } }
            try items.base?.forEachItem { id, slot in
                while let c = changes.peek(), c < id {
                    try emitChange(c)
                    _ = changes.next()
                }
                if let c = changes.peek(), c == id {
                    try emitChange(c)
                    _ = changes.next()
                } else {
                    try emit(id, slot)
                }
            }
            while let c = changes.next() { try emitChange(c) }
            let itemsWritten = UInt64(pages.count)
            // Unique-key hashes in hash order: the index's, less the items changed since,
            // merged with those of the changed items that are live.
            pages.begin(.uniqueKeys)
            func emitUnique(_ hash: ID16, _ id: ID16) throws {
                pages.appendUnique(hash: hash.indexKey, uuid: id.indexKey)
                try flushIfLarge()
            }
            var fresh = SortedInChunks<(ID16, ID16)>(
                produce: { body in items.forEachChange { id, slot in if let slot { body((slot.uniqueHash, id)) } } },
                key: { $0.0.high }, less: { $0.0 < $1.0 })
            try items.base?.forEachUnique { hash, id in
                guard !items.hasChanged(id) else { return }
                while let f = fresh.peek(), f.0 < hash {
                    try emitUnique(f.0, f.1)
                    _ = fresh.next()
                }
                try emitUnique(hash, id)
            }
            while let f = fresh.next() { try emitUnique(f.0, f.1) }
            let uniquesWritten = UInt64(pages.count)
            // Attribute entries in (hash, item) order: the index's, less the items changed
            // since, merged with those of the changed items that have a bound hash record.
            pages.begin(.attributes)
            func emitAttribute(_ e: (UInt64, ID16)) throws {
                pages.appendAttribute(hash: e.0, uuid: e.1.indexKey)
                try flushIfLarge()
            }
            var freshAttributes = log.attributes.sortedFreshEntries()
            try log.attributes.base?.forEachAttribute { hash, id in
                guard !log.attributes.hasChanged(id) else { return }
                while let e = freshAttributes.peek(), e < (hash, id) {
                    try emitAttribute(e)
                    _ = freshAttributes.next()
                }
                try emitAttribute((hash, id))
            }
            while let e = freshAttributes.next() { try emitAttribute(e) }
            let attributesWritten = pages.count
            pages.begin(.unhashed)
            for id in attributes.unhashed {
                pages.appendUnhashed(uuid: id.indexKey)
                try flushIfLarge()
            }
            pages.endTable()
            guard attributesWritten == attributes.count else {
                throw IndexBase.Unusable(reason: "its attribute table changed while the index was written")
            }
            guard itemsWritten == h.itemCount, uniquesWritten == h.itemCount else {
                throw IndexBase.Unusable(reason: "the index in use and the changes since disagree on the item count")
            }
            try flush()
            try fs.sync(tfd)
            fs.close(tfd)
        } catch {
            fs.close(tfd)
            try? fs.remove(temp)
            throw error
        }
        do {
            try fs.rename(temp, indexPath)
        } catch {
            try? fs.remove(temp)
            throw error
        }
        indexedEnd = log.end
        indexDamaged = false
    }

    /// What the attribute and unhashed pages of a new index hold (spec §17.2), counted before
    /// the header that names their sizes is sealed: how many entries the items with a bound
    /// hash record that changed since the index in use give (distinct (hash, item) pairs; the
    /// writer makes them in order with `AttributeHashTable.sortedFreshEntries`), how many of
    /// that index's entries are kept, and every unhashed live item (sorted).
    struct AttributePagesPlan {
        var fresh = 0
        var kept = 0
        var unhashed: [ID16] = []
        var count: Int { fresh + kept }
    }

    func attributePagesPlan() throws -> AttributePagesPlan {
        var plan = AttributePagesPlan()
        plan.fresh = log.attributes.sortedFreshEntries().count
        let changedUnhashed = log.attributes.unhashedChanges()
        if let base = log.attributes.base {
            try base.forEachAttribute { _, id in if !log.attributes.hasChanged(id) { plan.kept += 1 } }
            var kept: [ID16] = []
            try base.forEachUnhashed { id in if !log.attributes.hasChanged(id) { kept.append(id) } }
            plan.unhashed = (kept + changedUnhashed).sorted()
        } else {
            plan.unhashed = changedUnhashed
        }
        return plan
    }

    /// Removes the temporary files of index writes that died before their rename: under the
    /// write lock none is live (an index write holds it from its temporary file to the rename).
    func removeAbandonedIndexWrites(holding _: ExclusiveLock) {
        let directory = directoryOf(path)
        let prefix = lastPathComponent(indexPath) + "-"
        for name in fs.list(directory) where isTemporaryName(name, prefix: prefix) {
            try? fs.remove(indexPath.contains("/") ? directory + "/" + name : name)
        }
    }
}
