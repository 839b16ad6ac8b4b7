import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
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

            --repair is for a keychain that does not open because a record is damaged: it \
            shows what cutting the file back to its last intact change would drop (every \
            later record that still verifies, with its item when the passcode is given, and \
            the bytes that do not), asks on a terminal, and cuts only when you agree (or with \
            --yes). Everything it lists is lost; restoring a backup may lose less.

            Example:
              latchkey verify
              latchkey verify --json | jq .problems
              latchkey verify --repair
            """
    )

    @Flag(
        help:
            "Print the report as JSON: ok, problems, fileSize, records, liveItems, checkedItems, lockedItems, recoveredTailBytes."
    )
    var json = false

    @Flag(
        name: .customLong("accept-rollback"),
        help:
            "Open a keychain older than the newest this device has seen (e.g. restored from a copy) and accept it as the new newest."
    )
    var acceptRollback = false

    @Flag(
        help:
            "For a keychain refused as damaged: show what cutting it back to its last intact change would drop, and cut it when you agree."
    )
    var repair = false

    @Flag(help: "With --repair: cut without asking.")
    var yes = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if yes, !repair { throw ValidationError("--yes is for --repair") }
        if repair, acceptRollback {
            throw ValidationError("--repair and --accept-rollback are two different remedies; give one")
        }
    }

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
        /// Earlier versions (spec/FORMAT.md §7.7), and of them those decrypted and checked; 0
        /// from an agent, whose report does not carry them (spec/AGENT.md).
        var historyVersions = 0
        var checkedVersions = 0
    }

    func run() throws {
        if repair, try !runRepair() { return }
        let path = global.keychainPath
        var report: Report
        var refusal: KeychainError?
        do {
            let keychain = try global.open(unlock: .eager, acceptRollback: acceptRollback)
            let r = keychain.verify()
            report = Report(
                path: path, ok: r.ok, problems: r.problems, fileSize: r.fileSize, records: r.records,
                liveItems: r.liveItems, checkedItems: r.checkedItems, lockedItems: r.lockedItems,
                recoveredTailBytes: r.recoveredTailBytes, historyVersions: r.historyRecords,
                checkedVersions: r.checkedVersions)
        } catch let error as KeychainError where error.status == .decode {
            // A keychain refused on open (damage, rollback, a newer version) is still a verify
            // result; its error already says what happened and what to do, so that is what is
            // reported and thrown, never a different remedy.
            refusal = error
            report = Report(
                path: path, ok: false, problems: [error.message], fileSize: 0, records: 0,
                liveItems: 0, checkedItems: 0, lockedItems: 0, recoveredTailBytes: 0)
        }
        if json {
            try Output.json(encoding: report)
        } else if report.ok {
            Output.line(
                Style.stdout.green("ok:")
                    + " \(path): \(report.fileSize) bytes, \(report.records) records, \(report.liveItems) live items (\(report.checkedItems) decrypted, \(report.lockedItems) locked)"
                    + (report.historyVersions > 0
                        ? ", \(report.historyVersions) earlier versions (\(report.checkedVersions) decrypted)" : "")
            )
        } else if let refusal, refusal.message.contains("rolled back") {
            Output.line(Style.stdout.red("rolled back:") + " \(path)")
            Output.line("  \(refusal.message)")
        } else {
            Output.line(Style.stdout.red("damaged:") + " \(path): \(report.problems.count) problem(s)")
            for problem in report.problems { Output.line("  \(problem)") }
        }
        if let refusal { throw refusal }
        guard report.ok else {
            throw KeychainError(
                .decode,
                "the keychain \(path) failed verification (\(report.problems.count) problem(s)); restore it from a backup, or see what 'latchkey verify --repair' would cut"
            )
        }
    }

    /// Shows the repair plan and carries it out when the user agrees. Returns whether the
    /// normal verification should follow (after a repair, or when there was nothing to cut).
    private func runRepair() throws -> Bool {
        let path = global.keychainPath
        guard
            let plan = try Keychain.repairPlan(
                path: path, devicePath: global.devicePath, passcode: try global.givenPasscode())
        else {
            if !json { Output.line("nothing to repair: \(path) has no damaged record to cut off") }
            return true
        }
        if json {
            try Output.json(encoding: plan)
        } else {
            Output.line(Style.stdout.red("damaged:") + " \(path): \(plan.problem)")
            Output.line(
                "repair: cut the file from \(plan.fileSize) to \(plan.cutAt) bytes (\(plan.droppedBytes) bytes), keeping \(plan.keptItems) item(s) as of change \(plan.keepsThroughChange); this drops:"
            )
            for r in plan.dropped {
                let item = r.item.map { " of item \($0)" } ?? ""
                let summary = r.summary.map { " (\(TerminalText.quoted($0)))" } ?? ""
                Output.line("  change \(r.sequence) at byte \(r.offset): \(r.kind)\(item)\(summary): \(r.effect)")
            }
            if plan.unverifiableBytes > 0 {
                Output.line("  \(plan.unverifiableBytes) bytes that do not verify: what they held cannot be known")
            }
        }
        var agreed = yes
        if !agreed, Terminal.stdinIsTerminal, Terminal.stderrIsTerminal {
            agreed = Terminal.confirm(
                prompt: "Cut \(path) back to change \(plan.keepsThroughChange)? Everything listed is lost. [y/N] ")
        }
        guard agreed else {
            throw KeychainError(
                .decode,
                "the keychain \(path) is damaged and was not changed; to cut it back as shown run 'latchkey verify --repair --yes', or restore from a backup"
            )
        }
        try Keychain.repair(plan, devicePath: global.devicePath)
        Output.note("cut \(path) back to change \(plan.keepsThroughChange) (\(plan.droppedBytes) bytes removed)")
        return !json
    }
}
