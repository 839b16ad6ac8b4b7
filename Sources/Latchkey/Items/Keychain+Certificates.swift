// The certificate and key values derived by LatchkeyCrypto are part of the typed API.
@_exported import struct LatchkeyCrypto.CertificateInfo
@_exported import struct LatchkeyCrypto.KeyInfo
@_exported import enum LatchkeyCrypto.KeyAlgorithm
import LatchkeyCrypto

/// The attributes the keychain derives from a certificate's or key's data
/// (`DerivedAttributes`), for callers that build items or queries themselves.
extension Keychain {
    /// Certificate attributes that only the keychain sets.
    public static var derivedCertificateAttributes: Set<String> { DerivedAttributes.certificateNames }

    /// kSecAttrCertificateEncoding for DER (CSSM_CERT_ENCODING_DER).
    public static var certificateEncodingDER: Int64 { DerivedAttributes.certificateEncodingDER }

    /// kSecAttrKeyType codes (reference §1.6).
    public static func keyTypeCode(_ algorithm: KeyAlgorithm) -> Int64? { DerivedAttributes.keyTypeCode(algorithm) }

    /// The attributes of class `cert` that a certificate determines.
    public static func certificateAttributes(_ info: CertificateInfo) -> [String: AttributeValue] {
        DerivedAttributes.certificateAttributes(info)
    }

    /// The attributes of class `keys` that an asymmetric key determines.
    public static func keyAttributes(_ info: KeyInfo) -> [String: AttributeValue] {
        DerivedAttributes.keyAttributes(info)
    }
}
