import LatchkeyCrypto

/// A 16-byte key of an index table (a UUID or a unique-key hash) as two big-endian words: the
/// tables sort by it, and comparing two words is what a lookup does per step.
public typealias IndexKey = (high: UInt64, low: UInt64)

/// The tables an index file holds after its header page, in file order (spec/FORMAT.md
/// §17.2–§17.4). Each is a run of pages of fixed-size entries, sorted by the entry's leading
/// bytes, the last page of a run zero-padded.
public enum IndexTable: Sendable, CaseIterable {
    /// Live items by UUID (§17.3): UUID, record offset, sequence number, record size, class tag,
    /// unique-key hash, protection class, flags; 58 bytes.
    case items
    /// Unique-key hash, then the UUID of the item holding it; 32 bytes.
    case uniqueKeys
    /// Attribute hash (u64), then the UUID of a hashed item (version 1.1); 24 bytes.
    case attributes
    /// The UUID of a live item without a bound hash record (version 1.1); 16 bytes.
    case unhashed

    public var entrySize: Int {
        switch self {
        case .items: return FormatConstants.indexItemEntrySize
        case .uniqueKeys: return FormatConstants.indexUniqueEntrySize
        case .attributes: return FormatConstants.indexAttributeEntrySize
        case .unhashed: return FormatConstants.indexUnhashedEntrySize
        }
    }

    public var entriesPerPage: Int { FormatConstants.indexPageBodySize / entrySize }
}

/// The fields of an item entry at their offsets (§17.3).
enum IndexItemLayout {
    static let uuid = 0
    static let recordOffset = 16
    static let sequence = 24
    static let recordSize = 32
    static let classTag = 36
    static let uniqueKeyHash = 40
    static let protectionClass = 56
    static let flags = 57
}

/// One live item in an index item page (§17.3), its 16-byte keys as words: what a lookup
/// reads in place (`IndexEntryPage.item`), without allocating.
public struct IndexItemEntry: Sendable {
    public var uuid: IndexKey
    public var recordOffset: UInt64
    public var sequence: UInt64
    public var recordSize: UInt32
    public var classTag: UInt32
    public var uniqueKeyHash: IndexKey
    public var protectionClass: UInt8
    public var flags: UInt8

    public init(
        uuid: IndexKey, recordOffset: UInt64, sequence: UInt64, recordSize: UInt32, classTag: UInt32,
        uniqueKeyHash: IndexKey, protectionClass: UInt8, flags: UInt8
    ) {
        self.uuid = uuid
        self.recordOffset = recordOffset
        self.sequence = sequence
        self.recordSize = recordSize
        self.classTag = classTag
        self.uniqueKeyHash = uniqueKeyHash
        self.protectionClass = protectionClass
        self.flags = flags
    }

    /// The one writer of an item entry: the fields in the order of `IndexItemLayout`.
    public func encode(into w: inout ByteWriter) {
        IndexItemEntry.write(uuid, into: &w)
        w.writeInteger(recordOffset, as: UInt64.self)
        w.writeInteger(sequence, as: UInt64.self)
        w.writeInteger(recordSize, as: UInt32.self)
        w.writeInteger(classTag, as: UInt32.self)
        IndexItemEntry.write(uniqueKeyHash, into: &w)
        w.writeInteger(protectionClass, as: UInt8.self)
        w.writeInteger(flags, as: UInt8.self)
    }

    /// Decodes the entry at byte `at` of a page body.
    /// - Throws: `FormatError.truncated` when the 58 bytes are not all there.
    public static func decode(_ page: [UInt8], at: Int) throws -> IndexItemEntry {
        guard let bytes = ByteReader(page).getSlice(at: at, count: FormatConstants.indexItemEntrySize) else {
            throw FormatError.truncated(field: "index item entry")
        }
        return try IndexEntryPage(Array(bytes), table: .items, count: 1).item(0)
    }

