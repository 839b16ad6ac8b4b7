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
    public static let label = AttributeKey(schema: "label")
    /// `kSecAttrAccessGroup`: which apps share the item (see `CallerIdentity`).
    public static let accessGroup = AttributeKey(schema: "accessGroup")
    /// `kSecAttrSynchronizable` (0 or 1). Queries match 0 unless they ask otherwise.
    public static let synchronizable = AttributeKey(schema: "synchronizable")
    /// `kSecAttrAccessible`, as results report it; set it through `protection`.
    public static let accessible = AttributeKey(schema: "accessible")
    /// `kSecAttrCreationDate`; set by the keychain.
    public static let creationDate = AttributeKey(schema: "creationDate")
    /// `kSecAttrModificationDate`; set by the keychain.
    public static let modificationDate = AttributeKey(schema: "modificationDate")
    /// `kSecAttrTokenID`.
    public static let tokenID = AttributeKey(schema: "tokenID")
    /// `kSecAttrSyncViewHint`.
    public static let syncViewHint = AttributeKey(schema: "syncViewHint")

    // MARK: Generic and internet passwords

    /// `kSecAttrAccount`.
    public static let account = AttributeKey(schema: "account")
    /// `kSecAttrDescription` (named so because `description` is the key's own text).
    public static let itemDescription = AttributeKey(schema: "itemDescription")
    /// `kSecAttrComment`.
    public static let comment = AttributeKey(schema: "comment")
    /// `kSecAttrCreator` (a four-character code as a number).
    public static let creator = AttributeKey(schema: "creator")
    /// `kSecAttrType` (a four-character code as a number).
    public static let type = AttributeKey(schema: "type")
    /// `kSecAttrIsInvisible` (0 or 1).
    public static let isInvisible = AttributeKey(schema: "isInvisible")
    /// `kSecAttrIsNegative` (0 or 1).
    public static let isNegative = AttributeKey(schema: "isNegative")
    /// `kSecAttrService` (generic passwords).
    public static let service = AttributeKey(schema: "service")
    /// `kSecAttrGeneric` (generic passwords): application data in the clear of the API.
    public static let generic = AttributeKey(schema: "generic")
    /// `kSecAttrSecurityDomain` (internet passwords).
    public static let securityDomain = AttributeKey(schema: "securityDomain")
    /// `kSecAttrServer` (internet passwords).
    public static let server = AttributeKey(schema: "server")
    /// `kSecAttrProtocol` (internet passwords).
    public static let `protocol` = AttributeKey(schema: "protocol")
    /// `kSecAttrAuthenticationType` (internet passwords).
    public static let authenticationType = AttributeKey(schema: "authenticationType")
    /// `kSecAttrPort` (internet passwords).
    public static let port = AttributeKey(schema: "port")
    /// `kSecAttrPath` (internet passwords).
    public static let path = AttributeKey(schema: "path")

    // MARK: Certificates (derived from the certificate when added)

    /// `kSecAttrCertificateType`.
    public static let certificateType = AttributeKey(schema: "certificateType")
    /// `kSecAttrCertificateEncoding`.
    public static let certificateEncoding = AttributeKey(schema: "certificateEncoding")
    /// `kSecAttrSubject`: DER of the subject name.
    public static let subject = AttributeKey(schema: "subject")
    /// `kSecAttrIssuer`: DER of the issuer name.
    public static let issuer = AttributeKey(schema: "issuer")
    /// `kSecAttrSerialNumber`.
    public static let serialNumber = AttributeKey(schema: "serialNumber")
    /// `kSecAttrSubjectKeyID`.
    public static let subjectKeyID = AttributeKey(schema: "subjectKeyID")
    /// `kSecAttrPublicKeyHash`: SHA-1 of the public key (spec/FORMAT.md §7.5).
    public static let publicKeyHash = AttributeKey(schema: "publicKeyHash")

    // MARK: Keys

    /// `kSecAttrKeyClass`: 0 public, 1 private, 2 symmetric.
    public static let keyClass = AttributeKey(schema: "keyClass")
    /// `kSecAttrApplicationLabel`: for asymmetric keys, the public-key hash.
    public static let applicationLabel = AttributeKey(schema: "applicationLabel")
    /// `kSecAttrApplicationTag`.
    public static let applicationTag = AttributeKey(schema: "applicationTag")
    /// `kSecAttrKeyType`: 42 RSA, 73 EC, 105 Ed25519, 106 X25519 (the code of `type`).
    public static let keyType = AttributeKey(schema: "keyType")
    /// `kSecAttrKeySizeInBits`.
    public static let keySizeInBits = AttributeKey(schema: "keySizeInBits")
    /// `kSecAttrEffectiveKeySize`.
    public static let effectiveKeySize = AttributeKey(schema: "effectiveKeySize")
    /// `kSecAttrIsPermanent`.
    public static let isPermanent = AttributeKey(schema: "isPermanent")
    /// `kSecAttrIsSensitive`.
    public static let isSensitive = AttributeKey(schema: "isSensitive")
    /// `kSecAttrIsExtractable`.
    public static let isExtractable = AttributeKey(schema: "isExtractable")
    /// `kSecAttrCanEncrypt`.
    public static let canEncrypt = AttributeKey(schema: "canEncrypt")
    /// `kSecAttrCanDecrypt`.
    public static let canDecrypt = AttributeKey(schema: "canDecrypt")
    /// `kSecAttrCanDerive`.
    public static let canDerive = AttributeKey(schema: "canDerive")
    /// `kSecAttrCanSign`.
    public static let canSign = AttributeKey(schema: "canSign")
    /// `kSecAttrCanVerify`.
    public static let canVerify = AttributeKey(schema: "canVerify")
    /// `kSecAttrCanWrap`.
    public static let canWrap = AttributeKey(schema: "canWrap")
    /// `kSecAttrCanUnwrap`.
    public static let canUnwrap = AttributeKey(schema: "canUnwrap")

    /// The constant of `AttributeSchema`'s row named `name`: the code is the table's.
    /// AttributeSchemaTests check that every constant names a row and every named row has one.
    private init(schema name: String) {
        guard let row = AttributeSchema.definition(named: name) else {
            preconditionFailure("AttributeSchema has no row named \(name)")
        }
        self.rawValue = row.code
    }

    /// The constant a caller probably meant by `name` — its Swift name or Apple's `kSecAttr…`
    /// name, in any case (`"account"`, `"kSecAttrAccount"`, `"Account"`) — or nil.
    static func suggestion(for name: String) -> (name: String, key: AttributeKey)? {
        var folded = name.lowercased().filter { $0 != "_" && $0 != "-" && $0 != " " }
        if folded.hasPrefix("ksecattr") { folded.removeFirst("ksecattr".count) }
        for row in AttributeSchema.all {
            guard let swiftName = row.name else { continue }
            if swiftName.lowercased() == folded || row.constant.dropFirst("kSecAttr".count).lowercased() == folded {
                return (swiftName, AttributeKey(row.code))
            }
        }
        return nil
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
