import Foundation
import Latchkey

// SecCertificate (Security/SecCertificate.h): an X.509 certificate object. Latchkey derives
// everything from the DER with OpenSSL (through the Latchkey module); no trust evaluation.

/// Objects that stand for a keychain item's content (kSecValueRef, kSecReturnRef):
/// `SecCertificate`, `SecKey` and `SecIdentity`.
protocol SecItemReference: AnyObject {
    /// The kSecClass of the item such an object is stored as (`cert`, `keys`; `idnt` for identities).
    var secItemClass: String { get }
}

/// `SecCertificateRef`: an immutable X.509 certificate.
///
/// ```swift
/// guard let cert = SecCertificateCreateWithData(nil, der as CFData) else { /* not DER */ }
/// let summary = SecCertificateCopySubjectSummary(cert) as String?
/// SecItemAdd([kSecClass as String: kSecClassCertificate, kSecValueRef as String: cert] as CFDictionary, nil)
/// ```
/// Two certificates are equal (`==`, `isEqual`) when their DER is equal, as with `CFEqual`.
public final class SecCertificate: NSObject, SecItemReference, @unchecked Sendable {
    let info: CertificateInfo
    /// The keychain item this object was read from (kSecReturnRef), else nil.
    let item: Item?

    init(info: CertificateInfo, item: Item? = nil) {
        self.info = info
        self.item = item
    }

    /// A certificate object for a stored certificate item (its data is the DER), or nil.
    convenience init?(item: Item) {
        guard item.itemClass == .certificate, let info = try? CertificateInfo(der: item.data) else { return nil }
        self.init(info: info, item: item)
    }

    var secItemClass: String { "cert" }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SecCertificate else { return false }
        return other.info.der == info.der
    }

    public override var hash: Int { info.der.hashValue }

    public override var description: String {
        "<SecCertificate \(info.subjectSummary ?? "(no subject summary)")>"
    }

    /// The attributes a certificate gives a keychain item (kSecValueRef expansion).
    var itemAttributes: [String: AttributeValue] { Keychain.certificateAttributes(info) }
}

/// Creates a certificate from its DER encoding (Apple's SecCertificateCreateWithData).
/// - Parameters:
///   - allocator: ignored (pass nil or kCFAllocatorDefault).
///   - data: one DER X.509 certificate (not PEM; nothing may follow it).
/// - Returns: the certificate, or nil when `data` is not a DER X.509 certificate.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    guard let info = try? CertificateInfo(der: [UInt8](data as Data)) else { return nil }
    return SecCertificate(info: info)
}

/// The DER encoding of a certificate (Apple's SecCertificateCopyData).
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    NSData(data: Data(certificate.info.der))
}

/// A human-readable summary of the subject (Apple's SecCertificateCopySubjectSummary): the
/// common name, else the e-mail address, else the organizational unit, else the organization
/// of the subject; nil when the subject has none of these. This is also the label
/// (kSecAttrLabel) a certificate item gets when none is given.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.info.subjectSummary.map { NSString(string: $0) }
}

/// The subject's common name (Apple's SecCertificateCopyCommonName, iOS 10.3+).
/// - Returns: errSecSuccess with the last commonName of the subject, or errSecItemNotFound
///   (nil stored) when the subject has none.
public func SecCertificateCopyCommonName(_ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>)
    -> OSStatus
{
    commonName.pointee = nil
    guard let cn = certificate.info.commonName else { return errSecItemNotFound }
    commonName.pointee = NSString(string: cn)
    return errSecSuccess
}

/// The serial number's content octets (Apple's SecCertificateCopySerialNumberData, iOS 11+):
/// the value kSecAttrSerialNumber holds.
public func SecCertificateCopySerialNumberData(
    _ certificate: SecCertificate,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    NSData(data: Data(certificate.info.serialNumber))
}

/// The DER of the issuer Name (Apple's SecCertificateCopyNormalizedIssuerSequence): the value
/// kSecAttrIssuer holds. Latchkey does not normalize case or spaces; it is the issuer exactly as
/// the certificate encodes it.
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    NSData(data: Data(certificate.info.issuer))
}

/// The DER of the subject Name (Apple's SecCertificateCopyNormalizedSubjectSequence): the value
/// kSecAttrSubject holds (not normalized, see above).
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    NSData(data: Data(certificate.info.subject))
}

/// The certificate's public key (Apple's SecCertificateCopyKey, iOS 12+), or nil for an
/// algorithm Latchkey cannot read.
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    guard let info = try? KeyInfo(data: certificate.info.subjectPublicKeyInfo) else { return nil }
    return SecKey(info: info, data: info.externalRepresentation)
}

/// The reference object of a stored item (kSecReturnRef): a `SecCertificate` for a
/// certificate, a `SecKey` for a key, nil for passwords, which have no reference type on iOS
/// (reference §5.4). The item must have been read with its data.
func secReference(for item: Item) -> AnyObject? {
    switch item.itemClass {
    case .certificate: return SecCertificate(item: item)
    case .key: return SecKey(item: item)
    case .genericPassword, .internetPassword: return nil
    }
}

extension SecItemRequest {
    /// The class a kSecValueRef object decides: kSecClassIdentity for a `SecIdentity` whatever
    /// kSecClass says (Apple's client explodes identities the same way), else the object's
    /// class when kSecClass is absent. nil: kSecClass decides.
    static func referenceClass(_ entries: [String: SecValue]) -> SecItemClass? {
        guard case .ref(let object)? = entries["v_Ref"] else { return nil }
        if object is SecIdentity { return .identity }
        guard entries["class"] == nil else { return nil }
        if object is SecCertificate { return .stored(.certificate) }
        if object is SecKey { return .stored(.key) }
        return nil
    }

    /// kSecValueRef of a certificate or key item (reference §5.1: the client expands a ref into
    /// its attributes, the client's own attributes winning). On add the object gives the data
    /// (the certificate's DER, the key's external representation) from which the keychain
    /// derives the attributes; in a query it gives the attributes that identify its item.
    /// - Throws: errSecParam for an object that is not of the dictionary's class.
    mutating func valueReference(_ value: SecValue) throws {
        guard case .ref(let object) = value else {
            throw SecFailure.param(
                "kSecValueRef must be a SecCertificate, SecKey or SecIdentity, not \(value.typeName)")
        }
        let identifying: [String: AttributeValue]
        let content: [UInt8]
        switch (itemClass, object) {
        case (.certificate, let cert as SecCertificate):
            content = cert.info.der
            identifying = Keychain.certificateAttributes(cert.info).filter {
                ["ctyp", "issr", "slnr", "pkhh"].contains($0.key)
            }
        case (.key, let key as SecKey):
            content = key.data
            identifying = key.identifyingAttributes
        default:
            throw SecFailure.param(
                "kSecValueRef holds a \(type(of: object)), which is not an item of class \(itemClass.rawValue)")
        }
        if call == .add {
            if data == nil { data = content }
            return
        }
        for (name, v) in identifying where attributes[name] == nil { attributes[name] = v }
        hasAttributeFilter = true
    }
}
