import LatchkeyFormat

/// One item attribute: every fact about it that more than one layer needs, in one row of
/// `AttributeSchema.all`.
///
/// `ItemSchema` (the classes and kinds), `AttributeKey`'s constants and their spelling hints,
/// LatchkeySecurity's `kSecAttr…` constants, the CLI's query and `--set-` options (and so its
/// help, man page and completions) and the fast parser are all read from the table; adding a
/// plain attribute is adding a row. What is on-disk format — which attributes make up the
/// unique key and which are indexed — is defined by LatchkeyFormat (`UniqueKey`,
/// `AttributeHashRecord.indexedAttributes`); the `uniqueIn` and `indexedIn` columns repeat it
/// for readers of the table, and `AttributeSchemaTests` hold the two equal.
package struct AttributeDefinition: Sendable {
    /// How the attribute's value is written as text (on the command line).
    package enum Notation: Sendable, Equatable {
        /// The text as a string.
        case text
        /// A whole number.
        case number
        /// A number, or a code kept as a string (Apple's kSecAttrProtocolHTTPS is the string "htps").
        case code
        /// yes/no (also true/false, 1/0) → 1/0.
        case boolean
        /// Bytes written in hex.
        case hex
        /// An ISO 8601 date.
        case date
        /// kSecAttrKeyType: rsa, dsa, ec, ed25519, x25519, or the number.
        case keyType
        /// kSecAttrKeyClass: public, private, symmetric, or 0/1/2.
        case keyClass
    }

    /// Apple's four-character code, as stored in the item (spec/FORMAT.md §8): `acct`.
    package let code: String
    /// The `AttributeKey` constant (`account`), or nil when the attribute has none.
    package let name: String?
    /// Apple's constant: `kSecAttrAccount`.
    package let constant: String
    /// Apple's other constants of the same code in these classes (`kSecAttrKeyCreator`).
    package let otherConstants: [String]
    /// How a caller's value is coerced (reference §1.2); the same in every class that has it.
    package let kind: ItemSchema.Kind
    /// The classes that have the attribute (Apple's SecItemSchema.c, schema v12.11).
    package let classes: Set<ItemClass>
    /// The classes whose unique key it is part of (LatchkeyFormat's `UniqueKey`).
    package let uniqueIn: Set<ItemClass>
    /// The classes whose attribute-hash records cover it (LatchkeyFormat's §7.6 list).
    package let indexedIn: Set<ItemClass>
    /// Set by the keychain from the item's data (certificates): a caller may query it, not give it.
    package let isDerived: Bool
    /// The command-line option, named after Apple's constant (`account` for `--account` and
    /// `--set-account`), or nil when the CLI gives the attribute its own form (`--accessible`).
    package let flag: String?
    package let notation: Notation
    /// One line for people: what the value is.
    package let help: String
    /// More for the API documentation of the attribute's constants, when `help` is not enough.
    package let note: String?

    init(
        _ code: String, _ name: String?, _ constant: String, _ kind: ItemSchema.Kind, _ classes: Set<ItemClass>,
        also otherConstants: [String] = [], unique uniqueIn: Set<ItemClass> = [],
        indexed indexedIn: Set<ItemClass> = [],
        derived: Bool = false, flag: String?, _ notation: Notation? = nil, help: String, note: String? = nil
    ) {
        self.code = code
        self.name = name
        self.constant = constant
        self.otherConstants = otherConstants
        self.kind = kind
        self.classes = classes
        self.uniqueIn = uniqueIn
        self.indexedIn = indexedIn
        self.isDerived = derived
        self.flag = flag
        self.help = help
        self.note = note
        switch (notation, kind) {
        case (let given?, _): self.notation = given
        case (nil, .data): self.notation = .hex
        case (nil, .number): self.notation = .number
        case (nil, .date): self.notation = .date
        case (nil, .blob), (nil, .string), (nil, .access): self.notation = .text
        }
    }
}

