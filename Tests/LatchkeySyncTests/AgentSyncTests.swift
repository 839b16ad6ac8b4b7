import Foundation
import Latchkey
import LatchkeyAgent
import Testing

@testable import LatchkeySync

/// The agent syncs by itself (issue 29): shortly after a change made through it; a failure is
/// kept for `latchkey status` and loses nothing; the network steps of a sync hold no keychain.
@Suite(.serialized) struct AgentSyncTests {
    /// Polls `done` for up to `seconds`.
    func eventually(_ seconds: Double = 30, _ done: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try done() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try done()
    }

    @Test func theAgentSyncsAfterAChange_andAFailureIsReportedAndLosesNothing() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        let a = ms[0], b = ms[1]
        let path = a.dir + "/login.keychain"
        a.keychain.close()
        var c = AgentServer.Configuration(socketPath: lab.root + "/run/agent.sock", strictDirectory: true)
        c.syncDelay = 0.2
        c.syncInterval = 3600
        let server = AgentServer(configuration: c)
        try server.start()
        defer { server.stop() }
        let served = try #require(
            try Keychain.openThroughAgent(path: path, devicePath: a.dir + "/device", socketPath: c.socketPath))
        #expect(served.isServedByAgent)
        func add(_ account: String, _ secret: String) throws {
            try served.add(
                .genericPassword,
                attributes: ["svce": .string("web"), "acct": .string(account), "sync": .integer(1)],
                data: Array(secret.utf8), protection: .afterFirstUnlock)
        }

        // A change made through the agent reaches the other machine without a 'latchkey sync' on a.
        try add("mail", "one")
        #expect(
            try eventually {
                try b.engine.sync()
                return try b.synced()["mail"] == "one"
            }, "the agent did not sync the change")
        #expect(SyncEngine.lastOutcome(keychainPath: path)?.lastError == "")
        #expect((SyncEngine.lastOutcome(keychainPath: path)?.lastSync ?? 0) > 0)

        // The remote goes away: the next change is kept here, served at once, and the failure
        // is in the status file (what `latchkey status` shows).
        try FileManager.default.moveItem(atPath: lab.remote, toPath: lab.remote + ".away")
        try add("bank", "two")
        #expect(
            try eventually { SyncEngine.lastOutcome(keychainPath: path)?.lastError.isEmpty == false },
            "a failed sync left no error for 'latchkey status'")
        let failure = SyncEngine.lastOutcome(keychainPath: path)?.lastError ?? ""
        #expect(failure.contains("remote") || failure.contains("git"), "\(failure)")
        let found = try served.find(
            Query(.genericPassword, ["acct": .string("bank")], synchronizable: .synchronizable), includeData: true)
        #expect(found.map { String(decoding: $0.data, as: UTF8.self) } == ["two"])

        // Back again: the next change syncs both, nothing lost meanwhile.
        try FileManager.default.moveItem(atPath: lab.remote + ".away", toPath: lab.remote)
        try add("shop", "three")
        #expect(
            try eventually {
                try b.engine.sync()
                let s = try b.synced()
                return s["bank"] == "two" && s["shop"] == "three"
            }, "the changes made while the remote was away did not arrive")
        #expect(SyncEngine.lastOutcome(keychainPath: path)?.lastError == "")
    }

    /// A keychain that does not sync is never synced by the agent: no `.sync` directory appears.
    @Test func aKeychainThatDoesNotSyncIsLeftAlone() throws {
        let lab = try SyncLab()
        let m = try lab.machine("solo")
        let path = m.dir + "/login.keychain"
        m.keychain.close()
        var c = AgentServer.Configuration(socketPath: lab.root + "/run/agent.sock", strictDirectory: true)
        c.syncDelay = 0.05
        let server = AgentServer(configuration: c)
        try server.start()
        defer { server.stop() }
        let served = try #require(
            try Keychain.openThroughAgent(path: path, devicePath: m.dir + "/device", socketPath: c.socketPath))
        try served.add(
            .genericPassword, attributes: ["acct": .string("x"), "sync": .integer(1)], data: Array("s".utf8))
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!FileManager.default.fileExists(atPath: SyncEngine.directory(for: path)))
        #expect(SyncEngine.lastOutcome(keychainPath: path) == nil)
    }

    /// The fetch and the push run outside `withKeychain` (the agent's hold on the keychain);
    /// reading and writing the keychain run inside it.
    @Test func theNetworkStepsHoldNoKeychain() throws {
        let lab = try SyncLab()
        let ms = try lab.circle(["a", "b"])
        try ms[0].put("mail", "one")
        try ms[1].put("bank", "two")
        try ms[1].engine.sync()
        var inside = false
        var seen: [String: Bool] = [:]
        let e = ms[0].engine
        e.withKeychain = { body in
            inside = true
            defer { inside = false }
            try body()
        }
        e.checkpoint = { seen[$0] = inside }
        let r = try e.sync()
        #expect(r.sentPuts == 1 && r.receivedPuts == 1)
        #expect(seen["fetched"] == false && seen["pushed"] == false, "\(seen)")
        #expect(seen["loaded"] == false, "the load ran inside; the checkpoint after it outside")
        #expect(seen["scanned local"] == true && seen["applied"] == true && seen["saved"] == true, "\(seen)")
    }
}
