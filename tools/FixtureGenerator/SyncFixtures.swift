import Foundation
import LatchkeyCrypto
import LatchkeyFormat
import LatchkeySync

/// fixtures/sync/ (spec/SYNC.md): remotes of a three-machine circle, written from the
/// format's types with deterministic keys, nonces and times, and the outcome a member must
/// reach. The reader of every fixture is the circle's recovery key (a member of every epoch
/// that writes no segment), whose secret is in README.md, public on purpose.
enum SyncFixtures {
    struct Remote {
        var files: [String: [UInt8]] = [:]
    }

    struct Expected {
        var outcome: String
        /// account → (data, protection code) of the live items
        var items: [String: (String, String)]
        var warnings: [String]
        var description: String
        /// For "stop": the fixture whose remote the reader synced first.
        var after: String?
    }

    static let recoverySecret = Crypto.sha256(Array("latchkey sync fixtures: recovery key".utf8))
    static let base: UInt64 = 1_767_225_600_000 << 16  // 2026-01-01T00:00:00Z

    static func identity(_ name: String, _ rng: inout DeterministicRandom) -> SyncIdentity {
        var ex: [SyncClass: SecretKey] = [:]
        for c in SyncClass.allCases { ex[c] = SecretKey(copying: rng.bytes(32)) }
        return SyncIdentity(
            device: rng.bytes(16), signingSeed: SecretKey(copying: rng.bytes(32)), exchange: ex, name: name)
    }

    static func item(_ account: String, _ secret: String) -> [UInt8] {
        ItemPlaintext(
            itemClass: .genericPassword,
            attributes: [
                "svce": .string("fixture"), "acct": .string(account), "sync": .integer(1),
                "cdat": .date(788_918_400), "mdat": .date(788_918_400)
            ], data: Array(secret.utf8)
        ).encode()
    }

