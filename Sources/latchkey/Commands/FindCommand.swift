import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyFormat

/// `latchkey find`: SecItemCopyMatching from the command line.
struct FindCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Find items; write the secret of the match, or attributes as JSON.",
        discussion: CommandLineForms.discussion(
            short: "Writes the secret of the one match (several: --first).",
            full: """
                Every given attribute must match; the caller sees only its own access groups, and \
                only items with sync = 0 unless --synchronizable says otherwise. With --return data \
                (the default) the raw secret bytes of the match go to stdout, nothing added. \
                Several matches without --limit or --first fail (errSecParam, exit 2, saying how \
                many): an ambiguous query never prints one of them silently. --first takes the \
                first on purpose, as kSecMatchLimitOne does. \
                With attributes or all, JSON with Apple's 4-character keys (class, acct, svce, agrp, \
                pdmn, labl, cdat, mdat, …; see docs/CLI.md, "JSON output"): an object with --limit \
                one, an array with all or a number. Fails with errSecItemNotFound (exit 1) when \
                nothing matches and errSecInteractionNotAllowed (exit 4) when a candidate item's \
                class is locked and no passcode is given.
                """,
            example: """
                  latchkey find mail/alice > secret.txt
                  latchkey find --service mail --first
                  latchkey find mail/alice --clip
                  latchkey find --service mail --limit all --return attributes
                """)
    )

    /// kSecMatchLimit: one, all, or a number.
    enum Limit: ExpressibleByArgument, Equatable {
        case one, all, count(Int)

        init?(argument: String) {
            switch argument {
            case "one": self = .one
            case "all": self = .all
            default:
                guard let n = Int(argument), n >= 1 else { return nil }
                self = n == 1 ? .one : .count(n)
            }
        }

        static var defaultCompletionKind: CompletionKind { .list(["one", "all"]) }

        var maximum: Int? {
            switch self {
            case .one: return 1
            case .all: return nil
            case .count(let n): return n
            }
        }
    }

    enum Return: String, ExpressibleByArgument, CaseIterable { case data, attributes, all }

    @Argument(help: ServiceAccount.argumentHelp("The"), completion: Completion.serviceAccount)
    var selector: String?

    @OptionGroup var item: ItemOptions

    @Option(
        help: ArgumentHelp(
            "How many matches (kSecMatchLimit): one, all, or N.",
            discussion: CommandLineForms.details(
                "one prints a JSON object, all or a number a JSON array (even of one item)."),
            valueName: "one|all|N"))
    var limit: Limit?

    @Flag(help: "Take the first of several matches (kSecMatchLimitOne).")
    var first = false

    @Option(
        name: .customLong("return"),
        help: ArgumentHelp(
            CommandLineForms.showsEverything
                ? "What to print: data (the raw secret), attributes (JSON), or all (JSON with the secret in base64 under v_Data)."
                : "data (the secret), attributes or all (JSON).",
            valueName: CommandLineForms.showsEverything ? "data|attributes|all" : "what"))
    var returnKind: Return = .data

    @Flag(
        name: .customLong("case-insensitive"),
        help: ArgumentHelp(
            "Compare strings ignoring case (not the group).",
            discussion: CommandLineForms.details("kSecMatchCaseInsensitive; never the access group."),
            visibility: CommandLineForms.secondary))
    var caseInsensitive = false

    @Flag(help: "Print JSON ({\"v_Data\": base64} for data).")
    var json = false

    @Flag(help: "Copy the secret to the clipboard (cleared in 45 s).")
    var clip = false

    @Flag(
        help: ArgumentHelp(
            "One JSON object a line, as 'import' reads.",
            discussion: CommandLineForms.details(
                "Each match as one object on one line, which 'latchkey import' reads back as is. Needs --return attributes or --return all (all: the secrets too, base64)."
            ), visibility: CommandLineForms.secondary))
    var jsonl = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if jsonl && returnKind == .data {
            throw ValidationError(
                "--jsonl prints item objects: add --return all (with the secrets) or --return attributes")
        }
        if jsonl && json { throw ValidationError("--json and --jsonl are two output forms; give one") }
        if first && limit != nil { throw ValidationError("--first and --limit both say how many; give one") }
        if clip && (returnKind != .data || json || jsonl || (limit ?? .one) != .one) {
            throw ValidationError(
                "--clip copies the secret of one item: it takes no --return, --json, --jsonl or --limit")
        }
        if (limit ?? .one) != .one && returnKind == .data {
            throw ValidationError(
                "--limit \(limit == .all ? "all" : "N") cannot write the raw data of several items; add --return attributes or --return all"
            )
        }
    }

    func run() throws {
        try FindCommand.execute(try request())
    }

    /// What a `find` does, whichever parser produced it (see Commands/FastParser.swift).
    struct Request {
        var query: Query
        var limit: Limit
        /// Neither --limit nor --first: several matches are an error, not the first of them.
        var refuseAmbiguity = false
        var returnKind: Return
        var json: Bool
        var jsonl = false
        /// --clip: the clipboard program and how long the secret stays.
        var clip: (tool: Clipboard.Tool, seconds: Int)?
        var global: GlobalSettings
    }

    func request() throws -> Request {
        Request(
            query: try ServiceAccount.query(
                item.query(command: "find", caseInsensitive: caseInsensitive), selector: selector, command: "find"),
            limit: limit ?? .one,
            refuseAmbiguity: limit == nil && !first, returnKind: returnKind, json: json, jsonl: jsonl,
            clip: clip ? try Clipboard.prepare(command: "find") : nil,
            global: global.settings)
    }

    static func execute(_ r: Request) throws {
        let keychain = try r.global.open(unlock: .whenNeeded, deferAgentOpen: true)
        let items = try r.global.retryingUnlocked(keychain) {
            try keychain.find(
                r.query, limit: r.refuseAmbiguity ? 2 : r.limit.maximum, includeData: r.returnKind != .attributes)
        }
        guard let first = items.first else { throw KeychainError(.itemNotFound, "no item matches the query") }
        if r.refuseAmbiguity && items.count > 1 {
            let count = (try? keychain.find(r.query, includeData: false).count) ?? items.count
            throw UsageError(
                "\(count) items match the query and it does not say which; nothing was printed. Narrow it (--account, --service, --label …), list them with --limit all --return attributes, or take the first with --first",
                command: "find", status: .param)
        }
        if r.jsonl {
            for item in items { Output.data(ItemJSON.line(item, includeData: r.returnKind == .all)) }
            return
        }
        switch (r.returnKind, r.limit) {
        case (.data, _):
            if let clip = r.clip {
                try Clipboard.copy(first.data, with: clip.tool, seconds: clip.seconds)
            } else if r.json {
                try Output.json(encoding: ["v_Data": Data(first.data).base64EncodedString()])
            } else {
                Output.data(first.data)
                // On a terminal the prompt must not run into the secret; in a pipe the bytes
                // stay exactly the stored ones.
                if Terminal.stdoutIsTerminal, first.data.last != UInt8(ascii: "\n") {
                    Output.data([UInt8(ascii: "\n")])
                }
            }
        case (_, .one):
            Output.data(ItemJSON.text([first], includeData: r.returnKind == .all, asArray: false))
        default:
            Output.data(ItemJSON.text(items, includeData: r.returnKind == .all, asArray: true))
        }
    }
}
