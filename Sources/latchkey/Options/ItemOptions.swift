import ArgumentParser
import Latchkey
import LatchkeyFormat

/// A group of attribute options: each option with its text, when given.
protocol AttributeGroup {
    var given: [(AttributeOption, String?)] { get }
}

extension AttributeOption {
    static let classNames: [ItemClass: String] = [
        .genericPassword: "genp (generic passwords)", .internetPassword: "inet (internet passwords)",
        .certificate: "cert (certificates)", .key: "keys (keys)",
    ]

    /// Parses `text` as this attribute of class `c`, given as `--prefix+flag`.
    /// - Throws: `UsageError` when the class has no such attribute or the value does not parse.
    func value(_ text: String, prefix: String = "", in c: ItemClass, command: String) throws -> AttributeValue {
        let option = "--" + prefix + flag
        guard classes.contains(c) else {
            let owners = ItemClass.allCases.filter { classes.contains($0) }.map(\.rawValue).joined(separator: " or ")
            throw UsageError("\(option) is not an attribute of class \(AttributeOption.classNames[c]!); it belongs to --class \(owners)",
                             command: command)
        }
        return try value(text, option: option, command: command)
    }
}

/// Collects the given options of several groups as attributes of class `c`.
func parsedAttributes(_ groups: [AttributeGroup], prefix: String = "", in c: ItemClass, command: String,
                      forAdd: Bool = false) throws -> [String: AttributeValue] {
    var out: [String: AttributeValue] = [:]
    var givenBy: [String: AttributeOption] = [:]
    for group in groups {
        for case let (option, text?) in group.given {
            if forAdd, option.derived {
                throw UsageError("--\(option.flag) is derived from the certificate itself; it can select certificates in find, update and delete, but add sets it from the data",
                                 command: command)
            }
            let value = try option.value(text, prefix: prefix, in: c, command: command)
            // --account and --account-hex: one attribute, two spellings.
            if let other = givenBy[option.code] {
                throw UsageError("--\(prefix)\(other.flag) and --\(prefix)\(option.flag) both give \(option.code) (\(option.constant)); give one of them",
                                 command: command)
            }
            givenBy[option.code] = option
            out[option.code] = value
        }
    }
    return out
}

/// ITEM and QUERY options (docs/CLI.md): the class, the protection class and every attribute
/// of each class (ItemSchema), grouped by class in help.
///
/// Commands declare the six groups themselves (as AddCommand does) instead of one nested
/// `@OptionGroup` of this type: swift-argument-parser's debug-build checks walk every nesting
/// level again, which made each run of a debug binary twice as slow.
struct ItemOptions {
    var common: CommonAttributes
    var password: PasswordAttributes
    var generic: GenericPasswordAttributes
    var internet: InternetPasswordAttributes
    var certificate: CertificateAttributes
    var key: KeyAttributes

    var itemClass: ItemClass { common.itemClass.itemClass }
    var protection: ProtectionClass? { common.accessible?.protection }

    private var groups: [AttributeGroup] { [common, password, generic, internet, certificate, key] }

    /// The attributes of a new item: the given ones, and `sync` from --synchronizable.
    /// - Throws: `UsageError` for an option of another class, a value that does not parse, an
    ///   attribute derived from a certificate, or `--synchronizable any`.
    func newItemAttributes(command: String) throws -> [String: AttributeValue] {
        var attributes = try parsedAttributes(groups, in: itemClass, command: command, forAdd: true)
        switch common.synchronizable {
        case .yes?: attributes["sync"] = .integer(1)
        case .no?: attributes["sync"] = .integer(0)
        case .any?: throw UsageError("--synchronizable any selects items in queries; an item is added with yes or no", command: command)
        case nil: break
        }
        return attributes
    }

    /// The query these options describe: every given attribute must match.
    /// - Throws: `UsageError` for an option of another class or a value that does not parse.
    func query(command: String, caseInsensitive: Bool = false) throws -> Query {
        Query(itemClass, try parsedAttributes(groups, in: itemClass, command: command), protection: protection,
              caseInsensitive: caseInsensitive, synchronizable: common.synchronizable?.filter ?? .notSynchronizable)
    }
}

// MARK: - The option groups (one property per attribute option of AttributeOption.all)

