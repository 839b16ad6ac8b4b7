import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// A decrypted remote or local version waiting to be written into the keychain.
/// A put decrypted in this sync that won: its plaintext as the entry held it (encoded, which
/// takes a fraction of the memory of the decoded attributes: a first sync holds every item).
struct Fresh {
    var version: ItemVersion
    var encoded: [UInt8]
}

/// The items whose winner a remote put of this sync is, and the plaintexts of those puts up to
/// `SyncEngine.freshBudget` bytes: applying reads the others from their segments again.
struct FreshPuts {
    var ids = Set<SyncID>()
    var puts: [SyncID: Fresh] = [:]
}

extension SyncEngine {
    /// Fetches, merges, applies and pushes (spec/SYNC.md §8–§9). A push refused because
    /// another machine pushed first is fetched, merged and retried.
    /// - Throws: when the remote was rolled back or rewritten (nothing applied or pushed),
    ///   when this machine is not (or no longer) a member, and transport and keychain errors;
    ///   the error is also kept for `status`.
    @discardableResult
    package func sync() throws -> SyncReport {
        try locked {
            try step("start")
            do {
                var loaded: SyncState?
                try withKeychain { loaded = try load() }
                guard var state = loaded else { throw KeychainError(.notAvailable, "the keychain was not available") }
                try step("loaded")
                let report = try syncLocked(&state)
                // The state itself was saved before the push (the segments pushed are found on
                // the remote by the next sync); only the outcome is written now, to a small file.
                try saveStatus(SyncStatus(lastSync: now(), lastError: "", warnings: report.warnings))
                try step("status saved")
                return report
            } catch {
                var status = (try? loadStatus()) ?? SyncStatus()
                status.lastError = "\(error)"
                try? saveStatus(status)
                throw error
            }
        }
    }

    private func syncLocked(_ state: inout SyncState) throws -> SyncReport {
        var report = SyncReport()
        let t = transport(state.remote)
        var attempt = 0
        var saved = state
        while true {
            keyCache = [:]
            segmentCache = nil
            baseCache = [:]
            freshBytes = 0
            guard try t.fetch() else {
                throw KeychainError(
                    .itemNotFound,
                    "the remote \(redacted(state.remote)) holds no circle (was it emptied?); nothing was changed")
            }
            try step("fetched")
            let tree = RemoteTree(root: t.directory)
            // The keychain is used from here to the state's save only: the network steps
            // (fetch, push) hold nothing a request to the keychain would wait for (the agent).
            var approvedNotYet = false
            var verified: Circle?
            try withKeychain {
                let circle = try Circle.verify(tree, circle: state.circle, pinned: state.chain)
                verified = circle
                if let saw = state.appliedAt {
                    guard circle.head.member(state.device) != nil else {
                        try requireMember(circle, state)
                        approvedNotYet = true
                        return
                    }
                    guard circle.hashes.contains(saw) else {
                        throw KeychainError(
                            .authFailed, "the circle that approved this machine is not the one it saw when it applied")
                    }
                    state.appliedAt = nil
                }
                try requireMember(circle, state)
                state.chain = circle.hashes
                var fresh = FreshPuts()
                try checkOwn(tree, &state)
                try resealOutbox(circle, tree, &state)
                // This keychain's changes are read against the state of the last sync, before the
                // remote's new versions are merged: an edit descends from what the keychain held.
                try step("checked own")
                var local = try scanLocal(&state, &fresh, &report)
                try step("scanned local")
                try ingest(tree, circle, &state, &fresh, &report)
                try step("ingested")
                // A put found here that equals the merged winner is a remote version this keychain
                // already holds (applied by a sync that stopped before it saved its state).
                local.removeAll { c in
                    guard let p = c.plaintext, let w = state.items[c.id]?.winner else { return false }
                    return w.content == Self.contentDigest(p)
                }
                try stage(local, from: 0, &state)
                try resolveConflicts(&state, &fresh, local: &local, &report)
                try writeSegment(local, circle, tree, &state)
                report.sentPuts += local.filter { $0.plaintext != nil }.count
                report.sentDeletes += local.filter { $0.plaintext == nil }.count
                try step("segment written")
                try apply(&state, &fresh, tree, circle, &report)
                try step("applied")
                // Nothing changed (nothing received, sent or applied): nothing to write.
                if state.differs(from: saved) {
                    try save(&state)
                    saved = state
                }
                try step("saved")
            }
            if approvedNotYet { break }
            guard let circle = verified else { break }
            let unpushed = state.outbox.sorted { $0.key < $1.key }
            // The acknowledgement, and a base with the segments it replaces, when due (§7.5).
            let extra = try housekeeping(tree, circle, state, publishing: !unpushed.isEmpty)
            if unpushed.isEmpty && extra.files.isEmpty && extra.removing.isEmpty { break }
            do {
                try t.publish(
                    unpushed.map { (RemoteTree.segmentPath(state.device, $0.key), $0.value) } + extra.files,
                    removing: extra.removing,
                    message: unpushed.isEmpty ? "latchkey: housekeeping" : "latchkey: segment \(unpushed.last!.key)")
                if let last = unpushed.last?.key {
                    state.pushed = last
                    state.outbox = [:]
                    try savePushed(state.pushed)
                }
                let acknowledged = extra.files.contains { $0.0 == RemoteTree.acknowledgementPath(state.device) }
                if acknowledged || extra.base != nil {
                    // When this machine last acknowledged (at most once a day alone), and how far
                    // its base reaches now.
                    if acknowledged { state.acknowledgedAt = now() }
                    if let through = extra.base { state.baseThrough = through }
                    try withKeychain { try save(&state) }
                }
                try step("pushed")
                break
            } catch TransportError.behind where attempt < maxRetries {
                attempt += 1
                report.retries += 1
            }
        }
        return report
    }

