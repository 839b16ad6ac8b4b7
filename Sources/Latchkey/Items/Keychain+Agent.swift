import LatchkeyFormat

/// A keychain served by `latchkey agent`: opening one, and what only such a keychain has (the
/// agent's view of it, whether the agent stopped). The requests themselves are `AgentBackend`'s.
extension Keychain {
    /// The keychain at `path` as `latchkey agent` holds it, when an agent answers at
    /// `socketPath` (default: LATCHKEY_AGENT_SOCK, else the per-user runtime directory);
    /// nil when none answers, so the caller opens the file itself (`open`).
    ///
    /// Every operation of the returned keychain is carried out by the agent with the agent's
    /// class keys; `caller` and `authenticationHandler` are this process's and travel with each
    /// request. Results and errors are those of a direct open.
    /// - Throws: the errors of `open` (from the agent); errSecIO for a socket that is not this
    ///   user's.
    ///
    /// When the default location (no `socketPath`, no LATCHKEY_AGENT_SOCK) cannot be used — its
    /// directory was made first by another user, is a symlink, has the wrong mode, or holds a
    /// socket that is not this user's — the caller opens the file itself: nil, silently, as when
    /// no agent runs. Another user can thereby keep this user's commands from the agent, never
    /// from their keychain.
    public static func openThroughAgent(path: String, devicePath: String, socketPath: String? = nil) throws -> Keychain?
    {
        try openThroughAgent(path: path, devicePath: devicePath, socketPath: socketPath, unusable: nil)
    }

    /// `openThroughAgent`, and for an agent the caller asked for (LATCHKEY_AGENT_SOCK, or a
    /// `socketPath`) that cannot be reached: with `unusable`, it is told why and the caller
    /// opens the file itself (nil); without, the error is thrown. With `asking` false the
    /// agent is not asked to open the keychain now: its first operation does that and throws
    /// what opening would have thrown (`AgentClient.keychain(path:devicePath:asking:)`).
    package static func openThroughAgent(
        path: String, devicePath: String, socketPath: String? = nil,
        unusable: ((KeychainError) -> Void)?, asking: Bool = true
    ) throws -> Keychain? {
        let asked = socketPath != nil || AgentClient.socketOverride != nil || AgentSocket.isExplicit()
        let client: AgentClient?
        do {
            client = try AgentClient.connect(socketPath: socketPath)
        } catch let e as KeychainError {
            guard asked else { return nil }
            guard let unusable else { throw e }
            unusable(e)
            return nil
        }
        guard let client else { return nil }
        return try client.keychain(path: path, devicePath: devicePath, asking: asking)
    }

    /// Whether `latchkey agent` serves this keychain (see `openThroughAgent`).
    public var isServedByAgent: Bool { backend is AgentBackend }

    /// Unlocks with a passcode the caller was given (LATCHKEY_PASSCODE, a passcode file),
    /// unless an agent serves this keychain and holds its WhenUnlocked keys already: then the
    /// keys are there and the KDF (over 100 ms) is not paid again, as ssh-agent does not ask
    /// for a loaded key's passphrase. A wrong passcode goes unnoticed in that case only; it can
    /// unlock nothing that is not unlocked. `lock` drops ak, aku and akpu together, so
    /// `.whenUnlocked` being available means every passcode class is.
    public func unlockUnlessAgentIsUnlocked(passcode: [UInt8]) throws {
        if isServedByAgent, hasPasscode, isAvailable(.whenUnlocked) { return }
        try unlock(passcode: passcode)
    }

    /// Served by an agent that has stopped since: every operation fails with
    /// errSecNotAvailable, and the keychain should be opened again (directly, or through a new
    /// agent) — all keys are gone, as after a reboot.
    public var agentStopped: Bool { (backend as? AgentBackend)?.stopped ?? false }

    /// The agent's view of this keychain (nil for a keychain this process opened itself).
    /// - Throws: errSecNotAvailable once the keychain was closed; the agent's errors.
    public func agentState() throws -> AgentKeychainState? { try (openBackend() as? AgentBackend)?.agentState() }
}
