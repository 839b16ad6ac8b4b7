import LatchkeyCrypto
import LatchkeyFormat

/// Certificates and keys: the attributes the keychain derives from an item's data
/// (as Apple's keychain derives them; spec/FORMAT.md §7.5).
///
/// * A `cert` item's data must be one DER X.509 certificate. Its read-only attributes — `ctyp`
///   (X.509 version 1/2/3), `cenc` (3, DER), `subj`, `issr`, `slnr`, `skid`, `pkhh` — are
///   derived from it, replacing any value the caller gave; `labl` defaults to the subject
///   summary (common name). Anything else is errSecParam.
/// * A `keys` item whose data is an asymmetric key (private-key DER, SubjectPublicKeyInfo,
///   PKCS#1 public key, or Apple's raw EC forms) gets `kcls` (1 private, 0 public), `type`
///   (42 RSA, 73 EC, 105 Ed25519, 106 X25519), `bsiz`, `esiz` and `klbl` (SHA-1 of the public
///   key, equal to a matching certificate's `pkhh`) — each only when the caller gave none, as
///   these are ordinary attributes on iOS. Other data is a symmetric key: `kcls` 2 when absent.
///
/// Below the backends, as `ItemRules`: the backend derives, the facade only re-exports the
/// public part (Keychain+Certificates.swift).
package enum DerivedAttributes {
    /// Certificate attributes that only the keychain sets.
    static let certificateNames: Set<String> = ["ctyp", "cenc", "subj", "issr", "slnr", "skid", "pkhh"]

    /// kSecAttrCertificateEncoding for DER (CSSM_CERT_ENCODING_DER).
    static let certificateEncodingDER: Int64 = 3

    /// kSecAttrKeyType codes (reference §1.6).
    static func keyTypeCode(_ algorithm: KeyAlgorithm) -> Int64? {
        switch algorithm {
        case .rsa: return 42
        case .dsa: return 43
        case .ec: return 73
        case .ed25519: return 105
        case .x25519: return 106
        case .ed448, .x448, .unknown: return nil
        }
    }

    /// The item as it will be stored: derived attributes of certificates and keys filled in.
    /// Called by the backend's `add` for every item, after the attribute names were checked.
    /// - Throws: errSecParam when a certificate's data is not a DER X.509 certificate.
    static func derivingAttributes(_ item: NewItem) throws -> NewItem {
        switch item.itemClass {
        case .certificate: return try derivingCertificateAttributes(item)
        case .key: return derivingKeyAttributes(item)
        case .genericPassword, .internetPassword: return item
        }
    }

    /// Parses certificate data, mapping a failure to errSecParam with the reason.
    static func parseCertificate(_ der: [UInt8]) throws -> CertificateInfo {
        do {
            return try CertificateInfo(der: der)
        } catch {
            throw KeychainError(
                .param,
                "the data of a certificate must be one DER-encoded X.509 certificate (convert PEM with 'openssl x509 -outform DER')",
                underlying: "\(error)")
        }
    }

    /// The attributes of class `cert` that a certificate determines.
    static func certificateAttributes(_ info: CertificateInfo) -> [String: AttributeValue] {
        var out: [String: AttributeValue] = [
            "ctyp": .integer(Int64(info.version)),
            "cenc": .integer(certificateEncodingDER),
            "subj": .data(info.subject),
            "issr": .data(info.issuer),
            "slnr": .data(info.serialNumber),
            "pkhh": .data(info.publicKeyHash)
        ]
        if let skid = info.subjectKeyID { out["skid"] = .data(skid) }
        return out
    }

    static func derivingCertificateAttributes(_ item: NewItem) throws -> NewItem {
        let info = try parseCertificate(item.data)
        var out = item
        for name in certificateNames { out.attributes[name] = nil }
        out.attributes.merge(certificateAttributes(info)) { $1 }
        if out.attributes["labl"] == nil, let summary = info.subjectSummary {
            out.attributes["labl"] = .string(summary)
        }
        return out
    }

    /// After an update: a certificate's read-only attributes are derived again from its (possibly
    /// new) data, so that neither new data nor new values for them can leave a certificate whose
    /// attributes — its unique key, its `pkhh` join to a key — disagree with its DER. The label
    /// is left as it is. Called by the backend's `update` for every changed item.
    /// - Throws: errSecParam when a certificate's new data is not a DER X.509 certificate.
    static func rederivingAttributes(_ p: inout ItemPlaintext) throws {
        guard p.itemClass == .certificate else { return }
        let info = try parseCertificate(p.data)
        for name in certificateNames { p.attributes[name] = nil }
        p.attributes.merge(certificateAttributes(info)) { $1 }
    }

    /// The attributes of class `keys` that an asymmetric key determines.
    static func keyAttributes(_ info: KeyInfo) -> [String: AttributeValue] {
        var out: [String: AttributeValue] = [
            "kcls": .integer(info.isPrivate ? 1 : 0),
            "klbl": .data(info.publicKeyHash)
        ]
        if let type = keyTypeCode(info.algorithm) { out["type"] = .integer(type) }
        if info.sizeInBits > 0 {
            out["bsiz"] = .integer(Int64(info.sizeInBits))
            out["esiz"] = .integer(Int64(info.sizeInBits))
        }
        return out
    }

    /// The key class a caller gave (a number, or a decimal string such as kSecAttrKeyClassPrivate "1").
    static func givenKeyClass(_ value: AttributeValue?) -> Int64? {
        switch value {
        case .integer(let i)?: return i
        case .string(let s)?: return Int64(s)
        default: return nil
        }
    }

    static func derivingKeyAttributes(_ item: NewItem) -> NewItem {
        var out = item
        // A caller that says "symmetric" is believed without parsing.
        if givenKeyClass(item.attributes["kcls"]) == 2 { return out }
        guard !item.data.isEmpty, let info = try? KeyInfo(data: item.data) else {
            if out.attributes["kcls"] == nil { out.attributes["kcls"] = .integer(2) }
            return out
        }
        for (name, value) in keyAttributes(info) where out.attributes[name] == nil {
            out.attributes[name] = value
        }
        return out
    }
}
