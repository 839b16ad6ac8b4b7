import LatchkeyCrypto
import LatchkeyFormat

/// An index file (spec/FORMAT.md §17) that passed the binding check of §17.5 against the open
/// keychain file, read page by page: a lookup reads and authenticates the O(log N) pages its
/// binary search touches, never the whole file.
///
/// Holds its own descriptor, so a newer index renamed over the path by another process does
/// not change what this one reads. Verified pages are cached (bounded, in a table indexed by
/// page number: a touch of a cached page costs no hashing and no MAC). Used only under the
/// store's lock (the cache is not synchronised otherwise).
final class IndexBase: @unchecked Sendable {
    /// Why an index cannot be used: the caller drops it and rebuilds from the log.
    struct Unusable: Error, CustomStringConvertible {
        var reason: String
        /// The index's entries and the records after it break a rule of §10.3 together
        /// (ItemTable's later checks): the index was written wrongly or the log is damaged; a
        /// scan from the log's start tells which.
        var contradictsLog = false
        var description: String { "the index cannot be used: \(reason)" }
    }

    let header: IndexHeader
    private let fs: FileSystem
    private let fd: Int32
    private let headerMAC: [UInt8]
    private let macKey: SecretKey
    /// The keychain file the index was checked against (§17.5): each item entry is checked
    /// against the record it names when it is looked up (`slot(_:)`).
    private let logFD: Int32
    private let logHeaderSize: Int
    /// Verified pages by page number (nil: not cached), and the numbers of those cached.
    private var cache: [IndexEntryPage?]
    private var cached: [UInt32] = []
    /// Verified attribute and unhashed pages (IndexBase+Attributes.swift), at most `cacheLimit`.
    var attributeCache: [UInt32: IndexEntryPage] = [:]
    static let cacheLimit = 4096
    /// Pages read from the file and authenticated for lookups so far.
    private(set) var pagesRead = 0

    private init(
        fs: FileSystem, fd: Int32, header: IndexHeader, headerMAC: [UInt8], macKey: SecretKey, logFD: Int32,
        logHeaderSize: Int
    ) {
        self.fs = fs
        self.fd = fd
        self.logFD = logFD
        self.logHeaderSize = logHeaderSize
        self.header = header
        self.headerMAC = headerMAC
        self.macKey = macKey
        cache = Array(repeating: nil, count: Int(header.fileSize / UInt64(FormatConstants.indexPageSize)))
    }

    /// Whether the lookups of this handle have read so much of the index that holding all
    /// of it in memory is cheaper (`ItemTable.materialize`): a long-lived process doing many
    /// finds (the library's hot path, the agent). An eighth of the pages, and at least
    /// `minimum` (64 by default): a single command's lookup touches a few dozen pages, so it
    /// never reads the whole index; a process that goes on pays for the whole at most about
    /// 8 times what it read lazily.
    func worthMaterializing(minimum: Int) -> Bool { pagesRead >= max(minimum, cache.count / 8) }

    deinit { fs.close(fd) }

    /// The index file of a keychain: the keychain's path with `.index` appended.
    static func path(of keychain: String) -> String { keychain + ".index" }

    /// Opens the index at `indexPath` and checks that it describes a prefix of the log open at
    /// `logFD` (§17.5): its header authenticates, names this file UUID and this keychain header,
    /// and the record it says ends the covered part is there, authenticates at its offset, closes
    /// a transaction, and has the sequence number and tag the index names. O(1): one page of
    /// the index, 32 bytes of the keychain header and one record.
    /// - Returns: the index, or why it was ignored (missing, damaged, stale, foreign, …).
    static func load(
        indexPath: String, fs: FileSystem, logFD: Int32, logHeader: FileHeader, logHeaderSize: Int,
        keys: FileKeys
    ) -> Result<IndexBase, Unusable> {
        let fd: Int32
        do {
            fd = try fs.openNoFollow(indexPath, writable: false, create: false, mode: 0)
        } catch {
            return .failure(Unusable(reason: "no index file (\(error))"))
        }
        do {
            // A FIFO, socket or device planted at the index path is a bad index like any other
            // (§17.1): the open did not block (O_NONBLOCK), and nothing is read from it.
            guard try fs.ownership(fd).kind == .regular else { throw Unusable(reason: "it is not a regular file") }
            let page = try fs.read(fd, offset: 0, count: FormatConstants.indexPageSize)
            let h: IndexHeader
            do {
                h = try IndexHeader.decode(page, macKey: keys.indexFileMAC)
            } catch {
                throw Unusable(reason: "its header: \(error)")
            }
            try check(h, fs: fs, logFD: logFD, logHeader: logHeader, logHeaderSize: logHeaderSize, keys: keys)
            guard try fs.size(fd) == h.fileSize else { throw Unusable(reason: "its size does not match its header") }
            return .success(
                IndexBase(
                    fs: fs, fd: fd, header: h, headerMAC: IndexHeader.mac(of: page), macKey: keys.indexFileMAC,
                    logFD: logFD, logHeaderSize: logHeaderSize))
        } catch {
            fs.close(fd)
            return .failure(error as? Unusable ?? Unusable(reason: "reading it failed (\(error))"))
        }
    }

