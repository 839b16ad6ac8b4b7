import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `find`, `add`, `update`, `delete` and `dump` without ArgumentParser's per-process cost.
///
/// ArgumentParser builds its view of a command by reflection, and the Swift runtime's first
/// look-ups of each type and protocol conformance it touches cost milliseconds per process —
/// more than the command itself through the agent, and time spent before a command can start
/// its passcode KDF (docs/RESULTS.md has the measurements). These are the commands scripts
/// run in loops, so their common forms
/// are parsed here by hand: attribute options of the default class (genp), update's --set-X of
/// those attributes, the commands' few own options and flags, and the global options. Anything else
/// — another class, `--accessible`, `--synchronizable`, a repeated option, a value that starts
/// with "-" or does not parse, help, an invalid combination — returns nil, and the command
/// goes through ArgumentParser as before, so every error message and every rarer form is
/// ArgumentParser's. The attribute options are the CLI's one table (`AttributeOption.all`, from
/// `AttributeSchema`) and values are converted by the same code (`AttributeOption.value`,
/// `Limit(argument:)`; the global options are set as ArgumentParser would set them,
/// `GlobalSettings(given:)`). FastParserTests compare both parsers on every option of each
/// command, and check that each `FastForm` names options its command declares.
struct FastArguments {
    /// The attribute options (`--account`): the query, or the new item's attributes.
    var attributes: [String: AttributeValue] = [:]
    /// update's new values (`--set-account`).
    var newValues: [String: AttributeValue] = [:]
    /// The command's own flags that were given.
    var flags: Set<String> = []
    /// The command's own options that were given, as text.
    var values: [String: String] = [:]
    /// The `SERVICE/ACCOUNT` argument (find, delete), as given.
    var positional: String?
    var global: GlobalSettings

    static let globalOptions: Set<String> = [
        "keychain", "device", "passcode-file", "passcode-command", "app-id", "entitlements"
    ]

    /// The arguments after the command's name, or nil when ArgumentParser must parse them.
    static func parse(_ arguments: [String], _ form: FastForm) -> FastArguments? {
        let (command, flags, options, newValues) = (form.command, form.flags, form.options, form.newValues)
        var attributes: [String: AttributeValue] = [:], newValueAttributes: [String: AttributeValue] = [:]
        var givenFlags: Set<String> = [], givenValues: [String: String] = [:]
        var seen: Set<String> = []
        var globalValues: [String: String] = [:]
        var positional: String?
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            if form.positional, positional == nil, !argument.hasPrefix("-") {
                positional = argument
                i += 1
                continue
            }
            guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard seen.insert(name).inserted else { return nil }
            i += 1
            if flags.contains(name) {
                guard inline == nil else { return nil }
                givenFlags.insert(name)
                continue
            }
            let value: String
            if let inline {
                // ArgumentParser reads `--account=` as a missing value, not an empty one.
                guard !inline.isEmpty else { return nil }
                value = inline
            } else {
                guard i < arguments.count, !arguments[i].hasPrefix("-") else { return nil }
                value = arguments[i]
                i += 1
            }
            if options.contains(name) {
                givenValues[name] = value
            } else if globalOptions.contains(name) {
                globalValues[name] = value
            } else if newValues, name.hasPrefix("set-") {
                guard let option = AttributeOption.named(String(name.dropFirst(4))), !option.derived,
                    newValueAttributes[option.code] == nil,
                    let v = try? option.value(value, prefix: "set-", in: .genericPassword, command: command)
                else { return nil }
                newValueAttributes[option.code] = v
            } else {
                // Two spellings of one attribute (--account and --account-hex): ArgumentParser's path says so.
                guard let option = AttributeOption.named(name), !option.derived, attributes[option.code] == nil,
                    let v = try? option.value(value, in: .genericPassword, command: command)
                else { return nil }
                attributes[option.code] = v
            }
        }
        return FastArguments(
            attributes: attributes, newValues: newValueAttributes, flags: givenFlags, values: givenValues,
            positional: positional, global: GlobalSettings(given: globalValues))
    }

    /// The query of the attribute options and the `SERVICE/ACCOUNT` argument, as
    /// `ItemOptions.query` and `ServiceAccount.query` make it for genp; nil when the argument
    /// is refused (ArgumentParser's path says why).
    func query(caseInsensitive: Bool = false) -> Query? {
        try? ServiceAccount.query(
            Query(
                .genericPassword, attributes, protection: nil, caseInsensitive: caseInsensitive,
                synchronizable: .notSynchronizable), selector: positional, command: "")
    }
}

