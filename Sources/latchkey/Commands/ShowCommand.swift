import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `latchkey show`: one item's attributes for a person; the secret only with --print.
///
/// pass prints the secret with `pass show`; 1Password's `op item get` shows the fields and
/// conceals the password unless asked. `show` is for reading an item on a screen, where a
/// secret stays in the scrollback, so it takes op's side: attributes, and the secret only with
/// --print (as `generate --print`). `find` stays what writes the secret for scripts.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one item's attributes (service, account, label, dates, ...); the secret only with --print.",
        discussion: CommandLineForms.discussion(
            short:
                "Selects as find does; several matches fail unless --first. The secret only with --print; 'latchkey find' writes it alone, for scripts.",
            full: """
                Selects as find does (SERVICE/ACCOUNT, or the attribute options; several matches \
                fail unless --first). Never prints the secret unless --print; 'latchkey find' \
                writes the secret alone, for scripts. --json prints find's attribute object \
                (with v_Data, the secret in base64, only with --print).
                """,
            example: """
                  latchkey show mail/alice
                  latchkey show github.com --first --print
                  latchkey show --class inet --server example.com --json
                """)
    )

    @Argument(help: ServiceAccount.argumentHelp("The"), completion: Completion.serviceAccount)
    var selector: String?

    @OptionGroup var item: ItemOptions

    @Flag(help: "Print the secret too.")
    var print = false

    @Flag(help: "Show the first of several matches.")
    var first = false

    @Flag(help: "Print find's JSON object (v_Data with --print).")
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let query = try ServiceAccount.query(item.query(command: "show"), selector: selector, command: "show")
        let settings = global.settings
        let keychain = try settings.open(unlock: .whenNeeded, deferAgentOpen: true)
        let items = try settings.retryingUnlocked(keychain) {
            try keychain.find(query, limit: first ? 1 : 2, includeData: print)
        }
        guard let match = items.first else { throw KeychainError(.itemNotFound, "no item matches the query") }
        if items.count > 1 {
            let count = (try? keychain.find(query, includeData: false).count) ?? items.count
            throw UsageError(
                "\(count) items match and the query does not say which; nothing was shown. Narrow it (SERVICE/ACCOUNT, --account, --label ...), see them with 'latchkey list' or 'latchkey search', or show the first with --first",
                command: "show", status: .param)
        }
        if json {
            Output.data(ItemJSON.text([match], includeData: print, asArray: false))
            return
        }
        let rows = ShowCommand.rows(match, secret: print)
        let width = rows.map(\.0.count).max() ?? 0
        for (name, value) in rows {
            Output.line(name + String(repeating: " ", count: width - name.count + 2) + TerminalText.quoted(value))
        }
    }

    /// The item as (name, value) lines: the attributes the CLI has options for, by their
    /// option's name (service, account, label first), then class, protection, sync, dates.
    static func rows(_ item: Item, secret: Bool) -> [(String, String)] {
        let a = item.attributes
        let first = ["service", "server", "account", "label", "description", "comment"]
        let options = AttributeOption.all.filter { $0.classes.contains(item.itemClass) && a[$0.code] != nil }
        let ordered =
            first.compactMap { f in options.first { $0.flag == f } } + options.filter { !first.contains($0.flag) }
        var out = ordered.map { ($0.flag, DumpCommand.text(a[$0.code]!)) }
        let className = ClassArgument.allValueDescriptions[item.itemClass.rawValue] ?? ""
        out.append(("class", "\(item.itemClass.rawValue) (\(className))"))
        out.append(("protection", "\(item.protection.code) (\(item.protection.longName))"))
        if a["sync"] == .integer(1) { out.append(("synchronizable", "yes")) }
        if item.requiresUserPresence { out.append(("user presence", "required to read the secret")) }
        for (code, name) in [("cdat", "created"), ("mdat", "modified")] {
            if case .date(let t)? = a[code] { out.append((name, DumpCommand.minutes(ISODate.format(t)) + " UTC")) }
        }
        if secret {
            if let text = String(validating: item.data, as: UTF8.self) {
                out.append(("secret", text))
            } else {
                out.append(
                    ("secret", "\(item.data.count) bytes, not UTF-8 text: 'latchkey find' writes them as they are"))
            }
        }
        return out
    }
}
