import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `--class`: the stored item classes by Apple's kSecClass value.
enum ClassArgument: String, ExpressibleByArgument, CaseIterable {
    case genp, inet, cert, keys

    var itemClass: ItemClass { ItemClass(rawValue: rawValue)! }

    /// Listed under `--help-all` only (four lines `--help` has no room for).
    static var allValueDescriptions: [String: String] {
        guard CommandLineForms.showsEverything else { return [:] }
        return [
            "genp": "generic password", "inet": "internet password", "cert": "certificate (DER)",
            "keys": "cryptographic key"
        ]
    }
}

/// `--accessible`: a pdmn code (ak … akpu) or a long name (WhenUnlocked, …), with or without
/// the `kSecAttrAccessible` prefix.
struct AccessibleArgument: ExpressibleByArgument {
    var protection: ProtectionClass

    init?(argument: String) {
        var name = argument
        if name.hasPrefix("kSecAttrAccessible") { name.removeFirst("kSecAttrAccessible".count) }
        guard let pc = ProtectionClass(code: name) else { return nil }
        protection = pc
    }

    static var allValueStrings: [String] { ProtectionClass.allCases.map(\.code) }
    static var defaultCompletionKind: CompletionKind {
        .list(allValueStrings + ProtectionClass.allCases.map(\.longName))
    }
}

/// `--synchronizable yes|no|any` (kSecAttrSynchronizable; any = kSecAttrSynchronizableAny).
enum SynchronizableArgument: String, ExpressibleByArgument, CaseIterable {
    case yes, no, any

    /// The `sync` an item is given: 1 or 0; nil for `any`, which only a query can mean.
    var storedValue: AttributeValue? {
        switch self {
        case .yes: return .integer(1)
        case .no: return .integer(0)
        case .any: return nil
        }
    }

    var filter: SyncFilter {
        switch self {
        case .yes: return .synchronizable
        case .no: return .notSynchronizable
        case .any: return .any
        }
    }
}
