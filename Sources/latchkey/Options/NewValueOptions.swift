import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `update`'s new values: a `--set-X` for every attribute that is not derived from the data,
/// a section per class in help.
struct NewValueOptions: ParsableArguments {
    @OptionGroup(title: OptionSection.common.newValuesTitle) var common: NewCommonAttributes
    @OptionGroup(title: OptionSection.passwords.newValuesTitle) var passwords: AttributeSection<Passwords, NewValueForm>
    @OptionGroup(title: OptionSection.genericPasswords.newValuesTitle) var genericPasswords: AttributeSection<GenericPasswords, NewValueForm>
    @OptionGroup(title: OptionSection.internetPasswords.newValuesTitle) var internetPasswords: AttributeSection<InternetPasswords, NewValueForm>
    @OptionGroup(title: OptionSection.certificates.newValuesTitle) var certificates: AttributeSection<Certificates, NewValueForm>
    @OptionGroup(title: OptionSection.keys.newValuesTitle) var keys: AttributeSection<Keys, NewValueForm>

    private var groups: [AttributeGroup] { [common, passwords, genericPasswords, internetPasswords, certificates, keys] }

    var protection: ProtectionClass? { common.accessible?.protection }

    /// Whether no new value was given.
    var isEmpty: Bool {
        protection == nil && common.synchronizable == nil && groups.allSatisfy { $0.given.isEmpty }
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
