import Foundation
import Latchkey
import LatchkeyFormat
import Testing

@testable import LatchkeySync

/// Whoever hosts the remote can change any file of it (spec/SYNC.md §10): every change is
/// refused or reported, never applied, and nothing local is damaged.
@Suite(.serialized) struct HostileRemoteTests {
    private func segmentFile(_ dir: String, _ m: Machine, _ n: UInt64) throws -> String {
        let state = try #require(try m.engine.status())
        return dir + "/" + RemoteTree.segmentPath(state.device, n)
    }

    @Test func aTamperedSegmentIsRefusedBeforeItIsApplied() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].put("alice", "secret")
        try m[0].engine.sync()
        let evil = try lab.hostileClone()
        let path = try segmentFile(evil, m[0], 1)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 100] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try lab.hostilePush(evil)
        let r = try m[1].engine.sync()
        #expect(r.warnings.contains { $0.contains("refused segment 1") })
        #expect(try m[1].synced().isEmpty)
    }

    @Test func aSegmentRewrittenAfterItWasAppliedStopsTheSync() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].put("alice", "secret")
        try m[0].engine.sync()
        try m[1].engine.sync()
        let evil = try lab.hostileClone()
        let path = try segmentFile(evil, m[0], 1)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 1] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try lab.hostilePush(evil)
        #expect(throws: KeychainError.self) { try m[1].engine.sync() }
        #expect(try m[1].synced() == ["alice": "secret"])
        #expect(m[1].engine.lastOutcome().lastError.contains("rolled back or rewritten") == true)
    }

    @Test func aReplayedOrReorderedSegmentIsRefused() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].put("alice", "one")
        try m[0].engine.sync()
        try m[0].remove("alice")
        try m[0].engine.sync()
        let evil = try lab.hostileClone()
        // Replay: segment 1 again as segment 3 (as if a re-sent its first change).
        try FileManager.default.copyItem(atPath: try segmentFile(evil, m[0], 1), toPath: try segmentFile(evil, m[0], 3))
        // Reorder: 1 and 2 swapped.
        let one = try Data(contentsOf: URL(fileURLWithPath: try segmentFile(evil, m[0], 1)))
        let two = try Data(contentsOf: URL(fileURLWithPath: try segmentFile(evil, m[0], 2)))
        try two.write(to: URL(fileURLWithPath: try segmentFile(evil, m[0], 1)))
        try one.write(to: URL(fileURLWithPath: try segmentFile(evil, m[0], 2)))
        try lab.hostilePush(evil)
        let r = try m[1].engine.sync()
        #expect(r.warnings.contains { $0.contains("refused segment 1") })
        #expect(try m[1].synced().isEmpty)
        // a sees that the remote holds a segment in its name that it did not write.
        #expect(throws: KeychainError.self) { try m[0].engine.sync() }
    }

    @Test func aMemberTheRemoteAddsByItselfIsNotAMember() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        let evil = try lab.hostileClone()
        // The remote's own identity, a statement adding it, signed by itself.
        let (mallory, member) = try SyncIdentity.generate(name: "mallory")
        let tree = RemoteTree(root: evil)
        let circle = try Circle.verify(tree, circle: nil, pinned: [])
        var s = CircleStatement(
            circle: circle.head.circle, epoch: circle.epoch + 1, previous: circle.head.hash, author: mallory.device,
            action: .approved, subject: mallory.device, members: circle.head.members + [member])
        s.signature = try mallory.sign(s.signedBytes)
        let dir = evil + "/" + RemoteTree.deviceDirectory(mallory.device)
        try FileManager.default.createDirectory(atPath: dir + "/circle", withIntermediateDirectories: true)
        try Data(s.bytes).write(
            to: URL(fileURLWithPath: evil + "/" + RemoteTree.statementPath(mallory.device, epoch: s.epoch)))
        // And a segment of its own, as if it were a member.
        try FileManager.default.createDirectory(atPath: dir + "/seg", withIntermediateDirectories: true)
        var seg = Segment(
            circle: circle.head.circle, device: mallory.device, number: 1, previous: [UInt8](repeating: 0, count: 32),
            epoch: s.epoch, seen: [], entries: [])
        seg.signature = try mallory.sign(seg.signedBytes)
        try Data(seg.bytes).write(to: URL(fileURLWithPath: evil + "/" + RemoteTree.segmentPath(mallory.device, 1)))
        try lab.hostilePush(evil)
        let r = try m[1].engine.sync()
        #expect(r.warnings.contains { $0.contains("no longer) in the circle") })
        let (members, epoch, _) = try m[1].engine.members()
        #expect(!members.contains { $0.name == "mallory" })
        #expect(epoch == circle.epoch)
    }

    @Test func aRolledBackRemoteIsRefusedAndReported() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].put("alice", "one")
        try m[0].engine.sync()
        let before = try SyncLab.run(["git", "--git-dir", lab.remote, "rev-parse", "latchkey"]).trimmingCharacters(
            in: .whitespacesAndNewlines)
        try m[0].put("alice", "two")
        try m[0].engine.sync()
        try m[1].engine.sync()
        #expect(try m[1].synced() == ["alice": "two"])
        // The host puts the old state back (a force-push).
        try SyncLab.run(["git", "--git-dir", lab.remote, "update-ref", "refs/heads/latchkey", before])
        #expect(throws: KeychainError.self) { try m[1].engine.sync() }
        #expect(throws: KeychainError.self) { try m[0].engine.sync() }
        #expect(try m[1].synced() == ["alice": "two"])
        #expect(try m[0].synced() == ["alice": "two"])
    }

    @Test func withheldChangesAreNoticed() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b", "c"])
        try m[0].put("alice", "one")
        try m[0].engine.sync()
        try m[1].engine.sync()
        try m[1].put("bob", "two")
        try m[1].engine.sync()  // b's segment says it applied a's segment 1
        let evil = try lab.hostileClone()
        try FileManager.default.removeItem(atPath: try segmentFile(evil, m[0], 1))
        try lab.hostilePush(evil)
        let r = try m[2].engine.sync()
        #expect(r.warnings.contains { $0.contains("withholding") })
    }

    @Test func aRemovedMachineReadsNothingWrittenAfterItsRemoval() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b", "c"])
        try m[0].put("before", "all-see-this")
        for x in m { try x.engine.sync() }
        let gone = try m[0].engine.remove("c")
        #expect(gone.name == "c")
        try m[0].put("after", "c-must-not-read")
        try m[0].engine.sync()
        try m[1].engine.sync()
        #expect(try m[1].synced() == ["before": "all-see-this", "after": "c-must-not-read"])
        do {
            try m[2].engine.sync()
            Issue.record("a removed machine synced")
        } catch let e as KeychainError {
            #expect(e.message.contains("removed"))
        }
        #expect(try m[2].synced() == ["before": "all-see-this"])
        // With its identity, c can open no key of the new epoch: the envelope has no entry for it.
        let tree = RemoteTree(root: m[2].dir + "/login.keychain.sync/remote")
        let circle = try Circle.verify(tree, circle: nil, pinned: [])
        let id = try #require(try SyncIdentity.load(from: m[2].keychain))
        let env = try m[0].engine.envelope(circle.epoch, circle: circle, tree: tree)
        #expect(throws: SyncFormatError.self) { try EpochKeys.open(env, as: id) }
    }

    @Test func aJoinerShownAnotherCircleIsNotApproved() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a"])
        // The host shows the joiner a circle of its own making, on another remote.
        let fake = try SyncLab()
        let f = try fake.machine("fake-founder")
        _ = try f.engine.initialize(remote: fake.remote, name: "fake")
        let joiner = try lab.machine("j")
        let code = try joiner.engine.join(remote: fake.remote, name: "j")
        // Its application, copied into the real remote.
        let evil = try lab.hostileClone()
        let state = try #require(try joiner.engine.status())
        let app = RemoteTree.applicationPath(state.device)
        try FileManager.default.createDirectory(
            atPath: evil + "/" + RemoteTree.deviceDirectory(state.device), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: joiner.dir + "/login.keychain.sync/remote/" + app, toPath: evil + "/" + app)
        try lab.hostilePush(evil)
        #expect(throws: KeychainError.self) { try m[0].engine.approve(code: code) }
        // A wrong code approves nobody.
        #expect(throws: KeychainError.self) { try m[0].engine.approve(code: "AAAA-AAAA-AAAA") }
    }
}
