import Foundation
import Latchkey
import LatchkeyFormat
import Testing

@testable import LatchkeySync

/// Removals and large syncs (spec/SYNC.md §4.4, §7.4).
@Suite(.serialized) struct CircleChangeTests {
    @Test func aSegmentWaitingToBePushedIsSealedAgainAfterARemoval() throws {
        struct Stop: Error {}
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b", "c"])
        try m[1].put("late", "written-before-the-removal-was-seen")
        m[1].engine.checkpoint = { if $0 == "saved" { throw Stop() } }
        #expect(throws: Stop.self) { try m[1].engine.sync() }
        m[1].engine.checkpoint = { _ in }
        let oldEpoch = try #require(try m[1].engine.status()).epoch
        _ = try m[0].engine.remove("c")
        try m[1].engine.sync()
        let state = try #require(try m[1].engine.status())
        let tree = RemoteTree(root: m[1].dir + "/login.keychain.sync/remote")
        let seg = try Segment.decode(try #require(tree.contents(RemoteTree.segmentPath(state.device, 1))))
        #expect(seg.epoch == oldEpoch + 1)
        try m[0].engine.sync()
        #expect(try m[0].synced() == ["late": "written-before-the-removal-was-seen"])
    }

    @Test func whatARemovedMachineWroteBeforeItsRemovalReachesLaterMachines() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b", "c"])
        try m[2].put("from-c", "kept")
        try m[2].engine.sync()
        try m[0].engine.sync()
        _ = try m[0].engine.remove("c")
        // c goes on writing (it has not seen its removal): nobody takes it.
        try m[2].put("after", "refused")
        #expect(throws: KeychainError.self) { try m[2].engine.sync() }
        let d = try lab.machine("d")
        _ = try m[0].engine.approve(code: try d.engine.join(remote: lab.remote, name: "d"))
        try d.engine.sync()
        #expect(try d.synced() == ["from-c": "kept"])
    }

    @Test func aSetUpStoppedBeforeItsStateWasSavedCanBeRunAgain() throws {
        let lab = try SyncLab()
        let a = try lab.machine("a")
        // What a kill between publishing and saving the state leaves: identity items, no state.
        let (stale, _) = try SyncIdentity.generate(name: "a")
        try stale.store(in: a.keychain)
        #expect(!a.engine.isConfigured)
        _ = try a.engine.initialize(remote: lab.remote, name: "a")
        let loaded = try #require(try SyncIdentity.load(from: a.keychain))
        #expect(loaded.device != stale.device)
        try a.put("x", "1")
        try a.engine.sync()
    }

    @Test func aLargeFirstSyncIsSplitIntoSegments() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        let count = SyncEngine.segmentEntries + 50
        try m[0].keychain.add(
            contentsOf: (0..<count).map {
                NewItem(
                    .genericPassword,
                    attributes: ["svce": .string("web"), "acct": .string("u\($0)"), "sync": .integer(1)],
                    data: Array("s\($0)".utf8), protection: .afterFirstUnlock)
            })
        let r = try m[0].engine.sync()
        #expect(r.sentPuts == count)
        let state = try #require(try m[0].engine.status())
        #expect(state.own.number == 2)
        try m[1].engine.sync()
        #expect(try m[1].synced().count == count)
    }
}

/// The keychain's change feed (`KeychainStore.changedItems(since:)`, spec/SYNC.md §9.2): what
/// the records after the index changed, used by sync when the index covers no more than the
/// last sync.
@Suite(.serialized) struct ChangeFeedTests {
    @Test func theFeedListsPutsAndDeletesAfterTheIndex() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        let store = try #require(m[0].keychain.localStore)
        store.indexTailLimit = 0  // the next commit writes an index
        try m[0].put("kept", "1")
        try m[0].put("gone", "2")
        store.indexTailLimit = .max  // and no commit after writes one
        try m[0].engine.sync()
        let since = store.lastSequence
        try m[0].put("kept", "1b")
        try m[0].remove("gone")
        try m[0].put("new", "3")
        // A process that opens the keychain now reads its items from the index (the one that
        // wrote the index keeps its table in memory, and lists it instead).
        let reopened = try Keychain.open(path: m[0].dir + "/login.keychain", devicePath: m[0].dir + "/device")
        let feed = try #require(try reopened.localStore!.changedItems(since: since))
        #expect(feed.live.count == 2)
        #expect(feed.deleted.count == 1)
        #expect(feed.live.allSatisfy { $0.sequence > since })
        // A sync in that process takes the feed's path, and the other machine gets all three.
        let engine = try SyncEngine(keychain: reopened)
        engine.gitEnvironment = SyncLab.gitEnvironment
        try engine.sync()
        try m[1].engine.sync()
        #expect(try m[1].synced() == ["kept": "1b", "new": "3"])
        // An index that covers records after `since` cannot answer: nil, and sync lists every item.
        store.indexTailLimit = 0
        try m[0].put("later", "4")
        let again = try Keychain.open(path: m[0].dir + "/login.keychain", devicePath: m[0].dir + "/device")
        #expect(try again.localStore!.changedItems(since: since) == nil)
        try m[0].engine.sync()
        try m[1].engine.sync()
        #expect(try m[1].synced() == ["kept": "1b", "new": "3", "later": "4"])
    }
}
