import Foundation
import Latchkey
import LatchkeySecurity

/// A temporary keychain for the seed samples (kdfLogN 10), with its own configuration.
/// The seeds' code is run inside `run`, so it uses this keychain; nothing in the code changes.
final class SeedKeychain: @unchecked Sendable {
    static let passcode = "1234"
    let directory: String
    let config: LatchkeySecurityConfiguration

    init(caller: CallerIdentity = CallerIdentity(applicationIdentifier: "GFDZH8PDDD.com.me.myapp")) throws {
        directory = FileManager.default.temporaryDirectory.path + "/latchkey-seed-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        _ = try Keychain.create(
            path: directory + "/login.keychain", devicePath: directory + "/device.secret",
            passcode: Array(SeedKeychain.passcode.utf8), kdfLogN: 10)
        config = LatchkeySecurityConfiguration(
            keychainPath: directory + "/login.keychain", devicePath: directory + "/device.secret",
            caller: caller, passcodeSource: .passcode(Array(SeedKeychain.passcode.utf8)))
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func run<T>(_ body: () throws -> T) rethrows -> T { try config.use(body) }
}
