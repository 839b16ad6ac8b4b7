import ArgumentParser
import Latchkey
import LatchkeyFormat
import LatchkeySync

/// `latchkey history`: the earlier versions of synced items, and putting one back.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the versions of synced items (every change any machine synced) and restore one.",
        discussion: """
            Every version a machine of the circle synced is kept, the losing side of a \
            conflict too (spec/SYNC.md §8.6). Secrets are never printed here. --restore N \
            puts version N back: as an update when the item exists, as a new item when it was \
            deleted; the next 'latchkey sync' sends it.

            Example:
              latchkey history --service mail --account alice
              latchkey history --service mail --account alice --restore 2
            """)

    @Option(help: ArgumentHelp("Only items of this service (or server).", valueName: "service")) var service: String?
    @Option(help: ArgumentHelp("Only items of this account.", valueName: "account")) var account: String?
    @Option(help: ArgumentHelp("Put version N of the list back.", valueName: "N")) var restore: Int?
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let engine = try SyncCommand.engine(global)
        let all = try engine.history()
        func text(_ p: ItemPlaintext?, _ name: String) -> String? {
            if case .string(let s)? = p?.attributes[name] { return s }
            return nil
        }
        // A delete carries no attributes: it is shown with the item's other versions.
        var names: [[UInt8]: (String, String)] = [:]
        for e in all {
            if let p = e.plaintext, names[e.syncID] == nil {
                names[e.syncID] = (text(p, "svce") ?? text(p, "srvr") ?? "", text(p, "acct") ?? "")
            }
        }
        let shown = all.filter { e in
            let (s, a) = names[e.syncID] ?? ("", "")
            return (service == nil || service == s) && (account == nil || account == a)
        }
        if let restore {
            guard restore >= 1, restore <= shown.count else {
                throw KeychainError(.param, "there is no version \(restore); 'latchkey history' lists \(shown.count)")
            }
            let asNew = try engine.restore(shown[restore - 1])
            Output.note(asNew ? "restored version \(restore) as a new item" : "restored version \(restore)")
            return
        }
        if shown.isEmpty { Output.note("no synced versions match") }
        for (i, e) in shown.enumerated() {
            let (s, a) = names[e.syncID] ?? ("?", "?")
            let millis = Double(e.version.hlc >> 16) / 1000 - 978_307_200
            let what =
                e.version.kind == .delete ? "deleted" : (e.plaintext == nil ? "changed (class locked here)" : "changed")
            Output.line(
                "\(i + 1)\t\(ISODate.format(millis))\t\(e.machine)\t\(what)\t\(s)/\(a)\(e.current ? "\t(current)" : "")"
            )
        }
    }
}
