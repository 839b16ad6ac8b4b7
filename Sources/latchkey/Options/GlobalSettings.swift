#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// The global options' values (GlobalOptions without ArgumentParser) and what commands do with
/// them: resolve the keychain, device secret and caller, read passcodes, open the keychain.
/// The fast path of find, add, update, delete and dump (Commands/FastParser.swift) fills one
/// without making a GlobalOptions: its option declarations make ArgumentParser's values
/// (names, help), whose first use costs the runtime's type look-ups, a start-up cost those
/// commands otherwise never pay (docs/RESULTS.md, "Figures behind the code").
struct GlobalSettings {
    var keychainOption: String?
    var deviceOption: String?
    var passcodeFile: String?
    var passcodeCommand: String?
    var newPasscodeFile: String?
    var appIDOption: String?
    var entitlementsOption: String?

    /// Options given by name ("keychain", "device", "passcode-file", "passcode-command",
    /// "new-passcode-file", "app-id", "entitlements"), as ArgumentParser sets them
    /// (Commands/FastParser.swift).
    init(given values: [String: String]) {
        keychainOption = values["keychain"]
        deviceOption = values["device"]
        passcodeFile = values["passcode-file"]
        passcodeCommand = values["passcode-command"]
        newPasscodeFile = values["new-passcode-file"]
        appIDOption = values["app-id"]
        entitlementsOption = values["entitlements"]
    }

    // MARK: Resolved values

    static func environment(_ name: String) -> String? {
        // getenv, not ProcessInfo's `environment`, which copies the whole environment into a
        // dictionary on every call.
        guard let raw = getenv(name) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }

    /// The keychain, device secret and caller these options and the environment name.
    var environment: KeychainEnvironment {
        KeychainEnvironment.process(
            keychainPath: keychainOption, devicePath: deviceOption,
            applicationIdentifier: appIDOption, entitlementsPath: entitlementsOption)
    }

    var keychainPath: String { environment.keychainPath }
    var devicePath: String { environment.devicePath }

    /// The caller: the entitlements plist (its application-identifier, else --app-id) or --app-id.
    /// - Throws: errSecIO (unreadable plist), errSecParam (not an entitlements plist).
    func caller() throws -> CallerIdentity {
        let source = entitlementsOption != nil ? "--entitlements" : "LATCHKEY_ENTITLEMENTS"
        return try environment.caller(read: { try InputFile.contents($0, what: "entitlements file", source: source) })
    }

    // MARK: Passcodes

    /// The variables that hold a secret itself: a process this one starts for longer, or for
    /// another program (`agent --daemon`, `exec`), gets none of them.
    static let secretVariables = ["LATCHKEY_PASSCODE", "LATCHKEY_NEW_PASSCODE", "LATCHKEY_BACKUP_PASSWORD"]

    /// The passcode given by --passcode-file, --passcode-command, LATCHKEY_PASSCODE_FILE,
    /// LATCHKEY_PASSCODE_COMMAND or LATCHKEY_PASSCODE, without prompting.
    func givenPasscode() throws -> [UInt8]? {
        try GlobalSettings.secret(
            file: passcodeFile, command: passcodeCommand, option: "--passcode", environment: "LATCHKEY_PASSCODE",
            what: "passcode")
    }

    /// The new passcode given by --new-passcode-file, LATCHKEY_NEW_PASSCODE_FILE or
    /// LATCHKEY_NEW_PASSCODE (LATCHKEY_NEW_PASSCODE_COMMAND too).
    func givenNewPasscode() throws -> [UInt8]? {
        try GlobalSettings.secret(
            file: newPasscodeFile, command: nil, option: "--new-passcode", environment: "LATCHKEY_NEW_PASSCODE",
            what: "new passcode")
    }

