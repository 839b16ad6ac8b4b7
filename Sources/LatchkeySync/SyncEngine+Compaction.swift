import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// A machine's base as read and verified (§7.5): the kept entries of its pruned segments.
struct VerifiedBase {
    var through: UInt64
    var lastHash: [UInt8]
    var kept: [BaseChunk.Kept]
    /// `kept` by segment number.
    var byNumber: [UInt64: [BaseChunk.Kept]]
}

extension SyncEngine {
    // MARK: Reading bases (§7.5)

    /// The base of `device` in the remote, verified against the circle; nil when it has none,
    /// or when it is refused (a warning in `warnings` says why).
    func verifiedBase(_ device: SyncID, _ tree: RemoteTree, _ circle: Circle, warnings: inout [String]) -> VerifiedBase?
    {
        if let cached = baseCache[device] { return cached }
        var result: VerifiedBase?
        defer { baseCache[device] = result }
        let files = tree.numbered(device, "base")
        guard !files.isEmpty else { return nil }
        do {
            // Which record signs it, and how far it may reach: as for segments (§7.2 step 2).
            guard let (member, limit, epochLimit) = circle.writer(device) else { return nil }
            var chunks: [BaseChunk] = []
            for (n, path) in files.sorted(by: { $0.key < $1.key }) {
                guard let bytes = tree.contents(path) else { throw SyncFormatError("chunk \(n) cannot be read") }
                let c = try BaseChunk.decode(bytes)
                guard c.chunk == n else { throw SyncFormatError("chunk \(n) says it is chunk \(c.chunk)") }
                guard
                    Crypto.ed25519Verify(publicKey: member.signingKey, message: c.signedBytes, signature: c.signature)
                else { throw SyncFormatError("chunk \(n): its signature does not verify") }
                chunks.append(c)
            }
            let first = chunks[0]
            guard chunks.count == Int(first.count),
                chunks.allSatisfy({
                    $0.count == first.count && $0.through == first.through && $0.lastHash == first.lastHash
                        && $0.circle == circle.head.circle && $0.device == device
                })
            else { throw SyncFormatError("its chunks are not one base of this circle and machine") }
            guard first.through <= limit else {
                throw SyncFormatError("it reaches segment \(first.through), past what the circle keeps of the machine")
            }
            var kept: [BaseChunk.Kept] = []
            var last: (UInt64, UInt32)?
            for c in chunks {
                for k in c.kept {
                    guard last.map({ $0 < (k.number, k.index) }) ?? true else {
                        throw SyncFormatError("its entries are not in order across chunks")
                    }
                    last = (k.number, k.index)
                    guard k.epoch >= 1, k.epoch <= epochLimit, circle.statement(k.epoch)?.member(device) != nil else {
                        throw SyncFormatError(
                            "an entry's epoch \(k.epoch) is not one in which the machine was a member")
                    }
                    kept.append(k)
                }
            }
            result = VerifiedBase(
                through: first.through, lastHash: first.lastHash, kept: kept,
                byNumber: Dictionary(grouping: kept, by: \.number))
        } catch {
            warnings.append("refused the base of \(hexString(device.prefix(4))): \(error)")
        }
        return result
    }

    /// The kept entries of segment `number` of `device` as a segment (§7.5): the entries at the
    /// indices the base kept, and in their place elsewhere an empty entry (no sealed bytes) that
    /// no reader takes for one. nil when the base does not keep that segment.
    func segmentFromBase(_ base: VerifiedBase, _ device: SyncID, _ number: UInt64, circle: SyncID) -> Segment? {
        guard number <= base.through, let kept = base.byNumber[number], let top = kept.last?.index else { return nil }
        var entries = [SegmentEntry](
            repeating: SegmentEntry(
                syncID: [UInt8](repeating: 0, count: 16), hlc: 0, kind: .delete, protection: 0, nonce: [], sealed: []),
            count: Int(top) + 1)
        for k in kept { entries[Int(k.index)] = k.entry }
        return Segment(
            circle: circle, device: device, number: number, previous: [], epoch: kept[0].epoch, seen: [],
            entries: entries)
    }

    // MARK: Writing: acknowledgement, base and pruning (§7.5)

