import Foundation
import Latchkey

// SecIdentity (Security/SecIdentity.h): a certificate with its private key. In the keychain an
// identity is not an item of its own but a certificate item and a key item joined by public
// key hash (reference §1.1); see SecItem+Identity.swift for the SecItem calls.

/// `SecIdentityRef`: a certificate and the private key of its public key.
///
/// ```swift
/// var certificate: SecCertificate?
/// var key: SecKey?
/// guard SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess,
///       SecIdentityCopyPrivateKey(identity, &key) == errSecSuccess else { … }
/// ```
/// Identities come from SecItemCopyMatching (kSecClassIdentity with kSecReturnRef), or from
/// `SecIdentityCreate` (Apple SPI) for a certificate and key in memory.
public final class SecIdentity: NSObject, SecItemReference, @unchecked Sendable {
    let certificate: SecCertificate
    let privateKey: SecKey

    init(certificate: SecCertificate, privateKey: SecKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// The identity of two stored items (read with their data), or nil when they are not a
    /// certificate and an asymmetric private key.
    convenience init?(_ identity: Identity) {
        guard let cert = SecCertificate(item: identity.certificate), let key = SecKey(item: identity.privateKey),
            key.info != nil
        else { return nil }
        self.init(certificate: cert, privateKey: key)
    }

    var secItemClass: String { "idnt" }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SecIdentity else { return false }
        return other.certificate.isEqual(certificate) && other.privateKey.isEqual(privateKey)
    }

    public override var hash: Int { certificate.hash }

    public override var description: String {
        "<SecIdentity \(certificate.info.subjectSummary ?? "(no subject summary)")>"
    }
}

/// Creates an identity from a certificate and its private key (Apple's SecIdentityCreate, a
/// private function of Security, kept under its name).
/// - Returns: nil when `privateKey` is not the private key of the certificate's public key.
public func SecIdentityCreate(_ allocator: CFAllocator?, _ certificate: SecCertificate, _ privateKey: SecKey)
    -> SecIdentity?
{
    guard let info = privateKey.info, info.isPrivate, info.publicKeyHash == certificate.info.publicKeyHash else {
        return nil
    }
    return SecIdentity(certificate: certificate, privateKey: privateKey)
}

/// The identity's certificate (Apple's SecIdentityCopyCertificate). Always errSecSuccess.
public func SecIdentityCopyCertificate(
    _ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>
) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}

/// The identity's private key (Apple's SecIdentityCopyPrivateKey). Always errSecSuccess.
public func SecIdentityCopyPrivateKey(_ identityRef: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>)
    -> OSStatus
{
    privateKeyRef.pointee = identityRef.privateKey
    return errSecSuccess
}
