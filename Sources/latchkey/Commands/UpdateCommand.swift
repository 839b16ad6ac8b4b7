import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey

/// `latchkey update`: SecItemUpdate from the command line.
struct UpdateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Change every item that matches the query, in one transaction.",
        discussion: CommandLineForms.discussion(
            short: "Several matches: asked on a terminal, else refused unless --yes.",
            full: """
                Several matches are asked about on a terminal, else refused unless --yes.
                """,
            example: """
                  latchkey update --account alice --service mail --set-label 'Work mail'
                  printf 'n3w' | latchkey update --account alice --service mail --set-data
                """)
    )

    @OptionGroup var item: ItemOptions
    @OptionGroup var newValues: NewValueOptions

    @Flag(name: .customLong("set-data"), help: "Replace the secret (from stdin, or --data-file).")
    var setData = false

    @Option(
        name: .customLong("data-file"),
        help: ArgumentHelp("With --set-data, read the new secret from this file.", valueName: "path"),
        completion: .file())
    var dataFile: String?

    @OptionGroup var input: SecretInputOptions

    @Flag(help: "Change every match without asking.")
    var yes = false

    @Flag(name: .customLong("dry-run"), help: "List the matches (never a secret); change nothing.")
    var dryRun = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if newValues.isEmpty && !setData {
            throw ValidationError("nothing to change; give at least one --set-X option or --set-data")
        }
        if dataFile != nil && !setData {
            throw ValidationError("--data-file needs --set-data")
        }
    }

    func run() throws {
        try UpdateCommand.execute(try request())
    }

    /// What an `update` does, whichever parser produced it (see Commands/FastParser.swift).
    struct Request {
        var query: Query
        var newValues: [String: AttributeValue]
        var protection: ProtectionClass?
        var setData: Bool
        var dataFile: String?
        var yes = false
        var dryRun = false
        var input = SecretInputRules()
        var global: GlobalSettings
    }

    func request() throws -> Request {
        Request(
            query: try item.query(command: "update"),
            newValues: try newValues.attributes(for: item.itemClass, command: "update"),
            protection: newValues.protection, setData: setData, dataFile: dataFile, yes: yes, dryRun: dryRun,
            input: input.rules, global: global.settings)
    }

    static func execute(_ r: Request) throws {
        let keychain = try r.global.open(unlock: .whenNeeded, deferAgentOpen: true)
        if !r.yes || r.dryRun {
            // Several matches are never changed silently (as delete): listed, asked, or refused.
            let matches = try r.global.retryingUnlocked(keychain) { try keychain.find(r.query, includeData: false) }
            guard !matches.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            if r.dryRun {
                Output.table(DumpCommand.table(matches))
                Output.status("\(matches.count) item(s) would be changed; nothing was changed (--dry-run)")
                return
            }
            if matches.count > 1 {
                try DeleteCommand.confirmSeveral(
                    matches, command: "update", verb: "Change", done: "changed", allowed: false)
            }
        }
        let data = r.setData ? try AddCommand.readSecretData(file: r.dataFile, command: "update", r.input) : nil
        let count = try r.global.retryingUnlocked(keychain) {
            try keychain.update(r.query, attributes: r.newValues, data: data, protection: r.protection)
        }
        Output.progress("updated \(count) item(s)")
    }
}
