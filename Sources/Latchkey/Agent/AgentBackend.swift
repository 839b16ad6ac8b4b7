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
    /// nil: the agent has not been asked yet (a keychain opened for the requests of one
    /// command, `AgentClient.keychain(path:devicePath:asking:)`).
    private var passcodeKnown: Bool?
    /// Whether the keychain has a passcode, as the agent last said; asked (an `open` request)
    /// the first time it is needed. When that request fails the answer is false: every
    /// request on the keychain fails the same way then.
    var hasPasscode: Bool {
        get {
            mutex.lock()
            let known = passcodeKnown
            mutex.unlock()
            if let known { return known }
            return (try? agentState())?.hasPasscode ?? false
        }
        set { mutex.lock(); passcodeKnown = newValue; mutex.unlock() }
    }

    init(client: AgentClient, path: String, device: String) {
        self.client = client
        self.path = path
        self.device = device
    }

    var recoveredTailBytes: UInt64 { 0 }
    /// The agent has stopped since (every operation then fails).
    var stopped: Bool { client.stopped }

    /// Why there is no `Keychain.localStore` (the agent backend is no `StreamingBackend`).
    var cannotStream: KeychainError {
        KeychainError(
            .notAvailable,
            "the keychain \(path) is served by the agent, which does not stream whole keychains; open the file in this process for a backup or restore"
        )
    }

    private func target(_ context: CallContext?) -> AgentMessage.Target {
        AgentMessage.Target(keychain: path, device: device, caller: context?.caller)
    }

    /// A read (`find`, `identities`): when the agent answers that user presence is needed, the
    /// call's authentication callback is asked here and the request sent again with the
    /// passcode, which is zeroed after.
    private func read(
        _ context: CallContext, limit: Int?, includeData: Bool, prompt: String?,
        _ request: (AgentMessage.Read) -> AgentMessage.Request
    ) throws -> AgentMessage.Response {
        func options(_ authentication: AgentMessage.Authentication) -> AgentMessage.Read {
            AgentMessage.Read(limit: limit, includeData: includeData, prompt: prompt, authentication: authentication)
        }
        let answer = try client.call(
            request(options(includeData && context.authenticate != nil ? .interactive : .none)))
        guard case .needsAuthentication(let asked) = answer, let handler = context.authenticate else { return answer }
        func passcode() throws -> AgentMessage.Authentication {
            guard let p = handler(asked) else { throw KeychainError(.userCanceled, "authentication was cancelled") }
            return .passcode(p)
        }
        var retry = request(options(try passcode()))
        defer { retry.cleanse() }
        return try client.call(retry)
    }

    func open() throws -> AgentKeychainState {
        let r = try client.call(.open(target(nil)))
        guard case .state(let s) = r else { throw AgentClient.unexpected(r, to: "open") }
        return s
    }

    /// The agent's view of the keychain; remembers whether it has a passcode.
    func agentState() throws -> AgentKeychainState {
        let s = try open()
        hasPasscode = s.hasPasscode
        return s
    }

    func unlock(passcode: [UInt8]) throws {
        let r = try client.call(.unlock(target(nil), passcode: passcode))
        guard case .state(let s) = r else { throw AgentClient.unexpected(r, to: "unlock") }
        hasPasscode = s.hasPasscode
    }

    func lock() throws { _ = try client.call(.lock(target(nil))) }

    /// Nothing to release here: the connection is the process's connection to the agent, shared
    /// by every keychain it serves (`AgentClient`), and the keys stay with the agent.
    func close() {}

    func isAvailable(_ pc: ProtectionClass) -> Bool {
        ((try? agentState())?.unlocked ?? []).contains(pc.code)
    }

    /// The agent answers references; the items are built from them and the data sent.
    func add(_ items: [NewItem], _ context: CallContext) throws -> [Item] {
        for given in items { try ItemRules.checkSize(given.itemClass, attributes: given.attributes, data: given.data) }
        let r = try client.call(.add(target(context), items))
        guard case .added(let refs) = r, refs.count == items.count else { throw AgentClient.unexpected(r, to: "add") }
        return zip(refs, items).map { $0.item($1.itemClass, data: $1.data) }
    }

    func find(_ query: Query, limit: Int?, includeData: Bool, prompt: String?, _ context: CallContext) throws -> [Item]
    {
        let r = try read(context, limit: limit, includeData: includeData, prompt: prompt) {
            .find(target(context), query, $0)
        }
        guard case .items(let items) = r else { throw AgentClient.unexpected(r, to: "find") }
        return items
    }

    func update(
        _ query: Query, attributes: [String: AttributeValue], data: [UInt8]?, protection: ProtectionClass?,
        _ context: CallContext
    ) throws -> Int {
        if let data { try ItemRules.checkSize(query.itemClass, attributes: attributes, data: data) }
        return try count(.update(target(context), query, attributes: attributes, data: data, protection: protection))
    }

    func delete(_ query: Query, _ context: CallContext) throws -> Int {
        try count(.delete(target(context), query))
    }

    func addIdentity(
        certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue],
        protection: ProtectionClass?, requiresUserPresence: Bool, _ context: CallContext
    ) throws -> Identity {
        let r = try client.call(
            .addIdentity(
                target(context), certificate: certificate, privateKey: privateKey, attributes: attributes,
                protection: protection, requiresUserPresence: requiresUserPresence))
        guard case .identityAdded(let c, let k) = r else { throw AgentClient.unexpected(r, to: "addIdentity") }
        return Identity(
            certificate: c.item(.certificate, data: certificate), privateKey: k.item(.key, data: privateKey))
    }

    func identities(
        _ query: IdentityQuery, limit: Int?, includeData: Bool, prompt: String?,
        _ context: CallContext
    ) throws -> [Identity] {
        let r = try read(context, limit: limit, includeData: includeData, prompt: prompt) {
            .identities(target(context), query, $0)
        }
        guard case .identities(let ids) = r else { throw AgentClient.unexpected(r, to: "identities") }
        return ids
    }

    func updateIdentities(
        _ query: IdentityQuery, attributes: [String: AttributeValue], protection: ProtectionClass?,
        _ context: CallContext
    ) throws -> Int {
        try count(.updateIdentities(target(context), query, attributes: attributes, protection: protection))
    }

    func deleteIdentities(_ query: IdentityQuery, _ context: CallContext) throws -> Int {
        try count(.deleteIdentities(target(context), query))
    }

    func changePasscode(old: [UInt8]?, new: [UInt8]?, kdfLogN: UInt8) throws -> Int {
        let n: Int
        if let new {
            n = try count(.changePasscode(target(nil), old: old, new: new, kdfLogN: kdfLogN))
        } else {
            n = try count(.removePasscode(target(nil), old: old))
        }
        hasPasscode = new != nil
        return n
    }

    private func count(_ request: AgentMessage.Request) throws -> Int {
        let r = try client.call(request)
        guard case .count(let n) = r else { throw AgentClient.unexpected(r, to: request.name) }
        return n
    }

    func compact(dropHistory: Bool) throws -> (before: UInt64, after: UInt64) {
        let request: AgentMessage.Request = dropHistory ? .dropHistory(target(nil)) : .compact(target(nil))
        let r = try client.call(request)
        guard case .compacted(let before, let after) = r else { throw AgentClient.unexpected(r, to: request.name) }
        return (before, after)
    }

    func info() throws -> KeychainInfo {
        let r = try client.call(.info(target(nil)))
        guard case .info(let i) = r else { throw AgentClient.unexpected(r, to: "info") }
        return i
    }

    func verify() -> VerifyReport {
        do {
            let r = try client.call(.verify(target(nil)))
            guard case .verifyReport(let v) = r else { throw AgentClient.unexpected(r, to: "verify") }
            return v
        } catch {
            var r = VerifyReport()
            r.problems = ["the agent could not verify the keychain: \(error)"]
            return r
        }
    }
}

extension AgentBackend {
    /// The agent answers the versions without their data (spec/AGENT.md §5.1: a version has no
    /// field for it).
    func history(_ query: Query, _ context: CallContext) throws -> ItemHistory {
        let r = try client.call(.history(target(context), query))
        guard case .history(let h) = r else { throw AgentClient.unexpected(r, to: "history") }
        return h
    }

    func restoreVersion(uuid: [UInt8], sequence: UInt64, _ context: CallContext) throws -> (item: Item, asNew: Bool) {
        let r = try client.call(.restoreVersion(target(context), uuid: uuid, sequence: sequence))
        guard case .restored(let item, let asNew) = r else { throw AgentClient.unexpected(r, to: "restoreVersion") }
        return (item, asNew)
    }
}
