import Foundation
import Latchkey

// Every `kSec…` constant of Apple's Security framework that SecItem uses, with Apple's values
// from `OSX/sec/Security/SecItemConstants.c` (apple-oss-distributions/Security). They are kept
// in this one file. The attribute keys of stored attributes take their codes from Latchkey's
// `AttributeSchema` (`schemaCode`), which has a row for each; SecItemConstantsTests check that
// every row has its constant here and every such constant its row.
//
// Each is a `CFString` (an `NSString`), so `kSecClass as String`, `dict[kSecAttrAccount as String]`
// and `kSecAttrAccessibleWhenUnlocked` as a dictionary value work as on Apple platforms.
// `NSString` is not `Sendable` in swift-corelibs-foundation; these immutable constants are
// safe to share, hence `nonisolated(unsafe)`.

/// The code of the attribute whose Apple constant is `constant`, from `AttributeSchema`.
private func schemaCode(_ constant: String) -> CFString {
    guard let row = AttributeSchema.definition(constant: constant) else {
        preconditionFailure("AttributeSchema has no row for \(constant)")
    }
    return NSString(string: row.code)
}

// MARK: Class key and values (kSecClass)

/// The item class of a dictionary; its value is one of the `kSecClass…` constants. Required by every call (or implied by kSecValuePersistentRef). Value `"class"`.
nonisolated(unsafe) public let kSecClass: CFString = "class"
/// Generic password (unique key: account, service, access group, synchronizable). Value `"genp"`.
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// Internet password (unique key: account, security domain, server, protocol, authentication type, port, path, access group, synchronizable). Value `"inet"`.
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = "inet"
/// Certificate (unique key: certificate type, issuer, serial number, access group, synchronizable). Default protection `dk`. Value `"cert"`.
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// Cryptographic key (unique key: key class, application label and tag, creator, type, sizes, dates, access group, synchronizable). Value `"keys"`.
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// Identity: a certificate and its private key (not stored itself; SecItem calls with it return errSecUnimplemented until certificate support lands). Value `"idnt"`.
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"

// MARK: Attribute keys: common to every class

/// When the item can be used: one of the `kSecAttrAccessible…` values (default `ak`, certificates `dk`).
nonisolated(unsafe) public let kSecAttrAccessible: CFString = schemaCode("kSecAttrAccessible")
/// A `SecAccessControl` (protection plus constraints such as user presence). Its protection must equal kSecAttrAccessible when both are given. Value `"accc"`.
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
/// The keychain access group of the item (default: the caller's first group).
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = schemaCode("kSecAttrAccessGroup")
/// Creation date (CFDate), set by the keychain; a value given by the caller is replaced.
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = schemaCode("kSecAttrCreationDate")
/// Modification date (CFDate), set by the keychain on add and every update.
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = schemaCode("kSecAttrModificationDate")
/// User-visible description (string).
nonisolated(unsafe) public let kSecAttrDescription: CFString = schemaCode("kSecAttrDescription")
/// User-editable comment (string).
nonisolated(unsafe) public let kSecAttrComment: CFString = schemaCode("kSecAttrComment")
/// Creator four-char code (number).
nonisolated(unsafe) public let kSecAttrCreator: CFString = schemaCode("kSecAttrCreator")
/// Item type four-char code (number).
nonisolated(unsafe) public let kSecAttrType: CFString = schemaCode("kSecAttrType")
/// User-visible label (string).
nonisolated(unsafe) public let kSecAttrLabel: CFString = schemaCode("kSecAttrLabel")
/// Whether the item is invisible in UIs (boolean, stored as a number).
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = schemaCode("kSecAttrIsInvisible")
/// Whether the item is a negative entry without a valid password (boolean, stored as a number).
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = schemaCode("kSecAttrIsNegative")
/// Whether the item is synchronizable (boolean, or kSecAttrSynchronizableAny in a query). Stored and filtered as on iOS; nothing is synchronised.
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = schemaCode("kSecAttrSynchronizable")
/// Sync view hint (string; part of the schema's unique key, normally empty).
nonisolated(unsafe) public let kSecAttrSyncViewHint: CFString = schemaCode("kSecAttrSyncViewHint")
/// Token identifier (string) of token items.
nonisolated(unsafe) public let kSecAttrTokenID: CFString = schemaCode("kSecAttrTokenID")

