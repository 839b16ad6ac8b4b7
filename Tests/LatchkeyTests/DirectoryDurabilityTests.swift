import Testing
@testable import Latchkey

/// The names of new directories are made durable in their parents (issue 14, point 6).
@Suite struct DirectoryDurabilityTests {
    /// `init` makes …/latchkey (and the directories above it); each new directory's name
    /// must be made durable in its parent, or a power cut loses the keychain and the device
    /// secret although both files were fsynced.
    @Test func newDirectories_surviveAPowerCut() throws {
        let disk = MemoryFileSystem()
        let base = "/home/alice/.local/share/latchkey"
        _ = try Keychain.create(path: base + "/login.keychain", devicePath: base + "/device.secret", passcode: nil,
                                kdfLogN: TestEnv.logN, fs: disk)
        let after = disk.rebooted(.loseUnsynced)
        _ = try Keychain.open(path: base + "/login.keychain", devicePath: base + "/device.secret", fs: after)
    }
}
