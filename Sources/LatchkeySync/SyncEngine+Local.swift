import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// A change made in this keychain since the last sync.
struct LocalChange {
    var id: SyncID
    /// nil: a delete.
    var plaintext: ItemPlaintext?
    var protection: ProtectionClass
    var hlc: UInt64
}

extension SyncEngine {
    // MARK: This keychain's changes (§9.2)

    /// The synchronizable items written or deleted here since the last sync: the live items
    /// whose newest put is above the sequence number reached then, and the synced items no
    /// longer live. Items of a class locked here are left for a later sync.
    func scanLocal(_ state: inout SyncState, _ fresh: inout FreshPuts, _ report: inout SyncReport) throws
        -> [LocalChange]
    {
        try store.refresh()
        let sequence = store.lastSequence
        let file = store.fileUUID
        guard file != state.keychainFile || sequence != state.keychainSequence else { return [] }
        let since = file == state.keychainFile ? state.keychainSequence : 0
        var changes: [LocalChange] = []
        var changed: [StoredItem] = []
        /// The synced items no longer live here.
        var gone: [SyncID] = []
        if file == state.keychainFile, let feed = try store.changedItems(since: since) {
            // The records after the index: O(changes), no page of the index read.
            changed = feed.live
            for id in feed.deleted where state.items[id]?.materialized != nil {
                if try store.liveItem(uuid: id) == nil { gone.append(id) }
            }
        } else {
            var live = Set<SyncID>()
            try store.liveItemSnapshot().forEach { item in
                if item.sequence > since {
                    changed.append(item)
                    live.insert(item.uuid)
                } else if state.items[item.uuid]?.materialized != nil {
                    live.insert(item.uuid)
                }
            }
            for (id, item) in state.items.all() where item.materialized != nil && !live.contains(id) { gone.append(id) }
        }
        var skipped = false
        for item in changed {
            // What apply itself wrote at the last sync: no need to read it again (in the same
            // file only: another file, a restored copy, numbers its records afresh).
            if file == state.keychainFile, let known = state.items[item.uuid], known.materialized != nil,
                known.materializedSequence == item.sequence
            {
                continue
            }
            guard let c = SyncClass(item.protection) else {
                // Never synchronizable (ThisDeviceOnly): it may have left the sync set.
                if let known = state.items[item.uuid], known.materialized != nil {
                    state.items[item.uuid]!.materialized = nil
                    if known.isLive { changes.append(try deletion(item.uuid, &state)) }
                }
                continue
            }
            guard store.canWrite(item.protection) else {
                skipped = true
                continue
            }
            let p = try store.read(item)
            let known = state.items[item.uuid]
            let syncable = p.attributes["sync"] == .integer(1) && item.flags & ItemPutPayload.userPresenceFlag == 0
            if let known, !known.isLive, known.winner != nil || known.deleted != nil {
                // Deleted elsewhere (or lost a conflict): a restored or lagging copy, removed by apply.
                if syncable {
                    state.items[item.uuid]!.materialized = Self.contentDigest(p)
                    if known.materialized == nil { report.resurrectionsRemoved += 1 }
                }
                continue
            }
            guard syncable else {
                if let known, known.materialized != nil {
                    state.items[item.uuid]!.materialized = nil
                    changes.append(try deletion(item.uuid, &state))
                }
                continue
            }
            let digest = Self.contentDigest(p)
            if let w = known?.winner, w.content == digest {
                state.items[item.uuid]!.materialized = digest
                continue
            }
            // The edit's time is its mdat; it descends from the version this keychain held.
            // Never later than now: a date far ahead (FORMAT §8.2 allows any) must not win forever.
            var hlc = min(Self.physical(p.attributes["mdat"]), SyncState.physical(unixSeconds: now()))
            if let w = known?.winner, known?.materialized == w.content, w.hlc < .max { hlc = max(hlc, w.hlc + 1) }
            if hlc == 0 { hlc = state.tick(now: now()) }
            state.observe(hlc)
            changes.append(LocalChange(id: item.uuid, plaintext: p, protection: c.protection, hlc: hlc))
            var entry = state.items[item.uuid] ?? SyncedItem()
            entry.materialized = digest
            state.items[item.uuid] = entry
        }
        for id in gone {
            let item = state.items[id]!
            state.items[id]!.materialized = nil
            if item.isLive { changes.append(try deletion(id, &state)) }
        }
        if !skipped {
            state.keychainFile = file
            state.keychainSequence = sequence
        }
        return changes
    }

    func deletion(_ id: SyncID, _ state: inout SyncState) throws -> LocalChange {
        LocalChange(id: id, plaintext: nil, protection: .always, hlc: state.tick(now: now()))
    }

