import ArgumentParser

/// The attribute options of one section, made from the schema when ArgumentParser asks.
///
/// ArgumentParser learns a group's options from the group's `Mirror`: a group that conforms to
/// `CustomReflectable` lists an `Option` for each `AttributeOption` there instead of a stored
/// property each, and reads each back by the same key in `init(from:)`. So an attribute is a
/// row of `AttributeSchema`, and its options, help, man page and completions follow.
struct GeneratedOptions: Sendable {
    let options: [AttributeOption]
    /// `set-` for update's new values, else empty.
    let prefix: String
    /// The text of each given option, by flag.
    private var texts: [String: String] = [:]

    init(_ section: OptionSection, newValues: Bool) {
        options = section.options(newValues: newValues)
        prefix = newValues ? "set-" : ""
    }

    /// One `@Option` per option, as a stored property would give it.
    var children: [Mirror.Child] {
        options.map { option in
            (
                label: option.flag,
                value: Option<String?>(
                    name: .customLong(prefix + option.flag),
                    help: prefix.isEmpty ? option.help : option.setHelp,
                    completion: prefix.isEmpty ? GeneratedOptions.completion[option.flag] : nil)
            )
        }
    }

    /// Names from an unlocked agent (`Completion`) for the query options that take them.
    static let completion: [String: CompletionKind] = ["service": Completion.service, "account": Completion.account]

    mutating func decode(_ container: KeyedDecodingContainer<OptionKey>) throws {
        for option in options {
            if let text = try container.decode(Option<String?>.self, forKey: OptionKey(option.flag)).wrappedValue {
                texts[option.flag] = text
            }
        }
    }

    var given: [(AttributeOption, String)] {
        guard !texts.isEmpty else { return [] }
        let ordered = options.filter { !$0.isBytesForm } + options.filter(\.isBytesForm)
        return ordered.compactMap { option in texts[option.flag].map { (option, $0) } }
    }
}

/// A coding key of any name: the keys of generated options are their flags.
struct OptionKey: CodingKey, ExpressibleByStringLiteral {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(stringLiteral value: String) { stringValue = value }
}
