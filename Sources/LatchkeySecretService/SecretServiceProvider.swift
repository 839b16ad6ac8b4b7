import Dispatch
import Latchkey
import LatchkeyCrypto
import LatchkeyDBus
import LatchkeyFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The Secret Service (freedesktop.org Secret Service API 0.2) over a Latchkey keychain held by
/// `latchkey agent`: `org.freedesktop.secrets` on the session bus (spec/SECRET-SERVICE.md).
///
/// One thread runs the bus (`run()`); every call is answered there, in order. Asking a person
/// for the passcode happens on a thread of its own, so other clients are served meanwhile.
public final class SecretServiceProvider: @unchecked Sendable {
    public static let busName = "org.freedesktop.secrets"
    static let root = "/org/freedesktop/secrets"
    static let collectionPrefix = root + "/collection/"
    static let aliasPrefix = root + "/aliases/"
    static let sessionPrefix = root + "/session/"
    static let promptPrefix = root + "/prompt/"

    let bus: DBusConnection
    let keychain: Keychain
    /// The keychain's file, whose stat tells the provider of another writer's change.
    let keychainPath: String
    let prompter: PasscodePrompter
    let uid = getuid()

    var collections: [String: CollectionIndex] = [:]
    var aliases: [String: String] = [:]
    var sessions: [String: Session] = [:]
    var prompts: [String: PendingPrompt] = [:]
    var counter: UInt64 = 0
    /// The user id behind each client seen, by unique name (forgotten when it leaves).
    var senderUIDs: [String: uid_t] = [:]

    /// Work finished on another thread, for the bus thread (`wake` tells it).
    private let events = EventQueue()

    struct Session {
        var sender: String
        /// nil: the `plain` algorithm.
        var key: SecretSessionKey?
    }

    struct PendingPrompt {
        var sender: String
        var objects: [String]
        var running = false
    }

    /// A provider for `keychain` (opened through the agent) on `bus`.
    public init(keychain: Keychain, keychainPath: String, bus: DBusConnection, prompter: PasscodePrompter) {
        self.keychain = keychain
        self.keychainPath = keychainPath
        self.bus = bus
        self.prompter = prompter
    }

    /// Reads the collections, takes the bus name and starts answering.
    /// - Throws: `ProviderError.nameTaken` when another provider owns the name (and `replace`
    ///   is false or it refused to leave); the keychain's errors.
    public func start(replace: Bool) throws {
        signal(SIGPIPE, SIG_IGN)
        // A parent may have started this process with signals blocked (the mask is inherited
        // across exec): TERM, INT and HUP must end it, as systemd and the shell expect.
        var stop = sigset_t()
        sigemptyset(&stop)
        for s in [SIGTERM, SIGINT, SIGHUP] {
            sigaddset(&stop, s)
            signal(s, SIG_DFL)
        }
        pthread_sigmask(SIG_UNBLOCK, &stop, nil)
        try loadCollections()
        try bus.handle(under: Self.root) { [unowned self] m in self.handle(m) }
        try bus.watchDisconnects { [unowned self] name in self.forget(client: name) }
        if try bus.requestName(Self.busName, replace: replace) == .taken { throw ProviderError.nameTaken }
    }

    /// Answers calls until the bus connection ends.
    public func run() throws {
        try bus.run(wake: events.readFD) { [unowned self] in
            for e in self.events.drain() { e() }
        }
    }

    public enum ProviderError: Error, CustomStringConvertible {
        case nameTaken
        public var description: String {
            "another program owns org.freedesktop.secrets on this session bus (gnome-keyring, KWallet or KeePassXC); stop it, or start this one with --replace to take the name over (the other keeps its own items)"
        }
    }

    func nextID() -> UInt64 {
        counter += 1
        return counter
    }

    func forget(client: String) {
        senderUIDs[client] = nil
        sessions = sessions.filter { $0.value.sender != client }
        prompts = prompts.filter { $0.value.sender != client || $0.value.running }
    }

    // MARK: Dispatch

    func handle(_ m: DBusMessage) -> Bool {
        guard m.isMethodCall else { return false }
        guard let sender = m.sender, allowed(sender, m) else {
            bus.replyError(to: m, .accessDenied("the Secret Service of this user answers only this user's programs"))
            return true
        }
        do {
            guard let values = try route(m, sender: sender) else { return false }
            bus.reply(to: m, values)
        } catch let e as DBusError {
            bus.replyError(to: m, e)
        } catch let e as KeychainError {
            bus.replyError(to: m, Self.dbusError(e))
        } catch {
            bus.replyError(to: m, .failed("\(error)"))
        }
        return true
    }

    /// Other users of the machine are refused: the bus's record of the sender's user id must
    /// be this process's (a session bus normally admits only its user; this holds on any bus).
    func allowed(_ sender: String, _ m: DBusMessage) -> Bool {
        if let known = senderUIDs[sender] { return known == uid }
        guard let u = m.senderUID() else { return false }
        if senderUIDs.count > 4096 { senderUIDs.removeAll() }
        senderUIDs[sender] = u
        return u == uid
    }

