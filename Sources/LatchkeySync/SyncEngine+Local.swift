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
    func scanLocal(_ state: inout SyncState, _ fresh: inout [SyncID: Fresh], _ report: inout SyncReport) throws
        -> [LocalChange]
    {
        try store.refresh()
        let sequence = store.lastSequence
        let file = store.fileUUID
        guard file != state.keychainFile || sequence != state.keychainSequence else { return [] }
        let since = file == state.keychainFile ? state.keychainSequence : 0
        var changes: [LocalChange] = []
        var live = Set<SyncID>()
        var changed: [StoredItem] = []
        try store.liveItemSnapshot().forEach { item in
            if item.sequence > since {
                changed.append(item)
                live.insert(item.uuid)
            } else if state.items[item.uuid]?.materialized != nil {
                live.insert(item.uuid)
            }
        }
        var skipped = false
        for item in changed {
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
            var hlc = Self.physical(p.attributes["mdat"])
            if let w = known?.winner, known?.materialized == w.content { hlc = max(hlc, w.hlc + 1) }
            if hlc == 0 { hlc = state.tick(now: now()) }
            state.observe(hlc)
            changes.append(LocalChange(id: item.uuid, plaintext: p, protection: c.protection, hlc: hlc))
            var entry = state.items[item.uuid] ?? SyncedItem()
            entry.materialized = digest
            state.items[item.uuid] = entry
        }
        for (id, item) in state.items where item.materialized != nil && !live.contains(id) {
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
        let unix = t + 978_307_200
        return unix > 0 ? UInt64(unix * 1000) << 16 : 0
    }

    // MARK: Unique keys (§8.3)

    /// Among live items with the same unique key, the newest winner stays; each other one
    /// gets a delete from this machine (and is kept in history).
    func resolveConflicts(
        _ state: inout SyncState, _ fresh: inout [SyncID: Fresh], local: inout [LocalChange],
        _ report: inout SyncReport
    ) throws {
        var touched = Set(fresh.keys)
        for c in local where c.plaintext != nil { touched.insert(c.id) }
        var wanted = Set<[UInt8]>()
        for id in touched {
            if let i = state.items[id], i.isLive, let u = i.winner?.unique { wanted.insert(u) }
        }
        guard !wanted.isEmpty else { return }
        var groups: [[UInt8]: [SyncID]] = [:]
        for (id, i) in state.items where i.isLive {
            if let u = i.winner?.unique, wanted.contains(u) { groups[u, default: []].append(id) }
        }
        for (_, ids) in groups where ids.count > 1 {
            let keep = ids.max { !state.items[$0]!.winner!.beats(state.items[$1]!.winner!) }!
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
        for i in start..<changes.count {
            let c = changes[i]
            var v = ItemVersion(
                hlc: c.hlc, device: state.device, number: state.own.number + 1, index: UInt32(i),
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

    // MARK: Writing this machine's segment (§7)

    func writeSegment(_ changes: [LocalChange], _ circle: Circle, _ tree: RemoteTree, _ state: inout SyncState)
        throws
    {
        guard !changes.isEmpty else { return }
        let me = try requireIdentity()
        let keys = try keys(epoch: circle.epoch, circle: circle, tree: tree)
        var seg = Segment(
            circle: state.circle, device: state.device, number: state.own.number + 1, previous: state.own.hash,
            epoch: circle.epoch,
            seen: state.applied.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map {
                Segment.Seen(device: $0.key, number: $0.value.number, hash: $0.value.hash)
            }, entries: [])
        for (i, c) in changes.enumerated() {
            let kind: SegmentEntry.Kind = c.plaintext == nil ? .delete : .put
            let sc: SyncClass = kind == .delete ? .always : SyncClass(c.protection)!
            guard let classKey = keys.keys[sc] else {
                throw KeychainError(.interactionNotAllowed, "the sync key of class \(sc.protection.code) is locked here")
            }
            let entry = SegmentEntry(
                syncID: c.id, hlc: c.hlc, kind: kind, protection: kind == .delete ? 0 : sc.rawValue,
                nonce: try Crypto.randomBytes(12), sealed: [])
            seg.entries.append(entry)
            var key = try Segment.entryKey(classKey, circle: seg.circle, device: seg.device, number: seg.number)
                .copyBytes()
            defer { Crypto.cleanse(&key) }
            let sealed = try Crypto.aesGCMSeal(
                key: key, nonce: entry.nonce, aad: seg.aad(i), plaintext: c.plaintext?.encode() ?? [])
            seg.entries[i].sealed = sealed.ciphertext + sealed.tag
        }
        seg.signature = try me.sign(seg.signedBytes)
        let bytes = seg.bytes
        state.outbox[seg.number] = bytes
        state.own = AppliedChain(number: seg.number, hash: Crypto.sha256(bytes))
    }

    // MARK: Applying the merge to this keychain (§8.5)

    func apply(
        _ state: inout SyncState, _ fresh: inout [SyncID: Fresh], _ tree: RemoteTree, _ circle: Circle,
        _ report: inout SyncReport
    ) throws {
        var work: [(SyncID, SyncedItem)] = []
        for (id, item) in state.items {
            let desired = item.isLive ? item.winner!.content : nil
            if item.isLive, desired == nil {
                report.waiting += 1
                continue
            }
            if desired != item.materialized { work.append((id, item)) }
        }
        guard !work.isEmpty else { return }
        var warnings: [String] = []
        var deleted = Set<SyncID>()
        // Deletes first, so that a put can take the unique key of an item deleted here.
        work.sort { !$0.1.isLive && $1.1.isLive }
        try store.withStreamingTransaction { tx in
            for (id, item) in work {
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
                if let f = fresh[id], f.version == w {
                    plaintext = f.plaintext
                } else {
                    plaintext = try reload(w, id, tree, circle, outbox: state.outbox)
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
                try tx.put(uuid: id, plaintext: plaintext, protection: ProtectionClass(rawValue: w.protection)!, flags: 0)
                state.items[id]!.materialized = w.content
                report.receivedPuts += 1
            }
        }
        report.warnings += warnings
    }

    /// The plaintext of a version, read again from its segment in the fetched remote.
    func reload(_ v: ItemVersion, _ id: SyncID, _ tree: RemoteTree, _ circle: Circle, outbox: [UInt64: [UInt8]])
        throws -> ItemPlaintext
    {
        let own = v.device == (try requireIdentity()).device ? outbox[v.number] : nil
        guard let b = own ?? tree.contents(RemoteTree.segmentPath(v.device, v.number)), let seg = try? Segment.decode(b),
            Int(v.index) < seg.entries.count, seg.entries[Int(v.index)].syncID == id
        else { throw KeychainError(.decode, "a synced version is missing from the remote") }
        guard case let (_, p?) = try open(seg, Int(v.index), try keys(epoch: seg.epoch, circle: circle, tree: tree)) else {
            throw KeychainError(.interactionNotAllowed, "the sync key of this item's class is locked here")
        }
        return p
    }
}