/// Every attribute Latchkey stores, one row each, in the order the CLI's help lists them.
package enum AttributeSchema {
    package static let all: [AttributeDefinition] = [
        // Every class.
        .init(
            "cdat", "creationDate", "kSecAttrCreationDate", .date, .every, flag: nil,
            help: "Creation date, set by the keychain"),
        .init(
            "mdat", "modificationDate", "kSecAttrModificationDate", .date, .every, flag: nil,
            help: "Modification date, set by the keychain on every change"),
        .init(
            "pdmn", "accessible", "kSecAttrAccessible", .access, .every, flag: nil,
            help: "Protection class: ak, ck, dk, aku, cku, dku, akpu",
            note: "An add sets it from its protection (default ak; certificates dk); results report it."),
        .init(
            "sync", "synchronizable", "kSecAttrSynchronizable", .number, .every, unique: .every, flag: nil,
            help: "Synchronizable: 0 or 1; queries match 0 unless they ask otherwise"),
        .init(
            "labl", "label", "kSecAttrLabel", .blob, .every, indexed: .every, flag: "label", help: "User-visible label"),
        .init(
            "agrp", "accessGroup", "kSecAttrAccessGroup", .string, .every, unique: .every, flag: "access-group",
            help: "Access group; add defaults to the caller's first group, queries see all of the caller's groups"),
        .init("alis", nil, "kSecAttrAlias", .blob, .every, flag: "alias", help: "Alias, e.g. an e-mail address"),
        .init(
            "vwht", "syncViewHint", "kSecAttrSyncViewHint", .string, .every, flag: "sync-view-hint",
            help: "Sync view hint"),
        .init("tkid", "tokenID", "kSecAttrTokenID", .string, .every, flag: "token-id", help: "Token identifier"),

        // Passwords (genp, inet).
        .init(
            "acct", "account", "kSecAttrAccount", .blob, .passwords, unique: .passwords, indexed: .passwords,
            flag: "account",
            help: "Account name"),
        .init(
            "desc", "itemDescription", "kSecAttrDescription", .blob, .passwords, flag: "description",
            help: "Description: the kind of item",
            note: "`AttributeKey.itemDescription`, because `description` is the key's own text."),
        .init("icmt", "comment", "kSecAttrComment", .blob, .passwords, flag: "comment", help: "Comment"),
        .init(
            "crtr", "creator", "kSecAttrCreator", .number, .passwords.union([.key]), also: ["kSecAttrKeyCreator"],
            unique: [.key],
            flag: "creator", .code, help: "Creator: a number or a 4-character code"),
        .init(
            "type", "type", "kSecAttrType", .number, .passwords, flag: "type", .code,
            help: "Item type: a number or a 4-character code"),
        .init(
            "invi", "isInvisible", "kSecAttrIsInvisible", .number, .passwords, flag: "is-invisible", .boolean,
            help: "Hidden from users"),
        .init(
            "nega", "isNegative", "kSecAttrIsNegative", .number, .passwords, flag: "is-negative", .boolean,
            help: "A placeholder: no valid password exists"),
        .init(
            "cusi", nil, "kSecAttrHasCustomIcon", .number, .passwords, flag: "has-custom-icon", .boolean,
            help: "Has a custom icon"),
        .init("prot", nil, "kSecAttrProtected", .blob, .passwords, flag: "protected", help: "Protected-data attribute"),
        .init("scrp", nil, "kSecAttrScriptCode", .number, .passwords, flag: "script-code", help: "Script code"),

        // Generic passwords.
        .init(
            "svce", "service", "kSecAttrService", .blob, [.genericPassword], unique: [.genericPassword],
            indexed: [.genericPassword],
            flag: "service", help: "Service name"),
        .init(
            "gena", "generic", "kSecAttrGeneric", .blob, [.genericPassword], indexed: [.genericPassword],
            flag: "generic",
            help: "Application-defined generic attribute"),

        // Internet passwords.
        .init(
            "sdmn", "securityDomain", "kSecAttrSecurityDomain", .blob, [.internetPassword], unique: [.internetPassword],
            indexed: [.internetPassword], flag: "security-domain", help: "Security domain or realm"),
        .init(
            "srvr", "server", "kSecAttrServer", .blob, [.internetPassword], unique: [.internetPassword],
            indexed: [.internetPassword],
            flag: "server", help: "Server host name"),
        .init(
            "ptcl", "protocol", "kSecAttrProtocol", .number, [.internetPassword], unique: [.internetPassword],
            flag: "protocol", .code,
            help: "Protocol: a number or a code such as htps, http, ftp, ssh, imap"),
        .init(
            "atyp", "authenticationType", "kSecAttrAuthenticationType", .blob, [.internetPassword],
            unique: [.internetPassword],
            flag: "authentication-type", help: "Authentication type: a code such as form, http, dflt"),
        .init(
            "port", "port", "kSecAttrPort", .number, [.internetPassword], unique: [.internetPassword], flag: "port",
            help: "Port number"),
        .init(
            "path", "path", "kSecAttrPath", .blob, [.internetPassword], unique: [.internetPassword], flag: "path",
            help: "Path on the server"),

        // Certificates: derived from the DER by the keychain.
        .init(
            "ctyp", "certificateType", "kSecAttrCertificateType", .number, [.certificate], unique: [.certificate],
            derived: true,
            flag: "certificate-type", help: "X.509 version: 1, 2 or 3"),
        .init(
            "cenc", "certificateEncoding", "kSecAttrCertificateEncoding", .number, [.certificate], derived: true,
            flag: "certificate-encoding", help: "Encoding: 3 (DER)"),
        .init(
            "subj", "subject", "kSecAttrSubject", .data, [.certificate], indexed: [.certificate], derived: true,
            flag: "subject",
            help: "Subject name, DER in hex"),
        .init(
            "issr", "issuer", "kSecAttrIssuer", .data, [.certificate], unique: [.certificate], indexed: [.certificate],
            derived: true,
            flag: "issuer", help: "Issuer name, DER in hex"),
        .init(
            "slnr", "serialNumber", "kSecAttrSerialNumber", .data, [.certificate], unique: [.certificate],
            derived: true,
            flag: "serial-number", help: "Serial number in hex"),
        .init(
            "skid", "subjectKeyID", "kSecAttrSubjectKeyID", .data, [.certificate], indexed: [.certificate],
            derived: true,
            flag: "subject-key-id", help: "Subject key identifier in hex"),
        .init(
            "pkhh", "publicKeyHash", "kSecAttrPublicKeyHash", .data, [.certificate], indexed: [.certificate],
            derived: true,
            flag: "public-key-hash", help: "SHA-1 of the public key in hex",
            note: "It joins a certificate to its private key's kSecAttrApplicationLabel."),

        // Keys.
        .init(
            "kcls", "keyClass", "kSecAttrKeyClass", .number, [.key], unique: [.key], flag: "key-class", .keyClass,
            help: "Key class: public, private or symmetric",
            note: "Stored as Apple's numbers: 0 public, 1 private, 2 symmetric."),
        .init(
            "klbl", "applicationLabel", "kSecAttrApplicationLabel", .data, [.key], unique: [.key], indexed: [.key],
            flag: "application-label", help: "Application label in hex (for asymmetric keys, SHA-1 of the public key)"),
        .init(
            "atag", "applicationTag", "kSecAttrApplicationTag", .blob, [.key], unique: [.key], indexed: [.key],
            flag: "application-tag",
            help: "Application tag, e.g. com.example.keys.signing"),
        .init(
            "type", "keyType", "kSecAttrKeyType", .number, [.key], unique: [.key], flag: "key-type", .keyType,
            help: "Key type: rsa, dsa, ec, ed25519, x25519 or a number",
            note: "Stored as Apple's numbers: 42 RSA, 43 DSA, 73 EC, 105 Ed25519, 106 X25519."),
        .init(
            "bsiz", "keySizeInBits", "kSecAttrKeySizeInBits", .number, [.key], unique: [.key], flag: "key-size-in-bits",
            help: "Key size in bits"),
        .init(
            "esiz", "effectiveKeySize", "kSecAttrEffectiveKeySize", .number, [.key], unique: [.key],
            flag: "effective-key-size",
            help: "Effective key size in bits"),
        .init(
            "sdat", nil, "kSecAttrStartDate", .date, [.key], unique: [.key], flag: "start-date",
            help: "Start of validity, ISO 8601"),
        .init(
            "edat", nil, "kSecAttrEndDate", .date, [.key], unique: [.key], flag: "end-date",
            help: "End of validity, ISO 8601"),
        .init(
            "perm", "isPermanent", "kSecAttrIsPermanent", .number, [.key], flag: "is-permanent", .boolean,
            help: "Permanent key"),
        .init("priv", nil, "kSecAttrIsPrivate", .number, [.key], flag: "is-private", .boolean, help: "Private key"),
        .init(
            "modi", nil, "kSecAttrIsModifiable", .number, [.key], flag: "is-modifiable", .boolean, help: "Modifiable"),
        .init(
            "sens", "isSensitive", "kSecAttrIsSensitive", .number, [.key], flag: "is-sensitive", .boolean,
            help: "Sensitive"),
        .init(
            "asen", nil, "kSecAttrWasAlwaysSensitive", .number, [.key], flag: "was-always-sensitive", .boolean,
            help: "Always was sensitive"),
        .init(
            "extr", "isExtractable", "kSecAttrIsExtractable", .number, [.key], flag: "is-extractable", .boolean,
            help: "Extractable"),
        .init(
            "next", nil, "kSecAttrWasNeverExtractable", .number, [.key], flag: "was-never-extractable", .boolean,
            help: "Never was extractable"),
        .init(
            "encr", "canEncrypt", "kSecAttrCanEncrypt", .number, [.key], flag: "can-encrypt", .boolean,
            help: "Usable to encrypt"),
        .init(
            "decr", "canDecrypt", "kSecAttrCanDecrypt", .number, [.key], flag: "can-decrypt", .boolean,
            help: "Usable to decrypt"),
        .init(
            "drve", "canDerive", "kSecAttrCanDerive", .number, [.key], flag: "can-derive", .boolean,
            help: "Usable to derive keys"),
        .init(
            "sign", "canSign", "kSecAttrCanSign", .number, [.key], flag: "can-sign", .boolean, help: "Usable to sign"),
        .init(
            "vrfy", "canVerify", "kSecAttrCanVerify", .number, [.key], flag: "can-verify", .boolean,
            help: "Usable to verify"),
        .init(
            "wrap", "canWrap", "kSecAttrCanWrap", .number, [.key], flag: "can-wrap", .boolean,
            help: "Usable to wrap keys"),
        .init(
            "unwp", "canUnwrap", "kSecAttrCanUnwrap", .number, [.key], flag: "can-unwrap", .boolean,
            help: "Usable to unwrap keys"),
        .init(
            "snrc", nil, "kSecAttrCanSignRecover", .number, [.key], flag: "can-sign-recover", .boolean,
            help: "Usable to sign with recovery"),
        .init(
            "vyrc", nil, "kSecAttrCanVerifyRecover", .number, [.key], flag: "can-verify-recover", .boolean,
            help: "Usable to verify with recovery")
    ]
}

extension Set where Element == ItemClass {
    fileprivate static var every: Set<ItemClass> { everyClass }
    fileprivate static var passwords: Set<ItemClass> { passwordClasses }
}

// Made once: the table names them in many rows, and the fast path builds it in every process.
private let everyClass = Set(ItemClass.allCases)
private let passwordClasses: Set<ItemClass> = [.genericPassword, .internetPassword]
