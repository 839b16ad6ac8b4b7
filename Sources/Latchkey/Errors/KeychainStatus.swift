/// Apple's OSStatus values that Latchkey returns, with their names and the CLI exit codes of
/// docs/CLI.md. This is the one table mapping error ↔ OSStatus ↔ exit code.
public enum KeychainStatus: Int32, CaseIterable, Sendable {
    case success = 0
    case unimplemented = -4
    case io = -36
    case param = -50
    case allocate = -108
    case userCanceled = -128
    case notAvailable = -25291
    case readOnly = -25292
    case authFailed = -25293
    case duplicateItem = -25299
    case itemNotFound = -25300
    case noSuchAttr = -25303
    case noSuchClass = -25306
    case interactionNotAllowed = -25308
    case noAccessForItem = -25243
    case duplicateKeychain = -25296
    case decode = -26275
    case `internal` = -26276
    case missingEntitlement = -34018

    /// Apple's constant name, e.g. `errSecItemNotFound`.
    public var name: String {
        switch self {
        case .success: return "errSecSuccess"
        case .unimplemented: return "errSecUnimplemented"
        case .io: return "errSecIO"
        case .param: return "errSecParam"
        case .allocate: return "errSecAllocate"
        case .userCanceled: return "errSecUserCanceled"
        case .notAvailable: return "errSecNotAvailable"
        case .readOnly: return "errSecReadOnly"
        case .authFailed: return "errSecAuthFailed"
        case .duplicateItem: return "errSecDuplicateItem"
        case .itemNotFound: return "errSecItemNotFound"
        case .noSuchAttr: return "errSecNoSuchAttr"
        case .noSuchClass: return "errSecNoSuchClass"
        case .interactionNotAllowed: return "errSecInteractionNotAllowed"
        case .noAccessForItem: return "errSecNoAccessForItem"
        case .duplicateKeychain: return "errSecDuplicateKeychain"
        case .decode: return "errSecDecode"
        case .internal: return "errSecInternal"
        case .missingEntitlement: return "errSecMissingEntitlement"
        }
    }

    /// Exit status of the `latchkey` CLI for this status (docs/CLI.md "Errors and exit status").
    public var exitCode: Int32 {
        switch self {
        case .success: return 0
        case .itemNotFound: return 1
        case .param: return 2
        case .duplicateItem: return 3
        case .authFailed, .interactionNotAllowed, .notAvailable, .userCanceled: return 4
        case .decode: return 5
        case .noAccessForItem, .missingEntitlement: return 6
        case .unimplemented, .io, .allocate, .readOnly, .noSuchAttr, .noSuchClass, .internal, .duplicateKeychain:
            return 7
        }
    }
}
