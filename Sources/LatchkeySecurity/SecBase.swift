import Foundation
import Latchkey

// Apple's OSStatus result codes of the Security framework (base/SecBase.h, SecBasePriv.h), with
// their values. Latchkey returns the subset in `KeychainStatus` (reference §4.1); the rest exist
// so that code comparing against them compiles.

/// No error (MacTypes.h). Same as errSecSuccess.
public let noErr: OSStatus = 0
/// No error. (0)
public let errSecSuccess: OSStatus = 0
/// Function or operation not implemented. (-4)
public let errSecUnimplemented: OSStatus = -4
/// The disk is full. (-34)
public let errSecDiskFull: OSStatus = -34
/// I/O error. (-36)
public let errSecIO: OSStatus = -36
/// The file is already open with write permission. (-49)
public let errSecOpWr: OSStatus = -49
/// One or more parameters passed to a function were not valid. (-50)
public let errSecParam: OSStatus = -50
/// Write permissions error. (-61)
public let errSecWrPerm: OSStatus = -61
/// Failed to allocate memory. (-108)
public let errSecAllocate: OSStatus = -108
/// User canceled the operation. (-128)
public let errSecUserCanceled: OSStatus = -128
/// Bad parameter or invalid state for operation. (-909)
public let errSecBadReq: OSStatus = -909
/// An internal component failed. (-2070)
public let errSecInternalComponent: OSStatus = -2070
/// An unknown Core Foundation error occurred. (-4960)
public let errSecCoreFoundationUnknown: OSStatus = -4960
/// No keychain is available. (-25291)
public let errSecNotAvailable: OSStatus = -25291
/// Read-only error. (-25292)
public let errSecReadOnly: OSStatus = -25292
/// The user name or passphrase you entered is not correct. (-25293)
public let errSecAuthFailed: OSStatus = -25293
/// The specified keychain could not be found. (-25294)
public let errSecNoSuchKeychain: OSStatus = -25294
/// The specified keychain is not a valid keychain file. (-25295)
public let errSecInvalidKeychain: OSStatus = -25295
/// A keychain with the same name already exists. (-25296)
public let errSecDuplicateKeychain: OSStatus = -25296
/// The specified callback function is already installed. (-25297)
public let errSecDuplicateCallback: OSStatus = -25297
/// The specified callback function is not valid. (-25298)
public let errSecInvalidCallback: OSStatus = -25298
/// The specified item already exists in the keychain. (-25299)
public let errSecDuplicateItem: OSStatus = -25299
/// The specified item could not be found in the keychain. (-25300)
public let errSecItemNotFound: OSStatus = -25300
/// There is not enough memory available to use the specified item. (-25301)
public let errSecBufferTooSmall: OSStatus = -25301
/// This item contains information which is too large or in a format that cannot be displayed. (-25302)
public let errSecDataTooLarge: OSStatus = -25302
/// The specified attribute does not exist. (-25303)
public let errSecNoSuchAttr: OSStatus = -25303
/// The specified item is no longer valid. It may have been deleted from the keychain. (-25304)
public let errSecInvalidItemRef: OSStatus = -25304
/// Unable to search the current keychain. (-25305)
public let errSecInvalidSearchRef: OSStatus = -25305
/// The specified item does not appear to be a valid keychain item. (-25306)
public let errSecNoSuchClass: OSStatus = -25306
/// A default keychain could not be found. (-25307)
public let errSecNoDefaultKeychain: OSStatus = -25307
/// User interaction is not allowed. (-25308)
public let errSecInteractionNotAllowed: OSStatus = -25308
/// The specified attribute could not be modified. (-25309)
public let errSecReadOnlyAttr: OSStatus = -25309
/// This keychain was created by a different version of the system software and cannot be opened. (-25310)
public let errSecWrongSecVersion: OSStatus = -25310
/// This item specifies a key size which is too large or too small. (-25311)
public let errSecKeySizeNotAllowed: OSStatus = -25311
/// A required component (data storage module) could not be loaded. (-25312)
public let errSecNoStorageModule: OSStatus = -25312
/// A required component (certificate module) could not be loaded. (-25313)
public let errSecNoCertificateModule: OSStatus = -25313
/// A required component (policy module) could not be loaded. (-25314)
public let errSecNoPolicyModule: OSStatus = -25314
/// User interaction is required, but is currently not allowed. (-25315)
public let errSecInteractionRequired: OSStatus = -25315
/// The contents of this item cannot be retrieved. (-25316)
public let errSecDataNotAvailable: OSStatus = -25316
/// The contents of this item cannot be modified. (-25317)
public let errSecDataNotModifiable: OSStatus = -25317
/// One or more certificates required to validate this certificate cannot be found. (-25318)
public let errSecCreateChainFailed: OSStatus = -25318
/// The specified preferences domain is not valid. (-25319)
public let errSecInvalidPrefsDomain: OSStatus = -25319
/// In dark wake, no UI possible. (-25320)
public let errSecInDarkWake: OSStatus = -25320
/// The specified access control list is not in standard (simple) form. (-25240)
public let errSecACLNotSimple: OSStatus = -25240
/// The specified policy cannot be found. (-25241)
public let errSecPolicyNotFound: OSStatus = -25241
/// The specified trust setting is invalid. (-25242)
public let errSecInvalidTrustSetting: OSStatus = -25242
/// The specified item has no access control. (-25243)
public let errSecNoAccessForItem: OSStatus = -25243
/// Invalid attempt to change the owner of this item. (-25244)
public let errSecInvalidOwnerEdit: OSStatus = -25244
/// No trust results are available. (-25245)
public let errSecTrustNotAvailable: OSStatus = -25245
/// Import/Export format unsupported. (-25256)
public let errSecUnsupportedFormat: OSStatus = -25256
/// Unknown format in import. (-25257)
public let errSecUnknownFormat: OSStatus = -25257
/// Unable to decode the provided data. (-26275)
public let errSecDecode: OSStatus = -26275
/// An internal error occurred (private constant). (-26276)
public let errSecInternal: OSStatus = -26276
/// A required entitlement isn't present. (-34018)
public let errSecMissingEntitlement: OSStatus = -34018
/// The keychain needs an upgrade that cannot run now; retry later (private constant). (-34019)
public let errSecUpgradePending: OSStatus = -34019
/// The client is restricted and is not permitted to perform this operation. (-34020)
public let errSecRestrictedAPI: OSStatus = -34020

