import ArgumentParser
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyFormat

/// `latchkey status`: what the agent holds and what is unlocked.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Say whether an agent runs and, per keychain it holds, which protection classes are unlocked.",
        discussion: """
            Exit 0 when an agent answers, 1 when none does (a note on stderr says where it \
            looked). The keychain of --keychain / LATCHKEY_KEYCHAIN is listed even when the \
            agent has not opened it yet.

            Example:
              latchkey status
              latchkey status --json | jq '.keychains[].unlocked'
            """
    )

    @Flag(
        help:
            "Print JSON: pid, socket, protocolVersion, idleTimeout, dumpable, keychains [{keychain, device, hasPasscode, unlocked, unlockedOnce, idleSeconds}]."
    )
    var json = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        guard let agent = try AgentClient.connect() else {
            Output.note("no agent answers at \(AgentSocket.defaultPath()); start one with 'latchkey agent --daemon'")
            throw ExitCode(1)
        }
        let status = try agent.status()
        if json {
            try Output.json(encoding: status)
            return
        }
        let idle =
            status.idleTimeout > 0 ? "locks after \(Int(status.idleTimeout)) s without use" : "never locks by itself"
        Output.line("agent: pid \(status.pid) at \(status.socket); \(idle)")
        for k in status.keychains {
            Output.line("\(k.keychain): \(StatusCommand.describe(k))")
        }
        let mine = AgentSocket.absolute(global.keychainPath)
        if !status.keychains.contains(where: { $0.keychain == mine }) {
            Output.line("\(mine): not open in the agent (locked; the next command or 'latchkey unlock' opens it)")
        }
    }

    static func describe(_ k: AgentKeychainState) -> String {
        let codes = k.unlocked.joined(separator: " ")
        if !k.hasPasscode { return "no passcode; available: \(codes)" }
        if k.unlocked.contains(ProtectionClass.whenUnlocked.code) { return "unlocked (\(codes))" }
        if k.unlockedOnce { return "locked; AfterFirstUnlock still available (\(codes))" }
        return "locked; not unlocked since the agent opened it (\(codes))"
    }
}
