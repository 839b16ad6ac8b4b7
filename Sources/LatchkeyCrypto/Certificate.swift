import CLatchkeyCrypto

extension Crypto {
    /// SHA-1 (20 bytes). Used only where Apple's keychain defines a value as a SHA-1
    /// (kSecAttrPublicKeyHash, kSecAttrApplicationLabel); never for integrity.
    public static func sha1(_ data: [UInt8]) -> [UInt8] {
        digest(data, size: 20, "SHA-1", lk_sha1)
    }
}

/// The algorithm of an asymmetric key.
public enum KeyAlgorithm: String, Sendable, Equatable, CaseIterable {
    case rsa, ec, ed25519, x25519, ed448, x448, dsa, unknown

    init(lk code: Int32) {
        switch Int(code) {
        case Int(LK_KEYALG_RSA): self = .rsa
        case Int(LK_KEYALG_EC): self = .ec
        case Int(LK_KEYALG_ED25519): self = .ed25519
        case Int(LK_KEYALG_X25519): self = .x25519
        case Int(LK_KEYALG_ED448): self = .ed448
        case Int(LK_KEYALG_X448): self = .x448
        case Int(LK_KEYALG_DSA): self = .dsa
        default: self = .unknown
        }
    }
}

@inline(__always)
private func copy(_ b: lk_buf) -> [UInt8] {
    guard let p = b.bytes, b.len > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: p, count: b.len))
}

/// Runs one of the C parsers (`lk_x509_parse`, `lk_key_parse`) over `bytes`; what it fills
/// `info` with is the caller's to free.
/// - Throws: `CryptoError.invalidArgument` for `operation`, with the reason the parser gives.
private func parse<Info>(
    _ bytes: [UInt8], into info: inout Info, operation: String,
    _ parser: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Info>?, UnsafeMutablePointer<CChar>?, Int) -> Int32
) throws {
    var err = [CChar](repeating: 0, count: 256)
    let ok = bytes.withUnsafeBufferPointer { d in
        err.withUnsafeMutableBufferPointer { parser(d.baseAddress, d.count, &info, $0.baseAddress, $0.count) }
    }
    guard ok == 1 else {
        let reason = err.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        throw CryptoError.invalidArgument(operation: operation, reason: String(decoding: reason, as: UTF8.self))
    }
}

/// The values Latchkey derives from a DER X.509 certificate (OpenSSL's decoder; no signature or
/// chain is checked). These are the keychain attributes of class `cert`
/// (as Apple's keychain derives them; spec/FORMAT.md §7.5).
public struct CertificateInfo: Sendable, Equatable {
    /// The certificate exactly as given.
    public let der: [UInt8]
    /// X.509 version as Apple's kSecAttrCertificateType counts it: 1, 2 or 3.
    public let version: Int
    /// DER of the subject Name (kSecAttrSubject).
    public let subject: [UInt8]
    /// DER of the issuer Name (kSecAttrIssuer). OpenSSL keeps the encoding it read, so this is
    /// the issuer exactly as the certificate encodes it; Apple additionally normalizes case and
    /// spaces of the strings, which Latchkey does not (spec: issr is compared byte for byte).
    public let issuer: [UInt8]
    /// Content octets of the serialNumber INTEGER (kSecAttrSerialNumber), as Apple's
    /// SecCertificateCopySerialNumberData: big-endian two's complement, so a positive serial
    /// whose top bit is set keeps a leading 0x00 that `openssl x509 -serial` does not print.
    public let serialNumber: [UInt8]
    /// The subjectKeyIdentifier extension's keyIdentifier (kSecAttrSubjectKeyID), nil if absent.
    public let subjectKeyID: [UInt8]?
    /// Contents of the subjectPublicKey BIT STRING: PKCS#1 RSAPublicKey DER for RSA, the
    /// uncompressed point 04||X||Y for EC — Apple's external representation of the public key.
    public let publicKey: [UInt8]
    /// The SubjectPublicKeyInfo DER.
    public let subjectPublicKeyInfo: [UInt8]
    /// SHA-1 of `publicKey` (kSecAttrPublicKeyHash, `pkhh`).
    public let publicKeyHash: [UInt8]
    /// For labels and SecCertificateCopySubjectSummary: the last commonName, else the first
    /// emailAddress, else the last organizationalUnitName, else the last organizationName.
    public let subjectSummary: String?
    /// The last commonName of the subject, nil when it has none.
    public let commonName: String?
    public let keyAlgorithm: KeyAlgorithm
    /// Size of the subject public key in bits (0 when OpenSSL does not know the algorithm).
    public let keySizeInBits: Int

