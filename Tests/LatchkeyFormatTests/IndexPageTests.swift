import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// The entry pages of an index file (spec §17.2): each table written by `IndexPageWriter` and
/// read back by `IndexEntryPage`, at the offsets of the spec's tables.
@Suite struct IndexPageTests {
    static let header = IndexHeader(
        fileUUID: Sample.fileUUID, logHeaderMAC: [UInt8](repeating: 7, count: 32), coveredEnd: 500,
        lastSequence: 3, lastRecordOffset: 400, lastRecordTag: [UInt8](repeating: 9, count: 16),
        itemCount: 71, recordCount: 3, ancillaryCount: 0, generation: [UInt8](repeating: 1, count: 16),
        attributeCount: 2, unhashedCount: 1)
    static let headerPage = header.encode(macKey: Sample.macKey)

    static func key(_ i: Int) -> IndexKey { (UInt64(i) << 56 | 0x0102_0304, UInt64(0xA0B0_C0D0_E0F0_0000) | UInt64(i)) }

    static func pages(of bytes: [UInt8]) -> [[UInt8]] {
        stride(from: 0, to: bytes.count, by: FormatConstants.indexPageSize).map {
            Array(bytes[$0..<$0 + FormatConstants.indexPageSize])
        }
    }

    /// 71 items (two item pages), 71 unique keys (one page), 2 attributes, 1 unhashed item.
    static func written() -> [UInt8] {
        var w = IndexPageWriter(headerPage: headerPage, macKey: Sample.macKey)
        for i in 0..<71 {
            w.appendItem(
                IndexItemEntry(
                    uuid: key(i), recordOffset: 1000 + UInt64(i), sequence: 5 + UInt64(i), recordSize: 200,
                    classTag: 0xCAFE_F00D, uniqueKeyHash: key(100 + i), protectionClass: 6, flags: 1))
        }
        #expect(w.count == 71 && w.nextPage == 2, "a full item page was sealed when its 70th entry came")
        w.begin(.uniqueKeys)
        for i in 0..<71 { w.appendUnique(hash: key(100 + i), uuid: key(i)) }
        w.begin(.attributes)
        w.appendAttribute(hash: 0x1122_3344_5566_7788, uuid: key(3))
        w.appendAttribute(hash: 0x1122_3344_5566_7789, uuid: key(1))
        w.begin(.unhashed)
        w.appendUnhashed(uuid: key(70))
        w.endTable()
        return w.takeSealed()
    }