/// ITEM/QUERY options: Class and common attributes.
struct CommonAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong("class"), help: ArgumentHelp(
        CommandLineForms.showsEverything ? "Item class (kSecClass)." : "Item class (kSecClass); every attribute option of each: --help-all.",
        valueName: "class"))
    var itemClass: ClassArgument = .genp

    @Option(help: ArgumentHelp(
        CommandLineForms.showsEverything
            ? "Protection class (kSecAttrAccessible, pdmn): ak, ck, dk, aku, cku, dku, akpu, or a long name such as WhenUnlocked or AfterFirstUnlockThisDeviceOnly."
            : "Protection class (kSecAttrAccessible, pdmn), or a long name such as WhenUnlocked.",
        discussion: CommandLineForms.details("For add the default is ak (WhenUnlocked; certificates dk); in a query it selects items of that class only."),
        valueName: "class"))
    var accessible: AccessibleArgument?

    @Option(help: ArgumentHelp(
        "kSecAttrSynchronizable (sync): yes or no; in a query also any.",
        discussion: "Items are added with no (sync = 0), and queries see only those unless given yes or any. Nothing is ever synchronised.",
        valueName: "yes|no|any", visibility: CommandLineForms.secondary))
    var synchronizable: SynchronizableArgument?

    @Option(name: .customLong(AttributeOption.label.flag), help: AttributeOption.label.help)
    var label: String?
    @Option(name: .customLong(AttributeOption.labelBytes.flag), help: AttributeOption.labelBytes.help)
    var labelHex: String?
    @Option(name: .customLong(AttributeOption.accessGroup.flag), help: AttributeOption.accessGroup.help)
    var accessGroup: String?
    @Option(name: .customLong(AttributeOption.alias.flag), help: AttributeOption.alias.help)
    var alias: String?
    @Option(name: .customLong(AttributeOption.aliasBytes.flag), help: AttributeOption.aliasBytes.help)
    var aliasHex: String?
    @Option(name: .customLong(AttributeOption.syncViewHint.flag), help: AttributeOption.syncViewHint.help)
    var syncViewHint: String?
    @Option(name: .customLong(AttributeOption.tokenID.flag), help: AttributeOption.tokenID.help)
    var tokenID: String?

    var given: [(AttributeOption, String?)] {
        [
            (.label, label), (.accessGroup, accessGroup), (.alias, alias), (.syncViewHint, syncViewHint),
            (.tokenID, tokenID),
            (.labelBytes, labelHex), (.aliasBytes, aliasHex),
        ]
    }
}

/// ITEM/QUERY options: Passwords.
struct PasswordAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong(AttributeOption.account.flag), help: AttributeOption.account.help)
    var account: String?
    @Option(name: .customLong(AttributeOption.accountBytes.flag), help: AttributeOption.accountBytes.help)
    var accountHex: String?
    @Option(name: .customLong(AttributeOption.description.flag), help: AttributeOption.description.help)
    var description: String?
    @Option(name: .customLong(AttributeOption.descriptionBytes.flag), help: AttributeOption.descriptionBytes.help)
    var descriptionHex: String?
    @Option(name: .customLong(AttributeOption.comment.flag), help: AttributeOption.comment.help)
    var comment: String?
    @Option(name: .customLong(AttributeOption.commentBytes.flag), help: AttributeOption.commentBytes.help)
    var commentHex: String?
    @Option(name: .customLong(AttributeOption.creator.flag), help: AttributeOption.creator.help)
    var creator: String?
    @Option(name: .customLong(AttributeOption.itemType.flag), help: AttributeOption.itemType.help)
    var itemType: String?
    @Option(name: .customLong(AttributeOption.isInvisible.flag), help: AttributeOption.isInvisible.help)
    var isInvisible: String?
    @Option(name: .customLong(AttributeOption.isNegative.flag), help: AttributeOption.isNegative.help)
    var isNegative: String?
    @Option(name: .customLong(AttributeOption.hasCustomIcon.flag), help: AttributeOption.hasCustomIcon.help)
    var hasCustomIcon: String?
    @Option(name: .customLong(AttributeOption.protected.flag), help: AttributeOption.protected.help)
    var protected: String?
    @Option(name: .customLong(AttributeOption.protectedBytes.flag), help: AttributeOption.protectedBytes.help)
    var protectedHex: String?
    @Option(name: .customLong(AttributeOption.scriptCode.flag), help: AttributeOption.scriptCode.help)
    var scriptCode: String?

    var given: [(AttributeOption, String?)] {
        [
            (.account, account), (.description, description), (.comment, comment), (.creator, creator),
            (.itemType, itemType), (.isInvisible, isInvisible), (.isNegative, isNegative), (.hasCustomIcon, hasCustomIcon),
            (.protected, protected), (.scriptCode, scriptCode),
            (.accountBytes, accountHex), (.descriptionBytes, descriptionHex), (.commentBytes, commentHex), (.protectedBytes, protectedHex),
        ]
    }
}