// MARK: Attribute keys: passwords

/// Account name (string or data). Part of the unique key of passwords.
nonisolated(unsafe) public let kSecAttrAccount: CFString = schemaCode("kSecAttrAccount")
/// Service name (generic passwords; string or data). Part of the unique key.
nonisolated(unsafe) public let kSecAttrService: CFString = schemaCode("kSecAttrService")
/// User-defined data (generic passwords). Not part of the unique key.
nonisolated(unsafe) public let kSecAttrGeneric: CFString = schemaCode("kSecAttrGeneric")
/// Internet security domain (internet passwords).
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = schemaCode("kSecAttrSecurityDomain")
/// Server domain name or IP address (internet passwords).
nonisolated(unsafe) public let kSecAttrServer: CFString = schemaCode("kSecAttrServer")
/// Protocol: one of the `kSecAttrProtocol…` values (internet passwords).
nonisolated(unsafe) public let kSecAttrProtocol: CFString = schemaCode("kSecAttrProtocol")
/// Authentication scheme: one of the `kSecAttrAuthenticationType…` values (internet passwords).
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = schemaCode("kSecAttrAuthenticationType")
/// Port number (internet passwords).
nonisolated(unsafe) public let kSecAttrPort: CFString = schemaCode("kSecAttrPort")
/// Path, usually of a URL (internet passwords).
nonisolated(unsafe) public let kSecAttrPath: CFString = schemaCode("kSecAttrPath")

// MARK: Attribute keys: certificates

/// X.500 subject name of the certificate (data).
nonisolated(unsafe) public let kSecAttrSubject: CFString = schemaCode("kSecAttrSubject")
/// X.500 issuer name of the certificate (data). Part of the unique key.
nonisolated(unsafe) public let kSecAttrIssuer: CFString = schemaCode("kSecAttrIssuer")
/// Serial number of the certificate (data). Part of the unique key.
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = schemaCode("kSecAttrSerialNumber")
/// Subject key identifier of the certificate (data).
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = schemaCode("kSecAttrSubjectKeyID")
/// Hash of the certificate's public key (data); joins to a key's kSecAttrApplicationLabel.
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = schemaCode("kSecAttrPublicKeyHash")
/// Certificate type (number). Part of the unique key.
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = schemaCode("kSecAttrCertificateType")
/// Certificate encoding (number; 3 = DER).
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = schemaCode("kSecAttrCertificateEncoding")

// MARK: Attribute keys: keys

/// Key class: one of the `kSecAttrKeyClass…` values.
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = schemaCode("kSecAttrKeyClass")
/// Application label (data; the public key hash for asymmetric keys).
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = schemaCode("kSecAttrApplicationLabel")
/// Whether the key is stored permanently (boolean).
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = schemaCode("kSecAttrIsPermanent")
/// Whether the key is sensitive (boolean).
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = schemaCode("kSecAttrIsSensitive")
/// Whether the key can be extracted (boolean).
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = schemaCode("kSecAttrIsExtractable")
/// Private application tag (data or string).
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = schemaCode("kSecAttrApplicationTag")
/// Key algorithm: one of the `kSecAttrKeyType…` values.
nonisolated(unsafe) public let kSecAttrKeyType: CFString = schemaCode("kSecAttrKeyType")
/// Number of bits in the key (number).
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = schemaCode("kSecAttrKeySizeInBits")
/// Effective number of bits in the key (number).
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = schemaCode("kSecAttrEffectiveKeySize")
/// Whether the key can encrypt (boolean).
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = schemaCode("kSecAttrCanEncrypt")
/// Whether the key can decrypt (boolean).
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = schemaCode("kSecAttrCanDecrypt")
/// Whether the key can derive other keys (boolean).
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = schemaCode("kSecAttrCanDerive")
/// Whether the key can sign (boolean).
nonisolated(unsafe) public let kSecAttrCanSign: CFString = schemaCode("kSecAttrCanSign")
/// Whether the key can verify signatures (boolean).
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = schemaCode("kSecAttrCanVerify")
/// Whether the key can wrap other keys (boolean).
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = schemaCode("kSecAttrCanWrap")
/// Whether the key can unwrap other keys (boolean).
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = schemaCode("kSecAttrCanUnwrap")
/// Key creator (number; same code as kSecAttrCreator).
nonisolated(unsafe) public let kSecAttrKeyCreator: CFString = schemaCode("kSecAttrKeyCreator")
/// Start of the key's validity (date).
nonisolated(unsafe) public let kSecAttrStartDate: CFString = schemaCode("kSecAttrStartDate")
/// End of the key's validity (date).
nonisolated(unsafe) public let kSecAttrEndDate: CFString = schemaCode("kSecAttrEndDate")

