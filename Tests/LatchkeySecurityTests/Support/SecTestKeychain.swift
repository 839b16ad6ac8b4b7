import Foundation
import Testing
import Latchkey
import LatchkeySecurity

/// The app identity most tests call as (reference §6: application-identifier only).
let appID = "GFDZH8PDDD.com.yourcompany.KeyChainApp"
let testPasscode = "correct horse"

/// A temporary keychain (Keychain.create with kdfLogN 10, so the suite stays fast) and a
/// configuration of its own, so tests run in parallel without sharing state. Removed on deinit.
final class SecTestKeychain: @unchecked Sendable {
    let directory: String
    let config: LatchkeySecurityConfiguration
    var keychainPath: String { directory + "/login.keychain" }
    var devicePath: String { directory + "/device.secret" }

    /// - Parameters:
    ///   - passcode: the keychain's passcode; nil makes a keychain without one.
    ///   - unlocked: whether the configuration knows the passcode (else the keychain stays locked).
    ///   - create: false leaves the keychain absent (for the creation rules).
    init(
        passcode: String? = testPasscode, unlocked: Bool = true,
        caller: CallerIdentity? = CallerIdentity(applicationIdentifier: appID),
        create: Bool = true
    ) throws {
        directory = FileManager.default.temporaryDirectory.path + "/latchkey-sec-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let source: LatchkeySecurityConfiguration.PasscodeSource
        if let passcode {
            source = unlocked ? .passcode(Array(passcode.utf8)) : .none
        } else {
            source = .noPasscode
        }
        config = LatchkeySecurityConfiguration(
            keychainPath: directory + "/login.keychain",
            devicePath: directory + "/device.secret",
            caller: caller ?? CallerIdentity(applicationIdentifier: nil),
            passcodeSource: source)
        config.kdfLogN = 10
        // Many tests fail on purpose; the stderr line of a first failure is checked in
        // FirstFailureTests and would be noise here.
        config.explainsFirstFailure = false
        if caller == nil { config.caller = nil }
        if create {
            _ = try Keychain.create(
                path: keychainPath, devicePath: devicePath, passcode: passcode.map { Array($0.utf8) }, kdfLogN: 10)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Runs `body` with this keychain's configuration current for the SecItem functions.
    func run<T>(_ body: () throws -> T) rethrows -> T { try config.use(body) }

    /// The same keychain seen by another caller (another app on the same device).
    func app(_ caller: CallerIdentity) -> LatchkeySecurityConfiguration {
        let other = LatchkeySecurityConfiguration(
            keychainPath: keychainPath, devicePath: devicePath, caller: caller,
            passcodeSource: .passcode(Array(testPasscode.utf8)))
        other.kdfLogN = 10
        other.explainsFirstFailure = false
        return other
    }
}

// MARK: Shorthands for the four calls

typealias Dict = [String: Any]

func add(_ attributes: Dict) -> OSStatus { SecItemAdd(attributes as CFDictionary, nil) }

func addReturning(_ attributes: Dict) -> (OSStatus, AnyObject?) {
    var result: AnyObject?
    let status = withUnsafeMutablePointer(to: &result) {
        SecItemAdd(attributes as CFDictionary, UnsafeMutablePointer($0))
    }
    return (status, result)
}

func copy(_ query: Dict) -> (OSStatus, AnyObject?) {
    var result: AnyObject?
    let status = withUnsafeMutablePointer(to: &result) {
        SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
    }
    return (status, result)
}

func update(_ query: Dict, _ attributes: Dict) -> OSStatus {
    SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
}

func delete(_ query: Dict) -> OSStatus { SecItemDelete(query as CFDictionary) }

/// A generic password dictionary.
func genp(_ account: String? = nil, service: String? = nil, _ extra: Dict = [:]) -> Dict {
    var d: Dict = [kSecClass as String: kSecClassGenericPassword]
    if let account { d[kSecAttrAccount as String] = account }
    if let service { d[kSecAttrService as String] = service }
    return d.merging(extra) { $1 }
}

/// `genp(...)` plus secret data.
func genpItem(_ account: String, service: String = "svc", data: String = "secret", _ extra: Dict = [:]) -> Dict {
    genp(account, service: service, [kSecValueData as String: Data(data.utf8)]).merging(extra) { $1 }
}

/// The secret of the one item matching `query`, as a string.
func secret(_ query: Dict) -> String? {
    var q = query
    q[kSecReturnData as String] = true
    let (status, result) = copy(q)
    guard status == errSecSuccess, let d = result as? Data else { return nil }
    return String(decoding: d, as: UTF8.self)
}

/// The attributes of the one item matching `query`.
func attributes(_ query: Dict) -> [String: Any]? {
    var q = query
    q[kSecReturnAttributes as String] = true
    let (status, result) = copy(q)
    guard status == errSecSuccess else { return nil }
    return result as? [String: Any]
}

/// How many items match `query` (0 when none).
func count(_ query: Dict) -> Int {
    var q = query
    q[kSecMatchLimit as String] = kSecMatchLimitAll
    q[kSecReturnPersistentRef as String] = true
    let (status, result) = copy(q)
    guard status == errSecSuccess else { return 0 }
    return (result as? [Any])?.count ?? 0
}

/// The persistent ref of the one item matching `query`.
func persistentRef(_ query: Dict) -> Data? {
    var q = query
    q[kSecReturnPersistentRef as String] = true
    return copy(q).1 as? Data
}

/// A DER certificate from fixtures/certs (certificate items must hold real DER: the keychain
/// derives their attributes from it).
func fixtureCertificate(_ name: String = "ec-p256-cert.der", filePath: String = #filePath) throws -> Data {
    var dir = URL(fileURLWithPath: filePath).deletingLastPathComponent()
    while dir.path != "/", !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
        dir = dir.deletingLastPathComponent()
    }
    return try Data(contentsOf: dir.appendingPathComponent("fixtures/certs/" + name))
}
