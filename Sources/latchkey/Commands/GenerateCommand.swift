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
                "Stored at once; printed only with --print. Uniform over --charset (24 alnum: 143 bits) or --words. Attributes and errors as for add.",
            full: """
                The password is made here and stored at once; nothing is printed unless --print is \
                given (then it goes to stdout, with a newline on a terminal only), and --clip puts \
                it on the clipboard instead. Each character is drawn uniformly from the chosen set \
                (rejection sampling, no modulo bias): --length 24 of alnum (62 characters) is about \
                143 bits. --words N makes a passphrase of N words from a built-in list of 2048 \
                (11 bits a word: 6 words are 66 bits). With --in-place the options select one \
                existing item, as find's do, and its secret is replaced through an update (the \
                agent and sync see an update); without it an existing item is errSecDuplicateItem \
                (exit 3). Only password classes (genp, the default, and inet). The item's \
                attributes and errors are those of add.
                """,
            example: """
                  latchkey generate --account alice --service mail
                  latchkey generate --class inet --server db.example.com --charset ascii
                  latchkey generate --account alice --service mail --in-place --clip
                  latchkey generate --account deploy --service ci --words 6 --print
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

    @Option(help: ArgumentHelp("How many characters (8 to 1024; default 24).", valueName: "n"))
    var length: Int?

    @Option(
        help: ArgumentHelp(
            "alnum (the default), ascii (printable, no space), hex or digits.",
            valueName: "set"))
    var charset: Charset?

    @Option(
        help: ArgumentHelp(
            "N words (3 to 64) from a list of 2048 (11 bits each).",
            valueName: "n"))
    var words: Int?

    @Option(
        help: ArgumentHelp(
            "With --words, what goes between the words (default -).", valueName: "text",
            visibility: CommandLineForms.secondary))
    var separator: String?

    @Flag(
        name: .customLong("in-place"),
        help: "Replace the secret of the one matching item.")
    var inPlace = false

    @Flag(help: "Also write the password to stdout.")
    var print = false

    @Flag(help: "Copy the password to the clipboard (cleared in 45 s).")
    var clip = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if let length, !(8...1024).contains(length) { throw ValidationError("--length takes 8 to 1024 characters") }
        if let words {
            guard (3...64).contains(words) else { throw ValidationError("--words takes 3 to 64 words") }
            if length != nil || charset != nil {
                throw ValidationError("--words makes a passphrase; --length and --charset make a password; give one")
            }
        }
        if let separator {
            guard words != nil else { throw ValidationError("--separator goes with --words") }
            guard !separator.isEmpty, separator.utf8.count <= 16,
                separator.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
            else {
                throw ValidationError("--separator takes 1 to 16 bytes of printable text")
            }
        }
        if print && clip {
            throw ValidationError("--print writes the password to stdout, --clip to the clipboard; give one")
        }
    }

    func run() throws {
        guard [.genericPassword, .internetPassword].contains(item.itemClass) else {
            throw UsageError(
                "generate makes passwords: --class genp (the default) or inet; store other data with add",
                command: "generate")
        }
        // Everything that can be refused is, before a password exists or anything is stored.
        let clipboard = clip ? try Clipboard.prepare(command: "generate") : nil
        let attributes = inPlace ? [:] : try item.newItemAttributes(command: "generate")
        let query = inPlace ? try item.query(command: "generate") : nil
        var secret =
            try words.map { try GenerateCommand.passphrase(words: $0, separator: separator ?? "-") }
            ?? GenerateCommand.password(length: length ?? 24, from: (charset ?? .alnum).characters)
        defer { Crypto.cleanse(&secret) }
        let keychain = try global.open(unlock: .whenNeeded)
        if let query {
            try GenerateCommand.replaceSecret(of: query, with: secret, in: keychain, global: global.settings)
        } else {
            try global.retryingUnlocked(keychain) {
                try keychain.add(item.itemClass, attributes: attributes, data: secret, protection: item.protection)
            }
        }
        if let clipboard {
            try Clipboard.copy(secret, with: clipboard.tool, seconds: clipboard.seconds)
        } else if print {
            Output.data(secret)
            if Terminal.stdoutIsTerminal { Output.data([UInt8(ascii: "\n")]) }
        }
    }

    /// Replaces the secret of the one item `query` matches, through the keychain's update (so
    /// the agent, access groups and sync see an ordinary update).
    /// - Throws: errSecItemNotFound when none matches; errSecParam when several do (nothing
    ///   changed).
    static func replaceSecret(of query: Query, with secret: [UInt8], in keychain: Keychain, global: GlobalSettings)
        throws
    {
        let found = try global.retryingUnlocked(keychain) { try keychain.find(query, limit: 2, includeData: false) }
        guard let match = found.first else {
            throw KeychainError(
                .itemNotFound,
                "no item matches the query, so no secret was replaced; leave out --in-place to add a new item")
        }
        guard found.count == 1 else {
            throw UsageError(
                "several items match the query and --in-place replaces the secret of one; nothing was changed. Narrow it (--account, --service, --label ...)",
                command: "generate", status: .param)
        }
        try global.retryingUnlocked(keychain) {
            try keychain.update(
                Query(match.itemClass, persistentRef: match.persistentRef), attributes: [:], data: secret)
        }
    }

    /// `count` words of `WordList`, each drawn uniformly, joined by `separator`.
    static func passphrase(words count: Int, separator: String) throws -> [UInt8] {
        let words = WordList.words
        var out: [UInt8] = []
        // At its final size: a growing array would leave copies of the start behind.
        out.reserveCapacity(count * (8 + separator.utf8.count))
        for (i, index) in try uniformIndices(count, below: words.count).enumerated() {
            if i > 0 { out += separator.utf8 }
            out += words[index].utf8
        }
        return out
    }

    /// `count` numbers drawn uniformly from 0..<bound (at most 65536), from pairs of random
    /// bytes: a pair is used only when it is below the largest multiple of `bound`, so no
    /// number is more likely than another (for a power of two every pair is used).
    static func uniformIndices(_ count: Int, below bound: Int) throws -> [Int] {
        precondition((1...65536).contains(bound))
        let limit = 65536 - 65536 % bound
        var out: [Int] = []
        out.reserveCapacity(count)
        while out.count < count {
            var random = try Crypto.randomBytes(max(16, (count - out.count) * 4))
            defer { Crypto.cleanse(&random) }
            var i = 0
            while i + 1 < random.count && out.count < count {
                let r = Int(random[i]) << 8 | Int(random[i + 1])
                if r < limit { out.append(r % bound) }
                i += 2
            }
        }
        return out
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
