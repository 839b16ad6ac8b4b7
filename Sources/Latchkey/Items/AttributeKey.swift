/// The name of an item attribute: Apple's four-character code (`acct` for `kSecAttrAccount`),
/// with a constant for each attribute a class has, named as Apple's constant is.
///
/// ```swift
/// try keychain.add(.genericPassword, [.account: "alice", .service: "mail"], secret: "s3cret")
/// ```
///
/// A key that is not an attribute of the item's class is refused with errSecNoSuchAttr, and the
/// message suggests the code meant when the name looks like one of these constants (`"account"`,
/// `"kSecAttrAccount"`).
public struct AttributeKey: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The four-character code, as stored in the item (spec/FORMAT.md §8).
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    /// An attribute by its code, for attributes without a constant here.
    public init(_ code: String) { self.rawValue = code }

    public var description: String { rawValue }
    public static func < (a: AttributeKey, b: AttributeKey) -> Bool { a.rawValue < b.rawValue }

    // MARK: Every class

    /// `kSecAttrLabel`: a name shown to people.
    public static let label = AttributeKey("labl")
    /// `kSecAttrAccessGroup`: which apps share the item (see `CallerIdentity`).
    public static let accessGroup = AttributeKey("agrp")
    /// `kSecAttrSynchronizable` (0 or 1). Queries match 0 unless they ask otherwise.
    public static let synchronizable = AttributeKey("sync")
    /// `kSecAttrAccessible`, as results report it; set it through `protection`.
    public static let accessible = AttributeKey("pdmn")
    /// `kSecAttrCreationDate`; set by the keychain.
    public static let creationDate = AttributeKey("cdat")
    /// `kSecAttrModificationDate`; set by the keychain.
    public static let modificationDate = AttributeKey("mdat")
    /// `kSecAttrTokenID`.
    public static let tokenID = AttributeKey("tkid")
    /// `kSecAttrSyncViewHint`.
    public static let syncViewHint = AttributeKey("vwht")

    // MARK: Generic and internet passwords

    /// `kSecAttrAccount`.
    public static let account = AttributeKey("acct")
    /// `kSecAttrDescription` (named so because `description` is the key's own text).
    public static let itemDescription = AttributeKey("desc")
    /// `kSecAttrComment`.
    public static let comment = AttributeKey("icmt")
    /// `kSecAttrCreator` (a four-character code as a number).
    public static let creator = AttributeKey("crtr")
    /// `kSecAttrType` (a four-character code as a number).
    public static let type = AttributeKey("type")
    /// `kSecAttrIsInvisible` (0 or 1).
    public static let isInvisible = AttributeKey("invi")
    /// `kSecAttrIsNegative` (0 or 1).
    public static let isNegative = AttributeKey("nega")
    /// `kSecAttrService` (generic passwords).
    public static let service = AttributeKey("svce")
    /// `kSecAttrGeneric` (generic passwords): application data in the clear of the API.
    public static let generic = AttributeKey("gena")
    /// `kSecAttrSecurityDomain` (internet passwords).
    public static let securityDomain = AttributeKey("sdmn")
    /// `kSecAttrServer` (internet passwords).
    public static let server = AttributeKey("srvr")
    /// `kSecAttrProtocol` (internet passwords).
    public static let `protocol` = AttributeKey("ptcl")
    /// `kSecAttrAuthenticationType` (internet passwords).
    public static let authenticationType = AttributeKey("atyp")
    /// `kSecAttrPort` (internet passwords).
    public static let port = AttributeKey("port")
    /// `kSecAttrPath` (internet passwords).
    public static let path = AttributeKey("path")

    // MARK: Certificates (derived from the certificate when added)

    /// `kSecAttrCertificateType`.
    public static let certificateType = AttributeKey("ctyp")
    /// `kSecAttrCertificateEncoding`.
    public static let certificateEncoding = AttributeKey("cenc")
    /// `kSecAttrSubject`: DER of the subject name.
    public static let subject = AttributeKey("subj")
    /// `kSecAttrIssuer`: DER of the issuer name.
    public static let issuer = AttributeKey("issr")
    /// `kSecAttrSerialNumber`.
    public static let serialNumber = AttributeKey("slnr")
    /// `kSecAttrSubjectKeyID`.
    public static let subjectKeyID = AttributeKey("skid")
    /// `kSecAttrPublicKeyHash`: SHA-1 of the public key (spec/FORMAT.md §7.5).
    public static let publicKeyHash = AttributeKey("pkhh")

    // MARK: Keys

    /// `kSecAttrKeyClass`: 0 public, 1 private, 2 symmetric.
    public static let keyClass = AttributeKey("kcls")
    /// `kSecAttrApplicationLabel`: for asymmetric keys, the public-key hash.
    public static let applicationLabel = AttributeKey("klbl")
    /// `kSecAttrApplicationTag`.
    public static let applicationTag = AttributeKey("atag")
    /// `kSecAttrKeyType`: 42 RSA, 73 EC, 105 Ed25519, 106 X25519 (the code of `type`).
    public static let keyType = AttributeKey("type")
    /// `kSecAttrKeySizeInBits`.
    public static let keySizeInBits = AttributeKey("bsiz")
    /// `kSecAttrEffectiveKeySize`.
    public static let effectiveKeySize = AttributeKey("esiz")
    /// `kSecAttrIsPermanent`.
    public static let isPermanent = AttributeKey("perm")
    /// `kSecAttrIsSensitive`.
    public static let isSensitive = AttributeKey("sens")
    /// `kSecAttrIsExtractable`.
    public static let isExtractable = AttributeKey("extr")
    /// `kSecAttrCanEncrypt`.
    public static let canEncrypt = AttributeKey("encr")
    /// `kSecAttrCanDecrypt`.
    public static let canDecrypt = AttributeKey("decr")
    /// `kSecAttrCanDerive`.
    public static let canDerive = AttributeKey("drve")
    /// `kSecAttrCanSign`.
    public static let canSign = AttributeKey("sign")
    /// `kSecAttrCanVerify`.
    public static let canVerify = AttributeKey("vrfy")
    /// `kSecAttrCanWrap`.
    public static let canWrap = AttributeKey("wrap")
    /// `kSecAttrCanUnwrap`.
    public static let canUnwrap = AttributeKey("unwp")

    /// Each constant by its Swift name, for the hint of a misspelt attribute name.
    static let named: [(name: String, key: AttributeKey)] = [
        ("label", .label), ("accessGroup", .accessGroup), ("synchronizable", .synchronizable),
        ("accessible", .accessible), ("creationDate", .creationDate), ("modificationDate", .modificationDate),
        ("tokenID", .tokenID), ("syncViewHint", .syncViewHint), ("account", .account),
        ("itemDescription", .itemDescription), ("description", .itemDescription), ("comment", .comment),
        ("creator", .creator), ("type", .type), ("isInvisible", .isInvisible), ("isNegative", .isNegative),
        ("service", .service), ("generic", .generic), ("securityDomain", .securityDomain), ("server", .server),
        ("protocol", .protocol), ("authenticationType", .authenticationType), ("port", .port), ("path", .path),
        ("certificateType", .certificateType), ("certificateEncoding", .certificateEncoding),
        ("subject", .subject), ("issuer", .issuer), ("serialNumber", .serialNumber),
        ("subjectKeyID", .subjectKeyID), ("publicKeyHash", .publicKeyHash), ("keyClass", .keyClass),
        ("applicationLabel", .applicationLabel), ("applicationTag", .applicationTag), ("keyType", .keyType),
        ("keySizeInBits", .keySizeInBits), ("effectiveKeySize", .effectiveKeySize),
        ("isPermanent", .isPermanent), ("isSensitive", .isSensitive), ("isExtractable", .isExtractable),
        ("canEncrypt", .canEncrypt), ("canDecrypt", .canDecrypt), ("canDerive", .canDerive),
        ("canSign", .canSign), ("canVerify", .canVerify), ("canWrap", .canWrap), ("canUnwrap", .canUnwrap),
    ]

    /// The constant a caller probably meant by `name` — its Swift name or Apple's `kSecAttr…`
    /// name, in any case (`"account"`, `"kSecAttrAccount"`, `"Account"`) — or nil.
    static func suggestion(for name: String) -> (name: String, key: AttributeKey)? {
        var folded = name.lowercased().filter { $0 != "_" && $0 != "-" && $0 != " " }
        if folded.hasPrefix("ksecattr") { folded.removeFirst("ksecattr".count) }
        return named.first { $0.name.lowercased() == folded }
    }
}

extension Dictionary where Key == AttributeKey, Value == AttributeValue {
    /// The same attributes keyed by their codes, as the rest of the API takes them.
    var byCode: [String: AttributeValue] {
        var out: [String: AttributeValue] = [:]
        out.reserveCapacity(count)
        for (k, v) in self { out[k.rawValue] = v }
        return out
    }
}
