import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport

/// What a commit says when its fsync fails, and what a power cut can do to the device state,
/// which is not fsync'd on each commit (spec/FORMAT.md §9.3).
@Suite struct CommitDurabilityTests {
    typealias Hooked = RollbackRaceTests.HookedFileSystem

    func newItem(_ account: String) -> NewItem {
        NewItem(
            .genericPassword, attributes: attrs(["acct": account, "svce": "s"]), data: bytes("x"), protection: .always)
    }

    /// The fsync fails and so does cutting the records back: they are in the file whole, so
    /// the next reader takes the change as made. The error must not let the caller think
    /// nothing changed.
    @Test func aCommitWhoseFsyncAndCutBackFail_saysTheChangeMayBeInTheKeychain() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk, passcode: nil)
        let hooked = Hooked(disk)
        let kc = try openKeychain(on: hooked)
        try kc.add(contentsOf: [newItem("first")])  // the directory is synced before this append
        hooked.failing = ["fsync": 2, "ftruncate": 1]
        let e = expectKeychainError(.io) { try kc.add(contentsOf: [newItem("new")]) }
        hooked.failing = [:]
        #expect(
            e?.message.contains("the change may be in the keychain: check with 'latchkey find' before trying again")
                == true, "\(String(describing: e))")
        #expect(e?.message.contains("an I/O error occurred") == true, "\(String(describing: e))")
        #expect(try openKeychain(on: disk).find(Query(.genericPassword, ["acct": .string("new")])).count == 1)
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("new")])).count == 1)
    }

    /// When the cut-back works, nothing changed, and the error says only what failed.
    @Test func aCommitWhoseFsyncFails_andIsCutBack_saysNothingOfTheKind() throws {
        let disk = try makeDisk()
        _ = try createKeychain(on: disk, passcode: nil)
        let hooked = Hooked(disk)
        let kc = try openKeychain(on: hooked)
        try kc.add(contentsOf: [newItem("first")])
        let size = disk.keychainBytes.count
        hooked.failing = ["fsync": 1]
        let e = expectKeychainError(.io) { try kc.add(contentsOf: [newItem("new")]) }
        hooked.failing = [:]
        #expect(e?.message.contains("may be in the keychain") == false, "\(String(describing: e))")
        #expect(disk.keychainBytes.count == size)
        #expect(try openKeychain(on: disk).find(Query(.genericPassword, ["acct": .string("new")])).isEmpty)
    }

    /// After a power cut the device state may be far behind the file (it was fsync'd once,
    /// when made): the file still opens with every acknowledged commit, since the state only
    /// lowers what counts as acknowledged, and a power cut damages no fsync'd record. The
    /// power-loss replay runs an add on such a disk (`WriteOperation.addWithStateBehind`).
    @Test func afterAPowerCut_theStateLags_andEveryAcknowledgedCommitIsKept() throws {
        let disk = try WriteOperation.addWithStateBehind.start()
        let device = try Device.load(path: TestEnv.devicePath, fs: disk)
        let fileUUID = try openKeychain(on: disk.clone()).localStore!.fileUUID
        let seen = try #require(try device.state(fileUUID: fileUUID)).newestSequence
        let kc = try openKeychain(on: disk)
        #expect(seen < kc.localStore!.lastSequence, "the state does not lag: the replay would show nothing")
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(try kc.find(Query(.genericPassword, ["svce": .string("behind")]), limit: nil).count == 3)
    }

    /// Adopting a rolled-back file lowers the remembered number; unsynced, a power cut could
    /// bring the higher number back, and the adopted keychain would be called rolled back
    /// again (or the torn tail of a later append damage).
    @Test func anAdoptedRollback_survivesAPowerCut() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(contentsOf: [newItem("a0")])
        let old = disk.keychainBytes
        try kc.add(contentsOf: [newItem("a1")])
        try kc.add(contentsOf: [newItem("a2")])
        let statePath = kc.localStore!.device.statePath(fileUUID: kc.localStore!.fileUUID)
        disk.setContents(statePath, try #require(disk.contents(statePath)))  // the kernel wrote it back
        disk.setContents(TestEnv.keychainPath, old)
        let e = expectKeychainError(.decode) { _ = try openKeychain(on: disk) }
        #expect(e?.message.contains("rolled back") == true)
        _ = try openKeychain(on: disk, acceptRollback: true)
        let rebooted = disk.rebooted(.loseUnsynced)
        let reopened = try openKeychain(on: rebooted)
        #expect(try reopened.find(Query(.genericPassword), limit: nil).count == 1)
    }
}
