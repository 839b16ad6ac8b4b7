#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// Another local user against the device secret and the device state (issue 13, point 6):
/// whoever controls the directory of the device secret, its `.state` directory or a state file
/// could make this user's commands overwrite any file of theirs (a state file planted as a
/// symlink) and reset the passcode attempt counter and the rollback memory. Tests cannot
/// become another user without root; they plant what that user would plant (a symlink, a
/// directory writable by others) with this user's own files, and give files away to another
/// uid only on the in-memory file system or, when running as root, with chown.
@Suite struct LocalUserTests {
    /// A keychain with one item on the real file system: (directory, keychain, device secret).
    func realKeychain() throws -> (TemporaryDirectory, String, String) {
        let dir = try TemporaryDirectory()
        let keychain = dir.path + "/login.keychain"
        let device = dir.path + "/device/device.secret"
        let kc = try Keychain.create(path: keychain, devicePath: device, passcode: nil, kdfLogN: TestEnv.logN)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("s3cret"))
        return (dir, keychain, device)
    }

    func stateFile(_ device: String) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: device + ".state")
        #expect(names.count == 1)
        return device + ".state/" + names[0]
    }

    @Test func stateFilePlantedAsSymlink_isRefused_andItsTargetIsNotWritten() throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        let victim = dir.path + "/precious.txt"
        try Data("my notes".utf8).write(to: URL(fileURLWithPath: victim))
        let state = try stateFile(device)
        #expect(unlink(state) == 0)
        #expect(symlink(victim, state) == 0)

        let error = expectKeychainError(.io) {
            let kc = try Keychain.open(path: keychain, devicePath: device)
            try kc.add(.genericPassword, attributes: attrs(["acct": "bob"]), data: bytes("x"))
        }
        #expect(error?.message.contains("symbolic link") == true, "says what is wrong: \(String(describing: error))")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "my notes", "the link's target is untouched")
    }

    @Test func deviceSecretPlantedAsSymlink_isRefused() throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        let moved = dir.path + "/elsewhere.secret"
        #expect(rename(device, moved) == 0)
        #expect(symlink(moved, device) == 0)
        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(error?.message.contains("symbolic link") == true)
    }

    @Test(arguments: [0o777, 0o770, 0o722, 0o702] as [UInt32])
    func stateDirectoryWritableByOthers_isRefused(mode: UInt32) throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        #expect(chmod(device + ".state", mode_t(mode)) == 0)
        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(
            error?.message.contains("chmod 700 \(device).state") == true,
            "says what to fix: \(String(describing: error))")
        #expect(chmod(device + ".state", 0o700) == 0)
        _ = try Keychain.open(path: keychain, devicePath: device)
    }

    @Test func stateDirectoryPlantedAsSymlink_isRefused() throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        #expect(rename(device + ".state", dir.path + "/their-state") == 0)
        #expect(symlink(dir.path + "/their-state", device + ".state") == 0)
        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(error?.message.contains("not a directory") == true)
    }

    @Test func stateFileWritableByOthers_isRefused() throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        let state = try stateFile(device)
        #expect(chmod(state, 0o666) == 0)
        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(error?.message.contains("chmod 600 \(state)") == true)
    }

    @Test(arguments: [0o777, 0o775, 0o757] as [UInt32])
    func deviceDirectoryWritableByOthers_isRefused(mode: UInt32) throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        #expect(chmod(dir.path + "/device", mode_t(mode)) == 0)
        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(
            error?.message.contains("chmod go-w \(dir.path)/device") == true,
            "says what to fix: \(String(describing: error))")
    }

    @Test func ancestorWritableByOthers_isRefused_butAStickyOneIsNot() throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        #expect(chmod(dir.path, 0o777) == 0)
        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(error?.message.contains(dir.path) == true)
        // Like /tmp: others may add names but not rename or remove this user's.
        #expect(chmod(dir.path, 0o1777) == 0)
        _ = try Keychain.open(path: keychain, devicePath: device)
    }

    @Test func initRefusesToWriteASecretIntoADirectoryOthersCanWrite() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        #expect(mkdir(dir.path + "/shared", 0o777) == 0)
        #expect(chmod(dir.path + "/shared", 0o777) == 0)
        expectKeychainError(.io) {
            _ = try Keychain.create(
                path: dir.path + "/login.keychain", devicePath: dir.path + "/shared/device.secret",
                passcode: nil, kdfLogN: TestEnv.logN)
        }
        #expect(access(dir.path + "/shared/device.secret", F_OK) != 0, "no secret was written there")
    }

    // MARK: Another uid (the in-memory file system gives files away without root)

    func memoryKeychain() throws -> MemoryFileSystem {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        try kc.add(.genericPassword, attributes: attrs(["acct": "alice"]), data: bytes("s3cret"), protection: .always)
        return disk
    }

    @Test func deviceDirectoryOfAnotherUser_isRefused() throws {
        let disk = try memoryKeychain()
        disk.setOwner("/device", disk.userID + 1)
        let error = expectKeychainError(.io) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("belongs to uid \(disk.userID + 1)") == true)
        disk.setOwner("/device", 0)
        _ = try openKeychain(on: disk)
    }

    @Test func stateDirectoryOrFileOfAnotherUser_isRefused() throws {
        let disk = try memoryKeychain()
        disk.setOwner(TestEnv.stateDirectory, disk.userID + 1)
        expectKeychainError(.io) { _ = try openKeychain(on: disk) }
        disk.setOwner(TestEnv.stateDirectory, disk.userID)
        let state = try #require(disk.listFiles().first { $0.hasPrefix(TestEnv.stateDirectory + "/") })
        disk.setOwner(state, disk.userID + 1)
        expectKeychainError(.io) { _ = try openKeychain(on: disk) }
    }

    @Test func deviceSecretOfAnotherUser_isRefused() throws {
        let disk = try memoryKeychain()
        disk.setOwner(TestEnv.devicePath, disk.userID + 1)
        let error = expectKeychainError(.io) { _ = try openKeychain(on: disk) }
        #expect(error?.message.contains("not to you") == true)
    }

    /// With root, the real thing: the directory above the device secret given to another uid.
    @Test(.enabled(if: geteuid() == 0, "chown to another uid needs root"))
    func realDirectoryOfAnotherUser_isRefused() throws {
        let (dir, keychain, device) = try realKeychain()
        defer { dir.remove() }
        #expect(chown(dir.path + "/device", 54321, 54321) == 0)
        let error = expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
        #expect(error?.message.contains("belongs to uid 54321") == true)
        #expect(chown(dir.path + "/device", 0, 0) == 0)
        #expect(chown(device + ".state", 54321, 54321) == 0)
        expectKeychainError(.io) { _ = try Keychain.open(path: keychain, devicePath: device) }
    }

    // MARK: A missing device secret (issue 14, point 8)

    @Test func missingDeviceSecret_namesTheDeviceTheKeychainNeeds_andNeverSuggestsInit() throws {
        let disk = try memoryKeychain()
        let kc = try openKeychain(on: disk)
        let uuid = kc.localStore!.boundDevice.uuidHex
        try disk.remove(TestEnv.devicePath)

        let open = expectKeychainError(.io) { _ = try openKeychain(on: disk) }
        let text = open?.description ?? ""
        #expect(text.contains(uuid), "names the device the header records: \(text)")
        #expect(text.contains(TestEnv.devicePath), "says where it is looked for")
        #expect(text.contains("backup"), "says that a backup restores onto a new device secret")
        #expect(!text.contains("create one with 'latchkey init'"))

        let again = expectKeychainError(.duplicateKeychain) { _ = try createKeychain(on: disk, passcode: nil) }
        #expect(
            again?.message.contains("delete") == false,
            "init never suggests deleting a keychain: \(String(describing: again))")
        #expect(again?.message.contains(uuid) == true)
        #expect(disk.contents(TestEnv.devicePath) == nil, "init made no new device secret beside the keychain")
    }
}
