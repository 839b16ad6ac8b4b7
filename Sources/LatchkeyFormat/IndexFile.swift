import LatchkeyCrypto

/// The first page of an index file (spec/FORMAT.md §17.2): which log the index describes and
/// how many pages follow. The index is a cache of what a scan of the log computes; the header
/// binds it to one exact prefix of one keychain file, and every page is MACed under a key
/// only the device can derive, bound to this header.
public struct IndexHeader: Equatable, Sendable {
    public var fileUUID: [UInt8]
    /// The last 32 bytes of the keychain file's header (its header MAC, §3.3).
    public var logHeaderMAC: [UInt8]
    /// The log offset the index describes the keychain at: the end of a closed transaction.
    public var coveredEnd: UInt64
    /// The sequence number of the record that ends at `coveredEnd` (the header's base
    /// sequence when no record does).
    public var lastSequence: UInt64
    /// Where that record starts; 0 when `coveredEnd` is the end of the keychain header.
    public var lastRecordOffset: UInt64
    /// That record's 16-byte tag (§6.2); zeros when there is no record.
    public var lastRecordTag: [UInt8]
    public var itemCount: UInt64
    /// Records (of every type) in the covered part of the log.
    public var recordCount: UInt64
    /// Ancillary records (§6.3) in the covered part.
    public var ancillaryCount: UInt64
    /// Random bytes drawn for every index written: no two indexes share page MACs.
    public var generation: [UInt8]
    /// Attribute entries (hash, item) in the attribute pages (§17.2, version 1.1).
    public var attributeCount: UInt64
    /// Live items whose newest put has no valid hash record bound to it (§7.6).
    public var unhashedCount: UInt64

    public init(
        fileUUID: [UInt8], logHeaderMAC: [UInt8], coveredEnd: UInt64, lastSequence: UInt64,
        lastRecordOffset: UInt64, lastRecordTag: [UInt8], itemCount: UInt64, recordCount: UInt64,
        ancillaryCount: UInt64, generation: [UInt8], attributeCount: UInt64 = 0, unhashedCount: UInt64 = 0
    ) {
        self.fileUUID = fileUUID
        self.logHeaderMAC = logHeaderMAC
        self.coveredEnd = coveredEnd
        self.lastSequence = lastSequence
        self.lastRecordOffset = lastRecordOffset
        self.lastRecordTag = lastRecordTag
        self.itemCount = itemCount
        self.recordCount = recordCount
        self.ancillaryCount = ancillaryCount
        self.generation = generation
        self.attributeCount = attributeCount
        self.unhashedCount = unhashedCount
    }

    public var itemPages: UInt32 { IndexHeader.pages(itemCount, FormatConstants.indexItemsPerPage) }
    public var uniquePages: UInt32 { IndexHeader.pages(itemCount, FormatConstants.indexUniquesPerPage) }
    public var attributePages: UInt32 { IndexHeader.pages(attributeCount, FormatConstants.indexAttributesPerPage) }
    public var unhashedPages: UInt32 { IndexHeader.pages(unhashedCount, FormatConstants.indexUnhashedPerPage) }
    /// The size the file must have: the header page and every entry page.
    public var fileSize: UInt64 {
        (1 + UInt64(itemPages) + UInt64(uniquePages) + UInt64(attributePages) + UInt64(unhashedPages))
            * UInt64(FormatConstants.indexPageSize)
    }

    static func pages(_ count: UInt64, _ perPage: Int) -> UInt32 {
        UInt32(clamping: (count + UInt64(perPage) - 1) / UInt64(perPage))
    }

    /// The 4096-byte header page, MAC included.
    public func encode(macKey: SecretKey) -> [UInt8] {
        var w = ByteWriter(capacity: FormatConstants.indexPageSize)
        w.writeBytes(FormatConstants.indexMagic)
        w.writeInteger(FormatConstants.indexMajor, as: UInt16.self)
        w.writeInteger(FormatConstants.indexMinor, as: UInt16.self)
        w.writeInteger(UInt32(FormatConstants.indexPageSize), as: UInt32.self)
        w.writeBytes(fileUUID)
        w.writeBytes(logHeaderMAC)
        w.writeInteger(coveredEnd, as: UInt64.self)
        w.writeInteger(lastSequence, as: UInt64.self)
        w.writeInteger(lastRecordOffset, as: UInt64.self)
        w.writeBytes(lastRecordTag)
        w.writeInteger(itemCount, as: UInt64.self)
        w.writeInteger(recordCount, as: UInt64.self)
        w.writeInteger(ancillaryCount, as: UInt64.self)
        w.writeInteger(itemPages, as: UInt32.self)
        w.writeInteger(uniquePages, as: UInt32.self)
        w.writeBytes(generation)
        w.writeInteger(attributeCount, as: UInt64.self)
        w.writeInteger(unhashedCount, as: UInt64.self)
        w.writeInteger(attributePages, as: UInt32.self)
        w.writeInteger(unhashedPages, as: UInt32.self)
        w.writeZeros(FormatConstants.indexPageBodySize - w.bytes.count)
        return IndexPage.seal(body: w.bytes, page: 0, headerMAC: [], macKey: macKey)
    }

