import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `update`'s new values: a `--set-X` for every attribute that is not derived from the data.
/// UpdateCommand declares the groups itself, for the reason given at `ItemOptions`.
struct SetOptions {
    var common: SetCommonAttributes
    var password: SetPasswordAttributes
    var generic: SetGenericPasswordAttributes
    var internet: SetInternetPasswordAttributes
    var key: SetKeyAttributes

    private var groups: [AttributeGroup] { [common, password, generic, internet, key] }

    var protection: ProtectionClass? { common.accessible?.protection }

    /// Whether no new value was given.
    var isEmpty: Bool {
        protection == nil && common.synchronizable == nil && groups.allSatisfy { $0.given.allSatisfy { $0.1 == nil } }
    }

    /// The new attribute values for items of class `c`.
    /// - Throws: `UsageError` for an option of another class, a value that does not parse, or
    ///   `--set-synchronizable any`.
    func attributes(for c: ItemClass, command: String) throws -> [String: AttributeValue] {
        var attributes = try parsedAttributes(groups, prefix: "set-", in: c, command: command)
        switch common.synchronizable {
        case .yes?: attributes["sync"] = .integer(1)
        case .no?: attributes["sync"] = .integer(0)
        case .any?: throw UsageError("--set-synchronizable takes yes or no", command: command)
        case nil: break
        }
        return attributes
    }
}

// MARK: - The option groups (one --set-X per settable attribute of AttributeOption.all)

/// `update`'s new values: common attributes.
struct SetCommonAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong("set-accessible"), help: ArgumentHelp(
        "New protection class (pdmn) or a long name; the items are re-encrypted under it.",
        valueName: "class"))
    var accessible: AccessibleArgument?

    @Option(name: .customLong("set-synchronizable"), help: ArgumentHelp("New kSecAttrSynchronizable (sync): yes or no.", valueName: "yes|no",
                                                                                   visibility: CommandLineForms.secondary))
    var synchronizable: SynchronizableArgument?

    @Option(name: .customLong("set-" + AttributeOption.label.flag), help: AttributeOption.label.setHelp)
    var label: String?
    @Option(name: .customLong("set-" + AttributeOption.labelBytes.flag), help: AttributeOption.labelBytes.setHelp)
    var labelHex: String?
    @Option(name: .customLong("set-" + AttributeOption.accessGroup.flag), help: AttributeOption.accessGroup.setHelp)
    var accessGroup: String?
    @Option(name: .customLong("set-" + AttributeOption.alias.flag), help: AttributeOption.alias.setHelp)
    var alias: String?
    @Option(name: .customLong("set-" + AttributeOption.aliasBytes.flag), help: AttributeOption.aliasBytes.setHelp)
    var aliasHex: String?
    @Option(name: .customLong("set-" + AttributeOption.syncViewHint.flag), help: AttributeOption.syncViewHint.setHelp)
    var syncViewHint: String?
    @Option(name: .customLong("set-" + AttributeOption.tokenID.flag), help: AttributeOption.tokenID.setHelp)
    var tokenID: String?

    var given: [(AttributeOption, String?)] {
        [
            (.label, label), (.accessGroup, accessGroup), (.alias, alias), (.syncViewHint, syncViewHint),
            (.tokenID, tokenID),
            (.labelBytes, labelHex), (.aliasBytes, aliasHex),
        ]
    }
}

