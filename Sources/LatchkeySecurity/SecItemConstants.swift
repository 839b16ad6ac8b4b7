import Foundation
import Latchkey

// Every `kSec…` constant of Apple's Security framework that SecItem uses, with Apple's values
// from `OSX/sec/Security/SecItemConstants.c` (apple-oss-distributions/Security). They are kept
// in this one file, except the attribute keys of the attributes Latchkey stores: those are
// made from Latchkey's `AttributeSchema`, a row each, in SecItemConstants+Attributes.swift
// (`make generate`; GeneratedSourcesTests check it).
//
// Each is a `CFString` (an `NSString`), so `kSecClass as String`, `dict[kSecAttrAccount as String]`
// and `kSecAttrAccessibleWhenUnlocked` as a dictionary value work as on Apple platforms.
// `NSString` is not `Sendable` in swift-corelibs-foundation; these immutable constants are
// safe to share, hence `nonisolated(unsafe)`.

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

// MARK: Attribute keys that are not stored attributes

/// A `SecAccessControl` (protection plus constraints such as user presence). Its protection must equal kSecAttrAccessible when both are given. Value `"accc"`.
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"

// MARK: Private or legacy attribute keys Apple also declares

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
