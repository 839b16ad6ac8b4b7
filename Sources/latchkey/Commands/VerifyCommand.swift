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

    @OptionGroup(title: "Global options") var global: GlobalOptions

    @Flag(help: "Print the report as JSON: ok, problems, fileSize, records, liveItems, checkedItems, lockedItems, recoveredTailBytes.")
    var json = false

    @Flag(name: .customLong("accept-rollback"), help: "Open a keychain older than the newest this device has seen (e.g. restored from a copy) and accept it as the new newest.")
    var acceptRollback = false

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
        let keychain: Keychain
        do {
            keychain = try global.open(unlock: .eager, acceptRollback: acceptRollback)
        } catch let error as KeychainError where json && error.status == .decode {
            // A keychain too damaged to open is still a verify result.
            try Output.json(encoding: Report(path: path, ok: false, problems: [error.description], fileSize: 0, records: 0,
                                             liveItems: 0, checkedItems: 0, lockedItems: 0, recoveredTailBytes: 0))
            throw error
        }
        let r = keychain.verify()
        if json {
            try Output.json(encoding: Report(path: path, ok: r.ok, problems: r.problems, fileSize: r.fileSize, records: r.records,
                                             liveItems: r.liveItems, checkedItems: r.checkedItems, lockedItems: r.lockedItems,
                                             recoveredTailBytes: r.recoveredTailBytes))
        } else if r.ok {
            Output.line("ok: \(path): \(r.fileSize) bytes, \(r.records) records, \(r.liveItems) live items (\(r.checkedItems) decrypted, \(r.lockedItems) locked)")
        } else {
            Output.line("damaged: \(path): \(r.problems.count) problem(s)")
            for problem in r.problems { Output.line("  \(problem)") }
        }
        guard r.ok else {
            throw KeychainError(.decode, "the keychain \(path) failed verification (\(r.problems.count) problem(s)); restore it from a backup")
        }
    }
}
