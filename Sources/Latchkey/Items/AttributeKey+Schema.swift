// Made from AttributeSchema (Sources/Latchkey/Items/AttributeSchema.swift) by `make generate`:
// add or change a row there, never here. GeneratedSourcesTests check that this file is current.

extension AttributeKey {
    // MARK: Every class

    /// `kSecAttrCreationDate` (`cdat`): Creation date, set by the keychain. In every class.
    public static let creationDate = AttributeKey("cdat")

    /// `kSecAttrModificationDate` (`mdat`): Modification date, set by the keychain on every change. In every class.
    public static let modificationDate = AttributeKey("mdat")

    /// `kSecAttrAccessible` (`pdmn`): Protection class: ak, ck, dk, aku, cku, dku, akpu. In every class. An add sets it
    /// from its protection (default ak; certificates dk); results report it.
    public static let accessible = AttributeKey("pdmn")

    /// `kSecAttrSynchronizable` (`sync`): Synchronizable: 0 or 1; queries match 0 unless they ask otherwise. In every
    /// class. Part of the unique key.
    public static let synchronizable = AttributeKey("sync")

    /// `kSecAttrLabel` (`labl`): User-visible label. In every class. Indexed.
    public static let label = AttributeKey("labl")

    /// `kSecAttrAccessGroup` (`agrp`): Access group; add defaults to the caller's first group, queries see all of the
    /// caller's groups. In every class. Part of the unique key.
    public static let accessGroup = AttributeKey("agrp")

    /// `kSecAttrSyncViewHint` (`vwht`): Sync view hint. In every class.
    public static let syncViewHint = AttributeKey("vwht")

    /// `kSecAttrTokenID` (`tkid`): Token identifier. In every class.
    public static let tokenID = AttributeKey("tkid")

    // MARK: Generic and internet passwords

    /// `kSecAttrAccount` (`acct`): Account name. In generic and internet passwords. Part of the unique key; indexed.
    public static let account = AttributeKey("acct")

    /// `kSecAttrDescription` (`desc`): Description: the kind of item. In generic and internet passwords.
    /// `AttributeKey.itemDescription`, because `description` is the key's own text.
    public static let itemDescription = AttributeKey("desc")

    /// `kSecAttrComment` (`icmt`): Comment. In generic and internet passwords.
    public static let comment = AttributeKey("icmt")

    // MARK: Generic and internet passwords and keys

    /// `kSecAttrCreator` (`crtr`): Creator: a number or a 4-character code. In generic and internet passwords and keys.
    /// Part of the unique key of keys.
    public static let creator = AttributeKey("crtr")

    // MARK: Generic and internet passwords

    /// `kSecAttrType` (`type`): Item type: a number or a 4-character code. In generic and internet passwords.
    public static let type = AttributeKey("type")

    /// `kSecAttrIsInvisible` (`invi`): Hidden from users. In generic and internet passwords.
    public static let isInvisible = AttributeKey("invi")

    /// `kSecAttrIsNegative` (`nega`): A placeholder: no valid password exists. In generic and internet passwords.
    public static let isNegative = AttributeKey("nega")

    // MARK: Generic passwords

    /// `kSecAttrService` (`svce`): Service name. In generic passwords. Part of the unique key; indexed.
    public static let service = AttributeKey("svce")

    /// `kSecAttrGeneric` (`gena`): Application-defined generic attribute. In generic passwords. Indexed.
    public static let generic = AttributeKey("gena")

    // MARK: Internet passwords

    /// `kSecAttrSecurityDomain` (`sdmn`): Security domain or realm. In internet passwords. Part of the unique key;
    /// indexed.
    public static let securityDomain = AttributeKey("sdmn")

    /// `kSecAttrServer` (`srvr`): Server host name. In internet passwords. Part of the unique key; indexed.
    public static let server = AttributeKey("srvr")

    /// `kSecAttrProtocol` (`ptcl`): Protocol: a number or a code such as htps, http, ftp, ssh, imap. In internet
    /// passwords. Part of the unique key.
    public static let `protocol` = AttributeKey("ptcl")

    /// `kSecAttrAuthenticationType` (`atyp`): Authentication type: a code such as form, http, dflt. In internet
    /// passwords. Part of the unique key.
    public static let authenticationType = AttributeKey("atyp")

    /// `kSecAttrPort` (`port`): Port number. In internet passwords. Part of the unique key.
    public static let port = AttributeKey("port")

    /// `kSecAttrPath` (`path`): Path on the server. In internet passwords. Part of the unique key.
    public static let path = AttributeKey("path")