    /// Parses a DER certificate. The whole input must be one certificate.
    /// - Throws: `CryptoError.invalidArgument` with the reason (not DER, not a certificate,
    ///   trailing bytes, …).
    public init(der: [UInt8]) throws {
        var info = lk_x509_info()
        try parse(der, into: &info, operation: "X.509 certificate", lk_x509_parse)
        defer { lk_x509_info_free(&info) }
        self.der = der
        version = Int(info.version)
        subject = copy(info.subject)
        issuer = copy(info.issuer)
        serialNumber = copy(info.serial)
        subjectKeyID = info.has_skid != 0 ? copy(info.skid) : nil
        publicKey = copy(info.public_key)
        subjectPublicKeyInfo = copy(info.spki)
        publicKeyHash = withUnsafeBytes(of: info.public_key_hash) { Array($0) }
        let summaryBytes = copy(info.summary)
        subjectSummary = summaryBytes.isEmpty ? nil : String(decoding: summaryBytes, as: UTF8.self)
        let cnBytes = copy(info.common_name)
        commonName = cnBytes.isEmpty ? nil : String(decoding: cnBytes, as: UTF8.self)
        keyAlgorithm = KeyAlgorithm(lk: info.key_algorithm)
        keySizeInBits = Int(info.key_bits)
    }
}

/// The values Latchkey derives from asymmetric key data (keychain attributes of class `keys`,
/// reference §1.6).
public struct KeyInfo: Sendable, Equatable {
    /// How the key was encoded.
    public enum Form: Sendable, Equatable {
        /// PKCS#8 PrivateKeyInfo, PKCS#1 RSAPrivateKey or SEC1 ECPrivateKey (DER).
        case privateKeyDER
        /// SubjectPublicKeyInfo DER.
        case subjectPublicKeyInfo
        /// PKCS#1 RSAPublicKey DER.
        case rsaPublicKeyPKCS1
        /// Apple's external representation of an EC public key: 04 || X || Y.
        case ecRawPublic
        /// Apple's external representation of an EC private key: 04 || X || Y || K.
        case ecRawPrivate
    }

    public let form: Form
    public let isPrivate: Bool
    public let algorithm: KeyAlgorithm
    public let sizeInBits: Int
    /// The subjectPublicKey bits of the key's SubjectPublicKeyInfo: the same bytes a certificate
    /// for this key carries.
    public let publicKey: [UInt8]
    public let subjectPublicKeyInfo: [UInt8]
    /// SHA-1 of `publicKey`: equals `CertificateInfo.publicKeyHash` of a certificate for this key
    /// (so keys.klbl == cert.pkhh joins an identity).
    public let publicKeyHash: [UInt8]
    /// Apple's SecKeyCopyExternalRepresentation: RSA private → PKCS#1 RSAPrivateKey DER; EC
    /// private → 04||X||Y||K; Ed25519/X25519 private → the raw key; public keys → `publicKey`.
    public let externalRepresentation: [UInt8]

    /// Parses key data: private-key DER, then SubjectPublicKeyInfo, then PKCS#1 RSAPublicKey,
    /// then Apple's raw EC forms. The whole input must be the key.
    /// - Throws: `CryptoError.invalidArgument` when the data is none of these.
    public init(data: [UInt8]) throws {
        var info = lk_key_info()
        try parse(data, into: &info, operation: "asymmetric key", lk_key_parse)
        defer { lk_key_info_free(&info) }
        switch Int(info.form) {
        case Int(LK_KEYFORM_PUBLIC_SPKI): form = .subjectPublicKeyInfo
        case Int(LK_KEYFORM_PUBLIC_PKCS1): form = .rsaPublicKeyPKCS1
        case Int(LK_KEYFORM_EC_RAW_PUBLIC): form = .ecRawPublic
        case Int(LK_KEYFORM_EC_RAW_PRIVATE): form = .ecRawPrivate
        default: form = .privateKeyDER
        }
        isPrivate = info.is_private != 0
        algorithm = KeyAlgorithm(lk: info.algorithm)
        sizeInBits = Int(info.bits)
        publicKey = copy(info.public_key)
        subjectPublicKeyInfo = copy(info.spki)
        publicKeyHash = withUnsafeBytes(of: info.public_key_hash) { Array($0) }
        externalRepresentation = copy(info.external)
    }
}