    @Test func writer_sealsEveryTableInFileOrder() throws {
        let bytes = Self.written()
        #expect(
            UInt64(bytes.count) == Self.header.fileSize, "header, 2 item, 1 unique, 1 attribute and 1 unhashed page")
        let pages = Self.pages(of: bytes)
        #expect(pages[0] == Self.headerPage)
        let mac = IndexHeader.mac(of: Self.headerPage)
        for (n, page) in pages.enumerated().dropFirst() {
            #expect(IndexPage.verify(page, page: UInt32(n), headerMAC: mac, macKey: Sample.macKey), "page \(n)")
        }
    }

    @Test func itemEntry_isAtTheSpecsOffsets() throws {
        let page = Self.pages(of: Self.written())[1]
        let at = 2 * 58
        #expect(ByteReader(page).getInteger(at: at, as: UInt64.self) == Self.key(2).high, "UUID at 0")
        #expect(ByteReader(page).getInteger(at: at + 8, as: UInt64.self) == Self.key(2).low)
        #expect(ByteReader(page).getInteger(at: at + 16, as: UInt64.self) == 1002, "record offset at 16")
        #expect(ByteReader(page).getInteger(at: at + 24, as: UInt64.self) == 7, "sequence at 24")
        #expect(ByteReader(page).getInteger(at: at + 32, as: UInt32.self) == 200, "record size at 32")
        #expect(ByteReader(page).getInteger(at: at + 36, as: UInt32.self) == 0xCAFE_F00D, "class tag at 36")
        #expect(
            ByteReader(page).getInteger(at: at + 40, as: UInt64.self) == Self.key(102).high, "unique-key hash at 40")
        #expect(page[at + 56] == 6 && page[at + 57] == 1, "class at 56, flags at 57")
        #expect(page[70 * 58..<FormatConstants.indexPageBodySize].allSatisfy { $0 == 0 }, "zeros after the 70 entries")
        // Decoding alone reads the same fields.
        let e = try IndexItemEntry.decode(page, at: at)
        #expect(e.recordOffset == 1002 && e.sequence == 7 && e.recordSize == 200 && e.classTag == 0xCAFE_F00D)
        #expect(e.protectionClass == 6 && e.flags == 1 && e.uuid == Self.key(2) && e.uniqueKeyHash == Self.key(102))
        #expect(e.uuidBytes == Array(page[at..<at + 16]))
        var w = ByteWriter()
        e.encode(into: &w)
        #expect(w.bytes == Array(page[at..<at + 58]))
    }

    @Test func entryPages_readBackWhatWasWritten() throws {
        let pages = Self.pages(of: Self.written())
        let items = try IndexEntryPage(pages[1], table: .items, count: 70)
        let last = try IndexEntryPage(pages[2], table: .items, count: 1)
        let uniques = try IndexEntryPage(pages[3], table: .uniqueKeys, count: 71)
        let attributes = try IndexEntryPage(pages[4], table: .attributes, count: 2)
        let unhashed = try IndexEntryPage(pages[5], table: .unhashed, count: 1)
        for i in 0..<70 {
            let e = items.item(i)
            #expect(e.uuid == Self.key(i) && items.key(i) == Self.key(i))
            #expect(e.recordOffset == 1000 + UInt64(i) && e.sequence == 5 + UInt64(i) && e.recordSize == 200)
            #expect(
                e.classTag == 0xCAFE_F00D && e.uniqueKeyHash == Self.key(100 + i) && e.protectionClass == 6
                    && e.flags == 1)
        }
        #expect(last.key(0) == Self.key(70))
        #expect(uniques.key(70) == Self.key(170) && uniques.uniqueOwner(70) == Self.key(70))
        #expect(attributes.attribute(0).hash == 0x1122_3344_5566_7788 && attributes.attribute(0).uuid == Self.key(3))
        #expect(attributes.attributeHash(1) == 0x1122_3344_5566_7789 && attributes.attribute(1).uuid == Self.key(1))
        #expect(ByteReader(pages[4]).getInteger(at: 24 + 8, as: UInt64.self) == Self.key(1).high, "attribute UUID at 8")
        #expect(unhashed.key(0) == Self.key(70))
        #expect(Array(pages[5][0..<16]) == Array(pages[2][0..<16]), "an unhashed entry is the UUID alone")
    }

    @Test func entryPage_refusesWhatAPageCannotHold() {
        let page = Self.pages(of: Self.written())[1]
        expectRejection(.truncated) { try IndexEntryPage(Array(page.prefix(57)), table: .items, count: 1) }
        expectRejection(.truncated) { try IndexEntryPage(Array(page.prefix(58 * 70 - 1)), table: .items, count: 70) }
        expectRejection(.invalidField) { try IndexEntryPage(page, table: .items, count: 71) }
        expectRejection(.invalidField) { try IndexEntryPage(page, table: .unhashed, count: -1) }
        #expect(throws: Never.self) { try IndexEntryPage(page, table: .unhashed, count: 254) }
        expectRejection(.truncated) { try IndexItemEntry.decode(page, at: FormatConstants.indexPageSize - 57) }
    }

    @Test func tables_haveTheSpecsSizes() {
        #expect(IndexTable.allCases.map(\.entrySize) == [58, 32, 24, 16])
        #expect(IndexTable.allCases.map(\.entriesPerPage) == [70, 127, 169, 254])
    }
}
