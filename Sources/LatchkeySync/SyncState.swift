import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// One version of an item as the merge sees it (spec/SYNC.md §8): its clear fields, and once
/// decrypted, digests of its content and unique key.
package struct ItemVersion: Equatable, Sendable {
    package var hlc: UInt64
    package var device: SyncID
    /// Where it is: the segment's number (of `device`) and the entry's index.
    package var number: UInt64
    package var index: UInt32
    package var kind: SegmentEntry.Kind
    package var protection: UInt8
    /// First 16 bytes of SHA-256 of the item plaintext; nil until decrypted.
    package var content: [UInt8]?
    /// First 16 bytes of HMAC(state key, unique key); nil until decrypted.
    package var unique: [UInt8]?

    /// The merge order: later hybrid clock first, then the larger device id (§8.1).
    package func beats(_ o: ItemVersion) -> Bool {
        hlc != o.hlc ? hlc > o.hlc : o.device.lexicographicallyPrecedes(device)
    }
}

/// What this machine knows of one synced item.
package struct SyncedItem: Equatable, Sendable {
    /// The newest put by the merge order (nil: only deletes seen).
    package var winner: ItemVersion?
    /// Some machine deleted it: a deleted item never comes back (§8.2).
    package var deleted: ItemVersion?
    /// Lost to another item with the same unique key (§8.3).
    package var shadowedBy: SyncID?
    /// The content digest of what this keychain holds under the item's UUID, as of the last
    /// sync (nil: it holds nothing).
    package var materialized: [UInt8]?
    /// The sequence number of the put this machine's sync wrote for it (0: none), so that the
    /// next scan of the keychain's changes skips it without decrypting it (§9.2).
    package var materializedSequence: UInt64 = 0

    /// Whether the merged state says the item exists.
    package var isLive: Bool { deleted == nil && shadowedBy == nil && winner != nil }

    /// Adds a version; true when it changed the outcome.
    @discardableResult
    package mutating func merge(_ v: ItemVersion) -> Bool {
        switch v.kind {
        case .delete:
            if let d = deleted, !v.beats(d) { return false }
            let changed = deleted == nil
            deleted = v
            return changed
        case .put:
            if let w = winner, !v.beats(w) {
                if w.hlc == v.hlc, w.device == v.device, w.content == nil, v.content != nil { winner = v }
                return false
            }
            winner = v
            return true
        }
    }
}

/// A remote machine's segments as this machine applied them.
package struct AppliedChain: Equatable, Sendable {
    package var number: UInt64
    package var hash: [UInt8]
}

/// An entry not yet decrypted because its class is locked here (§8.4).
package struct PendingEntry: Equatable, Sendable, Hashable {
    package var device: SyncID
    package var number: UInt64
    package var index: UInt32
}