/// The options of its own that a command's fast path reads, besides attributes and global
/// options; any other option of the command leaves the command to ArgumentParser.
struct FastForm {
    var command: String
    /// Options without a value.
    var flags: Set<String> = []
    /// Options with a value (other than attributes).
    var options: Set<String> = []
    /// Whether `--set-X` options are the command's (update).
    var newValues = false
    /// Whether the command takes a `SERVICE/ACCOUNT` argument (find, delete).
    var positional = false
}

extension FindCommand {
    static let fastForm = FastForm(
        command: "find", flags: ["json", "case-insensitive", "first"], options: ["limit", "return"], positional: true)

    /// The request for `find ARGUMENTS` (the arguments after "find"), or nil.
    static func fastRequest(_ arguments: [String]) -> Request? {
        guard let p = FastArguments.parse(arguments, fastForm) else { return nil }
        var limit = Limit.one, returnKind = Return.data
        if let text = p.values["limit"] {
            guard let l = Limit(argument: text), !p.flags.contains("first") else { return nil }
            limit = l
        }
        if let text = p.values["return"] {
            guard let r = Return(rawValue: text) else { return nil }
            returnKind = r
        }
        // validate()'s rule: ArgumentParser reports it.
        if limit != .one && returnKind == .data { return nil }
        guard let query = p.query(caseInsensitive: p.flags.contains("case-insensitive")) else { return nil }
        return Request(
            query: query, limit: limit,
            refuseAmbiguity: p.values["limit"] == nil && !p.flags.contains("first"), returnKind: returnKind,
            json: p.flags.contains("json"), global: p.global)
    }
}

extension FastArguments {
    /// The secret-input flags (`SecretInputOptions`); nil when they contradict (ArgumentParser
    /// reports it).
    var secretInput: SecretInputRules? {
        let r = SecretInputRules(
            keepNewline: flags.contains("keep-newline"), stripNewline: flags.contains("strip-newline"),
            allowEmpty: flags.contains("allow-empty"))
        return r.keepNewline && r.stripNewline ? nil : r
    }
}

extension AddCommand {
    static let fastForm = FastForm(
        command: "add", flags: ["require-user-presence", "strip-newline", "keep-newline", "allow-empty"],
        options: ["data-file"])

    /// The request for `add ARGUMENTS`, or nil.
    static func fastRequest(_ arguments: [String]) -> Request? {
        guard let p = FastArguments.parse(arguments, fastForm) else { return nil }
        guard let input = p.secretInput else { return nil }
        return Request(
            itemClass: .genericPassword, attributes: p.attributes, protection: nil, dataFile: p.values["data-file"],
            requireUserPresence: p.flags.contains("require-user-presence"), input: input, global: p.global)
    }
}

extension UpdateCommand {
    static let fastForm = FastForm(
        command: "update", flags: ["set-data", "yes", "dry-run", "keep-newline", "allow-empty"],
        options: ["data-file"], newValues: true)

    /// The request for `update ARGUMENTS`, or nil.
    static func fastRequest(_ arguments: [String]) -> Request? {
        guard let p = FastArguments.parse(arguments, fastForm) else { return nil }
        let setData = p.flags.contains("set-data"), dataFile = p.values["data-file"]
        // validate()'s rules: ArgumentParser reports them.
        if p.newValues.isEmpty && !setData { return nil }
        if dataFile != nil && !setData { return nil }
        guard let input = p.secretInput else { return nil }
        guard let query = p.query() else { return nil }
        return Request(
            query: query, newValues: p.newValues, protection: nil, setData: setData, dataFile: dataFile,
            yes: p.flags.contains("yes"), dryRun: p.flags.contains("dry-run"), input: input, global: p.global)
    }
}

extension DeleteCommand {
    static let fastForm = FastForm(command: "delete", flags: ["all", "yes", "dry-run"], positional: true)

    /// The request for `delete ARGUMENTS`, or nil.
    static func fastRequest(_ arguments: [String]) -> Request? {
        guard let p = FastArguments.parse(arguments, fastForm), let query = p.query() else { return nil }
        return Request(
            query: query, all: p.flags.contains("all"), yes: p.flags.contains("yes"),
            dryRun: p.flags.contains("dry-run"),
            global: p.global)
    }
}

extension DumpCommand {
    static let fastForm = FastForm(command: "dump", flags: ["json"])

    /// `--json` and the global options of `dump ARGUMENTS`; nil for anything else.
    static func fastRequest(_ arguments: [String]) -> (json: Bool, global: GlobalSettings)? {
        guard let p = FastArguments.parse(arguments, fastForm), p.attributes.isEmpty else { return nil }
        return (p.flags.contains("json"), p.global)
    }
}
