import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyFormat

/// `latchkey add`: SecItemAdd from the command line.
struct AddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add an item; the secret is read from stdin (all bytes, as is) or --data-file.",
        discussion: """
            Prints nothing on success. When stdin is a terminal the secret is asked as one line \
            without echo; a secret is never taken from the command line. For --class cert the \
            data is one DER certificate, and subject, issuer, serial number and the other \
            certificate attributes are derived from it; for --class keys it is the key (a DER \
            private or public key, or the raw bytes of a symmetric key). Without \
            --access-group the item goes to the caller's first access group (--entitlements, \
            else --app-id); without --accessible it is protected WhenUnlocked (ak), \
            certificates Always (dk). The keychain sets cdat and mdat. Fails with \
            errSecDuplicateItem (exit 3) when an item with the same unique key exists (genp: \
            account, service, access group), errSecNoAccessForItem (exit 6) for a group the \
            caller may not use, and errSecInteractionNotAllowed (exit 4) when the protection \
            class is locked and no passcode is given.

            Example:
              printf 's3cret' | latchkey add --account alice --service mail --label 'Mail'
              latchkey add --class inet --server example.com --account bob --data-file pw
              latchkey add --class cert --data-file server.der
              head -c 32 /dev/urandom | latchkey add --class keys --key-class symmetric
            """
    )

    @OptionGroup var item: ItemOptions

    @Option(
        name: .customLong("data-file"),
        help: ArgumentHelp("Read the secret from this file instead of stdin.", valueName: "path"),
        completion: .file())
    var dataFile: String?

    @Flag(
        name: .customLong("require-user-presence"),
        help: ArgumentHelp(
            "Ask for the passcode again whenever the item's data is read (kSecAccessControlUserPresence).",
            discussion: "Needs a keychain with a passcode (errSecNotAvailable, exit 4, otherwise)."))
    var requireUserPresence = false

    @Flag(
        name: .customLong("strip-newline"),
        help: ArgumentHelp(
            "Drop one trailing newline (LF or CRLF) from the secret, as `echo pw |` adds one.",
            discussion:
                "Without it the secret is stored exactly as given, and a secret from a pipe that ends in a newline is pointed out on stderr when stderr is a terminal."
        ))
    var stripNewline = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        try AddCommand.execute(try request())
    }

    func request() throws -> Request {
        Request(
            itemClass: item.itemClass, attributes: try item.newItemAttributes(command: "add"),
            protection: item.protection,
            dataFile: dataFile, requireUserPresence: requireUserPresence, stripNewline: stripNewline,
            global: global.settings)
    }

    /// What an `add` does, whichever parser produced it (see Commands/FastParser.swift).
    struct Request {
        var itemClass: ItemClass
        var attributes: [String: AttributeValue]
        var protection: ProtectionClass?
        var dataFile: String?
        var requireUserPresence: Bool
        var stripNewline = false
        var global: GlobalSettings
    }

    static func execute(_ r: Request) throws {
        var data = try readSecretData(file: r.dataFile, command: "add")
        if data.last == UInt8(ascii: "\n") {
            if r.stripNewline {
                data.removeLast()
                if data.last == UInt8(ascii: "\r") { data.removeLast() }
            } else if r.dataFile == nil, !Terminal.stdinIsTerminal {
                Output.progress(
                    "latchkey: note: the secret ends in a newline, which is stored as part of it; give --strip-newline to drop it (or use printf instead of echo)"
                )
            }
        }
        let keychain = try r.global.open(unlock: .whenNeeded, deferAgentOpen: true)
        try r.global.retryingUnlocked(keychain) {
            try keychain.add(
                r.itemClass, attributes: r.attributes, data: data,
                protection: r.protection, requiresUserPresence: r.requireUserPresence)
        }
    }

    /// All bytes of `file`, or of stdin when nil.
    /// - Throws: errSecIO for an unreadable file; a usage error when stdin is closed.
    static func readSecretData(file: String?, command: String) throws -> [UInt8] {
        if let file { return try InputFile.contents(file, what: "data file") }
        try Terminal.requireStdin(
            "\(command) reads the secret from stdin, but stdin is closed; pipe the secret in or give --data-file PATH",
            command: command)
        // On a terminal, ask for one line without echo instead of echoing the secret.
        if Terminal.stdinIsTerminal, let line = try Terminal.readSecret(prompt: "Secret (not echoed): ") { return line }
        return try InputFile.standardInput(what: "secret", zeroing: true)
    }
}
