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

            Example:
              latchkey backup --output keychain.backup
              latchkey backup --output - --compress zstd | ssh host 'cat > kc.tar.zst'
              latchkey backup --no-password --output /var/backups/latchkey.tar
            """
    )

    @Option(
        name: .customLong("output"),
        help: ArgumentHelp(
            "Where to write the archive: a regular file (written beside it first, then renamed into place; a FIFO, device or symlink there is refused), or - for stdout.",
            valueName: "file|-"),
        completion: .file())
    var output: String

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
        let summary = try progress.whileRunning {
            try output == "-"
                ? BackupArchive.write(keychain, to: STDOUT_FILENO, options: options, destination: "standard output")
                : BackupArchive.write(keychain, toFile: output, options: options)
        }
        progress.finish()
        let classes = summary.itemsByProtection.keys.sorted().map { "\($0) \(summary.itemsByProtection[$0]!)" }.joined(
            separator: ", ")
        Output.progress(
            "backed up \(summary.items) item(s)\(classes.isEmpty ? "" : " (\(classes))") to \(output == "-" ? "stdout" : output)"
                + (summary.passwordProtected ? "" : ", restorable only on this device")
                + (summary.notExported > 0
                    ? "; \(summary.notExported) WhenPasscodeSetThisDeviceOnly (akpu) item(s) are never backed up" : ""))
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
