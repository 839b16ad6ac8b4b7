import ArgumentParser
import Latchkey
import LatchkeyCrypto

/// `latchkey generate`: a random password stored as a new item, never passing through the
/// command line, a pipe or a shell variable.
struct GenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Add a password item whose secret is a new random password (from the OS CSPRNG through OpenSSL).",
        discussion: CommandLineForms.discussion(
            short:
                "Stored at once; nothing printed unless --print. Characters drawn uniformly from --charset (24 alnum: about 143 bits). Attributes and errors as for add.",
            full: """
                The password is made here and stored at once; nothing is printed unless --print is \
                given (then it goes to stdout, with a newline on a terminal only). Each character is \
                drawn uniformly from the chosen set (rejection sampling, no modulo bias): \
                --length 24 of alnum (62 characters) is about 143 bits. Only password classes \
                (genp, the default, and inet). The item's attributes and errors are those of add.
                """,
            example: """
                  latchkey generate --account alice --service mail
                  latchkey generate --class inet --server db.example.com --account app
                  latchkey generate --account app --service db --length 32 --charset ascii
                  latchkey generate --account deploy --service ci --print | xclip
                """)
    )

    enum Charset: String, ExpressibleByArgument, CaseIterable {
        case alnum, ascii, hex, digits

        /// The characters of the set, as bytes.
        var characters: [UInt8] {
            switch self {
            case .alnum: return Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
            case .ascii: return Array(UInt8(0x21)...UInt8(0x7E))  // printable, no space
            case .hex: return Array("0123456789abcdef".utf8)
            case .digits: return Array("0123456789".utf8)
            }
        }
    }

    @OptionGroup var item: PasswordItemOptions

    @Option(help: ArgumentHelp("How many characters (8 to 1024).", valueName: "n"))
    var length = 24

    @Option(
        help: ArgumentHelp(
            "alnum (A-Z, a-z, 0-9; the default), ascii (every printable character but space), hex, or digits.",
            valueName: "set"))
    var charset: Charset = .alnum

    @Flag(help: "Also write the password to stdout.")
    var print = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        guard (8...1024).contains(length) else { throw ValidationError("--length takes 8 to 1024 characters") }
    }

    func run() throws {
        guard [.genericPassword, .internetPassword].contains(item.itemClass) else {
            throw UsageError(
                "generate makes passwords: --class genp (the default) or inet; store other data with add",
                command: "generate")
        }
        let attributes = try item.newItemAttributes(command: "generate")
        var secret = try GenerateCommand.password(length: length, from: charset.characters)
        defer { Crypto.cleanse(&secret) }
        let keychain = try global.open(unlock: .whenNeeded)
        try global.retryingUnlocked(keychain) {
            try keychain.add(item.itemClass, attributes: attributes, data: secret, protection: item.protection)
        }
        if print {
            Output.data(secret)
            if Terminal.stdoutIsTerminal { Output.data([UInt8(ascii: "\n")]) }
        }
    }

    /// `length` characters drawn uniformly from `set`: a random byte is used only when it is
    /// below the largest multiple of the set's size, so every character is equally likely.
    static func password(length: Int, from set: [UInt8]) throws -> [UInt8] {
        let limit = 256 - 256 % set.count
        var out: [UInt8] = []
        out.reserveCapacity(length)
        while out.count < length {
            var random = try Crypto.randomBytes(max(32, (length - out.count) * 2))
            defer { Crypto.cleanse(&random) }
            for b in random where Int(b) < limit && out.count < length {
                out.append(set[Int(b) % set.count])
            }
        }
        return out
    }
}
