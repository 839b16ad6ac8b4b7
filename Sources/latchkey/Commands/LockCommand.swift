import ArgumentParser
import Latchkey

/// `latchkey lock`: drops the WhenUnlocked keys in the agent.
struct LockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract:
            "Lock the keychain in the agent: WhenUnlocked keys (ak, aku, akpu) are dropped, AfterFirstUnlock keys (ck, cku) stay.",
        discussion: """
            As a locked iPhone: items protected AfterFirstUnlock stay readable until the agent \
            stops; WhenUnlocked items fail with errSecInteractionNotAllowed (exit 4) until \
            'latchkey unlock'. With --all, every keychain the agent holds is locked. Fails with \
            errSecNotAvailable (exit 4) when no agent answers.

            Example:
              latchkey lock
              latchkey lock --all
            """
    )

    @Flag(help: "Lock every keychain the agent holds.")
    var all = false

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let agent = try runningAgent()
        if all {
            try agent.lockAll()
            Output.progress("locked every keychain in the agent")
            return
        }
        try agent.lock(keychainPath: global.keychainPath, devicePath: global.devicePath)
        Output.progress("locked \(global.keychainPath) in the agent")
    }
}
