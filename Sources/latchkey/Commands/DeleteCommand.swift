import ArgumentParser
import Latchkey

/// `latchkey delete`: SecItemDelete from the command line.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete every item that matches the query, in one transaction.",
        discussion: """
            With only --class, every item of the class that the caller can see is deleted, as \
            SecItemDelete does. stdout stays empty; the count goes to stderr when it is a \
            terminal. Fails with errSecItemNotFound (exit 1) when nothing matches.

            Example:
              latchkey delete --account alice --service mail
              latchkey delete --class keys --application-tag com.example.aes
            """
    )

    @OptionGroup(title: "Class and common attributes") var common: CommonAttributes
    @OptionGroup(title: "Passwords: genp and inet") var password: PasswordAttributes
    @OptionGroup(title: "Generic passwords: genp (the default class)") var generic: GenericPasswordAttributes
    @OptionGroup(title: "Internet passwords: inet") var internet: InternetPasswordAttributes
    @OptionGroup(title: "Certificates: cert (derived from the certificate; for queries)") var certificate: CertificateAttributes
    @OptionGroup(title: "Keys: keys") var key: KeyAttributes
    var item: ItemOptions {
        ItemOptions(common: common, password: password, generic: generic, internet: internet, certificate: certificate, key: key)
    }
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        try DeleteCommand.execute(try request())
    }

    func request() throws -> Request {
        Request(query: try item.query(command: "delete"), global: global)
    }

    /// What a `delete` does, whichever parser produced it (see Commands/FastParser.swift).
    struct Request {
        var query: Query
        var global: GlobalOptions
    }

    static func execute(_ r: Request) throws {
        let keychain = try r.global.open(unlock: .whenNeeded)
        let count = try r.global.retryingUnlocked(keychain) { try keychain.delete(r.query) }
        Output.progress("deleted \(count) item(s)")
    }
}
