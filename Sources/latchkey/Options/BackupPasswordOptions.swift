import ArgumentParser

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
        guard CommandLineForms.validating else { return }
        if let n = kdfLogN { try KDFCost.validate(n) }
    }

    /// The password given by file or environment, without prompting.
    func given() throws -> [UInt8]? {
        try GlobalSettings.secret(
            file: passwordFile, command: passwordCommand, option: "--password", environment: "LATCHKEY_BACKUP_PASSWORD",
            what: "backup password")
    }

    /// For a new backup: given, or asked twice on the terminal; nil when neither is possible.
    /// - Throws: errSecParam when the two entries differ or the password is empty.
    func newPassword() throws -> [UInt8]? {
        try Terminal.newSecret(
            given: try given(), prompt: "Backup password: ",
            mismatch: "the two backup passwords differ; nothing was written",
            empty: "the backup password is empty; choose a non-empty password, or use --no-password")
    }

    /// For a restore: given, or asked once on the terminal; nil when neither is possible.
    func existingPassword(for source: String) throws -> [UInt8]? {
        try Terminal.secret(given: try given(), prompt: "Backup password for \(source): ")
    }
}
