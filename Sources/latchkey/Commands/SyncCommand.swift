import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import Latchkey
import LatchkeyFormat
import LatchkeySync

/// `latchkey sync`: synchronizable items follow their owner between machines, end-to-end
/// encrypted, over a git remote (spec/SYNC.md).
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync synchronizable items with your other machines over a git remote, end-to-end encrypted.",
        discussion: """
            Only items with kSecAttrSynchronizable (--synchronizable) sync; ThisDeviceOnly items \
            never leave this machine. The remote (any URL git accepts: ssh, https, file) holds \
            only encrypted, signed files: its host reads no item or attribute, and a change it \
            makes is refused. git must be installed. 'latchkey sync' alone fetches, merges and \
            pushes.

            Example:
              latchkey sync init --remote git@example.com:me/kc.git
              latchkey sync join --remote git@example.com:me/kc.git
              latchkey sync approve K7QD-M2XA-PL9R
              latchkey sync
            """,
        subcommands: [
            SyncNowCommand.self, SyncInitCommand.self, SyncJoinCommand.self, SyncApproveCommand.self,
            SyncRemoveCommand.self, SyncDevicesCommand.self, SyncStatusCommand.self, SyncConfigCommand.self
        ],
        defaultSubcommand: SyncNowCommand.self
    )

    /// The keychain opened in this process (sync needs the file), unlocked as far as it can be.
    static func engine(_ global: GlobalOptions) throws -> SyncEngine {
        let keychain = try global.open(unlock: .eager)
        return try SyncEngine(keychain: keychain)
    }

    static func defaultName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        gethostname(&buf, 255)
        let h = String(cString: buf)
        return h.isEmpty ? "machine" : h
    }
}

struct SyncNowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "now", abstract: "Fetch, merge and push (what 'latchkey sync' alone does).")

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let engine = try SyncCommand.engine(global)
        let r = try engine.sync()
        for w in r.warnings { Output.note("warning: \(w)") }
        var parts = [
            "sent \(r.sentPuts) change(s) and \(r.sentDeletes) delete(s)",
            "received \(r.receivedPuts) change(s) and \(r.receivedDeletes) delete(s)"
        ]
        if r.conflicts > 0 {
            parts.append("\(r.conflicts) conflict(s) decided, the losing versions kept in 'latchkey history'")
        }
        if r.waiting > 0 { parts.append("\(r.waiting) item(s) wait for their class to be unlocked here") }
        if r.resurrectionsRemoved > 0 {
            parts.append("\(r.resurrectionsRemoved) restored item(s) removed again: another machine had deleted them")
        }
        Output.status("synced: " + parts.joined(separator: "; "))
    }
}

struct SyncInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Found a circle on an empty git remote, with this machine as its first member.",
        discussion: """
            Prints the circle's recovery key once, on stdout: keep it offline (paper, a safe). \
            With it, 'latchkey sync join --recovery-key-file' adds a machine when no member is \
            at hand. The remote must be empty (a new bare repository).
            """)

    @Option(help: ArgumentHelp("The git remote (ssh, https or file URL).", valueName: "url")) var remote: String
    @Option(help: ArgumentHelp("This machine's name in the circle (default: the host name).", valueName: "name"))
    var name: String?
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let engine = try SyncCommand.engine(global)
        let key = try engine.initialize(remote: remote, name: name ?? SyncCommand.defaultName())
        Output.note(
            "founded a sync circle on \(redacted(remote)). The recovery key follows, shown this once: keep it offline.")
        Output.line(key)
        let r = try engine.sync()
        Output.status("synced: sent \(r.sentPuts) item(s)")
    }
}

struct SyncJoinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Ask to join the circle on a remote; a member approves with the code shown.",
        discussion: """
            Shows a code; run 'latchkey sync approve CODE' on a machine of the circle, then \
            'latchkey sync' here. The code binds this machine's keys and the circle it saw: \
            whoever controls the remote cannot slip in a machine of its own. With \
            --recovery-key-file the recovery key approves this machine at once.
            """)

    @Option(help: ArgumentHelp("The git remote of the circle.", valueName: "url")) var remote: String
    @Option(help: ArgumentHelp("This machine's name in the circle (default: the host name).", valueName: "name"))
    var name: String?
    @Option(
        name: .customLong("recovery-key-file"),
        help: ArgumentHelp("A file holding the circle's recovery key (- for stdin).", valueName: "file"))
    var recoveryKeyFile: String?
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let engine = try SyncCommand.engine(global)
        let name = self.name ?? SyncCommand.defaultName()
        if let file = recoveryKeyFile {
            var bytes =
                file == "-"
                ? try InputFile.standardInput(what: "recovery key", zeroing: true)
                : try InputFile.secret(file, what: "recovery key file")
            defer { for i in bytes.indices { bytes[i] = 0 } }
            try engine.join(remote: remote, name: name, recoveryKey: String(decoding: bytes, as: UTF8.self))
            Output.note("joined the circle on \(redacted(remote)) with the recovery key, and synced")
            return
        }
        let code = try engine.join(remote: remote, name: name)
        Output.note("asked to join. On a machine of the circle run: latchkey sync approve \(code)")
        Output.line(code)
    }
}

