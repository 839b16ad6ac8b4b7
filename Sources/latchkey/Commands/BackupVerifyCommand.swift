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

/// `latchkey backup-verify`: checks a backup archive whole, with no keychain involved
/// (spec/BACKUP.md §11, the first pass of a restore).
struct BackupVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup-verify",
        abstract:
            "Check a backup archive completely, without any keychain: structure, MACs, every item it lets this machine decrypt.",
        discussion: """
            Reads the archive once, as the first pass of 'restore' does, and writes nothing: \
            the tar structure, the keybag entry, every entry's size and SHA-256 against the \
            manifest, the manifest's MAC, the counts, and every item's GCM tag and plaintext. \
            A password backup needs its password (--password-file, LATCHKEY_BACKUP_PASSWORD, \
            or asked on the terminal); no keychain or passcode is needed, and the migratory \
            items (ak, ck, dk) are checked on any machine. ThisDeviceOnly items (aku, cku, \
            dku) can be decrypted only on the device that made the backup (with its device \
            secret, --device): elsewhere they are counted and reported as not checked. A \
            --no-password backup can be checked only on its own device. Memory holds one \
            items entry at a time, whatever the size of the archive.

            Exit status: 0 when the archive is intact; 4 for a wrong or missing backup \
            password, or a device-only backup of another device; 5 for a damaged, truncated, \
            tampered or unknown-version archive.

            Example:
              latchkey backup-verify keychain.backup
              ssh host 'cat kc.tar.zst' | latchkey backup-verify - --json
            """
    )

    @Argument(help: ArgumentHelp("The backup archive, or - for stdin.", valueName: "file|-"), completion: .file())
    var file: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    @OptionGroup(title: "Backup password") var password: BackupPasswordOptions
    @OptionGroup(title: "Global options") var global: GlobalOptions

    /// What `backup-verify --json` prints.
    struct Result: Codable {
        var backup: BackupInfo
        /// Every check passed (always true: a failure is an error and a non-zero exit).
        var intact: Bool
        /// Items decrypted and checked here.
        var itemsChecked: Int
        var itemsCheckedByProtection: [String: Int]
        /// ThisDeviceOnly items of a backup made on another device: present, authenticated by
        /// the manifest (entry SHA-256 and counts), but not decryptable here.
        var itemsNotDecryptable: Int
        var itemsNotDecryptableByProtection: [String: Int]
    }

    func run() throws {
        Terminal.cleanUpOnSignals()
        let (verified, _) = try BackupVerifyCommand.verify(
            file, command: "backup-verify", password: password, global: global)
        let plan = verified.plan
        let result = Result(
            backup: verified.info, intact: true, itemsChecked: plan.restored,
            itemsCheckedByProtection: plan.restoredByProtection,
            itemsNotDecryptable: plan.skippedByReason[
                RestoreSkipReason.thisDeviceOnlyFromAnotherDevice.rawValue, default: 0],
            itemsNotDecryptableByProtection: plan.skippedByProtection)
        if json {
            try Output.json(encoding: result)
            return
        }
        Output.line(BackupVerifyCommand.identity(verified.info))
        let protections = ProtectionClass.allCases.map(\.code)
        func counts(_ d: [String: Int]) -> String {
            protections.filter { d[$0, default: 0] > 0 }.map { "\($0) \(d[$0]!)" }.joined(separator: ", ")
        }
        Output.line(
            "intact: the structure, every entry's SHA-256 and the manifest's MAC check out; "
                + "\(result.itemsChecked) item(s) decrypted and checked"
                + (result.itemsChecked > 0 ? " (\(counts(result.itemsCheckedByProtection)))" : ""))
        if result.itemsNotDecryptable > 0 {
            Output.line(
                "\(result.itemsNotDecryptable) ThisDeviceOnly item(s) (\(counts(result.itemsNotDecryptableByProtection))) are present and covered by the manifest, "
                    + "but can be decrypted only on device \(verified.info.sourceDeviceUUID), which made the backup: run backup-verify there to check them"
            )
        }
        if verified.info.notExported > 0 {
            Output.line(
                "\(verified.info.notExported) WhenPasscodeSetThisDeviceOnly (akpu) item(s) of the source were never in the backup"
            )
        }
    }

    /// The backup's identity line, as `restore` prints it.
    static func identity(_ b: BackupInfo) -> String {
        let created = Date(timeIntervalSince1970: TimeInterval(b.createdAt))
        return "backup \(b.backupUUID) of \(created.formatted(Date.ISO8601FormatStyle())): \(b.items) item(s), "
            + (b.passwordProtected ? "password-protected" : "device-only")
            + ", " + b.origin
    }

    /// Reads `file` (or stdin for -) once and checks every byte, with this machine's device
    /// secret when there is one and the backup password as given; nothing is written, no
    /// keychain is opened. The progress bar is returned for a command that reads again.
    static func verify(
        _ file: String, command: String, password: BackupPasswordOptions,
        global: GlobalOptions
    ) throws -> (VerifiedBackup, Progress) {
        if file == "-" {
            try Terminal.requireStdin(
                "\(command) reads the archive from stdin (-), but stdin is closed; pipe it in or give a FILE",
                command: command)
            if Terminal.stdinIsTerminal {
                throw UsageError(
                    "\(command) - reads a binary archive from stdin, which is a terminal; pipe the archive in",
                    command: command)
            }
        }
        let progress = Progress("verify", unit: .bytes)
        defer { progress.finish() }
        let source = file == "-" ? try BackupSource.spooling(fd: STDIN_FILENO) : try BackupSource.file(file)
        let device =
            FileManager.default.fileExists(atPath: global.devicePath) ? try Device.load(path: global.devicePath) : nil
        var started = false
        do {
            let verified = try VerifiedBackup.verify(
                source, device: device,
                password: { try progress.whilePrompting { try password.existingPassword(for: source.name) } },
                target: .newKeychain(hasPasscode: true),
                progress: { done, total in
                    if started {
                        progress.update(completed: Int(done))
                    } else {
                        started = true
                        progress.restart("verify", total: Int(total), completed: Int(done))
                    }
                })
            return (verified, progress)
        } catch let e as KeychainError {
            // The checks are restore's first pass, whose messages end with what a restore did
            // not do; here nothing was going to be restored.
            throw KeychainError(
                e.status, TextEditing.replacing("; nothing was restored", with: "", in: e.message),
                underlying: e.underlying, remedy: e.remedy)
        }
    }
}
