/// Who makes one call and how to ask them for the passcode: passed by value into every
/// operation of a `KeychainBackend`, so no call leaves state behind for the next one (two
/// threads, or two agent clients, may use one keychain at once with different callers).
public struct CallContext: Sendable {
    /// Who is calling. nil: a trusted tool that sees every access group and gives new items no
    /// default group. Which items a caller reaches is decided by `AccessPolicy`.
    public var caller: CallerIdentity?
    /// Asked for the passcode when an item that needs user presence is read with its data;
    /// returns nil when the user cancels. nil: such a read fails with errSecInteractionNotAllowed.
    public var authenticate: (@Sendable (_ prompt: String?) -> [UInt8]?)?

    public init(caller: CallerIdentity? = nil, authenticate: (@Sendable (_ prompt: String?) -> [UInt8]?)? = nil) {
        self.caller = caller
        self.authenticate = authenticate
    }
}
