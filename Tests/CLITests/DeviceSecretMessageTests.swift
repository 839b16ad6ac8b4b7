import Foundation
import Testing

/// A deleted device secret (issue 14, point 8): the messages used to say "create one with
/// 'latchkey init'", and init then "delete it first" — the way to lose every item. They must
/// say which device secret the keychain needs, where it is looked for, and that a backup
/// restores onto a new one; init never suggests deleting a keychain.
@Suite struct DeviceSecretMessageTests {
    @Test func deletedDeviceSecret_findAndInitPointAtTheRightSecret_neverAtDeletion() throws {
        let sb = try CLISandbox()
        try sb.initKeychain()
        try sb.add(account: "alice", data: Array("s3cret".utf8))
        let info = try sb.run(["info", "--json"])
        #expect(info.status == 0, "\(info.stderr)")
        let device = try #require(
            (try info.json() as? [String: Any])?["deviceUUID"] as? String, "info --json names the device: \(info.out)")
        let devicePath = sb.directory.appendingPathComponent("device.secret").path
        #expect(unlink(devicePath) == 0)

        let find = try sb.run(["find", "--account", "alice", "--service", "mail"])
        #expect(find.status == 7)
        #expect(find.stderr.contains(device), "names the device the keychain was made with: \(find.stderr)")
        #expect(find.stderr.contains(devicePath), "says where the secret is looked for")
        #expect(find.stderr.contains("backup"), "says that a backup restores onto a new device secret")
        #expect(!find.stderr.contains("create one with 'latchkey init'"))

        let again = try sb.run(["init", "--kdf-log-n", CLISandbox.kdfLogN])
        #expect(again.status == 7)
        #expect(
            !again.stderr.lowercased().contains("delete"), "init never suggests deleting the keychain: \(again.stderr)")
        #expect(again.stderr.contains(device), "\(again.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: devicePath), "init made no new device secret for the old keychain")
    }
}
