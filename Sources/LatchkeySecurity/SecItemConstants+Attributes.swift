import Foundation
import Latchkey

// Made from AttributeSchema (Sources/Latchkey/Items/AttributeSchema.swift) by `make generate`:
// add or change a row there, never here. GeneratedSourcesTests check that this file is current.
//
// The attribute keys of the attributes Latchkey stores, with Apple's codes; the other `kSec…`
// constants, and why they are `nonisolated(unsafe)`, are in SecItemConstants.swift.

// MARK: Attribute keys: every class

/// `kSecAttrCreationDate` (`cdat`): Creation date, set by the keychain. In every class.
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = "cdat"

/// `kSecAttrModificationDate` (`mdat`): Modification date, set by the keychain on every change. In every class.
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = "mdat"

/// `kSecAttrAccessible` (`pdmn`): Protection class: ak, ck, dk, aku, cku, dku, akpu. In every class. An add sets it
/// from its protection (default ak; certificates dk); results report it.
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"

/// `kSecAttrSynchronizable` (`sync`): Synchronizable: 0 or 1; queries match 0 unless they ask otherwise. In every
/// class. Part of the unique key.
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"

/// `kSecAttrLabel` (`labl`): User-visible label. In every class. Indexed.
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"

/// `kSecAttrAccessGroup` (`agrp`): Access group; add defaults to the caller's first group, queries see all of the
/// caller's groups. In every class. Part of the unique key.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"

/// `kSecAttrAlias` (`alis`): Alias, e.g. an e-mail address. In every class.
nonisolated(unsafe) public let kSecAttrAlias: CFString = "alis"

/// `kSecAttrSyncViewHint` (`vwht`): Sync view hint. In every class.
nonisolated(unsafe) public let kSecAttrSyncViewHint: CFString = "vwht"

/// `kSecAttrTokenID` (`tkid`): Token identifier. In every class.
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"

// MARK: Attribute keys: generic and internet passwords

/// `kSecAttrAccount` (`acct`): Account name. In generic and internet passwords. Part of the unique key; indexed.
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"

/// `kSecAttrDescription` (`desc`): Description: the kind of item. In generic and internet passwords.
/// `AttributeKey.itemDescription`, because `description` is the key's own text.
nonisolated(unsafe) public let kSecAttrDescription: CFString = "desc"

/// `kSecAttrComment` (`icmt`): Comment. In generic and internet passwords.
nonisolated(unsafe) public let kSecAttrComment: CFString = "icmt"

// MARK: Attribute keys: generic and internet passwords and keys

/// `kSecAttrCreator` (`crtr`): Creator: a number or a 4-character code. In generic and internet passwords and keys.
/// Part of the unique key of keys.
nonisolated(unsafe) public let kSecAttrCreator: CFString = "crtr"

/// `kSecAttrKeyCreator` (`crtr`): Creator: a number or a 4-character code. Apple's other name of `kSecAttrCreator`. In
/// generic and internet passwords and keys. Part of the unique key of keys.
nonisolated(unsafe) public let kSecAttrKeyCreator: CFString = "crtr"

// MARK: Attribute keys: generic and internet passwords

/// `kSecAttrType` (`type`): Item type: a number or a 4-character code. In generic and internet passwords.
nonisolated(unsafe) public let kSecAttrType: CFString = "type"

/// `kSecAttrIsInvisible` (`invi`): Hidden from users. In generic and internet passwords.
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = "invi"

/// `kSecAttrIsNegative` (`nega`): A placeholder: no valid password exists. In generic and internet passwords.
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = "nega"

/// `kSecAttrHasCustomIcon` (`cusi`): Has a custom icon. In generic and internet passwords.
nonisolated(unsafe) public let kSecAttrHasCustomIcon: CFString = "cusi"

/// `kSecAttrProtected` (`prot`): Protected-data attribute. In generic and internet passwords.
nonisolated(unsafe) public let kSecAttrProtected: CFString = "prot"

/// `kSecAttrScriptCode` (`scrp`): Script code. In generic and internet passwords.
nonisolated(unsafe) public let kSecAttrScriptCode: CFString = "scrp"

// MARK: Attribute keys: generic passwords

/// `kSecAttrService` (`svce`): Service name. In generic passwords. Part of the unique key; indexed.
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"

/// `kSecAttrGeneric` (`gena`): Application-defined generic attribute. In generic passwords. Indexed.
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"

// MARK: Attribute keys: internet passwords

/// `kSecAttrSecurityDomain` (`sdmn`): Security domain or realm. In internet passwords. Part of the unique key; indexed.
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = "sdmn"

/// `kSecAttrServer` (`srvr`): Server host name. In internet passwords. Part of the unique key; indexed.
nonisolated(unsafe) public let kSecAttrServer: CFString = "srvr"

/// `kSecAttrProtocol` (`ptcl`): Protocol: a number or a code such as htps, http, ftp, ssh, imap. In internet passwords.
/// Part of the unique key.
nonisolated(unsafe) public let kSecAttrProtocol: CFString = "ptcl"

/// `kSecAttrAuthenticationType` (`atyp`): Authentication type: a code such as form, http, dflt. In internet passwords.
/// Part of the unique key.
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = "atyp"

/// `kSecAttrPort` (`port`): Port number. In internet passwords. Part of the unique key.
nonisolated(unsafe) public let kSecAttrPort: CFString = "port"

