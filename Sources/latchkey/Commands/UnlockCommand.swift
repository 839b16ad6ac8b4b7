import ArgumentParser
import Latchkey

/// The agent, or the error that says none answers.
func runningAgent() throws -> AgentClient {
    guard let client = try AgentClient.connect() else {
        throw KeychainError(
            .notAvailable,
            "no agent answers at \(AgentSocket.defaultPath()); start one with 'latchkey agent --daemon' (or set LATCHKEY_AGENT_SOCK)"
        )
    }
    return client
}

/// `latchkey unlock`: hands the passcode to the agent once.
struct UnlockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlock",
        abstract: "Give the running agent the passcode, so later commands need none.",
        discussion: """
            The passcode comes from --passcode-file or LATCHKEY_PASSCODE, or is asked without \
            echo when stdin is a terminal. Every class of the keychain is then available \
            through the agent until 'latchkey lock', the idle timeout (WhenUnlocked classes), \
            or the agent stops (all). Fails with errSecNotAvailable (exit 4) when no agent \
            answers and errSecAuthFailed (exit 4) for a wrong passcode.

            Example:
              latchkey unlock
              LATCHKEY_PASSCODE=… latchkey unlock --keychain work.keychain
            """
    )

    @OptionGroup(title: "Global options") var global: GlobalOptions

    func run() throws {
        let keychain = try runningAgent().keychain(path: global.keychainPath, devicePath: global.devicePath)
        guard keychain.hasPasscode else {
            Output.progress("\(global.keychainPath) has no passcode: its classes are always available")
            return
        }
        guard let passcode = try global.passcodeOrPrompt("Passcode for \(global.keychainPath): ") else {
            throw KeychainError(
                .interactionNotAllowed,
                "no passcode given; set LATCHKEY_PASSCODE or --passcode-file, or run 'latchkey unlock' on a terminal")
        }
        try keychain.unlock(passcode: passcode)
        Output.progress("unlocked \(global.keychainPath) in the agent")
    }
}
