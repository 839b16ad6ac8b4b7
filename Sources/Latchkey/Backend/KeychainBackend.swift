import LatchkeyFormat

/// Where the keys live and the operations happen: in this process (`LocalBackend`, the file
/// opened here) or in `latchkey agent` (`AgentBackend`). `Keychain` is a facade over one of
/// them; both give the same results and errors for the same calls (spec/AGENT.md).
///
/// The protocol holds the item and keychain operations only. What one kind of backend can do
/// beyond them is a capability of its own, asked for with `as?`: `StreamingBackend` for the
/// file itself; the agent's state belongs to `AgentBackend`.
///
/// Every operation that acts for a caller takes the `CallContext` of that call; a backend holds
/// no per-call state. Each backend applies the rules of `ItemRules` and `DerivedAttributes`
/// itself, so the agent, which holds backends, checks exactly what a direct open checks.
package protocol KeychainBackend: AnyObject, Sendable {
    var hasPasscode: Bool { get }
    /// Bytes of an incomplete tail cut off when the file was opened (0 when the agent opened it).
    var recoveredTailBytes: UInt64 { get }

    func unlock(passcode: [UInt8]) throws
    func lock() throws
    func isAvailable(_ pc: ProtectionClass) -> Bool

    func add(_ items: [NewItem], _ context: CallContext) throws -> [Item]
    func find(_ query: Query, limit: Int?, includeData: Bool, prompt: String?, _ context: CallContext) throws -> [Item]
    func update(
        _ query: Query, attributes: [String: AttributeValue], data: [UInt8]?, protection: ProtectionClass?,
        _ context: CallContext
    ) throws -> Int
    func delete(_ query: Query, _ context: CallContext) throws -> Int

    /// The versions of the items `query` names (spec/FORMAT.md §7.7; `Keychain.history`).
    func history(_ query: Query, _ context: CallContext) throws -> ItemHistory
    /// Puts the version `sequence` of the item `uuid` back (`Keychain.restore`).
    func restoreVersion(uuid: [UInt8], sequence: UInt64, _ context: CallContext) throws -> (item: Item, asNew: Bool)

    func addIdentity(
        certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue],
        protection: ProtectionClass?, requiresUserPresence: Bool, _ context: CallContext
    ) throws -> Identity
    func identities(
        _ query: IdentityQuery, limit: Int?, includeData: Bool, prompt: String?,
        _ context: CallContext
    ) throws -> [Identity]
    func updateIdentities(
        _ query: IdentityQuery, attributes: [String: AttributeValue], protection: ProtectionClass?,
        _ context: CallContext
    ) throws -> Int
    func deleteIdentities(_ query: IdentityQuery, _ context: CallContext) throws -> Int

    func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8) throws -> Int
    /// Rewrites the file to its live records; `dropHistory`: without any earlier version (§7.7).
    func compact(dropHistory: Bool) throws -> (before: UInt64, after: UInt64)
    func info() throws -> KeychainInfo
    func verify() -> VerifyReport

    /// Every live item the caller may see, attributes only, in two passes (`Keychain.walkItems`).
    func walkItems(
        protections: [ProtectionClass]?, _ context: CallContext,
        survey: (Item) throws -> Void, emit: (Item) throws -> Void) throws

    /// Runs a bulk import (`ItemImporter`): one streaming transaction on a local keychain,
    /// batches of `ItemImporter.agentBatchSize` through the agent.
    func importItems<T>(_ context: CallContext, _ body: (ItemImporter) throws -> T) throws -> T

    /// Releases what the backend holds for this keychain (`Keychain.close()`): the local file
    /// and its class keys, or the connection to the agent. The agent itself keeps its keys.
    func close()
}

/// The capability of a backend that holds the keychain's file in this process: the file
/// itself, for the operations that move every item at once in one streaming transaction
/// (backup, restore, merge). The agent's protocol carries items, never a whole keychain, so
/// `AgentBackend` does not have it; callers ask `backend as? any StreamingBackend`
/// (`Keychain.localStore`).
package protocol StreamingBackend: KeychainBackend {
    var store: KeychainStore { get }
}