    /// What a sync publishes besides its segments: this machine's acknowledgement when what it
    /// applied changed and it publishes anyway or its last is `acknowledgeEvery` old; and, when every other
    /// machine of the circle has applied at least `compactEvery` more of its segments than its
    /// base holds, a new base with the removal of the segments it stands for.
    func housekeeping(_ tree: RemoteTree, _ circle: Circle, _ state: SyncState, publishing: Bool) throws
        -> (files: [(String, [UInt8])], removing: [String], base: UInt64?)
    {
        var files: [(String, [UInt8])] = []
        var removing: [String] = []
        let me = try requireIdentity()
        // The acknowledgement.
        let seen = state.seenRecords
        let published = tree.contents(RemoteTree.acknowledgementPath(state.device)).flatMap {
            try? Acknowledgement.decode($0)
        }
        if !seen.isEmpty, published?.seen != seen, publishing || now() - state.acknowledgedAt >= acknowledgeEvery {
            var ack = Acknowledgement(circle: state.circle, device: state.device, seen: seen)
            ack.signature = try me.sign(ack.signedBytes)
            files.append((RemoteTree.acknowledgementPath(state.device), ack.bytes))
        }
        // The base: segments every other machine applied, but the last one each applied, and
        // never this machine's last segment or one not yet pushed.
        var minimum = min(state.own.number &- 1, state.pushed)
        for m in circle.head.members where m.role == .machine && m.device != state.device {
            let applied = appliedBy(m, of: state.device, circle: state.circle, tree)
            minimum = applied == 0 ? 0 : min(minimum, applied - 1)
        }
        var from = state.baseThrough
        guard minimum != .max, minimum > from, minimum - from >= UInt64(compactEvery) else {
            return (files, removing, nil)
        }
        var warnings: [String] = []
        let old = verifiedBase(state.device, tree, circle, warnings: &warnings)
        let remoteThrough = old?.through ?? 0
        guard remoteThrough >= from else {
            throw KeychainError(
                .authFailed,
                "the remote does not hold this machine's base as it published it (\(warnings.joined(separator: "; "))); it was rolled back or rewritten; nothing was pushed"
            )
        }
        if remoteThrough > from {
            // A base this machine published and did not record: it stopped before it saved.
            from = remoteThrough
            guard minimum > from, minimum - from >= UInt64(compactEvery) else { return (files, removing, from) }
        }
        let through = minimum
        // This machine's own entries, from its old base and its segments after it, each
        // segment checked: signed by this machine and chained (the host cannot slip one in).
        var candidates = old?.kept ?? []
        var previous = old?.lastHash ?? [UInt8](repeating: 0, count: 32)
        let mine = tree.numbered(state.device, "seg")
        for n in (from + 1)...through {
            guard let path = mine[n], let bytes = tree.contents(path), let seg = try? Segment.decode(bytes),
                seg.circle == state.circle, seg.device == state.device, seg.number == n, seg.previous == previous,
                Crypto.ed25519Verify(publicKey: me.signingKey, message: seg.signedBytes, signature: seg.signature)
            else {
                throw KeychainError(
                    .authFailed,
                    "the remote holds no valid segment \(n) of this machine to compact; nothing was applied or pushed")
            }
            previous = Crypto.sha256(bytes)
            for (i, e) in seg.entries.enumerated() {
                candidates.append(BaseChunk.Kept(number: n, epoch: seg.epoch, index: UInt32(i), entry: e))
            }
        }
        // Kept: each item's newest put and newest delete by this machine, and every entry newer
        // than the history's bound (§8.6).
        let horizon = SyncState.physical(unixSeconds: now() - Double(state.historyDays) * 86_400)
        var newest: [[UInt8]: Int] = [:]
        for (i, k) in candidates.enumerated() {
            let key = k.entry.syncID + [k.entry.kind.rawValue]
            if let j = newest[key], candidates[j].entry.hlc >= k.entry.hlc { continue }
            newest[key] = i
        }
        let keepIndex = Set(newest.values)
        let kept = candidates.enumerated().filter { keepIndex.contains($0.offset) || $0.element.entry.hlc >= horizon }
            .map(\.element)
        // Chunks of at most 32 MiB of entries, as segments (§7.4).
        var chunks: [[BaseChunk.Kept]] = [[]]
        var size = 0
        for k in kept {
            let s = 60 + k.entry.sealed.count
            if !chunks[chunks.count - 1].isEmpty, size + s > 32 << 20 {
                chunks.append([])
                size = 0
            }
            chunks[chunks.count - 1].append(k)
            size += s
        }
        for (i, c) in chunks.enumerated() {
            var chunk = BaseChunk(
                circle: state.circle, device: state.device, through: through, lastHash: previous,
                chunk: UInt32(i + 1), count: UInt32(chunks.count), kept: c)
            chunk.signature = try me.sign(chunk.signedBytes)
            files.append((RemoteTree.basePath(state.device, chunk: UInt32(i + 1)), chunk.bytes))
        }
        for (n, path) in tree.numbered(state.device, "base") where n > UInt64(chunks.count) { removing.append(path) }
        for n in (from + 1)...through { if let path = mine[n] { removing.append(path) } }
        return (files, removing, through)
    }

    /// The highest number of `device`'s segments that member `m` says it applied, in its
    /// acknowledgement (verified); 0 when it has none. (A machine acknowledges whenever it
    /// publishes, so its segments' seen records say nothing more.)
    func appliedBy(_ m: Member, of device: SyncID, circle: SyncID, _ tree: RemoteTree) -> UInt64 {
        guard let b = tree.contents(RemoteTree.acknowledgementPath(m.device)), let a = try? Acknowledgement.decode(b),
            a.circle == circle, a.device == m.device,
            Crypto.ed25519Verify(publicKey: m.signingKey, message: a.signedBytes, signature: a.signature),
            let s = a.seen.first(where: { $0.device == device })
        else { return 0 }
        return s.number
    }
}
