/// What `status` reports about the agent itself (spec/AGENT.md §5.2, answer `agentStatus`).
/// Encodable for `latchkey status --json`.
public struct AgentStatus: Codable, Sendable {
    public var pid: Int32
    public var socket: String
    public var protocolVersion: Int
    /// Seconds without use after which a keychain is locked (0: never).
    public var idleTimeout: Double
    /// PR_GET_DUMPABLE of the agent: false once it has hardened itself (nil: unknown).
    public var dumpable: Bool?
    public var keychains: [AgentKeychainState]

    package init(
        pid: Int32, socket: String, protocolVersion: Int, idleTimeout: Double, dumpable: Bool?,
        keychains: [AgentKeychainState]
    ) {
        self.pid = pid
        self.socket = socket
        self.protocolVersion = protocolVersion
        self.idleTimeout = idleTimeout
        self.dumpable = dumpable
        self.keychains = keychains
    }
}

/// The state of one keychain the agent holds (spec/AGENT.md §5.1, keychain state).
public struct AgentKeychainState: Codable, Sendable, Equatable {
    public var keychain: String
    public var device: String
    public var hasPasscode: Bool
    /// Codes of the protection classes whose keys the agent holds now.
    public var unlocked: [String]
    /// The passcode was given since the agent opened the keychain (ck/cku stay available).
    public var unlockedOnce: Bool
    /// Seconds since the last request that used the keychain.
    public var idleSeconds: Double

    package init(
        keychain: String, device: String, hasPasscode: Bool, unlocked: [String], unlockedOnce: Bool,
        idleSeconds: Double
    ) {
        self.keychain = keychain
        self.device = device
        self.hasPasscode = hasPasscode
        self.unlocked = unlocked
        self.unlockedOnce = unlockedOnce
        self.idleSeconds = idleSeconds
    }
}
