import ArgumentParser
import Latchkey
import LatchkeyFormat

/// `latchkey list` (`ls`): the passwords by service and account, never a secret.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the passwords by service and account (never a secret); 'ls' for short.",
        discussion: """
            Generic and internet passwords the caller can reach (its access groups; \
            synchronizable or not), sorted by service (an internet password's \
            protocol://server:port/path) and account, each service named once. With SERVICE, \
            only the items of that service (or server), found through the keychain's index. \
            Keys and certificates: 'latchkey dump'. When the keychain is locked and no \
            passcode is at hand, the items of the locked classes are left out and stderr says \
            how many. Exit 1 when SERVICE has no item.

            Example:
              latchkey list
              latchkey ls github.com
              latchkey list --json | jq -r '.[].svce'
            """,
        aliases: ["ls"]
    )

    @Argument(
        help: ArgumentHelp(
            "Only the passwords of this service, or internet passwords of this server.", valueName: "service"),
        completion: Completion.service)
    var service: String?

    @Flag(help: "Print a JSON array of the items (Apple's 4-character keys, as dump --json; no v_Data).")
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let settings = global.settings
        let keychain = try settings.open(unlock: .whenNeeded, deferAgentOpen: true)
        let queries = PasswordListing.classes.map { c -> Query in
            var attributes: [String: AttributeValue] = [:]
            if let service { attributes[c == .internetPassword ? "srvr" : "svce"] = .string(service) }
            return Query(c, attributes, synchronizable: .any)
        }
        let items = try PasswordListing.items(keychain, settings, queries)
        if items.isEmpty, let service {
            throw KeychainError(.itemNotFound, "no password has the service or server '\(service)'")
        }
        PasswordListing.print(
            items, json: json, empty: "no passwords that this caller can reach in \(settings.keychainPath)")
    }
}

/// `latchkey search TEXT`: the passwords whose label, service, account, server or description
/// contains TEXT, ignoring case.
struct SearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "List the passwords whose label, service, account, server or description contains TEXT.",
        discussion: """
            Case-insensitive substring match over generic and internet passwords the caller \
            can reach, shown as 'list' shows them; never a secret. Every password's \
            attributes are decrypted to be compared (through an agent, it keeps them between \
            searches). Exit 1 when nothing matches.

            Example:
              latchkey search git
              latchkey search 'work mail' --json
            """
    )

    @Argument(help: ArgumentHelp("The text to look for.", valueName: "text"))
    var text: String

    @Flag(help: "Print a JSON array of the matches (Apple's 4-character keys; no v_Data).")
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if text.isEmpty { throw ValidationError("give the text to search for; 'latchkey list' lists everything") }
    }

    func run() throws {
        let settings = global.settings
        let keychain = try settings.open(unlock: .whenNeeded, deferAgentOpen: true)
        let queries = PasswordListing.classes.map { Query($0, synchronizable: .any) }
        let found = try PasswordListing.items(keychain, settings, queries).filter { SearchCommand.matches($0, text) }
        guard !found.isEmpty else {
            throw KeychainError(
                .itemNotFound, "no password's label, service, account, server or description contains '\(text)'")
        }
        PasswordListing.print(found, json: json, empty: "")
    }

    /// The attributes `search` looks in.
    static let searched = ["labl", "svce", "acct", "srvr", "desc"]

    /// Whether one of the searched attributes contains `text`, ignoring case.
    static func matches(_ item: Item, _ text: String) -> Bool {
        let needle = text.lowercased()
        return searched.contains { code in
            item.attributes[code].map { DumpCommand.text($0).lowercased().contains(needle) } ?? false
        }
    }
}

/// What `list` and `search` read and print.
enum PasswordListing {
    static let classes: [ItemClass] = [.genericPassword, .internetPassword]

    /// The items of `queries`, attributes only (no secret is read or sent). When a class they
    /// reach is locked and no passcode is at hand (none given, no terminal to ask on), the items
    /// of the available protection classes, with a note on stderr of how many are left out.
    static func items(_ keychain: Keychain, _ settings: GlobalSettings, _ queries: [Query]) throws -> [Item] {
        do {
            return try settings.retryingUnlocked(keychain) {
                try queries.flatMap { try keychain.find($0, includeData: false) }
            }
        } catch let error as KeychainError where error.status == .interactionNotAllowed {
            let (available, locked, count) = try DumpCommand.lockedClasses(keychain)
            Output.note(
                "the keychain is locked: \(count) item(s) protected \(locked.map(\.code).joined(separator: ", ")) (counted across every class and access group) are not shown; give the passcode (LATCHKEY_PASSCODE, --passcode-file, or 'latchkey unlock') to see them"
            )
            var found: [Item] = []
            for query in queries {
                for pc in available {
                    var q = query
                    q.protection = pc
                    found += try keychain.find(q, includeData: false)
                }
            }
            return found
        }
    }

    /// `items` sorted by service and account: a table whose SERVICE is named once per service,
    /// or (`json`) a JSON array of item objects. `empty` goes to stderr when there is nothing.
    static func print(_ items: [Item], json: Bool, empty: String) {
        // Sort keys made once per item, not once per comparison.
        typealias Row = (service: String, account: String, label: String, item: Item, key: (String, String))
        let rows = items.map { item -> Row in
            let r = DumpCommand.row(item)
            return (r[2], r[1], r[3], item, (r[2].lowercased(), r[1].lowercased()))
        }.sorted {
            ($0.key.0, $0.service, $0.key.1, $0.account, $0.item.itemClass.rawValue)
                < ($1.key.0, $1.service, $1.key.1, $1.account, $1.item.itemClass.rawValue)
        }
        if json {
            Output.data(ItemJSON.text(rows.map(\.item), includeData: false, asArray: true))
            return
        }
        guard !rows.isEmpty else {
            if !empty.isEmpty { Output.note(empty) }
            return
        }
        var table = Table(["SERVICE", "ACCOUNT", "LABEL", "CLASS"])
        var previous: String?
        for row in rows {
            table.append([
                row.service == previous ? "" : row.service, row.account, row.label, row.item.itemClass.rawValue
            ])
            previous = row.service
        }
        Output.table(table)
    }
}
