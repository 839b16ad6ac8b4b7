import Foundation
import Latchkey
import LatchkeyFormat

// SecKey (Security/SecKey.h), minimal: asymmetric keys as data, for the keychain. Latchkey does
// not sign, encrypt or generate keys through SecKey.

/// `SecKeyRef`: an asymmetric key (RSA, EC, Ed25519, X25519), public or private.
///
/// ```swift
/// var error: Unmanaged<CFError>?
/// let key = SecKeyCreateWithData(raw as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
///                                                kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, &error)
/// let bytes = SecKeyCopyExternalRepresentation(key!, &error) as Data?
/// ```
/// Two keys are equal when their class and external representation are equal.
public final class SecKey: NSObject, SecItemReference, @unchecked Sendable {
    /// nil for a key that is not asymmetric (a symmetric kSecClassKey item read by reference).
    let info: KeyInfo?
    /// Apple's external representation (SecKeyCopyExternalRepresentation): RSA → PKCS#1 DER;
    /// EC → 04‖X‖Y (public) or 04‖X‖Y‖K (private); a symmetric key → its bytes.
    let data: [UInt8]
    /// The keychain item this object was read from (kSecReturnRef), else nil.
    let item: Item?

    init(info: KeyInfo?, data: [UInt8], item: Item? = nil) {
        self.info = info
        self.data = data
        self.item = item
    }

    /// A key object for a stored key item (read with its data), or nil for another class.
    convenience init?(item: Item) {
        guard item.itemClass == .key else { return nil }
        if let info = try? KeyInfo(data: item.data) {
            self.init(info: info, data: info.externalRepresentation, item: item)
        } else {
            self.init(info: nil, data: item.data, item: item)
        }
    }

    var secItemClass: String { "keys" }

    /// kSecAttrKeyClass: 0 public, 1 private, 2 symmetric.
    var keyClass: Int64 {
        if let info { return info.isPrivate ? 1 : 0 }
        if case .integer(let c)? = item?.attributes["kcls"] { return c }
        return 2
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SecKey else { return false }
        return other.keyClass == keyClass && other.data == data
    }

    public override var hash: Int { data.hashValue }

    public override var description: String {
        let kind = ["public", "private", "symmetric"][Int(max(0, min(2, keyClass)))]
        return "<SecKey \(info?.algorithm.rawValue ?? "symmetric") \(kind) \(info?.sizeInBits ?? data.count * 8) bits>"
    }

    /// The attributes that identify this key among the keychain's keys (kSecValueRef in a
    /// query): the stored item's unique key when it came from the keychain, else what the key
    /// itself gives (kcls, klbl, type, bsiz, esiz).
    var identifyingAttributes: [String: AttributeValue] {
        if let item {
            var out: [String: AttributeValue] = [:]
            for (name, _) in UniqueKey.attributes(for: .key) where name != "agrp" && name != "sync" {
                if let v = item.attributes[name] { out[name] = v }
            }
            return out
        }
        return info.map { Keychain.keyAttributes($0) } ?? [:]
    }
}

/// An NSError in Apple's OSStatus domain, as the CFError of the Security framework.
func secError(_ status: OSStatus, _ message: String) -> Unmanaged<CFError> {
    Unmanaged.passRetained(
        NSError(
            domain: "NSOSStatusErrorDomain", code: Int(status),
            userInfo: [NSLocalizedDescriptionKey: message]))
}

