import ArgumentParser
import Latchkey
import LatchkeyFormat

/// The sections of attribute options in help, one per set of classes: each option goes to the
/// section of its attribute's classes (`AttributeSchema`).
enum OptionSection: CaseIterable, Sendable {
    case common, passwords, genericPasswords, internetPasswords, certificates, keys

    /// The section of an attribute that the classes `classes` have.
    static func of(_ classes: Set<ItemClass>) -> OptionSection {
        if classes.count == ItemClass.allCases.count { return .common }
        if classes.isSuperset(of: [.genericPassword, .internetPassword]) { return .passwords }
        switch classes.count == 1 ? classes.first : nil {
        case .genericPassword?: return .genericPasswords
        case .internetPassword?: return .internetPasswords
        case .certificate?: return .certificates
        case .key?: return .keys
        case nil: return .common
        }
    }

    /// The title of the section's ITEM/QUERY options, or of update's `--set-X` options. Under
    /// `--help`, which shows only the common attributes, one section each ("Attributes", "New
    /// values"): ArgumentParser merges sections of the same title.
    func title(newValues: Bool, full: Bool = CommandLineForms.showsEverything) -> String {
        if !full { return newValues ? "New values" : "Attributes" }
        switch (self, newValues) {
        case (.common, false): return "Class and common attributes"
        case (.passwords, false): return "Passwords: genp and inet"
        case (.genericPasswords, false): return "Generic passwords: genp (the default class)"
        case (.internetPasswords, false): return "Internet passwords: inet"
        case (.certificates, false): return "Certificates: cert (derived from the certificate; for queries)"
        case (.keys, false): return "Keys: keys"
        case (.common, true): return "New values: common attributes"
        case (.passwords, true): return "New values: passwords, genp and inet"
        case (.genericPasswords, true): return "New values: generic passwords, genp"
        case (.internetPasswords, true): return "New values: internet passwords, inet"
        case (.certificates, true): return "New values: certificates, cert"
        case (.keys, true): return "New values: keys"
        }
    }

    /// The options of the section in help order, each text option followed by its hex form;
    /// only those a caller may give when `newValues`.
    func options(newValues: Bool) -> [AttributeOption] {
        OptionSection.options[self, default: []].filter { !newValues || !$0.derived }
    }

    private static let options: [OptionSection: [AttributeOption]] = {
        var out: [OptionSection: [AttributeOption]] = [:]
        for option in AttributeOption.all {
            out[of(option.classes), default: []] += [option] + (option.bytesOption.map { [$0] } ?? [])
        }
        return out
    }()
}

/// A group of attribute options: the options given, with their text.
protocol AttributeGroup {
    /// The given options in the order a problem is reported in: each attribute's text form
    /// before its hex form.
    var given: [(AttributeOption, String)] { get }
}

/// Which section an `AttributeSection` is, as a type: ArgumentParser tells groups apart by type.
protocol SectionTag { static var section: OptionSection { get } }
/// Whether an `AttributeSection` holds query options or update's new values, and the group of
/// the form's options common to every class.
protocol FormTag {
    associatedtype Common: ParsableArguments, AttributeGroup
    static var newValues: Bool { get }
}

/// The `SectionTag` of each section but `common` (whose group has options of its own).
enum Sections {
    enum Passwords: SectionTag { static var section: OptionSection { .passwords } }
    enum GenericPasswords: SectionTag { static var section: OptionSection { .genericPasswords } }
    enum InternetPasswords: SectionTag { static var section: OptionSection { .internetPasswords } }
    enum Certificates: SectionTag { static var section: OptionSection { .certificates } }
    enum Keys: SectionTag { static var section: OptionSection { .keys } }
}

/// ITEM/QUERY options (`--account`).
enum QueryForm: FormTag {
    typealias Common = CommonAttributes
    static var newValues: Bool { false }
}
/// update's new values (`--set-account`).
enum NewValueForm: FormTag {
    typealias Common = NewCommonAttributes
    static var newValues: Bool { true }
}