/// `update`'s new values: passwords (genp, inet).
struct SetPasswordAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong("set-" + AttributeOption.account.flag), help: AttributeOption.account.setHelp)
    var account: String?
    @Option(name: .customLong("set-" + AttributeOption.accountBytes.flag), help: AttributeOption.accountBytes.setHelp)
    var accountHex: String?
    @Option(name: .customLong("set-" + AttributeOption.description.flag), help: AttributeOption.description.setHelp)
    var description: String?
    @Option(name: .customLong("set-" + AttributeOption.descriptionBytes.flag), help: AttributeOption.descriptionBytes.setHelp)
    var descriptionHex: String?
    @Option(name: .customLong("set-" + AttributeOption.comment.flag), help: AttributeOption.comment.setHelp)
    var comment: String?
    @Option(name: .customLong("set-" + AttributeOption.commentBytes.flag), help: AttributeOption.commentBytes.setHelp)
    var commentHex: String?
    @Option(name: .customLong("set-" + AttributeOption.creator.flag), help: AttributeOption.creator.setHelp)
    var creator: String?
    @Option(name: .customLong("set-" + AttributeOption.itemType.flag), help: AttributeOption.itemType.setHelp)
    var itemType: String?
    @Option(name: .customLong("set-" + AttributeOption.isInvisible.flag), help: AttributeOption.isInvisible.setHelp)
    var isInvisible: String?
    @Option(name: .customLong("set-" + AttributeOption.isNegative.flag), help: AttributeOption.isNegative.setHelp)
    var isNegative: String?
    @Option(name: .customLong("set-" + AttributeOption.hasCustomIcon.flag), help: AttributeOption.hasCustomIcon.setHelp)
    var hasCustomIcon: String?
    @Option(name: .customLong("set-" + AttributeOption.protected.flag), help: AttributeOption.protected.setHelp)
    var protected: String?
    @Option(name: .customLong("set-" + AttributeOption.protectedBytes.flag), help: AttributeOption.protectedBytes.setHelp)
    var protectedHex: String?
    @Option(name: .customLong("set-" + AttributeOption.scriptCode.flag), help: AttributeOption.scriptCode.setHelp)
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

/// `update`'s new values: generic passwords (genp).
struct SetGenericPasswordAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong("set-" + AttributeOption.service.flag), help: AttributeOption.service.setHelp)
    var service: String?
    @Option(name: .customLong("set-" + AttributeOption.serviceBytes.flag), help: AttributeOption.serviceBytes.setHelp)
    var serviceHex: String?
    @Option(name: .customLong("set-" + AttributeOption.generic.flag), help: AttributeOption.generic.setHelp)
    var generic: String?
    @Option(name: .customLong("set-" + AttributeOption.genericBytes.flag), help: AttributeOption.genericBytes.setHelp)
    var genericHex: String?

    var given: [(AttributeOption, String?)] {
        [(.service, service), (.generic, generic), (.serviceBytes, serviceHex), (.genericBytes, genericHex)]
    }
}

/// `update`'s new values: internet passwords (inet).
struct SetInternetPasswordAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong("set-" + AttributeOption.securityDomain.flag), help: AttributeOption.securityDomain.setHelp)
    var securityDomain: String?
    @Option(name: .customLong("set-" + AttributeOption.securityDomainBytes.flag), help: AttributeOption.securityDomainBytes.setHelp)
    var securityDomainHex: String?
    @Option(name: .customLong("set-" + AttributeOption.server.flag), help: AttributeOption.server.setHelp)
    var server: String?
    @Option(name: .customLong("set-" + AttributeOption.serverBytes.flag), help: AttributeOption.serverBytes.setHelp)
    var serverHex: String?
    @Option(name: .customLong("set-" + AttributeOption.`protocol`.flag), help: AttributeOption.`protocol`.setHelp)
    var protocolValue: String?
    @Option(name: .customLong("set-" + AttributeOption.authenticationType.flag), help: AttributeOption.authenticationType.setHelp)
    var authenticationType: String?
    @Option(name: .customLong("set-" + AttributeOption.authenticationTypeBytes.flag), help: AttributeOption.authenticationTypeBytes.setHelp)
    var authenticationTypeHex: String?
    @Option(name: .customLong("set-" + AttributeOption.port.flag), help: AttributeOption.port.setHelp)
    var port: String?
    @Option(name: .customLong("set-" + AttributeOption.path.flag), help: AttributeOption.path.setHelp)
    var path: String?
    @Option(name: .customLong("set-" + AttributeOption.pathBytes.flag), help: AttributeOption.pathBytes.setHelp)
    var pathHex: String?

    var given: [(AttributeOption, String?)] {
        [
            (.securityDomain, securityDomain), (.server, server), (.`protocol`, protocolValue), (.authenticationType, authenticationType),
            (.port, port), (.path, path),
            (.securityDomainBytes, securityDomainHex), (.serverBytes, serverHex), (.authenticationTypeBytes, authenticationTypeHex), (.pathBytes, pathHex),
        ]
    }
}

