/// The payload of a history record (spec/FORMAT.md §7.7, record type `0x81`): an earlier
/// version of an item, kept when a transaction replaced or deleted it. The version is the put
/// payload that held the item until then, copied byte for byte, so it stays encrypted and
/// authenticated exactly as the item was (its AAD binds the file and the clear part, §7.4).
///
/// The record is ancillary: a reader that does not know it skips it and reads the same live
/// items. Each record carries its own bound (how many later versions and how many days it
/// outlives), so that every compactor drops the same records (`HistoryBound`).
public struct HistoryRecord: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        /// The item was replaced by a put of the same UUID.
        case replaced = 1
        /// The item was deleted.
        case deleted = 2
    }

    /// Bytes before the embedded put payload.
    public static let fixedSize = 32
    /// Where the embedded put payload's wrapped item key is, within the history payload.
    public static let wrappedKeyRange = (fixedSize + 40)..<(fixedSize + 80)
    /// The largest put payload a history record can hold (§6.4 less the fixed part).
    public static let maxPutPayload = Int(FormatConstants.maxPayloadSize) - fixedSize

    public var uuid: [UInt8]
    public var kind: Kind
    /// The record outlives this many later history records of its item, 1–255 (§7.7).
    public var keepVersions: UInt8
    /// The record outlives this many days after `supersededAt`; 0: no bound by age.
    public var keepDays: UInt16
    /// Seconds since 1970-01-01T00:00:00Z, by the writer's clock.
    public var supersededAt: UInt64
    /// The put payload (§7.1) that held the item until then, byte for byte.
    public var put: [UInt8]

    public init(
        uuid: [UInt8], kind: Kind, keepVersions: UInt8, keepDays: UInt16, supersededAt: UInt64, put: [UInt8]
    ) {
        self.uuid = uuid
        self.kind = kind
        self.keepVersions = keepVersions
        self.keepDays = keepDays
        self.supersededAt = supersededAt
        self.put = put
    }

    /// Whether a put payload of this size fits a history record (§7.7: a writer keeps no
    /// history of a put larger than `maxPutPayload`).
    public static func fits(putPayloadSize: Int) -> Bool { putPayloadSize <= maxPutPayload }

    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: HistoryRecord.fixedSize + put.count)
        w.writeBytes(uuid)
        w.writeInteger(kind.rawValue, as: UInt8.self)
        w.writeInteger(keepVersions, as: UInt8.self)
        w.writeInteger(keepDays, as: UInt16.self)
        w.writeInteger(supersededAt, as: UInt64.self)
        w.writeZeros(4)
        w.writeBytes(put)
        return w.bytes
    }

    /// What a history record says in the clear, read without copying the version it holds.
    public struct Header: Sendable {
        public var uuid: ArraySlice<UInt8>
        public var kind: Kind
        public var keepVersions: UInt8
        public var keepDays: UInt16
        public var supersededAt: UInt64
        /// The clear part of the embedded put (§7.1).
        public var put: ItemPutClear
    }

    /// Checks a payload as §7.7 requires: a known kind, a version bound of at least 1, zero
    /// reserved bytes, and an embedded put payload whose fixed part is valid (§7.1) and that
    /// names the record's UUID. Copies nothing: the walk over a file's history and the reading
    /// of a version both start here.
    /// - Throws: `FormatError` for a record no writer writes (an integrity error, §7.7).
    public static func decodeHeader(_ payload: ArraySlice<UInt8>) throws -> Header {
        var r = ByteReader(payload)
        let uuid = try r.readSlice(count: 16, "history UUID")
        let rawKind = try r.readInteger(as: UInt8.self, "history kind")
        guard let kind = Kind(rawValue: rawKind) else {
            throw FormatError.invalidField(field: "history kind", reason: "unknown kind \(rawKind)")
        }
        let keep = try r.readInteger(as: UInt8.self, "history versions bound")
        guard keep >= 1 else {
            throw FormatError.invalidField(field: "history versions bound", reason: "zero")
        }
        let days = try r.readInteger(as: UInt16.self, "history days bound")
        let at = try r.readInteger(as: UInt64.self, "history time")
        try r.readReserved(count: 4, "history reserved")
        let put = try ItemPutPayload.decodeClear(payload.dropFirst(fixedSize))
        guard put.uuid.elementsEqual(uuid) else {
            throw FormatError.invalidField(field: "history put", reason: "its UUID is not the record's")
        }
        return Header(uuid: uuid, kind: kind, keepVersions: keep, keepDays: days, supersededAt: at, put: put)
    }

    /// Decodes a payload, checked as `decodeHeader` checks it.
    /// - Throws: `FormatError` for a record no writer writes (an integrity error, §7.7).
    public static func decode(_ payload: ArraySlice<UInt8>) throws -> HistoryRecord {
        let h = try decodeHeader(payload)
        return HistoryRecord(
            uuid: Array(h.uuid), kind: h.kind, keepVersions: h.keepVersions, keepDays: h.keepDays,
            supersededAt: h.supersededAt, put: Array(payload.dropFirst(fixedSize)))
    }

    /// The embedded put, decoded.
    public func decodedPut() throws -> ItemPutPayload { try ItemPutPayload.decode(put[...]) }
}

/// The bound of §7.7: which history records a listing shows and a compaction keeps.
public enum HistoryBound {
    /// One history record as the bound sees it, in file order.
    public struct Entry: Sendable {
        public var uuid: [UInt8]
        public var keepVersions: UInt8
        public var keepDays: UInt16
        public var supersededAt: UInt64

        public init(uuid: [UInt8], keepVersions: UInt8, keepDays: UInt16, supersededAt: UInt64) {
            self.uuid = uuid
            self.keepVersions = keepVersions
            self.keepDays = keepDays
            self.supersededAt = supersededAt
        }
    }

    /// For each entry (in file order), whether it is **expired** at `now` (Unix seconds): its
    /// days bound is not 0 and `now` ≥ its time + days × 86 400, or at least `keepVersions`
    /// history records of the same item come after it in the file.
    public static func expired(_ entries: [Entry], now: UInt64) -> [Bool] {
        var later: [[UInt8]: Int] = [:]
        var out = [Bool](repeating: false, count: entries.count)
        for i in entries.indices.reversed() {
            let e = entries[i]
            let after = later[e.uuid, default: 0]
            let end = e.supersededAt.addingReportingOverflow(UInt64(e.keepDays) * 86_400)
            let byAge = e.keepDays != 0 && !end.overflow && now >= end.partialValue
            out[i] = byAge || after >= Int(e.keepVersions)
            later[e.uuid] = after + 1
        }
        return out
    }
}
