#if canImport(Glibc)
    import Glibc
#endif
import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyBackup
import LatchkeyFormat

/// `latchkey restore`: verifies a backup archive whole, then restores it (spec/BACKUP.md §11).
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Verify a backup archive, then restore it into a new keychain (or --merge into an existing one).",
        discussion: """
            Every byte of the archive is checked (manifest MAC, every entry's SHA-256, every \
            item that can be decrypted here) before anything is written; then every restorable \
            item lands in one transaction, or none does. Without --merge the keychain (and the \
            device secret) must not exist yet: they are created, the keychain protected by the \
            passcode given as for 'init' (LATCHKEY_PASSCODE, --passcode-file, asked twice, or \
            --no-passcode). With --merge, for an item with the same UUID or unique key the newer \
            modification date wins (a tie keeps the keychain's); with --replace the backup's \
            item replaces the keychain's whatever the dates. Under both, a ThisDeviceOnly item \
            of the keychain is never replaced from a backup made on another device. On another device, ThisDeviceOnly items (aku, cku, dku) are \
            skipped and counted. Prints a report on stdout; --json prints it as JSON with each \
            item's outcome (restored, replaced, kept or skipped, and why), every item counted \
            once. A backup read from \
            stdin (-) is first copied to an unlinked temporary file (its bytes as they are: \
            ciphertext only) so that it can be read twice.

            Exit status: 4 for a wrong or missing backup password or a device-only backup of \
            another device; 5 for a damaged, truncated, tampered or unknown-version archive, \
            or one with links or paths outside it; 7 when the keychain exists without --merge. \
            The keychain is unchanged on every error.

            Example:
              latchkey restore keychain.backup
              ssh host 'cat kc.tar.zst' | latchkey restore - --merge --json
              latchkey restore keychain.backup --dry-run
              latchkey restore keychain.backup --replace --json
            """
    )

    @Argument(help: ArgumentHelp("The backup archive, or - for stdin.", valueName: "file|-"), completion: .file())
    var file: String

    @Flag(help: "Restore into the existing keychain: for the same item, the newer modification date wins.")
    var merge = false

    @Flag(
        help:
            "Restore into the existing keychain: the backup's item replaces the keychain's with the same UUID or unique key."
    )
    var replace = false

    @Flag(name: .customLong("dry-run"), help: "Verify the archive and report what would be restored; write nothing.")
    var dryRun = false

    @Flag(help: "Print the report as JSON, with each item's outcome.")
    var json = false

    @Flag(
        name: .customLong("no-passcode"), help: "Create the new keychain without a passcode (as 'init --no-passcode').")
    var noPasscode = false

    @Option(
        name: .customLong("keychain-kdf-log-n"),
        help: ArgumentHelp("For a new keychain: " + KDFCost.help, valueName: "n"))
    var keychainKDFLogN: UInt8 = KDFParameters.defaultLogN

    @OptionGroup(title: "Backup password") var password: BackupPasswordOptions
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        try KDFCost.validate(keychainKDFLogN, option: "--keychain-kdf-log-n")
        if merge, replace { throw ValidationError("--merge and --replace contradict each other; give one") }
        if noPasscode, merge || replace {
            throw ValidationError(
                "--no-passcode is for a new keychain; it makes no sense with --\(merge ? "merge" : "replace")")
        }
        if noPasscode { try InitCommand.refusePasscode(global) }
    }

    func run() throws {
        // Ctrl-C or SIGTERM from here on removes what the restore made and erases the bar.
        Terminal.cleanUpOnSignals()
        let keychainPath = global.keychainPath
        let exists = access(keychainPath, F_OK) == 0
        let intoExisting = merge || replace
        if exists && !intoExisting {
            throw KeychainError(
                .duplicateKeychain,
                "a keychain already exists at \(keychainPath); restore into it with --merge or --replace, or choose another --keychain"
            )
        }
        // Open the destination (and learn how to protect a new one) before reading the archive.
        let target: RestoreTarget
        var newPasscode: [UInt8]?
        if exists {
            target = .existing(try global.open(unlock: .eager))
        } else {
            if !noPasscode, !dryRun {
                newPasscode = try global.givenPasscode()
                if newPasscode == nil, !Terminal.stdinIsTerminal {
                    throw UsageError(
                        "restore creates a new keychain and needs its passcode, and there is no terminal to ask on; set LATCHKEY_PASSCODE, give --passcode-file PATH, or use --no-passcode",
                        command: "restore")
                }
            }
            target = .newKeychain(hasPasscode: !noPasscode)
        }
        if file == "-" {
            try Terminal.requireStdin(
                "restore reads the archive from stdin (-), but stdin is closed; pipe it in or give a FILE",
                command: "restore")
            if Terminal.stdinIsTerminal {
                throw UsageError(
                    "restore - reads a binary archive from stdin, which is a terminal; pipe the archive in",
                    command: "restore")
            }
        }
        let progress = Progress("verify", unit: .bytes)
        defer { progress.finish() }
        let source = file == "-" ? try BackupSource.spooling(fd: STDIN_FILENO) : try BackupSource.file(file)
        let device =
            FileManager.default.fileExists(atPath: global.devicePath) ? try Device.load(path: global.devicePath) : nil
        // Each pass reports bytes of the archive read; a new pass starts a new phase.
        var phase = "verify", shown = ""
        let onProgress: (Int64, Int64) -> Void = { done, total in
            if shown != phase {
                shown = phase
                progress.restart(phase, total: Int(total), completed: Int(done))
            } else {
                progress.update(completed: Int(done))
            }
        }
        let verified = try VerifiedBackup.verify(
            source, device: device,
            password: { try progress.whilePrompting { try password.existingPassword(for: source.name) } },
            target: target, conflicts: replace ? .backupWins : .newerWins, listItems: json, progress: onProgress)

        var report: RestoreReport
        if dryRun {
            report = verified.plan
            report.keychain = keychainPath
        } else if case .existing = target {
            phase = "restore"
            report = try verified.restore(progress: onProgress)
        } else {
            if !noPasscode, newPasscode == nil {
                newPasscode = try progress.whilePrompting {
                    try global.newPasscodeOrPrompt(given: nil, prompt: "New passcode for \(keychainPath): ")
                }
                guard newPasscode != nil else {
                    throw UsageError(
                        "restore needs a passcode for the new keychain; set LATCHKEY_PASSCODE, give --passcode-file PATH, or use --no-passcode",
                        command: "restore")
                }
            }
            if newPasscode != nil { KDFCost.warnIfWeak(keychainKDFLogN, "new keychain's passcode") }
            phase = "restore"
            report = try verified.restoreNewKeychain(
                path: keychainPath, devicePath: global.devicePath, passcode: newPasscode,
                kdfLogN: keychainKDFLogN, progress: onProgress)
        }
        progress.finish()
        if json {
            try Output.json(encoding: report)
        } else {
            for line in RestoreCommand.text(report) { Output.line(line) }
        }
    }

    /// The report for a person.
    static func text(_ r: RestoreReport) -> [String] {
        func counts(_ d: [String: Int], order: [String]) -> String {
            let keys = d.keys.sorted { (order.firstIndex(of: $0) ?? 99, $0) < (order.firstIndex(of: $1) ?? 99, $1) }
            return keys.map { "\($0) \(d[$0]!)" }.joined(separator: ", ")
        }
        let protections = ProtectionClass.allCases.map(\.code)
        let b = r.backup
        var lines: [String] = []
        let created = Date(timeIntervalSince1970: TimeInterval(b.createdAt))
        lines.append(
            "backup \(b.backupUUID) of \(created.formatted(Date.ISO8601FormatStyle())): \(b.items) item(s), "
                + (b.passwordProtected ? "password-protected" : "device-only")
                + ", " + b.origin)
        let verb = r.dryRun ? "would restore" : "restored"
        let into = r.createdKeychain ? "a new keychain at \(r.keychain)" : r.keychain
        let written = r.restored + r.replaced
        let breakdown =
            "\(counts(r.restoredByClass, order: ["genp", "inet", "cert", "keys"])); \(counts(r.restoredByProtection, order: protections))"
        if r.replaced == 0 {
            lines.append("\(verb) \(r.restored) item(s) into \(into)" + (r.restored > 0 ? ": " + breakdown : ""))
        } else {
            lines.append(
                "\(verb) \(r.restored) new item(s) into \(into); \(written) written in all, replacements included: "
                    + breakdown)
        }
        if r.merge {
            lines.append(
                "\(r.dryRun ? "would replace" : "replaced") \(r.replaced) item(s) of the keychain"
                    + (r.conflicts == .backupWins ? " (--replace)" : " with newer ones")
                    + "; kept \(r.kept) of its own"
                    + (r.kept > 0
                        ? " ("
                            + r.keptByReason.keys.sorted().map {
                                "\(r.keptByReason[$0]!) \(RestoreCommand.reasonText($0))"
                            }.joined(separator: ", ") + ")" : ""))
        }
        if r.skipped > 0 {
            lines.append(
                "skipped \(r.skipped) item(s): "
                    + r.skippedByReason.keys.sorted().map { reason in
                        "\(r.skippedByReason[reason]!) \(RestoreCommand.reasonText(reason))"
                    }.joined(separator: ", ") + " (\(counts(r.skippedByProtection, order: protections)))")
        }
        if b.notExported > 0 {
            lines.append(
                "\(b.notExported) WhenPasscodeSetThisDeviceOnly (akpu) item(s) of the source were never in the backup")
        }
        if r.dryRun { lines.append("nothing was written (--dry-run)") }
        return lines
    }

    /// Why an item was kept or skipped, for a person.
    static func reasonText(_ reason: String) -> String {
        switch RestoreSkipReason(rawValue: reason) {
        case .thisDeviceOnlyFromAnotherDevice: return "ThisDeviceOnly, made on another device"
        case .destinationNewer: return "the keychain's copy is as new or newer"
        case .userPresenceNeedsPasscode: return "need user presence, the keychain has no passcode"
        case .destinationThisDeviceOnly:
            return "the keychain's copy is ThisDeviceOnly, and nothing proves the backup's item was made on this device"
        case nil: return reason
        }
    }
}