    static func dbusError(_ e: KeychainError) -> DBusError {
        let text = "\(e.message) (\(e.status.name) \(e.status.rawValue))"
        switch e.status {
        case .interactionNotAllowed, .authFailed:
            return DBusError(SecretError.isLocked, text + "; unlock it with 'latchkey unlock' or the client's prompt")
        case .itemNotFound: return DBusError(SecretError.noSuchObject, text)
        case .param, .noSuchAttr: return .invalidArgs(text)
        default: return .failed(text)
        }
    }

    enum SecretError {
        static let isLocked = "org.freedesktop.Secret.Error.IsLocked"
        static let noSession = "org.freedesktop.Secret.Error.NoSession"
        static let noSuchObject = "org.freedesktop.Secret.Error.NoSuchObject"
    }

    /// What a path names.
    enum Object: Equatable {
        case service
        case collection(String)
        case item(String, String)
        case session(String)
        case prompt(String)
    }

    func resolve(_ path: String) -> Object? {
        if path == Self.root { return .service }
        if path.hasPrefix(Self.sessionPrefix) { return sessions[path] != nil ? .session(path) : nil }
        if path.hasPrefix(Self.promptPrefix) { return prompts[path] != nil ? .prompt(path) : nil }
        var rest: Substring
        var name: String
        if path.hasPrefix(Self.collectionPrefix) {
            rest = path.dropFirst(Self.collectionPrefix.count)
            name = String(rest.prefix { $0 != "/" })
        } else if path.hasPrefix(Self.aliasPrefix) {
            rest = path.dropFirst(Self.aliasPrefix.count)
            guard let target = aliases[String(rest.prefix { $0 != "/" })] else { return nil }
            name = target
        } else {
            return nil
        }
        guard collections[name] != nil else { return nil }
        let tail = rest.drop { $0 != "/" }
        if tail.isEmpty { return .collection(name) }
        let id = String(tail.dropFirst())
        guard !id.isEmpty, !id.contains("/") else { return nil }
        return .item(name, id)
    }

    static func collectionPath(_ name: String) -> String { collectionPrefix + name }
    static func itemPath(_ collection: String, _ id: String) -> String { collectionPrefix + collection + "/" + id }

    func route(_ m: DBusMessage, sender: String) throws -> [DBusValue]? {
        let path = m.path
        let interface = m.interface ?? ""
        let member = m.member
        if interface == "org.freedesktop.DBus.Introspectable" && member == "Introspect" {
            return [.string(Introspection.xml(for: path, provider: self))]
        }
        guard let object = resolve(path) else {
            if path == Self.root || path == "/org/freedesktop" || path == Self.root + "/collection" {
                return nil
            }
            throw DBusError.unknownObject("no such object: \(path)")
        }
        let args = try m.arguments()
        if interface == "org.freedesktop.DBus.Properties" {
            return try properties(object, member, args)
        }
        switch object {
        case .service: return try serviceCall(member, args, sender: sender, interface: interface)
        case .collection(let c): return try collectionCall(c, member, args, sender: sender, interface: interface)
        case .item(let c, let id): return try itemCall(c, id, member, args, sender: sender, interface: interface)
        case .session(let p):
            guard member == "Close" else { throw DBusError.unknownMethod("a session has only Close") }
            sessions[p] = nil
            return []
        case .prompt(let p): return try promptCall(p, member, args, sender: sender)
        }
    }

    static func expect(_ args: [DBusValue], _ signature: String, _ method: String) throws {
        let given = args.map(\.signature).joined()
        guard given == signature else {
            throw DBusError.invalidArgs("\(method) takes (\(signature)), not (\(given))")
        }
    }

    // MARK: Work on other threads

    /// Runs `work` on a thread of its own and `then` with its result on the bus thread.
    func background<T>(_ work: @escaping @Sendable () -> T, then: @escaping (T) -> Void) {
        let events = self.events
        let box = ResultBox<T>()
        // `then` runs on the bus thread only; the box carries it across unsent.
        box.then = then
        DispatchQueue.global().async {
            box.value = work()
            events.post { box.then?(box.value!) }
        }
    }
}

final class ResultBox<T>: @unchecked Sendable {
    var value: T?
    var then: ((T) -> Void)?
}

/// A queue of closures another thread posts for the bus thread, with a pipe to wake it.
final class EventQueue: @unchecked Sendable {
    let readFD: Int32
    private let writeFD: Int32
    private var queue: [() -> Void] = []
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        var fds: [Int32] = [-1, -1]
        _ = cloexecPipe(&fds, nonblocking: true)
        readFD = fds[0]
        writeFD = fds[1]
        pthread_mutex_init(mutex, nil)
    }

    func post(_ work: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        queue.append(work)
        pthread_mutex_unlock(mutex)
        var b: UInt8 = 1
        _ = write(writeFD, &b, 1)
    }

    func drain() -> [() -> Void] {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let q = queue
        queue = []
        return q
    }
}