    /// Every fixture: name → (remote, expected).
    static func all() throws -> [(String, Remote, Expected)] {
        var rng = DeterministicRandom(label: "sync")
        let recovery = try SyncIdentity.recovery(SecretKey(copying: recoverySecret))
        let a = identity("machine-a", &rng)
        let b = identity("machine-b", &rng)
        let c = identity("machine-c", &rng)
        let circleID = rng.bytes(16)
        let random: (Int) throws -> [UInt8] = { _ in [] }
        _ = random
        var remote = Remote()
        remote.files["LATCHKEY-SYNC"] = Array("Latchkey sync fixture remote (spec/SYNC.md).\n".utf8)

        // Epochs 1–3: a founds, approves b, approves c.
        var statements: [CircleStatement] = []
        var keys: [EpochKeys] = []
        func epoch(
            _ action: CircleStatement.Action, author: SyncIdentity, subject: SyncID, members: [Member],
            kept: UInt64 = 0, into r: inout Remote
        ) throws {
            var s = CircleStatement(
                circle: circleID, epoch: UInt32(statements.count + 1),
                previous: statements.last?.hash ?? [UInt8](repeating: 0, count: 32), author: author.device,
                action: action, subject: subject, subjectSegments: kept, members: members)
            s.signature = try author.sign(s.signedBytes)
            let k = try EpochKeys.generate(random: { rng.bytes($0) })
            let env = try k.envelope(
                circle: circleID, epoch: s.epoch, statement: s.hash, author: author, members: members,
                previous: keys.last, random: { rng.bytes($0) })
            r.files[RemoteTree.statementPath(author.device, epoch: s.epoch)] = s.bytes
            r.files[RemoteTree.envelopePath(author.device, epoch: s.epoch)] = env.bytes
            statements.append(s)
            keys.append(k)
        }
        let ma = try a.member(role: .machine)
        let mb = try b.member(role: .machine)
        let mc = try c.member(role: .machine)
        let mr = try recovery.member(role: .recovery)
        try epoch(.founded, author: a, subject: a.device, members: [ma, mr], into: &remote)
        try epoch(.approved, author: a, subject: b.device, members: [ma, mr, mb], into: &remote)
        try epoch(.approved, author: b, subject: c.device, members: [ma, mr, mb, mc], into: &remote)

        // Segments. ids: x (alice), y (bob), z (carol by c), w (carol by b: loses to z).
        let x = rng.uuid(), y = rng.uuid(), z = rng.uuid(), w = rng.uuid()
        var chains: [SyncID: [UInt8]] = [:]
        func segment(
            _ author: SyncIdentity, _ number: UInt64, epoch e: Int, _ entries: [(SyncID, UInt64, String?, String?)],
            into r: inout Remote, previous: [UInt8]? = nil
        ) throws -> [UInt8] {
            var seg = Segment(
                circle: circleID, device: author.device, number: number,
                previous: previous ?? chains[author.device] ?? [UInt8](repeating: 0, count: 32), epoch: UInt32(e),
                seen: [], entries: [])
            var plaintexts: [[UInt8]] = []
            for (id, dt, account, secret) in entries {
                let put = account != nil
                seg.entries.append(
                    SegmentEntry(
                        syncID: id, hlc: base + dt, kind: put ? .put : .delete, protection: put ? 7 : 0,
                        nonce: rng.bytes(12), sealed: []))
                plaintexts.append(put ? item(account!, secret!) : [])
            }
            try seg.seal(plaintexts: plaintexts, keys: keys[e - 1], author: author)
            let bytes = seg.bytes
            r.files[RemoteTree.segmentPath(author.device, number)] = bytes
            chains[author.device] = Crypto.sha256(bytes)
            return bytes
        }
        _ = try segment(a, 1, epoch: 1, [(x, 1 << 16, "alice", "a1"), (y, 2 << 16, "bob", "b1")], into: &remote)
        let b1 = try segment(
            b, 1, epoch: 2, [(x, 10 << 16, "alice", "from-b"), (w, 15 << 16, "carol", "b-loses")], into: &remote)
        let c1 = try segment(
            c, 1, epoch: 3,
            [(x, 10 << 16, "alice", "from-c"), (y, 11 << 16, nil, nil), (z, 20 << 16, "carol", "c-wins")],
            into: &remote)
        // Same clock for b's and c's alice: the larger device id wins (§8.1).
        let alice = b.device.lexicographicallyPrecedes(c.device) ? "from-c" : "from-b"
        let full: [String: (String, String)] = ["alice": (alice, "ck"), "carol": ("c-wins", "ck")]

        var out: [(String, Remote, Expected)] = []
        out.append(
            (
                "three_machines", remote,
                Expected(
                    outcome: "success", items: full, warnings: [],
                    description:
                        "a founds, approves b; b approves c. a adds alice and bob; b and c change alice at the same clock (the larger device id wins); c deletes bob; b and c add carol (c's later one wins, b's is a conflict loser)",
                    after: nil)
            ))

        var tampered = remote
        var bytes = c1
        bytes[bytes.count - 100] ^= 0x01
        tampered.files[RemoteTree.segmentPath(c.device, 1)] = bytes
        out.append(
            (
                "tampered_segment", tampered,
                Expected(
                    outcome: "success",
                    items: ["alice": ("from-b", "ck"), "bob": ("b1", "ck"), "carol": ("b-loses", "ck")],
                    warnings: ["refused segment 1 of machine-c"],
                    description: "one byte of c's segment 1 flipped: the segment is refused, the rest applied",
                    after: nil)
            ))

        var replayed = remote
        replayed.files[RemoteTree.segmentPath(b.device, 2)] = b1
        out.append(
            (
                "replayed_segment", replayed,
                Expected(
                    outcome: "success", items: full, warnings: ["refused segment 2 of machine-b"],
                    description: "b's segment 1 copied as its segment 2: refused (its number and chain do not follow)",
                    after: nil)
            ))

        var forged = remote
        let mallory = identity("mallory", &rng)
        var fs = CircleStatement(
            circle: circleID, epoch: 4, previous: statements[2].hash, author: mallory.device, action: .approved,
            subject: mallory.device, members: [ma, mr, mb, mc, try mallory.member(role: .machine)])
        fs.signature = try mallory.sign(fs.signedBytes)
        forged.files[RemoteTree.statementPath(mallory.device, epoch: 4)] = fs.bytes
        var ms = Segment(
            circle: circleID, device: mallory.device, number: 1, previous: [UInt8](repeating: 0, count: 32), epoch: 4,
            seen: [],
            entries: [
                SegmentEntry(
                    syncID: x, hlc: base + (99 << 16), kind: .put, protection: 7, nonce: rng.bytes(12), sealed: [])
            ])
        try ms.seal(plaintexts: [item("alice", "mallory")], keys: keys[2], author: mallory)
        forged.files[RemoteTree.segmentPath(mallory.device, 1)] = ms.bytes
        out.append(
            (
                "forged_member", forged,
                Expected(
                    outcome: "success", items: full, warnings: ["in the circle"],
                    description:
                        "the host adds a machine of its own (a statement it signed itself) and a segment from it: neither is taken",
                    after: nil)
            ))

        var removed = remote
        let savedStatements = statements, savedKeys = keys
        try epoch(.removed, author: a, subject: c.device, members: [ma, mr, mb], kept: 1, into: &removed)
        _ = try segment(c, 2, epoch: 3, [(x, 50 << 16, "alice", "after-removal")], into: &removed)
        statements = savedStatements
        keys = savedKeys
        out.append(
            (
                "removed_member_later_segment", removed,
                Expected(
                    outcome: "success", items: full, warnings: ["no longer) in the circle"],
                    description:
                        "a removes c keeping c's 1 segment; c's segment 2, written after, is not taken (c's segment 1 still is)",
                    after: nil)
            ))

        // a's segments 1 and 2 replaced by its base (§7.5); its segment 3 stays.
        var compacted = remote
        let a1 = try Segment.decode(compacted.files[RemoteTree.segmentPath(a.device, 1)]!)
        let a2bytes = try segment(a, 2, epoch: 3, [(x, 30 << 16, "alice", "a2")], into: &compacted)
        let a2 = try Segment.decode(a2bytes)
        let dave = rng.uuid()
        _ = try segment(a, 3, epoch: 3, [(dave, 31 << 16, "dave", "d1")], into: &compacted)
        // Kept: bob's put (a's newest of it) and alice's newest; alice's first put left the history.
        var chunk = BaseChunk(
            circle: circleID, device: a.device, through: 2, lastHash: Crypto.sha256(a2bytes), chunk: 1, count: 1,
            kept: [
                BaseChunk.Kept(number: 1, epoch: a1.epoch, index: 1, entry: a1.entries[1]),
                BaseChunk.Kept(number: 2, epoch: a2.epoch, index: 0, entry: a2.entries[0])
            ])
        chunk.signature = try a.sign(chunk.signedBytes)
        compacted.files[RemoteTree.basePath(a.device, chunk: 1)] = chunk.bytes
        compacted.files[RemoteTree.segmentPath(a.device, 1)] = nil
        compacted.files[RemoteTree.segmentPath(a.device, 2)] = nil
        out.append(
            (
                "compacted", compacted,
                Expected(
                    outcome: "success",
                    items: ["alice": ("a2", "ck"), "carol": ("c-wins", "ck"), "dave": ("d1", "ck")], warnings: [],
                    description:
                        "three_machines, then a changes alice (segment 2) and adds dave (segment 3), and replaces its segments 1 and 2 by a base keeping bob's put and alice's newest: read from the base, then segment 3",
                    after: nil)
            ))

        var tamperedBase = compacted
        var baseBytes = chunk.bytes
        baseBytes[baseBytes.count - 100] ^= 0x01
        tamperedBase.files[RemoteTree.basePath(a.device, chunk: 1)] = baseBytes
        out.append(
            (
                "tampered_base", tamperedBase,
                Expected(
                    outcome: "success", items: ["alice": (alice, "ck"), "carol": ("c-wins", "ck")],
                    warnings: ["refused the base"],
                    description:
                        "compacted with one byte of a's base flipped: the base is refused, and with it every segment of a (the chain cannot reach segment 3); b's and c's are applied",
                    after: nil)
            ))

        var rolledBack = remote
        rolledBack.files[RemoteTree.segmentPath(c.device, 1)] = nil
        out.append(
            (
                "rolled_back", rolledBack,
                Expected(
                    outcome: "stop", items: full, warnings: [],
                    description:
                        "after syncing three_machines, the remote no longer holds c's segment 1: the sync stops, nothing is applied",
                    after: "three_machines")
            ))
        return out
    }

