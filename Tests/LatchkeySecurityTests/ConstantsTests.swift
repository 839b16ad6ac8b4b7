import Foundation
import Testing
import Latchkey
import LatchkeySecurity

@Suite("Constants with Apple's values")
struct ConstantsTests {
    @Test func kSecConstants_haveApplesValues() {
        let expected: [(CFString, String)] = [
            (kSecClass, "class"), (kSecClassGenericPassword, "genp"), (kSecClassInternetPassword, "inet"),
            (kSecClassCertificate, "cert"), (kSecClassKey, "keys"), (kSecClassIdentity, "idnt"),
            (kSecAttrAccessible, "pdmn"), (kSecAttrAccessControl, "accc"), (kSecAttrAccessGroup, "agrp"),
            (kSecAttrCreationDate, "cdat"), (kSecAttrModificationDate, "mdat"), (kSecAttrDescription, "desc"),
            (kSecAttrComment, "icmt"), (kSecAttrCreator, "crtr"), (kSecAttrType, "type"), (kSecAttrLabel, "labl"),
            (kSecAttrIsInvisible, "invi"), (kSecAttrIsNegative, "nega"), (kSecAttrAccount, "acct"),
            (kSecAttrService, "svce"),
            (kSecAttrGeneric, "gena"), (kSecAttrSynchronizable, "sync"), (kSecAttrSynchronizableAny, "syna"),
            (kSecAttrSecurityDomain, "sdmn"), (kSecAttrServer, "srvr"), (kSecAttrProtocol, "ptcl"),
            (kSecAttrAuthenticationType, "atyp"), (kSecAttrPort, "port"), (kSecAttrPath, "path"),
            (kSecAttrSubject, "subj"), (kSecAttrIssuer, "issr"), (kSecAttrSerialNumber, "slnr"),
            (kSecAttrSubjectKeyID, "skid"),
            (kSecAttrPublicKeyHash, "pkhh"), (kSecAttrCertificateType, "ctyp"), (kSecAttrCertificateEncoding, "cenc"),
            (kSecAttrKeyClass, "kcls"), (kSecAttrApplicationLabel, "klbl"), (kSecAttrApplicationTag, "atag"),
            (kSecAttrKeyType, "type"), (kSecAttrKeySizeInBits, "bsiz"), (kSecAttrEffectiveKeySize, "esiz"),
            (kSecAttrIsPermanent, "perm"), (kSecAttrCanEncrypt, "encr"), (kSecAttrCanDecrypt, "decr"),
            (kSecAttrCanSign, "sign"),
            (kSecAttrCanVerify, "vrfy"), (kSecAttrCanWrap, "wrap"), (kSecAttrCanUnwrap, "unwp"),
            (kSecAttrCanDerive, "drve"),
            (kSecAttrAccessibleWhenUnlocked, "ak"), (kSecAttrAccessibleAfterFirstUnlock, "ck"),
            (kSecAttrAccessibleAlways, "dk"),
            (kSecAttrAccessibleWhenUnlockedThisDeviceOnly, "aku"),
            (kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, "cku"),
            (kSecAttrAccessibleAlwaysThisDeviceOnly, "dku"), (kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, "akpu"),
            (kSecMatchLimit, "m_Limit"), (kSecMatchLimitOne, "m_LimitOne"), (kSecMatchLimitAll, "m_LimitAll"),
            (kSecMatchCaseInsensitive, "m_CaseInsensitive"), (kSecMatchPolicy, "m_Policy"),
            (kSecMatchItemList, "m_ItemList"),
            (kSecReturnData, "r_Data"), (kSecReturnAttributes, "r_Attributes"), (kSecReturnRef, "r_Ref"),
            (kSecReturnPersistentRef, "r_PersistentRef"), (kSecValueData, "v_Data"), (kSecValueRef, "v_Ref"),
            (kSecValuePersistentRef, "v_PersistentRef"), (kSecUseOperationPrompt, "u_OpPrompt"),
            (kSecUseAuthenticationUI, "u_AuthUI"),
            (kSecUseAuthenticationUIAllow, "u_AuthUIA"), (kSecUseAuthenticationUIFail, "u_AuthUIF"),
            (kSecUseAuthenticationUISkip, "u_AuthUIS"),
            (kSecUseItemList, "u_ItemList"), (kSecUseDataProtectionKeychain, "nleg"),
            (kSecAttrAccessGroupToken, "com.apple.token"),
            (kSecAttrProtocolHTTPS, "htps"), (kSecAttrProtocolFTP, "ftp "), (kSecAttrProtocolSSH, "ssh "),
            (kSecAttrProtocolIMAPS, "imps"),
            (kSecAttrAuthenticationTypeHTMLForm, "form"), (kSecAttrAuthenticationTypeDefault, "dflt"),
            (kSecAttrAuthenticationTypeHTTPDigest, "httd"),
            (kSecAttrKeyTypeRSA, "42"), (kSecAttrKeyTypeECSECPrimeRandom, "73"), (kSecAttrKeyClassPrivate, "1")
        ]
        for (constant, value) in expected {
            #expect(constant as String == value)
        }
    }