    /// Secrets already read, by source (`file:PATH`, `command:TEXT`): a pipe (`<(…)`,
    /// /dev/stdin) gives its bytes once, a command should run once, and a command asks for its
    /// passcode more than once (to open, to retry when locked, for user presence). The CLI runs
    /// one command a process.
    nonisolated(unsafe) private static var secretsRead: [String: [UInt8]] = [:]

    /// A secret from one of its sources: the option `<option>-file` (a file or pipe) or
    /// `<option>-command` (a command's stdout); else the variable `<environment>_FILE`,
    /// `<environment>_COMMAND` or `environment` itself (its bytes as they are: a passcode need
    /// not be UTF-8). An option wins over the variables. One trailing newline (LF or CRLF) of a
    /// file or a command's output is ignored.
    /// - Throws: errSecIO for a file that cannot be read or a command that fails; errSecParam
    ///   when two options or two variables are set (which one was meant cannot be told).
    static func secret(file: String?, command: String?, option: String, environment name: String, what: String) throws
        -> [UInt8]?
    {
        enum Source { case file(String), command(String) }
        let source: Source, origin: String
        if file != nil && command != nil {
            throw KeychainError(.param, "\(option)-file and \(option)-command both give the \(what); give one of them")
        } else if let file {
            (source, origin) = (.file(file), "\(option)-file")
        } else if let command {
            (source, origin) = (.command(command), "\(option)-command")
        } else {
            let fileVariable = name + "_FILE", commandVariable = name + "_COMMAND"
            let set = [
                (name, RawInput.secretEnvironment(name) != nil), (fileVariable, environment(fileVariable) != nil),
                (commandVariable, environment(commandVariable) != nil)
            ].filter(\.1).map(\.0)
            if set.count > 1 {
                let which =
                    set.count == 2
                    ? "both \(set[0]) and \(set[1]) are set" : "\(set.joined(separator: ", ")) are all set"
                throw KeychainError(
                    .param,
                    "\(which), so the \(what) to use is unclear; unset all but one of them (an option such as \(option)-file would take precedence over them)"
                )
            }
            if let path = environment(fileVariable) {
                (source, origin) = (.file(path), fileVariable)
            } else if let text = environment(commandVariable) {
                (source, origin) = (.command(text), commandVariable)
            } else {
                return RawInput.secretEnvironment(name)
            }
        }
        let key: String
        switch source {
        case .file(let path): key = "file:" + path
        case .command(let text): key = "command:" + text
        }
        if let bytes = secretsRead[key] { return bytes }
        var bytes: [UInt8]
        switch source {
        case .file(let path):
            bytes = try InputFile.secret(path, what: "\(what) file", source: origin)
            if bytes.last == UInt8(ascii: "\n") {
                bytes.removeLast()
                if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            }
        case .command(let text):
            bytes = try SecretCommand.output(text, what: what, source: origin)
        }
        secretsRead[key] = bytes
        return bytes
    }

    /// The passcode from its source, or asked on the terminal when stdin is one; nil otherwise.
    func passcodeOrPrompt(_ prompt: String) throws -> [UInt8]? {
        try Terminal.secret(given: try givenPasscode(), prompt: prompt)
    }

    /// A new passcode from its source, or asked twice on the terminal; nil when neither.
    /// - Throws: errSecParam when the two entries differ or the passcode is empty.
    func newPasscodeOrPrompt(given: [UInt8]?, prompt: String) throws -> [UInt8]? {
        try Terminal.newSecret(
            given: given, prompt: prompt, mismatch: "the two passcodes differ; nothing was changed",
            empty: "the passcode is empty; choose a non-empty passcode")
    }

    // MARK: Opening

    /// How a command gets the passcode for a keychain that has one.
    enum Unlock {
        /// Don't unlock (the command needs no class key).
        case never
        /// Only a passcode given by file or environment; never prompt.
        case givenOnly
        /// A given passcode unlocks at once; with none, prompt on the terminal only when an
        /// operation finds its class locked (see `retryingUnlocked`).
        case whenNeeded
        /// A given passcode, or prompt at once when stdin is a terminal.
        case eager
    }

