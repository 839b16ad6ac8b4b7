import ArgumentParser
import LatchkeyFormat

/// `update`'s new values: one `--set-X` for every attribute option of ItemOptions.
struct SetOptions: ParsableArguments {
    @Option(name: .customLong("set-account"), help: ArgumentHelp("New account name (acct).", valueName: "name"))
    var account: String?

    @Option(name: .customLong("set-service"), help: ArgumentHelp("New service name (svce).", valueName: "name"))
    var service: String?

    @Option(name: .customLong("set-access-group"), help: ArgumentHelp("Move the items to this access group (agrp).", valueName: "group"))
    var accessGroup: String?

    @Option(name: .customLong("set-accessible"), help: ArgumentHelp(
        "New protection class (pdmn): ak, ck, dk, aku, cku, dku, akpu or a long name.", valueName: "class"))
    var accessible: AccessibleArgument?

    @Option(name: .customLong("set-label"), help: ArgumentHelp("New label (labl).", valueName: "text"))
    var label: String?

    @Option(name: .customLong("set-description"), help: ArgumentHelp("New description (desc).", valueName: "text"))
    var description: String?

    @Option(name: .customLong("set-comment"), help: ArgumentHelp("New comment (icmt).", valueName: "text"))
    var comment: String?

    @Option(name: .customLong("set-generic"), help: ArgumentHelp("New generic attribute (gena).", valueName: "text"))
    var generic: String?

    @Option(name: .customLong("set-server"), help: ArgumentHelp("New server (srvr).", valueName: "host"))
    var server: String?

    @Option(name: .customLong("set-protocol"), help: ArgumentHelp("New protocol (ptcl): a number or a 4-character code.", valueName: "code"))
    var protocolValue: String?

    @Option(name: .customLong("set-port"), help: ArgumentHelp("New port (port).", valueName: "number"))
    var port: Int64?

    @Option(name: .customLong("set-path"), help: ArgumentHelp("New path (path).", valueName: "path"))
    var path: String?

    @Option(name: .customLong("set-security-domain"), help: ArgumentHelp("New security domain (sdmn).", valueName: "domain"))
    var securityDomain: String?

    @Option(name: .customLong("set-authentication-type"), help: ArgumentHelp("New authentication type (atyp).", valueName: "code"))
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

    /// The new attribute values, by 4-character code.
    var attributes: [String: AttributeValue] {
        var out: [String: AttributeValue] = [:]
        for option in AttributeOption.allCases {
            if let text = text(option) { out[option.code] = option.kind.value(text) }
        }
        if let port { out["port"] = .integer(port) }
        return out
    }

    var protection: ProtectionClass? { accessible?.protection }
}
