import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyFormat
import LatchkeySync

/// `latchkey history`: the versions of passwords, one numbered listing, and putting one back.
///
/// Two stores keep versions, and the listing is one: the keychain's own history (spec/FORMAT.md
/// §7.7: every update and delete keeps the version it replaces, on every keychain), and, when
/// the keychain syncs, the sync history (spec/SYNC.md §8.6: every version any machine synced).
/// A sync version that the keychain's listing already shows is left out: the same item (the
/// sync id is the item's UUID) with the same modification date (`mdat`, which sync carries
/// with the plaintext, so a version has one `mdat` on every machine), one sync version for each
/// of the keychain's (a change sent twice shows); a sync delete is left out when the keychain
/// lists the item as deleted. Sync versions carry no UUID of a version and the listing no
/// data, so neither a record's identity nor a digest of its content could be compared. What is left is what this keychain never
/// held or no longer keeps: the losing side of a conflict, another machine's versions, the
/// versions that left the keychain's bound.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the earlier versions of passwords (never a secret) and put one back.",
        discussion: CommandLineForms.discussion(
            short:
                "Every update and delete keeps the version it replaces (LATCHKEY_HISTORY_VERSIONS, default 10; LATCHKEY_HISTORY_DAYS, default 365). --restore N puts entry N back.",
            full: """
                Every update and delete keeps the version it replaces, encrypted as the item \
                is: the last LATCHKEY_HISTORY_VERSIONS versions of each item (default 10; 0 \
                keeps none) for LATCHKEY_HISTORY_DAYS days (default 365; 0: no bound by age), \
                as the process that made the change had them set (through an agent, the \
                agent's). One numbered listing, per item the current version first, then the \
                earlier ones newest first: DATE is when the version was written (for a deleted \
                item, when it was deleted), WHERE is 'here' for this keychain's versions and \
                the machine's name for versions only sync keeps (spec/SYNC.md). Secrets are \
                never printed. --restore N puts entry N back: as an update when the item \
                exists (its current version joins the history), as a new item when it was \
                deleted. 'latchkey compact --drop-history' removes every earlier version.
                """,
            example: """
                  latchkey history mail/alice
                  latchkey history mail/alice --restore 2
                  latchkey history --class inet --server example.com
                """)
    )

    @Argument(help: ServiceAccount.argumentHelp("The"), completion: Completion.serviceAccount)
    var selector: String?

    @OptionGroup var item: PasswordItemOptions

    @Option(help: ArgumentHelp("Put entry N of the listing back.", valueName: "n"))
    var restore: Int?

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func validate() throws {
        guard CommandLineForms.validating else { return }
        if let restore, restore < 1 {
            throw ValidationError("--restore takes the number of an entry of the listing (1 or more)")
        }
    }

    /// One line of the listing.
    struct Entry {
        enum Source {
            /// A version of this keychain (`Keychain.history`).
            case here(Latchkey.ItemVersion)
            /// A version that only the sync history holds.
            case synced(HistoryEntry)
        }
        var source: Source
        var uuid: [UInt8]
        /// current, changed or deleted.
        var what: String
        /// Seconds since 2001 (the keychain's dates).
        var date: Double
        var place: String
        var name: String
        var label: String
        var isCurrent: Bool { what == "current" }
    }

    func run() throws {
        var query = try item.query(command: "history")
        guard [.genericPassword, .internetPassword].contains(query.itemClass) else {
            throw UsageError(
                "history lists passwords (--class genp or inet); keys and certificates have none here",
                command: "history")
        }
        // Synchronizable items have a history too: both unless --synchronizable says which.
        if item.common.synchronizable == nil { query.synchronizable = .any }
        query = try ServiceAccount.query(query, selector: selector, command: "history")

        let settings = global.settings
        // A keychain that syncs is opened in this process, as 'latchkey sync' opens it: the sync
        // history is read from the file's side (its state, the remote's checkout).
        let syncs = FileManager.default.fileExists(
            atPath: SyncEngine.directory(for: settings.keychainPath) + "/state")
        let keychain = syncs ? try settings.open(unlock: .eager) : try settings.open(unlock: .whenNeeded)
        let history = try settings.retryingUnlocked(keychain) { () -> ItemHistory in
            let h = try keychain.history(query)
            // Nothing readable: a locked item the query meets fails as find fails (exit 4, or
            // the passcode asked on a terminal), rather than reading as no match.
            if h.versions.isEmpty {
                if h.locked > 0 { throw HistoryCommand.locked(h.locked, alone: true) }
                _ = try keychain.find(query, limit: 1, includeData: false)
            }
            return h
        }
        let engine = syncs ? try SyncEngine(keychain: keychain) : nil
        let synced = try engine?.history() ?? []
        let (entries, lockedSync) = HistoryCommand.listing(history, synced, query)
        let locked = history.locked + lockedSync

        if let restore {
            guard restore <= entries.count else {
                throw KeychainError(
                    .itemNotFound,
                    "there is no entry \(restore): the listing has \(entries.count) (a version may have left the history since it was listed); list the history again"
                )
            }
            try HistoryCommand.restore(entries[restore - 1], number: restore, keychain: keychain, engine: engine)
            return
        }
        guard !entries.isEmpty else {
            if locked > 0 { throw HistoryCommand.locked(locked, alone: true) }
            throw KeychainError(.itemNotFound, "no item matches the query, and no earlier version of one does")
        }
        var table = Table(["N", "DATE", "WHAT", "WHERE", "ITEM", "LABEL"], rightAligned: [0])
        for (i, e) in entries.enumerated() {
            table.append([String(i + 1), ISODate.format(e.date), e.what, e.place, e.name, e.label])
        }
        Output.table(table)
        if locked > 0 { Output.note(HistoryCommand.locked(locked, alone: false).message) }
    }

    /// What to say of `n` earlier versions whose class is locked; `alone`: nothing else is listed.
    static func locked(_ n: Int, alone: Bool) -> KeychainError {
        KeychainError(
            .interactionNotAllowed,
            "\(n) earlier version(s) are locked\(alone ? ", and no other version matches" : ""): run 'latchkey unlock' (or give the passcode) to list them"
        )
    }

    /// Puts `e` back and says so on stderr.
    static func restore(_ e: Entry, number: Int, keychain: Keychain, engine: SyncEngine?) throws {
        if e.isCurrent {
            throw UsageError(
                "entry \(number) is the current version of \(e.name); choose an earlier one", command: "history",
                status: .param)
        }
        let asNew: Bool
        switch e.source {
        case .here(let v):
            asNew = try keychain.restore(v).asNew
        case .synced(let s):
            guard s.plaintext != nil, let engine else {
                throw UsageError(
                    "entry \(number) is a delete, which holds no version to put back; choose the version before it",
                    command: "history", status: .param)
            }
            asNew = try engine.restore(s)
        }
        Output.note("restored version \(number) of \(e.name)\(asNew ? " as a new item" : "")")
    }

    /// The one numbered listing: the keychain's versions, then the sync versions it does not
    /// show (the type's comment says which), grouped by item (the item with the newest version
    /// first), each item's current version first, then the others newest first.
    /// - Returns: the entries, and how many sync versions of the named items are locked here.
    static func listing(_ history: ItemHistory, _ synced: [HistoryEntry], _ query: Query) -> ([Entry], Int) {
        var entries: [Entry] = []
        // What the keychain's listing holds of each item: how many versions of each mdat (each
        // stands for one sync version: a second sync copy of it, a change sent twice, is
        // listed), and whether it lists a delete.
        var shown: [[UInt8]: [UInt64: Int]] = [:]
        var deletedHere = Set<[UInt8]>()
        for v in history.versions {
            let a = v.item.attributes
            let what: String
            let date: Double
            switch v.kind {
            case .current:
                what = "current"
                date = mdat(a) ?? (v.date - unixToReference)
            case .replaced:
                what = "changed"
                date = mdat(a) ?? (v.date - unixToReference)
            case .deleted:
                what = "deleted"
                // The record's time has whole seconds: a delete in the second its version was
                // written is not listed before that version.
                date = max(v.date - unixToReference, mdat(a) ?? -.infinity)
                deletedHere.insert(v.uuid)
            }
            if let m = mdat(a) { shown[v.uuid, default: [:]][m.bitPattern, default: 0] += 1 }
            entries.append(
                Entry(
                    source: .here(v), uuid: v.uuid, what: what, date: date, place: "here",
                    name: name(v.item.itemClass, a), label: text(a["labl"]) ?? ""))
        }
        // The sync versions: of the items listed above, and of the items whose versions match
        // the query (an item this keychain does not hold: a conflict's loser, say).
        var named = Set(shown.keys).union(deletedHere)
        var names: [[UInt8]: String] = [:]
        for e in synced {
            guard let p = e.plaintext else { continue }
            if names[e.syncID] == nil { names[e.syncID] = name(p.itemClass, p.attributes) }
            if query.matches(p) { named.insert(e.syncID) }
        }
        var locked = 0
        for e in synced where named.contains(e.syncID) {
            let what: String
            let date: Double
            var label = ""
            if e.version.kind == .delete {
                guard !deletedHere.contains(e.syncID) else { continue }
                what = "deleted"
                date = Double(e.version.hlc >> 16) / 1000 - unixToReference
            } else {
                guard let p = e.plaintext else {
                    locked += 1
                    continue
                }
                let m = mdat(p.attributes)
                let held = shown[e.syncID] != nil
                if let m, let n = shown[e.syncID]?[m.bitPattern], n > 0 {
                    shown[e.syncID]![m.bitPattern] = n - 1
                    continue
                }
                what = e.current && !held ? "current" : "changed"
                date = m ?? Double(e.version.hlc >> 16) / 1000 - unixToReference
                label = text(p.attributes["labl"]) ?? ""
            }
            entries.append(
                Entry(
                    source: .synced(e), uuid: e.syncID, what: what, date: date, place: e.machine,
                    name: names[e.syncID] ?? "?", label: label))
        }
        // Items by their newest entry; in an item, the current version, then newest first (the
        // keychain's own before sync's at the same date, each in its own order).
        var newest: [[UInt8]: Double] = [:]
        for e in entries { newest[e.uuid] = max(newest[e.uuid] ?? -.infinity, e.date) }
        let indexed = Array(entries.enumerated())
        let sorted = indexed.sorted { x, y in
            let (a, b) = (x.element, y.element)
            if a.uuid != b.uuid {
                let (na, nb) = (newest[a.uuid]!, newest[b.uuid]!)
                return na != nb ? na > nb : a.uuid.lexicographicallyPrecedes(b.uuid)
            }
            if a.isCurrent != b.isCurrent { return a.isCurrent }
            if a.date != b.date { return a.date > b.date }
            return x.offset < y.offset
        }
        return (sorted.map(\.element), locked)
    }

    /// Seconds between 1970 and 2001.
    static let unixToReference = 978_307_200.0

    static func mdat(_ a: [String: AttributeValue]) -> Double? {
        if case .date(let d)? = a["mdat"] { return d }
        return nil
    }

    static func text(_ v: AttributeValue?) -> String? {
        switch v {
        case .string(let s)?: return s
        case .data(let d)?: return String(validating: d, as: UTF8.self)
        default: return nil
        }
    }

    /// SERVICE/ACCOUNT, or SERVER/ACCOUNT for an internet password.
    static func name(_ c: ItemClass, _ a: [String: AttributeValue]) -> String {
        let first = text(a[c == .internetPassword ? "srvr" : "svce"]) ?? ""
        return first + "/" + (text(a["acct"]) ?? "")
    }
}
