import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat
import LatchkeyTestSupport
import LatchkeyCrypto

/// Paths, passcodes and the one device secret the engine tests share.
///
/// Every test builds its own disk (a `MemoryFileSystem`, or a temporary directory for the
/// tests that need real permissions and locks), but all of them use the same device secret and
/// a cheap scrypt cost (logN 10) so the suite stays fast.
enum TestEnv {
    static let keychainPath = "/keychains/login.keychain"
    static let devicePath = "/device/device.secret"
    /// Where the device keeps per-keychain state (spec §9.1).
    static let stateDirectory = devicePath + ".state"
    static let logN: UInt8 = 10
    static let passcode = Array("correct horse".utf8)
    static let newPasscode = Array("battery staple".utf8)
    static let wrongPasscode = Array("tr0ub4dor".utf8)

    /// The device secret file of "this" device, generated once for the whole suite.
    static let deviceFile: [UInt8] = try! DeviceSecret.generate().encodeFile()
    /// A second device, for "opened with another device's secret".
    static let otherDeviceFile: [UInt8] = try! DeviceSecret.generate().encodeFile()
}

/// Every live item of a keychain, by persistent reference.
typealias Snapshot = [[UInt8]: Item]

/// A fresh in-memory disk that holds the suite's device secret (mode 0600).
func makeDisk() throws -> MemoryFileSystem {
    let fs = MemoryFileSystem()
    try fs.makeDirectory("/device", mode: 0o700)
    try fs.makeDirectory("/keychains", mode: 0o700)
    fs.setContents(TestEnv.devicePath, TestEnv.deviceFile)
    return fs
}

func createKeychain(on fs: FileSystem, passcode: [UInt8]? = TestEnv.passcode) throws -> Keychain {
    try Keychain.create(
        path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, passcode: passcode,
        kdfLogN: TestEnv.logN, fs: fs)
}

/// Opens the keychain as a new process would: a new `Keychain` instance, locked.
func openKeychain(on fs: FileSystem, acceptRollback: Bool = false) throws -> Keychain {
    try Keychain.open(
        path: TestEnv.keychainPath, devicePath: TestEnv.devicePath, acceptRollback: acceptRollback, fs: fs)
}

extension MemoryFileSystem {
    /// An independent copy of this disk as it is now. Valid only when no power cut happened and
    /// every name is durable, which holds after any completed Keychain operation.
    func clone() -> MemoryFileSystem { rebooted(.keepUnsynced) }

    var keychainBytes: [UInt8] { contents(TestEnv.keychainPath) ?? [] }
}

extension Keychain {
    /// Every item of every class. Throws when a class of a live item is locked.
    func snapshot() throws -> Snapshot {
        var out: Snapshot = [:]
        for c in ItemClass.allCases {
            for item in try find(Query(c)) {
                #expect(out[item.persistentRef] == nil, "two items share a persistent reference")
                out[item.persistentRef] = item
            }
        }
        return out
    }
}

/// Shorthands for attribute dictionaries.
func attrs(_ pairs: KeyValuePairs<String, String>) -> [String: AttributeValue] {
    var out: [String: AttributeValue] = [:]
    for (k, v) in pairs { out[k] = .string(v) }
    return out
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Runs `body` and checks that it throws a `KeychainError` with `status`.
@discardableResult
func expectKeychainError(
    _ status: KeychainStatus, _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> KeychainError? {
    do {
        try body()
        Issue.record(
            "expected \(status.name), but the call succeeded. \(comment.map { "\($0)" } ?? "")",
            sourceLocation: sourceLocation)
        return nil
    } catch let e as KeychainError {
        #expect(
            e.status == status, "expected \(status.name), got \(e). \(comment.map { "\($0)" } ?? "")",
            sourceLocation: sourceLocation)
        return e
    } catch {
        Issue.record(
            "expected KeychainError \(status.name), got \(error). \(comment.map { "\($0)" } ?? "")",
            sourceLocation: sourceLocation)
        return nil
    }
}

/// A temporary directory on the real file system, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/latchkey-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
