/// The file itself, for the other modules of the package that move every item of a keychain
/// at once (LatchkeyBackup: backup, restore, merge): the `StreamingBackend` capability of the
/// backend, which only a keychain opened in this process has.
extension Keychain {
    /// The file opened in this process; nil when the agent serves the keychain, or once it
    /// was closed.
    package var localStore: KeychainStore? { (backend as? any StreamingBackend)?.store }

    /// `localStore`, for a caller that cannot do without the file.
    /// - Throws: errSecNotAvailable for a keychain served by the agent, or closed.
    package func requireLocalStore() throws -> KeychainStore {
        switch try openBackend() {
        case let local as any StreamingBackend: return local.store
        case let agent as AgentBackend: throw agent.cannotStream
        case let other: throw KeychainError(.notAvailable, "\(type(of: other)) does not stream whole keychains")
        }
    }
}