/// `kSecAttrPath` (`path`): Path on the server. In internet passwords. Part of the unique key.
nonisolated(unsafe) public let kSecAttrPath: CFString = "path"

// MARK: Attribute keys: certificates

/// `kSecAttrCertificateType` (`ctyp`): X.509 version: 1, 2 or 3. In certificates. Part of the unique key; set by the
/// keychain from the certificate, so queries only.
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = "ctyp"

/// `kSecAttrCertificateEncoding` (`cenc`): Encoding: 3 (DER). In certificates. Set by the keychain from the
/// certificate, so queries only.
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = "cenc"

/// `kSecAttrSubject` (`subj`): Subject name, DER. In certificates. Indexed; set by the keychain from the certificate,
/// so queries only.
nonisolated(unsafe) public let kSecAttrSubject: CFString = "subj"

/// `kSecAttrIssuer` (`issr`): Issuer name, DER. In certificates. Part of the unique key; indexed; set by the keychain
/// from the certificate, so queries only.
nonisolated(unsafe) public let kSecAttrIssuer: CFString = "issr"

/// `kSecAttrSerialNumber` (`slnr`): Serial number. In certificates. Part of the unique key; set by the keychain from
/// the certificate, so queries only.
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = "slnr"

/// `kSecAttrSubjectKeyID` (`skid`): Subject key identifier. In certificates. Indexed; set by the keychain from the
/// certificate, so queries only.
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = "skid"

/// `kSecAttrPublicKeyHash` (`pkhh`): SHA-1 of the public key. In certificates. Indexed; set by the keychain from the
/// certificate, so queries only. It joins a certificate to its private key's kSecAttrApplicationLabel.
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = "pkhh"

// MARK: Attribute keys: keys

/// `kSecAttrKeyClass` (`kcls`): Key class: public, private or symmetric. In keys. Part of the unique key. Stored as
/// Apple's numbers: 0 public, 1 private, 2 symmetric.
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = "kcls"

/// `kSecAttrApplicationLabel` (`klbl`): Application label (for asymmetric keys, SHA-1 of the public key). In keys. Part
/// of the unique key; indexed.
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = "klbl"

/// `kSecAttrApplicationTag` (`atag`): Application tag, e.g. com.example.keys.signing. In keys. Part of the unique key;
/// indexed.
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"

/// `kSecAttrKeyType` (`type`): Key type: rsa, dsa, ec, ed25519, x25519 or a number. In keys. Part of the unique key.
/// Stored as Apple's numbers: 42 RSA, 43 DSA, 73 EC, 105 Ed25519, 106 X25519.
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"

/// `kSecAttrKeySizeInBits` (`bsiz`): Key size in bits. In keys. Part of the unique key.
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"

/// `kSecAttrEffectiveKeySize` (`esiz`): Effective key size in bits. In keys. Part of the unique key.
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = "esiz"

/// `kSecAttrStartDate` (`sdat`): Start of validity, ISO 8601. In keys. Part of the unique key.
nonisolated(unsafe) public let kSecAttrStartDate: CFString = "sdat"

/// `kSecAttrEndDate` (`edat`): End of validity, ISO 8601. In keys. Part of the unique key.
nonisolated(unsafe) public let kSecAttrEndDate: CFString = "edat"

/// `kSecAttrIsPermanent` (`perm`): Permanent key. In keys.
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"

/// `kSecAttrIsPrivate` (`priv`): Private key. In keys.
nonisolated(unsafe) public let kSecAttrIsPrivate: CFString = "priv"

/// `kSecAttrIsModifiable` (`modi`): Modifiable. In keys.
nonisolated(unsafe) public let kSecAttrIsModifiable: CFString = "modi"

/// `kSecAttrIsSensitive` (`sens`): Sensitive. In keys.
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = "sens"

/// `kSecAttrWasAlwaysSensitive` (`asen`): Always was sensitive. In keys.
nonisolated(unsafe) public let kSecAttrWasAlwaysSensitive: CFString = "asen"

/// `kSecAttrIsExtractable` (`extr`): Extractable. In keys.
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = "extr"

/// `kSecAttrWasNeverExtractable` (`next`): Never was extractable. In keys.
nonisolated(unsafe) public let kSecAttrWasNeverExtractable: CFString = "next"

/// `kSecAttrCanEncrypt` (`encr`): Usable to encrypt. In keys.
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = "encr"

/// `kSecAttrCanDecrypt` (`decr`): Usable to decrypt. In keys.
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = "decr"

/// `kSecAttrCanDerive` (`drve`): Usable to derive keys. In keys.
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = "drve"

/// `kSecAttrCanSign` (`sign`): Usable to sign. In keys.
nonisolated(unsafe) public let kSecAttrCanSign: CFString = "sign"

/// `kSecAttrCanVerify` (`vrfy`): Usable to verify. In keys.
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = "vrfy"

/// `kSecAttrCanWrap` (`wrap`): Usable to wrap keys. In keys.
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = "wrap"

/// `kSecAttrCanUnwrap` (`unwp`): Usable to unwrap keys. In keys.
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = "unwp"

/// `kSecAttrCanSignRecover` (`snrc`): Usable to sign with recovery. In keys.
nonisolated(unsafe) public let kSecAttrCanSignRecover: CFString = "snrc"

/// `kSecAttrCanVerifyRecover` (`vyrc`): Usable to verify with recovery. In keys.
nonisolated(unsafe) public let kSecAttrCanVerifyRecover: CFString = "vyrc"