struct SyncApproveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Add the machine whose 'sync join' shows this code.",
        discussion: "Without a code, lists the machines asking to join (their codes are shown on them, not here).")

    @Argument(help: ArgumentHelp("The code the new machine shows.", valueName: "code")) var code: String?
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let engine = try SyncCommand.engine(global)
        guard let code else {
            let apps = try engine.applications()
            if apps.isEmpty { Output.note("no machine asks to join") }
            for a in apps {
                Output.line(
                    "\(a.application.member.name) (\(hexString(a.application.member.device).prefix(8))) asks to join")
            }
            return
        }
        let m = try engine.approve(code: code)
        Output.note("added \(m.name) to the circle; it syncs with its next 'latchkey sync'")
    }
}

struct SyncRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a machine from the circle: it can read nothing written after this.",
        discussion: "New keys are made for the remaining machines; the removed one keeps what it already had.")

    @Argument(help: ArgumentHelp("The machine's name or the start of its id.", valueName: "machine")) var machine:
        String
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let engine = try SyncCommand.engine(global)
        let m = try engine.remove(machine)
        Output.note("removed \(m.name) (\(hexString(m.device).prefix(8))) from the circle; new keys are in use")
    }
}

struct SyncDevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "List the machines of the circle (and those asking to join).")

    @Flag(help: "Print JSON: [{name, id, role, this}].") var json = false
    @OptionGroup(title: "Global options") var global: GlobalOptions

    struct Row: Encodable {
        let name: String
        let id: String
        let role: String
        let this: Bool
    }

    func run() throws {
        let engine = try SyncCommand.engine(global)
        let (members, epoch, pending) = try engine.members()
        let me = try engine.status()?.device
        let rows = members.map {
            Row(
                name: $0.name, id: hexString($0.device), role: $0.role == .recovery ? "recovery key" : "machine",
                this: $0.device == me)
        }
        if json {
            try Output.json(encoding: rows)
            return
        }
        for r in rows {
            Output.line(
                "\(r.id.prefix(8))  \(r.role == "machine" ? r.name : "(recovery key)")\(r.this ? "  (this machine)" : "")"
            )
        }
        for p in pending {
            Output.line("\(hexString(p.0.member.device).prefix(8))  \(p.0.member.name)  (asks to join)")
        }
        Output.progress("circle epoch \(epoch)")
    }
}

struct SyncStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "When this keychain last synced, and what failed or looked wrong.")

    @Flag(
        help:
            "Print JSON: {remote, device, epoch, lastSync, lastError, warnings, items, unpushedSegments, historyDays}.")
    var json = false
    @OptionGroup(title: "Global options") var global: GlobalOptions

    struct Status: Encodable {
        let remote: String
        let device: String
        let epoch: UInt32
        let lastSync: String?
        let lastError: String
        let warnings: [String]
        let items: Int
        let unpushedSegments: Int
        let historyDays: UInt32
    }

    func run() throws {
        let keychain = try global.open(unlock: .eager)
        let engine = try SyncEngine(keychain: keychain)
        let outcome = engine.lastOutcome()
        guard let s = try engine.status() else {
            Output.note(
                "this keychain does not sync; start with 'latchkey sync init --remote URL' or 'latchkey sync join --remote URL'"
            )
            throw ExitCode(1)
        }
        let last = outcome.lastSync > 0 ? ISODate.format(outcome.lastSync - 978_307_200) : nil
        let status = Status(
            remote: redacted(s.remote), device: hexString(s.device), epoch: s.epoch, lastSync: last,
            lastError: outcome.lastError,
            warnings: outcome.warnings, items: s.items.liveCount, unpushedSegments: s.outbox.count,
            historyDays: s.historyDays)
        if json {
            try Output.json(encoding: status)
            return
        }
        Output.line("remote: \(redacted(s.remote))")
        Output.line(
            "this machine: \(status.device.prefix(8)), circle epoch \(s.epoch)\(s.appliedAt != nil ? " (asked to join, not approved yet)" : "")"
        )
        Output.line(
            "last sync: \(last ?? "never")\(outcome.lastError.isEmpty ? "" : "; the last attempt failed: \(outcome.lastError)")"
        )
        Output.line("synced items: \(status.items); segments not yet pushed: \(status.unpushedSegments)")
        Output.line("history: this machine's versions kept \(s.historyDays) days (the newest of each item always)")
        for w in outcome.warnings { Output.line("warning: \(w)") }
    }
}

struct SyncConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Show or set how long this machine's versions stay in 'latchkey history'.",
        discussion: """
            Each machine keeps, of what it synced, every version younger than --history-days and \
            the newest put and delete of each item, whatever their age; older versions leave \
            the remote when the machine next replaces its segments by a base (spec/SYNC.md, \
            sections 7.5 and 8.6). Default: 365 days.

            Example:
              latchkey sync config --history-days 90
            """)

    @Option(
        name: .customLong("history-days"),
        help: ArgumentHelp("Keep this machine's versions for this many days (at least 1).", valueName: "days"))
    var historyDays: UInt32?
    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let days = try SyncCommand.engine(global).configure(historyDays: historyDays)
        Output.line("history-days: \(days)")
    }
}