    // MARK: Own segments on the remote

    /// The remote must hold every segment this machine pushed, as it wrote it, and none it
    /// did not write; segments in the outbox that the remote now holds count as pushed (§9.3).
    private func checkOwn(_ tree: RemoteTree, _ state: inout SyncState) throws {
        let mine = tree.numbered(state.device, "seg")
        let top = mine.keys.max() ?? 0
        // This machine's base reaches as far as it recorded (its header says; the readers check
        // the rest), or farther (one it published and did not record, §7.5).
        if state.baseThrough > 0 {
            let header = tree.prefix(RemoteTree.basePath(state.device, chunk: 1), count: 52)
            let through = header.flatMap {
                $0.count == 52 ? $0[44..<52].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : nil
            }
            guard let through, through >= state.baseThrough else {
                throw KeychainError(
                    .authFailed,
                    "the remote does not hold this machine's base as it published it: it was rolled back or rewritten; nothing was applied or pushed"
                )
            }
        }
        if top > state.own.number {
            throw KeychainError(
                .authFailed,
                "the remote holds a segment signed in this machine's name that this machine did not write (number \(top)); nothing was applied or pushed"
            )
        }
        if top < state.pushed {
            throw KeychainError(
                .authFailed,
                "the remote lost this machine's segments \(top + 1)…\(state.pushed), which it had accepted: it was rolled back or rewritten; nothing was applied or pushed"
            )
        }
        for (n, bytes) in state.outbox.sorted(by: { $0.key < $1.key }) where n <= top {
            guard let path = mine[n], tree.contents(path) == bytes else {
                throw KeychainError(
                    .authFailed,
                    "the remote holds a different segment \(n) for this machine; nothing was applied or pushed")
            }
            state.outbox[n] = nil
            state.pushed = n
        }
    }

    // MARK: Remote segments