    /// The binding check (§17.5).
    static func check(
        _ h: IndexHeader, fs: FileSystem, logFD: Int32, logHeader: FileHeader, logHeaderSize: Int,
        keys: FileKeys
    ) throws {
        guard h.fileUUID == logHeader.fileUUID else { throw Unusable(reason: "it belongs to another keychain") }
        let logMAC = try fs.read(
            logFD, offset: UInt64(logHeaderSize - FormatConstants.headerMACSize), count: FormatConstants.headerMACSize)
        guard Crypto.constantTimeEqual(logMAC, h.logHeaderMAC) else {
            throw Unusable(
                reason: "it describes another generation of the keychain (compacted or passcode changed since)")
        }
        let logSize = try fs.size(logFD)
        guard h.coveredEnd >= UInt64(logHeaderSize), h.coveredEnd <= logSize else {
            throw Unusable(
                reason:
                    "it covers \(h.coveredEnd) bytes and the keychain has \(logSize) (stale, or the keychain was cut back or rolled back)"
            )
        }
        guard h.lastSequence >= logHeader.baseSequence, h.lastSequence - logHeader.baseSequence == h.recordCount,
            h.ancillaryCount <= h.recordCount, h.itemCount <= h.recordCount
        else {
            throw Unusable(reason: "its counts do not fit its sequence numbers")
        }
        if h.lastRecordOffset == 0 {
            guard h.coveredEnd == UInt64(logHeaderSize), h.recordCount == 0, h.lastRecordTag.allSatisfy({ $0 == 0 })
            else {
                throw Unusable(reason: "it names no last record but covers records")
            }
            return
        }
        let size = h.coveredEnd - h.lastRecordOffset
        guard h.lastRecordOffset >= UInt64(logHeaderSize), h.lastRecordOffset < h.coveredEnd,
            size <= UInt64(FormatConstants.frameHeaderSize + FormatConstants.frameTagSize)
                + UInt64(FormatConstants.maxPayloadSize)
        else {
            throw Unusable(reason: "its last record is out of range")
        }
        let record = try fs.read(logFD, offset: h.lastRecordOffset, count: Int(size))
        guard record.count == Int(size), let frame = try? FrameHeader.decode(record[...]),
            frame.recordSize == record.count,
            !frame.continues, frame.sequence == h.lastSequence,
            RecordFrame.verify(record: record[...], offset: h.lastRecordOffset, macKey: keys.recordMAC),
            Crypto.constantTimeEqual(Array(record.suffix(FormatConstants.frameTagSize)), h.lastRecordTag)
        else {
            throw Unusable(
                reason:
                    "the record that ends its covered part is not the one it names (another history of the keychain)")
        }
    }

    // MARK: Pages

    private var itemPages: UInt32 { header.itemPages }

    /// The table page `n` belongs to, and how many entries it holds (the header's counts,
    /// checked against its page counts when it was decoded).
    private func layout(ofPage n: UInt32) -> (table: IndexTable, count: Int) {
        var first: UInt32 = 1
        for (table, pages, total) in [
            (IndexTable.items, header.itemPages, header.itemCount),
            (.uniqueKeys, header.uniquePages, header.itemCount),
            (.attributes, header.attributePages, header.attributeCount),
            (.unhashed, header.unhashedPages, header.unhashedCount)
        ] {
            if n < first + pages {
                let before = Int(n - first) * table.entriesPerPage
                return (table, min(table.entriesPerPage, Int(total) - before))
            }
            first += pages
        }
        return (.items, 0)
    }