    /// The hybrid-clock value of a date attribute: milliseconds since 1970 in the high 48 bits.
    static func physical(_ v: AttributeValue?) -> UInt64 {
        guard case .date(let t)? = v else { return 0 }
        return SyncState.physical(unixSeconds: t + 978_307_200)
    }

    // MARK: Unique keys (§8.3)

    /// Among live items with the same unique key, the newest winner stays; each other one
    /// gets a delete from this machine (and is kept in history).
    func resolveConflicts(
        _ state: inout SyncState, _ fresh: inout FreshPuts, local: inout [LocalChange],
        _ report: inout SyncReport
    ) throws {
        var touched = fresh.ids
        for c in local where c.plaintext != nil { touched.insert(c.id) }
        var wanted = Set<[UInt8]>()
        for id in touched {
            if let i = state.items[id], i.isLive, let u = i.winner?.unique { wanted.insert(u) }
        }
        guard !wanted.isEmpty else { return }
        // The unique pages list the live items of each digest (`ItemTable`): no scan of them all.
        for u in SyncState.sortedIDs(wanted) {
            let ids = state.items.ids(unique: u)
            guard ids.count > 1 else { continue }
            // The newest winner; on a tie of clock and machine (two items one machine wrote in
            // the same tick), the larger sync id.
            let keep = ids.max { a, b in
                let (va, vb) = (state.items[a]!.winner!, state.items[b]!.winner!)
                if va.hlc == vb.hlc && va.device == vb.device { return a.lexicographicallyPrecedes(b) }
                return vb.beats(va)
            }!
            for id in ids where id != keep {
                state.items[id]!.shadowedBy = keep
                report.conflicts += 1
                local.append(try deletion(id, &state))
                try stage(local, from: local.count - 1, &state)
            }
        }
    }

    /// Merges this machine's changes, as the versions its next segment will hold, into the state.
    func stage(_ changes: [LocalChange], from start: Int, _ state: inout SyncState) throws {
        let places = Self.places(changes)
        for i in start..<changes.count {
            let c = changes[i]
            var v = ItemVersion(
                hlc: c.hlc, device: state.device, number: state.own.number + 1 + places[i].segment,
                index: UInt32(places[i].index),
                kind: c.plaintext == nil ? .delete : .put,
                protection: c.plaintext == nil ? 0 : c.protection.rawValue)
            if let p = c.plaintext {
                v.content = Self.contentDigest(p)
                v.unique = try uniqueDigest(p)
            }
            var item = state.items[c.id] ?? SyncedItem()
            item.merge(v)
            state.items[c.id] = item
        }
    }

    // MARK: Writing this machine's segments (§7)

    /// At most this many entries, and about this many bytes, go into one segment (§7.4): a
    /// large first sync is split, and every segment stays far below what a reader accepts.
    static let segmentEntries = 4096
    static let segmentBytes = 32 << 20

    /// Where each change goes: the segment (0 = the next one) and its index there.
    static func places(_ changes: [LocalChange]) -> [(segment: UInt64, index: Int)] {
        var out: [(UInt64, Int)] = []
        var segment: UInt64 = 0
        var index = 0
        var bytes = 0
        for c in changes {
            let size = 64 + (c.plaintext?.encodedSize ?? 0)
            if index > 0, index >= segmentEntries || bytes + size > segmentBytes {
                segment += 1
                index = 0
                bytes = 0
            }
            out.append((segment, index))
            index += 1
            bytes += size
        }
        return out
    }

    func writeSegment(_ changes: [LocalChange], _ circle: Circle, _ tree: RemoteTree, _ state: inout SyncState)
        throws
    {
        guard !changes.isEmpty else { return }
        let places = Self.places(changes)
        var start = 0
        while start < changes.count {
            var end = start
            while end < changes.count, places[end].segment == places[start].segment { end += 1 }
            try writeOneSegment(Array(changes[start..<end]), circle, tree, &state)
            start = end
        }
    }

    private func writeOneSegment(
        _ changes: [LocalChange], _ circle: Circle, _ tree: RemoteTree, _ state: inout SyncState
    ) throws {
        let keys = try keys(epoch: circle.epoch, circle: circle, tree: tree)
        var seg = Segment(
            circle: state.circle, device: state.device, number: state.own.number + 1, previous: state.own.hash,
            epoch: circle.epoch,
            seen: state.seenRecords, entries: [])
        for c in changes {
            let kind: SegmentEntry.Kind = c.plaintext == nil ? .delete : .put
            seg.entries.append(
                SegmentEntry(
                    syncID: c.id, hlc: c.hlc, kind: kind,
                    protection: kind == .delete ? 0 : SyncClass(c.protection)!.rawValue,
                    nonce: try Crypto.randomBytes(12), sealed: []))
        }
        try seal(&seg, plaintexts: changes.map { $0.plaintext?.encode() ?? [] }, keys)
        let bytes = seg.bytes
        state.outbox[seg.number] = bytes
        state.own = AppliedChain(number: seg.number, hash: Crypto.sha256(bytes))
    }

