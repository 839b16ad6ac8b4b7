import ArgumentParser
import Latchkey

/// `latchkey verify`: checks every byte of the keychain.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every byte of the keychain and decrypt every item it can.",
        discussion: """
            Re-reads the whole file: header, keybag, every record's checksum and tag, and \
            decrypts each live item whose class key is available (give the passcode to check \
            them all; otherwise locked items are checked by their record tag only). Prints \
            the result, or every problem, on stdout. Exit 0 when the keychain is sound, 5 \
            (errSecDecode) when anything is wrong.

            Example:
              latchkey verify
              latchkey verify --json | jq .problems
            """
    )

    @Flag(help: "Print the report as JSON: ok, problems, fileSize, records, liveItems, checkedItems, lockedItems, recoveredTailBytes.")
    var json = false

    @Flag(name: .customLong("accept-rollback"), help: "Open a keychain older than the newest this device has seen (e.g. restored from a copy) and accept it as the new newest.")
    var acceptRollback = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    /// The JSON form of a report (VerifyReport's `ok` is computed, so it is spelled out here).
    struct Report: Encodable {
        var path: String
        var ok: Bool
        var problems: [String]
        var fileSize: UInt64
        var records: Int
        var liveItems: Int
        var checkedItems: Int
        var lockedItems: Int
        var recoveredTailBytes: UInt64
    }

    func run() throws {
        let path = global.keychainPath
        var report: Report
        do {
            let keychain = try global.open(unlock: .eager, acceptRollback: acceptRollback)
            let r = keychain.verify()
            report = Report(path: path, ok: r.ok, problems: r.problems, fileSize: r.fileSize, records: r.records,
                            liveItems: r.liveItems, checkedItems: r.checkedItems, lockedItems: r.lockedItems,
                            recoveredTailBytes: r.recoveredTailBytes)
        } catch let error as KeychainError where error.status == .decode {
            // A keychain too damaged to open is still a verify result (opening stops at the
            // first damaged byte, so that is the one problem reported).
            report = Report(path: path, ok: false, problems: [error.description], fileSize: 0, records: 0,
                            liveItems: 0, checkedItems: 0, lockedItems: 0, recoveredTailBytes: 0)
        }
        if json {
            try Output.json(encoding: report)
        } else if report.ok {
            Output.line(Style.stdout.green("ok:") + " \(path): \(report.fileSize) bytes, \(report.records) records, \(report.liveItems) live items (\(report.checkedItems) decrypted, \(report.lockedItems) locked)")
        } else {
            Output.line(Style.stdout.red("damaged:") + " \(path): \(report.problems.count) problem(s)")
            for problem in report.problems { Output.line("  \(problem)") }
        }
        guard report.ok else {
            throw KeychainError(.decode, "the keychain \(path) failed verification (\(report.problems.count) problem(s)); restore it from a backup")
        }
    }
}