/// Creates a key from its external representation (Apple's SecKeyCreateWithData).
///
/// Accepted data: Apple's formats — RSA PKCS#1 RSAPrivateKey / RSAPublicKey DER, EC
/// 04‖X‖Y(‖K) on P-256, P-384, P-521 — and also PKCS#8, SEC1 and SubjectPublicKeyInfo DER.
/// - Parameters:
///   - keyData: The key's external representation, in one of the formats above.
///   - attributes: kSecAttrKeyType (kSecAttrKeyTypeRSA, …ECSECPrimeRandom) and kSecAttrKeyClass
///     (…Public, …Private), each checked against the data when given; kSecAttrKeySizeInBits,
///     when given, must match too. Symmetric keys do not exist as SecKey objects on iOS.
/// - Returns: the key, or nil with `error` set (errSecParam) when the data is not such a key
///   or contradicts the attributes.
public func SecKeyCreateWithData(
    _ keyData: CFData, _ attributes: CFDictionary,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    func fail(_ message: String) -> SecKey? {
        error?.pointee = secError(errSecParam, message)
        return nil
    }
    let entries: [String: SecValue]
    do { entries = try secEntries(attributes) } catch {
        return fail("the attributes must be a dictionary with string keys")
    }
    func number(_ key: String) -> Int64? {
        switch entries[key] {
        case .string(let s)?: return Int64(s)
        case .integer(let i)?: return i
        default: return nil
        }
    }
    if entries["kcls"] != nil, number("kcls") == 2 {
        return fail(
            "symmetric keys cannot be SecKey objects; store the bytes as a kSecClassKey item with kSecValueData")
    }
    let info: KeyInfo
    do {
        info = try KeyInfo(data: [UInt8](keyData as Data))
    } catch {
        return fail("the data is not a key Latchkey can read: \(error)")
    }
    if entries["type"] != nil {
        guard let type = number("type"), Keychain.keyTypeCode(info.algorithm) == type else {
            return fail("kSecAttrKeyType does not match the key data, which holds a \(info.algorithm.rawValue) key")
        }
    }
    if entries["kcls"] != nil {
        guard let kcls = number("kcls"), kcls == (info.isPrivate ? 1 : 0) else {
            return fail(
                "kSecAttrKeyClass does not match the key data, which holds a \(info.isPrivate ? "private" : "public") key"
            )
        }
    }
    if entries["bsiz"] != nil, number("bsiz") != Int64(info.sizeInBits) {
        return fail("kSecAttrKeySizeInBits does not match the key data (\(info.sizeInBits) bits)")
    }
    return SecKey(info: info, data: info.externalRepresentation)
}

/// The key's external representation (Apple's SecKeyCopyExternalRepresentation): PKCS#1 DER
/// for RSA, 04‖X‖Y(‖K) for EC, the raw key for Ed25519/X25519 and symmetric keys.
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?)
    -> CFData?
{
    NSData(data: Data(key.data))
}

/// The public key of a key pair (Apple's SecKeyCopyPublicKey); nil for a symmetric key.
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    guard let info = key.info else { return nil }
    guard info.isPrivate else { return key }
    guard let pub = try? KeyInfo(data: info.subjectPublicKeyInfo) else { return nil }
    return SecKey(info: pub, data: pub.externalRepresentation)
}

/// The key's attributes (Apple's SecKeyCopyAttributes): kSecClass, kSecAttrKeyClass and
/// kSecAttrKeyType as their string constants, sizes, kSecAttrApplicationLabel (SHA-1 of the
/// public key) and kSecValueData (the external representation); for a key read from the
/// keychain, its stored attributes as well.
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    let dict = NSMutableDictionary()
    if let item = key.item {
        for (name, value) in item.attributes {
            dict.setObject(SecItemResult.object(for: value), forKey: NSString(string: name))
        }
        dict.setObject(NSString(string: item.protection.code), forKey: NSString(string: "pdmn"))
    }
    dict.setObject(NSString(string: "keys"), forKey: NSString(string: "class"))
    dict.setObject(NSString(string: String(key.keyClass)), forKey: NSString(string: "kcls"))
    if let info = key.info {
        if let type = Keychain.keyTypeCode(info.algorithm) {
            dict.setObject(NSString(string: String(type)), forKey: NSString(string: "type"))
        }
        dict.setObject(NSNumber(value: info.sizeInBits), forKey: NSString(string: "bsiz"))
        dict.setObject(NSNumber(value: info.sizeInBits), forKey: NSString(string: "esiz"))
        if key.item?.attributes["klbl"] == nil {
            dict.setObject(NSData(data: Data(info.publicKeyHash)), forKey: NSString(string: "klbl"))
        }
    }
    dict.setObject(NSData(data: Data(key.data)), forKey: NSString(string: "v_Data"))
    return dict
}

/// The block size of the key in bytes (Apple's SecKeyGetBlockSize): the modulus size for RSA,
/// the field size for EC.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int {
    guard let info = key.info else { return key.data.count }
    return (info.sizeInBits + 7) / 8
}
