import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyFormat
import LatchkeySync

/// `latchkey status`: what the agent holds and what is unlocked.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract:
            "Say whether an agent runs and, per keychain it holds, which protection classes are unlocked and how its last sync ended.",
        discussion: """
            Exit 0 when an agent answers, 1 when none does (a note on stderr says where it \
            looked). The keychain of --keychain / LATCHKEY_KEYCHAIN is listed even when the \
            agent has not opened it yet. For a keychain in a sync circle, a line says when it \
            last synced and, when the last sync failed, why (the agent tries again by itself).

            Example:
              latchkey status
              latchkey status --json | jq '.keychains[].unlocked'
            """
    )

    @Flag(
        help:
            "Print JSON: pid, socket, protocolVersion, idleTimeout, dumpable, keychains [{keychain, device, hasPasscode, unlocked, unlockedOnce, idleSeconds}], sync {keychain: {lastSync, lastError, warnings}}."
    )
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    /// The JSON form: the agent's status and, per keychain that syncs, its last sync.
    struct JSONForm: Encodable {
        let status: AgentStatus
        let sync: [String: SyncJSON]
        enum Key: String, CodingKey { case sync }
        func encode(to encoder: any Encoder) throws {
            try status.encode(to: encoder)
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(sync, forKey: .sync)
        }
    }

    struct SyncJSON: Encodable {
        /// Seconds since 1970 of the last sync that succeeded (0: none yet).
        let lastSync: Double
        /// Why the last sync failed; empty when it succeeded.
        let lastError: String
        let warnings: [String]
    }

    func run() throws {
        let mine = AgentSocket.absolute(global.keychainPath)
        guard let agent = try AgentClient.connect() else {
            Output.note("no agent answers at \(AgentSocket.defaultPath()); start one with 'latchkey agent --daemon'")
            if let line = StatusCommand.syncLine(mine) { Output.note("\(mine): \(line)") }
            throw ExitCode(1)
        }
        let status = try agent.status()
        let paths = status.keychains.map(\.keychain) + (status.keychains.contains { $0.keychain == mine } ? [] : [mine])
        if json {
            var sync: [String: SyncJSON] = [:]
            for p in paths {
                if let s = SyncEngine.lastOutcome(keychainPath: p) {
                    sync[p] = SyncJSON(lastSync: s.lastSync, lastError: s.lastError, warnings: s.warnings)
                }
            }
            try Output.json(encoding: JSONForm(status: status, sync: sync))
            return
        }
        let idle =
            status.idleTimeout > 0 ? "locks after \(Int(status.idleTimeout)) s without use" : "never locks by itself"
        Output.line("agent: pid \(status.pid) at \(status.socket); \(idle)")
        for k in status.keychains {
            Output.line("\(k.keychain): \(StatusCommand.describe(k))")
            if let line = StatusCommand.syncLine(k.keychain) { Output.line("  \(line)") }
        }
        if !status.keychains.contains(where: { $0.keychain == mine }) {
            Output.line("\(mine): not open in the agent (locked; the next command or 'latchkey unlock' opens it)")
            if let line = StatusCommand.syncLine(mine) { Output.line("  \(line)") }
        }
    }

    /// How the last sync of the keychain at `path` ended; nil when it does not sync.
    static func syncLine(_ path: String) -> String? {
        guard let s = SyncEngine.lastOutcome(keychainPath: path) else { return nil }
        let last = s.lastSync > 0 ? "last synced \(ago(s.lastSync))" : "never synced"
        var line = s.lastError.isEmpty ? "sync: \(last)" : "sync: the last sync failed (\(last)): \(s.lastError)"
        if !s.warnings.isEmpty { line += "; \(s.warnings.count) warning(s), see 'latchkey sync status'" }
        return line
    }

    static func ago(_ t: Double) -> String {
        let s = max(0, Int(Date().timeIntervalSince1970 - t))
        if s < 120 { return "\(s) s ago" }
        if s < 7200 { return "\(s / 60) min ago" }
        if s < 172_800 { return "\(s / 3600) h ago" }
        return "\(s / 86400) days ago"
    }

    static func describe(_ k: AgentKeychainState) -> String {
        let codes = k.unlocked.joined(separator: " ")
        if !k.hasPasscode { return "no passcode; available: \(codes)" }
        if k.unlocked.contains(ProtectionClass.whenUnlocked.code) { return "unlocked (\(codes))" }
        if k.unlockedOnce { return "locked; AfterFirstUnlock still available (\(codes))" }
        return
            "locked: the agent has not had the passcode since it opened the file or since the passcode was changed (\(codes)); give it with 'latchkey unlock'"
    }
}