    private func ingest(
        _ tree: RemoteTree, _ circle: Circle, _ state: inout SyncState, _ fresh: inout FreshPuts,
        _ report: inout SyncReport
    ) throws {
        var tops: [SyncID: UInt64] = [:]
        let devices = tree.devices()
        for d in devices { tops[d] = tree.numbered(d, "seg").keys.max() ?? 0 }
        for (d, a) in state.applied where a.number > 0 && !devices.contains(d) {
            throw KeychainError(
                .authFailed,
                "the remote no longer holds the segments of machine \(hexString(d).prefix(8)) that this machine applied: it was rolled back or rewritten; nothing was applied or pushed"
            )
        }
        for d in tree.devices() where d != state.device {
            let files = tree.numbered(d, "seg")
            var applied = state.applied[d] ?? AppliedChain(number: 0, hash: [UInt8](repeating: 0, count: 32))
            if applied.number > 0, files[applied.number] == nil,
                let base = verifiedBase(d, tree, circle, warnings: &report.warnings), base.through >= applied.number,
                base.through != applied.number || base.lastHash == applied.hash
            {
                // The segment applied last left with those its machine's base replaces (§7.5).
            } else if applied.number > 0 {
                guard let path = files[applied.number], let b = tree.contents(path), Crypto.sha256(b) == applied.hash
                else {
                    throw KeychainError(
                        .authFailed,
                        "the remote no longer holds segment \(applied.number) of machine \(hexString(d).prefix(8)) as this machine applied it: it was rolled back or rewritten; nothing was applied or pushed"
                    )
                }
            }
            // A member's segments, or those a removed machine wrote before the circle removed it.
            let (member, limit, epochLimit) =
                circle.writer(d)
                ?? (Member(device: d, signingKey: [], exchangeKeys: [], role: .machine, name: ""), 0, circle.epoch)
            let top = files.keys.max() ?? 0
            if top > max(applied.number, min(limit, top)) {
                report.warnings.append(
                    "ignored \(top - max(applied.number, min(limit, top))) segment(s) from \(hexString(d).prefix(8)), which is not (or no longer) in the circle"
                )
            }
            var n = applied.number + 1
            // Only when a later segment is there and this one is not: a base is read then only.
            if files[n] == nil, n <= limit, let lowest = files.keys.min(), lowest > n,
                let base = verifiedBase(d, tree, circle, warnings: &report.warnings), base.through >= n
            {
                // Its segments up to the base's are gone: the base stands for them (§7.5).
                try mergeBase(base, from: n, d, tree, circle, &state, &fresh)
                applied = AppliedChain(number: base.through, hash: base.lastHash)
                state.applied[d] = applied
                n = base.through + 1
            }
            while n <= limit, let path = files[n] {
                guard let bytes = tree.contents(path) else { break }
                do {
                    let seg = try Segment.decode(bytes)
                    guard seg.circle == state.circle, seg.device == d, seg.number == n, seg.previous == applied.hash
                    else { throw SyncFormatError("its number or chain does not follow segment \(applied.number)") }
                    guard seg.epoch >= 1, seg.epoch <= epochLimit, circle.statement(seg.epoch)?.member(d) != nil else {
                        throw SyncFormatError("its epoch \(seg.epoch) is not one in which the machine was a member")
                    }
                    guard
                        Crypto.ed25519Verify(
                            publicKey: member.signingKey, message: seg.signedBytes, signature: seg.signature)
                    else { throw SyncFormatError("its signature does not verify") }
                    for s in seg.seen where s.device != d && s.number > 0 {
                        if (tops[s.device] ?? 0) < s.number {
                            report.warnings.append(
                                "\(member.name) had applied \(s.number) segment(s) of \(hexString(s.device).prefix(8)), and the remote offers \(tops[s.device] ?? 0): the remote is withholding changes"
                            )
                        } else if let p = tree.numbered(s.device, "seg")[s.number], let b = tree.contents(p),
                            Crypto.sha256(b) != s.hash
                        {
                            report.warnings.append(
                                "\(member.name) applied another segment \(s.number) of \(hexString(s.device).prefix(8)) than the remote holds now: the remote shows machines different histories"
                            )
                        }
                    }
                    let keys = try keys(epoch: seg.epoch, circle: circle, tree: tree)
                    var versions: [(ItemVersion, [UInt8]?)] = []
                    for i in seg.entries.indices {
                        let (v, _, encoded) = try openEncoded(seg, i, keys)
                        versions.append((v, encoded))
                    }
                    for (i, (v, encoded)) in versions.enumerated() {
                        state.observe(v.hlc)
                        if v.kind == .put, encoded == nil {
                            state.pending.insert(PendingEntry(device: d, number: n, index: UInt32(i)))
                        }
                        merge(v, encoded, seg.entries[i].syncID, &state, &fresh)
                    }
                    applied = AppliedChain(number: n, hash: Crypto.sha256(bytes))
                    state.applied[d] = applied
                } catch {
                    report.warnings.append("refused segment \(n) of \(member.name): \(error)")
                    break
                }
                n += 1
            }
            // A later segment is there and this one is not, nor a base that stands for it.
            if n <= limit, files[n] == nil, let top = files.keys.max(), top > n,
                state.applied[d]?.number ?? 0 < n
            {
                report.warnings.append(
                    "the remote does not hold segment \(n) of \(member.name), which its segment \(top) follows: it is withholding changes"
                )
            }
        }
        try retryPending(tree, circle, &state, &fresh, &report)
    }

    /// Merges the entries a base kept of segments `from` and later (§7.5), segment by segment as
    /// if each were applied. - Throws: when an entry the machine signed does not open (the sync
    /// stops: nothing merged is kept).
    private func mergeBase(
        _ base: VerifiedBase, from: UInt64, _ d: SyncID, _ tree: RemoteTree, _ circle: Circle,
        _ state: inout SyncState, _ fresh: inout FreshPuts
    ) throws {
        for number in base.byNumber.keys.sorted() where number >= from {
            guard let seg = segmentFromBase(base, d, number, circle: state.circle) else { continue }
            let keys = try keys(epoch: seg.epoch, circle: circle, tree: tree)
            for k in base.byNumber[number]! {
                let i = Int(k.index)
                let v: ItemVersion
                let encoded: [UInt8]?
                do {
                    (v, _, encoded) = try openEncoded(seg, i, keys)
                } catch {
                    throw KeychainError(
                        .decode, "the base of \(hexString(d.prefix(4))) holds an entry that does not open: \(error)")
                }
                state.observe(v.hlc)
                if v.kind == .put, encoded == nil {
                    state.pending.insert(PendingEntry(device: d, number: number, index: UInt32(i)))
                }
                merge(v, encoded, seg.entries[i].syncID, &state, &fresh)
            }
        }
    }