    /// Writes every sync fixture under `root`. - Returns: each fixture's name and expectation,
    /// for the manifest.
    @discardableResult
    static func write(to root: URL) throws -> [(name: String, expected: Expected)] {
        try? FileManager.default.removeItem(at: root)
        let fixtures = try all()
        for (name, remote, expected) in fixtures {
            let dir = root.appendingPathComponent(name)
            for (path, bytes) in remote.files {
                let url = dir.appendingPathComponent("remote").appendingPathComponent(path)
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FixtureWriter.write(bytes, to: url)
            }
            let items = expected.items.sorted { $0.key < $1.key }.map {
                "    {\"acct\": \"\($0.key)\", \"svce\": \"fixture\", \"data\": \"\($0.value.0)\", \"pdmn\": \"\($0.value.1)\"}"
            }
            var json = "{\n  \"outcome\": \"\(expected.outcome)\",\n"
            if let after = expected.after { json += "  \"after\": \"\(after)\",\n" }
            json += "  \"description\": \"\(expected.description)\",\n"
            json += "  \"warnings\": [\(expected.warnings.map { "\"\($0)\"" }.joined(separator: ", "))],\n"
            json += "  \"items\": [\n" + items.joined(separator: ",\n") + "\n  ]\n}\n"
            try FixtureWriter.write(Array(json.utf8), to: dir.appendingPathComponent("expected.json"))
        }
        let readme = """
            # Sync fixtures (spec/SYNC.md)

            Written by tools/FixtureGenerator (`swift run latchkey-fixtures fixtures`); do not edit.
            Each directory holds `remote/`, the files of a sync remote as git or a shared folder
            carries them, and `expected.json`: what a member of the circle reaches when it syncs
            it for the first time, having pinned only the founding statement (epoch 1):
            `success` with the live items (all generic passwords of service `fixture`), or `stop`
            (nothing applied). `warnings` are fragments of what Latchkey reports.

            The reader is the circle's recovery key, a member of every epoch that writes no
            segment. Its 32-byte secret (fixture secret, public on purpose):

                \(hexString(recoverySecret))

            From it, spec/SYNC.md §3.2 derives its device id, signing key and exchange keys; with
            them, §6 opens every epoch's keys and §7 every entry.

            \(fixtures.map { "- `\($0.0)`: \($0.2.description)" }.joined(separator: "\n"))

            """
        try FixtureWriter.write(Array(readme.utf8), to: root.appendingPathComponent("README.md"))
        return fixtures.map { ($0.0, $0.2) }
    }
}
