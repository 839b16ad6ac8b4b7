import ArgumentParser
import Foundation
import Latchkey
import LatchkeyFormat

/// `latchkey add`: SecItemAdd from the command line.
struct AddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add an item; the secret is read from stdin (all bytes, as is) or --data-file.",
        discussion: """
            When stdin is a terminal the secret is asked as one line without echo. Prints \
            nothing on success. Without --access-group the item goes to the --app-id \
            access group; without --accessible it is protected WhenUnlocked (ak). The keychain \
            sets cdat and mdat. Fails with errSecDuplicateItem (exit 3) when an item with the \
            same unique key (genp: account, service, access group) exists.

            Example:
              printf 's3cret' | latchkey add --account alice --service mail --label 'Mail'
              latchkey add --class inet --server example.com --protocol htps --account bob --data-file pw.txt
            """
    )

    @OptionGroup(title: "Global options") var global: GlobalOptions
    @OptionGroup(title: "Item options") var item: ItemOptions

    @Option(name: .customLong("data-file"), help: ArgumentHelp("Read the secret from this file instead of stdin.", valueName: "path"))
    var dataFile: String?

    func run() throws {
        let data = try AddCommand.readSecretData(file: dataFile)
        let attributes = item.attributes
        let keychain = try global.open(unlock: .whenNeeded)
        try global.retryingUnlocked(keychain) {
            try keychain.add(item.itemClass.itemClass, attributes: attributes, data: data,
                             protection: item.protection)
        }
    }

    /// All bytes of `file`, or of stdin when nil.
    static func readSecretData(file: String?) throws -> [UInt8] {
        if let file {
            guard let contents = FileManager.default.contents(atPath: file) else {
                throw KeychainError(.io, "cannot read the data file \(file); check the path and its permissions")
            }
            return [UInt8](contents)
        }
        // On a terminal, ask for one line without echo instead of echoing the secret.
        if Terminal.stdinIsTerminal, let line = try Terminal.readSecret(prompt: "Secret (not echoed): ") { return line }
        return [UInt8](FileHandle.standardInput.readDataToEndOfFile())
    }
}