    /// Decrypts entry `i` (nil plaintext: its class is locked here).
    func open(_ seg: Segment, _ i: Int, _ keys: EpochKeys) throws -> (ItemVersion, ItemPlaintext?) {
        let (v, p, _) = try openEncoded(seg, i, keys)
        return (v, p)
    }

    /// `open`, with the plaintext also as the entry held it (encoded).
    func openEncoded(_ seg: Segment, _ i: Int, _ keys: EpochKeys) throws -> (ItemVersion, ItemPlaintext?, [UInt8]?) {
        let e = seg.entries[i]
        var v = ItemVersion(
            hlc: e.hlc, device: seg.device, number: seg.number, index: UInt32(i), kind: e.kind, protection: e.protection
        )
        guard let plain = try seg.openEntry(i, keys: keys) else { return (v, nil, nil) }
        guard e.kind == .put else { return (v, nil, nil) }
        let p = try ItemPlaintext.decode(plain)
        guard p.attributes["sync"] == .integer(1) else {
            throw SyncFormatError("entry \(i) is not a synchronizable item")
        }
        v.content = Self.contentDigest(p)
        v.unique = try uniqueDigest(p)
        return (v, p, plain)
    }

    static func contentDigest(_ p: ItemPlaintext) -> [UInt8] { Array(Crypto.sha256(p.encode()).prefix(16)) }

    func uniqueDigest(_ p: ItemPlaintext) throws -> [UInt8] {
        let u = UniqueKey(itemClass: p.itemClass, attributes: p.attributes)
        if uniqueKey == nil {
            let me = try requireIdentity()
            uniqueKey = try Crypto.hkdfSHA256(
                ikm: me.signingSeed, salt: Array("LKsync unique".utf8), info: me.device, count: 32)
        }
        return Array(Crypto.hmacSHA256(key: uniqueKey!, parts: [u.encoded]).prefix(16))
    }

    private func merge(
        _ v: ItemVersion, _ encoded: [UInt8]?, _ id: SyncID, _ state: inout SyncState,
        _ fresh: inout FreshPuts
    ) {
        var item = state.items[id] ?? SyncedItem()
        item.merge(v)
        if v.kind == .put, let encoded, item.winner == v {
            fresh.ids.insert(id)
            if freshBytes + encoded.count <= Self.freshBudget {
                freshBytes += encoded.count
                fresh.puts[id] = Fresh(version: v, encoded: encoded)
            } else {
                fresh.puts[id] = nil
            }
        }
        state.items[id] = item
    }

    /// Entries left undecrypted while their class was locked: decrypted now if it is not. A
    /// segment that no longer verifies leaves its entries pending, with a warning.
    private func retryPending(
        _ tree: RemoteTree, _ circle: Circle, _ state: inout SyncState, _ fresh: inout FreshPuts,
        _ report: inout SyncReport
    ) throws {
        guard !state.pending.isEmpty else { return }
        var bySegment: [[UInt8]: [PendingEntry]] = [:]
        for p in state.pending {
            var key = p.device
            withUnsafeBytes(of: p.number.bigEndian) { key += $0 }
            bySegment[key, default: []].append(p)
        }
        for (_, entries) in bySegment {
            let first = entries[0]
            // A version its machine's base did not keep (§7.5) is not that machine's newest of
            // the item, so not a winner: it left the history, and is no longer waited for.
            var ignored: [String] = []
            if tree.numbered(first.device, "seg")[first.number] == nil,
                let base = verifiedBase(first.device, tree, circle, warnings: &ignored), base.through >= first.number,
                base.byNumber[first.number] == nil
            {
                for p in entries { state.pending.remove(p) }
                continue
            }
            let fromBase = tree.numbered(first.device, "seg")[first.number] == nil
            do {
                let seg = try verifiedSegment(first.device, first.number, tree, circle, outbox: [:])
                let keys = try keys(epoch: seg.epoch, circle: circle, tree: tree)
                for p in entries {
                    guard Int(p.index) < seg.entries.count else {
                        if fromBase { state.pending.remove(p) }
                        continue
                    }
                    if seg.entries[Int(p.index)].sealed.isEmpty {
                        state.pending.remove(p)
                        continue
                    }
                    guard case let (v, _, encoded?) = try openEncoded(seg, Int(p.index), keys) else { continue }
                    state.pending.remove(p)
                    merge(v, encoded, seg.entries[Int(p.index)].syncID, &state, &fresh)
                }
            } catch {
                report.warnings.append(
                    "changes of a locked class in segment \(first.number) of \(hexString(first.device.prefix(4))) cannot be read: \(error)"
                )
            }
        }
    }
}
