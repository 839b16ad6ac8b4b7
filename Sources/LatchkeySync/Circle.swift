import LatchkeyCrypto
import LatchkeyFormat

/// The verified circle (spec/SYNC.md §4.3): one statement per epoch, from the founding one,
/// each signed by a member of the epoch before and changing the membership exactly as its
/// action says.
package struct Circle: Sendable {
    package let statements: [CircleStatement]
    package var head: CircleStatement { statements.last! }
    package var epoch: UInt32 { head.epoch }
    package var hashes: [[UInt8]] { statements.map(\.hash) }
    /// For a machine removed from the circle: its member record, how many of its segments
    /// the circle keeps, and the epoch that removed it (§4.4); nil for any other machine.
    package func removal(of device: SyncID) -> (member: Member, kept: UInt64, epoch: UInt32)? {
        guard head.member(device) == nil,
            let s = statements.last(where: { $0.action == .removed && $0.subject == device }),
            let before = statement(s.epoch - 1)?.member(device)
        else { return nil }
        return (before, s.subjectSegments, s.epoch)
    }

    /// The member record of a machine in any epoch (its keys never change).
    /// What a machine's files are checked against (§7.2 step 2): the record that signs them,
    /// the highest segment number read (`kept`: none past it) and the highest epoch they may be
    /// sealed under; nil for a machine never in the circle.
    func writer(_ device: SyncID) -> (member: Member, kept: UInt64, epochLimit: UInt32)? {
        if let m = head.member(device) { return (m, .max, epoch) }
        if let r = removal(of: device) { return (r.member, r.kept, r.epoch - 1) }
        return nil
    }

    package func anyMember(_ device: SyncID) -> Member? {
        for s in statements.reversed() { if let m = s.member(device) { return m } }
        return nil
    }

    package func statement(_ epoch: UInt32) -> CircleStatement? {
        epoch >= 1 && Int(epoch) <= statements.count ? statements[Int(epoch) - 1] : nil
    }

    /// Whether `s` may follow `prev` (§4.3 rules 2–4).
    static func follows(_ s: CircleStatement, _ prev: CircleStatement) -> Bool {
        guard s.circle == prev.circle, s.epoch == prev.epoch + 1, s.previous == prev.hash,
            let author = prev.member(s.author),
            Crypto.ed25519Verify(publicKey: author.signingKey, message: s.signedBytes, signature: s.signature)
        else { return false }
        let before = prev.members.map(\.device)
        let after = s.members.map(\.device)
        switch s.action {
        case .founded:
            return false
        case .approved, .recovered:
            guard !before.contains(s.subject), let added = s.member(s.subject), added.role == .machine else {
                return false
            }
            if s.action == .recovered, author.role != .recovery { return false }
            return Set(after) == Set(before + [s.subject]) && prev.members.allSatisfy { s.member($0.device) == $0 }
        case .removed:
            guard let gone = prev.member(s.subject), gone.role == .machine else { return false }
            return Set(after) == Set(before.filter { $0 != s.subject })
                && s.members.allSatisfy { prev.member($0.device) == $0 }
        }
    }

    /// Whether `s` is a valid founding statement: epoch 1, self-signed by a machine in it, one
    /// recovery member.
    static func isFounding(_ s: CircleStatement) -> Bool {
        guard s.epoch == 1, s.action == .founded, s.author == s.subject, s.previous == [UInt8](repeating: 0, count: 32),
            let author = s.member(s.author), author.role == .machine,
            s.members.count == 2, s.members.filter({ $0.role == .recovery }).count == 1,
            Crypto.ed25519Verify(publicKey: author.signingKey, message: s.signedBytes, signature: s.signature)
        else { return false }
        return true
    }

    /// The circle from the statements found in `tree`, extending `pinned` (the hashes of the
    /// epochs this machine already accepted). With nothing pinned (a machine joining), the
    /// founding statement of `circle` is taken as found, or the only one when `circle` is nil.
    /// - Throws: `SyncFormatError` when the remote's statements do not extend `pinned` (a
    ///   rolled-back or rewritten circle), or hold no valid founding statement.
    package static func verify(_ tree: RemoteTree, circle: SyncID?, pinned: [[UInt8]]) throws -> Circle {
        var byEpoch: [UInt32: [CircleStatement]] = [:]
        for d in tree.devices() {
            for (e, path) in tree.numbered(d, "circle") where e <= UInt64(UInt32.max) {
                guard let bytes = tree.contents(path), let s = try? CircleStatement.decode(bytes),
                    s.epoch == UInt32(e), s.author == d, circle == nil || s.circle == circle
                else { continue }
                byEpoch[s.epoch, default: []].append(s)
            }
        }
        let founders = (byEpoch[1] ?? []).filter(isFounding)
        var chain: [CircleStatement]
        if let first = pinned.first {
            guard let f = founders.first(where: { $0.hash == first }) else {
                throw SyncFormatError(
                    "the remote no longer holds this circle's founding statement: it was rewritten or rolled back")
            }
            chain = [f]
        } else {
            guard founders.count == 1 else {
                throw SyncFormatError(
                    founders.isEmpty
                        ? "the remote holds no valid Latchkey sync circle" : "the remote holds more than one circle")
            }
            chain = founders
        }
        while true {
            let e = chain.last!.epoch + 1
            let candidates = (byEpoch[e] ?? []).filter { follows($0, chain.last!) }
            if Int(e) <= pinned.count {
                guard let s = candidates.first(where: { $0.hash == pinned[Int(e) - 1] }) else {
                    throw SyncFormatError(
                        "the remote lacks epoch \(e) of the circle, which this machine accepted earlier: the remote was rolled back or rewritten; nothing was applied"
                    )
                }
                chain.append(s)
            } else if let s = candidates.min(by: { $0.hash.lexicographicallyPrecedes($1.hash) }) {
                // Two members wrote epoch e at once: the smaller hash wins, everywhere (§4.3).
                chain.append(s)
            } else {
                break
            }
        }
        return Circle(statements: chain)
    }
}
