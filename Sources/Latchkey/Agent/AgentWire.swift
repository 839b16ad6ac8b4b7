#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LatchkeyFormat

// The messages of the agent protocol (spec/AGENT.md §3–§5): one JSON object per frame.
// Byte strings (secret data, persistent references, passcodes) travel as base64 strings, which
// is what JSONEncoder makes of `Data`; attribute values as one-key objects (WireValue).

/// The protocol version every request and response carries.
let agentProtocolVersion = 1

/// An attribute value on the wire: {"s": string} | {"d": base64} | {"i": integer} |
/// {"t": IEEE-754 bit pattern of the CFAbsoluteTime}, so every value round-trips exactly.
struct WireValue: Codable, Sendable {
    var value: AttributeValue

    init(_ value: AttributeValue) { self.value = value }

    private enum Key: String, CodingKey { case s, d, i, t }

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        guard c.allKeys.count == 1, let key = c.allKeys.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "an attribute value is an object with exactly one of s, d, i, t"))
        }
        switch key {
        case .s: value = .string(try c.decode(String.self, forKey: .s))
        case .d: value = .data([UInt8](try c.decode(Data.self, forKey: .d)))
        case .i: value = .integer(try c.decode(Int64.self, forKey: .i))
        case .t: value = .date(Double(bitPattern: try c.decode(UInt64.self, forKey: .t)))
        }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch value {
        case .string(let s): try c.encode(s, forKey: .s)
        case .data(let d): try c.encode(Data(d), forKey: .d)
        case .integer(let i): try c.encode(i, forKey: .i)
        case .date(let t): try c.encode(t.bitPattern, forKey: .t)
        }
    }
}

typealias WireAttributes = [String: WireValue]

extension Dictionary where Key == String, Value == AttributeValue {
    var wire: WireAttributes { mapValues(WireValue.init) }
}

extension Dictionary where Key == String, Value == WireValue {
    var attributes: [String: AttributeValue] { mapValues(\.value) }
}

/// Protection classes travel as their codes (ak, ck, dk, aku, cku, dku, akpu).
func wireProtection(_ code: String?) throws -> ProtectionClass? {
    guard let code else { return nil }
    guard let pc = ProtectionClass.allCases.first(where: { $0.code == code }) else {
        throw KeychainError(.param, "unknown protection class '\(code)' in the agent request")
    }
    return pc
}

func wireClass(_ code: String) throws -> ItemClass {
    guard let c = ItemClass(rawValue: code) else {
        throw KeychainError(.noSuchClass, "unknown item class '\(code)' in the agent request")
    }
    return c
}

struct WireCaller: Codable, Sendable {
    var applicationIdentifier: String?
    var keychainAccessGroups: [String]
    /// com.apple.security.application-groups; sent only when not empty (spec/AGENT.md §4).
    var applicationGroups: [String]

    init(_ c: CallerIdentity) {
        applicationIdentifier = c.applicationIdentifier
        keychainAccessGroups = c.keychainAccessGroups
        applicationGroups = c.applicationGroups
    }

    var identity: CallerIdentity {
        CallerIdentity(applicationIdentifier: applicationIdentifier, keychainAccessGroups: keychainAccessGroups,
                       applicationGroups: applicationGroups)
    }
    private enum CodingKeys: String, CodingKey {
        case applicationIdentifier, keychainAccessGroups, applicationGroups
    }

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        applicationIdentifier = try c.decodeIfPresent(String.self, forKey: .applicationIdentifier)
        keychainAccessGroups = try c.decode([String].self, forKey: .keychainAccessGroups)
        applicationGroups = try c.decodeIfPresent([String].self, forKey: .applicationGroups) ?? []
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(applicationIdentifier, forKey: .applicationIdentifier)
        try c.encode(keychainAccessGroups, forKey: .keychainAccessGroups)
        if !applicationGroups.isEmpty { try c.encode(applicationGroups, forKey: .applicationGroups) }
    }
}

/// kSecAttrSynchronizable filter: "no" (default), "yes", "any".
func wireSync(_ s: SyncFilter) -> String {
    switch s {
    case .notSynchronizable: return "no"
    case .synchronizable: return "yes"
    case .any: return "any"
    }
}

func syncFilter(_ s: String?) throws -> SyncFilter {
    switch s ?? "no" {
    case "no": return .notSynchronizable
    case "yes": return .synchronizable
    case "any": return .any
    default: throw KeychainError(.param, "unknown synchronizable filter '\(s ?? "")' in the agent request")
    }
}

struct WireQuery: Codable, Sendable {
    var itemClass: String
    var attributes: WireAttributes
    var protection: String?
    var caseInsensitive: Bool?
    var synchronizable: String?
    var persistentRef: Data?

    init(_ q: Query) {
        itemClass = q.itemClass.rawValue
        attributes = q.attributes.wire
        protection = q.protection?.code
        caseInsensitive = q.caseInsensitive ? true : nil
        synchronizable = q.synchronizable == .notSynchronizable ? nil : wireSync(q.synchronizable)
        persistentRef = q.persistentRef.map { Data($0) }
    }

    func query() throws -> Query {
        Query(try wireClass(itemClass), attributes.attributes, protection: try wireProtection(protection),
              caseInsensitive: caseInsensitive ?? false, synchronizable: try syncFilter(synchronizable),
              persistentRef: persistentRef.map { [UInt8]($0) })
    }
}

struct WireIdentityQuery: Codable, Sendable {
    var attributes: WireAttributes
    var protection: String?
    var caseInsensitive: Bool?
    var synchronizable: String?
    var persistentRef: Data?