/// The message Apple's `SecCopyErrorMessageString` gives for each known status.
let secErrorMessages: [OSStatus: String] = [
    0: "No error.",
    -4: "Function or operation not implemented.",
    -34: "The disk is full.",
    -36: "I/O error.",
    -49: "The file is already open with write permission.",
    -50: "One or more parameters passed to a function were not valid.",
    -61: "Write permissions error.",
    -108: "Failed to allocate memory.",
    -128: "User canceled the operation.",
    -909: "Bad parameter or invalid state for operation.",
    -2070: "An internal component failed.",
    -4960: "An unknown Core Foundation error occurred.",
    -25291: "No keychain is available.",
    -25292: "Read-only error.",
    -25293: "The user name or passphrase you entered is not correct.",
    -25294: "The specified keychain could not be found.",
    -25295: "The specified keychain is not a valid keychain file.",
    -25296: "A keychain with the same name already exists.",
    -25297: "The specified callback function is already installed.",
    -25298: "The specified callback function is not valid.",
    -25299: "The specified item already exists in the keychain.",
    -25300: "The specified item could not be found in the keychain.",
    -25301: "There is not enough memory available to use the specified item.",
    -25302: "This item contains information which is too large or in a format that cannot be displayed.",
    -25303: "The specified attribute does not exist.",
    -25304: "The specified item is no longer valid. It may have been deleted from the keychain.",
    -25305: "Unable to search the current keychain.",
    -25306: "The specified item does not appear to be a valid keychain item.",
    -25307: "A default keychain could not be found.",
    -25308: "User interaction is not allowed.",
    -25309: "The specified attribute could not be modified.",
    -25310: "This keychain was created by a different version of the system software and cannot be opened.",
    -25311: "This item specifies a key size which is too large or too small.",
    -25312: "A required component (data storage module) could not be loaded.",
    -25313: "A required component (certificate module) could not be loaded.",
    -25314: "A required component (policy module) could not be loaded.",
    -25315: "User interaction is required, but is currently not allowed.",
    -25316: "The contents of this item cannot be retrieved.",
    -25317: "The contents of this item cannot be modified.",
    -25318: "One or more certificates required to validate this certificate cannot be found.",
    -25319: "The specified preferences domain is not valid.",
    -25320: "In dark wake, no UI possible.",
    -25240: "The specified access control list is not in standard (simple) form.",
    -25241: "The specified policy cannot be found.",
    -25242: "The specified trust setting is invalid.",
    -25243: "The specified item has no access control.",
    -25244: "Invalid attempt to change the owner of this item.",
    -25245: "No trust results are available.",
    -25256: "Import/Export format unsupported.",
    -25257: "Unknown format in import.",
    -26275: "Unable to decode the provided data.",
    -26276: "An internal error occurred (private constant).",
    -34018: "A required entitlement isn't present.",
    -34019: "The keychain needs an upgrade that cannot run now; retry later (private constant).",
    -34020: "The client is restricted and is not permitted to perform this operation."
]

/// A human-readable message for an OSStatus, as Apple's `SecCopyErrorMessageString`.
///
/// ```swift
/// let status = SecItemCopyMatching(query as CFDictionary, &result)
/// print(SecCopyErrorMessageString(status, nil) as String? ?? "\(status)")
/// ```
/// - Parameters:
///   - status: the result code.
///   - reserved: pass nil.
/// - Returns: the message, or `OSStatus <n>` for a code this module does not know.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    let text = secErrorMessages[status] ?? "OSStatus \(status)"
    return NSString(string: text)
}
