#if canImport(Glibc)
    import Glibc
#endif
import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// The names of new directories are made durable in their parents (issue 14, point 6).
@Suite struct DirectoryDurabilityTests {
    /// `init` makes …/latchkey (and the directories above it); each new directory's name
    /// must be made durable in its parent, or a power cut loses the keychain and the device
    /// secret although both files were fsynced.
    @Test func newDirectories_surviveAPowerCut() throws {
        let disk = MemoryFileSystem()
        let base = "/home/alice/.local/share/latchkey"
        _ = try Keychain.create(
            path: base + "/login.keychain", devicePath: base + "/device.secret", passcode: nil,
            kdfLogN: TestEnv.logN, fs: disk)
        let after = disk.rebooted(.loseUnsynced)
        _ = try Keychain.open(path: base + "/login.keychain", devicePath: base + "/device.secret", fs: after)
    }

    /// The fsync of a new directory's parent fails: `init` fails (or, for the device state
    /// directory, goes on without the state), and the next `init` must sync that parent again.
    /// (It found the directory there and did not, so the keychain and device secret it then
    /// created, and the item added to it, were lost by a power cut.)
    @Test(arguments: [EIO, ENOSPC])
    func aFailedParentSync_isDoneAgainByTheNextInit(_ errno: Int32) throws {
        let base = "/home/alice/.local/share/latchkey"
        func create(_ fs: MemoryFileSystem) throws -> Keychain {
            try Keychain.create(
                path: base + "/login.keychain", devicePath: base + "/device.secret", passcode: nil,
                kdfLogN: TestEnv.logN, fs: fs)
        }
        let probe = MemoryFileSystem()
        probe.recordCalls = true
        _ = try create(probe)
        // Each fsync of "/", /home … up to latchkey (the parent of device.secret.state, and the
        // directory of the device secret and the keychain).
        let parents = ["/", "/home", "/home/alice", "/home/alice/.local", "/home/alice/.local/share", base]
        let parentSyncs = probe.callLog.indices.filter {
            probe.callLog[$0].name == "fsync" && parents.contains(probe.callLog[$0].path)
        }
        #expect(parentSyncs.count >= parents.count, "an fsync of the parent of each new directory: \(probe.callLog)")
        for n in parentSyncs {
            let disk = MemoryFileSystem()
            disk.callPlan = (at: n, fault: .error(errno))
            let first = Result { try create(disk) }
            disk.callPlan = nil
            let kc = try (try? first.get()) ?? create(disk)
            try kc.add(.genericPassword, attributes: ["acct": .string("a")], data: [1])
            let after = try Keychain.open(
                path: base + "/login.keychain", devicePath: base + "/device.secret", fs: disk.rebooted(.loseUnsynced))
            #expect(try after.localStore!.liveItemCount == 1, "fault at \(probe.callLog[n])")
        }
    }

    /// A compaction or passcode change renamed its new file into place, then the fsync of the
    /// directory failed (the error says the old file may come back) — or the process died
    /// before that fsync. Another process then adds an item: its add must not be acknowledged
    /// while the name of the file it appended to can still go, or a power cut takes the item.
    @Test(arguments: [FaultScenario.compact, FaultScenario.changePasscode])
    func anotherProcessesAdd_afterAReplacementWhoseDirectorySyncFailed_survivesAPowerCut(_ replacement: FaultScenario)
        throws
    {
        let prepared = WriteOperation.Prepared.shared.disk
        let probe = prepared.clone()
        let a = try openKeychain(on: probe)
        try a.unlock(passcode: TestEnv.passcode)
        probe.recordCalls = true
        try replacement.operation(a)
        let log = probe.callLog
        let rename = try #require(log.firstIndex { $0.name == "rename" })
        let directorySync = try #require(
            log.indices.first { $0 > rename && log[$0].name == "fsync" && log[$0].path == "/keychains" })

        let disk = prepared.clone()
        let first = try openKeychain(on: disk)
        try first.unlock(passcode: TestEnv.passcode)
        disk.callPlan = (at: directorySync, fault: .error(EIO))
        #expect(throws: KeychainError.self) { try replacement.operation(first) }
        disk.callPlan = nil

        let second = try openKeychain(on: disk)  // another process
        try second.unlock(passcode: replacement.changesPasscode ? TestEnv.newPasscode : TestEnv.passcode)
        try second.add(
            .genericPassword, attributes: attrs(["acct": "acknowledged", "svce": "later"]), data: bytes("kept"))

        let booted = try openKeychain(on: disk.rebooted(.loseUnsynced))
        if (try? booted.unlock(passcode: TestEnv.newPasscode)) == nil { try booted.unlock(passcode: TestEnv.passcode) }
        #expect(
            try booted.find(Query(.genericPassword, attrs(["acct": "acknowledged"]))).count == 1,
            "the item another process added after the \(replacement) was lost by a power cut")
    }
}
