import ArgumentParser
import Foundation
import Latchkey

/// `latchkey update`: SecItemUpdate from the command line.
struct UpdateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Change every item that matches the query, in one transaction.",
        discussion: """
            The query options select the items; each --set-X option gives a new value, and \
            --set-data reads the new secret from stdin (or --data-file). The keychain moves \
            mdat; cdat stays. Fails with errSecItemNotFound (exit 1) when nothing matches and \
            errSecDuplicateItem (exit 3) when the change would give two items the same unique \
            key; then nothing changes.

            Example:
              latchkey update --account alice --service mail --set-label 'Work mail'
              printf 'n3w' | latchkey update --account alice --service mail --set-data
            """
    )

    @OptionGroup(title: "Global options") var global: GlobalOptions
    @OptionGroup(title: "Query options") var item: ItemOptions
    @OptionGroup(title: "New values") var set: SetOptions

    @Flag(name: .customLong("set-data"), help: "Replace the secret with the bytes read from stdin (or --data-file).")
    var setData = false

    @Option(name: .customLong("data-file"), help: ArgumentHelp("With --set-data, read the new secret from this file.", valueName: "path"))
    var dataFile: String?

    func validate() throws {
        if set.attributes.isEmpty && set.protection == nil && !setData {
            throw ValidationError("nothing to change; give at least one --set-X option or --set-data")
        }
        if dataFile != nil && !setData {
            throw ValidationError("--data-file needs --set-data")
        }
    }

    func run() throws {
        let data = setData ? try AddCommand.readSecretData(file: dataFile) : nil
        let keychain = try global.open(unlock: .whenNeeded)
        let count = try global.retryingUnlocked(keychain) {
            try keychain.update(item.query, attributes: set.attributes, data: data, protection: set.protection)
        }
        Output.progress("updated \(count) item(s)")
    }
}
