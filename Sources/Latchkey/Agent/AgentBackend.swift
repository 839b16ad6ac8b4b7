import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LatchkeyCrypto
import LatchkeyFormat

/// One keychain as `latchkey agent` serves it: every operation is a request to the agent,
/// carrying the call's `CallContext` (its caller; its authentication callback is asked here, in
/// the calling process, when the agent answers that user presence is needed).
final class AgentBackend: KeychainBackend, @unchecked Sendable {
    let client: AgentClient
    let path: String
    let device: String
    private let mutex = Lock()
    private var passcodeKnown = false
    /// Whether the keychain has a passcode, as the agent last said.
    var hasPasscode: Bool {
        get { mutex.lock(); defer { mutex.unlock() }; return passcodeKnown }
        set { mutex.lock(); passcodeKnown = newValue; mutex.unlock() }
    }

    init(client: AgentClient, path: String, device: String) {
        self.client = client
        self.path = path
        self.device = device
    }

    var recoveredTailBytes: UInt64 { 0 }
    var isServedByAgent: Bool { true }
    var agentStopped: Bool { client.stopped }

    func streamingStore() throws -> KeychainStore {
        throw KeychainError(.notAvailable, "the keychain \(path) is served by the agent, which does not stream whole keychains; open the file in this process for a backup or restore")
    }

    private func request(_ op: String, _ context: CallContext?, mayAuthenticate: Bool = false,
                         _ fill: (inout AgentRequest) -> Void = { _ in }) throws -> AgentResponse {
        var r = AgentRequest(op: op)
        r.keychain = path
        r.device = device
        r.caller = context?.caller.map(WireCaller.init)
        fill(&r)
        if mayAuthenticate, context?.authenticate != nil { r.interactive = true }
        var answer = try client.call(r)
        if answer.needsAuthentication == true, let handler = context?.authenticate {
            guard var passcode = handler(answer.prompt) else {
                throw KeychainError(.userCanceled, "authentication was cancelled")
            }
            defer { Crypto.cleanse(&passcode) }
            r.interactive = nil
            r.authenticationPasscode = Data(passcode)
            answer = try client.call(r)
        }
        guard answer.ok else { throw answer.error }
        return answer
    }

    func open() throws -> AgentKeychainState {
        guard let s = try request("open", nil).state else { throw KeychainError(.decode, "the agent's answer has no keychain state") }
        return s
    }

    func agentState() throws -> AgentKeychainState? {
        guard let s = try request("open", nil).state else { throw KeychainError(.decode, "the agent's answer has no keychain state") }
        hasPasscode = s.hasPasscode
        return s
    }

    func unlock(passcode: [UInt8]) throws {
        let s = try request("unlock", nil) { $0.passcode = Data(passcode) }
        if let st = s.state { hasPasscode = st.hasPasscode }
    }

    func lock() throws { _ = try request("lock", nil) }

    func isAvailable(_ pc: ProtectionClass) -> Bool {
        ((try? agentState())?.unlocked ?? []).contains(pc.code)
    }

    func add(_ items: [NewItem], _ context: CallContext) throws -> [Item] {
        let r = try request("add", context) { $0.items = items.map(WireNewItem.init) }
        return try (r.items ?? []).map { try $0.item() }
    }

    func find(_ query: Query, limit: Int?, includeData: Bool, prompt: String?, _ context: CallContext) throws -> [Item] {
        let r = try request("find", context, mayAuthenticate: includeData) {
            $0.query = WireQuery(query)
            $0.limit = limit
            $0.includeData = includeData
            $0.prompt = prompt
        }
        return try (r.items ?? []).map { try $0.item() }
    }

    func update(_ query: Query, attributes: [String: AttributeValue], data: [UInt8]?, protection: ProtectionClass?,
                _ context: CallContext) throws -> Int {
        let r = try request("update", context) {
            $0.query = WireQuery(query)
            $0.attributes = attributes.wire
            $0.data = data.map { Data($0) }
            $0.protection = protection?.code
        }
        return r.count ?? 0
    }

    func delete(_ query: Query, _ context: CallContext) throws -> Int {
        try request("delete", context) { $0.query = WireQuery(query) }.count ?? 0
    }

    func addIdentity(certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue],
                     protection: ProtectionClass?, requiresUserPresence: Bool, _ context: CallContext) throws -> Identity {
        let r = try request("addIdentity", context) {
            $0.certificate = Data(certificate)
            $0.privateKey = Data(privateKey)
            $0.attributes = attributes.wire
            $0.protection = protection?.code
            $0.requiresUserPresence = requiresUserPresence ? true : nil
        }
        guard let i = r.identity else { throw KeychainError(.decode, "the agent's answer has no identity") }
        return try i.identity()
    }

    func identities(_ query: IdentityQuery, limit: Int?, includeData: Bool, prompt: String?,
                    _ context: CallContext) throws -> [Identity] {
        let r = try request("identities", context, mayAuthenticate: includeData) {
            $0.identityQuery = WireIdentityQuery(query)
            $0.limit = limit
            $0.includeData = includeData
            $0.prompt = prompt
        }
        return try (r.identities ?? []).map { try $0.identity() }
    }

    func updateIdentities(_ query: IdentityQuery, attributes: [String: AttributeValue], protection: ProtectionClass?,
                          _ context: CallContext) throws -> Int {
        try request("updateIdentities", context) {
            $0.identityQuery = WireIdentityQuery(query)
            $0.attributes = attributes.wire
            $0.protection = protection?.code
        }.count ?? 0
    }

    func deleteIdentities(_ query: IdentityQuery, _ context: CallContext) throws -> Int {
        try request("deleteIdentities", context) { $0.identityQuery = WireIdentityQuery(query) }.count ?? 0
    }

    func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8) throws -> Int {
        let r = try request(new == nil ? "removePasscode" : "changePasscode", nil) {
            $0.passcode = old.map { Data($0) }
            $0.newPasscode = new.map { Data($0) }
            $0.kdfLogN = kdfLogN
        }
        hasPasscode = new != nil
        return r.count ?? 0
    }

    func compact() throws -> (before: UInt64, after: UInt64) {
        let r = try request("compact", nil)
        return (r.before ?? 0, r.after ?? 0)
    }

    func info() throws -> KeychainInfo {
        guard let i = try request("info", nil).info else { throw KeychainError(.decode, "the agent's answer has no info") }
        return i
    }

    func verify() -> VerifyReport {
        do {
            guard let v = try request("verify", nil).verify else { throw KeychainError(.decode, "the agent's answer has no report") }
            return v
        } catch {
            var r = VerifyReport()
            r.problems = ["the agent could not verify the keychain: \(error)"]
            return r
        }
    }
}
