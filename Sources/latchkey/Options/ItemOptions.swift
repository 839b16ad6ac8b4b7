import ArgumentParser
import Latchkey
import LatchkeyFormat

extension AttributeOption {
    static let classNames: [ItemClass: String] = [
        .genericPassword: "genp (generic passwords)", .internetPassword: "inet (internet passwords)",
        .certificate: "cert (certificates)", .key: "keys (keys)"
    ]

    /// Parses `text` as this attribute of class `c`, given as `--prefix+flag`.
    /// - Throws: `UsageError` when the class has no such attribute or the value does not parse.
    func value(_ text: String, prefix: String = "", in c: ItemClass, command: String) throws -> AttributeValue {
        let option = "--" + prefix + flag
        guard classes.contains(c) else {
            let owners = ItemClass.allCases.filter { classes.contains($0) }.map(\.rawValue).joined(separator: " or ")
            throw UsageError(
                "\(option) is not an attribute of class \(AttributeOption.classNames[c]!); it belongs to --class \(owners)",
                command: command)
        }
        return try value(text, option: option, command: command)
    }
}

/// Collects the given options of several groups as attributes of class `c`.
func parsedAttributes(
    _ groups: [AttributeGroup], prefix: String = "", in c: ItemClass, command: String,
    forAdd: Bool = false
) throws -> [String: AttributeValue] {
    var out: [String: AttributeValue] = [:]
    var givenBy: [String: AttributeOption] = [:]
    for group in groups {
        for (option, text) in group.given {
            if forAdd, option.derived {
                throw UsageError(
                    "--\(option.flag) is derived from the certificate itself; it can select certificates in find, update and delete, but add sets it from the data",
                    command: command)
            }
            let value = try option.value(text, prefix: prefix, in: c, command: command)
            // --account and --account-hex: one attribute, two spellings.
            if let other = givenBy[option.code] {
                throw UsageError(
                    "--\(prefix)\(other.flag) and --\(prefix)\(option.flag) both give \(option.code) (\(option.constant)); give one of them",
                    command: command)
            }
            givenBy[option.code] = option
            out[option.code] = value
        }
    }
    return out
}

/// Options that describe an item or a query: the class, the protection class, `sync` and
/// attribute options, in titled sections.
protocol ItemAttributeOptions {
    var common: CommonAttributes { get }
    /// Every section, `common` first.
    var groups: [AttributeGroup] { get }
}

extension ItemAttributeOptions {
    var itemClass: ItemClass { common.itemClass.itemClass }
    var protection: ProtectionClass? { common.accessible?.protection }

    /// The attributes of a new item: the given ones, and `sync` from --synchronizable.
    /// - Throws: `UsageError` for an option of another class, a value that does not parse, an
    ///   attribute derived from a certificate, or `--synchronizable any`.
    func newItemAttributes(command: String) throws -> [String: AttributeValue] {
        var attributes = try parsedAttributes(groups, in: itemClass, command: command, forAdd: true)
        if let sync = common.synchronizable {
            guard let value = sync.storedValue else {
                throw UsageError(
                    "--synchronizable any selects items in queries; an item is added with yes or no", command: command)
            }
            attributes["sync"] = value
        }
        return attributes
    }

    /// The query these options describe: every given attribute must match.
    /// - Throws: `UsageError` for an option of another class or a value that does not parse.
    func query(command: String, caseInsensitive: Bool = false) throws -> Query {
        Query(
            itemClass, try parsedAttributes(groups, in: itemClass, command: command), protection: protection,
            caseInsensitive: caseInsensitive, synchronizable: common.synchronizable?.filter ?? .notSynchronizable)
    }
}

/// The attribute options of one form, a section per class in help: ITEM and QUERY options
/// (`ItemOptions`: the class, the protection class and every attribute of each class,
/// docs/CLI.md) or update's new values (`NewValueOptions`: a `--set-X` for every attribute not
/// derived from the data). The one attribute group of add, find, update and delete.
struct AttributeOptions<Form: FormTag>: ParsableArguments {
    @OptionGroup(title: OptionSection.common.title(newValues: Form.newValues))
    var common: Form.Common
    @OptionGroup(title: OptionSection.passwords.title(newValues: Form.newValues))
    var passwords: AttributeSection<Sections.Passwords, Form>
    @OptionGroup(title: OptionSection.genericPasswords.title(newValues: Form.newValues))
    var genericPasswords: AttributeSection<Sections.GenericPasswords, Form>
    @OptionGroup(title: OptionSection.internetPasswords.title(newValues: Form.newValues))
    var internetPasswords: AttributeSection<Sections.InternetPasswords, Form>
    @OptionGroup(title: OptionSection.certificates.title(newValues: Form.newValues))
    var certificates: AttributeSection<Sections.Certificates, Form>
    @OptionGroup(title: OptionSection.keys.title(newValues: Form.newValues))
    var keys: AttributeSection<Sections.Keys, Form>

    var groups: [AttributeGroup] { [common, passwords, genericPasswords, internetPasswords, certificates, keys] }
}

/// ITEM and QUERY options.
typealias ItemOptions = AttributeOptions<QueryForm>

extension AttributeOptions: ItemAttributeOptions where Form == QueryForm {}

/// The ITEM options of passwords (genp and inet): `generate`'s attribute group.
struct PasswordItemOptions: ParsableArguments, ItemAttributeOptions {
    @OptionGroup(title: OptionSection.common.title(newValues: false))
    var common: CommonAttributes
    @OptionGroup(title: OptionSection.passwords.title(newValues: false))
    var passwords: AttributeSection<Sections.Passwords, QueryForm>
    @OptionGroup(title: OptionSection.genericPasswords.title(newValues: false))
    var genericPasswords: AttributeSection<Sections.GenericPasswords, QueryForm>
    @OptionGroup(title: OptionSection.internetPasswords.title(newValues: false))
    var internetPasswords: AttributeSection<Sections.InternetPasswords, QueryForm>

    var groups: [AttributeGroup] { [common, passwords, genericPasswords, internetPasswords] }
}
