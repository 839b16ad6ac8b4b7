import LatchkeyCrypto
import LatchkeyFormat

/// A second writer of the index file (spec/FORMAT.md §17), independent of the engine's: it
/// walks a keychain file's records from the end of the header to `coveredEnd`, applies the
/// closed transactions, and encodes the entries, pages and MACs with the LatchkeyFormat
/// encoders only.
enum IndexBuilder {
    struct Entry {
        var uuid: [UInt8]
        var offset: UInt64
        var sequence: UInt64
        var size: UInt32
        var put: ItemPutClear
    }

    static func build(file: [UInt8], headerSize: Int, baseSequence: UInt64, coveredEnd: Int, keys: FileKeys,
                      fileUUID: [UInt8], generation: [UInt8]) throws -> [UInt8] {
        var live: [[UInt8]: Entry] = [:]
        var pending: [(uuid: [UInt8], entry: Entry?)] = []
        var offset = headerSize
        var sequence = baseSequence
        var lastRecordOffset = 0
        var ancillary: UInt64 = 0
        while offset < coveredEnd {
            let frame = try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize])
            let payload = file[offset + FormatConstants.frameHeaderSize..<offset + frame.recordSize - FormatConstants.frameTagSize]
            precondition(frame.sequence == sequence + 1, "the fixture's records are in sequence")
            switch RecordType(rawValue: frame.type) {
            case .itemPut:
                let clear = try ItemPutPayload.decodeClear(payload)
                pending.append((Array(clear.uuid), Entry(uuid: Array(clear.uuid), offset: UInt64(offset), sequence: frame.sequence,
                                                         size: UInt32(frame.recordSize), put: clear)))
            case .itemDelete:
                pending.append((Array(payload.prefix(16)), nil))
            default:
                precondition(RecordType.isAncillary(frame.type), "index fixtures hold puts, deletes and ancillary records only")
                ancillary += 1
            }
            sequence = frame.sequence
            if !frame.continues {
                for (uuid, entry) in pending { live[uuid] = entry }
                pending = []
                lastRecordOffset = offset
            }
            offset += frame.recordSize
        }
        precondition(offset == coveredEnd && pending.isEmpty, "the covered end closes a transaction")
        let items = live.values.sorted { $0.uuid.lexicographicallyPrecedes($1.uuid) }
        let header = IndexHeader(fileUUID: fileUUID, logHeaderMAC: Array(file[headerSize - FormatConstants.headerMACSize..<headerSize]),
                                 coveredEnd: UInt64(coveredEnd), lastSequence: sequence,
                                 lastRecordOffset: UInt64(lastRecordOffset),
                                 lastRecordTag: lastRecordOffset == 0 ? [UInt8](repeating: 0, count: 16) : Array(file[coveredEnd - 16..<coveredEnd]),
                                 itemCount: UInt64(items.count), recordCount: sequence - baseSequence,
                                 ancillaryCount: ancillary, generation: generation)
        let headerPage = header.encode(macKey: keys.indexFileMAC)
        let headerMAC = IndexHeader.mac(of: headerPage)
        var out = headerPage
        var page: UInt32 = 1
        for chunk in stride(from: 0, to: items.count, by: FormatConstants.indexItemsPerPage) {
            var w = ByteWriter(capacity: FormatConstants.indexPageBodySize)
            for e in items[chunk..<min(chunk + FormatConstants.indexItemsPerPage, items.count)] {
                IndexItemEntry(uuid: e.uuid, recordOffset: e.offset, sequence: e.sequence, recordSize: e.size,
                               classTag: e.put.classTag.readBE(UInt32.self, at: 0), uniqueKeyHash: Array(e.put.uniqueKeyHash),
                               protectionClass: e.put.protectionClass.rawValue, flags: e.put.flags).encode(into: &w)
            }
            out += IndexPage.seal(body: w.bytes, page: page, headerMAC: headerMAC, macKey: keys.indexFileMAC)
            page += 1
        }
        let uniques = items.map { (Array($0.put.uniqueKeyHash), $0.uuid) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
        for chunk in stride(from: 0, to: uniques.count, by: FormatConstants.indexUniquesPerPage) {
            var w = ByteWriter(capacity: FormatConstants.indexPageBodySize)
            for (hash, uuid) in uniques[chunk..<min(chunk + FormatConstants.indexUniquesPerPage, uniques.count)] {
                w.raw(hash)
                w.raw(uuid)
            }
            out += IndexPage.seal(body: w.bytes, page: page, headerMAC: headerMAC, macKey: keys.indexFileMAC)
            page += 1
        }
        return out
    }

    /// The index of `builder`'s file as it stood at snapshot `at` (default: the newest).
    static func build(_ builder: KeychainBuilder, file: [UInt8]? = nil, coveredEnd: Int? = nil, label: String) throws -> [UInt8] {
        var rng = DeterministicRandom(label: label + " index generation")
        return try build(file: file ?? builder.file, headerSize: builder.headerSize, baseSequence: builder.header.baseSequence,
                         coveredEnd: coveredEnd ?? builder.file.count, keys: builder.keys, fileUUID: builder.fileUUID,
                         generation: rng.bytes(16))
    }
}
