#if canImport(Glibc)
    import Glibc
#endif
import ArgumentParser
import Latchkey
import LatchkeyBackup

/// `latchkey backup`: writes a backup archive of the keychain (spec/BACKUP.md).
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a backup archive (pax tar) of the keychain to a file or to stdout.",
        discussion: """
            With a backup password (--password-file, LATCHKEY_BACKUP_PASSWORD, or asked twice \
            on the terminal) the migratory items (ak, ck, dk) can be restored on any machine \
            that knows the password, and the ThisDeviceOnly items (aku, cku, dku) only on this \
            device. With --no-password every item is bound to this device's secret: such a \
            backup restores only here. WhenPasscodeSetThisDeviceOnly (akpu) items are never \
            backed up. The archive holds no plaintext secret or attribute; 'tar -tf' lists it. \
            Every class but akpu must be readable, so a keychain with a passcode needs it \
            (LATCHKEY_PASSCODE, --passcode-file or a prompt) — or an agent that holds it \
            unlocked: with no passcode given, a keychain served by an unlocked 'latchkey \
            agent' is backed up through the agent (a systemd timer needs no passcode in its \
            environment; items that need user presence still need the passcode). The archive \
            means the same either way.

            --output-dir DIR writes into DIR (made 0700 when absent) under a new name, the \
            keychain's name and the UTC time (login-20261207T030012.345Z.backup), and prints \
            that path on stdout; --keep N then removes the oldest backups of this keychain \
            there until N remain, the new one always among them. It removes only files named \
            that way that are regular files of yours, and only after the new backup is \
            complete. latchkey-backup.timer runs it daily (docs/CLI.md, "Backups on a timer").

            Example:
              latchkey backup --output keychain.backup
              latchkey backup --output - --compress zstd | ssh host 'cat > kc.tar.zst'
              latchkey backup --no-password --output /var/backups/latchkey.tar
              latchkey backup --output-dir ~/.local/share/latchkey/backups --keep 7
            """
    )

    @Option(
        name: .customLong("output"),
        help: ArgumentHelp(
            "Where to write the archive: a regular file (written beside it first, then renamed into place; a FIFO, device or symlink there is refused), or - for stdout.",
            valueName: "file|-"),
        completion: .file())
    var output: String?

    @Option(
        name: .customLong("output-dir"),
        help: ArgumentHelp(
            "Write the archive into this directory under a new name, <keychain>-<UTC time>.backup, and print its path (instead of --output).",
            valueName: "dir"),
        completion: .directory)
    var outputDirectory: String?

    @Option(
        name: .customLong("keep"),
        help: ArgumentHelp(
            "With --output-dir: then remove the oldest backups of this keychain there until n remain, the new one included.",
            valueName: "n"))
    var keep: Int?

    @Flag(
        name: .customLong("no-password"),
        help: "Bind every item to this device instead of a password: restorable only on this device.")
    var noPassword = false

    @Option(
        name: .customLong("compress"),
        help: ArgumentHelp(
            "Compress the tar stream: none (default: the entries are ciphertext, which does not compress), gzip or zstd.",
            valueName: "none|gzip|zstd"))
    var compression: BackupCompression = .none

    @OptionGroup(title: "Backup password") var password: BackupPasswordOptions
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if noPassword, password.passwordFile != nil {
            throw ValidationError("--no-password and --password-file contradict each other; give one")
        }
        switch (output, outputDirectory) {
        case (nil, nil):
            throw ValidationError("say where the backup goes: --output FILE, --output - or --output-dir DIR")
        case (.some, .some): throw ValidationError("--output and --output-dir contradict each other; give one")
        default: break
        }
        if let keep {
            guard outputDirectory != nil else {
                throw ValidationError(
                    "--keep removes old backups from an --output-dir directory; give --output-dir DIR")
            }
            guard keep >= 1 else {
                throw ValidationError("--keep \(keep) would remove the new backup too; give --keep 1 or more")
            }
        }
    }

    func run() throws {
        if output == "-", Terminal.stdoutIsTerminal {
            throw UsageError(
                "refusing to write a binary archive to a terminal; redirect stdout or give --output FILE",
                command: "backup")
        }
        let (keychain, throughAgent) = try BackupCommand.open(global)
        var pw: [UInt8]?
        if !noPassword {
            pw = try password.newPassword()
            guard pw != nil else {
                throw UsageError(
                    "backup needs a backup password and there is no terminal to ask on; set LATCHKEY_BACKUP_PASSWORD, give --password-file PATH, or use --no-password",
                    command: "backup")
            }
        }
        if pw != nil { KDFCost.warnIfWeak(password.kdfLogN ?? BackupOptions.defaultLogN, "backup password") }
        // Ctrl-C or SIGTERM from here on removes the temporary file and erases the bar.
        Terminal.cleanUpOnSignals()
        let progress = Progress("backup", total: try keychain.localStore?.liveItemCount ?? keychain.info().liveItems)
        defer { progress.finish() }
        let options = BackupOptions(
            password: pw, compression: compression,
            kdfLogN: password.kdfLogN ?? BackupOptions.defaultLogN,
            device: throughAgent ? try Device.load(path: global.devicePath) : nil,
            progress: { done, _ in progress.update(completed: done) })
        // The bar is redrawn while the password's KDF runs (a second or so, before any item).
        let stem = BackupRotation.stem(ofKeychain: global.keychainPath)
        let (path, summary) = try progress.whileRunning {
            if let directory = outputDirectory {
                return try BackupRotation.write(keychain, intoDirectory: directory, stem: stem, options: options)
            }
            let output = output ?? "-"
            return output == "-"
                ? (
                    "stdout",
                    try BackupArchive.write(
                        keychain, to: STDOUT_FILENO, options: options, destination: "standard output")
                )
                : (output, try BackupArchive.write(keychain, toFile: output, options: options))
        }
        progress.finish()
        let classes = summary.itemsByProtection.keys.sorted().map { "\($0) \(summary.itemsByProtection[$0]!)" }.joined(
            separator: ", ")
        Output.progress(
            "backed up \(summary.items) item(s)\(classes.isEmpty ? "" : " (\(classes))") to \(path)"
                + (summary.passwordProtected ? "" : ", restorable only on this device")
                + (summary.notExported > 0
                    ? "; \(summary.notExported) WhenPasscodeSetThisDeviceOnly (akpu) item(s) are never backed up" : ""))
        guard let directory = outputDirectory else { return }
        // The new name is data: what a script keeps, copies elsewhere or restores from.
        Output.line(path)
        if let keep { try prune(directory, stem: stem, keep: keep, newest: path) }
    }

    /// `--keep`: the oldest backups of this keychain in `directory` removed until `keep`
    /// remain; a file that could not be removed fails the command after the others are gone.
    private func prune(_ directory: String, stem: String, keep: Int, newest path: String) throws {
        let newest = path.split(separator: "/").last.map(String.init) ?? path
        let pruned = BackupRotation.prune(directory: directory, stem: stem, keep: keep, newest: newest)
        if !pruned.removed.isEmpty {
            // Always said, terminal or not: files were deleted (a timer's journal keeps it).
            Output.status(
                "removed \(pruned.removed.count) older backup(s) of \(stem) from \(directory), keeping the newest \(keep)"
            )
        }
        if let first = pruned.failed.first {
            throw KeychainError(
                .io,
                "the backup is complete at \(path), but the older backup \(first.path) could not be removed (\(first.reason))\(pruned.failed.count > 1 ? ", nor \(pruned.failed.count - 1) other(s)" : ""); check the permissions of \(directory), or remove it by hand"
            )
        }
    }
}