// MARK: Attribute keys: private or legacy codes Apple also declares

/// Alias (private on iOS; an e-mail address for certificates).
nonisolated(unsafe) public let kSecAttrAlias: CFString = schemaCode("kSecAttrAlias")
/// Whether the key is private (private attribute).
nonisolated(unsafe) public let kSecAttrIsPrivate: CFString = schemaCode("kSecAttrIsPrivate")
/// Whether the key is modifiable (private attribute).
nonisolated(unsafe) public let kSecAttrIsModifiable: CFString = schemaCode("kSecAttrIsModifiable")
/// Whether the key was always sensitive (private attribute).
nonisolated(unsafe) public let kSecAttrWasAlwaysSensitive: CFString = schemaCode("kSecAttrWasAlwaysSensitive")
/// Whether the key was never extractable (private attribute).
nonisolated(unsafe) public let kSecAttrWasNeverExtractable: CFString = schemaCode("kSecAttrWasNeverExtractable")
/// Whether the key can sign with recovery (private attribute).
nonisolated(unsafe) public let kSecAttrCanSignRecover: CFString = schemaCode("kSecAttrCanSignRecover")
/// Whether the key can verify with recovery (private attribute).
nonisolated(unsafe) public let kSecAttrCanVerifyRecover: CFString = schemaCode("kSecAttrCanVerifyRecover")
/// Protected-data attribute (private attribute of passwords).
nonisolated(unsafe) public let kSecAttrProtected: CFString = schemaCode("kSecAttrProtected")
/// Script code (private attribute of passwords).
nonisolated(unsafe) public let kSecAttrScriptCode: CFString = schemaCode("kSecAttrScriptCode")
/// Has custom icon (private attribute of passwords).
nonisolated(unsafe) public let kSecAttrHasCustomIcon: CFString = schemaCode("kSecAttrHasCustomIcon")
/// Tombstone marker of deleted synchronizable items (private; not an attribute Latchkey accepts). Value `"tomb"`.
nonisolated(unsafe) public let kSecAttrTombstone: CFString = "tomb"
/// Multi-user view (private; not an attribute Latchkey accepts). Value `"musr"`.
nonisolated(unsafe) public let kSecAttrMultiUser: CFString = "musr"
/// System-bound flag (private; not an attribute Latchkey accepts). Value `"sysb"`.
nonisolated(unsafe) public let kSecAttrSysBound: CFString = "sysb"
/// SHA-1 of the hashed attributes (private; not an attribute Latchkey accepts). Value `"sha1"`.
nonisolated(unsafe) public let kSecAttrSHA1: CFString = "sha1"
/// Sync identity of the item (private; removed from results). Value `"UUID"`.
nonisolated(unsafe) public let kSecAttrUUID: CFString = "UUID"
/// Basis of persistent references (private; removed from results). Value `"persistref"`.
nonisolated(unsafe) public let kSecAttrPersistentReference: CFString = "persistref"
/// Deprecated private spelling of kSecUseDataProtectionKeychain (accepted and ignored). Value `"nleg"`.
nonisolated(unsafe) public let kSecAttrNoLegacy: CFString = "nleg"

// MARK: kSecAttrAccessible values

/// Usable while the keychain is unlocked. The default. Value `"ak"`.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// Usable from the first unlock until the keychain is closed (or the agent exits). Value `"ck"`.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// Always usable (deprecated by Apple in iOS 12; still honoured). Value `"dk"`.
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = "dk"
/// As WhenUnlocked, and never restorable on another device. Value `"aku"`.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// As AfterFirstUnlock, and never restorable on another device. Value `"cku"`.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// As Always, and never restorable on another device (deprecated by Apple in iOS 12). Value `"dku"`.
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"
/// As WhenUnlockedThisDeviceOnly, and only on a keychain with a passcode (else errSecNotAvailable); never backed up. Value `"akpu"`.
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"

