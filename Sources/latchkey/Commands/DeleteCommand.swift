#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import ArgumentParser
import Latchkey

/// `latchkey delete`: SecItemDelete from the command line, with the guards a shell needs.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete every item that matches the query, in one transaction.",
        discussion: CommandLineForms.discussion(
            short:
                "A query without attributes needs --all. Several matches are asked about on a terminal, else refused unless --yes; --dry-run lists them.",
            full: """
                A query without any attribute (only --class, or nothing) would delete every item \
                of the class that the caller can see, as SecItemDelete does: it is refused unless \
                --all says so. When more than one item matches, delete asks first if stdin and \
                stderr are a terminal (showing class, account, service, label and group of each; \
                never a secret), unless --yes; without a terminal it refuses (errSecParam, exit 2, \
                saying how many match) unless --yes or --all. --dry-run lists the matches on \
                stdout and deletes nothing. stdout stays empty otherwise; the count goes to stderr \
                when it is a terminal. Fails with errSecItemNotFound (exit 1) when nothing matches, \
                and errSecUserCanceled (exit 4) when the question is answered no.
                """,
            example: """
                  latchkey delete --account alice --service mail
                  latchkey delete --service mail --dry-run
                  latchkey delete --service old-mail --yes
                  latchkey delete --class keys --application-tag com.example.aes
                  latchkey delete --all --yes
                """)
    )

    @Argument(help: ServiceAccount.argumentHelp("The"), completion: Completion.serviceAccount)
    var selector: String?

    @OptionGroup var item: ItemOptions

    @Flag(
        help: ArgumentHelp(
            "Allow a query without attributes (all of the class).",
            discussion: CommandLineForms.details(
                "Deletes every item of the class that the caller can see. Also lets several matches be deleted without a terminal to confirm on (a terminal still asks, unless --yes)."
            )))
    var all = false

    @Flag(help: "Delete every match without asking.")
    var yes = false

    @Flag(
        name: .customLong("dry-run"),
        help: "List the matches (never a secret); delete nothing.")
    var dryRun = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        try DeleteCommand.execute(try request())
    }

    func request() throws -> Request {
        Request(
            query: try ServiceAccount.query(item.query(command: "delete"), selector: selector, command: "delete"),
            all: all, yes: yes, dryRun: dryRun, global: global.settings)
    }

    /// What a `delete` does, whichever parser produced it (see Commands/FastParser.swift).
    struct Request {
        var query: Query
        var all = false
        var yes = false
        var dryRun = false
        var global: GlobalSettings
    }

    /// At most this many matches are listed before the question.
    static let listedBeforeQuestion = 20

    /// Several matches of a delete or an update: listed and asked about on a terminal; without
    /// one, refused (errSecParam) unless `allowed`. - Throws: errSecUserCanceled when not confirmed.
    static func confirmSeveral(_ matches: [Item], command: String, verb: String, done: String, allowed: Bool) throws {
        if Terminal.stdinIsTerminal && Terminal.stderrIsTerminal {
            Output.status("\(matches.count) items match:")
            let shown = DumpCommand.table(Array(matches.prefix(listedBeforeQuestion)))
            for line in shown.render(width: Terminal.columns(STDERR_FILENO)) { Output.status("  " + line) }
            if matches.count > listedBeforeQuestion {
                Output.status("  … and \(matches.count - listedBeforeQuestion) more")
            }
            guard Terminal.confirm(prompt: "\(verb) these \(matches.count) items? [y/N] ") else {
                throw KeychainError(.userCanceled, "not confirmed; nothing was \(done)")
            }
        } else if !allowed {
            throw UsageError(
                "\(matches.count) items match the query and there is no terminal to confirm on (stdin and stderr are not both one); nothing was \(done). Add --yes to \(verb.lowercased()) all \(matches.count), narrow the query, or list them with --dry-run",
                command: command, status: .param)
        }
    }

    static func execute(_ r: Request) throws {
        let className = AttributeOption.classNames[r.query.itemClass] ?? r.query.itemClass.rawValue
        if r.query.attributes.isEmpty, r.query.protection == nil, !r.all {
            throw UsageError(
                "a query without attributes would delete every item of class \(className) that the caller can see; nothing was deleted. Add --all if that is what you mean (--dry-run lists them first), or select items with attributes such as --account and --service",
                command: "delete", status: .param)
        }
        let keychain = try r.global.open(unlock: .whenNeeded, deferAgentOpen: true)
        if r.yes && !r.dryRun {
            let count = try r.global.retryingUnlocked(keychain) { try keychain.delete(r.query) }
            Output.progress("deleted \(count) item(s)")
            return
        }
        let matches = try r.global.retryingUnlocked(keychain) { try keychain.find(r.query, includeData: false) }
        guard !matches.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
        if r.dryRun {
            Output.table(DumpCommand.table(matches))
            Output.status("\(matches.count) item(s) would be deleted; nothing was deleted (--dry-run)")
            return
        }
        if matches.count > 1 && !r.yes {
            try confirmSeveral(matches, command: "delete", verb: "Delete", done: "deleted", allowed: r.all)
        }
        let count = try r.global.retryingUnlocked(keychain) { try keychain.delete(r.query) }
        if count != matches.count {
            Output.note(
                "deleted \(count) item(s) where \(matches.count) matched a moment before: the keychain changed in between"
            )
        } else {
            Output.progress("deleted \(count) item(s)")
        }
    }
}
