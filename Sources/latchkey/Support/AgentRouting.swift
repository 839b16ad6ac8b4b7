import Latchkey

extension GlobalSettings {
    /// An agent location that cannot be used never stops a command: the default one (made first
    /// by another user, a symlink, a wrong mode) is given up silently, as when no agent runs
    /// (KeychainEnvironment.open); one the user named in LATCHKEY_AGENT_SOCK is given up with
    /// this warning, which says why, and the command opens the file itself.
    static func agentUnusable(_ error: KeychainError) {
        Output.note(
            "warning: not using the agent of LATCHKEY_AGENT_SOCK: \(error.message); opening the keychain file directly")
    }
}