// MARK: kSecAttrSynchronizable values and predefined access groups

/// In a query: match synchronizable and non-synchronizable items alike. Value `"syna"`.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"
/// The read-only access group of token items. Value `"com.apple.token"`.
nonisolated(unsafe) public let kSecAttrAccessGroupToken: CFString = "com.apple.token"

// MARK: kSecAttrProtocol values

/// FTP. Value `"ftp "`.
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
/// FTP account. Value `"ftpa"`.
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
/// HTTP. Value `"http"`.
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
/// IRC. Value `"irc "`.
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
/// NNTP. Value `"nntp"`.
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
/// POP3. Value `"pop3"`.
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
/// SMTP. Value `"smtp"`.
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
/// SOCKS. Value `"sox "`.
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
/// IMAP. Value `"imap"`.
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
/// LDAP. Value `"ldap"`.
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
/// AppleTalk. Value `"atlk"`.
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
/// AFP. Value `"afp "`.
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
/// Telnet. Value `"teln"`.
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
/// SSH. Value `"ssh "`.
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
/// FTP over TLS/SSL. Value `"ftps"`.
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
/// HTTP over TLS/SSL. Value `"htps"`.
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
/// HTTP proxy. Value `"htpx"`.
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
/// HTTPS proxy. Value `"htsx"`.
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
/// FTP proxy. Value `"ftpx"`.
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
/// SMB. Value `"smb "`.
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
/// RTSP. Value `"rtsp"`.
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
/// RTSP proxy. Value `"rtsx"`.
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
/// DAAP. Value `"daap"`.
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
/// Remote Apple Events. Value `"eppc"`.
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
/// IPP. Value `"ipp "`.
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
/// NNTP over TLS/SSL. Value `"ntps"`.
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
/// LDAP over TLS/SSL. Value `"ldps"`.
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
/// Telnet over TLS/SSL. Value `"tels"`.
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
/// IMAP over TLS/SSL. Value `"imps"`.
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
/// IRC over TLS/SSL. Value `"ircs"`.
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
/// POP3 over TLS/SSL. Value `"pops"`.
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: kSecAttrAuthenticationType values

/// Windows NT LAN Manager. Value `"ntlm"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
/// Microsoft Network default. Value `"msna"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
/// Distributed Password authentication. Value `"dpaa"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
/// Remote Password authentication. Value `"rpaa"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
/// HTTP Basic authentication. Value `"http"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
/// HTTP Digest Access authentication. Value `"httd"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
/// HTML form based authentication. Value `"form"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
/// The default authentication type. Value `"dflt"`.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: kSecAttrKeyClass and kSecAttrKeyType values

/// A public key. Value `"0"`.
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
/// A private key. Value `"1"`.
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
/// A symmetric key. Value `"2"`.
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"
/// RSA. Value `"42"`.
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
/// Elliptic curve (legacy name of kSecAttrKeyTypeECSECPrimeRandom). Value `"73"`.
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"
/// Elliptic curve on a NIST prime curve. Value `"73"`.
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"

// MARK: Search keys (kSecMatch…)

/// Certificates matching a SecPolicy (not implemented: errSecUnimplemented). Value `"m_Policy"`.
nonisolated(unsafe) public let kSecMatchPolicy: CFString = "m_Policy"
/// Search only these items (macOS only; ignored by CopyMatching as on iOS). Value `"m_ItemList"`.
nonisolated(unsafe) public let kSecMatchItemList: CFString = "m_ItemList"
/// Keychains to search (macOS only; ignored). Value `"m_SearchList"`.
nonisolated(unsafe) public let kSecMatchSearchList: CFString = "m_SearchList"
/// Certificates issued by these issuers (not implemented: errSecUnimplemented). Value `"m_Issuers"`.
nonisolated(unsafe) public let kSecMatchIssuers: CFString = "m_Issuers"
/// Certificates with this e-mail address (certificates: not implemented). Value `"m_EmailAddressIfPresent"`.
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = "m_EmailAddressIfPresent"
/// Certificates whose subject contains this string (certificates: not implemented). Value `"m_SubjectContains"`.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
/// Internet passwords of a host or its subdomains (not implemented: errSecUnimplemented). Value `"m_HostOrSubdomainOfHost"`.
nonisolated(unsafe) public let kSecMatchHostOrSubdomainOfHost: CFString = "m_HostOrSubdomainOfHost"
/// Compare string attributes ignoring case (Unicode case folding), except kSecAttrAccessGroup, which is always compared byte for byte. Works in SecItemCopyMatching (unlike iOS, where it is ignored). Value `"m_CaseInsensitive"`.
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// Only trusted certificates (certificates: not implemented). Value `"m_TrustedOnly"`.
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = "m_TrustedOnly"
/// Certificates valid on this date (certificates: not implemented). Value `"m_ValidOnDate"`.
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"
/// How many items to return: kSecMatchLimitOne (the default), kSecMatchLimitAll, or a CFNumber. Value `"m_Limit"`.
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// Return a single item (not an array). Value `"m_LimitOne"`.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Return every match, as an array. Value `"m_LimitAll"`.
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"