    /// Page `n` of the file (0 is the header), authenticated and checked to be sorted.
    private func page(_ n: UInt32) throws -> IndexEntryPage {
        guard Int(n) < cache.count else { throw Unusable(reason: "page \(n) is beyond its end") }
        if let p = cache[Int(n)] { return p }
        let p = try readVerified(n)
        try checkOrder(p, page: n)
        pagesRead += 1
        if cached.count >= IndexBase.cacheLimit {
            // Evict one page at random: the pages near the root of the binary searches, touched
            // by every lookup, stay cached with high probability.
            let victim = Int.random(in: 0..<cached.count)
            cache[Int(cached[victim])] = nil
            cached.swapAt(victim, cached.count - 1)
            cached.removeLast()
        }
        cache[Int(n)] = p
        cached.append(n)
        return p
    }

    /// Keys strictly increase within a page (a writer's mistake is refused like damage).
    private func checkOrder(_ p: IndexEntryPage, page n: UInt32) throws {
        var previous: ID16?
        for i in 0..<p.count {
            let k = ID16(p.key(i))
            if let q = previous, !(q < k) { throw Unusable(reason: "page \(n) is not sorted") }
            previous = k
        }
    }

    private func slot(in p: IndexEntryPage, at i: Int) throws -> ItemSlot {
        let e = p.item(i)
        guard let pc = ProtectionClass(rawValue: e.protectionClass) else {
            throw Unusable(reason: "an entry names protection class \(e.protectionClass)")
        }
        return ItemSlot(
            offset: e.recordOffset, recordSize: e.recordSize, classTag: e.classTag, protection: pc, flags: e.flags,
            uniqueHash: ID16(e.uniqueKeyHash), sequence: e.sequence)
    }

    /// Binary search over pages, then inside the page: the page and entry holding `key`.
    private func find(_ key: ID16, pages: Int, firstPage: UInt32) throws -> (page: IndexEntryPage, entry: Int)? {
        var lo = 0, hi = pages - 1
        while lo <= hi {
            let mid = (lo + hi) / 2
            let p = try page(firstPage + UInt32(mid))
            guard p.count > 0 else { return nil }
            if key < ID16(p.key(0)) {
                hi = mid - 1
            } else if ID16(p.key(p.count - 1)) < key {
                lo = mid + 1
            } else {
                var l = 0, h = p.count - 1
                while l <= h {
                    let m = (l + h) / 2
                    let k = ID16(p.key(m))
                    if k == key { return (p, m) }
                    if k < key { l = m + 1 } else { h = m - 1 }
                }
                return nil
            }
        }
        return nil
    }

    /// The item's slot as of the covered end, or nil when it was not live then. The record the
    /// entry names is checked first (`checkRecord`): an entry that names another item's record
    /// makes the index unusable, never an answer about the wrong item.
    func slot(_ id: ID16) throws -> ItemSlot? {
        guard let (p, i) = try find(id, pages: Int(itemPages), firstPage: 1) else { return nil }
        let s = try slot(in: p, at: i)
        try checkRecord(of: id, s)
        return s
    }

