import Latchkey

extension GlobalOptions {
    /// The keychain as `latchkey agent` serves it, when an agent answers (spec/AGENT.md);
    /// nil: the command opens the file itself. The one place where commands meet the agent.
    ///
    /// `.eager` commands (verify, and any that must hold every class key in this process,
    /// such as a backup) and `--accept-rollback` always open the file themselves. An agent
    /// location that cannot be used never stops a command: the default one (made first by
    /// another user, a symlink, a wrong mode) is given up silently, as when no agent runs;
    /// one the user named in LATCHKEY_AGENT_SOCK is given up with a warning that says why.
    func keychainThroughAgent(unlock: Unlock, acceptRollback: Bool) throws -> Keychain? {
        guard unlock != .eager, !acceptRollback else { return nil }
        return try Keychain.openThroughAgent(path: keychainPath, devicePath: devicePath, unusable: { error in
            Output.note("warning: not using the agent of LATCHKEY_AGENT_SOCK: \(error.message); opening the keychain file directly")
        })
    }
}