    /// Every status of the one error table (KeychainStatus) has its errSec constant, equal.
    @Test func errSecConstants_matchTheStatusTable() {
        let constants: [String: OSStatus] = [
            "errSecSuccess": errSecSuccess, "errSecUnimplemented": errSecUnimplemented, "errSecIO": errSecIO,
            "errSecParam": errSecParam, "errSecAllocate": errSecAllocate, "errSecUserCanceled": errSecUserCanceled,
            "errSecNotAvailable": errSecNotAvailable, "errSecReadOnly": errSecReadOnly,
            "errSecAuthFailed": errSecAuthFailed,
            "errSecDuplicateItem": errSecDuplicateItem, "errSecItemNotFound": errSecItemNotFound,
            "errSecNoSuchAttr": errSecNoSuchAttr,
            "errSecNoSuchClass": errSecNoSuchClass, "errSecInteractionNotAllowed": errSecInteractionNotAllowed,
            "errSecNoAccessForItem": errSecNoAccessForItem, "errSecDuplicateKeychain": errSecDuplicateKeychain,
            "errSecDecode": errSecDecode, "errSecInternal": errSecInternal,
            "errSecMissingEntitlement": errSecMissingEntitlement
        ]
        for status in KeychainStatus.allCases {
            #expect(constants[status.name] == status.rawValue, "\(status.name)")
        }
        #expect(noErr == 0)
        #expect(errSecNoSuchKeychain == -25294)
        #expect(errSecInvalidKeychain == -25295)
        #expect(errSecRestrictedAPI == -34020)
    }

    @Test func copyErrorMessageString_describesStatuses() {
        #expect(
            SecCopyErrorMessageString(errSecItemNotFound, nil) as String?
                == "The specified item could not be found in the keychain.")
        #expect(
            SecCopyErrorMessageString(errSecDuplicateItem, nil) as String?
                == "The specified item already exists in the keychain.")
        #expect(SecCopyErrorMessageString(12345, nil) as String? == "OSStatus 12345")
    }

    @Test func coreFoundationStandIns_behaveAsOnApplePlatforms() {
        #expect(kCFBooleanTrue == true)
        #expect(kCFBooleanFalse == false)
        #expect(kCFAllocatorDefault == nil)
        let dict: [String: AnyObject] = [
            kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: kCFBooleanTrue
        ]
        let cf = dict as CFDictionary
        #expect(cf.count == 2)
    }

    @Test func accessControlFlags_haveApplesRawValues() {
        #expect(SecAccessControlCreateFlags.userPresence.rawValue == 1)
        #expect(SecAccessControlCreateFlags.biometryAny.rawValue == 2)
        #expect(SecAccessControlCreateFlags.biometryCurrentSet.rawValue == 8)
        #expect(SecAccessControlCreateFlags.devicePasscode.rawValue == 16)
        #expect(SecAccessControlCreateFlags.or.rawValue == 1 << 14)
        #expect(SecAccessControlCreateFlags.privateKeyUsage.rawValue == 1 << 30)
        let ac = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlocked, [.biometryAny, .or, .devicePasscode], nil)
        #expect(ac?.requiresUserPresence == true)
        #expect(
            SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .privateKeyUsage, nil)?
                .requiresUserPresence == false)
    }
}