    // MARK: Certificates

    /// `kSecAttrCertificateType` (`ctyp`): X.509 version: 1, 2 or 3. In certificates. Part of the unique key; set by
    /// the keychain from the certificate, so queries only.
    public static let certificateType = AttributeKey("ctyp")

    /// `kSecAttrCertificateEncoding` (`cenc`): Encoding: 3 (DER). In certificates. Set by the keychain from the
    /// certificate, so queries only.
    public static let certificateEncoding = AttributeKey("cenc")

    /// `kSecAttrSubject` (`subj`): Subject name, DER. In certificates. Indexed; set by the keychain from the
    /// certificate, so queries only.
    public static let subject = AttributeKey("subj")

    /// `kSecAttrIssuer` (`issr`): Issuer name, DER. In certificates. Part of the unique key; indexed; set by the
    /// keychain from the certificate, so queries only.
    public static let issuer = AttributeKey("issr")

    /// `kSecAttrSerialNumber` (`slnr`): Serial number. In certificates. Part of the unique key; set by the keychain
    /// from the certificate, so queries only.
    public static let serialNumber = AttributeKey("slnr")

    /// `kSecAttrSubjectKeyID` (`skid`): Subject key identifier. In certificates. Indexed; set by the keychain from the
    /// certificate, so queries only.
    public static let subjectKeyID = AttributeKey("skid")

    /// `kSecAttrPublicKeyHash` (`pkhh`): SHA-1 of the public key. In certificates. Indexed; set by the keychain from
    /// the certificate, so queries only. It joins a certificate to its private key's kSecAttrApplicationLabel.
    public static let publicKeyHash = AttributeKey("pkhh")

    // MARK: Keys

    /// `kSecAttrKeyClass` (`kcls`): Key class: public, private or symmetric. In keys. Part of the unique key. Stored as
    /// Apple's numbers: 0 public, 1 private, 2 symmetric.
    public static let keyClass = AttributeKey("kcls")

    /// `kSecAttrApplicationLabel` (`klbl`): Application label (for asymmetric keys, SHA-1 of the public key). In keys.
    /// Part of the unique key; indexed.
    public static let applicationLabel = AttributeKey("klbl")

    /// `kSecAttrApplicationTag` (`atag`): Application tag, e.g. com.example.keys.signing. In keys. Part of the unique
    /// key; indexed.
    public static let applicationTag = AttributeKey("atag")

    /// `kSecAttrKeyType` (`type`): Key type: rsa, dsa, ec, ed25519, x25519 or a number. In keys. Part of the unique
    /// key. Stored as Apple's numbers: 42 RSA, 43 DSA, 73 EC, 105 Ed25519, 106 X25519.
    public static let keyType = AttributeKey("type")

    /// `kSecAttrKeySizeInBits` (`bsiz`): Key size in bits. In keys. Part of the unique key.
    public static let keySizeInBits = AttributeKey("bsiz")

    /// `kSecAttrEffectiveKeySize` (`esiz`): Effective key size in bits. In keys. Part of the unique key.
    public static let effectiveKeySize = AttributeKey("esiz")

    /// `kSecAttrIsPermanent` (`perm`): Permanent key. In keys.
    public static let isPermanent = AttributeKey("perm")

    /// `kSecAttrIsSensitive` (`sens`): Sensitive. In keys.
    public static let isSensitive = AttributeKey("sens")

    /// `kSecAttrIsExtractable` (`extr`): Extractable. In keys.
    public static let isExtractable = AttributeKey("extr")

    /// `kSecAttrCanEncrypt` (`encr`): Usable to encrypt. In keys.
    public static let canEncrypt = AttributeKey("encr")

    /// `kSecAttrCanDecrypt` (`decr`): Usable to decrypt. In keys.
    public static let canDecrypt = AttributeKey("decr")

    /// `kSecAttrCanDerive` (`drve`): Usable to derive keys. In keys.
    public static let canDerive = AttributeKey("drve")

    /// `kSecAttrCanSign` (`sign`): Usable to sign. In keys.
    public static let canSign = AttributeKey("sign")

    /// `kSecAttrCanVerify` (`vrfy`): Usable to verify. In keys.
    public static let canVerify = AttributeKey("vrfy")

    /// `kSecAttrCanWrap` (`wrap`): Usable to wrap keys. In keys.
    public static let canWrap = AttributeKey("wrap")

    /// `kSecAttrCanUnwrap` (`unwp`): Usable to unwrap keys. In keys.
    public static let canUnwrap = AttributeKey("unwp")
}