    init(_ q: IdentityQuery) {
        attributes = q.attributes.wire
        protection = q.protection?.code
        caseInsensitive = q.caseInsensitive ? true : nil
        synchronizable = q.synchronizable == .notSynchronizable ? nil : wireSync(q.synchronizable)
        persistentRef = q.persistentRef.map { Data($0) }
    }

    func query() throws -> IdentityQuery {
        IdentityQuery(attributes.attributes, protection: try wireProtection(protection),
                      caseInsensitive: caseInsensitive ?? false, synchronizable: try syncFilter(synchronizable),
                      persistentRef: persistentRef.map { [UInt8]($0) })
    }
}

struct WireNewItem: Codable, Sendable {
    var itemClass: String
    var attributes: WireAttributes
    var data: Data
    var protection: String?
    var requiresUserPresence: Bool?

    init(_ n: NewItem) {
        itemClass = n.itemClass.rawValue
        attributes = n.attributes.wire
        data = Data(n.data)
        protection = n.protection?.code
        requiresUserPresence = n.requiresUserPresence ? true : nil
    }

    func item() throws -> NewItem {
        NewItem(try wireClass(itemClass), attributes: attributes.attributes, data: [UInt8](data),
                protection: try wireProtection(protection), requiresUserPresence: requiresUserPresence ?? false)
    }
}

struct WireItem: Codable, Sendable {
    var itemClass: String
    var attributes: WireAttributes
    var data: Data
    var protection: String
    var persistentRef: Data
    var requiresUserPresence: Bool?

    init(_ i: Item) {
        itemClass = i.itemClass.rawValue
        attributes = i.attributes.wire
        data = Data(i.data)
        protection = i.protection.code
        persistentRef = Data(i.persistentRef)
        requiresUserPresence = i.requiresUserPresence ? true : nil
    }

    func item() throws -> Item {
        guard let pc = try wireProtection(protection) else { throw KeychainError(.decode, "an item in the agent's answer has no protection class") }
        return Item(itemClass: try wireClass(itemClass), attributes: attributes.attributes, data: [UInt8](data),
                    protection: pc, persistentRef: [UInt8](persistentRef),
                    requiresUserPresence: requiresUserPresence ?? false)
    }
}

struct WireIdentity: Codable, Sendable {
    var certificate: WireItem
    var privateKey: WireItem

    init(_ i: Identity) {
        certificate = WireItem(i.certificate)
        privateKey = WireItem(i.privateKey)
    }

    func identity() throws -> Identity { Identity(certificate: try certificate.item(), privateKey: try privateKey.item()) }
}

/// One request. `op` says which fields matter (spec/AGENT.md §4).
struct AgentRequest: Codable, Sendable {
    var v: Int = agentProtocolVersion
    var op: String
    var keychain: String?
    var device: String?
    var caller: WireCaller?

    // Operation fields.
    var query: WireQuery?
    var identityQuery: WireIdentityQuery?
    var items: [WireNewItem]?
    var attributes: WireAttributes?
    var data: Data?
    var protection: String?
    var limit: Int?
    var includeData: Bool?
    var prompt: String?
    var passcode: Data?
    var newPasscode: Data?
    var kdfLogN: UInt8?
    var certificate: Data?
    var privateKey: Data?
    var requiresUserPresence: Bool?
    /// lock: every keychain the agent holds.
    var all: Bool?
    /// User presence: the client can ask its user (then the agent answers `needsAuthentication`
    /// instead of failing), or the passcode it asked for.
    var interactive: Bool?
    var authenticationPasscode: Data?

    init(op: String) { self.op = op }
}

/// The state of one keychain the agent holds.
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
}

/// What `status` reports about the agent itself.
public struct AgentStatus: Codable, Sendable {
    public var pid: Int32
    public var socket: String
    public var protocolVersion: Int
    /// Seconds without use after which a keychain is locked (0: never).
    public var idleTimeout: Double
    /// PR_GET_DUMPABLE of the agent: false once it has hardened itself (nil: unknown).
    public var dumpable: Bool?
    public var keychains: [AgentKeychainState]
}

struct AgentResponse: Codable, Sendable {
    var v: Int = agentProtocolVersion
    var ok: Bool
    var status: Int32?
    var message: String?
    var underlying: String?
    /// User presence: the client should ask its user with `prompt` and send the request again
    /// with `authenticationPasscode`.
    var needsAuthentication: Bool?
    var prompt: String?

    var items: [WireItem]?
    var identities: [WireIdentity]?
    var identity: WireIdentity?
    var count: Int?
    var state: AgentKeychainState?
    var agent: AgentStatus?
    var info: KeychainInfo?
    var verify: VerifyReport?
    var before: UInt64?
    var after: UInt64?

    static let success = AgentResponse(ok: true)

    static func failure(_ e: KeychainError) -> AgentResponse {
        var r = AgentResponse(ok: false)
        r.status = e.status.rawValue
        r.message = e.message
        r.underlying = e.underlying
        return r
    }

    /// The error this response carries, exactly as the agent's keychain threw it.
    var error: KeychainError {
        let s = status.flatMap(KeychainStatus.init(rawValue:)) ?? .internal
        return KeychainError(s, message ?? "the agent failed without a message", underlying: underlying)
    }
}

/// JSON coders for the protocol (AgentJSON.swift). Dates never appear as Date (they are
/// WireValue bit patterns).
enum AgentCoding {
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try AgentJSONEncoder().encode(value)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        try AgentJSONDecoder().decode(type, from: bytes)
    }
}