    /// Seals every entry of `seg` under `keys` (the keys of `seg.epoch`) and signs it.
    func seal(_ seg: inout Segment, plaintexts: [[UInt8]], _ keys: EpochKeys) throws {
        try seg.seal(plaintexts: plaintexts, keys: keys, author: try requireIdentity())
    }

    /// Seals the segments not yet pushed again under the newest epoch, when the circle moved
    /// on (a machine was removed) before they reached the remote: the removed machine must not
    /// read them (§7.4). Their entries and numbers stay; their hashes change.
    func resealOutbox(_ circle: Circle, _ tree: RemoteTree, _ state: inout SyncState) throws {
        let unpushed = state.outbox.sorted { $0.key < $1.key }
        guard let first = unpushed.first,
            unpushed.contains(where: { (try? Segment.decode($0.value))?.epoch != circle.epoch })
        else { return }
        var previous = (try Segment.decode(first.value)).previous
        let newKeys = try keys(epoch: circle.epoch, circle: circle, tree: tree)
        for (n, bytes) in unpushed {
            var seg = try Segment.decode(bytes)
            let oldKeys = try keys(epoch: seg.epoch, circle: circle, tree: tree)
            var plaintexts: [[UInt8]] = []
            for i in seg.entries.indices {
                guard let plain = try seg.openEntry(i, keys: oldKeys) else {
                    throw KeychainError(
                        .interactionNotAllowed,
                        "the sync key of class \(seg.entries[i].syncClass.protection.code) is locked here")
                }
                plaintexts.append(plain)
                seg.entries[i].nonce = try Crypto.randomBytes(12)
            }
            seg.epoch = circle.epoch
            seg.previous = previous
            try seal(&seg, plaintexts: plaintexts, newKeys)
            for i in plaintexts.indices { Crypto.cleanse(&plaintexts[i]) }
            let resealed = seg.bytes
            state.outbox[n] = resealed
            previous = Crypto.sha256(resealed)
            state.own = AppliedChain(number: n, hash: previous)
        }
    }

    // MARK: Applying the merge to this keychain (§8.5)

