import ArgumentParser
import Latchkey

/// `latchkey delete`: SecItemDelete from the command line.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete every item that matches the query, in one transaction.",
        discussion: """
            With only --class, every item of the class is deleted, as SecItemDelete does. \
            stdout stays empty; the count goes to stderr when it is a terminal. Fails with \
            errSecItemNotFound (exit 1) when nothing matches.

            Example:
              latchkey delete --account alice --service mail
            """
    )

    @OptionGroup(title: "Global options") var global: GlobalOptions
    @OptionGroup(title: "Query options") var item: ItemOptions

    func run() throws {
        let keychain = try global.open(unlock: .whenNeeded)
        let count = try global.retryingUnlocked(keychain) { try keychain.delete(item.query) }
        Output.progress("deleted \(count) item(s)")
    }
}
