#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import ArgumentParser
import Latchkey
import LatchkeyCrypto

/// `latchkey exec`: run a command with chosen secrets in its environment (as `op run`,
/// `gopass env`, `sops exec-env`), so they never pass through shell variables or argv.
struct ExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract:
            "Run a command with secrets in its environment: each --item NAME=SERVICE/ACCOUNT becomes the variable NAME.",
        discussion: CommandLineForms.discussion(
            short:
                "Every item is found first (missing: exit 1; nothing run); then latchkey becomes the command (execvp), so its exit status is the caller's. The command comes after '--'.",
            full: """
                Every item is found first; when one is missing (exit 1), ambiguous or locked, \
                nothing is run. Then latchkey replaces itself with the command (execvp, searching \
                PATH), so the command's exit status and signals are the caller's to see, as if it \
                had been run directly; the rest of the environment is passed on unchanged, but for \
                LATCHKEY_PASSCODE, LATCHKEY_NEW_PASSCODE and LATCHKEY_BACKUP_PASSWORD, which are \
                removed (an --item may set them). The \
                command comes after '--'. When it cannot be run, exit 127 (not found) or 126 (not \
                executable), as env(1). Core dumps stay off for the command, as for latchkey.
                """,
            example: """
                  latchkey exec --item GITHUB_TOKEN=github.com/alice -- gh repo list
                  latchkey exec --item PGPASSWORD=db.example.com/app -- psql -h db app
                """)
    )

    @OptionGroup var items: EnvironmentItemOptions

    @Argument(
        parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after '--'.", valueName: "command")
    )
    var command: [String] = []

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        _ = try items.items()
        if items.specs.isEmpty { throw ValidationError("give at least one --item NAME=SERVICE/ACCOUNT") }
        if command.isEmpty {
            throw ValidationError(
                "give the command to run after '--': latchkey exec --item NAME=SERVICE/ACCOUNT -- COMMAND")
        }
    }

    func run() throws {
        var secrets = try EnvironmentItemOptions.secrets(try items.items(), global: global, command: "exec")
        // The command gets the items asked for, not the passcode that unlocked them (a tool
        // that prints its environment would print it); an --item of the same name still sets it.
        for name in GlobalSettings.secretVariables { unsetenv(name) }
        for i in secrets.indices {
            var value = secrets[i].value + [0]
            let name = secrets[i].name
            let set = value.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { setenv(name, $0, 1) }
            }
            Crypto.cleanse(&value)
            Crypto.cleanse(&secrets[i].value)
            guard set == 0 else {
                throw KeychainError(
                    .io, "cannot set \(name) in the environment: \(String(cString: strerror(errno))); nothing was run")
            }
        }
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        execvp(command[0], &argv)
        let error = errno
        let status = KeychainStatus.io
        Output.note(
            "cannot run '\(command[0])': \(String(cString: strerror(error)))\(error == ENOENT ? "; check the name and PATH" : "") (\(status.name) \(status.rawValue))"
        )
        LatchkeyCommand.exitProcess(error == ENOENT ? 127 : 126)
    }
}