// MARK: Return type keys (kSecReturn…); values must be booleans

/// Return the secret data (CFData). Allowed with kSecMatchLimitAll. Value `"r_Data"`.
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
/// Return the attributes (CFDictionary with 4-character keys). Value `"r_Attributes"`.
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
/// Return a reference object. Passwords have none, so nothing is returned for them. Value `"r_Ref"`.
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
/// Return a persistent reference (CFData: class code + 16-byte item UUID). Value `"r_PersistentRef"`.
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: Value keys (kSecValue…)

/// The secret data (CFData; a string is stored as its UTF-8 bytes). Ignored as a filter in queries. Value `"v_Data"`.
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
/// A reference object (certificates, keys, identities only; not supported here: errSecParam). Value `"v_Ref"`.
nonisolated(unsafe) public let kSecValueRef: CFString = "v_Ref"
/// A persistent reference naming exactly one item (queries only; errSecParam in SecItemAdd). Value `"v_PersistentRef"`.
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = "v_PersistentRef"

// MARK: Other keys (kSecUse…)

/// Deprecated; errSecParam in every call. Value `"u_ItemList"`.
nonisolated(unsafe) public let kSecUseItemList: CFString = "u_ItemList"
/// Tombstone handling of synchronizable items (accepted and ignored). Value `"u_Tomb"`.
nonisolated(unsafe) public let kSecUseTombstones: CFString = "u_Tomb"
/// Credential reference (accepted and ignored). Value `"u_CredRef"`.
nonisolated(unsafe) public let kSecUseCredentialReference: CFString = "u_CredRef"
/// The prompt passed to the authentication handler when an item needs user presence. Value `"u_OpPrompt"`.
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// Deprecated boolean: true fails with errSecInteractionNotAllowed instead of asking. Value `"u_NoAuthUI"`.
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"
/// Whether user presence may be asked: kSecUseAuthenticationUIAllow (default), …Fail, …Skip. Value `"u_AuthUI"`.
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
/// An LAContext (accepted and ignored). Value `"u_AuthCtx"`.
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// Use the data protection keychain (always the case here; accepted and ignored). Value `"nleg"`.
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// The system keychain (private; accepted and ignored). Value `"u_SystemKeychain"`.
nonisolated(unsafe) public let kSecUseSystemKeychain: CFString = "u_SystemKeychain"
/// The sync bubble keychain (private; accepted and ignored). Value `"u_SyncBubbleKeychain"`.
nonisolated(unsafe) public let kSecUseSyncBubbleKeychain: CFString = "u_SyncBubbleKeychain"
/// The caller's name (private; accepted and ignored). Value `"u_CallerName"`.
nonisolated(unsafe) public let kSecUseCallerName: CFString = "u_CallerName"
/// Raw token items (private; accepted and ignored). Value `"u_TokenRawItems"`.
nonisolated(unsafe) public let kSecUseTokenRawItems: CFString = "u_TokenRawItems"
/// Certificates with kSecMatchIssuers (private; accepted and ignored). Value `"u_CertWithIssuers"`.
nonisolated(unsafe) public let kSecUseCertificatesWithMatchIssuers: CFString = "u_CertWithIssuers"

// MARK: kSecUseAuthenticationUI values

/// Ask the authentication handler when an item needs user presence (the default). Value `"u_AuthUIA"`.
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
/// Fail with errSecInteractionNotAllowed instead of asking. Value `"u_AuthUIF"`.
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
/// Skip items that need user presence (SecItemCopyMatching only). Value `"u_AuthUIS"`.
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