extension BackupCompression: ExpressibleByArgument {}

extension BackupCommand {
    /// The keychain to back up, and whether the agent serves it. With no passcode given, an
    /// agent that serves the keychain unlocked (or one without a passcode) is used, as the
    /// trusted caller, so a scheduled backup needs no passcode in its environment. Otherwise
    /// the file is opened here and unlocked with the passcode (given, or asked on a terminal).
    static func open(_ global: GlobalOptions) throws -> (Keychain, Bool) {
        if try global.givenPasscode() == nil,
            let served = try Keychain.openThroughAgent(
                path: global.keychainPath, devicePath: global.devicePath,
                unusable: GlobalSettings.agentUnusable)
        {
            if !served.hasPasscode || served.isAvailable(.whenUnlocked) {
                // User presence: asked on the terminal when there is one, else refused before
                // anything is written (AgentItemSource).
                let path = global.keychainPath
                if Terminal.stdinIsTerminal {
                    served.authenticationHandler = { prompt in
                        let text = (prompt.map { $0 + "\n" } ?? "") + "Passcode for \(path): "
                        return try? Terminal.readSecret(prompt: text)
                    }
                } else {
                    served.authenticationHandler = nil
                }
                return (served, true)
            }
            guard Terminal.stdinIsTerminal else {
                throw KeychainError(
                    .interactionNotAllowed,
                    "the agent serves \(global.keychainPath) locked, and no passcode was given: run 'latchkey unlock' first, or give the passcode (LATCHKEY_PASSCODE or --passcode-file); nothing was written"
                )
            }
        }
        return (try global.open(unlock: .eager), false)
    }
}