/// The generated options of one section of one form.
struct AttributeSection<Section: SectionTag, Form: FormTag>: ParsableArguments, CustomReflectable, AttributeGroup {
    private var attributes = GeneratedOptions(Section.section, newValues: Form.newValues)

    init() {}

    init(from decoder: Decoder) throws {
        try attributes.decode(decoder.container(keyedBy: OptionKey.self))
    }

    var customMirror: Mirror { Mirror(self, children: attributes.children) }
    var given: [(AttributeOption, String)] { attributes.given }
}

/// ITEM/QUERY options: the class, the protection class, `sync`, and the attributes of every class.
struct CommonAttributes: ParsableArguments, CustomReflectable, AttributeGroup {
    @Option(
        name: .customLong("class"),
        help: ArgumentHelp(
            CommandLineForms.showsEverything ? "Item class (kSecClass)." : "Item class; all its options: --help-all.",
            valueName: "class"))
    var itemClass: ClassArgument = .genp

    @Option(
        help: ArgumentHelp(
            CommandLineForms.showsEverything
                ? "Protection class (kSecAttrAccessible, pdmn): ak, ck, dk, aku, cku, dku, akpu, or a long name such as WhenUnlocked or AfterFirstUnlockThisDeviceOnly."
                : "Protection class (pdmn), or WhenUnlocked ...",
            discussion: CommandLineForms.details(
                "For add the default is ak (WhenUnlocked; certificates dk); in a query it selects items of that class only."
            ),
            valueName: "class"))
    var accessible: AccessibleArgument?

    @Option(
        help: ArgumentHelp(
            "kSecAttrSynchronizable (sync): yes or no; in a query also any.",
            discussion:
                "Items are added with no (sync = 0), and queries see only those unless given yes or any. Nothing is ever synchronised.",
            valueName: "yes|no|any", visibility: CommandLineForms.secondary))
    var synchronizable: SynchronizableArgument?

    private var attributes = GeneratedOptions(.common, newValues: false)

    init() {}

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: OptionKey.self)
        _itemClass = try container.decode(Option<ClassArgument>.self, forKey: "itemClass")
        _accessible = try container.decode(Option<AccessibleArgument?>.self, forKey: "accessible")
        _synchronizable = try container.decode(Option<SynchronizableArgument?>.self, forKey: "synchronizable")
        try attributes.decode(container)
    }

    var customMirror: Mirror {
        Mirror(
            self,
            children: [
                (label: "itemClass", value: _itemClass), ("accessible", _accessible),
                ("synchronizable", _synchronizable)
            ]
                + attributes.children)
    }

    var given: [(AttributeOption, String)] { attributes.given }
}

/// `update`'s new values: the protection class, `sync`, and the attributes of every class.
struct NewCommonAttributes: ParsableArguments, CustomReflectable, AttributeGroup {
    @Option(
        name: .customLong("set-accessible"),
        help: ArgumentHelp(
            CommandLineForms.showsEverything
                ? "New protection class (pdmn) or a long name; the items are re-encrypted under it."
                : "New protection class; items re-encrypted.",
            valueName: "class", visibility: CommandLineForms.secondary))
    var accessible: AccessibleArgument?

    @Option(
        name: .customLong("set-synchronizable"),
        help: ArgumentHelp(
            "New kSecAttrSynchronizable (sync): yes or no.", valueName: "yes|no",
            visibility: CommandLineForms.secondary))
    var synchronizable: SynchronizableArgument?

    private var attributes = GeneratedOptions(.common, newValues: true)

    init() {}

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: OptionKey.self)
        _accessible = try container.decode(Option<AccessibleArgument?>.self, forKey: "accessible")
        _synchronizable = try container.decode(Option<SynchronizableArgument?>.self, forKey: "synchronizable")
        try attributes.decode(container)
    }

    var customMirror: Mirror {
        Mirror(
            self,
            children: [(label: "accessible", value: _accessible), ("synchronizable", _synchronizable)]
                + attributes.children)
    }

    var given: [(AttributeOption, String)] { attributes.given }
}
