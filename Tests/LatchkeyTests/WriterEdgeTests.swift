import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import Testing
@testable import Latchkey
import LatchkeyFormat

/// Writers at the edges of the medium (issue 14 §4, §8). The I/O-fault loop, the size-limit
/// and read-only harnesses (IOFaultLoopTests, SizeLimitTests, ReadOnlyMediumTests) cover the
/// same ground for every writer; these are the direct library-level cases.
@Suite struct WriterEdgeTests {
    /// Issue 14 §4: a keychain on a medium that cannot be written opens for reading; finds,
    /// verify and info work, and writers fail with a message that says it is read-only.
    @Test func keychainOnAReadOnlyMedium_canBeReadButNotWritten() throws {
        let disk = try makeDisk()
        let created = try createKeychain(on: disk, passcode: TestEnv.passcode)
        try created.add(
            .genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("a"), protection: .whenUnlocked)
        let before = disk.keychainBytes
        disk.readOnlyMedium = true
        let kc = try openKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        #expect(try kc.find(Query(.genericPassword)).map(\.data) == [bytes("a")])
        #expect(kc.verify().ok)
        #expect(try kc.info().liveItems == 1)
        let error = expectKeychainError(.readOnly) {
            try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("b"), protection: .always)
        }
        #expect(error?.message.contains("read-only") == true, "\(String(describing: error))")
        expectKeychainError(.readOnly) { try kc.compact() }
        expectKeychainError(.readOnly) {
            try kc.changePasscode(old: TestEnv.passcode, new: TestEnv.newPasscode, kdfLogN: TestEnv.logN)
        }
        #expect(disk.keychainBytes == before)
    }

    /// Issue 14 §8: a keychain path that is a directory says so, on open and on create.
    @Test func keychainPathThatIsADirectory_saysSo() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let device = dir.path + "/device.secret"
        _ = try Keychain.create(path: dir.path + "/k", devicePath: device, passcode: nil)
        let calls: [() throws -> Void] = [
            { _ = try Keychain.open(path: dir.path, devicePath: device) },
            { _ = try Keychain.create(path: dir.path, devicePath: device, passcode: nil) }
        ]
        for call in calls {
            let error = expectKeychainError(.param) { try call() }
            #expect(error?.message.contains("is a directory") == true, "\(String(describing: error))")
        }
    }
}