    /// Opens the keychain, reports a recovered tail, and unlocks as `unlock` says.
    /// - Parameter deferAgentOpen: for a command that goes on to its requests at once and
    ///   reads nothing of the keychain before (find, add, update, delete): through the agent
    ///   and without a passcode, its first request opens the keychain there and fails as
    ///   opening would, so it makes one round trip instead of two.
    /// - Throws: `KeychainError` from opening, or errSecAuthFailed for a wrong passcode.
    func open(unlock: Unlock, acceptRollback: Bool = false, deferAgentOpen: Bool = false) throws -> Keychain {
        try GlobalSettings.checkHistorySettings()
        let given = try givenPasscode()
        // `.eager` commands (verify, and any that must hold every class key in this process,
        // such as a backup) open the file themselves; see AgentRouting.swift for the agent.
        let (keychain, unlocked) = try environment.open(
            passcode: unlock == .never ? nil : given, useAgent: unlock != .eager,
            acceptRollback: acceptRollback, unusable: GlobalSettings.agentUnusable,
            deferAgentOpen: deferAgentOpen && given == nil)
        keychain.caller = try caller()
        // Items that need user presence ask for the passcode again on every read of their data.
        let path = keychainPath
        keychain.authenticationHandler = { prompt in
            if let given { return given }
            guard Terminal.stdinIsTerminal else { return nil }
            return try? Terminal.readSecret(prompt: (prompt.map { $0 + "\n" } ?? "") + "Passcode for \(path): ")
        }
        if keychain.recoveredTailBytes > 0 {
            Output.note("recovered: removed \(keychain.recoveredTailBytes) bytes of an incomplete write")
        }
        // Without a passcode given there is nothing to unlock with here (a command that needs
        // a locked class asks on the terminal then: `retryingUnlocked`), so whether the keychain
        // has a passcode is not asked (through the agent, that would be a request of its own).
        if given == nil && unlock != .eager { return keychain }
        // A given passcode is never ignored: a keychain that has lost its passcode may have
        // been replaced by one whose keys someone else knows (spec/SECURITY.md §2.4).
        if given != nil, !keychain.hasPasscode { throw KeychainError.passcodeForKeychainWithout(keychainPath) }
        guard keychain.hasPasscode, !unlocked else { return keychain }
        let passcode: [UInt8]?
        switch unlock {
        case .never: passcode = nil
        case .givenOnly, .whenNeeded: passcode = try givenPasscode()
        case .eager: passcode = try passcodeOrPrompt("Passcode for \(keychainPath): ")
        }
        if let passcode { try keychain.unlockUnlessAgentIsUnlocked(passcode: passcode) }
        return keychain
    }

    /// Refuses a malformed LATCHKEY_HISTORY_VERSIONS or LATCHKEY_HISTORY_DAYS (errSecParam,
    /// exit 2, naming the variable), which the engine would otherwise replace by its default
    /// without a word (`HistoryPolicy.fromProcessEnvironment`). Every command that opens a
    /// keychain comes through `open`, so every writer checks it before it changes anything;
    /// readers too, so that a bad setting shows at the next command, not only at the next change.
    static func checkHistorySettings() throws {
        _ = try HistoryPolicy(lookup: environment)
    }

    /// Runs `body`; when it fails because the keychain is locked and no passcode was given,
    /// asks for the passcode on the terminal (if stdin is one), unlocks and runs it once more.
    @discardableResult
    func retryingUnlocked<T>(_ keychain: Keychain, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as KeychainError where error.status == .interactionNotAllowed {
            guard keychain.hasPasscode, try givenPasscode() == nil, Terminal.stdinIsTerminal,
                let passcode = try Terminal.readSecret(prompt: "Passcode for \(keychainPath): ")
            else { throw error }
            try keychain.unlock(passcode: passcode)
            return try body()
        }
    }
}