/// ITEM/QUERY options: Generic passwords.
struct GenericPasswordAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong(AttributeOption.service.flag), help: AttributeOption.service.help)
    var service: String?
    @Option(name: .customLong(AttributeOption.serviceBytes.flag), help: AttributeOption.serviceBytes.help)
    var serviceHex: String?
    @Option(name: .customLong(AttributeOption.generic.flag), help: AttributeOption.generic.help)
    var generic: String?
    @Option(name: .customLong(AttributeOption.genericBytes.flag), help: AttributeOption.genericBytes.help)
    var genericHex: String?

    var given: [(AttributeOption, String?)] {
        [(.service, service), (.generic, generic), (.serviceBytes, serviceHex), (.genericBytes, genericHex)]
    }
}

/// ITEM/QUERY options: Internet passwords.
struct InternetPasswordAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong(AttributeOption.securityDomain.flag), help: AttributeOption.securityDomain.help)
    var securityDomain: String?
    @Option(name: .customLong(AttributeOption.securityDomainBytes.flag), help: AttributeOption.securityDomainBytes.help)
    var securityDomainHex: String?
    @Option(name: .customLong(AttributeOption.server.flag), help: AttributeOption.server.help)
    var server: String?
    @Option(name: .customLong(AttributeOption.serverBytes.flag), help: AttributeOption.serverBytes.help)
    var serverHex: String?
    @Option(name: .customLong(AttributeOption.`protocol`.flag), help: AttributeOption.`protocol`.help)
    var protocolValue: String?
    @Option(name: .customLong(AttributeOption.authenticationType.flag), help: AttributeOption.authenticationType.help)
    var authenticationType: String?
    @Option(name: .customLong(AttributeOption.authenticationTypeBytes.flag), help: AttributeOption.authenticationTypeBytes.help)
    var authenticationTypeHex: String?
    @Option(name: .customLong(AttributeOption.port.flag), help: AttributeOption.port.help)
    var port: String?
    @Option(name: .customLong(AttributeOption.path.flag), help: AttributeOption.path.help)
    var path: String?
    @Option(name: .customLong(AttributeOption.pathBytes.flag), help: AttributeOption.pathBytes.help)
    var pathHex: String?

    var given: [(AttributeOption, String?)] {
        [
            (.securityDomain, securityDomain), (.server, server), (.`protocol`, protocolValue), (.authenticationType, authenticationType),
            (.port, port), (.path, path),
            (.securityDomainBytes, securityDomainHex), (.serverBytes, serverHex), (.authenticationTypeBytes, authenticationTypeHex), (.pathBytes, pathHex),
        ]
    }
}

/// ITEM/QUERY options: Certificates.
struct CertificateAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong(AttributeOption.certificateType.flag), help: AttributeOption.certificateType.help)
    var certificateType: String?
    @Option(name: .customLong(AttributeOption.certificateEncoding.flag), help: AttributeOption.certificateEncoding.help)
    var certificateEncoding: String?
    @Option(name: .customLong(AttributeOption.subject.flag), help: AttributeOption.subject.help)
    var subject: String?
    @Option(name: .customLong(AttributeOption.issuer.flag), help: AttributeOption.issuer.help)
    var issuer: String?
    @Option(name: .customLong(AttributeOption.serialNumber.flag), help: AttributeOption.serialNumber.help)
    var serialNumber: String?
    @Option(name: .customLong(AttributeOption.subjectKeyID.flag), help: AttributeOption.subjectKeyID.help)
    var subjectKeyID: String?
    @Option(name: .customLong(AttributeOption.publicKeyHash.flag), help: AttributeOption.publicKeyHash.help)
    var publicKeyHash: String?

    var given: [(AttributeOption, String?)] {
        [
            (.certificateType, certificateType), (.certificateEncoding, certificateEncoding), (.subject, subject), (.issuer, issuer),
            (.serialNumber, serialNumber), (.subjectKeyID, subjectKeyID), (.publicKeyHash, publicKeyHash),
        ]
    }
}

