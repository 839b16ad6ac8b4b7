import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat

/// `latchkey add`: SecItemAdd from the command line.
struct AddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add an item; the secret is read from stdin (all bytes, as is) or --data-file.",
        discussion: CommandLineForms.discussion(
            short:
                "The secret comes from a pipe (one trailing newline dropped), --data-file (as is), or is asked twice on a terminal; never from the command line. Exit 3 when the item exists.",
            full: """
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
                """,
            example: """
                  printf 's3cret' | latchkey add --account alice --service mail --label 'Mail'
                  latchkey add --class inet --server example.com --account bob --data-file pw
                  latchkey add --class cert --data-file server.der
                  head -c 32 /dev/urandom | latchkey add --class keys --key-class symmetric
                """)
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

    @OptionGroup var input: SecretInputOptions

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        try AddCommand.execute(try request())
    }

    func request() throws -> Request {
        Request(
            itemClass: item.itemClass, attributes: try item.newItemAttributes(command: "add"),
            protection: item.protection,
            dataFile: dataFile, requireUserPresence: requireUserPresence, input: input.rules,
            global: global.settings)
    }

    /// What an `add` does, whichever parser produced it (see Commands/FastParser.swift).
    struct Request {
        var itemClass: ItemClass
        var attributes: [String: AttributeValue]
        var protection: ProtectionClass?
        var dataFile: String?
        var requireUserPresence: Bool
        var input = SecretInputRules()
        var global: GlobalSettings
    }

    static func execute(_ r: Request) throws {
        var data = try readSecretData(file: r.dataFile, command: "add", r.input)
        defer { Crypto.cleanse(&data) }
        let keychain = try r.global.open(unlock: .whenNeeded, deferAgentOpen: true)
        try r.global.retryingUnlocked(keychain) {
            try keychain.add(
                r.itemClass, attributes: r.attributes, data: data,
                protection: r.protection, requiresUserPresence: r.requireUserPresence)
        }
    }

    /// The secret: all bytes of `file`, or of stdin when nil, as `rules` say (docs/CLI.md,
    /// "Secrets on stdin"): from a pipe, one trailing newline dropped unless `keepNewline`; on a
    /// terminal, asked twice without echo; empty refused unless `allowEmpty`.
    /// - Throws: errSecIO for an unreadable file; a usage error when stdin is closed, the two
    ///   entries differ, or the secret is empty.
    static func readSecretData(file: String?, command: String, _ rules: SecretInputRules) throws -> [UInt8] {
        var data: [UInt8]
        var fromPipe = false
        if let file {
            data = try InputFile.contents(file, what: "data file")
        } else {
            try Terminal.requireStdin(
                "\(command) reads the secret from stdin, but stdin is closed; pipe the secret in or give --data-file PATH",
                command: command)
            if Terminal.stdinIsTerminal, var first = try Terminal.readSecret(prompt: "Secret (not echoed): ") {
                // A typo in a secret no one sees is found only when it fails: asked twice.
                var again = try Terminal.readSecret(prompt: "The same again, to confirm: ") ?? []
                defer { Crypto.cleanse(&again) }
                guard Crypto.constantTimeEqual(first, again) else {
                    Crypto.cleanse(&first)
                    throw UsageError(
                        "the two entries of the secret differ; nothing was stored. Run the command again",
                        command: command, status: .param)
                }
                data = first
            } else {
                data = try InputFile.standardInput(what: "secret", zeroing: true)
                fromPipe = true
            }
        }
        if (fromPipe && !rules.keepNewline) || rules.stripNewline, data.last == UInt8(ascii: "\n") {
            data.removeLast()
            if data.last == UInt8(ascii: "\r") { data.removeLast() }
        }
        guard !data.isEmpty || rules.allowEmpty else {
            throw UsageError(
                "the secret is empty; nothing was stored. Pipe the secret in (or give --data-file), or give --allow-empty to store an empty one",
                command: command, status: .param)
        }
        return data
    }
}

/// How a secret read by `add` or `update --set-data` is taken (docs/CLI.md).
struct SecretInputRules {
    var keepNewline = false
    var stripNewline = false
    var allowEmpty = false
}

struct SecretInputOptions: ParsableArguments {
    @Flag(
        name: .customLong("keep-newline"),
        help: "Keep a piped secret's trailing newline.")
    var keepNewline = false

    @Flag(
        name: .customLong("strip-newline"),
        help: ArgumentHelp("Drop one trailing newline from a --data-file secret too.", visibility: .hidden))
    var stripNewline = false

    @Flag(name: .customLong("allow-empty"), help: "Store an empty secret instead of refusing it.")
    var allowEmpty = false

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if keepNewline && stripNewline { throw ValidationError("--keep-newline and --strip-newline contradict") }
    }

    var rules: SecretInputRules {
        SecretInputRules(keepNewline: keepNewline, stripNewline: stripNewline, allowEmpty: allowEmpty)
    }
}