    /// The UUID as the 16 bytes the page holds.
    public var uuidBytes: [UInt8] { IndexItemEntry.bytes(uuid) }

    static func write(_ k: IndexKey, into w: inout ByteWriter) {
        w.writeInteger(k.high, as: UInt64.self)
        w.writeInteger(k.low, as: UInt64.self)
    }

    /// 16 bytes as a key; a writer's bug (not input) when they are not 16.
    public static func key(_ bytes: [UInt8]) -> IndexKey {
        let r = ByteReader(bytes)
        guard bytes.count == 16, let high = r.getInteger(at: 0, as: UInt64.self),
            let low = r.getInteger(at: 8, as: UInt64.self)
        else {
            preconditionFailure("an index key is 16 bytes, not \(bytes.count)")
        }
        return (high, low)
    }

    public static func bytes(_ k: IndexKey) -> [UInt8] {
        var w = ByteWriter(capacity: 16)
        write(k, into: &w)
        return w.bytes
    }
}

/// One authenticated entry page of an index file, read in place.
///
/// Made only from bytes and an entry count they hold, so every entry `i` in
/// `0..<count` lies inside the page: the accessors then load the fields directly (one
/// unaligned load a word, no copy), and an `i` outside `0..<count` is a caller's bug, which
/// traps like an array subscript. Whether the page's MAC verifies is the caller's to check
/// before (`IndexPage.verify`).
public struct IndexEntryPage: Sendable {
    public let table: IndexTable
    /// Entries on this page.
    public let count: Int
    /// The page as read (a whole page, MAC included, in an index; one entry's bytes will do).
    public let bytes: [UInt8]
    @usableFromInline let entrySize: Int

    /// - Throws: `FormatError.invalidField` when `count` is negative or more than a page of
    ///   `table` holds, `truncated` when `page` is too short to hold them.
    public init(_ page: [UInt8], table: IndexTable, count: Int) throws {
        guard count >= 0, count <= table.entriesPerPage else {
            throw FormatError.invalidField(field: "index page", reason: "\(count) entries do not fit a page")
        }
        guard page.count >= count * table.entrySize else { throw FormatError.truncated(field: "index page") }
        self.table = table
        self.count = count
        self.bytes = page
        self.entrySize = table.entrySize
    }

    @inlinable
    func load<T: FixedWidthInteger>(_ i: Int, _ field: Int, as: T.Type) -> T {
        precondition(i >= 0 && i < count, "index entry \(i) is outside the page's \(count)")
        return bytes.withUnsafeBytes {
            T(bigEndian: $0.loadUnaligned(fromByteOffset: i * entrySize + field, as: T.self))
        }
    }

    @inlinable
    func loadKey(_ i: Int, _ field: Int) -> IndexKey {
        (load(i, field, as: UInt64.self), load(i, field + 8, as: UInt64.self))
    }

    /// The key entry `i` is sorted by: the UUID of an item or unhashed entry, the hash of a
    /// unique-key entry. (Attribute entries sort by `attribute(_:)`.)
    @inlinable
    public func key(_ i: Int) -> IndexKey { loadKey(i, 0) }

    /// Entry `i` of an item page.
    public func item(_ i: Int) -> IndexItemEntry {
        precondition(table == .items)
        return IndexItemEntry(
            uuid: loadKey(i, IndexItemLayout.uuid),
            recordOffset: load(i, IndexItemLayout.recordOffset, as: UInt64.self),
            sequence: load(i, IndexItemLayout.sequence, as: UInt64.self),
            recordSize: load(i, IndexItemLayout.recordSize, as: UInt32.self),
            classTag: load(i, IndexItemLayout.classTag, as: UInt32.self),
            uniqueKeyHash: loadKey(i, IndexItemLayout.uniqueKeyHash),
            protectionClass: load(i, IndexItemLayout.protectionClass, as: UInt8.self),
            flags: load(i, IndexItemLayout.flags, as: UInt8.self))
    }