/// ITEM/QUERY options: Keys.
struct KeyAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong(AttributeOption.keyClass.flag), help: AttributeOption.keyClass.help)
    var keyClass: String?
    @Option(name: .customLong(AttributeOption.applicationLabel.flag), help: AttributeOption.applicationLabel.help)
    var applicationLabel: String?
    @Option(name: .customLong(AttributeOption.applicationTag.flag), help: AttributeOption.applicationTag.help)
    var applicationTag: String?
    @Option(name: .customLong(AttributeOption.applicationTagBytes.flag), help: AttributeOption.applicationTagBytes.help)
    var applicationTagHex: String?
    @Option(name: .customLong(AttributeOption.keyType.flag), help: AttributeOption.keyType.help)
    var keyType: String?
    @Option(name: .customLong(AttributeOption.keySizeInBits.flag), help: AttributeOption.keySizeInBits.help)
    var keySizeInBits: String?
    @Option(name: .customLong(AttributeOption.effectiveKeySize.flag), help: AttributeOption.effectiveKeySize.help)
    var effectiveKeySize: String?
    @Option(name: .customLong(AttributeOption.startDate.flag), help: AttributeOption.startDate.help)
    var startDate: String?
    @Option(name: .customLong(AttributeOption.endDate.flag), help: AttributeOption.endDate.help)
    var endDate: String?
    @Option(name: .customLong(AttributeOption.isPermanent.flag), help: AttributeOption.isPermanent.help)
    var isPermanent: String?
    @Option(name: .customLong(AttributeOption.isPrivate.flag), help: AttributeOption.isPrivate.help)
    var isPrivate: String?
    @Option(name: .customLong(AttributeOption.isModifiable.flag), help: AttributeOption.isModifiable.help)
    var isModifiable: String?
    @Option(name: .customLong(AttributeOption.isSensitive.flag), help: AttributeOption.isSensitive.help)
    var isSensitive: String?
    @Option(name: .customLong(AttributeOption.wasAlwaysSensitive.flag), help: AttributeOption.wasAlwaysSensitive.help)
    var wasAlwaysSensitive: String?
    @Option(name: .customLong(AttributeOption.isExtractable.flag), help: AttributeOption.isExtractable.help)
    var isExtractable: String?
    @Option(name: .customLong(AttributeOption.wasNeverExtractable.flag), help: AttributeOption.wasNeverExtractable.help)
    var wasNeverExtractable: String?
    @Option(name: .customLong(AttributeOption.canEncrypt.flag), help: AttributeOption.canEncrypt.help)
    var canEncrypt: String?
    @Option(name: .customLong(AttributeOption.canDecrypt.flag), help: AttributeOption.canDecrypt.help)
    var canDecrypt: String?
    @Option(name: .customLong(AttributeOption.canDerive.flag), help: AttributeOption.canDerive.help)
    var canDerive: String?
    @Option(name: .customLong(AttributeOption.canSign.flag), help: AttributeOption.canSign.help)
    var canSign: String?
    @Option(name: .customLong(AttributeOption.canVerify.flag), help: AttributeOption.canVerify.help)
    var canVerify: String?
    @Option(name: .customLong(AttributeOption.canWrap.flag), help: AttributeOption.canWrap.help)
    var canWrap: String?
    @Option(name: .customLong(AttributeOption.canUnwrap.flag), help: AttributeOption.canUnwrap.help)
    var canUnwrap: String?
    @Option(name: .customLong(AttributeOption.canSignRecover.flag), help: AttributeOption.canSignRecover.help)
    var canSignRecover: String?
    @Option(name: .customLong(AttributeOption.canVerifyRecover.flag), help: AttributeOption.canVerifyRecover.help)
    var canVerifyRecover: String?

    var given: [(AttributeOption, String?)] {
        [
            (.keyClass, keyClass), (.applicationLabel, applicationLabel), (.applicationTag, applicationTag), (.keyType, keyType),
            (.keySizeInBits, keySizeInBits), (.effectiveKeySize, effectiveKeySize), (.startDate, startDate), (.endDate, endDate),
            (.isPermanent, isPermanent), (.isPrivate, isPrivate), (.isModifiable, isModifiable), (.isSensitive, isSensitive),
            (.wasAlwaysSensitive, wasAlwaysSensitive), (.isExtractable, isExtractable), (.wasNeverExtractable, wasNeverExtractable), (.canEncrypt, canEncrypt),
            (.canDecrypt, canDecrypt), (.canDerive, canDerive), (.canSign, canSign), (.canVerify, canVerify),
            (.canWrap, canWrap), (.canUnwrap, canUnwrap), (.canSignRecover, canSignRecover), (.canVerifyRecover, canVerifyRecover),
            (.applicationTagBytes, applicationTagHex),
        ]
    }
}
