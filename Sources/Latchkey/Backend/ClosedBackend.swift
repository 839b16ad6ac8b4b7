import LatchkeyFormat

/// What a `Keychain` answers with after `close()`: every operation fails with
/// errSecNotAvailable, nothing is available, nothing is read or written.
final class ClosedBackend: KeychainBackend, @unchecked Sendable {
    static let shared = ClosedBackend()

    static var error: KeychainError {
        KeychainError(.notAvailable, "this keychain was closed (Keychain.close()); open it again to use it")
    }

    var hasPasscode: Bool { false }
    var recoveredTailBytes: UInt64 { 0 }
    var isServedByAgent: Bool { false }
    var agentStopped: Bool { false }

    func unlock(passcode: [UInt8]) throws { throw Self.error }
    func lock() throws {}
    func isAvailable(_ pc: ProtectionClass) -> Bool { false }
    func agentState() throws -> AgentKeychainState? { throw Self.error }

    func add(_ items: [NewItem], _ context: CallContext) throws -> [Item] { throw Self.error }
    func find(_ query: Query, limit: Int?, includeData: Bool, prompt: String?, _ context: CallContext) throws -> [Item] {
        throw Self.error
    }
    func update(_ query: Query, attributes: [String: AttributeValue], data: [UInt8]?, protection: ProtectionClass?,
                _ context: CallContext) throws -> Int { throw Self.error }
    func delete(_ query: Query, _ context: CallContext) throws -> Int { throw Self.error }

    func addIdentity(certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue],
                     protection: ProtectionClass?, requiresUserPresence: Bool, _ context: CallContext) throws -> Identity {
        throw Self.error
    }
    func identities(_ query: IdentityQuery, limit: Int?, includeData: Bool, prompt: String?,
                    _ context: CallContext) throws -> [Identity] { throw Self.error }
    func updateIdentities(_ query: IdentityQuery, attributes: [String: AttributeValue], protection: ProtectionClass?,
                          _ context: CallContext) throws -> Int { throw Self.error }
    func deleteIdentities(_ query: IdentityQuery, _ context: CallContext) throws -> Int { throw Self.error }

    func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8) throws -> Int { throw Self.error }
    func compact() throws -> (before: UInt64, after: UInt64) { throw Self.error }
    func info() throws -> KeychainInfo { throw Self.error }
    func verify() -> VerifyReport {
        var report = VerifyReport()
        report.problems = [Self.error.message]
        return report
    }
    func walkItems(protections: [ProtectionClass]?, _ context: CallContext,
                   survey: (Item) throws -> Void, emit: (Item) throws -> Void) throws { throw Self.error }
    func importItems<T>(_ context: CallContext, _ body: (ItemImporter) throws -> T) throws -> T { throw Self.error }
    func streamingStore() throws -> KeychainStore { throw Self.error }
    func close() {}
}
