import Foundation
import LatchkeySecurity  // as Apple-platform code writes `import Security`

// A keychain wrapper of the kind people bring from Apple platforms (KeychainAccess,
// SimpleKeychain, keychain-swift): it declares types named `Keychain`, `KeychainError`,
// `ItemClass`, `KeychainAccess` and `Query`, the names Latchkey's typed API uses too. With
// `import LatchkeySecurity` bringing only Apple's names, this module and its clients (which
// import both it and LatchkeySecurity, as its tests do) compile (NameClashTests).

/// The wrapper's error: an OSStatus it did not expect, or an item that is absent.
public enum KeychainError: Error, Equatable {
    case itemNotFound
    case unexpected(OSStatus)
}

/// The wrapper's item classes.
public enum ItemClass: String {
    case genericPassword
    case internetPassword

    var secClass: CFString {
        switch self {
        case .genericPassword: return kSecClassGenericPassword
        case .internetPassword: return kSecClassInternetPassword
        }
    }
}

/// The wrapper's query builder.
public struct Query {
    public var itemClass: ItemClass
    public var service: String
    public var account: String

    public init(itemClass: ItemClass, service: String, account: String) {
        self.itemClass = itemClass
        self.service = service
        self.account = account
    }

    var dictionary: [String: Any] {
        [
            kSecClass as String: itemClass.secClass,
            (itemClass == .genericPassword ? kSecAttrService : kSecAttrServer) as String: service,
            kSecAttrAccount as String: account
        ]
    }
}

/// The wrapper's keychain: strings stored under keys of one service.
public final class Keychain {
    public let service: String
    public let itemClass: ItemClass

    public init(service: String, itemClass: ItemClass = .genericPassword) {
        self.service = service
        self.itemClass = itemClass
    }

    func query(_ key: String) -> Query { Query(itemClass: itemClass, service: service, account: key) }

    public func set(_ value: String, key: String) throws {
        let data = Data(value.utf8)
        var status = SecItemUpdate(
            query(key).dictionary as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        if status == errSecItemNotFound {
            var add = query(key).dictionary
            add[kSecValueData as String] = data
            status = SecItemAdd(add as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw KeychainError.unexpected(status) }
    }

    public func get(_ key: String) throws -> String {
        var q = query(key).dictionary
        q[kSecReturnData as String] = kCFBooleanTrue
        var result: CFTypeRef?
        let status = SecItemCopyMatching(q as CFDictionary, &result)
        if status == errSecItemNotFound { throw KeychainError.itemNotFound }
        guard status == errSecSuccess, let data = result as? Data else { throw KeychainError.unexpected(status) }
        return String(decoding: data, as: UTF8.self)
    }

    public func remove(_ key: String) throws {
        let status = SecItemDelete(query(key).dictionary as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError.unexpected(status) }
    }
}

/// The wrapper's facade, as LUKeychainAccess-style wrappers name theirs.
public struct KeychainAccess {
    public let keychain: Keychain
    public init(service: String) { keychain = Keychain(service: service) }
    public subscript(key: String) -> String? {
        get { try? keychain.get(key) }
        nonmutating set {
            if let newValue { try? keychain.set(newValue, key: key) } else { try? keychain.remove(key) }
        }
    }
}