    /// The header MAC of an encoded header page: the key under which every entry page is bound.
    public static func mac(of page: [UInt8]) -> [UInt8] { Array(page.suffix(FormatConstants.indexPageMACSize)) }

    /// Decodes and authenticates a header page.
    /// - Throws: `FormatError` for a short page, a bad magic, a version other than 1.0, a page
    ///   size other than 4096, non-zero reserved bytes, page counts that disagree with the item
    ///   count, or a MAC that does not verify. Every one of them means "ignore this index".
    public static func decode(_ page: [UInt8], macKey: SecretKey) throws -> IndexHeader {
        guard page.count == FormatConstants.indexPageSize else { throw FormatError.truncated(field: "index header") }
        var r = ByteReader(page)
        let minor = try r.readPreamble(
            magic: FormatConstants.indexMagic, major: FormatConstants.indexMajor, field: "index", file: "index file")
        // A cache: a reader uses only the exact version it writes, and rebuilds any other.
        guard minor == FormatConstants.indexMinor else {
            throw FormatError.unsupportedVersion(what: "index file", major: FormatConstants.indexMajor, minor: minor)
        }
        guard IndexPage.verify(page, page: 0, headerMAC: [], macKey: macKey) else {
            throw FormatError.checksumMismatch(what: "index header")
        }
        guard try r.readInteger(as: UInt32.self, "index page size") == UInt32(FormatConstants.indexPageSize) else {
            throw FormatError.invalidField(field: "index page size", reason: "must be 4096")
        }
        var h = IndexHeader(
            fileUUID: try r.readBytes(count: 16, "index file UUID"),
            logHeaderMAC: try r.readBytes(count: 32, "index log header MAC"),
            coveredEnd: try r.readInteger(as: UInt64.self, "index covered end"),
            lastSequence: try r.readInteger(as: UInt64.self, "index last sequence"),
            lastRecordOffset: try r.readInteger(as: UInt64.self, "index last record offset"),
            lastRecordTag: try r.readBytes(count: 16, "index last record tag"),
            itemCount: try r.readInteger(as: UInt64.self, "index item count"),
            recordCount: try r.readInteger(as: UInt64.self, "index record count"),
            ancillaryCount: try r.readInteger(as: UInt64.self, "index ancillary count"), generation: [])
        let itemPages = try r.readInteger(as: UInt32.self, "index item pages")
        let uniquePages = try r.readInteger(as: UInt32.self, "index unique pages")
        h.generation = try r.readBytes(count: 16, "index generation")
        h.attributeCount = try r.readInteger(as: UInt64.self, "index attribute count")
        h.unhashedCount = try r.readInteger(as: UInt64.self, "index unhashed count")
        let attributePages = try r.readInteger(as: UInt32.self, "index attribute pages")
        let unhashedPages = try r.readInteger(as: UInt32.self, "index unhashed pages")
        try r.readReserved(count: FormatConstants.indexPageBodySize - r.offset, "index header reserved")
        guard itemPages == h.itemPages, uniquePages == h.uniquePages, h.itemCount <= UInt64(UInt32.max),
            h.unhashedCount <= h.itemCount, h.attributeCount <= h.itemCount * UInt64(AttributeHashRecord.maxHashes),
            attributePages == h.attributePages, unhashedPages == h.unhashedPages
        else {
            throw FormatError.invalidField(field: "index page counts", reason: "do not match the item count")
        }
        return h
    }
}

/// Sealing and checking of index pages (§17.2–§17.4).
public enum IndexPage {
    /// `body` (at most 4064 bytes, zero-padded to 4064) followed by its MAC:
    /// HMAC-SHA256(index file MAC key, headerMAC ‖ u32 page number ‖ body). The header page is
    /// page 0 and has an empty `headerMAC`.
    public static func seal(body: [UInt8], page: UInt32, headerMAC: [UInt8], macKey: SecretKey) -> [UInt8] {
        var out = body
        out.reserveCapacity(FormatConstants.indexPageSize)
        if out.count < FormatConstants.indexPageBodySize {
            out.append(contentsOf: repeatElement(0, count: FormatConstants.indexPageBodySize - out.count))
        }
        out.append(contentsOf: mac(body: out[...], page: page, headerMAC: headerMAC, macKey: macKey))
        return out
    }

    /// Checks a whole page's MAC in constant time.
    public static func verify(_ page: [UInt8], page number: UInt32, headerMAC: [UInt8], macKey: SecretKey) -> Bool {
        guard page.count == FormatConstants.indexPageSize else { return false }
        let body = page[..<FormatConstants.indexPageBodySize]
        return Crypto.constantTimeEqual(
            mac(body: body, page: number, headerMAC: headerMAC, macKey: macKey),
            Array(page[FormatConstants.indexPageBodySize...]))
    }

    static func mac(body: ArraySlice<UInt8>, page: UInt32, headerMAC: [UInt8], macKey: SecretKey) -> [UInt8] {
        var n = ByteWriter(capacity: 4)
        n.writeInteger(page, as: UInt32.self)
        return Crypto.hmacSHA256(key: macKey, parts: [headerMAC, n.bytes, Array(body)])
    }
}