    /// Checks that the record an item entry names is that item's put (§17.5, rule 11): inside
    /// the covered part, a frame whose CRC matches, of type put, with the entry's size and sequence
    /// number, whose clear part carries the entry's UUID, class tag, protection class, flags
    /// and unique-key hash. The index's pages authenticate only that the device wrote them, and
    /// whoever holds the device secret can sign an index whose entries swap two items' records;
    /// without this check a lookup of one item would return, or delete, the other. The record's
    /// tag is verified when its payload is read (`KeychainStore.authenticatedPayload`).
    func checkRecord(of id: ID16, _ s: ItemSlot) throws {
        let want = FormatConstants.frameHeaderSize + 40
        let minimum =
            FormatConstants.frameHeaderSize + FormatConstants.itemPutFixedSize + FormatConstants.gcmTagSize
            + FormatConstants.frameTagSize
        guard Int(s.recordSize) >= minimum, s.offset >= UInt64(logHeaderSize), s.offset <= header.coveredEnd,
            UInt64(s.recordSize) <= header.coveredEnd - s.offset
        else {
            throw Unusable(reason: "an entry names a record outside its covered part, or too short to be a put")
        }
        let bytes: [UInt8]
        do {
            bytes = try fs.read(logFD, offset: s.offset, count: want)
        } catch {
            throw Unusable(reason: "the record an entry names could not be read (\(error))")
        }
        guard bytes.count == want, let frame = try? FrameHeader.decode(bytes[...]),
            frame.type == RecordType.itemPut.rawValue, frame.sequence == s.sequence,
            frame.recordSize == Int(s.recordSize),
            let clear = try? ItemPutPayload.decodeClear(
                bytes.dropFirst(FormatConstants.frameHeaderSize) + [UInt8](repeating: 0, count: 56)),
            ID16(clear.uuid) == id, clear.classTag == s.classTag,
            clear.protectionClass == s.protection, clear.flags == s.flags, ID16(clear.uniqueKeyHash) == s.uniqueHash
        else {
            throw Unusable(
                reason: "its entry for an item names a record that is not that item's put (at byte \(s.offset))")
        }
    }

    /// The live item that had unique-key hash `hash` at the covered end.
    func owner(_ hash: ID16) throws -> ID16? {
        guard let (p, i) = try find(hash, pages: Int(header.uniquePages), firstPage: 1 + itemPages) else { return nil }
        let id = ID16(p.uniqueOwner(i))
        guard let s = try slot(id), s.uniqueHash == hash else {
            throw Unusable(reason: "its unique-key table names an item its item table does not hold with that key")
        }
        return id
    }

    /// Every entry of the item table, in UUID order, each page authenticated as it is read.
    func forEachItem(_ body: (ID16, ItemSlot) throws -> Void) throws {
        var previous: ID16?
        for p in 0..<Int(itemPages) {
            let page = try readThrough(1 + UInt32(p))
            for i in 0..<page.count {
                let id = ID16(page.key(i))
                if let q = previous, !(q < id) { throw Unusable(reason: "its item table is not sorted") }
                previous = id
                try body(id, try slot(in: page, at: i))
            }
        }
    }

    /// Every entry of the unique-key table (hash, item), in hash order.
    func forEachUnique(_ body: (ID16, ID16) throws -> Void) throws {
        var previous: ID16?
        for p in 0..<Int(header.uniquePages) {
            let page = try readThrough(1 + itemPages + UInt32(p))
            for i in 0..<page.count {
                let hash = ID16(page.key(i))
                if let q = previous, !(q < hash) { throw Unusable(reason: "its unique-key table is not sorted") }
                previous = hash
                try body(hash, ID16(page.uniqueOwner(i)))
            }
        }
    }

    /// A page for a sequential pass: authenticated, not cached.
    private func readThrough(_ n: UInt32) throws -> IndexEntryPage {
        if Int(n) < cache.count, let p = cache[Int(n)] { return p }
        return try readVerified(n)
    }

    /// Page `n` read from the file and checked against its MAC (bound to this index's header),
    /// with the entry count its header gives it.
    func readVerified(_ n: UInt32) throws -> IndexEntryPage {
        let bytes: [UInt8]
        do {
            bytes = try fs.read(
                fd, offset: UInt64(n) * UInt64(FormatConstants.indexPageSize), count: FormatConstants.indexPageSize)
        } catch {
            throw Unusable(reason: "page \(n) could not be read (\(error))")
        }
        guard IndexPage.verify(bytes, page: n, headerMAC: headerMAC, macKey: macKey) else {
            throw Unusable(reason: "page \(n) failed its integrity check")
        }
        let (table, count) = layout(ofPage: n)
        do {
            return try IndexEntryPage(bytes, table: table, count: count)
        } catch {
            throw Unusable(reason: "page \(n): \(error)")
        }
    }
}

extension ID16: Comparable {
    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    init(_ key: IndexKey) { self.init(high: key.high, low: key.low) }

    /// The same 16 bytes as the index tables hold them.
    var indexKey: IndexKey { (high, low) }

    /// Byte order (big-endian, unsigned): the order of the index tables.
    static func < (a: ID16, b: ID16) -> Bool { a.high != b.high ? a.high < b.high : a.low < b.low }
}
