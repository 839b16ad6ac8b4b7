import ArgumentParser
import Latchkey

/// `--item NAME=SERVICE[/ACCOUNT]` of `exec` and `env` (docs/CLI.md): which generic passwords
/// go into which environment variables.
///
/// SERVICE and ACCOUNT select a genp item as `find --service S --account A` does (the caller's
/// access groups, sync = 0). The text after the last `/` is the account, so a service may hold
/// `/` (`https://example.com/api/alice`) and an account may not; without a `/`, or with
/// nothing after the last one (`NAME=https://example.com/api/`), any account matches and
/// exactly one item must.
struct EnvironmentItemOptions: ParsableArguments {
    @Option(
        name: .customLong("item"), parsing: .singleValue,
        help: ArgumentHelp(
            "Put the secret of a generic password into the variable NAME: NAME=SERVICE/ACCOUNT, or NAME=SERVICE when one item has that service.",
            discussion:
                "Repeat it for more variables. The account is what follows the last '/'. NAME must be a valid environment name ([A-Za-z_][A-Za-z0-9_]*).",
            valueName: "NAME=SERVICE[/ACCOUNT]"))
    var specs: [String] = []

    /// One `--item`, parsed: the variable's name and the item (`ServiceAccount`).
    struct Item {
        var name: String
        var chosen: ServiceAccount

        var service: String { chosen.service }
        var account: String? { chosen.account }
        /// What the item is, for messages: `service 'mail' and account 'alice'`.
        var selection: String { chosen.selection }
    }

    /// The parsed specs. - Throws: `ValidationError` naming the spec that is not `NAME=SERVICE[/ACCOUNT]`.
    func items() throws -> [Item] {
        var out: [Item] = [], names: Set<String> = []
        for spec in specs {
            guard let eq = spec.firstIndex(of: "=") else {
                throw ValidationError(
                    "--item '\(spec)' has no '='; write NAME=SERVICE/ACCOUNT, e.g. GITHUB_TOKEN=github.com/alice")
            }
            let name = String(spec[..<eq]), selector = spec[spec.index(after: eq)...]
            guard EnvironmentItemOptions.isValidName(name) else {
                throw ValidationError(
                    "--item '\(spec)': '\(name)' is not a valid environment variable name (letters, digits and _, not starting with a digit)"
                )
            }
            guard names.insert(name).inserted else {
                throw ValidationError("--item gives \(name) twice; give each variable once")
            }
            guard let chosen = ServiceAccount(selector) else {
                throw ValidationError("--item '\(spec)' names no service; write NAME=SERVICE/ACCOUNT")
            }
            out.append(Item(name: name, chosen: chosen))
        }
        return out
    }

    /// `env` and `exec` arguments without their second and later `--item NAME=…`, and those
    /// items' values, in order. ArgumentParser takes time quadratic in the number of arguments
    /// (it removes each parsed one from an array), which thousands of items made seconds; it
    /// parses the rest, the first `--item` included, and `adding` puts the others back. Only
    /// the forms ArgumentParser would read as an item are taken (`--item VALUE` with a VALUE not
    /// starting with '-', `--item=VALUE`), and none after `--`.
    static func laterItems(_ arguments: [String]) -> (kept: [String], items: [String]) {
        guard let command = arguments.first, command == "env" || command == "exec" else { return (arguments, []) }
        var kept: [String] = [], items: [String] = [], first = true, i = 0
        kept.reserveCapacity(arguments.count)
        while i < arguments.count {
            let a = arguments[i]
            if a == "--" { kept += arguments[i...]; break }
            var value: String?, width = 1
            if a == "--item", i + 1 < arguments.count, !arguments[i + 1].hasPrefix("-") {
                value = arguments[i + 1]
                width = 2
            } else if a.hasPrefix("--item="), a.count > "--item=".count {
                value = String(a.dropFirst("--item=".count))
            }
            if let value, !first {
                items.append(value)
            } else {
                if value != nil { first = false }
                kept += arguments[i..<i + width]
            }
            i += width
        }
        return (kept, items)
    }

    /// `command` (env or exec, as ArgumentParser parsed it) with `items` after its own, checked
    /// again as ArgumentParser's `validate` checks them.
    static func adding(_ items: [String], to command: ParsableCommand) throws -> ParsableCommand {
        if var env = command as? EnvCommand {
            env.items.specs += items
            try env.validate()
            return env
        }
        if var exec = command as? ExecCommand {
            exec.items.specs += items
            try exec.validate()
            return exec
        }
        return command
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            return false
        }
        return name.utf8.allSatisfy {
            $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        }
    }

    /// The secret of every item, in the order given; every item is found before anything is
    /// returned, so a child is never started with some of its variables.
    /// - Throws: errSecItemNotFound naming the variable and the item that is missing;
    ///   errSecParam when several items match one without an account, or a secret holds a NUL
    ///   byte (which no environment variable can carry); errSecInteractionNotAllowed when locked.
    static func secrets(_ items: [Item], global: GlobalOptions, command: String) throws -> [(
        name: String, value: [UInt8]
    )] {
        let keychain = try global.open(unlock: .whenNeeded)
        var out: [(name: String, value: [UInt8])] = []
        for item in items {
            let query = Query(
                .genericPassword, item.chosen.attributes, protection: nil, caseInsensitive: false,
                synchronizable: .notSynchronizable)
            let found = try global.retryingUnlocked(keychain) { try keychain.find(query, limit: 2, includeData: true) }
            guard let match = found.first else {
                throw KeychainError(
                    .itemNotFound,
                    "no generic password with \(item.selection) for \(item.name); nothing was run (see 'latchkey find --service …' and 'latchkey dump')"
                )
            }
            guard found.count == 1 else {
                throw KeychainError(
                    .param,
                    "more than one generic password has \(item.selection) (for \(item.name)); add /ACCOUNT to choose one"
                )
            }
            guard !match.data.contains(0) else {
                throw KeychainError(
                    .param,
                    "the secret for \(item.name) (\(item.selection)) holds a NUL byte, which an environment variable cannot carry; nothing was run"
                )
            }
            out.append((item.name, match.data))
        }
        return out
    }
}
