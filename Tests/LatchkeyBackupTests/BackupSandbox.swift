import Foundation
import Latchkey
import LatchkeyBackup
import LatchkeyFormat
import Testing

/// A temporary directory with a source device and keychain, and paths for a second machine.
/// Every KDF runs at logN 10 so the suites stay fast.
final class BackupSandbox {
    static let passcode = Array("correct horse".utf8)
    static let password = Array("backup battery staple".utf8)
    static let logN: UInt8 = 10

    let directory: String
    var keychainPath: String { directory + "/source.keychain" }
    var devicePath: String { directory + "/source.device" }
    var otherDevicePath: String { directory + "/other.device" }
    var backupPath: String { directory + "/keychain.backup" }

    init() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-backup-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func path(_ name: String) -> String { directory + "/" + name }

    /// A source keychain with a passcode, unlocked.
    func makeSource(passcode: [UInt8]? = BackupSandbox.passcode) throws -> Keychain {
        try Keychain.create(path: keychainPath, devicePath: devicePath, passcode: passcode, kdfLogN: BackupSandbox.logN)
    }

    /// One generic password per protection class (akpu only with a passcode), plus an
    /// internet password and a key, with recognisable data.
    @discardableResult
    func populate(_ kc: Keychain) throws -> [Item] {
        var out: [Item] = []
        for pc in ProtectionClass.allCases where pc != .whenPasscodeSetThisDeviceOnly || kc.hasPasscode {
            out.append(
                try kc.add(
                    .genericPassword, attributes: ["acct": .string("user-\(pc.code)"), "svce": .string("mail")],
                    data: Array("secret-\(pc.code)".utf8), protection: pc))
        }
        out.append(
            try kc.add(
                .internetPassword,
                attributes: [
                    "acct": .string("alice"), "srvr": .string("example.com"),
                    "ptcl": .integer(443), "port": .integer(443)
                ],
                data: Array("web".utf8), protection: .afterFirstUnlock))
        out.append(
            try kc.add(
                .key, attributes: ["kcls": .integer(1), "atag": .data([1, 2, 3]), "labl": .string("signing key")],
                data: [UInt8](repeating: 7, count: 64), protection: .alwaysThisDeviceOnly))
        return out
    }

    /// Backs up `kc` to `backupPath` (or `path`).
    @discardableResult
    func backup(
        _ kc: Keychain, password: [UInt8]? = BackupSandbox.password, compression: BackupCompression = .none,
        to path: String? = nil
    ) throws -> BackupSummary {
        try BackupArchive.write(
            kc, toFile: path ?? backupPath,
            options: BackupOptions(password: password, compression: compression, kdfLogN: BackupSandbox.logN))
    }

    /// Verifies and restores `backup` into a new keychain `name` with the device at `devicePath`.
    func restoreNew(
        _ backup: String? = nil, name: String = "restored.keychain", devicePath: String,
        password: [UInt8]? = BackupSandbox.password, passcode: [UInt8]? = BackupSandbox.passcode,
        dryRun: Bool = false
    ) throws -> RestoreReport {
        let source = try BackupSource.file(backup ?? backupPath)
        let device = FileManager.default.fileExists(atPath: devicePath) ? try Device.load(path: devicePath) : nil
        let verified = try VerifiedBackup.verify(
            source, device: device, password: { password },
            target: .newKeychain(hasPasscode: passcode != nil))
        if dryRun { return verified.plan }
        return try verified.restoreNewKeychain(
            path: path(name), devicePath: devicePath, passcode: passcode, kdfLogN: BackupSandbox.logN)
    }

    /// Verifies and merges `backup` into `kc`.
    func merge(
        _ backup: String? = nil, into kc: Keychain, password: [UInt8]? = BackupSandbox.password,
        dryRun: Bool = false, conflicts: RestoreConflictPolicy = .newerWins, listItems: Bool = false
    ) throws -> RestoreReport {
        let verified = try VerifiedBackup.verify(
            try BackupSource.file(backup ?? backupPath), device: nil,
            password: { password }, target: .existing(kc), conflicts: conflicts,
            listItems: listItems)
        if dryRun { return verified.plan }
        return try verified.restore()
    }

    /// Every item of every class, with its data.
    static func allItems(_ kc: Keychain) throws -> [Item] {
        var out: [Item] = []
        for c in ItemClass.allCases {
            out += try kc.find(Query(c, synchronizable: .any))
        }
        return out.sorted { $0.persistentRef.lexicographicallyPrecedes($1.persistentRef) }
    }

    func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    func write(_ bytes: [UInt8], to path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
}

/// Runs `body` and returns the KeychainError it throws (recording an issue if none).
func keychainError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> KeychainError? {
    do {
        try body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch let e as KeychainError {
        return e
    } catch {
        Issue.record("expected a KeychainError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
