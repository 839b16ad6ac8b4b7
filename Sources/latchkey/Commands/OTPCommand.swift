import ArgumentParser
#if canImport(Glibc)
    import Glibc
#endif
import Latchkey
import LatchkeyCrypto

/// `latchkey otp`: one-time codes (TOTP, RFC 6238; HOTP, RFC 4226) from an otpauth:// URI kept
/// in the keychain as a secret (docs/CLI.md, "One-time codes").
///
/// The URI holds the key the codes come from, so it is an item's secret, encrypted as every
/// secret is: a generic password of its own whose service is `otp:` and the SERVICE given, whose
/// account is the ACCOUNT, and whose data is the URI. It is an item of its own, not an attribute
/// of the password item: attributes are listed by `dump` and `find --return attributes`, and a
/// password item and its code item could not share a service and account (the unique key of a
/// generic password is its service, account, access group and `sync`), hence the prefix. No
/// byte of the file format changes; any tool can find the codes with `find --service otp:…`.
struct OTPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "otp",
        abstract: "Print the one-time code (TOTP or HOTP) of an otpauth:// URI kept in the keychain.",
        discussion: """
            The URI is stored with --set, read from stdin (or asked twice on a terminal), never \
            from the command line: it is kept as the secret of a generic password with service \
            'otp:SERVICE' and account ACCOUNT. TOTP codes follow the clock (--at gives another \
            time); each HOTP code moves the counter stored in the URI on by one, in one update \
            that fails and is retried if another process took that value first, so no code is \
            given twice. The account is what follows the last '/'; without it exactly one code \
            item must have the service. Prints the code and a newline; --clip copies it instead.

            Example:
              latchkey otp --set github.com/alice < uri.txt
              latchkey otp github.com/alice
              latchkey otp github.com/alice --clip
              latchkey otp github.com/alice --at 2030-01-01T00:00:00Z
            """
    )

    /// The service prefix of the items that hold otpauth URIs.
    static let servicePrefix = "otp:"

    @Argument(
        help: ArgumentHelp(
            "SERVICE/ACCOUNT, or SERVICE when one code item has it; the item's service is otp:SERVICE.",
            valueName: "service[/account]"))
    var name: String

    @Flag(name: .customLong("set"), help: "Store the otpauth:// URI read from stdin for SERVICE/ACCOUNT.")
    var set = false

    @Flag(help: "With --set, replace the URI stored for SERVICE/ACCOUNT (else it is errSecDuplicateItem).")
    var replace = false

    @Option(
        help: ArgumentHelp(
            "The time of a TOTP code: seconds since 1970 (UTC) or an ISO 8601 date, instead of now.",
            valueName: "time"))
    var at: String?

    @Flag(help: "Copy the code to the clipboard (cleared after 45 s) instead of printing it.")
    var clip = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if set && (at != nil || clip) { throw ValidationError("--set stores a URI; --at and --clip are for codes") }
        if replace && !set { throw ValidationError("--replace goes with --set") }
    }

    /// SERVICE and ACCOUNT of the argument, as `--item` of exec reads them.
    func selection() throws -> (service: String, account: String?) {
        var service = name, account: String?
        if let slash = name.lastIndex(of: "/") {
            service = String(name[..<slash])
            let rest = String(name[name.index(after: slash)...])
            account = rest.isEmpty ? nil : rest
        }
        guard !service.isEmpty else {
            throw UsageError("'\(name)' names no service; write SERVICE/ACCOUNT, e.g. github.com/alice", command: "otp")
        }
        return (service, account)
    }

    func run() throws {
        let (service, account) = try selection()
        if set {
            try store(service: service, account: account)
            return
        }
        let time = try at.map(OTPCommand.unixTime) ?? Int64(Glibc.time(nil))
        let clipboard = clip ? try Clipboard.prepare(command: "otp") : nil
        let keychain = try global.open(unlock: .whenNeeded)
        var query: [String: AttributeValue] = ["svce": .string(OTPCommand.servicePrefix + service)]
        if let account { query["acct"] = .string(account) }
        let what = "service '\(service)'" + (account.map { " and account '\($0)'" } ?? "")

        // HOTP: at most a few rounds, each lost only to another process that took the counter.
        for _ in 0..<20 {
            let found = try global.retryingUnlocked(keychain) {
                try keychain.find(
                    Query(.genericPassword, query, synchronizable: .any), limit: 2, includeData: true)
            }
            guard var match = found.first else {
                throw KeychainError(
                    .itemNotFound,
                    "no one-time code is stored for \(what); store its otpauth:// URI with 'latchkey otp --set \(name)' (the URI on stdin)"
                )
            }
            guard found.count == 1 else {
                throw UsageError(
                    "more than one one-time code item has \(what); add /ACCOUNT to choose one", command: "otp",
                    status: .param)
            }
            defer { Crypto.cleanse(&match.data) }
            var code: OneTimeCode
            do {
                code = try OneTimeCode(parsing: match.data)
            } catch let error as OneTimeCode.Invalid {
                throw KeychainError(
                    .param,
                    "the item for \(what) does not hold a valid otpauth:// URI (\(error)); store it again with 'latchkey otp --set --replace \(name)'"
                )
            }
            defer { code.cleanse() }
            if code.kind == .totp {
                try emit(code.code(at: time), clipboard)
                return
            }
            guard at == nil else {
                throw UsageError(
                    "--at gives the time of a TOTP code; this is an HOTP code, which follows its counter",
                    command: "otp")
            }
            guard let counter = code.counter, counter < UInt64.max else {
                throw KeychainError(.param, "the HOTP counter for \(what) is at its largest value; no code is left")
            }
            // Compare and swap: the update matches only while the item is as it was read (its
            // modification date moves with every update), so two processes never give the
            // same code; the loser reads the new counter and tries again.
            var current: [String: AttributeValue] = [:]
            for name in ["svce", "acct", "agrp", "mdat"] { current[name] = match.attributes[name] }
            let synced: SyncFilter = match.attributes["sync"] == .integer(1) ? .synchronizable : .notSynchronizable
            var next = code.withCounter(counter + 1)
            defer { Crypto.cleanse(&next) }
            do {
                try global.retryingUnlocked(keychain) {
                    try keychain.update(
                        Query(.genericPassword, current, synchronizable: synced), attributes: [:], data: next)
                }
            } catch let error as KeychainError where error.status == .itemNotFound {
                continue
            }
            try emit(code.code(at: time), clipboard)
            return
        }
        throw KeychainError(
            .io, "the HOTP counter for \(what) kept changing under other processes; no code was given, try again")
    }

    /// Prints the code, or copies it.
    func emit(_ code: String, _ clipboard: (tool: Clipboard.Tool, seconds: Int)?) throws {
        if let clipboard {
            try Clipboard.copy(Array(code.utf8), with: clipboard.tool, seconds: clipboard.seconds)
        } else {
            Output.line(code)
        }
    }

    /// `--set`: reads the URI, checks it, and stores it (a new item, or with --replace an update).
    func store(service: String, account: String?) throws {
        var uri = try OTPCommand.readURI()
        defer { Crypto.cleanse(&uri) }
        do {
            var code = try OneTimeCode(parsing: uri)
            code.cleanse()
        } catch let error as OneTimeCode.Invalid {
            throw UsageError(
                "the otpauth:// URI is not valid: \(error); nothing was stored", command: "otp", status: .param)
        }
        let keychain = try global.open(unlock: .whenNeeded)
        let attributes: [String: AttributeValue] = [
            "svce": .string(OTPCommand.servicePrefix + service), "acct": .string(account ?? ""),
            "desc": .string("otpauth URI")
        ]
        // Whether synchronizable or not: a second item for the same name would make every
        // later `otp` ambiguous.
        let existing = try global.retryingUnlocked(keychain) {
            try keychain.find(
                Query(
                    .genericPassword, ["svce": attributes["svce"]!, "acct": attributes["acct"]!], synchronizable: .any),
                limit: 2, includeData: false)
        }
        guard let item = existing.first else {
            try global.retryingUnlocked(keychain) {
                try keychain.add(.genericPassword, attributes: attributes, data: uri)
            }
            return
        }
        guard replace else {
            throw KeychainError(
                .duplicateItem,
                "a one-time code is already stored for '\(name)'; nothing was changed. Give --replace to replace it")
        }
        guard existing.count == 1 else {
            throw UsageError(
                "more than one one-time code item is stored for '\(name)'; nothing was changed. Delete all but one (latchkey delete --service 'otp:\(service)' ...)",
                command: "otp", status: .param)
        }
        try global.retryingUnlocked(keychain) {
            try keychain.update(Query(.genericPassword, persistentRef: item.persistentRef), attributes: [:], data: uri)
        }
    }

    /// The URI of `--set`: asked twice without echo on a terminal (a mistyped secret parses
    /// as well as the right one), else all of stdin but one trailing newline.
    /// - Throws: a usage error when stdin is closed, the entries differ or the URI is empty.
    static func readURI() throws -> [UInt8] {
        try Terminal.requireStdin(
            "otp --set reads the otpauth:// URI from stdin, but stdin is closed; pipe it in ('latchkey otp --set NAME < uri.txt')",
            command: "otp")
        let empty = "the otpauth:// URI is empty; nothing was stored. Pipe it in ('latchkey otp --set NAME < uri.txt')"
        if let typed = try Terminal.newSecret(
            given: nil, prompt: "otpauth:// URI (not echoed): ",
            mismatch: "the two entries of the URI differ; nothing was stored. Run the command again", empty: empty)
        {
            return typed
        }
        var data = try InputFile.standardInput(what: "otpauth:// URI", zeroing: true)
        if data.last == UInt8(ascii: "\n") {
            data.removeLast()
            if data.last == UInt8(ascii: "\r") { data.removeLast() }
        }
        guard !data.isEmpty else { throw UsageError(empty, command: "otp", status: .param) }
        return data
    }

    /// `--at`: seconds since 1970 (digits, optionally negative is refused), or an ISO 8601 date.
    static func unixTime(_ text: String) throws -> Int64 {
        if let n = Int64(text) {
            guard n >= 0 else { throw UsageError("--at takes a time from 1970 on", command: "otp") }
            return n
        }
        guard let absolute = ISODate.parse(text) else {
            throw UsageError(
                "--at takes seconds since 1970 or an ISO 8601 date (2030-01-01T00:00:00Z), not '\(text)'",
                command: "otp")
        }
        // ISODate gives seconds since 2001-01-01 (CFAbsoluteTime).
        let unix = (absolute + 978_307_200).rounded(.down)
        guard unix >= 0 else { throw UsageError("--at takes a time from 1970 on", command: "otp") }
        return Int64(unix)
    }
}
