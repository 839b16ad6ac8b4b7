import Foundation
import LatchkeyTestSupport
import Testing

@testable import Latchkey
@testable import LatchkeySync

/// Sync's local writes under the project's power-loss model (issue 29, "extend the fault and
/// power-loss harnesses to sync's local writes"): machine a's keychain and `<keychain>.sync/`
/// live on a `MemoryFileSystem`; the power is cut before each mutating file operation of one
/// sync, and every disk the next boot may find (up to LATCHKEY_SYNC_POWERLOSS_STATES per cut)
/// is opened as a new process would and synced again. The remote is a shared folder on the
/// real disk (`dir:`), which a crash of a does not touch, as a real remote.
///
/// Each state must open, sync, and converge with machine b to exactly the items both wrote,
/// with no version sent twice (each item's history holds one put).
@Suite struct SyncPowerLossTests {
    static let statesPerCut = environmentCount("LATCHKEY_SYNC_POWERLOSS_STATES", default: 4)

    static func environmentCount(_ name: String, default d: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? d
    }

    /// A machine whose keychain is on `disk`.
    struct DiskMachine {
        let disk: MemoryFileSystem
        let keychain: Keychain
        let engine: SyncEngine

        static let path = "/m/login.keychain"
        static let device = "/m/device"

        init(_ disk: MemoryFileSystem) throws {
            self.disk = disk
            keychain = try Keychain.open(path: Self.path, devicePath: Self.device, fs: disk)
            engine = try SyncEngine(keychain: keychain)
            engine.compactEvery = 1
            engine.acknowledgeEvery = 0
        }

        static func create() throws -> DiskMachine {
            let disk = MemoryFileSystem()
            try disk.makeDirectory("/m", mode: 0o700)
            _ = try Keychain.create(path: path, devicePath: device, passcode: nil, kdfLogN: 10, fs: disk)
            return try DiskMachine(disk)
        }

        func put(_ account: String, _ secret: String) throws {
            try keychain.add(
                .genericPassword,
                attributes: ["svce": .string("web"), "acct": .string(account), "sync": .integer(1)],
                data: Array(secret.utf8), protection: .afterFirstUnlock)
        }

        func synced() throws -> [String: String] {
            var out: [String: String] = [:]
            let q = Query(.genericPassword, ["svce": .string("web")], synchronizable: .synchronizable)
            for i in try keychain.find(q) {
                if case .string(let a)? = i.attributes["acct"] { out[a] = String(decoding: i.data, as: UTF8.self) }
            }
            return out
        }
    }

    /// Replaces the folder `to` by a copy of `from`.
    static func copyFolder(_ from: String, _ to: String) throws {
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }

    /// A circle of a and b on a shared folder, each with one item a has not synced yet; the
    /// disks and the folder as they are then.
    final class Lab {
        let root: String
        let folder: String
        let startA: MemoryFileSystem
        let startB: MemoryFileSystem
        let expected = ["bank": "from-a", "mail": "from-b", "old1": "x", "old2": "x"]

        init() throws {
            root =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "lk-sync-power-\(UUID().uuidString.prefix(8))"
                ).path
            folder = root + "/remote"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let remote = "dir:" + folder
            let a = try DiskMachine.create()
            let recovery = try a.engine.initialize(remote: remote, name: "a")
            let b = try DiskMachine.create()
            try b.engine.join(remote: remote, name: "b", recoveryKey: recovery)
            try a.engine.sync()
            try b.engine.sync()
            // Two segments of a that b applied and acknowledged: a's next sync writes a base and
            // removes them (§7.5), so that the crashes below meet that publish too.
            for account in ["old1", "old2"] {
                try a.put(account, "x")
                try a.engine.sync()
                try b.engine.sync()
            }
            try a.put("bank", "from-a")
            try b.put("mail", "from-b")
            try b.engine.sync()
            startA = a.disk.rebooted(.keepUnsynced)
            startB = b.disk.rebooted(.keepUnsynced)
            try SyncPowerLossTests.copyFolder(folder, root + "/remote-start")
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        func resetRemote() throws { try SyncPowerLossTests.copyFolder(root + "/remote-start", folder) }

