import ArgumentParser
import Latchkey

/// `--password-file`, `--password-command`, LATCHKEY_BACKUP_PASSWORD_FILE,
/// LATCHKEY_BACKUP_PASSWORD_COMMAND or LATCHKEY_BACKUP_PASSWORD (docs/CLI.md):
/// the backup password of `backup` and `restore`. Never a plain argument value.
struct BackupPasswordOptions: ParsableArguments {
    @Option(
        name: .customLong("password-file"),
        help: ArgumentHelp(
            "Read the backup password from this file or pipe (env LATCHKEY_BACKUP_PASSWORD_FILE; one trailing newline is ignored).",
            discussion:
                "Or put the password itself in LATCHKEY_BACKUP_PASSWORD, or use --password-command (one source at a time). With none of them, it is asked without echo when stdin is a terminal (twice for a new backup).",
            valueName: "path"),
        completion: .file())
    var passwordFile: String?

    @Option(
        name: .customLong("password-command"),
        help: ArgumentHelp(
            "Read the backup password from what this command prints (env LATCHKEY_BACKUP_PASSWORD_COMMAND).",
            discussion:
                "/bin/sh -c runs it; one trailing newline of its stdout is ignored. As restic's --password-command: --password-command 'pass show backup'. It must exit 0; its stderr is shown, its stdin is the terminal or /dev/null.",
            valueName: "command"),
        completion: .list([]))
    var passwordCommand: String?

    @Option(name: .customLong("kdf-log-n"), help: ArgumentHelp(KDFCost.help, valueName: "n"))
    var kdfLogN: UInt8?

    func validate() throws {
        if let n = kdfLogN, !(10...22).contains(n) { throw ValidationError("--kdf-log-n must be between 10 and 22") }
    }

    /// The password given by file or environment, without prompting.
    func given() throws -> [UInt8]? {
        try GlobalOptions.secret(
            file: passwordFile, command: passwordCommand, option: "--password", environment: "LATCHKEY_BACKUP_PASSWORD",
            what: "backup password")
    }

    /// For a new backup: given, or asked twice on the terminal; nil when neither is possible.
    /// - Throws: errSecParam when the two entries differ or the password is empty.
    func newPassword() throws -> [UInt8]? {
        if let p = try given() {
            guard !p.isEmpty else {
                throw KeychainError(
                    .param, "the backup password is empty; choose a non-empty password, or use --no-password")
            }
            return p
        }
        guard Terminal.stdinIsTerminal, let first = try Terminal.readSecret(prompt: "Backup password: ") else {
            return nil
        }
        let second = try Terminal.readSecret(prompt: "Repeat it: ")
        guard first == second else {
            throw KeychainError(.param, "the two backup passwords differ; nothing was written")
        }
        guard !first.isEmpty else {
            throw KeychainError(
                .param, "the backup password is empty; choose a non-empty password, or use --no-password")
        }
        return first
    }

    /// For a restore: given, or asked once on the terminal; nil when neither is possible.
    func existingPassword(for source: String) throws -> [UInt8]? {
        if let p = try given() { return p }
        guard Terminal.stdinIsTerminal else { return nil }
        return try Terminal.readSecret(prompt: "Backup password for \(source): ")
    }
}
