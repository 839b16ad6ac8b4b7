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

/// `latchkey backup-list`: the items of a backup archive, never their secrets.
struct BackupListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup-list",
        abstract:
            "List the items of a backup archive (class, name, service, label, group, protection, date); never a secret.",
        discussion: """
            Verifies the whole archive first, as 'backup-verify' does, then lists its items in \
            archive order: the table of 'dump' (CLASS, NAME, SERVICE, LABEL, GROUP, PDMN, \
            MODIFIED), or with --json / --jsonl one object per item with the item UUID, \
            "class", the item's acct, svce, srvr, labl, agrp (whichever it has), "pdmn", \
            "mdat" (ISO 8601), "userPresence" and "readable". Secrets are never decrypted \
            into the output. A ThisDeviceOnly item (aku, cku, dku) of a backup made on another \
            device is listed as present but unreadable ("readable": false, "reason": \
            "thisDeviceOnlyFromAnotherDevice"): its class key needs that device's secret. \
            Needs the backup password, not a keychain.

            Exit status: as backup-verify.

            Example:
              latchkey backup-list keychain.backup
              latchkey backup-list kc.backup --jsonl | jq -r 'select(.readable) | .acct'
            """
    )

    @Argument(help: ArgumentHelp("The backup archive, or - for stdin.", valueName: "file|-"), completion: .file())
    var file: String

    @Flag(help: "Print a JSON array of the items.")
    var json = false

    @Flag(help: "Print each item as one JSON object on one line.")
    var jsonl = false

    @OptionGroup(title: "Backup password") var password: BackupPasswordOptions
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if json, jsonl { throw ValidationError("--json and --jsonl contradict each other; give one") }
    }

    /// One item of `--json` / `--jsonl`: Apple's attribute codes for what the item has.
    struct Entry: Codable, Equatable {
        var uuid: String
        var `class`: String?
        var acct: String?
        var svce: String?
        var srvr: String?
        var labl: String?
        var agrp: String?
        var pdmn: String
        var mdat: String?
        var userPresence: Bool
        var readable: Bool
        var reason: String?

        init(_ listed: BackupListedItem) {
            uuid = hexString(listed.uuid)
            pdmn = listed.protection.code
            userPresence = listed.requiresUserPresence
            readable = listed.attributes != nil
            reason = listed.unreadable?.rawValue
            guard let p = listed.attributes else { return }
            `class` = p.itemClass.rawValue
            func value(_ code: String) -> String? {
                switch p.attributes[code] {
                case .string(let s)?: return s
                case .data(let d)?: return Data(d).base64EncodedString()
                case .integer(let i)?: return String(i)
                case .date(let t)?: return ISODate.format(t)
                case nil: return nil
                }
            }
            acct = value("acct")
            svce = value("svce")
            srvr = value("srvr")
            labl = value("labl")
            agrp = value("agrp")
            mdat = value("mdat")
        }
    }

    func run() throws {
        Terminal.cleanUpOnSignals()
        let (verified, progress) = try BackupVerifyCommand.verify(
            file, command: "backup-list", password: password, global: global)
        defer { progress.finish() }
        var pending: [UInt8] = []
        func flush(_ force: Bool) {
            if force || pending.count >= 1 << 16 {
                progress.finish()
                Output.data(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
        if json || jsonl {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if json { pending += Array("[".utf8) }
            var first = true
            try verified.forEachItem { listed in
                if json { pending += Array((first ? "\n  " : ",\n  ").utf8) }
                first = false
                pending += Array(try encoder.encode(Entry(listed)))
                if jsonl { pending.append(UInt8(ascii: "\n")) }
                flush(false)
            }
            if json { pending += Array((first ? "]\n" : "\n]\n").utf8) }
            flush(true)
            return
        }
        // A table sized in one pass and printed in the next, as `dump` does.
        let header = ["CLASS", "NAME", "SERVICE", "LABEL", "GROUP", "PDMN", "MODIFIED"]
        var sizing = Table.Sizing(header)
        try verified.forEachItem { sizing.measure(BackupListCommand.row($0).map(TerminalText.quoted)) }
        let widths = sizing.widths(fitting: Terminal.columns(STDOUT_FILENO))
        pending += Array((Style.stdout.bold(Table.line(header, sizing.headerCounts, widths)) + "\n").utf8)
        var unreadable = 0
        try verified.forEachItem { listed in
            if listed.attributes == nil { unreadable += 1 }
            let cells = BackupListCommand.row(listed).map(TerminalText.quoted)
            pending += Array((Table.line(cells, cells.map(Table.length), widths) + "\n").utf8)
            flush(false)
        }
        flush(true)
        if unreadable > 0 {
            Output.note(
                "\(unreadable) ThisDeviceOnly item(s) are shown as unreadable: the backup was made on device \(verified.info.sourceDeviceUUID), and only that device's secret opens them"
            )
        }
    }

    /// The row of `dump` for an item; an unreadable one shows only its protection class.
    static func row(_ listed: BackupListedItem) -> [String] {
        guard let p = listed.attributes else {
            return ["?", "(unreadable: ThisDeviceOnly item of another device)", "", "", "", listed.protection.code, ""]
        }
        return DumpCommand.row(p.itemClass, p.attributes, listed.protection)
    }
}