    func apply(
        _ state: inout SyncState, _ fresh: inout FreshPuts, _ tree: RemoteTree, _ circle: Circle,
        _ report: inout SyncReport
    ) throws {
        try state.items.check()
        // What to write, with where each put's winner is: small, as a first sync lists every item.
        struct Work {
            var id: SyncID
            var live: Bool
            var device: SyncID
            var number: UInt64
            var index: UInt32
        }
        var work: [Work] = []
        // Only the unsettled items can differ from what the keychain holds (`ItemTable`).
        for id in state.items.unsettled {
            guard let item = state.items[id] else { continue }
            let desired = item.isLive ? item.winner!.content : nil
            if item.isLive, desired == nil {
                report.waiting += 1
                continue
            }
            if desired != item.materialized {
                let w = item.winner
                work.append(
                    Work(
                        id: id, live: item.isLive, device: w?.device ?? [], number: w?.number ?? 0, index: w?.index ?? 0
                    ))
            }
        }
        guard !work.isEmpty else { return }
        var warnings: [String] = []
        var deleted = Set<SyncID>()
        // Deletes first, so that a put can take the unique key of an item deleted here; the puts
        // in the order of their segments, each read again at most once (`verifiedSegment`).
        work.sort { a, b in
            if a.live != b.live { return !a.live }
            if a.device != b.device { return a.device.lexicographicallyPrecedes(b.device) }
            if (a.number, a.index) != (b.number, b.index) { return (a.number, a.index) < (b.number, b.index) }
            return a.id.lexicographicallyPrecedes(b.id)
        }
        try store.withStreamingTransaction { tx in
            for entry in work {
                let id = entry.id
                let item = state.items[id]!
                if !item.isLive {
                    if let local = try store.liveItem(uuid: id) {
                        guard store.canWrite(local.protection) else {
                            report.waiting += 1
                            continue
                        }
                        let p = try store.read(local)
                        if p.attributes["sync"] == .integer(1) {
                            try tx.delete(uuid: id)
                            deleted.insert(id)
                            report.receivedDeletes += 1
                        }
                    }
                    state.items[id]!.materialized = nil
                    continue
                }
                let w = item.winner!
                guard store.canWrite(ProtectionClass(rawValue: w.protection)!) else {
                    report.waiting += 1
                    continue
                }
                let plaintext: ItemPlaintext
                if let f = fresh.puts[id], f.version == w {
                    let encoded = f.encoded
                    plaintext = try ItemPlaintext.decode(encoded)
                } else {
                    plaintext = try reload(w, id, tree, circle, outbox: state.outbox)
                }
                if let local = try store.liveItem(uuid: id), item.materialized == nil {
                    // Something here holds this id and is not a synced copy of it: never overwritten.
                    guard store.canWrite(local.protection) else {
                        report.waiting += 1
                        continue
                    }
                    if try SyncClass(local.protection) == nil || store.read(local).attributes["sync"] != .integer(1) {
                        warnings.append(
                            "an item here has the id of a synced item and does not sync; it was left as it is")
                        continue
                    }
                }
                let unique = UniqueKey(itemClass: plaintext.itemClass, attributes: plaintext.attributes)
                var blocked = false
                for other in try tx.conflicts(uuid: id, uniqueKey: unique) where other.uuid != id {
                    if deleted.contains(other.uuid) { continue }
                    if let o = state.items[other.uuid], !o.isLive {
                        deleted.insert(other.uuid)
                        try tx.delete(uuid: other.uuid)
                        state.items[other.uuid]!.materialized = nil
                    } else {
                        blocked = true
                    }
                }
                if blocked {
                    warnings.append("an item could not be written: another item here has its unique key")
                    continue
                }
                try tx.put(
                    uuid: id, plaintext: plaintext, protection: ProtectionClass(rawValue: w.protection)!, flags: 0)
                state.items[id]!.materialized = w.content
                report.receivedPuts += 1
            }
        }
        report.warnings += warnings
        // The sequence numbers of the puts just written: the next scan skips them unread.
        for entry in work where entry.live {
            let id = entry.id
            if let item = state.items[id], item.isLive, item.materialized == item.winner?.content,
                let s = try store.liveItem(uuid: id)
            {
                state.items[id]!.materializedSequence = s.sequence
            }
        }
    }

    /// The plaintext of a version, read again from its segment (verified again) and checked
    /// against the digest the merge recorded.
    func reload(_ v: ItemVersion, _ id: SyncID, _ tree: RemoteTree, _ circle: Circle, outbox: [UInt64: [UInt8]])
        throws -> ItemPlaintext
    {
        let seg = try verifiedSegment(v.device, v.number, tree, circle, outbox: outbox)
        guard Int(v.index) < seg.entries.count, seg.entries[Int(v.index)].syncID == id else {
            throw KeychainError(.decode, "a synced version is missing from the remote")
        }
        guard
            case let (opened, p?) = try open(seg, Int(v.index), try keys(epoch: seg.epoch, circle: circle, tree: tree))
        else {
            throw KeychainError(.interactionNotAllowed, "the sync key of this item's class is locked here")
        }
        guard opened.content == v.content else {
            throw KeychainError(.decode, "a synced version read again from the remote differs from the one merged")
        }
        return p
    }

    /// A segment read again after it was applied: from the outbox for this machine's own, else
    /// from the remote, with its fields and signature checked as when it was applied (§7.2).
    func verifiedSegment(
        _ device: SyncID, _ number: UInt64, _ tree: RemoteTree, _ circle: Circle, outbox: [UInt64: [UInt8]]
    ) throws -> Segment {
        if let c = segmentCache, c.device == device, c.number == number { return c.segment }
        let own = device == (try requireIdentity()).device ? outbox[number] : nil
        guard let bytes = own ?? tree.contents(RemoteTree.segmentPath(device, number)) else {
            // Gone with the segments a base replaces: the entries the base kept of it (§7.5).
            var ignored: [String] = []
            if let base = verifiedBase(device, tree, circle, warnings: &ignored),
                let seg = segmentFromBase(base, device, number, circle: circle.head.circle)
            {
                segmentCache = (device, number, seg)
                return seg
            }
            throw KeychainError(
                .decode, "segment \(number) of \(hexString(device.prefix(4))) is missing from the remote")
        }
        guard let seg = try? Segment.decode(bytes), seg.device == device, seg.number == number,
            seg.circle == circle.head.circle, let member = circle.anyMember(device),
            Crypto.ed25519Verify(publicKey: member.signingKey, message: seg.signedBytes, signature: seg.signature)
        else {
            throw KeychainError(.decode, "segment \(number) of \(hexString(device.prefix(4))) no longer verifies")
        }
        segmentCache = (device, number, seg)
        return seg
    }
}
