import Foundation
import Latchkey

/// A UserDefaults-like store of secrets, in the style of LUKeychainAccess (seed 004).
///
/// Named with Latchkey's prefix so that it cannot collide with a type of the code that imports
/// LatchkeySecurity: popular wrappers declare their own `KeychainAccess`, `Keychain` and
/// `KeychainWrapper`, and `import LatchkeySecurity` brings only Apple's names besides this
/// class and `LatchkeySecurityConfiguration`.
///
/// Each key is a generic password: account = the key, service = `service`, protection =
/// `accessibility`, access group = `accessGroup` (nil: the caller's default group). Values are
/// kept as data; strings as UTF-8, booleans and integers as their decimal text.
///
/// ```swift
/// let kc = LatchkeyKeychainAccess(service: "com.example.api", accessibility: .afterFirstUnlock)
/// kc["token"] = "s3cret"
/// let token = kc.string(forKey: "token")
/// kc.set(true, forKey: "authorized")
/// kc.removeObject(forKey: "token")
/// ```
///
/// Getters return nil (or false / 0) when the key is absent *or* the keychain refused; setters
/// do not throw. `lastStatus` holds the OSStatus of the most recent operation, and
/// `LatchkeySecurityConfiguration.current.lastError` the message, for callers that need to
/// tell the cases apart. It goes through SecItemAdd / SecItemCopyMatching / SecItemUpdate /
/// SecItemDelete, so it uses `LatchkeySecurityConfiguration.current`.
public final class LatchkeyKeychainAccess: @unchecked Sendable {
    /// The protection of the items this object writes (LUKeychainAccessAttrAccessible…).
    public typealias Accessibility = ProtectionClass

    /// A shared instance with an empty service, like `+[LUKeychainAccess standardKeychainAccess]`.
    public static let standard = LatchkeyKeychainAccess()

    private let mutex = NSLock()
    private var _service: String
    private var _accessibility: Accessibility
    private var _accessGroup: String?
    private var _lastStatus: OSStatus = errSecSuccess

    /// - Parameters:
    ///   - service: kSecAttrService of every item ("" groups them under no service).
    ///   - accessibility: kSecAttrAccessible of items written from now on (default WhenUnlocked).
    ///   - accessGroup: kSecAttrAccessGroup, to share items with other apps of the group.
    public init(service: String = "", accessibility: Accessibility = .whenUnlocked, accessGroup: String? = nil) {
        _service = service
        _accessibility = accessibility
        _accessGroup = accessGroup
    }

    private func locked<T>(_ body: () -> T) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return body()
    }

    /// The service name (kSecAttrService) of the items.
    public var service: String {
        get { locked { _service } }
        set { locked { _service = newValue } }
    }

    /// The protection of items written from now on; `set` also moves an existing item to it.
    public var accessibility: Accessibility {
        get { locked { _accessibility } }
        set { locked { _accessibility = newValue } }
    }

    /// The access group of the items; nil uses the caller's default group on write and every
    /// group of the caller on read.
    public var accessGroup: String? {
        get { locked { _accessGroup } }
        set { locked { _accessGroup = newValue } }
    }

    /// The status of the most recent operation (errSecSuccess, errSecItemNotFound, …).
    public var lastStatus: OSStatus { locked { _lastStatus } }

    private func note(_ status: OSStatus) -> OSStatus {
        locked { _lastStatus = status }
        return status
    }

    private func query(forKey key: String) -> [String: Any] {
        var q: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrAccount as String: key,
            kSecAttrService as String: service
        ]
        if let g = accessGroup { q[kSecAttrAccessGroup as String] = g }
        return q
    }

    // MARK: Reading

    /// The data stored under `key`, or nil.
    public func data(forKey key: String) -> Data? {
        var q = query(forKey: key)
        q[kSecReturnData as String] = true
        var result: AnyObject?
        let status = withUnsafeMutablePointer(to: &result) { SecItemCopyMatching(q as CFDictionary, $0) }
        guard note(status) == errSecSuccess else { return nil }
        return result as? Data
    }

    /// The string stored under `key` (UTF-8), or nil.
    public func string(forKey key: String) -> String? {
        data(forKey: key).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// The boolean stored under `key`; false when absent.
    public func bool(forKey key: String) -> Bool {
        guard let s = string(forKey: key) else { return false }
        return s == "1" || s.lowercased() == "true"
    }

    /// The integer stored under `key`; 0 when absent.
    public func integer(forKey key: String) -> Int {
        string(forKey: key).flatMap { Int($0) } ?? 0
    }

    /// Whether an item exists under `key` (without reading its data, so without asking for
    /// user presence).
    public func contains(key: String) -> Bool {
        note(SecItemCopyMatching(query(forKey: key) as CFDictionary, nil)) == errSecSuccess
    }

    // MARK: Writing

    /// Stores `value` under `key`, replacing what was there (nil removes it).
    /// - Returns: the OSStatus (also in `lastStatus`).
    @discardableResult
    public func set(_ value: Data?, forKey key: String) -> OSStatus {
        guard let value else { return removeObject(forKey: key) }
        let protection = NSString(string: accessibility.code)
        let changes: [String: Any] = [kSecValueData as String: value, kSecAttrAccessible as String: protection]
        let status = SecItemUpdate(query(forKey: key) as CFDictionary, changes as CFDictionary)
        guard status == errSecItemNotFound else { return note(status) }
        var add = query(forKey: key)
        add[kSecValueData as String] = value
        add[kSecAttrAccessible as String] = protection
        return note(SecItemAdd(add as CFDictionary, nil))
    }

    /// Stores a string (UTF-8) under `key`; nil removes it.
    @discardableResult
    public func set(_ value: String?, forKey key: String) -> OSStatus {
        set(value.map { Data($0.utf8) }, forKey: key)
    }

    /// Stores a boolean under `key`.
    @discardableResult
    public func set(_ value: Bool, forKey key: String) -> OSStatus {
        set(value ? "1" : "0", forKey: key)
    }

    /// Stores an integer under `key`.
    @discardableResult
    public func set(_ value: Int, forKey key: String) -> OSStatus {
        set(String(value), forKey: key)
    }

    /// The string under `key`; assigning nil removes the item.
    public subscript(key: String) -> String? {
        get { string(forKey: key) }
        set { set(newValue, forKey: key) }
    }

    /// The data under `key`; assigning nil removes the item.
    public subscript(data key: String) -> Data? {
        get { data(forKey: key) }
        set { set(newValue, forKey: key) }
    }

    /// Removes the item under `key`. Removing an absent key is not an error.
    @discardableResult
    public func removeObject(forKey key: String) -> OSStatus {
        let status = SecItemDelete(query(forKey: key) as CFDictionary)
        return note(status == errSecItemNotFound ? errSecSuccess : status)
    }

    /// Removes every item of this service (and access group, when set).
    @discardableResult
    public func removeAll() -> OSStatus {
        var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
        if let g = accessGroup { q[kSecAttrAccessGroup as String] = g }
        let status = SecItemDelete(q as CFDictionary)
        return note(status == errSecItemNotFound ? errSecSuccess : status)
    }
}
