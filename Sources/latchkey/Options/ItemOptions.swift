import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `--class`: the stored item classes by Apple's kSecClass value.
enum ClassArgument: String, ExpressibleByArgument, CaseIterable {
    case genp, inet, cert, keys

    var itemClass: ItemClass { ItemClass(rawValue: rawValue)! }
}

/// `--accessible`: a pdmn code (ak … akpu) or a long name (WhenUnlocked, …), with or without
/// the `kSecAttrAccessible` prefix.
struct AccessibleArgument: ExpressibleByArgument {
    var protection: ProtectionClass

    init?(argument: String) {
        guard let pc = ProtectionClass(code: argument) else { return nil }
        protection = pc
    }

    static var allValueStrings: [String] { ProtectionClass.allCases.map(\.code) }
    static var defaultCompletionKind: CompletionKind { .list(allValueStrings + ProtectionClass.allCases.map(\.longName)) }
}

/// How an option's text becomes an attribute value. Apple's Blob attributes keep a string as a
/// string (reference §1.2); Number attributes take a decimal string as a number and keep any
/// other string (e.g. kSecAttrProtocolHTTPS = "htps") as a string.
enum AttributeKind {
    case blob
    case number

    func value(_ text: String) -> AttributeValue {
        switch self {
        case .blob: return .string(text)
        case .number: return Int64(text).map(AttributeValue.integer) ?? .string(text)
        }
    }
}

/// The attribute options, in one table shared by ITEM/QUERY options and `update --set-…`.
enum AttributeOption: CaseIterable {
    case account, service, accessGroup, label, description, comment, generic
    case server, `protocol`, port, path, securityDomain, authenticationType

    /// Apple's 4-character attribute code.
    var code: String {
        switch self {
        case .account: return "acct"
        case .service: return "svce"
        case .accessGroup: return "agrp"
        case .label: return "labl"
        case .description: return "desc"
        case .comment: return "icmt"
        case .generic: return "gena"
        case .server: return "srvr"
        case .protocol: return "ptcl"
        case .port: return "port"
        case .path: return "path"
        case .securityDomain: return "sdmn"
        case .authenticationType: return "atyp"
        }
    }

    var kind: AttributeKind { self == .protocol || self == .port ? .number : .blob }
}

/// ITEM and QUERY options (shared/CLI.md): the class, the attributes and the protection class.
struct ItemOptions: ParsableArguments {
    @Option(name: .customLong("class"), help: "Item class: genp (generic password), inet (internet password), cert or keys.")
    var itemClass: ClassArgument = .genp

    @Option(help: ArgumentHelp("Account name (acct).", valueName: "name"))
    var account: String?

    @Option(help: ArgumentHelp("Service name (svce), genp only.", valueName: "name"))
    var service: String?

    @Option(name: .customLong("access-group"), help: ArgumentHelp(
        "Access group (agrp). For add, defaults to the --app-id value; for queries, filters only when given.",
        valueName: "group"))
    var accessGroup: String?

    @Option(help: ArgumentHelp(
        "Protection class (pdmn): ak, ck, dk, aku, cku, dku, akpu, or a long name such as WhenUnlocked or AfterFirstUnlockThisDeviceOnly. Default for add: ak.",
        valueName: "class"))
    var accessible: AccessibleArgument?

    @Option(help: ArgumentHelp("User-visible label (labl).", valueName: "text"))
    var label: String?

    @Option(help: ArgumentHelp("Description, the kind of item (desc).", valueName: "text"))
    var description: String?

    @Option(help: ArgumentHelp("Comment (icmt).", valueName: "text"))
    var comment: String?

    @Option(help: ArgumentHelp("Application-defined generic attribute (gena), genp only.", valueName: "text"))
    var generic: String?

    @Option(help: ArgumentHelp("Server host name (srvr), inet only.", valueName: "host"))
    var server: String?

    @Option(name: .customLong("protocol"), help: ArgumentHelp(
        "Protocol (ptcl), inet only: a number or a 4-character code such as htps.",
        valueName: "code"))
    var protocolValue: String?

    @Option(help: ArgumentHelp("Port number (port), inet only.", valueName: "number"))
    var port: Int64?

    @Option(help: ArgumentHelp("Path on the server (path), inet only.", valueName: "path"))
    var path: String?

    @Option(name: .customLong("security-domain"), help: ArgumentHelp("Security domain or realm (sdmn), inet only.", valueName: "domain"))
    var securityDomain: String?

    @Option(name: .customLong("authentication-type"), help: ArgumentHelp(
        "Authentication type (atyp), inet only: a 4-character code such as form, http, dflt.",
        valueName: "code"))
    var authenticationType: String?

    func text(_ option: AttributeOption) -> String? {
        switch option {
        case .account: return account
        case .service: return service
        case .accessGroup: return accessGroup
        case .label: return label
        case .description: return description
        case .comment: return comment
        case .generic: return generic
        case .server: return server
        case .protocol: return protocolValue
        case .port: return port.map { String($0) }
        case .path: return path
        case .securityDomain: return securityDomain
        case .authenticationType: return authenticationType
        }
    }

    /// The attributes given on the command line, by 4-character code.
    var attributes: [String: AttributeValue] {
        var out: [String: AttributeValue] = [:]
        for option in AttributeOption.allCases {
            if let text = text(option) { out[option.code] = option.kind.value(text) }
        }
        if let port { out["port"] = .integer(port) }
        return out
    }

    var protection: ProtectionClass? { accessible?.protection }

    /// The query these options describe: every given attribute must match.
    var query: Query { Query(itemClass.itemClass, attributes, protection: protection) }
}
