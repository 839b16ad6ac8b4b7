import Foundation
import Latchkey
import LatchkeyFormat
import Testing

@testable import LatchkeySync

/// Three machines and a bare repository (spec/SYNC.md): the scenarios of issue 29.
@Suite(.serialized) struct SyncScenarioTests {
    @Test func addUpdateDeleteReachEveryMachine() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b", "c"])
        try m[0].put("alice", "one")
        try m[0].engine.sync()
        try m[1].engine.sync()
        try m[2].engine.sync()
        #expect(try m[2].synced() == ["alice": "one"])
        try m[1].put("alice", "two")
        try m[1].put("bob", "b1")
        try m[1].engine.sync()
        for x in [m[0], m[2]] { try x.engine.sync() }
        #expect(try m[0].synced() == ["alice": "two", "bob": "b1"])
        try m[2].remove("alice")
        try m[2].engine.sync()
        for x in [m[0], m[1]] { try x.engine.sync() }
        for x in m { #expect(try x.synced() == ["bob": "b1"]) }
    }

    @Test func itemsThatMustNotSyncNeverReachTheRemote() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        // Apple's rule: synchronizable with ThisDeviceOnly, or with user presence, is errSecParam.
        #expect(throws: KeychainError.self) {
            try m[0].keychain.add(
                .genericPassword, attributes: ["svce": .string("web"), "acct": .string("x"), "sync": .integer(1)],
                data: Array("no".utf8), protection: .whenUnlockedThisDeviceOnly)
        }
        do {
            try m[0].keychain.add(
                .genericPassword, attributes: ["svce": .string("web"), "acct": .string("x"), "sync": .integer(1)],
                data: Array("no".utf8), protection: .whenUnlockedThisDeviceOnly)
        } catch let e as KeychainError {
            #expect(e.status == .param)
        }
        try m[0].keychain.add(
            .genericPassword, attributes: ["svce": .string("local-only-service"), "acct": .string("here")],
            data: Array("NOT-SYNCED-SECRET-1".utf8))
        try m[0].keychain.add(
            .genericPassword, attributes: ["svce": .string("web"), "acct": .string("mine"), "sync": .integer(1)],
            data: Array("SYNCED-SECRET-2".utf8))
        // An update cannot make a synchronizable item ThisDeviceOnly either.
        #expect(throws: KeychainError.self) {
            try m[0].keychain.update(
                Query(.genericPassword, ["acct": .string("mine")], synchronizable: .synchronizable), attributes: [:],
                protection: .afterFirstUnlockThisDeviceOnly)
        }
        try m[0].engine.sync()
        try m[1].engine.sync()
        #expect(try m[1].synced() == ["mine": "SYNCED-SECRET-2"])
        #expect(try m[1].keychain.find(Query(.genericPassword, ["svce": .string("local-only-service")])).isEmpty)
        let objects = try lab.remoteObjects()
        for needle in ["NOT-SYNCED-SECRET-1", "local-only-service", "SYNCED-SECRET-2", "mine", "web"] {
            #expect(!contains(objects, Array(needle.utf8)), "\(needle) is readable in the remote")
        }
    }

    @Test func concurrentUpdatesConvergeAndTheLoserIsInHistory() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b", "c"])
        try m[0].put("alice", "base")
        try m[0].engine.sync()
        try m[1].engine.sync()
        try m[2].engine.sync()
        // Offline on both: a then b edit the same item.
        try m[0].put("alice", "from-a")
        Thread.sleep(forTimeInterval: 0.01)
        try m[1].put("alice", "from-b")
        try m[1].engine.sync()
        try m[0].engine.sync()
        try m[1].engine.sync()
        try m[2].engine.sync()
        let results = try m.map { try $0.synced() }
        #expect(results[0] == results[1] && results[1] == results[2])
        #expect(results[0] == ["alice": "from-b"])
        let history = try m[2].engine.history()
        let secrets = Set(history.compactMap { $0.plaintext.map { String(decoding: $0.data, as: UTF8.self) } })
        #expect(secrets.isSuperset(of: ["base", "from-a", "from-b"]))
        #expect(history.filter(\.current).count == 1)
    }

    @Test func sameUniqueKeyAddedOnTwoMachinesKeepsOneEverywhere() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].put("carol", "a-version")
        Thread.sleep(forTimeInterval: 0.01)
        try m[1].put("carol", "b-version")
        try m[0].engine.sync()
        let r = try m[1].engine.sync()
        #expect(r.conflicts == 1)
        try m[0].engine.sync()
        #expect(try m[0].synced() == ["carol": "b-version"])
        #expect(try m[1].synced() == ["carol": "b-version"])
        let secrets = Set(
            try m[0].engine.history().compactMap { $0.plaintext.map { String(decoding: $0.data, as: UTF8.self) } })
        #expect(secrets.contains("a-version"))
    }

    @Test func deleteBeatsAConcurrentUpdateAndABackupDoesNotBringItBack() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].put("dave", "v1")
        try m[0].engine.sync()
        try m[1].engine.sync()
        let backup = lab.root + "/a.keychain-copy"
        try FileManager.default.copyItem(atPath: m[0].dir + "/login.keychain", toPath: backup)
        try m[0].remove("dave")
        Thread.sleep(forTimeInterval: 0.01)
        try m[1].put("dave", "v2-after-the-delete")
        try m[1].engine.sync()
        try m[0].engine.sync()
        try m[1].engine.sync()
        #expect(try m[0].synced().isEmpty)
        #expect(try m[1].synced().isEmpty)
        // The update is not lost: it is in history, and can be put back as a new item.
        let h = try m[1].engine.history().first {
            $0.plaintext.map { String(decoding: $0.data, as: UTF8.self) } == "v2-after-the-delete"
        }
        #expect(h != nil)
        // An item restored under the deleted id (as restore --merge does) is removed again.
        let old = try Keychain.open(path: backup, devicePath: m[0].dir + "/device", acceptRollback: true)
        let item = try #require(
            try old.find(Query(.genericPassword, ["acct": .string("dave")], synchronizable: .synchronizable)).first)
        let uuid = Array(item.persistentRef.dropFirst(4))
        try m[0].keychain.localStore!.withStreamingTransaction { tx in
            try tx.put(
                uuid: uuid,
                plaintext: ItemPlaintext(
                    itemClass: .genericPassword, attributes: item.attributes.filter { $0.key != "pdmn" },
                    data: item.data),
                protection: .whenUnlocked, flags: 0)
        }
        #expect(try m[0].synced() == ["dave": "v1"])
        let r = try m[0].engine.sync()
        #expect(r.resurrectionsRemoved == 1)
        #expect(try m[0].synced().isEmpty)
        try m[1].engine.sync()
        #expect(try m[1].synced().isEmpty)
        // History puts it back, as a new item that syncs.
        #expect(try m[1].engine.restore(try #require(h)))
        try m[1].engine.sync()
        try m[0].engine.sync()
        #expect(try m[0].synced() == ["dave": "v2-after-the-delete"])
    }

    @Test func accessGroupsTravelWithTheItem() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].keychain.add(
            .genericPassword,
            attributes: [
                "svce": .string("web"), "acct": .string("grp"), "agrp": .string("TEAM.com.example.app"),
                "sync": .integer(1)
            ],
            data: Array("g".utf8))
        try m[0].engine.sync()
        try m[1].engine.sync()
        let found = try m[1].keychain.find(
            Query(.genericPassword, ["acct": .string("grp")], synchronizable: .synchronizable))
        #expect(found.first?.attributes["agrp"] == .string("TEAM.com.example.app"))
        // History keeps to access groups too: another app sees none of that item's versions.
        m[1].keychain.caller = CallerIdentity(applicationIdentifier: "TEAM.com.other.app")
        #expect(try m[1].engine.history().isEmpty)
        m[1].keychain.caller = CallerIdentity(applicationIdentifier: "TEAM.com.example.app")
        #expect(try m[1].engine.history().count == 1)
    }

    @Test func changesForALockedClassWaitUntilItUnlocks() throws {
        let lab = try SyncLab()
        let a = try lab.machine("a", passcode: Array("pa".utf8))
        let b = try lab.machine("b", passcode: Array("pb".utf8))
        _ = try a.engine.initialize(remote: lab.remote, name: "a")
        _ = try a.engine.approve(code: try b.engine.join(remote: lab.remote, name: "b"))
        try a.engine.sync()
        try b.engine.sync()
        try a.put("ak-item", "when-unlocked", protection: .whenUnlocked)
        try a.put("ck-item", "after-first", protection: .afterFirstUnlock)
        try a.engine.sync()
        try b.keychain.lock()
        let r = try b.engine.sync()
        #expect(r.waiting == 1)
        #expect(r.receivedPuts == 1)
        try b.keychain.unlock(passcode: Array("pb".utf8))
        let r2 = try b.engine.sync()
        #expect(r2.receivedPuts == 1)
        #expect(try b.synced() == ["ak-item": "when-unlocked", "ck-item": "after-first"])
    }

    @Test func aSharedFolderWorksAsTheRemote() throws {
        let lab = try SyncLab()
        let folder = lab.root + "/shared"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let a = try lab.machine("a")
        let b = try lab.machine("b")
        _ = try a.engine.initialize(remote: "dir:" + folder, name: "a")
        _ = try a.engine.approve(code: try b.engine.join(remote: "dir:" + folder, name: "b"))
        try a.put("alice", "over-a-folder")
        try a.engine.sync()
        try b.engine.sync()
        #expect(try b.synced() == ["alice": "over-a-folder"])
        try b.remove("alice")
        try b.engine.sync()
        try a.engine.sync()
        #expect(try a.synced().isEmpty)
        // Nothing half-written is left for the folder's tool to carry.
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: folder).filter { $0.hasSuffix(".partial") }
        #expect(leftovers.isEmpty)
    }

    private func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= hay.count else { return false }
        let first = needle[0]
        var i = 0
        while i <= hay.count - needle.count {
            if hay[i] == first, Array(hay[i..<(i + needle.count)]) == needle { return true }
            i += 1
        }
        return false
    }
}
