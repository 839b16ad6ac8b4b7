import LatchkeyCrypto
import LatchkeyFormat

/// The messages of agent protocol versions 2 and 3 (spec/AGENT.md §3–§5), in binary:
///
///     frame = u32 length (big-endian, of what follows) ‖ u8 version (2 or 3) ‖ u8 type ‖ fields
///
/// The two versions differ in one field: version 3's `error` answer carries the error's
/// remedy (what to do), which version 2's has no room for. An agent answers each request in
/// the request's version; a client sends version 3 and falls back to 2 for an older agent.
///
/// Fields are written with the format's `ByteWriter` and read with its `ByteReader`; attribute
/// sets are the item plaintext's attribute list (spec/FORMAT.md §8.1, `AttributeList`). Every
/// message has exactly one encoding, so `encode(decode(frame)) == frame` for every frame that
/// decodes.
///
/// Secrets (item data, passcodes, private keys) are `[UInt8]` buffers their owner zeroes with
/// `cleanse()`. `encode()` measures the frame first and writes it into a buffer of exactly
/// that size, so no reallocation leaves a copy of a secret behind.
package enum AgentMessage {
    /// The newest protocol version this Latchkey speaks (and sends first).
    package static let version: UInt8 = 3
    /// Every version this Latchkey reads and writes.
    package static let versions: ClosedRange<UInt8> = 2...3
    /// The first byte of a protocol-1 payload: a JSON object.
    package static let protocol1FirstByte = UInt8(ascii: "{")
    /// The length prefix.
    package static let lengthBytes = 4

    /// Why a frame could not be decoded. Never carries secret bytes.
    package enum DecodeError: Error, Equatable, CustomStringConvertible {
        /// The payload is a JSON object: the other side speaks protocol 1.
        case protocol1
        /// Another version byte (not 2 or 3, not `{`).
        case version(UInt8)
        /// A frame of a type this side does not know (or does not accept: a request
        /// where an answer is due, or the other way round).
        case unknownType(UInt8)
        /// The length prefix does not match the bytes given (`decode(frame:)` only).
        case length(declared: Int, actual: Int)
        /// A field is truncated, out of range, or bytes follow the last field.
        case malformed(String)

        package var description: String {
            switch self {
            case .protocol1: return "the message is a protocol 1 (JSON) message"
            case .version(let v): return "the message is of protocol version \(v)"
            case .unknownType(let t): return "unknown message type 0x\(hexString([t]))"
            case .length(let d, let a): return "the frame's length prefix says \(d) bytes, \(a) follow"
            case .malformed(let why): return why
            }
        }
    }

    // MARK: Field types shared by requests and answers

    /// The keychain a request acts on and who asks (spec/AGENT.md §4.1).
    package struct Target: Sendable, Equatable {
        /// Absolute paths of the keychain file and of its device secret.
        package var keychain: String
        package var device: String
        /// nil: the trusted caller that sees every group (the typed API's `caller = nil`).
        package var caller: CallerIdentity?

        package init(keychain: String, device: String, caller: CallerIdentity?) {
            self.keychain = keychain
            self.device = device
            self.caller = caller
        }
    }

    /// How a read may ask for user presence (spec/AGENT.md §4.4).
    package enum Authentication: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
        /// Fail with errSecInteractionNotAllowed, as a keychain without an authentication handler.
        case none
        /// The client can ask its user: answer `needsAuthentication` instead of failing.
        case interactive
        /// The passcode the client's user gave after a `needsAuthentication` answer.
        case passcode([UInt8])

        package var description: String {
            switch self {
            case .none: return "none"
            case .interactive: return "interactive"
            case .passcode: return "passcode(<redacted>)"
            }
        }
        package var customMirror: Mirror { Mirror(self, children: []) }
    }

    /// The options of `find` and `identities`.
    package struct Read: Sendable, Equatable {
        /// At most this many results (nil: all).
        package var limit: Int?
        package var includeData: Bool
        package var prompt: String?
        package var authentication: Authentication

        package init(
            limit: Int? = nil, includeData: Bool = true, prompt: String? = nil, authentication: Authentication = .none
        ) {
            self.limit = limit
            self.includeData = includeData
            self.prompt = prompt
            self.authentication = authentication
        }

        /// Zeroes the authentication passcode.
        package mutating func cleanse() {
            guard case .passcode(var p) = authentication else { return }
            authentication = .none  // so that `p` is the buffer's only reference
            Crypto.cleanse(&p)
            authentication = .passcode(p)
        }
    }

    /// What `add` answers for each item: what the keychain made of it, without the data the
    /// client sent (spec/AGENT.md §5.1).
    package struct Reference: Sendable, Equatable {
        package var persistentRef: [UInt8]
        package var protection: ProtectionClass
        /// As stored: an identity's certificate that was there already keeps its own.
        package var requiresUserPresence: Bool
        /// Every attribute of the stored item: those given and those the keychain set
        /// (cdat, mdat, pdmn, agrp, sync, derived certificate and key attributes).
        package var attributes: [String: AttributeValue]

        package init(
            persistentRef: [UInt8], protection: ProtectionClass, requiresUserPresence: Bool,
            attributes: [String: AttributeValue]
        ) {
            self.persistentRef = persistentRef
            self.protection = protection
            self.requiresUserPresence = requiresUserPresence
            self.attributes = attributes
        }

        package init(_ item: Item) {
            self.init(
                persistentRef: item.persistentRef, protection: item.protection,
                requiresUserPresence: item.requiresUserPresence, attributes: item.attributes)
        }

        /// The item this reference describes, with the class and data the client had sent.
        package func item(_ itemClass: ItemClass, data: [UInt8]) -> Item {
            Item(
                itemClass: itemClass, attributes: attributes, data: data, protection: protection,
                persistentRef: persistentRef, requiresUserPresence: requiresUserPresence)
        }
    }

    // MARK: Requests

    /// One request (spec/AGENT.md §4). Type numbers: agent-wide 0x01–0x0F, keychain state
    /// 0x10–0x1F, items 0x20–0x2F, identities 0x30–0x3F.
    package enum Request: Sendable, CustomStringConvertible, CustomReflectable {
        case status
        case stop
        case lockAll
        case open(Target)
        case unlock(Target, passcode: [UInt8])
        case lock(Target)
        case changePasscode(Target, old: [UInt8]?, new: [UInt8], kdfLogN: UInt8)
        case removePasscode(Target, old: [UInt8]?)
        case compact(Target)
        case info(Target)
        case verify(Target)
        /// A compaction that drops every earlier version (spec/FORMAT.md §7.7).
        case dropHistory(Target)
        case add(Target, [NewItem])
        case find(Target, Query, Read)
        case update(Target, Query, attributes: [String: AttributeValue], data: [UInt8]?, protection: ProtectionClass?)
        case delete(Target, Query)
        /// The versions of the items the query names (`Keychain.history`); never their data.
        case history(Target, Query)
        /// Puts one version back (`Keychain.restore`): the item's UUID and the version's sequence number.
        case restoreVersion(Target, uuid: [UInt8], sequence: UInt64)
        case addIdentity(
            Target, certificate: [UInt8], privateKey: [UInt8], attributes: [String: AttributeValue],
            protection: ProtectionClass?, requiresUserPresence: Bool)
        case identities(Target, IdentityQuery, Read)
        case updateIdentities(Target, IdentityQuery, attributes: [String: AttributeValue], protection: ProtectionClass?)
        case deleteIdentities(Target, IdentityQuery)

        package var type: UInt8 {
            switch self {
            case .status: return 0x01
            case .stop: return 0x02
            case .lockAll: return 0x03
            case .open: return 0x10
            case .unlock: return 0x11
            case .lock: return 0x12
            case .changePasscode: return 0x13
            case .removePasscode: return 0x14
            case .compact: return 0x15
            case .info: return 0x16
            case .verify: return 0x17
            case .dropHistory: return 0x18
            case .add: return 0x20
            case .find: return 0x21
            case .update: return 0x22
            case .delete: return 0x23
            case .history: return 0x24
            case .restoreVersion: return 0x25
            case .addIdentity: return 0x30
            case .identities: return 0x31
            case .updateIdentities: return 0x32
            case .deleteIdentities: return 0x33
            }
        }

        /// The operation's name, for logs and messages (never a field's value).
        package var name: String {
            switch self {
            case .status: return "status"
            case .stop: return "stop"
            case .lockAll: return "lock (all)"
            case .open: return "open"
            case .unlock: return "unlock"
            case .lock: return "lock"
            case .changePasscode: return "changePasscode"
            case .removePasscode: return "removePasscode"
            case .compact: return "compact"
            case .info: return "info"
            case .verify: return "verify"
            case .dropHistory: return "dropHistory"
            case .add: return "add"
            case .find: return "find"
            case .update: return "update"
            case .delete: return "delete"
            case .history: return "history"
            case .restoreVersion: return "restoreVersion"
            case .addIdentity: return "addIdentity"
            case .identities: return "identities"
            case .updateIdentities: return "updateIdentities"
            case .deleteIdentities: return "deleteIdentities"
            }
        }

        package var description: String { "AgentMessage.Request(\(name))" }
        package var customMirror: Mirror { Mirror(self, children: ["name": name]) }

        /// The keychain a keychain request acts on (nil: an agent-wide request).
        package var target: Target? {
            switch self {
            case .status, .stop, .lockAll: return nil
            case .open(let t), .unlock(let t, _), .lock(let t), .changePasscode(let t, _, _, _),
                .removePasscode(let t, _),
                .compact(let t), .info(let t), .verify(let t), .dropHistory(let t), .add(let t, _),
                .find(let t, _, _), .update(let t, _, _, _, _), .delete(let t, _), .history(let t, _),
                .restoreVersion(let t, _, _), .addIdentity(let t, _, _, _, _, _), .identities(let t, _, _),
                .updateIdentities(let t, _, _, _),
                .deleteIdentities(let t, _):
                return t
            }
        }

        /// The whole frame, length prefix included, in protocol `version` (a request's fields
        /// are the same in versions 2 and 3).
        package func encode(version: UInt8 = AgentMessage.version) -> [UInt8] {
            AgentMessage.frame(type, version: version) { o in
                switch self {
                case .status, .stop, .lockAll:
                    break
                case .open(let t), .lock(let t), .compact(let t), .info(let t), .verify(let t), .dropHistory(let t):
                    o.target(t)
                case .unlock(let t, let passcode):
                    o.target(t)
                    o.bytes(passcode)
                case .changePasscode(let t, let old, let new, let logN):
                    o.target(t)
                    o.u8(logN)
                    o.optional(old) { $0.bytes($1) }
                    o.bytes(new)
                case .removePasscode(let t, let old):
                    o.target(t)
                    o.optional(old) { $0.bytes($1) }
                case .add(let t, let items):
                    o.target(t)
                    o.list(items) { $0.newItem($1) }
                case .find(let t, let q, let read):
                    o.target(t)
                    o.query(q)
                    o.read(read)
                case .update(let t, let q, let attributes, let data, let protection):
                    o.target(t)
                    o.query(q)
                    o.attributes(attributes)
                    o.protection(protection)
                    o.optional(data) { $0.bytes($1) }
                case .delete(let t, let q), .history(let t, let q):
                    o.target(t)
                    o.query(q)
                case .restoreVersion(let t, let uuid, let sequence):
                    o.target(t)
                    o.bytes(uuid)
                    o.u64(sequence)
                case .addIdentity(let t, let certificate, let privateKey, let attributes, let protection, let presence):
                    o.target(t)
                    o.attributes(attributes)
                    o.protection(protection)
                    o.bool(presence)
                    o.bytes(certificate)
                    o.bytes(privateKey)
                case .identities(let t, let q, let read):
                    o.target(t)
                    o.identityQuery(q)
                    o.read(read)
                case .updateIdentities(let t, let q, let attributes, let protection):
                    o.target(t)
                    o.identityQuery(q)
                    o.attributes(attributes)
                    o.protection(protection)
                case .deleteIdentities(let t, let q):
                    o.target(t)
                    o.identityQuery(q)
                }
            }
        }

        /// Decodes a payload (the bytes after the length prefix).
        /// - Throws: `DecodeError`.
        package static func decode(_ payload: ArraySlice<UInt8>) throws -> Request {
            try AgentMessage.decodePayload(payload) { _, type, i in
                switch type {
                case 0x01: return .status
                case 0x02: return .stop
                case 0x03: return .lockAll
                case 0x10: return .open(try i.target())
                case 0x11: return .unlock(try i.target(), passcode: try i.bytes("passcode"))
                case 0x12: return .lock(try i.target())
                case 0x13:
                    let t = try i.target()
                    let logN = try i.u8("kdfLogN")
                    let old = try i.optional("old passcode") { try $0.bytes("old passcode") }
                    return .changePasscode(t, old: old, new: try i.bytes("new passcode"), kdfLogN: logN)
                case 0x14:
                    let t = try i.target()
                    return .removePasscode(t, old: try i.optional("old passcode") { try $0.bytes("old passcode") })
                case 0x15: return .compact(try i.target())
                case 0x16: return .info(try i.target())
                case 0x17: return .verify(try i.target())
                case 0x18: return .dropHistory(try i.target())
                case 0x20:
                    let t = try i.target()
                    return .add(t, try i.list("items", minimumSize: 12) { try $0.newItem() })
                case 0x21:
                    let t = try i.target()
                    let q = try i.query()
                    return .find(t, q, try i.read())
                case 0x22:
                    let t = try i.target()
                    let q = try i.query()
                    let attributes = try i.attributes()
                    let protection = try i.protection(required: false)
                    return .update(
                        t, q, attributes: attributes, data: try i.optional("data") { try $0.bytes("data") },
                        protection: protection)
                case 0x23:
                    let t = try i.target()
                    return .delete(t, try i.query())
                case 0x24:
                    let t = try i.target()
                    return .history(t, try i.query())
                case 0x25:
                    let t = try i.target()
                    let uuid = try i.bytes("item UUID")
                    return .restoreVersion(t, uuid: uuid, sequence: try i.u64("sequence"))
                case 0x30:
                    let t = try i.target()
                    let attributes = try i.attributes()
                    let protection = try i.protection(required: false)
                    let presence = try i.bool("requiresUserPresence")
                    let certificate = try i.bytes("certificate")
                    return .addIdentity(
                        t, certificate: certificate, privateKey: try i.bytes("private key"),
                        attributes: attributes, protection: protection, requiresUserPresence: presence)
                case 0x31:
                    let t = try i.target()
                    let q = try i.identityQuery()
                    return .identities(t, q, try i.read())
                case 0x32:
                    let t = try i.target()
                    let q = try i.identityQuery()
                    let attributes = try i.attributes()
                    return .updateIdentities(
                        t, q, attributes: attributes, protection: try i.protection(required: false))
                case 0x33:
                    let t = try i.target()
                    return .deleteIdentities(t, try i.identityQuery())
                default:
                    throw DecodeError.unknownType(type)
                }
            }
        }

        /// Decodes a whole frame, length prefix included. - Throws: `DecodeError`.
        package static func decode(frame: [UInt8]) throws -> Request {
            try decode(try AgentMessage.payload(of: frame))
        }

        /// Zeroes every secret this request holds (passcodes, item data, the private key).
        package mutating func cleanse() {
            switch self {
            case .unlock(let t, var p):
                self = .status
                Crypto.cleanse(&p)
                self = .unlock(t, passcode: p)
            case .changePasscode(let t, var old, var new, let logN):
                self = .status
                if old != nil { Crypto.cleanse(&old!) }
                Crypto.cleanse(&new)
                self = .changePasscode(t, old: old, new: new, kdfLogN: logN)
            case .removePasscode(let t, var old):
                self = .status
                if old != nil { Crypto.cleanse(&old!) }
                self = .removePasscode(t, old: old)
            case .add(let t, var items):
                self = .status
                for i in items.indices { Crypto.cleanse(&items[i].data) }
                self = .add(t, items)
            case .find(let t, let q, var read):
                self = .status
                read.cleanse()
                self = .find(t, q, read)
            case .identities(let t, let q, var read):
                self = .status
                read.cleanse()
                self = .identities(t, q, read)
            case .update(let t, let q, let attributes, var data, let protection):
                self = .status
                if data != nil { Crypto.cleanse(&data!) }
                self = .update(t, q, attributes: attributes, data: data, protection: protection)
            case .addIdentity(let t, let certificate, var key, let attributes, let protection, let presence):
                self = .status
                Crypto.cleanse(&key)
                self = .addIdentity(
                    t, certificate: certificate, privateKey: key, attributes: attributes,
                    protection: protection, requiresUserPresence: presence)
            case .status, .stop, .lockAll, .open, .lock, .compact, .info, .verify, .dropHistory, .delete, .history,
                .restoreVersion, .updateIdentities, .deleteIdentities:
                break
            }
        }
    }

    // MARK: Answers

    /// One answer (spec/AGENT.md §5). Type numbers 0x80 and above, so that an answer is never
    /// taken for a request.
    package enum Response: Sendable, CustomStringConvertible, CustomReflectable {
        /// stop, lockAll.
        case ok
        /// open, unlock, lock.
        case state(AgentKeychainState)
        case agentStatus(AgentStatus)
        /// find.
        case items([Item])
        /// add: one reference per item, in the request's order.
        case added([Reference])
        case identities([Identity])
        case identityAdded(certificate: Reference, privateKey: Reference)
        /// update, delete, updateIdentities, deleteIdentities, changePasscode, removePasscode.
        case count(Int)
        /// compact, dropHistory.
        case compacted(before: UInt64, after: UInt64)
        case info(KeychainInfo)
        case verifyReport(VerifyReport)
        /// history: the versions without their data, which no answer carries.
        case history(ItemHistory)
        /// restoreVersion: the item as restored (no data), and whether it was added as a new item.
        case restored(Item, asNew: Bool)
        /// The read met an item that needs user presence: ask the user with this prompt and send
        /// the request again with `Authentication.passcode`.
        case needsAuthentication(prompt: String?)
        /// The error the operation threw, exactly as a direct open throws it.
        case error(KeychainError)

        package var type: UInt8 {
            switch self {
            case .ok: return 0x80
            case .state: return 0x81
            case .agentStatus: return 0x82
            case .items: return 0x83
            case .added: return 0x84
            case .identities: return 0x85
            case .identityAdded: return 0x86
            case .count: return 0x87
            case .compacted: return 0x88
            case .info: return 0x89
            case .verifyReport: return 0x8A
            case .history: return 0x8B
            case .restored: return 0x8C
            case .needsAuthentication: return 0xFE
            case .error: return 0xFF
            }
        }

        package var description: String { "AgentMessage.Response(0x\(hexString([type])))" }
        package var customMirror: Mirror { Mirror(self, children: ["type": type]) }

        /// The whole frame in protocol `version`: the version of the request it answers.
        package func encode(version: UInt8 = AgentMessage.version) -> [UInt8] {
            AgentMessage.frame(type, version: version) { o in
                switch self {
                case .ok:
                    break
                case .state(let s):
                    o.state(s)
                case .agentStatus(let s):
                    o.u32(UInt32(bitPattern: s.pid))
                    o.string(s.socket)
                    o.u8(UInt8(clamping: s.protocolVersion))
                    o.f64(s.idleTimeout)
                    o.u8(s.dumpable.map { $0 ? 1 : 0 } ?? 2)
                    o.list(s.keychains) { $0.state($1) }
                case .items(let items):
                    o.list(items) { $0.item($1) }
                case .added(let refs):
                    o.list(refs) { $0.reference($1) }
                case .identities(let ids):
                    o.list(ids) { o, i in
                        o.item(i.certificate)
                        o.item(i.privateKey)
                    }
                case .identityAdded(let certificate, let privateKey):
                    o.reference(certificate)
                    o.reference(privateKey)
                case .count(let n):
                    o.u64(UInt64(max(0, n)))
                case .compacted(let before, let after):
                    o.u64(before)
                    o.u64(after)
                case .info(let i):
                    o.string(i.path)
                    o.string(i.formatVersion)
                    o.string(i.fileUUID)
                    o.string(i.deviceUUID)
                    o.bool(i.hasPasscode)
                    o.string(i.kdf)
                    o.u64(i.fileSize)
                    o.u64(UInt64(max(0, i.records)))
                    o.u64(UInt64(max(0, i.liveItems)))
                    o.counts(i.itemsByClass)
                    o.counts(i.itemsByProtection)
                    o.list(i.unlockedClasses) { $0.string($1) }
                case .verifyReport(let v):
                    o.list(v.problems) { $0.string($1) }
                    o.u64(v.fileSize)
                    o.u64(UInt64(max(0, v.records)))
                    o.u64(UInt64(max(0, v.liveItems)))
                    o.u64(UInt64(max(0, v.checkedItems)))
                    o.u64(UInt64(max(0, v.lockedItems)))
                    o.u64(v.recoveredTailBytes)
                case .history(let h):
                    o.list(h.versions) { $0.version($1) }
                    o.u64(UInt64(max(0, h.locked)))
                case .restored(let item, let asNew):
                    o.itemClass(item.itemClass)
                    o.reference(Reference(item))
                    o.bool(asNew)
                case .needsAuthentication(let prompt):
                    o.optional(prompt) { $0.string($1) }
                case .error(let e):
                    o.u32(UInt32(bitPattern: e.status.rawValue))
                    o.string(e.message)
                    o.optional(e.underlying) { $0.string($1) }
                    if version >= 3 { o.optional(e.remedy) { $0.remedy($1) } }
                }
            }
        }

        /// Decodes a payload (the bytes after the length prefix). A status this Latchkey does
        /// not know becomes errSecInternal. - Throws: `DecodeError`.
        package static func decode(_ payload: ArraySlice<UInt8>) throws -> Response {
            try AgentMessage.decodePayload(payload) { version, type, i in
                switch type {
                case 0x80: return .ok
                case 0x81: return .state(try i.state())
                case 0x82:
                    let pid = Int32(bitPattern: try i.u32("pid"))
                    let socket = try i.string("socket")
                    let version = Int(try i.u8("protocol version"))
                    let idle = try i.f64("idle timeout")
                    let dumpable: Bool?
                    switch try i.u8("dumpable") {
                    case 0: dumpable = false
                    case 1: dumpable = true
                    case 2: dumpable = nil
                    case let d: throw DecodeError.malformed("invalid dumpable: \(d) (0, 1 or 2)")
                    }
                    let keychains = try i.list("keychains", minimumSize: 19) { try $0.state() }
                    return .agentStatus(
                        AgentStatus(
                            pid: pid, socket: socket, protocolVersion: version, idleTimeout: idle,
                            dumpable: dumpable, keychains: keychains))
                case 0x83: return .items(try i.list("items", minimumSize: 16) { try $0.item() })
                case 0x84: return .added(try i.list("references", minimumSize: 8) { try $0.reference() })
                case 0x85:
                    return .identities(
                        try i.list("identities", minimumSize: 32) { i in
                            let certificate = try i.item()
                            return Identity(certificate: certificate, privateKey: try i.item())
                        })
                case 0x86:
                    let certificate = try i.reference()
                    return .identityAdded(certificate: certificate, privateKey: try i.reference())
                case 0x87: return .count(try i.int("count"))
                case 0x88:
                    let before = try i.u64("size before")
                    return .compacted(before: before, after: try i.u64("size after"))
                case 0x89:
                    let path = try i.string("path")
                    let formatVersion = try i.string("format version")
                    let fileUUID = try i.string("file UUID")
                    let deviceUUID = try i.string("device UUID")
                    let hasPasscode = try i.bool("hasPasscode")
                    let kdf = try i.string("kdf")
                    let fileSize = try i.u64("file size")
                    let records = try i.int("records")
                    let liveItems = try i.int("live items")
                    let byClass = try i.counts("items by class")
                    let byProtection = try i.counts("items by protection")
                    let unlocked = try i.list("unlocked classes", minimumSize: 4) { try $0.string("unlocked class") }
                    return .info(
                        KeychainInfo(
                            path: path, formatVersion: formatVersion, fileUUID: fileUUID, deviceUUID: deviceUUID,
                            hasPasscode: hasPasscode, kdf: kdf, fileSize: fileSize, records: records,
                            liveItems: liveItems, itemsByClass: byClass, itemsByProtection: byProtection,
                            unlockedClasses: unlocked))
                case 0x8A:
                    var v = VerifyReport()
                    v.problems = try i.list("problems", minimumSize: 4) { try $0.string("problem") }
                    v.fileSize = try i.u64("file size")
                    v.records = try i.int("records")
                    v.liveItems = try i.int("live items")
                    v.checkedItems = try i.int("checked items")
                    v.lockedItems = try i.int("locked items")
                    v.recoveredTailBytes = try i.u64("recovered tail bytes")
                    return .verifyReport(v)
                case 0x8B:
                    let versions = try i.list("versions", minimumSize: 30) { try $0.version() }
                    return .history(ItemHistory(versions: versions, locked: try i.int("locked versions")))
                case 0x8C:
                    let c = try i.itemClass()
                    let item = try i.reference().item(c, data: [])
                    return .restored(item, asNew: try i.bool("asNew"))
                case 0xFE: return .needsAuthentication(prompt: try i.optional("prompt") { try $0.string("prompt") })
                case 0xFF:
                    let status = Int32(bitPattern: try i.u32("status"))
                    let message = try i.string("message")
                    let underlying = try i.optional("underlying") { try $0.string("underlying") }
                    let remedy = version >= 3 ? try i.optional("remedy") { try $0.remedy() } : nil
                    return .error(
                        KeychainError(
                            KeychainStatus(rawValue: status) ?? .internal, message, underlying: underlying,
                            remedy: remedy))
                default:
                    throw DecodeError.unknownType(type)
                }
            }
        }

        /// Decodes a whole frame, length prefix included. - Throws: `DecodeError`.
        package static func decode(frame: [UInt8]) throws -> Response {
            try decode(try AgentMessage.payload(of: frame))
        }

        /// Zeroes every secret this answer holds (item data, private keys).
        package mutating func cleanse() {
            switch self {
            case .items(var items):
                self = .ok
                for i in items.indices { Crypto.cleanse(&items[i].data) }
                self = .items(items)
            case .identities(var ids):
                self = .ok
                for i in ids.indices {
                    Crypto.cleanse(&ids[i].certificate.data)
                    Crypto.cleanse(&ids[i].privateKey.data)
                }
                self = .identities(ids)
            default:
                break
            }
        }
    }

    // MARK: Remedies (version 3)

    /// The code of each remedy in version 3's `error` answer (spec/AGENT.md §5.3): the order
    /// of `KeychainRemedy`'s cases, from 1. A Latchkey that adds a remedy raises the protocol
    /// version: a code outside this table is refused, and an agent answering in an older
    /// version leaves out what that version cannot say.
    static func remedyCode(_ r: KeychainRemedy) -> UInt8 {
        switch r {
        case .repairOrRestore: return 1
        case .adoptRollback: return 2
        case .createKeychain: return 3
        case .useExistingOrChooseAnother: return 4
        case .giveKeychainFile: return 5
        case .setPasscode: return 6
        case .unlock: return 7
        case .verifyAndRestore: return 8
        case .compactAgain: return 9
        case .checkForReplacement: return 10
        case .giveCallerIdentity: return 11
        case .giveDeviceSecret: return 12
        case .createOrGiveDeviceSecret: return 13
        case .findKeychainsDeviceSecret: return 14
        case .mergeOrChooseAnotherKeychain: return 15
        case .giveBackupPassword: return 16
        case .chooseBackupPassword: return 17
        case .chooseBackupOutput: return 18
        }
    }

    /// The remedy of `code`, nil for a code outside the table (code 5 carries its example
    /// path, read by the caller).
    static func remedy(code: UInt8, example: () throws -> String) rethrows -> KeychainRemedy? {
        switch code {
        case 1: return .repairOrRestore
        case 2: return .adoptRollback
        case 3: return .createKeychain
        case 4: return .useExistingOrChooseAnother
        case 5: return .giveKeychainFile(example: try example())
        case 6: return .setPasscode
        case 7: return .unlock
        case 8: return .verifyAndRestore
        case 9: return .compactAgain
        case 10: return .checkForReplacement
        case 11: return .giveCallerIdentity
        case 12: return .giveDeviceSecret
        case 13: return .createOrGiveDeviceSecret
        case 14: return .findKeychainsDeviceSecret
        case 15: return .mergeOrChooseAnotherKeychain
        case 16: return .giveBackupPassword
        case 17: return .chooseBackupPassword
        case 18: return .chooseBackupOutput
        default: return nil
        }
    }

    // MARK: Versions

    /// The code of a version's kind (spec/AGENT.md §5.1): the history record's kind
    /// (spec/FORMAT.md §7.7), and 0 for the current version.
    static func versionKindCode(_ k: ItemVersion.Kind) -> UInt8 {
        switch k {
        case .current: return 0
        case .replaced: return 1
        case .deleted: return 2
        }
    }

    static func versionKind(code: UInt8) -> ItemVersion.Kind? {
        switch code {
        case 0: return .current
        case 1: return .replaced
        case 2: return .deleted
        default: return nil
        }
    }

    // MARK: Frames

    /// The version byte of a request or answer payload when it is one this Latchkey speaks.
    package static func version(of payload: ArraySlice<UInt8>) -> UInt8? {
        payload.first.flatMap { versions.contains($0) ? $0 : nil }
    }

    /// The payload of a whole frame: checks the length prefix against the bytes given.
    static func payload(of frame: [UInt8]) throws -> ArraySlice<UInt8> {
        guard let prefix = ByteReader(frame).getInteger(at: 0, as: UInt32.self) else {
            throw DecodeError.malformed("truncated input in the length prefix")
        }
        let declared = Int(prefix)
        guard declared == frame.count - lengthBytes else {
            throw DecodeError.length(declared: declared, actual: frame.count - lengthBytes)
        }
        return frame[lengthBytes...]
    }

    /// Measures the frame, then writes it into a buffer of exactly its size.
    static func frame(_ type: UInt8, version: UInt8, _ fields: (inout Output) -> Void) -> [UInt8] {
        var measure = Output(writer: nil)
        fields(&measure)
        let length = 2 + measure.count
        var o = Output(writer: ByteWriter(capacity: lengthBytes + length))
        o.u32(UInt32(truncatingIfNeeded: length))
        o.u8(version)
        o.u8(type)
        fields(&o)
        return o.frameBytes
    }

    /// Reads version and type, hands them and the fields to `body`, and checks that it read
    /// them all.
    static func decodePayload<T>(_ payload: ArraySlice<UInt8>, _ body: (UInt8, UInt8, inout Input) throws -> T) throws
        -> T
    {
        guard let first = payload.first else { throw DecodeError.malformed("empty message (no version byte)") }
        if first == protocol1FirstByte { throw DecodeError.protocol1 }
        guard versions.contains(first) else { throw DecodeError.version(first) }
        var i = Input(ByteReader(payload.dropFirst()))
        do {
            let type = try i.u8("message type")
            let value = try body(first, type, &i)
            try i.reader.expectEnd("message")
            return value
        } catch let e as FormatError {
            throw DecodeError.malformed(e.description)
        }
    }

    // MARK: Writing fields

    /// Writes fields into a `ByteWriter`, or (without one) only counts their bytes.
    struct Output {
        private var writer: ByteWriter?
        private(set) var count = 0

        init(writer: ByteWriter?) { self.writer = writer }

        var frameBytes: [UInt8] { writer?.bytes ?? [] }

        /// `u8`, `u32`, `u64`: big-endian, of the integer type's width.
        mutating func integer<T: FixedWidthInteger>(_ v: T) {
            count += MemoryLayout<T>.size
            writer?.writeInteger(v)
        }
        mutating func u8(_ v: UInt8) { integer(v) }
        mutating func u32(_ v: UInt32) { integer(v) }
        mutating func u64(_ v: UInt64) { integer(v) }
        mutating func f64(_ v: Double) { u64(v.bitPattern) }
        mutating func bool(_ v: Bool) { u8(v ? 1 : 0) }

        /// `bytes`: u32 length ‖ the bytes.
        mutating func bytes<C: Collection>(_ v: C) where C.Element == UInt8 {
            u32(UInt32(v.count))
            count += v.count
            writer?.writeBytes(v)
        }

        /// `string`: u32 length ‖ UTF-8.
        mutating func string(_ s: String) { bytes(s.utf8) }

        /// `opt<T>`: u8 0 (absent) | u8 1 ‖ T.
        mutating func optional<T>(_ v: T?, _ write: (inout Output, T) -> Void) {
            guard let v else { return u8(0) }
            u8(1)
            write(&self, v)
        }

        /// `list<T>`: u32 count ‖ T × count.
        mutating func list<S: Collection>(_ items: S, _ write: (inout Output, S.Element) -> Void) {
            u32(UInt32(items.count))
            for item in items { write(&self, item) }
        }

        /// `attrs`: spec/FORMAT.md §8.1's attribute list.
        mutating func attributes(_ a: [String: AttributeValue]) {
            if writer == nil { count += AttributeList.encodedSize(a) } else { AttributeList.write(a, into: &writer!) }
        }

        mutating func itemClass(_ c: ItemClass) { count += 4; writer?.writeBytes(c.code) }

        /// `class`: u8 AKS class number 6–12 (FORMAT.md §4), 0 for none.
        mutating func protection(_ p: ProtectionClass?) { u8(p?.rawValue ?? 0) }

        /// `remedy` (version 3): u8 code, then for code 5 the example path.
        mutating func remedy(_ r: KeychainRemedy) {
            u8(AgentMessage.remedyCode(r))
            if case .giveKeychainFile(let example) = r { string(example) }
        }

        mutating func sync(_ s: SyncFilter) {
            switch s {
            case .notSynchronizable: u8(0)
            case .synchronizable: u8(1)
            case .any: u8(2)
            }
        }

        mutating func target(_ t: Target) {
            string(t.keychain)
            string(t.device)
            optional(t.caller) { o, c in
                o.optional(c.applicationIdentifier) { $0.string($1) }
                o.list(c.keychainAccessGroups) { $0.string($1) }
                o.list(c.applicationGroups) { $0.string($1) }
            }
        }

        mutating func query(_ q: Query) {
            itemClass(q.itemClass)
            filter(q.attributes, q.protection, q.caseInsensitive, q.synchronizable, q.persistentRef)
        }

        mutating func identityQuery(_ q: IdentityQuery) {
            filter(q.attributes, q.protection, q.caseInsensitive, q.synchronizable, q.persistentRef)
        }

        private mutating func filter(
            _ a: [String: AttributeValue], _ p: ProtectionClass?, _ caseInsensitive: Bool,
            _ s: SyncFilter, _ ref: [UInt8]?
        ) {
            attributes(a)
            protection(p)
            bool(caseInsensitive)
            sync(s)
            optional(ref) { $0.bytes($1) }
        }

        mutating func read(_ r: Read) {
            optional(r.limit) { $0.u32(UInt32(clamping: $1)) }
            bool(r.includeData)
            optional(r.prompt) { $0.string($1) }
            switch r.authentication {
            case .none: u8(0)
            case .interactive: u8(1)
            case .passcode(let p):
                u8(2)
                bytes(p)
            }
        }

        mutating func newItem(_ n: NewItem) {
            itemClass(n.itemClass)
            protection(n.protection)
            bool(n.requiresUserPresence)
            attributes(n.attributes)
            bytes(n.data)
        }

        mutating func item(_ i: Item) {
            itemClass(i.itemClass)
            protection(i.protection)
            bool(i.requiresUserPresence)
            bytes(i.persistentRef)
            attributes(i.attributes)
            bytes(i.data)
        }

        mutating func reference(_ r: Reference) {
            protection(r.protection)
            bool(r.requiresUserPresence)
            bytes(r.persistentRef)
            attributes(r.attributes)
        }

        /// A `version` (spec/AGENT.md §5.1): the item as a reference, without data (it has no
        /// field for any), then kind, date, sequence number and whether the item is live.
        mutating func version(_ v: ItemVersion) {
            itemClass(v.item.itemClass)
            reference(Reference(v.item))
            u8(AgentMessage.versionKindCode(v.kind))
            f64(v.date)
            u64(v.sequence)
            bool(v.itemIsLive)
        }

        mutating func state(_ s: AgentKeychainState) {
            string(s.keychain)
            string(s.device)
            bool(s.hasPasscode)
            let classes = ProtectionClass.allCases.filter { s.unlocked.contains($0.code) }
            u8(UInt8(classes.count))
            for c in classes { u8(c.rawValue) }
            bool(s.unlockedOnce)
            f64(s.idleSeconds)
        }

        /// `counts`: u32 n ‖ (string name ‖ u64 count) × n, names in ascending byte order.
        mutating func counts(_ c: [String: Int]) {
            list(c.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }) { o, key in
                o.string(key)
                o.u64(UInt64(max(0, c[key]!)))
            }
        }
    }

    // MARK: Reading fields

    /// Reads fields with a `ByteReader`, accepting only the one encoding `Output` writes.
    struct Input {
        var reader: ByteReader

        init(_ reader: ByteReader) { self.reader = reader }

        func malformed(_ field: String, _ reason: String) -> DecodeError { .malformed("invalid \(field): \(reason)") }

        mutating func u8(_ field: String) throws -> UInt8 { try reader.readInteger(field) }
        mutating func u32(_ field: String) throws -> UInt32 { try reader.readInteger(field) }
        mutating func u64(_ field: String) throws -> UInt64 { try reader.readInteger(field) }
        mutating func f64(_ field: String) throws -> Double { Double(bitPattern: try u64(field)) }

        /// A u64 that must fit an Int.
        mutating func int(_ field: String) throws -> Int {
            let v = try u64(field)
            guard v <= UInt64(Int.max) else { throw malformed(field, "\(v) is too large") }
            return Int(v)
        }

        mutating func bool(_ field: String) throws -> Bool {
            switch try u8(field) {
            case 0: return false
            case 1: return true
            case let b: throw malformed(field, "\(b) is not a boolean (0 or 1)")
            }
        }

        mutating func bytes(_ field: String) throws -> [UInt8] {
            let n = Int(try u32("\(field) length"))
            return try reader.readBytes(count: n, field)
        }

        mutating func string(_ field: String) throws -> String {
            let n = Int(try u32("\(field) length"))
            guard let s = String(validating: try reader.readSlice(count: n, field), as: UTF8.self) else {
                throw malformed(field, "not valid UTF-8")
            }
            return s
        }

        mutating func optional<T>(_ field: String, _ read: (inout Input) throws -> T) throws -> T? {
            switch try u8("\(field) presence") {
            case 0: return nil
            case 1: return try read(&self)
            case let b: throw malformed("\(field) presence", "\(b) (0 or 1)")
            }
        }

        /// `minimumSize`: the fewest bytes one element takes, so that a count the remaining
        /// bytes cannot hold is refused before anything is reserved.
        mutating func list<T>(_ field: String, minimumSize: Int, _ read: (inout Input) throws -> T) throws -> [T] {
            let n = Int(try u32("\(field) count"))
            guard n <= reader.remaining / minimumSize else {
                throw DecodeError.malformed("truncated input in \(field)")
            }
            var out: [T] = []
            out.reserveCapacity(n)
            for _ in 0..<n { out.append(try read(&self)) }
            return out
        }

        mutating func attributes() throws -> [String: AttributeValue] { try AttributeList.read(&reader, names: .any) }

        mutating func itemClass() throws -> ItemClass {
            let code = try reader.readSlice(count: 4, "item class")
            guard let c = ItemClass.allCases.first(where: { $0.code.elementsEqual(code) }) else {
                throw malformed("item class", "not genp, inet, cert or keys")
            }
            return c
        }

        mutating func remedy() throws -> KeychainRemedy {
            let code = try u8("remedy")
            guard let r = try AgentMessage.remedy(code: code, example: { try string("remedy example") }) else {
                throw malformed("remedy", "\(code) (1 to 18)")
            }
            return r
        }

        mutating func protection(required: Bool) throws -> ProtectionClass? {
            let raw = try u8("protection class")
            if raw == 0 && !required { return nil }
            guard let p = ProtectionClass(rawValue: raw) else {
                throw malformed("protection class", "\(raw) (\(required ? "" : "0 or ")6 to 12)")
            }
            return p
        }

        mutating func sync() throws -> SyncFilter {
            switch try u8("synchronizable") {
            case 0: return .notSynchronizable
            case 1: return .synchronizable
            case 2: return .any
            case let s: throw malformed("synchronizable", "\(s) (0, 1 or 2)")
            }
        }

        mutating func target() throws -> Target {
            let keychain = try string("keychain path")
            let device = try string("device path")
            let caller = try optional("caller") { i -> CallerIdentity in
                let app = try i.optional("application identifier") { try $0.string("application identifier") }
                let groups = try i.list("keychain access groups", minimumSize: 4) { try $0.string("access group") }
                let appGroups = try i.list("application groups", minimumSize: 4) { try $0.string("application group") }
                return CallerIdentity(
                    applicationIdentifier: app, keychainAccessGroups: groups, applicationGroups: appGroups)
            }
            return Target(keychain: keychain, device: device, caller: caller)
        }

        mutating func query() throws -> Query {
            let c = try itemClass()
            let f = try filter()
            return Query(
                c, f.attributes, protection: f.protection, caseInsensitive: f.caseInsensitive,
                synchronizable: f.sync, persistentRef: f.ref)
        }

        mutating func identityQuery() throws -> IdentityQuery {
            let f = try filter()
            return IdentityQuery(
                f.attributes, protection: f.protection, caseInsensitive: f.caseInsensitive,
                synchronizable: f.sync, persistentRef: f.ref)
        }

        private mutating func filter() throws -> (
            attributes: [String: AttributeValue], protection: ProtectionClass?,
            caseInsensitive: Bool, sync: SyncFilter, ref: [UInt8]?
        ) {
            let a = try attributes()
            let p = try protection(required: false)
            let ci = try bool("caseInsensitive")
            let s = try sync()
            return (a, p, ci, s, try optional("persistent reference") { try $0.bytes("persistent reference") })
        }

        mutating func read() throws -> Read {
            let limit = try optional("limit") { Int(try $0.u32("limit")) }
            let includeData = try bool("includeData")
            let prompt = try optional("prompt") { try $0.string("prompt") }
            let authentication: Authentication
            switch try u8("authentication") {
            case 0: authentication = .none
            case 1: authentication = .interactive
            case 2: authentication = .passcode(try bytes("authentication passcode"))
            case let a: throw malformed("authentication", "\(a) (0, 1 or 2)")
            }
            return Read(limit: limit, includeData: includeData, prompt: prompt, authentication: authentication)
        }

        mutating func newItem() throws -> NewItem {
            let c = try itemClass()
            let p = try protection(required: false)
            let presence = try bool("requiresUserPresence")
            let a = try attributes()
            return NewItem(c, attributes: a, data: try bytes("data"), protection: p, requiresUserPresence: presence)
        }

        mutating func item() throws -> Item {
            let c = try itemClass()
            let p = try protection(required: true)!
            let presence = try bool("requiresUserPresence")
            let ref = try bytes("persistent reference")
            let a = try attributes()
            return Item(
                itemClass: c, attributes: a, data: try bytes("data"), protection: p, persistentRef: ref,
                requiresUserPresence: presence)
        }

        mutating func reference() throws -> Reference {
            let p = try protection(required: true)!
            let presence = try bool("requiresUserPresence")
            let ref = try bytes("persistent reference")
            return Reference(
                persistentRef: ref, protection: p, requiresUserPresence: presence, attributes: try attributes())
        }

        mutating func version() throws -> ItemVersion {
            let c = try itemClass()
            let item = try reference().item(c, data: [])
            let code = try u8("version kind")
            guard let kind = AgentMessage.versionKind(code: code) else {
                throw malformed("version kind", "\(code) (0 current, 1 replaced, 2 deleted)")
            }
            let date = try f64("version date")
            let sequence = try u64("version sequence")
            return ItemVersion(
                item: item, kind: kind, date: date, sequence: sequence, itemIsLive: try bool("itemIsLive"))
        }

        mutating func state() throws -> AgentKeychainState {
            let keychain = try string("keychain path")
            let device = try string("device path")
            let hasPasscode = try bool("hasPasscode")
            let n = Int(try u8("unlocked class count"))
            var unlocked: [String] = []
            var previous: UInt8 = 0
            for _ in 0..<n {
                let raw = try u8("unlocked class")
                guard raw > previous, let c = ProtectionClass(rawValue: raw) else {
                    throw malformed("unlocked classes", "\(raw): classes are 6 to 12, each once, ascending")
                }
                previous = raw
                unlocked.append(c.code)
            }
            let once = try bool("unlockedOnce")
            return AgentKeychainState(
                keychain: keychain, device: device, hasPasscode: hasPasscode, unlocked: unlocked,
                unlockedOnce: once, idleSeconds: try f64("idle seconds"))
        }

        mutating func counts(_ field: String) throws -> [String: Int] {
            let n = Int(try u32("\(field) count"))
            guard n <= reader.remaining / 12 else { throw DecodeError.malformed("truncated input in \(field)") }
            var out: [String: Int] = [:]
            out.reserveCapacity(n)
            var previous: [UInt8]? = nil
            for _ in 0..<n {
                let name = try string("\(field) name")
                let bytes = Array(name.utf8)
                if let p = previous, !p.lexicographicallyPrecedes(bytes) {
                    throw malformed(field, "names must be unique and sorted")
                }
                previous = bytes
                guard out.updateValue(try int("\(field) count"), forKey: name) == nil else {
                    throw malformed(field, "names must be unique and sorted")
                }
            }
            return out
        }
    }
}
