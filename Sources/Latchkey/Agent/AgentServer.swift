import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LatchkeyCrypto
import LatchkeyFormat
#if canImport(Glibc)
import Glibc
#endif

/// `latchkey agent`: holds open keychains with their unlocked class keys and serves the
/// requests of the same user's processes over a Unix socket (spec/AGENT.md, SECURITY.md §5).
///
/// Each connection is served on its own thread; requests on one keychain run one at a time
/// (each with its own caller and authentication callback, a `CallContext`). A request is read
/// whole before the keychain is touched and the answer written after it is released, so a
/// slow or stalled client holds nothing but its own thread, and only until its frame timeout.
public final class AgentServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var socketPath: String
        /// The socket's directory must be 0700 and this user's (the default location); a
        /// LATCHKEY_AGENT_SOCK directory need only be this user's (or root's) and not
        /// writable by others unless sticky.
        public var strictDirectory: Bool
        /// Seconds without a request after which a keychain is locked (ak, aku, akpu dropped).
        /// 0: never.
        public var idleTimeout: Double = 300
        /// A frame, once its first byte has arrived, must be complete within this many seconds;
        /// an answer must be taken within as many.
        public var frameTimeout: Double = 10
        /// A connection with no request for this long is closed (clients reconnect).
        public var connectionIdleTimeout: Double = 600
        public var maxConnections = 64
        public var maxKeychains = 64
        /// Where to tell what happens (the foreground agent: stderr); nil: silent.
        public var log: (@Sendable (String) -> Void)?

        public init(socketPath: String, strictDirectory: Bool) {
            self.socketPath = socketPath
            self.strictDirectory = strictDirectory
        }

        /// The socket of the environment: LATCHKEY_AGENT_SOCK (lenient directory check), else
        /// the per-user runtime directory (strict).
        public init(environment env: [String: String] = ProcessInfo.processInfo.environment) {
            let explicit = !(env["LATCHKEY_AGENT_SOCK"] ?? "").isEmpty && env["LATCHKEY_AGENT_SOCK"] != "none"
            self.init(socketPath: AgentSocket.defaultPath(environment: env), strictDirectory: !explicit)
        }
    }

    /// One keychain the agent holds.
    final class Held: @unchecked Sendable {
        let path: String
        let device: String
        let keychain: Keychain
        let mutex = Lock()
        var lastUse = DispatchTime.now()

        init(path: String, device: String, keychain: Keychain) {
            self.path = path
            self.device = device
            self.keychain = keychain
        }
    }

    public let configuration: Configuration
    private let mutex = Lock()
    private var listenFD: Int32 = -1
    private var socketInode: ino_t = 0
    private var held: [String: Held] = [:]
    /// `held` by the paths as requests spelled them (before realpath).
    private var aliases: [String: Held] = [:]
    private var connections: Set<Int32> = []
    private var stopping = false
    private let stopped = DispatchSemaphore(value: 0)
    private let idleWake = Condition()
    private var threadsRunning = 0

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    private func log(_ message: String) { configuration.log?(message) }

    // MARK: Process hardening

    /// No core dumps (RLIMIT_CORE 0) and no ptrace attach or /proc/PID/mem reads by the same
    /// user (PR_SET_DUMPABLE 0). - Returns: whether both took effect.
    @discardableResult
    public static func hardenProcess() -> Bool {
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        #if canImport(Glibc)
        let core = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0
        #else
        let core = setrlimit(RLIMIT_CORE, &limit) == 0
        #endif
        return core && setDumpable(false)
    }

    /// prctl(2) is variadic, which Swift cannot call; its first five arguments are integers,
    /// so it is called through a pointer of that (register-compatible) type.
    private typealias PrctlFunction = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
    private static let prctl: PrctlFunction? = {
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") else { return nil }
        return unsafeBitCast(sym, to: PrctlFunction.self)
    }()

    static func setDumpable(_ on: Bool) -> Bool {
        guard let prctl else { return false }
        return prctl(4 /* PR_SET_DUMPABLE */, on ? 1 : 0, 0, 0, 0) == 0
    }

    /// PR_GET_DUMPABLE: whether the process may be dumped or attached to (nil: unknown).
    public static var isDumpable: Bool? {
        guard let prctl else { return nil }
        let r = prctl(3 /* PR_GET_DUMPABLE */, 0, 0, 0, 0)
        return r < 0 ? nil : r != 0
    }

    // MARK: Start and stop

    /// Checks the socket's directory, replaces a stale socket, listens, and starts serving on
    /// background threads.
    /// - Throws: errSecIO when the directory or socket is not this user's, has group or world
    ///   permissions, is not a socket, or another agent answers there.
    public func start() throws {
        let path = configuration.socketPath
        try AgentSocket.prepareDirectory(for: path, strict: configuration.strictDirectory)
        if try AgentSocket.checkSocketFile(path) {
            switch try AgentSocket.connect(path) {
            case .connected(let fd):
                close(fd)
                throw KeychainError(.duplicateKeychain, "an agent already answers at \(path); stop it with 'latchkey agent --stop' first")
            case .nobody:
                guard unlink(path) == 0 || errno == ENOENT else {
                    throw AgentSocket.fail("cannot remove the stale agent socket \(path)", errno: errno)
                }
                log("removed a stale socket at \(path) (nobody answered)")
            }
        }
        let fd = try AgentSocket.listen(path)
        var st = stat()
        if lstat(path, &st) == 0 { socketInode = st.st_ino }
        mutex.lock()
        listenFD = fd
        mutex.unlock()
        spawn { self.acceptLoop(fd) }
        if configuration.idleTimeout > 0 { spawn { self.idleLoop() } }
        log("listening on \(path) (pid \(getpid()); idle lock after \(configuration.idleTimeout > 0 ? "\(Int(configuration.idleTimeout)) s" : "never"))")
    }

    /// Stops serving: closes the socket (and removes it if it is still ours), ends every
    /// connection, locks every keychain and drops them, so every class key is zeroed once the
    /// requests in progress end.
    public func stop() {
        mutex.lock()
        guard !stopping else { mutex.unlock(); return }
        stopping = true
        let fd = listenFD
        listenFD = -1
        let conns = connections
        let keychains = Array(held.values)
        held = [:]
        aliases = [:]
        mutex.unlock()
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        var st = stat()
        if lstat(configuration.socketPath, &st) == 0, st.st_ino == socketInode { unlink(configuration.socketPath) }
        for c in conns { shutdown(c, Int32(SHUT_RDWR)) }
        for h in keychains {
            h.mutex.lock()
            h.keychain.lock()
            h.mutex.unlock()
        }
        idleWake.lock(); idleWake.broadcast(); idleWake.unlock()
        log("stopped; every key dropped")
        stopped.signal()
    }

    /// Blocks until `stop` (from a request, a signal handler's call, or another thread).
    public func wait() {
        stopped.wait()
        stopped.signal()
    }

    public var isStopping: Bool {
        mutex.lock(); defer { mutex.unlock() }
        return stopping
    }

    private func spawn(_ body: @escaping @Sendable () -> Void) {
        DetachedThread.start(stackSize: 1 << 20, body)
    }

    // MARK: Accepting

    private func acceptLoop(_ listener: Int32) {
        while !isStopping {
            let fd = accept(listener, nil, nil)
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if isStopping { return }
                if errno == EMFILE || errno == ENFILE { usleep(100_000); continue }
                log("accept failed: \(String(cString: strerror(errno)))")
                usleep(100_000)
                continue
            }
            guard let peer = AgentSocket.peerCredentials(fd), AgentSocket.peerAllowed(peerUID: peer.uid) else {
                let who = AgentSocket.peerCredentials(fd).map { "uid \($0.uid), pid \($0.pid)" } ?? "an unknown peer"
                log("refused a connection from \(who): only uid \(geteuid()) is served")
                refuse(fd, KeychainError(.authFailed, "this agent serves only uid \(geteuid()); connection refused"))
                continue
            }
            mutex.lock()
            if stopping || connections.count >= configuration.maxConnections {
                let busy = !stopping
                mutex.unlock()
                if busy { log("refused a connection: \(configuration.maxConnections) connections are open") }
                refuse(fd, KeychainError(.notAvailable, "the agent is busy (\(configuration.maxConnections) connections are open); try again"))
                continue
            }
            connections.insert(fd)
            mutex.unlock()
            spawn { self.serve(fd) }
        }
    }

    /// One error answer, then a lingering close on a thread of its own: what the peer had
    /// sent is read and dropped (for at most a second), so that the close does not reset the
    /// connection before the peer has read the answer.
    private func refuse(_ fd: Int32, _ error: KeychainError) {
        spawn {
            if let bytes = try? AgentCoding.encode(AgentResponse.failure(error)) {
                try? AgentSocket.writeFrame(fd, bytes, deadline: .now() + 1)
            }
            AgentServer.finishSending(fd)
            close(fd)
        }
    }

    /// Shuts down the sending side and drops what the peer still sends (for at most a second),
    /// so that closing does not reset the connection before the peer has read the answer.
    static func finishSending(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        var sink = [UInt8](repeating: 0, count: 4096)
        let deadline = DispatchTime.now() + 1
        while (try? AgentSocket.wait(fd, for: Int16(POLLIN), until: deadline)) != nil {
            if sink.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) <= 0 { break }
        }
    }

    // MARK: Serving one connection

    private func serve(_ fd: Int32) {
        defer {
            mutex.lock()
            connections.remove(fd)
            mutex.unlock()
            close(fd)
        }
        while !isStopping {
            var payload: [UInt8]
            do {
                payload = try AgentSocket.readFrame(fd, limit: AgentSocket.maxRequestBytes,
                                                    idleDeadline: .now() + configuration.connectionIdleTimeout,
                                                    frameTimeout: configuration.frameTimeout)
            } catch AgentSocket.FrameError.tooLarge(let n) {
                log("refused a request of \(n) bytes (limit \(AgentSocket.maxRequestBytes)); connection closed")
                let e = KeychainError(.param, "the request is \(n) bytes, more than the agent accepts (\(AgentSocket.maxRequestBytes >> 20) MiB); nothing was done")
                if let bytes = try? AgentCoding.encode(AgentResponse.failure(e)) {
                    try? AgentSocket.writeFrame(fd, bytes, deadline: .now() + configuration.frameTimeout)
                }
                AgentServer.finishSending(fd)
                return
            } catch AgentSocket.FrameError.truncated {
                if !isStopping { log("a client disconnected in the middle of a request; nothing was done") }
                return
            } catch AgentSocket.FrameError.timedOut {
                return
            } catch {
                return
            }
            let (response, after) = handle(payload)
            Crypto.cleanse(&payload)
            guard var bytes = try? AgentCoding.encode(response) else { return }
            defer { Crypto.cleanse(&bytes) }
            do {
                try AgentSocket.writeFrame(fd, bytes, deadline: .now() + configuration.frameTimeout)
            } catch {
                log("a client did not take its answer; connection closed")
                after?()
                return
            }
            after?()
        }
    }

    /// Decodes and runs one request. Never throws: every failure is an error answer.
    /// - Returns: the answer and what to do once it is sent (stop).
    func handle(_ payload: [UInt8]) -> (AgentResponse, (() -> Void)?) {
        let request: AgentRequest
        do {
            request = try AgentCoding.decode(AgentRequest.self, payload)
        } catch {
            log("refused a malformed request")
            return (.failure(KeychainError(.param, "malformed agent request: not a protocol \(agentProtocolVersion) JSON object", underlying: "\(error)")), nil)
        }
        guard request.v == agentProtocolVersion else {
            return (.failure(KeychainError(.param, "the agent speaks protocol version \(agentProtocolVersion), the request \(request.v); use the same Latchkey for both")), nil)
        }
        do {
            switch request.op {
            case "status":
                var r = AgentResponse.success
                r.agent = status()
                return (r, nil)
            case "stop":
                return (.success, { [self] in stop() })
            case "lock" where request.all == true:
                for h in heldKeychains() { lockHeld(h) }
                return (.success, nil)
            default:
                return (try perform(request), nil)
            }
        } catch let e as KeychainError {
            return (.failure(e), nil)
        } catch {
            return (.failure(KeychainError(.internal, "the agent failed", underlying: "\(error)")), nil)
        }
    }

    private func heldKeychains() -> [Held] {
        mutex.lock(); defer { mutex.unlock() }
        return Array(held.values)
    }

    private func lockHeld(_ h: Held) {
        h.mutex.lock()
        h.keychain.lock()
        h.mutex.unlock()
    }

    func status() -> AgentStatus {
        let keychains = heldKeychains().sorted { $0.path < $1.path }.map { h -> AgentKeychainState in
            h.mutex.lock(); defer { h.mutex.unlock() }
            return state(h)
        }
        return AgentStatus(pid: getpid(), socket: configuration.socketPath, protocolVersion: agentProtocolVersion,
                           idleTimeout: configuration.idleTimeout, dumpable: AgentServer.isDumpable, keychains: keychains)
    }

    /// Call with `h.mutex` held.
    private func state(_ h: Held) -> AgentKeychainState {
        let kc = h.keychain
        let now = DispatchTime.now().uptimeNanoseconds, last = h.lastUse.uptimeNanoseconds
        let idle = now > last ? Double(now - last) / 1e9 : 0
        return AgentKeychainState(keychain: h.path, device: h.device, hasPasscode: kc.hasPasscode,
                                  unlocked: ProtectionClass.allCases.filter { kc.isAvailable($0) }.map(\.code),
                                  unlockedOnce: kc.localStore?.unlockedOnce ?? false || !kc.hasPasscode, idleSeconds: idle)
    }

    /// The held keychain for a request, opened on first use.
    private func holder(_ request: AgentRequest) throws -> Held {
        guard let k = request.keychain, let d = request.device, k.hasPrefix("/"), d.hasPrefix("/") else {
            throw KeychainError(.param, "the agent request '\(request.op)' needs absolute keychain and device paths")
        }
        // Clients send resolved paths: look them up as given first (no syscall), and resolve
        // them (realpath) only for a keychain not held under that spelling yet.
        let given = k + "\u{0}" + d
        mutex.lock()
        if stopping { mutex.unlock(); throw KeychainError(.notAvailable, "the agent is stopping") }
        if let h = aliases[given] { mutex.unlock(); return h }
        mutex.unlock()
        let path = AgentSocket.absolute(k), device = AgentSocket.absolute(d)
        let key = path + "\u{0}" + device
        mutex.lock(); defer { mutex.unlock() }
        if stopping { throw KeychainError(.notAvailable, "the agent is stopping") }
        if let h = held[key] {
            if aliases.count < 4 * configuration.maxKeychains { aliases[given] = h }
            return h
        }
        guard held.count < configuration.maxKeychains else {
            throw KeychainError(.notAvailable, "the agent holds \(configuration.maxKeychains) keychains already; stop it to start afresh")
        }
        // Opening reads the whole log once; other keychains wait meanwhile, as they would for
        // any first open.
        let kc = try Keychain.open(path: path, devicePath: device)
        if kc.recoveredTailBytes > 0 { log("\(path): removed \(kc.recoveredTailBytes) bytes of an incomplete write") }
        let h = Held(path: path, device: device, keychain: kc)
        held[key] = h
        aliases[given] = h
        log("opened \(path)")
        return h
    }

    /// Runs a keychain request on its keychain, with the request's caller. When the file was
    /// replaced by a different keychain (deleted and created again), the new one is opened
    /// (locked) in place of the old and the request runs once more.
    private func perform(_ request: AgentRequest) throws -> AgentResponse {
        do {
            return try performOnce(request)
        } catch let e as KeychainError where e.status == .decode {
            guard try replaceIfDifferentFile(request) else { throw e }
            return try performOnce(request)
        }
    }

    /// - Returns: whether the file now holds another keychain (then it is held instead).
    private func replaceIfDifferentFile(_ request: AgentRequest) throws -> Bool {
        let h = try holder(request)
        guard let fresh = try? Keychain.open(path: h.path, devicePath: h.device),
              fresh.localStore?.fileUUID != h.keychain.localStore?.fileUUID else { return false }
        mutex.lock()
        let key = h.path + "\u{0}" + h.device
        if held[key] === h {
            held[key] = Held(path: h.path, device: h.device, keychain: fresh)
            aliases = aliases.filter { $0.value !== h }
        }
        mutex.unlock()
        lockHeld(h)
        log("\(h.path) was replaced by another keychain; holding the new one (locked)")
        return true
    }

    private func performOnce(_ request: AgentRequest) throws -> AgentResponse {
        let h = try holder(request)
        h.mutex.lock()
        defer { h.mutex.unlock() }
        let kc = h.keychain
        if request.op != "lock" { h.lastUse = .now() }
        let asked = AuthenticationRequest()
        var context = CallContext(caller: request.caller?.identity)
        if let p = request.authenticationPasscode {
            let passcode = [UInt8](p)
            context.authenticate = { _ in passcode }
        } else if request.interactive == true {
            context.authenticate = { prompt in asked.record(prompt); return nil }
        }
        do {
            return try run(request, kc, h, context)
        } catch let e as KeychainError where e.status == .userCanceled && asked.wasAsked {
            var r = AgentResponse(ok: false)
            r.needsAuthentication = true
            r.prompt = asked.prompt
            return r
        }
    }

    private func run(_ request: AgentRequest, _ kc: Keychain, _ h: Held, _ context: CallContext) throws -> AgentResponse {
        var r = AgentResponse.success
        func need<T>(_ value: T?, _ name: String) throws -> T {
            guard let value else { throw KeychainError(.param, "the agent request '\(request.op)' needs '\(name)'") }
            return value
        }
        switch request.op {
        case "open":
            break
        case "unlock":
            var passcode = [UInt8](try need(request.passcode, "passcode"))
            defer { Crypto.cleanse(&passcode) }
            try kc.unlock(passcode: passcode)
            log("unlocked \(h.path)")
        case "lock":
            kc.lock()
            log("locked \(h.path)")
        case "add":
            let items = try need(request.items, "items").map { try $0.item() }
            r.items = try kc.add(contentsOf: items, context: context).map(WireItem.init)
        case "find":
            let q = try need(request.query, "query").query()
            r.items = try kc.find(q, limit: request.limit, includeData: request.includeData ?? true, prompt: request.prompt,
                                   context: context).map(WireItem.init)
        case "update":
            let q = try need(request.query, "query").query()
            r.count = try kc.update(q, attributes: request.attributes?.attributes ?? [:], data: request.data.map { [UInt8]($0) },
                                    protection: try wireProtection(request.protection), context: context)
        case "delete":
            r.count = try kc.delete(try need(request.query, "query").query(), context: context)
        case "addIdentity":
            r.identity = WireIdentity(try kc.addIdentity(
                certificate: [UInt8](try need(request.certificate, "certificate")),
                privateKey: [UInt8](try need(request.privateKey, "privateKey")),
                attributes: request.attributes?.attributes ?? [:], protection: try wireProtection(request.protection),
                requiresUserPresence: request.requiresUserPresence ?? false, context: context))
        case "identities":
            let q = try need(request.identityQuery, "identityQuery").query()
            r.identities = try kc.identities(matching: q, limit: request.limit, includeData: request.includeData ?? true,
                                             prompt: request.prompt, context: context).map(WireIdentity.init)
        case "updateIdentities":
            r.count = try kc.updateIdentities(matching: try need(request.identityQuery, "identityQuery").query(),
                                              attributes: request.attributes?.attributes ?? [:],
                                              protection: try wireProtection(request.protection), context: context)
        case "deleteIdentities":
            r.count = try kc.deleteIdentities(matching: try need(request.identityQuery, "identityQuery").query(), context: context)
        case "changePasscode", "removePasscode":
            var old = request.passcode.map { [UInt8]($0) }
            var new = request.op == "removePasscode" ? nil : [UInt8](try need(request.newPasscode, "newPasscode"))
            defer {
                if old != nil { Crypto.cleanse(&old!) }
                if new != nil { Crypto.cleanse(&new!) }
            }
            r.count = try kc.changePasscode(old: old, new: new, kdfLogN: request.kdfLogN ?? KDFParameters.defaultLogN)
        case "compact":
            (r.before, r.after) = try kc.compact()
        case "info":
            r.info = try kc.info()
        case "verify":
            r.verify = kc.verify()
        default:
            throw KeychainError(.param, "unknown agent request '\(request.op)'")
        }
        // The lock state travels with the requests that may change it (and `open`), not with
        // every item operation.
        if ["open", "unlock", "lock", "changePasscode", "removePasscode"].contains(request.op) { r.state = state(h) }
        return r
    }

    // MARK: Idle lock

    private func idleLoop() {
        let timeout = configuration.idleTimeout
        let tick = min(1.0, timeout / 4)
        while !isStopping {
            idleWake.lock()
            idleWake.wait(seconds: tick)
            idleWake.unlock()
            if isStopping { return }
            for h in heldKeychains() {
                h.mutex.lock()
                // Read the clock under the keychain's lock: a request may have just used it.
                let now = DispatchTime.now().uptimeNanoseconds, last = h.lastUse.uptimeNanoseconds
                let idle = now > last ? Double(now - last) / 1e9 : 0
                let kc = h.keychain
                if idle >= timeout, kc.hasPasscode,
                   [ProtectionClass.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly].contains(where: kc.isAvailable) {
                    kc.lock()
                    log("locked \(h.path) after \(Int(timeout)) s without use")
                }
                h.mutex.unlock()
            }
        }
    }
}

/// Whether the agent's keychain asked for user presence during a request, and with what prompt.
final class AuthenticationRequest: @unchecked Sendable {
    private let mutex = Lock()
    private var asked = false
    private var text: String?

    func record(_ prompt: String?) {
        mutex.lock(); defer { mutex.unlock() }
        asked = true
        text = prompt
    }

    var wasAsked: Bool { mutex.lock(); defer { mutex.unlock() }; return asked }
    var prompt: String? { mutex.lock(); defer { mutex.unlock() }; return text }
}