    /// The item named by entry `i` of a unique-key page.
    public func uniqueOwner(_ i: Int) -> IndexKey {
        precondition(table == .uniqueKeys)
        return loadKey(i, 16)
    }

    /// The attribute hash of entry `i` of an attribute page.
    @inlinable
    public func attributeHash(_ i: Int) -> UInt64 {
        precondition(table == .attributes)
        return load(i, 0, as: UInt64.self)
    }

    /// Entry `i` of an attribute page.
    public func attribute(_ i: Int) -> (hash: UInt64, uuid: IndexKey) {
        (attributeHash(i), loadKey(i, 8))
    }
}

/// Lays out the entry pages of an index file in order, sealing each as it fills (§17.2–§17.4).
///
/// The writer of the index decides what goes in (and in which order the entries come, each
/// table sorted); this type decides where each byte goes: the entry layouts, the page runs of
/// each table in file order, the zero padding and the page MACs bound to the header.
public struct IndexPageWriter {
    private let headerMAC: [UInt8]
    private let macKey: SecretKey
    private var body = ByteWriter(capacity: FormatConstants.indexPageBodySize)
    private var inPage = 0
    /// The table being written; the tables come in `IndexTable.allCases` order.
    public private(set) var table: IndexTable = .items
    /// The number the next sealed page gets (the header is page 0).
    public private(set) var nextPage: UInt32 = 1
    /// Entries written to the current table.
    public private(set) var count = 0
    /// Pages sealed and not yet taken (`takeSealed`).
    public private(set) var sealed: [UInt8] = []

    /// Starts a file with its sealed header page (`IndexHeader.encode`), the first of the
    /// sealed pages; every entry page is bound to that page's MAC.
    public init(headerPage: [UInt8], macKey: SecretKey) {
        self.headerMAC = IndexHeader.mac(of: headerPage)
        self.macKey = macKey
        self.sealed = headerPage
    }

    /// Ends the current table (sealing its partial last page) and starts `next`, which must
    /// come after it in file order.
    public mutating func begin(_ next: IndexTable) {
        let all = IndexTable.allCases
        precondition(all.firstIndex(of: next)! > all.firstIndex(of: table)!, "index tables are written in file order")
        endTable()
        table = next
        count = 0
    }

    /// Seals the partial last page of the current table, if any.
    public mutating func endTable() {
        if inPage > 0 { sealPage() }
    }

    /// Hands over the pages sealed so far.
    public mutating func takeSealed() -> [UInt8] {
        defer { sealed.removeAll(keepingCapacity: true) }
        return sealed
    }

    public mutating func appendItem(_ entry: IndexItemEntry) {
        precondition(table == .items)
        entry.encode(into: &body)
        endEntry()
    }

    public mutating func appendUnique(hash: IndexKey, uuid: IndexKey) {
        precondition(table == .uniqueKeys)
        writeKey(hash)
        writeKey(uuid)
        endEntry()
    }

    public mutating func appendAttribute(hash: UInt64, uuid: IndexKey) {
        precondition(table == .attributes)
        body.writeInteger(hash, as: UInt64.self)
        writeKey(uuid)
        endEntry()
    }

    public mutating func appendUnhashed(uuid: IndexKey) {
        precondition(table == .unhashed)
        writeKey(uuid)
        endEntry()
    }

    private mutating func writeKey(_ k: IndexKey) { IndexItemEntry.write(k, into: &body) }

    private mutating func endEntry() {
        inPage += 1
        count += 1
        if inPage == table.entriesPerPage { sealPage() }
    }

    private mutating func sealPage() {
        sealed.append(
            contentsOf: IndexPage.seal(body: body.bytes, page: nextPage, headerMAC: headerMAC, macKey: macKey))
        nextPage += 1
        body = ByteWriter(capacity: FormatConstants.indexPageBodySize)
        inPage = 0
    }
}
