import Latchkey

extension GlobalOptions {
    /// The keychain as `latchkey agent` serves it, when an agent answers (spec/AGENT.md);
    /// nil: the command opens the file itself. The one place where commands meet the agent.
    ///
    /// `.eager` commands (verify, and any that must hold every class key in this process,
    /// such as a backup) and `--accept-rollback` always open the file themselves.
    func keychainThroughAgent(unlock: Unlock, acceptRollback: Bool) throws -> Keychain? {
        guard unlock != .eager, !acceptRollback else { return nil }
        return try Keychain.openThroughAgent(path: keychainPath, devicePath: devicePath)
    }
}
