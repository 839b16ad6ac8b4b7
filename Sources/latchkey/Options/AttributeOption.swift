import ArgumentParser
import Latchkey
import LatchkeyFormat

/// How an option's text becomes an attribute value: the notation of the attribute's row in
/// `AttributeSchema`.
typealias ValueSyntax = AttributeDefinition.Notation

extension ValueSyntax {
    /// A few words for `<value>` in help.
    var valueName: String {
        switch self {
        case .text: return "text"
        case .number: return "number"
        case .code: return "code"
        case .boolean: return "yes|no"
        case .hex: return "hex"
        case .date: return "date"
        case .keyType: return "type"
        case .keyClass: return "class"
        }
    }
}

/// One attribute reachable from the command line: a row of `AttributeSchema` that has a flag,
/// or the hex form of one (`bytesOption`). ITEM/QUERY options (`--account`), `update`'s new
/// values (`--set-account`) and the fast parser's table are all `AttributeOption.all`.
struct AttributeOption: Sendable, Hashable {
    /// The option without dashes: `account`.
    private(set) var flag: String
    /// Apple's attribute code: `acct`.
    let code: String
    private(set) var syntax: ValueSyntax
    /// The attribute's kind (the same in each of its classes).
    let kind: ItemSchema.Kind
    let classes: Set<ItemClass>
    /// Apple's constant, for help: `kSecAttrAccount`.
    let constant: String
    private(set) var abstract: String
    /// The keychain derives it from the item's data (certificates): queries only.
    let derived: Bool
    /// Whether this is the hex form of a text option (`--account-hex`).
    private(set) var isBytesForm = false

    /// The option of a row of the schema; nil for a row without a flag.
    init?(_ row: AttributeDefinition) {
        guard let flag = row.flag else { return nil }
        self.flag = flag
        code = row.code
        syntax = row.notation
        kind = row.kind
        classes = row.classes
        constant = row.constant
        abstract = row.help
        derived = row.isDerived
    }

    static func == (a: AttributeOption, b: AttributeOption) -> Bool { a.code == b.code && a.flag == b.flag }
    func hash(into hasher: inout Hasher) { hasher.combine(flag) }

    /// `--account-hex` for `--account`: the same attribute given as bytes in hex, for every
    /// text option whose attribute can hold data (kind `blob`: a query compares the bytes, so
    /// `--account-hex 616c696365` finds the account "alice"). Arguments must be UTF-8
    /// (Support/RawInput.swift); this is how other bytes are given. Nil for the others.
    var bytesOption: AttributeOption? {
        guard syntax == .text, kind == .blob else { return nil }
        var hex = self
        hex.flag = flag + "-hex"
        hex.syntax = .hex
        hex.abstract = "\(abstract.prefix { !":,;".contains($0) }) as bytes in hex, for a value that is not UTF-8 text"
        hex.isBytesForm = true
        return hex
    }

    /// The attributes whose options `--help` shows; the others are under `--help-all`.
    static let shownInShortHelp: Set<String> = ["account", "service", "label"]

    private var visibility: ArgumentVisibility {
        AttributeOption.shownInShortHelp.contains(flag) ? .default : CommandLineForms.secondary
    }

    /// Help for the ITEM/QUERY option.
    var help: ArgumentHelp {
        ArgumentHelp("\(abstract) (\(constant), \(code)).", valueName: syntax.valueName, visibility: visibility)
    }

    /// Help for `update --set-X`.
    var setHelp: ArgumentHelp {
        ArgumentHelp(
            "New \(abstract.prefix(1).lowercased() + abstract.dropFirst()) (\(code)).", valueName: syntax.valueName,
            visibility: visibility)
    }

    /// Parses the option's text. - Throws: `UsageError` naming the option and what it takes.
    func value(_ text: String, option: String, command: String) throws -> AttributeValue {
        func bad(_ what: String) -> UsageError {
            UsageError("\(option) takes \(what), not '\(text)'", command: command)
        }
        switch syntax {
        case .text:
            return .string(text)
        case .number:
            guard let i = Int64(text) else { throw bad("a whole number") }
            return .integer(i)
        case .code:
            if let i = Int64(text) { return .integer(i) }
            guard !text.isEmpty else { throw bad("a number or a code such as htps") }
            return .string(text)
        case .boolean:
            switch text.lowercased() {
            case "yes", "true", "1", "on": return .integer(1)
            case "no", "false", "0", "off": return .integer(0)
            default: throw bad("yes or no")
            }
        case .hex:
            guard let bytes = Hex.decode(text) else { throw bad("bytes in hex (e.g. 0a1b2c)") }
            return .data(bytes)
        case .date:
            guard let t = ISODate.parse(text) else {
                throw bad("an ISO 8601 date such as 2026-01-31 or 2026-01-31T12:00:00Z")
            }
            return .date(t)
        case .keyType:
            if let i = Int64(text) { return .integer(i) }
            guard let code = AttributeOption.keyTypes[text.lowercased()] else {
                throw bad("rsa, dsa, ec, ed25519, x25519 or a number")
            }
            return .integer(code)
        case .keyClass:
            if let i = Int64(text) { return .integer(i) }
            guard let code = AttributeOption.keyClasses[text.lowercased()] else {
                throw bad("public, private, symmetric or 0, 1, 2")
            }
            return .integer(code)
        }
    }

    /// kSecAttrKeyType values (reference §1.6).
    static let keyTypes: [String: Int64] = [
        "rsa": 42, "dsa": 43, "ec": 73, "ecsecprimerandom": 73, "ed25519": 105, "x25519": 106
    ]
    /// kSecAttrKeyClass values.
    static let keyClasses: [String: Int64] = ["public": 0, "private": 1, "symmetric": 2]

    /// Every attribute option, in help order: the rows of `AttributeSchema` that have a flag.
    static let all: [AttributeOption] = AttributeSchema.all.compactMap(AttributeOption.init)

    /// The hex forms (`bytesOption`) of the options of `all` that have one.
    static let allBytes: [AttributeOption] = all.compactMap(\.bytesOption)

    /// The option of that name (`account`, `account-hex`), or nil.
    static func named(_ flag: String) -> AttributeOption? {
        if let option = all.first(where: { $0.flag == flag }) { return option }
        guard flag.hasSuffix("-hex"), let base = all.first(where: { $0.flag + "-hex" == flag }) else { return nil }
        return base.bytesOption
    }
}
