import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `latchkey find` without ArgumentParser's per-process cost.
///
/// ArgumentParser builds its view of a command by reflection, and the Swift runtime's first
/// look-ups of each type and protocol conformance it touches cost about 5 ms of a `find` that
/// otherwise takes about 10 ms through the agent (issue 7: ≤ 15 ms end to end; measured with
/// perf in the README's "The agent"). `find` is the command scripts run in loops, so its
/// common form is parsed here by hand: attribute options of the default class, `--limit`,
/// `--return`, `--json`, `--case-insensitive` and the global options. Anything else — another
/// class, `--accessible`, `--synchronizable`, a repeated option, a value that starts with
/// "-" or does not parse, help, an invalid combination — returns nil, and the command goes
/// through ArgumentParser as before, so every error message and every rarer form is
/// ArgumentParser's. Values are converted by the same code (`AttributeOption.value`,
/// `Limit(argument:)`; the global options are set as ArgumentParser would set them,
/// `GlobalOptions.given`); FastFindTests compare both parsers on every
/// option.
extension FindCommand {
    static let fastFlags: Set<String> = ["json", "case-insensitive"]
    static let fastGlobalOptions: Set<String> = ["keychain", "device", "passcode-file", "app-id", "entitlements"]
    static let attributeOptions: [String: AttributeOption] = Dictionary(
        AttributeOption.all.map { ($0.flag, $0) }, uniquingKeysWith: { first, _ in first })

    /// The request for `find ARGUMENTS` (the arguments after "find"), or nil when ArgumentParser
    /// must parse them.
    static func fastRequest(_ arguments: [String]) -> Request? {
        var seen: Set<String> = []
        var attributes: [String: AttributeValue] = [:]
        var limit = Limit.one, returnKind = Return.data, json = false, caseInsensitive = false
        var globalValues: [String: String] = [:]
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard seen.insert(name).inserted else { return nil }
            i += 1
            if fastFlags.contains(name) {
                guard inline == nil else { return nil }
                if name == "json" { json = true } else { caseInsensitive = true }
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < arguments.count, !arguments[i].hasPrefix("-") else { return nil }
                value = arguments[i]
                i += 1
            }
            switch name {
            case "limit":
                guard let l = Limit(argument: value) else { return nil }
                limit = l
            case "return":
                guard let r = Return(rawValue: value) else { return nil }
                returnKind = r
            case _ where fastGlobalOptions.contains(name):
                globalValues[name] = value
            default:
                guard let option = attributeOptions[name],
                      let v = try? option.value(value, in: .genericPassword, command: "find") else { return nil }
                attributes[option.code] = v
            }
        }
        // validate()'s rule: ArgumentParser reports it.
        if limit != .one && returnKind == .data { return nil }
        let global = GlobalOptions.given(globalValues)
        let query = Query(.genericPassword, attributes, protection: nil, caseInsensitive: caseInsensitive,
                          synchronizable: .notSynchronizable)
        return Request(query: query, limit: limit, returnKind: returnKind, json: json, global: global)
    }
}