/// This machine's sync state (§9): what it pinned of the circle, applied of each machine,
/// wrote itself, and knows of each item. Kept in `<keychain>.sync/state`, sealed with a key
/// derived from the identity; what it knows of each item is in pages beside it (`ItemTable`).
package struct SyncState: Sendable {
    package var remote: String
    package var circle: SyncID
    package var device: SyncID
    /// The statement hash of every epoch, from 1 (index 0) to the head.
    package var chain: [[UInt8]]
    /// The head a joiner saw when it applied (until it is in the circle).
    package var appliedAt: [UInt8]? = nil
    package var applied: [SyncID: AppliedChain] = [:]
    /// This machine's own segments: the last one written, and the last one known pushed.
    package var own = AppliedChain(number: 0, hash: [UInt8](repeating: 0, count: 32))
    package var pushed: UInt64 = 0
    /// Own segments written but not yet seen on the remote, by number.
    package var outbox: [UInt64: [UInt8]] = [:]
    package var hlc: UInt64 = 0
    /// The keychain as of the last sync: its file UUID and the sequence number reached.
    package var keychainFile: [UInt8] = []
    package var keychainSequence: UInt64 = 0
    /// How many times the state was saved: the generation of the pages the last save wrote.
    package var generation: UInt64 = 0
    /// The history's bound (§8.6): entries of this machine older than this many days, and not
    /// the newest put or delete of their item, leave with the segments its base replaces.
    package var historyDays: UInt32 = 365
    /// When this machine last published its acknowledgement (§7.5), seconds since 1970.
    package var acknowledgedAt: Double = 0
    /// The last of its own segments that this machine's base stands for (0: it has none, §7.5).
    package var baseThrough: UInt64 = 0
    /// Shared by the copies of one loaded state (a class): `saved` below compares the rest.
    package var items = ItemTable()
    package var pending: Set<PendingEntry> = []

    package init(remote: String, circle: SyncID, device: SyncID, chain: [[UInt8]]) {
        self.remote = remote
        self.circle = circle
        self.device = device
        self.chain = chain
    }

    package var epoch: UInt32 { UInt32(chain.count) }

    /// What this machine has applied of the others, as seen records (§7.1), ascending by device.
    package var seenRecords: [Segment.Seen] {
        applied.filter { $0.value.number > 0 }.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map {
            Segment.Seen(device: $0.key, number: $0.value.number, hash: $0.value.hash)
        }
    }

    /// Whether this state differs from `other`, a copy taken of the same loaded state: its own
    /// fields, or any item changed since the last save.
    func differs(from other: SyncState) -> Bool {
        items.isDirty || encode() != other.encode()
    }

    /// The next hybrid-clock value (§8.1): above every value seen and the wall clock.
    package mutating func tick(now: Double) -> UInt64 {
        hlc = max(hlc == .max ? .max : hlc + 1, Self.physical(unixSeconds: now))
        return hlc
    }

    /// The clock value of a time: milliseconds since 1970 in the high 48 bits (0 for a time
    /// before 1970, not a number, or past the 48 bits, which no clock of this millennium reaches).
    package static func physical(unixSeconds t: Double) -> UInt64 {
        guard t.isFinite, t > 0, t * 1000 < Double(1 << 48) else { return 0 }
        return UInt64(t * 1000) << 16
    }

    /// Moves the clock past a value seen in a remote segment.
    package mutating func observe(_ remote: UInt64) { hlc = max(hlc, remote) }

    // MARK: Encoding

    static let magic = Array("LKsyncST".utf8)
    static let version: UInt16 = 3

    static func writeBytes(_ w: inout ByteWriter, _ b: [UInt8]) {
        w.writeInteger(UInt32(b.count))
        w.writeBytes(b)
    }

    static func writeOptional(_ w: inout ByteWriter, _ b: [UInt8]?) {
        w.writeInteger(UInt8(b == nil ? 0 : 1))
        if let b { writeBytes(&w, b) }
    }

    static func writeVersion(_ w: inout ByteWriter, _ v: ItemVersion?) {
        w.writeInteger(UInt8(v == nil ? 0 : 1))
        guard let v else { return }
        w.writeInteger(v.hlc)
        w.writeBytes(v.device)
        w.writeInteger(v.number)
        w.writeInteger(v.index)
        w.writeInteger(v.kind.rawValue)
        w.writeInteger(v.protection)
        writeOptional(&w, v.content)
        writeOptional(&w, v.unique)
    }

    static func readBytes(_ r: inout ByteReader) throws -> [UInt8] {
        let n = Int(try r.readInteger(as: UInt32.self, "length"))
        return try r.readBytes(count: n, "bytes")
    }

    static func readOptional(_ r: inout ByteReader) throws -> [UInt8]? {
        try r.readInteger(as: UInt8.self, "flag") == 0 ? nil : try readBytes(&r)
    }

    static func readVersion(_ r: inout ByteReader) throws -> ItemVersion? {
        guard try r.readInteger(as: UInt8.self, "flag") != 0 else { return nil }
        let hlc: UInt64 = try r.readInteger("hlc")
        let device = try r.readBytes(count: 16, "device")
        let number: UInt64 = try r.readInteger("number")
        let index: UInt32 = try r.readInteger("index")
        guard let kind = SegmentEntry.Kind(rawValue: try r.readInteger("kind")) else {
            throw SyncFormatError("state: kind")
        }
        return ItemVersion(
            hlc: hlc, device: device, number: number, index: index, kind: kind,
            protection: try r.readInteger("protection"), content: try readOptional(&r), unique: try readOptional(&r))
    }

    static func sortedIDs<S: Sequence>(_ ids: S) -> [SyncID] where S.Element == SyncID {
        ids.sorted { $0.lexicographicallyPrecedes($1) }
    }

    package func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 4096 + 16 * items.unsettled.count)
        w.writeInteger(Self.version)
        Self.writeBytes(&w, Array(remote.utf8))
        w.writeBytes(circle)
        w.writeBytes(device)
        w.writeInteger(UInt32(chain.count))
        for h in chain { w.writeBytes(h) }
        Self.writeOptional(&w, appliedAt)
        w.writeInteger(UInt32(applied.count))
        for (d, a) in applied.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            w.writeBytes(d)
            w.writeInteger(a.number)
            w.writeBytes(a.hash)
        }
        w.writeInteger(own.number)
        w.writeBytes(own.hash)
        w.writeInteger(pushed)
        w.writeInteger(UInt32(outbox.count))
        for (n, b) in outbox.sorted(by: { $0.key < $1.key }) {
            w.writeInteger(n)
            Self.writeBytes(&w, b)
        }
        w.writeInteger(hlc)
        Self.writeBytes(&w, keychainFile)
        w.writeInteger(keychainSequence)
        w.writeInteger(generation)
        w.writeInteger(historyDays)
        w.writeInteger(acknowledgedAt.bitPattern)
        w.writeInteger(baseThrough)
        for g in items.itemGenerations { w.writeInteger(g) }
        for g in items.uniqueGenerations { w.writeInteger(g) }
        w.writeInteger(UInt32(items.liveCount))
        w.writeInteger(UInt32(items.unsettled.count))
        for id in Self.sortedIDs(items.unsettled) { w.writeBytes(id) }
        w.writeInteger(UInt32(pending.count))
        for p in pending.sorted(by: {
            $0.device != $1.device
                ? $0.device.lexicographicallyPrecedes($1.device) : ($0.number, $0.index) < ($1.number, $1.index)
        }) {
            w.writeBytes(p.device)
            w.writeInteger(p.number)
            w.writeInteger(p.index)
        }
        return w.bytes
    }

    package static func decode(_ input: [UInt8]) throws -> SyncState {
        var r = ByteReader(input)
        guard try r.readInteger(as: UInt16.self, "state version") == version else {
            throw SyncFormatError("state: unknown version")
        }
        let remote = String(decoding: try readBytes(&r), as: UTF8.self)
        var s = SyncState(
            remote: remote, circle: try r.readBytes(count: 16, "circle"), device: try r.readBytes(count: 16, "device"),
            chain: [])
        for _ in 0..<(try r.readInteger(as: UInt32.self, "chain")) {
            s.chain.append(try r.readBytes(count: 32, "hash"))
        }
        s.appliedAt = try readOptional(&r)
        for _ in 0..<(try r.readInteger(as: UInt32.self, "applied")) {
            let d = try r.readBytes(count: 16, "device")
            s.applied[d] = AppliedChain(number: try r.readInteger("number"), hash: try r.readBytes(count: 32, "hash"))
        }
        s.own = AppliedChain(number: try r.readInteger("own"), hash: try r.readBytes(count: 32, "own hash"))
        s.pushed = try r.readInteger("pushed")
        for _ in 0..<(try r.readInteger(as: UInt32.self, "outbox")) {
            let n: UInt64 = try r.readInteger("number")
            s.outbox[n] = try readBytes(&r)
        }
        s.hlc = try r.readInteger("hlc")
        s.keychainFile = try readBytes(&r)
        s.keychainSequence = try r.readInteger("sequence")
        s.generation = try r.readInteger("generation")
        s.historyDays = try r.readInteger("history days")
        s.acknowledgedAt = Double(bitPattern: try r.readInteger("acknowledged at"))
        s.baseThrough = try r.readInteger("base through")
        let items = try (0..<ItemTable.pageCount).map { _ in try r.readInteger(as: UInt64.self, "item page") }
        let unique = try (0..<ItemTable.pageCount).map { _ in try r.readInteger(as: UInt64.self, "unique page") }
        guard (items + unique).allSatisfy({ $0 <= s.generation }) else {
            throw SyncFormatError("state: a page newer than the state")
        }
        let live = Int(try r.readInteger(as: UInt32.self, "live"))
        let n = Int(try r.readInteger(as: UInt32.self, "unsettled"))
        guard n <= r.remaining / 16 else { throw SyncFormatError("state: unsettled count") }
        var unsettled = Set<SyncID>(minimumCapacity: n)
        for _ in 0..<n { unsettled.insert(try r.readBytes(count: 16, "id")) }
        s.items = ItemTable(itemGenerations: items, uniqueGenerations: unique, liveCount: live, unsettled: unsettled)
        for _ in 0..<(try r.readInteger(as: UInt32.self, "pending")) {
            s.pending.insert(
                PendingEntry(
                    device: try r.readBytes(count: 16, "device"), number: try r.readInteger("number"),
                    index: try r.readInteger("index")))
        }
        try r.expectEnd("state")
        return s
    }
}

