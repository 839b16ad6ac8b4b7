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
            InitCommand.self, AddCommand.self, GenerateCommand.self, FindCommand.self, UpdateCommand.self,
            DeleteCommand.self,
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
            // Installed as git-credential-latchkey (make install links it), git runs it as the
            // helper named "latchkey": `git-credential-latchkey get`.
            if CommandLine.arguments.first?.split(separator: "/").last == "git-credential-latchkey" {
                given = ["credential"] + given
            }
            let arguments = try CommandLineForms.normalized(given)
            if try runFast(arguments) { return }  // Commands/FastParser.swift
            let (kept, items) = EnvironmentItemOptions.laterItems(arguments)
            var command = try parseAsRoot(kept)
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

    /// "unknown command 'x'" with the list of commands, when the first argument is neither a
    /// command nor an option (ArgumentParser would only say "Unexpected argument").
    static func unknownCommandMessage() -> String? {
        guard let first = CommandLineForms.command ?? CommandLine.arguments.dropFirst().first, !first.hasPrefix("-"),
            first != "help",
            !configuration.subcommands.contains(where: { $0._commandName == first })
        else { return nil }
        let commands = configuration.subcommands.filter { $0.configuration.shouldDisplay }.map { $0._commandName }
        return
            "unknown command '\(first)'; the commands are \(commands.joined(separator: ", "))\n  See 'latchkey --help' for more information."
    }

    static func exitProcess(_ code: Int32) -> Never {
        #if canImport(Glibc)
            Glibc.exit(code)
        #else
            Darwin.exit(code)
        #endif
    }
}
