import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// `latchkey`: the command-line front end of the keychain (contract: docs/CLI.md).
@main
struct LatchkeyCommand: ParsableCommand {
    static let version = Version.description

    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract:
            "Apple's Keychain Services model on Linux: an encrypted keychain file of passwords, keys and certificates.",
        discussion: """
            Options follow the subcommand; the global options (--keychain, --device, \
            --passcode-file, --passcode-command, --new-passcode-file, --app-id, \
            --entitlements) may also come before it. 'latchkey COMMAND --help' shows the \
            common options; 'latchkey COMMAND --help-all' (or 'latchkey help-all COMMAND') \
            adds the attribute options of every item class. Every option that names a file \
            has an environment variable (LATCHKEY_KEYCHAIN, LATCHKEY_DEVICE, LATCHKEY_PASSCODE, …), so scripts need \
            no flags. Data goes to stdout, diagnostics to stderr. Arguments (and the variables \
            read as paths or names) must be UTF-8 text; an attribute that can hold other bytes \
            takes them in hex (--account-hex, --set-label-hex, …). Tables and messages show \
            control characters of attribute values as escapes (\\x1b); --json gives them exactly.

            Exit status: 0 success, 1 errSecItemNotFound, 2 usage error or errSecParam, \
            3 errSecDuplicateItem, 4 locked / wrong passcode, 5 damaged or tampered keychain, \
            6 no access (access groups), 7 any other failure.

            Example:
              latchkey init
              printf 's3cret' | latchkey add --account alice --service mail
              latchkey find --account alice --service mail
            """,
        version: version,
        subcommands: [
            InitCommand.self, AddCommand.self, GenerateCommand.self, FindCommand.self, ShowCommand.self,
            ListCommand.self, SearchCommand.self, OTPCommand.self, UpdateCommand.self, DeleteCommand.self,
            VerifyCommand.self, CompactCommand.self, InfoCommand.self, PasswdCommand.self,
            DumpCommand.self, ImportCommand.self, ExecCommand.self, EnvCommand.self, BackupCommand.self,
            RestoreCommand.self,
            BackupVerifyCommand.self, BackupListCommand.self, GenerateManualCommand.self,
            AgentCommand.self, UnlockCommand.self, LockCommand.self, StatusCommand.self, SyncCommand.self,
            HistoryCommand.self, CredentialCommand.self, SecretServiceCommand.self
        ]
    )

    /// Parses, runs and maps every error to docs/CLI.md's stderr form and exit status.
    static func main() {
        Terminal.disableCoreDumps()
        Terminal.guardStandardStreams()
        do {
            // Before either parser sees a String that Swift has already repaired.
            try RawInput.check()  // Support/RawInput.swift
            var given = Array(CommandLine.arguments.dropFirst())
            // The clipboard's clearer, which `--clip` starts (Support/Clipboard.swift); not a command.
            if given.count == 2, given[0] == Clipboard.clearerCommand { Clipboard.runClearer(toolName: given[1]) }
            // Installed as git-credential-latchkey (make install links it), git runs it as the
            // helper named "latchkey": `git-credential-latchkey get`.
            if CommandLine.arguments.first?.split(separator: "/").last == "git-credential-latchkey" {
                given = ["credential"] + given
            }
            let arguments = try CommandLineForms.normalized(given)
            if try runFast(arguments) { return }  // Commands/FastParser.swift
            let (kept, items) = EnvironmentItemOptions.laterItems(arguments)
            var command = try parse(kept)
            if !items.isEmpty { command = try EnvironmentItemOptions.adding(items, to: command) }
            try command.run()
        } catch let error as KeychainError {
            Output.note(error.cliDescription)
            exitProcess(error.status.exitCode)
        } catch let error as UsageError {
            Output.note(error.description)
            exitProcess(2)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help, --version: ArgumentParser prints them to stdout.
                exit(withError: error)
            } else if code == .validationFailure {
                // ArgumentParser's usage errors exit 64 (EX_USAGE); the contract says 2.
                var text = fullMessage(for: error)
                if text.hasPrefix("Error: ") { text.removeFirst("Error: ".count) }
                Output.note(unknownCommandMessage() ?? text)
                exitProcess(2)
            } else if let exitCode = error as? ExitCode {
                exitProcess(exitCode.rawValue)
            } else {
                let status = KeychainStatus.internal
                Output.note("\(error) (\(status.name) \(status.rawValue))")
                exitProcess(status.exitCode)
            }
        }
    }

    /// `parseAsRoot`, except that an unknown or misplaced argument is reported before what a
    /// command's `validate()` says: ArgumentParser validates first, so `update --set-lable X`
    /// said "nothing to change". When the parse fails, it is tried again without validation
    /// (`CommandLineForms.validating`); an error of that parse is the one to report.
    static func parse(_ arguments: [String]) throws -> ParsableCommand {
        do {
            return try parseAsRoot(arguments)
        } catch {
            guard exitCode(for: error) == .validationFailure else { throw error }
            CommandLineForms.validating = false
            defer { CommandLineForms.validating = true }
            do {
                _ = try parseAsRoot(arguments)
            } catch let unvalidated where exitCode(for: unvalidated) == .validationFailure {
                throw unvalidated
            } catch {}
            throw error
        }
    }

    /// Runs `--version` and the common forms of find, add, update, delete and dump without
    /// ArgumentParser (whose reflection over the command tree is most of a short command's
    /// start-up); false when ArgumentParser must parse the arguments.
    static func runFast(_ arguments: [String]) throws -> Bool {
        let rest = Array(arguments.dropFirst())
        switch arguments.first {
        case "--version" where rest.isEmpty: Output.line(version)  // as ArgumentParser prints it
        case "find": guard let r = FindCommand.fastRequest(rest) else { return false }; try FindCommand.execute(r)
        case "add": guard let r = AddCommand.fastRequest(rest) else { return false }; try AddCommand.execute(r)
        case "update": guard let r = UpdateCommand.fastRequest(rest) else { return false }; try UpdateCommand.execute(r)
        case "delete": guard let r = DeleteCommand.fastRequest(rest) else { return false }; try DeleteCommand.execute(r)
        case "dump":
            guard let r = DumpCommand.fastRequest(rest) else { return false };
            try DumpCommand.execute(json: r.json, global: r.global)
        default: return false
        }
        return true
    }

    /// "unknown command 'x'" with the nearest command when one is close (`serch`: "did you
    /// mean 'search'?") and the list of commands, when the first argument is neither a command
    /// (nor an alias, `ls`) nor an option (ArgumentParser would only say "Unexpected argument").
    static func unknownCommandMessage() -> String? {
        guard let first = CommandLineForms.command ?? CommandLine.arguments.dropFirst().first, !first.hasPrefix("-"),
            first != "help",
            !configuration.subcommands.contains(where: {
                $0._commandName == first || $0.configuration.aliases.contains(first)
            })
        else { return nil }
        let shown = configuration.subcommands.filter { $0.configuration.shouldDisplay }
        let commands = shown.map { $0._commandName }
        let names = commands + shown.flatMap { $0.configuration.aliases }
        let guess = (synonyms[first.lowercased()] ?? nearest(first, among: names)).map { name in
            let command = shown.first { $0.configuration.aliases.contains(name) }?._commandName
            return "did you mean '\(name)'\(command.map { " (\($0))" } ?? "")? The"
        }
        return
            "unknown command '\(first)'; \(guess ?? "the") commands are \(commands.joined(separator: ", "))\n  See 'latchkey --help' for more information."
    }

    /// What users of pass, gopass and 1Password's op type for a command that has another name here.
    static let synonyms: [String: String] = [
        "get": "find", "cat": "find", "view": "show", "rm": "delete", "remove": "delete", "del": "delete",
        "insert": "add", "new": "add", "create": "add", "edit": "update", "set": "update", "grep": "search",
        "pwgen": "generate", "run": "exec"
    ]

    /// The name closest to `word` by edit distance (insertions, deletions, substitutions and
    /// swaps of neighbours, ignoring case), when it is close enough to be a typo: at most one
    /// edit for a word of up to 4 letters, two for a longer one; or a name `word` begins
    /// (`delet`). Nil when none is, or two are equally close.
    static func nearest(_ word: String, among names: [String]) -> String? {
        let w = Array(word.lowercased())
        guard !w.isEmpty else { return nil }
        let allowed = w.count <= 4 ? 1 : 2
        var best: (name: String, distance: Int)?, tie = false
        for name in names {
            let n = Array(name)
            var d = editDistance(w, n)
            if n.count > w.count, w.count >= 3, n.starts(with: w) { d = min(d, 1) }
            guard d <= allowed else { continue }
            if let b = best, b.distance == d {
                // A command's name wins over an alias as close ("lst": list, not ls).
                let isAlias = { (x: String) in !configuration.subcommands.contains { $0._commandName == x } }
                if isAlias(b.name) != isAlias(name) {
                    if isAlias(b.name) { best = (name, d) }
                } else {
                    tie = true
                }
            } else if best == nil || d < best!.distance {
                best = (name, d)
                tie = false
            }
        }
        return tie ? nil : best?.name
    }

    /// Optimal string alignment distance: edits and swaps of two neighbours, each costing 1.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }

    static func exitProcess(_ code: Int32) -> Never {
        #if canImport(Glibc)
            Glibc.exit(code)
        #else
            Darwin.exit(code)
        #endif
    }
}
