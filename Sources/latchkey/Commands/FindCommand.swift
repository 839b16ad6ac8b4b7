import ArgumentParser
import Foundation
import Latchkey
import LatchkeyFormat

/// `latchkey find`: SecItemCopyMatching from the command line.
struct FindCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Find items; write the secret of the match, or its attributes as JSON.",
        discussion: """
            Every given attribute must match. With --return data (the default) the raw secret \
            bytes of the first match go to stdout, nothing added. With attributes or all, a \
            JSON object (an array with --limit all) with Apple's 4-character keys (class, acct, \
            svce, agrp, pdmn, labl, cdat, mdat, …), dates in ISO 8601 UTC, data values in \
            base64, and with all the secret in base64 under v_Data. Fails with \
            errSecItemNotFound (exit 1) when nothing matches, and errSecInteractionNotAllowed \
            (exit 4) when a candidate item's class is locked.

            Example:
              latchkey find --account alice --service mail > secret.txt
              latchkey find --service mail --limit all --return attributes
            """
    )

    enum Limit: String, ExpressibleByArgument, CaseIterable { case one, all }
    enum Return: String, ExpressibleByArgument, CaseIterable { case data, attributes, all }

    @OptionGroup(title: "Global options") var global: GlobalOptions
    @OptionGroup(title: "Query options") var item: ItemOptions

    @Option(help: "How many matches: one (the first) or all.")
    var limit: Limit = .one

    @Option(name: .customLong("return"), help: "What to print: data (the raw secret), attributes (JSON), or all (JSON with v_Data).")
    var returnKind: Return = .data

    @Flag(help: "Print JSON (with --return data: an object holding v_Data in base64).")
    var json = false

    func validate() throws {
        if limit == .all && returnKind == .data {
            throw ValidationError("--limit all cannot return raw data of several items; use --return attributes or --return all")
        }
    }

    func run() throws {
        let keychain = try global.open(unlock: .whenNeeded)
        let items = try global.retryingUnlocked(keychain) {
            try keychain.find(item.query, limit: limit == .one ? 1 : nil)
        }
        guard let first = items.first else { throw KeychainError(.itemNotFound, "no item matches the query") }
        switch (returnKind, limit) {
        case (.data, _):
            if json {
                try Output.json(["v_Data": Data(first.data).base64EncodedString()])
            } else {
                Output.data(first.data)
            }
        case (_, .one):
            try Output.json(ItemJSON.object(first, includeData: returnKind == .all))
        case (_, .all):
            try Output.json(items.map { ItemJSON.object($0, includeData: returnKind == .all) })
        }
    }
}
