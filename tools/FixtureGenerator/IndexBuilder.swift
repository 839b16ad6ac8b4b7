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
        /// The hashes of the hash record bound to this put (§7.6); nil: unhashed.
        var hashes: [UInt64]?
    }

    enum Op {
        case put(Entry)
        case delete([UInt8])
        case hashes([UInt8], [UInt64])
    }

    static func build(
        file: [UInt8], headerSize: Int, baseSequence: UInt64, coveredEnd: Int, keys: FileKeys,
        fileUUID: [UInt8], generation: [UInt8]
    ) throws -> [UInt8] {
        var live: [[UInt8]: Entry] = [:]
        var pending: [Op] = []
        // The put just before the current record in its transaction, and its binding (§7.6).
        var previousPut: (uuid: [UInt8], binding: [UInt8])?
        var offset = headerSize
        var sequence = baseSequence
        var lastRecordOffset = 0
        var ancillary: UInt64 = 0
        while offset < coveredEnd {
            let frame = try FrameHeader.decode(file[offset..<offset + FormatConstants.frameHeaderSize])
            let payload = file[
                offset + FormatConstants.frameHeaderSize..<offset + frame.recordSize - FormatConstants.frameTagSize]
            precondition(frame.sequence == sequence + 1, "the fixture's records are in sequence")
            var thisPut: (uuid: [UInt8], binding: [UInt8])?
            switch RecordType(rawValue: frame.type) {
            case .itemPut:
                let clear = try ItemPutPayload.decodeClear(payload)
                pending.append(
                    .put(
                        Entry(
                            uuid: Array(clear.uuid), offset: UInt64(offset), sequence: frame.sequence,
                            size: UInt32(frame.recordSize), put: clear)))
                thisPut = (Array(clear.uuid), Array(payload.dropFirst(40).prefix(16)))
            case .itemDelete:
                pending.append(.delete(Array(payload.prefix(16))))
            case .attributeHashes:
                // Bound only to the put right before it, in its transaction, by UUID and binding.
                let p = Array(payload)
                if let put = previousPut, p.count >= 36, p[16..<32].elementsEqual(put.binding),
                    p[0..<16].elementsEqual(put.uuid),
                    p[33] == 0, p[34] == 0, p[35] == 0, Int(p[32]) <= 16, p.count == 36 + 8 * Int(p[32])
                {
                    pending.append(
                        .hashes(
                            put.uuid,
                            (0..<Int(p[32])).map { ByteReader(p).getInteger(at: 36 + 8 * $0, as: UInt64.self)! }))
                }
                ancillary += 1
            default:
                precondition(
                    RecordType.isAncillary(frame.type), "index fixtures hold puts, deletes and ancillary records only")
                ancillary += 1
            }
            sequence = frame.sequence
            previousPut = frame.continues ? thisPut : nil
            if !frame.continues {
                for op in pending {
                    switch op {
                    case .put(let e): live[e.uuid] = e
                    case .delete(let uuid): live[uuid] = nil
                    case .hashes(let uuid, let hashes): live[uuid]!.hashes = hashes
                    }
                }
                pending = []
                lastRecordOffset = offset
            }
            offset += frame.recordSize
        }
        precondition(offset == coveredEnd && pending.isEmpty, "the covered end closes a transaction")
        let items = live.values.sorted { $0.uuid.lexicographicallyPrecedes($1.uuid) }
        // (hash, UUID) pairs in byte order, one per distinct hash of each hashed item (§17.2).
        var attributes: [(UInt64, [UInt8])] = []
        for e in items { for h in Set(e.hashes ?? []) { attributes.append((h, e.uuid)) } }
        attributes.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1.lexicographicallyPrecedes($1.1) }
        let unhashed = items.filter { $0.hashes == nil }.map(\.uuid)
        let header = IndexHeader(
            fileUUID: fileUUID, logHeaderMAC: Array(file[headerSize - FormatConstants.headerMACSize..<headerSize]),
            coveredEnd: UInt64(coveredEnd), lastSequence: sequence,
            lastRecordOffset: UInt64(lastRecordOffset),
            lastRecordTag: lastRecordOffset == 0
                ? [UInt8](repeating: 0, count: 16) : Array(file[coveredEnd - 16..<coveredEnd]),
            itemCount: UInt64(items.count), recordCount: sequence - baseSequence,
            ancillaryCount: ancillary, generation: generation,
            attributeCount: UInt64(attributes.count), unhashedCount: UInt64(unhashed.count))
        let headerPage = header.encode(macKey: keys.indexFileMAC)
        let headerMAC = IndexHeader.mac(of: headerPage)
        var out = headerPage
        var page: UInt32 = 1
        /// Seals `entries` into pages of `perPage` entries each, numbered on from `page`.
        func appendPages<T>(_ entries: [T], perPage: Int, _ encode: (T, inout ByteWriter) -> Void) {
            for chunk in stride(from: 0, to: entries.count, by: perPage) {
                var w = ByteWriter(capacity: FormatConstants.indexPageBodySize)
                for e in entries[chunk..<min(chunk + perPage, entries.count)] { encode(e, &w) }
                out += IndexPage.seal(body: w.bytes, page: page, headerMAC: headerMAC, macKey: keys.indexFileMAC)
                page += 1
            }
        }
        appendPages(items, perPage: FormatConstants.indexItemsPerPage) { e, w in
            IndexItemEntry(
                uuid: IndexItemEntry.key(e.uuid), recordOffset: e.offset, sequence: e.sequence, recordSize: e.size,
                classTag: e.put.classTag, uniqueKeyHash: IndexItemEntry.key(Array(e.put.uniqueKeyHash)),
                protectionClass: e.put.protectionClass.rawValue, flags: e.put.flags
            ).encode(into: &w)
        }
        let uniques = items.map { (Array($0.put.uniqueKeyHash), $0.uuid) }.sorted {
            $0.0.lexicographicallyPrecedes($1.0)
        }
        appendPages(uniques, perPage: FormatConstants.indexUniquesPerPage) { e, w in
            w.writeBytes(e.0)
            w.writeBytes(e.1)
        }
        appendPages(attributes, perPage: FormatConstants.indexAttributesPerPage) { e, w in
            w.writeInteger(e.0, as: UInt64.self)
            w.writeBytes(e.1)
        }
        appendPages(unhashed, perPage: FormatConstants.indexUnhashedPerPage) { uuid, w in w.writeBytes(uuid) }
        return out
    }

    /// `index` with its first two item entries swapped but for their UUIDs, and the UUIDs of
    /// their unique-key entries swapped to match (each still names an item entry holding its
    /// hash), every page re-sealed: an index that only the device could sign, each of whose two
    /// entries names the other item's record (§17.5).
    static func swappingFirstTwoItems(_ index: [UInt8], keys: FileKeys) throws -> [UInt8] {
        var out = index
        let header = try IndexHeader.decode(Array(index.prefix(4096)), macKey: keys.indexFileMAC)
        let headerMAC = IndexHeader.mac(of: Array(index.prefix(4096)))
        func reseal(_ page: Int, _ body: [UInt8]) {
            out.replaceSubrange(
                page * 4096..<(page + 1) * 4096,
                with: IndexPage.seal(body: body, page: UInt32(page), headerMAC: headerMAC, macKey: keys.indexFileMAC))
        }
        var body = Array(index[4096..<4096 + 4064])
        var a = try IndexItemEntry.decode(body, at: 0), b = try IndexItemEntry.decode(body, at: 58)
        precondition(header.itemCount >= 2)
        let (uuidA, uuidB) = (a.uuidBytes, b.uuidBytes)
        (a.uuid, b.uuid) = (b.uuid, a.uuid)
        var w = ByteWriter()
        b.encode(into: &w)
        a.encode(into: &w)
        body.replaceSubrange(0..<116, with: w.bytes)
        reseal(1, body)
        let first = 1 + Int(header.itemPages)
        for page in first..<first + Int(header.uniquePages) {
            var u = Array(index[page * 4096..<page * 4096 + 4064])
            for i in 0..<FormatConstants.indexUniquesPerPage {
                let named = Array(u[i * 32 + 16..<i * 32 + 32])
                if named == uuidA {
                    u.replaceSubrange(i * 32 + 16..<i * 32 + 32, with: uuidB)
                } else if named == uuidB {
                    u.replaceSubrange(i * 32 + 16..<i * 32 + 32, with: uuidA)
                }
            }
            reseal(page, u)
        }
        return out
    }

    /// The index of `builder`'s file as it stood at snapshot `at` (default: the newest).
    static func build(_ builder: KeychainBuilder, file: [UInt8]? = nil, coveredEnd: Int? = nil, label: String) throws
        -> [UInt8]
    {
        var rng = DeterministicRandom(label: label + " index generation")
        return try build(
            file: file ?? builder.file, headerSize: builder.headerSize, baseSequence: builder.header.baseSequence,
            coveredEnd: coveredEnd ?? builder.file.count, keys: builder.keys, fileUUID: builder.fileUUID,
            generation: rng.bytes(16))
    }
}