/// How the last sync ended (`<keychain>.sync/status`, §9.1): written after every sync, small,
/// holding no secret (times, messages that name machines and the remote).
package struct SyncStatus: Equatable, Sendable {
    package var lastSync: Double = 0
    /// Empty: the last sync succeeded.
    package var lastError: String = ""
    package var warnings: [String] = []

    package init(lastSync: Double = 0, lastError: String = "", warnings: [String] = []) {
        self.lastSync = lastSync
        self.lastError = lastError
        self.warnings = warnings
    }

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.writeBytes(Array("LKsyncSt".utf8))
        w.writeInteger(lastSync.bitPattern)
        // At most 100 warnings of 4 KiB: the file stays small whatever a remote makes us report.
        for s in [lastError] + warnings.prefix(100) {
            let b = Array(s.utf8.prefix(4096))
            w.writeInteger(UInt32(b.count))
            w.writeBytes(b)
        }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) -> SyncStatus? {
        var r = ByteReader(bytes)
        guard (try? r.readBytes(count: 8, "magic")) == Array("LKsyncSt".utf8),
            let t = try? r.readInteger(as: UInt64.self, "time")
        else { return nil }
        var texts: [String] = []
        while r.remaining > 0 {
            guard let n = try? r.readInteger(as: UInt32.self, "length"), let b = try? r.readBytes(count: Int(n), "text")
            else { return nil }
            texts.append(String(decoding: b, as: UTF8.self))
        }
        return SyncStatus(
            lastSync: Double(bitPattern: t), lastError: texts.first ?? "", warnings: Array(texts.dropFirst()))
    }
}