        /// a (on `disk`) syncs, then b, then a again: both must hold exactly `expected`, and a's
        /// history one put per item. - Returns: what is wrong, nil when nothing is.
        func converges(_ disk: MemoryFileSystem) throws -> String? {
            let again = try DiskMachine(disk)
            try again.engine.sync()
            let other = try DiskMachine(startB.rebooted(.keepUnsynced))
            try other.engine.sync()
            try again.engine.sync()
            let mine = try again.synced(), theirs = try other.synced()
            if mine != expected || theirs != expected { return "a \(mine), b \(theirs)" }
            let puts = try again.engine.history().filter { $0.version.kind == .put }
            if puts.count != 4 { return "\(puts.count) versions in history: a version was sent twice, or lost" }
            return nil
        }
    }

    @Test func powerCutAtEveryStepOfASync_everyStateSyncsAgainAndConverges() throws {
        let lab = try Lab()
        let folder = lab.folder, root = lab.root, startA = lab.startA
        var k = 0, replayed = 0
        while true {
            #expect(k < 400, "the sync never completed")
            if k >= 400 { break }
            try lab.resetRemote()
            let disk = startA.rebooted(.keepUnsynced)
            let m = try DiskMachine(disk)
            let base = disk.mutations
            disk.plan = (at: k, fault: .powerCut)
            let returned = (try? m.engine.sync()) != nil
            let cut = disk.mutations - base > k
            disk.plan = nil
            let at = cut ? "power cut before mutation \(k)" : "power cut after the sync returned \(returned)"
            try Self.copyFolder(folder, root + "/remote-cut")

            for (i, state) in disk.crashStates(.init(blockSize: 4096, limit: Self.statesPerCut)).enumerated() {
                replayed += 1
                try Self.copyFolder(root + "/remote-cut", folder)
                do {
                    if let wrong = try lab.converges(state) { Issue.record("\(at), state \(i): \(wrong)") }
                } catch {
                    Issue.record("\(at), state \(i): \(error)")
                }
            }
            if !cut { break }
            k += 1
        }
        #expect(k > 5, "a sync that writes its state made only \(k) mutations")
        print("sync power loss: \(k + 1) cuts, \(replayed) states replayed")
    }

    /// An I/O error (EIO, ENOSPC, or a short write then ENOSPC) at each failing call of one
    /// sync: the sync fails or succeeds, and the same process syncing again once the disk
    /// answers converges, as does a process that opens the keychain afresh.
    @Test(arguments: [
        MemoryFileSystem.CallFault.error(EIO), .error(ENOSPC), .shortWrite(errno: ENOSPC)
    ])
    func anIOErrorAtEveryCallOfASync_aRetryConverges(_ fault: MemoryFileSystem.CallFault) throws {
        let lab = try Lab()
        var k = 0, failed = 0
        while true {
            #expect(k < 2000, "the sync never completed")
            if k >= 2000 { break }
            try lab.resetRemote()
            let disk = lab.startA.rebooted(.keepUnsynced)
            let m = try DiskMachine(disk)
            let base = disk.calls
            disk.callPlan = (at: k, fault: fault)
            let returned = (try? m.engine.sync()) != nil
            let hit = disk.calls - base > k
            disk.callPlan = nil
            if !returned { failed += 1 }
            do {
                // The same process, then a new one on the disk as it is.
                try m.engine.sync()
                if let wrong = try lab.converges(disk.rebooted(.keepUnsynced)) {
                    Issue.record("\(fault) at call \(k): \(wrong)")
                }
            } catch {
                Issue.record("\(fault) at call \(k): a retry failed: \(error)")
            }
            if !hit { break }
            k += 1
        }
        #expect(failed > 0, "no fault made the sync fail")
        print("sync I/O faults (\(fault)): \(k + 1) calls, \(failed) syncs failed")
    }
}
