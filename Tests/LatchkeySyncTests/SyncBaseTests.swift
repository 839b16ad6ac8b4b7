import Foundation
import Latchkey
import Testing

@testable import LatchkeySync

/// Bases and pruning (spec/SYNC.md §7.5): a machine replaces the segments every other machine
/// applied by a signed base of the entries it keeps; a new machine starts from it; history is
/// bounded; a machine that writes nothing holds pruning back only until it acknowledges; a
/// base the host alters is refused.
@Suite(.serialized) struct SyncBaseTests {
    /// The files of `device`'s directory `kind` in the remote's branch.
    func remoteFiles(_ lab: SyncLab, _ device: SyncID, _ kind: String) throws -> [String] {
        let out = try SyncLab.run([
            "git", "--git-dir", lab.remote, "ls-tree", "--name-only", "latchkey",
            RemoteTree.deviceDirectory(device) + "/" + kind + "/"
        ])
        return out.split(separator: "\n").map(String.init)
    }

    func device(_ m: Machine) throws -> SyncID { try #require(try m.engine.status()).device }

    /// Rounds of one change on a, each synced by every machine.
    func rounds(_ ms: [Machine], _ count: Int, account: String = "mail") throws {
        for r in 0..<count {
            try ms[0].put(account, "v\(r)")
            for m in ms { try m.engine.sync() }
        }
        for m in ms { try m.engine.sync() }
    }

    @Test func segmentsEveryMachineAppliedAreReplacedByABase_andANewMachineStartsFromIt() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b", "c"])
        try ms[1].put("bank", "from-b")
        try ms[1].engine.sync()
        try rounds(ms, 8)
        let a = try device(ms[0])
        let segments = try remoteFiles(lab, a, "seg")
        let base = try remoteFiles(lab, a, "base")
        #expect(!base.isEmpty, "a wrote no base after 8 segments every machine applied")
        #expect(segments.count < 5, "a's applied segments stayed: \(segments)")
        // The last segment stays, and so does the one each other machine applied last.
        let last = TreeFiles.padded(try #require(try ms[0].engine.status()).own.number, 12)
        #expect(segments.contains { $0.hasSuffix(last) })

        // A new machine: a's history starts from the base.
        let d = try lab.machine("d")
        let code = try d.engine.join(remote: lab.remote, name: "d")
        _ = try ms[0].engine.approve(code: code)
        let report = try d.engine.sync()
        #expect(report.warnings.isEmpty, "\(report.warnings)")
        #expect(try d.synced() == ["mail": "v7", "bank": "from-b"])
        // Every version is still in history (none older than the bound): the base kept them.
        let history = try d.engine.history().filter { $0.plaintext?.attributes["acct"] == .string("mail") }
        #expect(history.count == 8, "\(history.count) versions of mail")
        // And the machines that were there go on syncing across the pruning.
        try ms[2].put("shop", "from-c")
        for m in ms + [d] { try m.engine.sync() }
        for m in ms + [d] { try m.engine.sync() }
        for m in ms + [d] { #expect(try m.synced() == ["mail": "v7", "bank": "from-b", "shop": "from-c"]) }
    }

    @Test func historyIsBounded_theNewestVersionAndEveryDeleteStay() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        try ms[0].put("gone", "x")
        try ms[0].engine.sync()
        try ms[0].remove("gone")
        try rounds(ms, 6)
        // A year and a half later (the bound is a year), the next base drops what is older.
        let later = Date().timeIntervalSince1970 + 540 * 86_400
        ms[0].engine.now = { later }
        try rounds(ms, 4, account: "other")
        let d = try lab.machine("d")
        _ = try ms[0].engine.approve(code: try d.engine.join(remote: lab.remote, name: "d"))
        try d.engine.sync()
        #expect(try d.synced() == ["mail": "v5", "other": "v3"])
        let history = try d.engine.history()
        let mail = history.filter { $0.plaintext?.attributes["acct"] == .string("mail") }
        #expect(mail.count == 1, "older versions of mail than the bound stayed: \(mail.count)")
        #expect(mail.first?.current == true)
        // The delete of "gone" stays for good: no machine brings the item back.
        #expect(history.contains { $0.version.kind == .delete })
        // "other" was written at the real clock too, so it is as old: its newest version stays,
        // and those of the segments no base replaced yet (the last ones).
        let other = history.filter { $0.plaintext?.attributes["acct"] == .string("other") }
        #expect(other.contains { $0.current } && other.count < 4, "\(other.count)")
    }

    @Test func aMachineThatWritesNothingHoldsPruningBackUntilItAcknowledges() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        let a = try device(ms[0]), b = try device(ms[1])
        // b never syncs: a cannot prune what b has not applied. (b acknowledges only once a day.)
        ms[1].engine.acknowledgeEvery = 86_400
        for r in 0..<6 {
            try ms[0].put("mail", "v\(r)")
            try ms[0].engine.sync()
        }
        #expect(try remoteFiles(lab, a, "base").isEmpty)
        // b syncs, writes no segment, and acknowledges what it applied; then a prunes.
        try ms[1].engine.sync()
        #expect(
            try SyncLab.run(["git", "--git-dir", lab.remote, "ls-tree", "--name-only", "-r", "latchkey"]).contains(
                RemoteTree.acknowledgementPath(b)))
        try ms[0].put("mail", "last")
        try ms[0].engine.sync()
        #expect(!(try remoteFiles(lab, a, "base")).isEmpty, "a did not prune after b acknowledged")
        try ms[1].engine.sync()
        #expect(try ms[1].synced()["mail"] == "last")
    }

    @Test func aBaseTheHostAltersIsRefused() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        try ms[1].put("bank", "from-b")
        try rounds(ms, 6)
        let a = try device(ms[0])
        #expect(!(try remoteFiles(lab, a, "base")).isEmpty)
        let evil = try lab.hostileClone()
        let chunk = evil + "/" + RemoteTree.basePath(a, chunk: 1)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: chunk))
        bytes[bytes.count / 2] ^= 1
        try bytes.write(to: URL(fileURLWithPath: chunk))
        try lab.hostilePush(evil)
        let d = try lab.machine("d")
        _ = try ms[0].engine.approve(code: try d.engine.join(remote: lab.remote, name: "d"))
        let report = try d.engine.sync()
        #expect(report.warnings.contains { $0.contains("refused the base") }, "\(report.warnings)")
        // Nothing of a's is taken from it; b's items arrive.
        #expect(try d.synced() == ["bank": "from-b"])
        // The machines that applied a's segments before are not disturbed.
        try ms[1].engine.sync()
        #expect(try ms[1].synced()["mail"] == "v5")
    }

    @Test func aForgedAcknowledgementMakesNoMachinePrune() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        ms[1].engine.acknowledgeEvery = 86_400
        let a = try device(ms[0]), b = try device(ms[1])
        let circle = try #require(try ms[0].engine.status()).circle
        for r in 0..<6 {
            try ms[0].put("mail", "v\(r)")
            try ms[0].engine.sync()
        }
        // The host says b applied all of a's segments, signed with a key of its own.
        let evil = try lab.hostileClone()
        let (forger, _) = try SyncIdentity.generate(name: "evil")
        var ack = Acknowledgement(
            circle: circle, device: b,
            seen: [Segment.Seen(device: a, number: 1000, hash: [UInt8](repeating: 0, count: 32))])
        ack.signature = try forger.sign(ack.signedBytes)
        try Data(ack.bytes).write(to: URL(fileURLWithPath: evil + "/" + RemoteTree.acknowledgementPath(b)))
        try lab.hostilePush(evil)
        try ms[0].put("mail", "last")
        try ms[0].engine.sync()
        #expect(try remoteFiles(lab, a, "base").isEmpty, "a pruned on a forged acknowledgement")
        try ms[1].engine.sync()
        #expect(try ms[1].synced()["mail"] == "last")
    }

    @Test func anOlderBaseShownAgainIsNoticed() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        let a = try device(ms[0])
        try rounds(ms, 6)
        let old = try lab.hostileClone()
        let oldChunk = try Data(contentsOf: URL(fileURLWithPath: old + "/" + RemoteTree.basePath(a, chunk: 1)))
        try rounds(ms, 6)
        // The host puts the first base back over the second, whose segments are gone.
        let evil = try lab.hostileClone()
        let path = evil + "/" + RemoteTree.basePath(a, chunk: 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) != oldChunk, "a wrote no second base")
        try oldChunk.write(to: URL(fileURLWithPath: path))
        try lab.hostilePush(evil)
        // A new machine is told, and takes nothing it cannot chain.
        let d = try lab.machine("d")
        _ = try ms[0].engine.approve(code: try d.engine.join(remote: lab.remote, name: "d"))
        let report = try d.engine.sync()
        #expect(report.warnings.contains { $0.contains("withholding") }, "\(report.warnings)")
        // a finds its base rolled back when it next writes one, and stops.
        #expect(throws: KeychainError.self) { try rounds(ms, 6) }
    }

    /// Changes of a class locked on b wait (§8.4); when a's base replaces their segments and
    /// keeps only the newest, b applies that one at unlock, and forgets the rest without a warning.
    @Test func changesWaitingForALockedClassSurviveTheirSegmentsBeingReplaced() throws {
        let lab = try SyncLab()
        let a = try lab.machine("a")
        let b = try lab.machine("b", passcode: Array("pass".utf8))
        _ = try a.engine.initialize(remote: lab.remote, name: "a")
        _ = try a.engine.approve(code: try b.engine.join(remote: lab.remote, name: "b"))
        try a.engine.sync()
        try b.engine.sync()
        b.keychain.lock()
        for r in 0..<6 {
            try a.put("mail", "v\(r)", protection: .whenUnlocked)
            try a.engine.sync()
            let report = try b.engine.sync()
            #expect(report.waiting >= 1)
        }
        // Compacted past the history's bound: only the newest of mail stays in a's base.
        let later = Date().timeIntervalSince1970 + 540 * 86_400
        a.engine.now = { later }
        for i in 0..<4 {
            try a.put("other", "x\(i)")
            try a.engine.sync()
            try b.engine.sync()
        }
        let segments = try remoteFiles(lab, try device(a), "seg")
        #expect(!segments.contains { $0.hasSuffix("000000000007") }, "a kept segments b applied: \(segments)")
        try b.keychain.unlock(passcode: Array("pass".utf8))
        let report = try b.engine.sync()
        #expect(report.warnings.isEmpty, "\(report.warnings)")
        #expect(try b.synced() == ["mail": "v5", "other": "x3"])
        #expect(try #require(try b.engine.status()).pending.isEmpty)
    }
}