/// `update`'s new values: keys.
struct SetKeyAttributes: ParsableArguments, AttributeGroup {
    @Option(name: .customLong("set-" + AttributeOption.keyClass.flag), help: AttributeOption.keyClass.setHelp)
    var keyClass: String?
    @Option(name: .customLong("set-" + AttributeOption.applicationLabel.flag), help: AttributeOption.applicationLabel.setHelp)
    var applicationLabel: String?
    @Option(name: .customLong("set-" + AttributeOption.applicationTag.flag), help: AttributeOption.applicationTag.setHelp)
    var applicationTag: String?
    @Option(name: .customLong("set-" + AttributeOption.applicationTagBytes.flag), help: AttributeOption.applicationTagBytes.setHelp)
    var applicationTagHex: String?
    @Option(name: .customLong("set-" + AttributeOption.keyType.flag), help: AttributeOption.keyType.setHelp)
    var keyType: String?
    @Option(name: .customLong("set-" + AttributeOption.keySizeInBits.flag), help: AttributeOption.keySizeInBits.setHelp)
    var keySizeInBits: String?
    @Option(name: .customLong("set-" + AttributeOption.effectiveKeySize.flag), help: AttributeOption.effectiveKeySize.setHelp)
    var effectiveKeySize: String?
    @Option(name: .customLong("set-" + AttributeOption.startDate.flag), help: AttributeOption.startDate.setHelp)
    var startDate: String?
    @Option(name: .customLong("set-" + AttributeOption.endDate.flag), help: AttributeOption.endDate.setHelp)
    var endDate: String?
    @Option(name: .customLong("set-" + AttributeOption.isPermanent.flag), help: AttributeOption.isPermanent.setHelp)
    var isPermanent: String?
    @Option(name: .customLong("set-" + AttributeOption.isPrivate.flag), help: AttributeOption.isPrivate.setHelp)
    var isPrivate: String?
    @Option(name: .customLong("set-" + AttributeOption.isModifiable.flag), help: AttributeOption.isModifiable.setHelp)
    var isModifiable: String?
    @Option(name: .customLong("set-" + AttributeOption.isSensitive.flag), help: AttributeOption.isSensitive.setHelp)
    var isSensitive: String?
    @Option(name: .customLong("set-" + AttributeOption.wasAlwaysSensitive.flag), help: AttributeOption.wasAlwaysSensitive.setHelp)
    var wasAlwaysSensitive: String?
    @Option(name: .customLong("set-" + AttributeOption.isExtractable.flag), help: AttributeOption.isExtractable.setHelp)
    var isExtractable: String?
    @Option(name: .customLong("set-" + AttributeOption.wasNeverExtractable.flag), help: AttributeOption.wasNeverExtractable.setHelp)
    var wasNeverExtractable: String?
    @Option(name: .customLong("set-" + AttributeOption.canEncrypt.flag), help: AttributeOption.canEncrypt.setHelp)
    var canEncrypt: String?
    @Option(name: .customLong("set-" + AttributeOption.canDecrypt.flag), help: AttributeOption.canDecrypt.setHelp)
    var canDecrypt: String?
    @Option(name: .customLong("set-" + AttributeOption.canDerive.flag), help: AttributeOption.canDerive.setHelp)
    var canDerive: String?
    @Option(name: .customLong("set-" + AttributeOption.canSign.flag), help: AttributeOption.canSign.setHelp)
    var canSign: String?
    @Option(name: .customLong("set-" + AttributeOption.canVerify.flag), help: AttributeOption.canVerify.setHelp)
    var canVerify: String?
    @Option(name: .customLong("set-" + AttributeOption.canWrap.flag), help: AttributeOption.canWrap.setHelp)
    var canWrap: String?
    @Option(name: .customLong("set-" + AttributeOption.canUnwrap.flag), help: AttributeOption.canUnwrap.setHelp)
    var canUnwrap: String?
    @Option(name: .customLong("set-" + AttributeOption.canSignRecover.flag), help: AttributeOption.canSignRecover.setHelp)
    var canSignRecover: String?
    @Option(name: .customLong("set-" + AttributeOption.canVerifyRecover.flag), help: AttributeOption.canVerifyRecover.setHelp)
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
