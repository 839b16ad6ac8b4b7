import Foundation
import Latchkey
import LatchkeyFormat
import Testing

@testable import LatchkeySync

/// Random operations on three machines, synced in random orders, end with the same items on
/// every machine, and no version that any machine synced is lost (it is current or in
/// history). LK_SYNC_OPS sets the number of operations (default 120; `make sync-soak` runs 1,000).
@Suite(.serialized) struct ConvergenceTests {
    struct Rng: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test(arguments: [UInt64(1), 2])
    func randomOperationsConverge(seed: UInt64) throws {
        let ops = Int(ProcessInfo.processInfo.environment["LK_SYNC_OPS"] ?? "") ?? 120
        var rng = Rng(state: seed)
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b", "c"])
        let accounts = ["u0", "u1", "u2", "u3", "u4", "u5"]
        // Every value a machine held when it synced: each must survive, current or in history.
        var acknowledged = Set<String>()
        var counter = 0
        for _ in 0..<ops {
            let x = m[Int.random(in: 0..<3, using: &rng)]
            let account = accounts.randomElement(using: &rng)!
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:
                counter += 1
                try x.put(account, "\(x.name)-\(counter)")
            case 5..<7:
                if try x.synced()[account] != nil { try x.remove(account) }
            default:
                for v in try x.synced().values { acknowledged.insert(v) }
                try x.engine.sync()
            }
        }
        for _ in 0..<2 {
            for x in m {
                for v in try x.synced().values { acknowledged.insert(v) }
                try x.engine.sync()
            }
        }
        let finals = try m.map { try $0.synced() }
        #expect(finals[0] == finals[1])
        #expect(finals[1] == finals[2])
        for x in m {
            let history = try x.engine.history()
            let values = Set(history.compactMap { $0.plaintext.map { String(decoding: $0.data, as: UTF8.self) } })
            let lost = acknowledged.subtracting(values)
            #expect(lost.isEmpty, "\(x.name) lost \(lost.sorted())")
            // The current items are exactly the history's current puts.
            let current = Set(
                history.filter { $0.current && $0.version.kind == .put }.compactMap {
                    $0.plaintext.map { String(decoding: $0.data, as: UTF8.self) }
                })
            #expect(current == Set(finals[0].values))
        }
    }

    /// A sync stopped at any step (as by kill -9 or an I/O error there) leaves a state from
    /// which the next sync converges: nothing lost, nothing twice.
    @Test(arguments: ["fetched", "ingested", "segment written", "applied", "saved"])
    func aSyncStoppedAtAnyStepConverges(step: String) throws {
        struct Stop: Error {}
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try m[0].put("x", "1")
        try m[1].put("y", "2")
        try m[1].engine.sync()
        try m[0].put("x", "1b")
        m[0].engine.checkpoint = { if $0 == step { throw Stop() } }
        #expect(throws: Stop.self) { try m[0].engine.sync() }
        m[0].engine.checkpoint = { _ in }
        try m[0].engine.sync()
        try m[1].engine.sync()
        try m[0].engine.sync()
        #expect(try m[0].synced() == ["x": "1b", "y": "2"])
        #expect(try m[1].synced() == ["x": "1b", "y": "2"])
        // No version twice: y=2 and x=1b were each sent once (x=1 was overwritten before any sync).
        let history = try m[1].engine.history().filter { $0.version.kind == .put }
        #expect(
            history.compactMap { $0.plaintext.map { String(decoding: $0.data, as: UTF8.self) } }.sorted() == ["1b", "2"]
        )
    }

    /// An unreachable remote fails the sync with git's reason; local use goes on, and the next
    /// sync sends what waited.
    @Test func anUnreachableRemoteLosesNothing() throws {
        let lab = try SyncLab()
        let m = try lab.circle(["a", "b"])
        try FileManager.default.moveItem(atPath: lab.remote, toPath: lab.remote + ".away")
        try m[0].put("offline", "edit")
        #expect(throws: (any Error).self) { try m[0].engine.sync() }
        #expect(m[0].engine.lastOutcome().lastError.isEmpty == false)
        try FileManager.default.moveItem(atPath: lab.remote + ".away", toPath: lab.remote)
        try m[0].engine.sync()
        try m[1].engine.sync()
        #expect(try m[1].synced() == ["offline": "edit"])
        #expect(m[0].engine.lastOutcome().lastError.isEmpty == true)
    }
}

/// No credential of a remote URL reaches an error message or the status file.
@Suite struct RemoteCredentialTests {
    @Test func aPasswordInTheRemoteURLIsNeverShown() throws {
        let lab = try SyncLab()
        let m = try lab.machine("a")
        let url = "https://someone:S3CRET-TOKEN@127.0.0.1:9/nothing.git"
        #expect(redacted(url) == "https://someone:***@127.0.0.1:9/nothing.git")
        do {
            _ = try m.engine.initialize(remote: url, name: "a")
            Issue.record("a sync with an unreachable remote succeeded")
        } catch {
            #expect(!"\(error)".contains("S3CRET-TOKEN"))
            #expect("\(error)".contains("***"))
        }
    }
}
