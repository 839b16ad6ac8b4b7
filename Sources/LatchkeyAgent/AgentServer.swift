import Dispatch
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Latchkey
import LatchkeyCrypto
import LatchkeyFormat
#if canImport(Glibc)
    import Glibc
#endif

/// `latchkey agent`: holds open keychains with their unlocked class keys and serves the
/// requests of the same user's processes over a Unix socket (spec/AGENT.md, SECURITY.md §5).
///
/// Each connection is served on its own thread (the one of those waiting in accept that took
/// it); requests on one keychain run one at a time (each with its own caller and
/// authentication callback, a `CallContext`). A request is read
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
        /// How long `stop` waits for requests in progress to end (their keys are zeroed then)
        /// before it stops anyway; the process's exit drops what they hold.
        public var stopGrace: Double = 5
        /// Seconds between the syncs of a keychain the agent holds that is in a sync circle
        /// (`AgentSyncScheduler`); 0: the agent never syncs by itself.
        public var syncInterval: Double = 300
        /// Seconds from a change made through the agent (or an unlock) to its sync: changes
        /// made meanwhile go in the same sync.
        public var syncDelay: Double = 5
        /// Opens a keychain the agent does not hold yet (tests: an open that blocks).
        var openKeychain: @Sendable (_ path: String, _ device: String) throws -> LocalBackend = {
            try LocalBackend.open(path: $0, devicePath: $1)
        }
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

    /// One keychain the agent holds, or is opening. Its fields are guarded by `state`, which
    /// is never held across I/O: a request marks the keychain `busy` for its run (others for
    /// the same keychain wait), and `status`, `lockAll`, the idle lock and `stop` never wait
    /// for a busy keychain; what they would do to it (`lockPending`) is done as its request
    /// ends. A keychain whose open blocks therefore delays nothing but requests for itself.
    final class Held: @unchecked Sendable {
        let path: String
        let device: String
        let state = Condition()
        /// nil until opened (the opener holds it `busy` meanwhile), and when the open failed.
        var keychain: LocalBackend?
        /// Why the open failed (nil: it did not, or it is still under way).
        var failure: (any Error)?
        /// A request (or the open) is using the keychain.
        var busy: Bool
        /// Lock the keychain when the request in progress ends (`lockAll`, `stop`).
        var lockPending = false
        /// The agent stopped, or holds another keychain at this path now: no more requests.
        var dropped = false
        var lastUse = DispatchTime.now()
        /// The state as the last request left it, for `status` while a request runs.
        var snapshot: AgentKeychainState?

        /// Being opened: `busy` until `opened` or `failed`.
        init(path: String, device: String) {
            self.path = path
            self.device = device
            self.busy = true
        }

        /// Opened already (a replacement of a keychain deleted and created again).
        init(path: String, device: String, keychain: LocalBackend) {
            self.path = path
            self.device = device
            self.keychain = keychain
            self.busy = false
            self.snapshot = Held.state(path, device, keychain, idle: 0)
        }

        /// Call with `state` held.
        static func state(_ path: String, _ device: String, _ kc: LocalBackend, idle: Double) -> AgentKeychainState {
            AgentKeychainState(
                keychain: path, device: device, hasPasscode: kc.hasPasscode,
                unlocked: ProtectionClass.allCases.filter { kc.isAvailable($0) }.map(\.code),
                unlockedOnce: kc.store.unlockedOnce || !kc.hasPasscode, idleSeconds: idle)
        }

        /// Seconds since the last request that used it. Call with `state` held.
        var idleSeconds: Double {
            let now = DispatchTime.now().uptimeNanoseconds, last = lastUse.uptimeNanoseconds
            return now > last ? Double(now - last) / 1e9 : 0
        }

        /// The keychain for one request, once no other request (or the open) uses it; release
        /// it with `release`. - Throws: the open's error; errSecNotAvailable once dropped.
        func acquire() throws -> LocalBackend {
            state.lock(); defer { state.unlock() }
            while busy && !dropped { state.wait(seconds: 1) }
            if dropped { throw KeychainError(.notAvailable, "the agent is stopping") }
            guard let keychain else { throw failure ?? KeychainError(.notAvailable, "the agent is stopping") }
            busy = true
            return keychain
        }

        /// Ends a request: a lock asked for meanwhile is done, the snapshot taken.
        func release() {
            state.lock(); defer { state.unlock() }
            if let keychain {
                if lockPending || dropped { keychain.lock() }
                snapshot = Held.state(path, device, keychain, idle: idleSeconds)
            }
            lockPending = false
            busy = false
            state.broadcast()
        }

        /// The open ended: with the keychain, or with why not.
        func opened(_ result: Result<LocalBackend, any Error>) {
            state.lock()
            switch result {
            case .success(let kc): keychain = kc
            case .failure(let e): failure = e
            }
            state.unlock()
            release()
        }

        /// Locks the keychain now, or as its request in progress ends. - Returns: whether now.
        @discardableResult
        func lockNowOrLater(dropping: Bool = false) -> Bool {
            state.lock(); defer { state.unlock() }
            if dropping { dropped = true; state.broadcast() }
            guard busy else {
                if let keychain {
                    keychain.lock()
                    snapshot = Held.state(path, device, keychain, idle: idleSeconds)
                }
                return true
            }
            lockPending = true
            return false
        }

        /// The state now, or as the request in progress last left it; nil while opening.
        func currentState() -> AgentKeychainState? {
            state.lock(); defer { state.unlock() }
            guard let keychain else { return nil }
            guard !busy else {
                return snapshot.map {
                    var s = $0; s.idleSeconds = idleSeconds; return s
                }
            }
            return Held.state(path, device, keychain, idle: idleSeconds)
        }

        /// Reads the file again if another process replaced it since the last request (a
        /// compaction, or a passcode change made without the agent, whose new keybag leaves the
        /// class keys held here useless: they are dropped, as a request would drop them), so
        /// that `status` tells the truth. Only when no request uses the keychain: never waits.
        /// - Returns: whether keys given with the passcode were dropped (the passcode changed).
        func refreshIfIdle() -> Bool {
            state.lock()
            guard !busy, !dropped, let keychain else {
                state.unlock()
                return false
            }
            busy = true
            state.unlock()
            let before = keychain.store.unlockedOnce
            // An error is the next request's to report, as it would be without `status`.
            try? keychain.store.refresh()
            let dropped = before && !keychain.store.unlockedOnce
            release()
            return dropped
        }

        /// Waits until no request uses the keychain, at most until `deadline`. - Returns: whether idle.
        func waitIdle(until deadline: DispatchTime) -> Bool {
            state.lock(); defer { state.unlock() }
            while busy {
                let left = Double(deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds) / 1e9
                guard deadline > .now(), left > 0 else { return false }
                state.wait(seconds: min(left, 0.1))
            }
            return true
        }
    }

    public let configuration: Configuration
    private let mutex = Lock()
    private var listenFD: Int32 = -1
    private var socketInode: ino_t = 0
    private var held: [String: Held] = [:]
    /// `held` by the paths as requests spelled them (before realpath).
    private var aliases: [String: Held] = [:]
    /// Open connections, each with when it began waiting for its next request (nil: a
    /// request is being answered).
    private var connections: [Int32: DispatchTime?] = [:]
    /// Connections over the limit being read for one agent-wide request (`serveOverflow`).
    private var overflow = 0
    static let maxOverflow = 8
    private var stopping = false
    private let stopped = DispatchSemaphore(value: 0)
    private let idleWake = Condition()
    private var syncer: AgentSyncScheduler?

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
                throw KeychainError(
                    .duplicateKeychain,
                    "an agent already answers at \(path); stop it with 'latchkey agent --stop' first")
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
        guard startAccepter(fd) else {
            stop()
            throw KeychainError(.internal, "cannot start the agent's thread")
        }
        if configuration.idleTimeout > 0 { spawn { self.idleLoop() } }
        if configuration.syncInterval > 0 {
            let s = AgentSyncScheduler(
                interval: configuration.syncInterval, delay: configuration.syncDelay,
                log: { [weak self] in
                    self?.log($0)
                })
            mutex.lock()
            syncer = s
            mutex.unlock()
            spawn { s.loop() }
        }
        log(
            "listening on \(path) (pid \(getpid()); idle lock after \(configuration.idleTimeout > 0 ? "\(Int(configuration.idleTimeout)) s" : "never"))"
        )
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
        let conns = Array(connections.keys)
        let keychains = Array(held.values)
        let syncer = self.syncer
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
        // Never waits for a keychain's own lock: a request blocked in I/O (an open that never
        // returns) must not keep the agent, and the other keychains' keys, alive. Those in use
        // are locked as their request ends, which is waited for a little.
        for h in keychains { h.lockNowOrLater(dropping: true) }
        idleWake.lock(); idleWake.broadcast(); idleWake.unlock()
        syncer?.stop()
        let deadline = DispatchTime.now() + configuration.stopGrace
        let busy = keychains.filter { !$0.waitIdle(until: deadline) }
        if busy.isEmpty {
            log("stopped; every key dropped")
        } else {
            log(
                "stopped; \(busy.map(\.path).joined(separator: ", ")) still in a request after \(configuration.stopGrace) s, whose keys go with the process"
            )
        }
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

    /// Threads that wait in `accept`, each to serve the connection it takes itself: a client's
    /// first request is read by a thread that is already there, not by one created for it
    /// (a thread and its stack made and torn down for every CLI command). A thread that takes
    /// a connection while no other waits starts another first, so a slow client never delays
    /// the next; one that finishes its connection goes back to waiting unless
    /// `spareAccepters` wait already, else it ends.
    private var accepting = 0
    static let spareAccepters = 2

    private func startAccepter(_ listener: Int32) -> Bool {
        mutex.lock()
        accepting += 1
        mutex.unlock()
        if DetachedThread.start(stackSize: 1 << 20, { self.acceptLoop(listener) }) { return true }
        mutex.lock()
        accepting -= 1
        mutex.unlock()
        return false
    }

    /// Run with `accepting` counting this thread.
    private func acceptLoop(_ listener: Int32) {
        while !isStopping {
            let fd = accept(listener, nil, nil)
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if isStopping { break }
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
            if stopping {
                mutex.unlock()
                refuse(fd, KeychainError(.notAvailable, "the agent is stopping"))
                continue
            }
            if connections.count >= configuration.maxConnections {
                // The connection that has waited longest for a request makes room: its client
                // reconnects before its next request, as after the idle timeout. Only when
                // every connection is in the middle of a request is the new one refused, and
                // even then its agent-wide request (status, stop, lockAll) is answered.
                guard
                    let oldest = connections.compactMap({ c in c.value.map { (fd: c.key, since: $0) } })
                        .min(by: { $0.since < $1.since })
                else {
                    let extra = overflow < AgentServer.maxOverflow
                    if extra { overflow += 1 }
                    mutex.unlock()
                    if extra { serveOverflow(fd) } else { refuse(fd, busy) }
                    continue
                }
                connections[oldest.fd] = nil
                evict(oldest.fd)
            }
            connections[fd] = .some(.now())
            accepting -= 1
            let alone = accepting == 0
            mutex.unlock()
            if alone && !startAccepter(listener) {
                // Then nobody accepts until this connection ends: connections wait in turn.
                log("cannot start a thread; new connections wait until this one ends")
            }
            serve(fd)
            mutex.lock()
            if stopping || accepting >= AgentServer.spareAccepters {
                mutex.unlock()
                return
            }
            accepting += 1
            mutex.unlock()
        }
        mutex.lock()
        accepting -= 1
        mutex.unlock()
    }

    /// One error answer, then a lingering close on a thread of its own: what the peer had
    /// sent is read and dropped (for at most a second), so that the close does not reset the
    /// connection before the peer has read the answer. In the oldest version this agent speaks
    /// (2), which every client since reads: no request says which the client speaks
    /// (spec/AGENT.md §3). The oversized-request refusal below is sent the same way.
    private func refuse(_ fd: Int32, _ error: KeychainError) {
        spawn {
            try? AgentSocket.write(
                fd, AgentMessage.Response.error(error).encode(version: AgentMessage.versions.lowerBound),
                deadline: .now() + 1)
            AgentServer.finishSending(fd)
            close(fd)
        }
    }

    private var busy: KeychainError {
        KeychainError(
            .notAvailable,
            "the agent is busy (\(configuration.maxConnections) requests are in progress); try again, or set LATCHKEY_AGENT_SOCK=none to open the keychain file directly"
        )
    }

    /// Closes a connection that waits for a request, to make room for a new one. Only its
    /// receiving side is shut down, by the accepting thread: a request that had arrived whole
    /// is still read and answered; one that had not is never acted on, and its client's next
    /// write fails (EPIPE), so it knows that nothing was done and sends it again on a new
    /// connection. Its own thread then finds the end of the stream and closes it.
    private func evict(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_RD))
        log(
            "closed the connection idle longest to make room for a new one (\(configuration.maxConnections) connections are open)"
        )
    }

    /// A connection over the limit while every connection is in the middle of a request: its
    /// first request is read (within the frame timeout) and answered when it is agent-wide
    /// (status, stop, lockAll), which never waits for a keychain, so the agent can always be
    /// asked what it holds, locked and stopped; any other request is refused (errSecNotAvailable,
    /// nothing done). Then the connection is closed.
    private func serveOverflow(_ fd: Int32) {
        let started = DetachedThread.start(stackSize: 1 << 20) { [self] in
            defer {
                mutex.lock()
                overflow -= 1
                mutex.unlock()
                close(fd)
            }
            let timeout = configuration.frameTimeout
            guard
                var payload = try? AgentSocket.readFrame(
                    fd, limit: AgentSocket.maxRequestBytes, idleDeadline: .now() + timeout,
                    frameTimeout: timeout)
            else { return }
            defer { Crypto.cleanse(&payload) }
            let agentWide =
                payload.count == 2
                && [AgentMessage.Request.status, .stop, .lockAll].contains { $0.encode().last == payload.last }
            var bytes: [UInt8], after: (() -> Void)?
            if agentWide {
                (bytes, after) = answer(payload)
            } else {
                log("refused a request: \(configuration.maxConnections) connections are in the middle of a request")
                (bytes, after) = (
                    AgentMessage.Response.error(busy).encode(
                        version: AgentMessage.version(of: payload[...]) ?? AgentMessage.versions.lowerBound), nil
                )
            }
            try? AgentSocket.write(fd, bytes, deadline: .now() + timeout)
            AgentServer.finishSending(fd)
            after?()
        }
        if !started {
            mutex.lock()
            overflow -= 1
            mutex.unlock()
            refuse(fd, busy)
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
            connections[fd] = nil
            mutex.unlock()
            close(fd)
        }
        while !isStopping {
            mutex.lock()
            if connections[fd] != nil { connections[fd] = .some(.now()) }
            mutex.unlock()
            var payload: [UInt8]
            do {
                payload = try AgentSocket.readFrame(
                    fd, limit: AgentSocket.maxRequestBytes,
                    idleDeadline: .now() + configuration.connectionIdleTimeout,
                    frameTimeout: configuration.frameTimeout)
            } catch AgentSocket.FrameError.tooLarge(let n) {
                log("refused a request of \(n) bytes (limit \(AgentSocket.maxRequestBytes)); connection closed")
                let e = KeychainError(
                    .param,
                    "the request is \(n) bytes, more than the agent accepts (\(AgentSocket.maxRequestBytes >> 20) MiB); nothing was done"
                )
                try? AgentSocket.write(
                    fd, AgentMessage.Response.error(e).encode(version: AgentMessage.versions.lowerBound),
                    deadline: .now() + configuration.frameTimeout)
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
            mutex.lock()
            if connections[fd] != nil { connections[fd] = .some(nil) }
            mutex.unlock()
            var (bytes, after) = answer(payload)
            Crypto.cleanse(&payload)
            defer { Crypto.cleanse(&bytes) }
            do {
                try AgentSocket.write(fd, bytes, deadline: .now() + configuration.frameTimeout)
            } catch {
                log("a client did not take its answer; connection closed")
                after?()
                return
            }
            after?()
        }
    }

    /// The answer to a request of protocol 1 (a JSON object), in protocol 1's JSON: `"v":1`,
    /// because a client of protocol 1 checks `v` first and would show a message of its own
    /// instead of this one (spec/AGENT.md §3).
    static let protocol1Answer: [UInt8] = {
        let json =
            #"{"v":1,"ok":false,"status":-25291,"message":"this agent speaks agent protocols 2 and 3 and the program asking speaks protocol 1 (an older Latchkey): stop the agent ('latchkey agent --stop') and start it with the Latchkey of that program, or update the program"}"#
        var w = ByteWriter()
        w.writeInteger(UInt32(json.utf8.count), as: UInt32.self)
        w.writeBytes(json.utf8)
        return w.bytes
    }()

    /// The answer frame to one request frame's payload, and what to do once it is sent (stop).
    /// Never throws: every failure is an error answer. In the request's version when this
    /// agent speaks it (a client of version 2 reads no remedy), else in the newest.
    func answer(_ payload: [UInt8]) -> ([UInt8], (() -> Void)?) {
        if payload.first == AgentMessage.protocol1FirstByte {
            log("refused a request of agent protocol 1 (an older Latchkey)")
            return (AgentServer.protocol1Answer, nil)
        }
        var (response, after) = handle(payload[...])
        defer { response.cleanse() }
        return (response.encode(version: AgentMessage.version(of: payload[...]) ?? AgentMessage.version), after)
    }

    /// Decodes and runs one request (its secrets are zeroed after). Never throws: every
    /// failure is an error answer.
    /// - Returns: the answer and what to do once it is sent (stop).
    func handle(_ payload: ArraySlice<UInt8>) -> (AgentMessage.Response, (() -> Void)?) {
        var request: AgentMessage.Request
        do {
            request = try AgentMessage.Request.decode(payload)
        } catch let e as AgentMessage.DecodeError {
            log("refused a request: \(e)")
            return (.error(AgentServer.refusal(e)), nil)
        } catch {
            return (.error(KeychainError(.internal, "the agent failed", underlying: "\(error)")), nil)
        }
        defer { request.cleanse() }
        do {
            switch request {
            case .status:
                return (.agentStatus(status()), nil)
            case .stop:
                return (.ok, { [self] in stop() })
            case .lockAll:
                // A keychain in use is locked as its request ends, before any other runs.
                for h in heldKeychains() { h.lockNowOrLater() }
                return (.ok, nil)
            default:
                return (try perform(request), nil)
            }
        } catch let e as KeychainError {
            return (.error(e), nil)
        } catch {
            return (.error(KeychainError(.internal, "the agent failed", underlying: "\(error)")), nil)
        }
    }

    /// The error answer to a request frame that cannot be used (errSecParam, spec/AGENT.md §5.3).
    static func refusal(_ e: AgentMessage.DecodeError) -> KeychainError {
        switch e {
        case .version(let v):
            return KeychainError(
                .param,
                "the request is of agent protocol version \(v), and this agent speaks versions \(AgentMessage.versions.lowerBound) to \(AgentMessage.versions.upperBound); use the agent of the program's Latchkey (stop this one with 'latchkey agent --stop'); nothing was done"
            )
        case .unknownType(let t):
            return KeychainError(
                .param,
                "unknown agent request type 0x\(hexString([t])) for protocol \(AgentMessage.version); use the agent of the program's Latchkey (stop this one with 'latchkey agent --stop'); nothing was done"
            )
        case .protocol1, .length, .malformed:
            return KeychainError(.param, "malformed agent request: \(e); nothing was done")
        }
    }

    private func heldKeychains() -> [Held] {
        mutex.lock(); defer { mutex.unlock() }
        return Array(held.values)
    }

    /// Never waits for a request: a keychain in use is reported as its last request left it,
    /// one still being opened not at all. A keychain no request uses is first checked against
    /// its file (one fstat when nothing changed): after a `passwd` made without the agent, its
    /// keys no longer open anything, and it is reported locked, not unlocked.
    func status() -> AgentStatus {
        let held = heldKeychains().sorted { $0.path < $1.path }
        for h in held where h.refreshIfIdle() {
            log(
                "\(h.path): its passcode was changed by another process; the keys held here are dropped ('latchkey unlock' gives the new passcode)"
            )
        }
        let keychains = held.compactMap { $0.currentState() }
        return AgentStatus(
            pid: getpid(), socket: configuration.socketPath, protocolVersion: Int(AgentMessage.version),
            idleTimeout: configuration.idleTimeout, dumpable: AgentServer.isDumpable, keychains: keychains)
    }

    /// The held keychain for a request, opened on first use.
    private func holder(_ request: AgentMessage.Request, _ target: AgentMessage.Target) throws -> Held {
        let k = target.keychain, d = target.device
        guard k.hasPrefix("/"), d.hasPrefix("/"), !k.utf8.contains(0), !d.utf8.contains(0) else {
            throw KeychainError(.param, "the agent request '\(request.name)' needs absolute keychain and device paths")
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
        mutex.lock()
        if stopping { mutex.unlock(); throw KeychainError(.notAvailable, "the agent is stopping") }
        if let h = held[key] {
            if aliases.count < 4 * configuration.maxKeychains { aliases[given] = h }
            mutex.unlock()
            return h
        }
        guard held.count < configuration.maxKeychains else {
            mutex.unlock()
            throw KeychainError(
                .notAvailable,
                "the agent holds \(configuration.maxKeychains) keychains already; stop it to start afresh")
        }
        // Held while being opened (busy: requests for it wait), and opened outside `mutex`:
        // opening reads the whole file, and a file that never answers (a FIFO planted at the
        // path) delays only the requests for this keychain.
        let h = Held(path: path, device: device)
        held[key] = h
        aliases[given] = h
        mutex.unlock()
        do {
            let kc = try configuration.openKeychain(path, device)
            if kc.recoveredTailBytes > 0 {
                log("\(path): removed \(kc.recoveredTailBytes) bytes of an incomplete write")
            }
            h.opened(.success(kc))
            log("opened \(path)")
            scheduleSync(h)
        } catch {
            mutex.lock()
            if held[key] === h { held[key] = nil }
            aliases = aliases.filter { $0.value !== h }
            mutex.unlock()
            h.opened(.failure(error))
        }
        return h
    }

    /// Runs a keychain request on its keychain, with the request's caller. When the file was
    /// replaced by a different keychain (deleted and created again), the new one is opened
    /// (locked) in place of the old and the request runs once more.
    private func perform(_ request: AgentMessage.Request) throws -> AgentMessage.Response {
        guard let target = request.target else {
            throw KeychainError(.internal, "'\(request.name)' is not a keychain request")
        }
        do {
            return try performOnce(request, target)
        } catch let e as KeychainError where e.status == .decode {
            guard try replaceIfDifferentFile(request, target) else { throw e }
            return try performOnce(request, target)
        }
    }

    /// - Returns: whether the file now holds another keychain (then it is held instead).
    private func replaceIfDifferentFile(_ request: AgentMessage.Request, _ target: AgentMessage.Target) throws -> Bool {
        let h = try holder(request, target)
        guard let fresh = try? configuration.openKeychain(h.path, h.device),
            let current = try? h.acquire()
        else { return false }
        let same = fresh.store.fileUUID == current.store.fileUUID
        h.release()
        guard !same else { return false }
        mutex.lock()
        let key = h.path + "\u{0}" + h.device
        if held[key] === h {
            held[key] = Held(path: h.path, device: h.device, keychain: fresh)
            aliases = aliases.filter { $0.value !== h }
        }
        mutex.unlock()
        h.lockNowOrLater()
        log("\(h.path) was replaced by another keychain; holding the new one (locked)")
        return true
    }

    /// Runs the request with a `CallContext` of its own: its caller, and for a read its way of
    /// asking for user presence (the passcode it carries, or recording that it was asked).
    private func performOnce(_ request: AgentMessage.Request, _ target: AgentMessage.Target) throws
        -> AgentMessage.Response
    {
        let h = try holder(request, target)
        let kc = try h.acquire()
        defer { h.release() }
        if case .lock = request {} else { h.state.withLock { h.lastUse = .now() } }
        let asked = AuthenticationRequest()
        var context = CallContext(caller: target.caller)
        switch request {
        case .find(_, _, let read), .identities(_, _, let read):
            switch read.authentication {
            case .none: break
            case .interactive:
                context.authenticate = { prompt in
                    asked.record(prompt); return nil
                }
            case .passcode(let p): context.authenticate = { _ in p }
            }
        default:
            break
        }
        do {
            let response = try run(request, h, kc, context)
            switch request {
            case .unlock, .add, .update, .delete, .restoreVersion, .addIdentity, .updateIdentities, .deleteIdentities:
                scheduleSync(h)
            default: break
            }
            return response
        } catch let e as KeychainError where e.status == .userCanceled && asked.wasAsked {
            return .needsAuthentication(prompt: asked.prompt)
        }
    }

    /// Call with `h` acquired (its request running).
    private func run(_ request: AgentMessage.Request, _ h: Held, _ kc: LocalBackend, _ context: CallContext) throws
        -> AgentMessage.Response
    {
        func state() -> AgentKeychainState {
            Held.state(h.path, h.device, kc, idle: h.state.withLock { h.idleSeconds })
        }
        switch request {
        case .open:
            return .state(state())
        case .unlock(_, let passcode):
            try kc.unlock(passcode: passcode)
            log("unlocked \(h.path)")
            return .state(state())
        case .lock:
            kc.lock()
            log("locked \(h.path)")
            return .state(state())
        case .changePasscode(_, let old, let new, let logN):
            return .count(try kc.changePasscode(old: old, new: new, kdfLogN: logN))
        case .removePasscode(_, let old):
            return .count(try kc.changePasscode(old: old, new: nil, kdfLogN: KDFParameters.defaultLogN))
        case .compact:
            let (before, after) = try kc.compact(dropHistory: false)
            return .compacted(before: before, after: after)
        case .dropHistory:
            let (before, after) = try kc.compact(dropHistory: true)
            log("compacted \(h.path) without its history")
            return .compacted(before: before, after: after)
        case .info:
            return .info(try kc.info())
        case .verify:
            return .verifyReport(kc.verify())
        case .add(_, let items):
            return .added(try kc.add(items, context).map(AgentMessage.Reference.init))
        case .find(_, let q, let read):
            return .items(
                try kc.find(q, limit: read.limit, includeData: read.includeData, prompt: read.prompt, context))
        case .update(_, let q, let attributes, let data, let protection):
            return .count(try kc.update(q, attributes: attributes, data: data, protection: protection, context))
        case .delete(_, let q):
            return .count(try kc.delete(q, context))
        case .history(_, let q):
            // LocalBackend applies the caller's access groups and leaves out every version's data.
            return .history(try kc.history(q, context))
        case .restoreVersion(_, let uuid, let sequence):
            let (item, asNew) = try kc.restoreVersion(uuid: uuid, sequence: sequence, context)
            return .restored(item, asNew: asNew)
        case .addIdentity(_, let certificate, let privateKey, let attributes, let protection, let presence):
            let i = try kc.addIdentity(
                certificate: certificate, privateKey: privateKey, attributes: attributes,
                protection: protection, requiresUserPresence: presence, context)
            return .identityAdded(
                certificate: AgentMessage.Reference(i.certificate), privateKey: AgentMessage.Reference(i.privateKey))
        case .identities(_, let q, let read):
            return .identities(
                try kc.identities(q, limit: read.limit, includeData: read.includeData, prompt: read.prompt, context))
        case .updateIdentities(_, let q, let attributes, let protection):
            return .count(try kc.updateIdentities(q, attributes: attributes, protection: protection, context))
        case .deleteIdentities(_, let q):
            return .count(try kc.deleteIdentities(q, context))
        case .status, .stop, .lockAll:
            throw KeychainError(.internal, "'\(request.name)' is not a keychain request")
        }
    }

    /// The held keychain syncs soon, if it is in a sync circle and the agent syncs.
    private func scheduleSync(_ h: Held) {
        mutex.lock()
        let s = syncer
        mutex.unlock()
        s?.schedule(h, within: configuration.syncDelay)
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
                // Under the keychain's state lock, and only when no request uses it: a request
                // blocked in I/O never delays the other keychains' idle locks.
                h.state.lock()
                if !h.busy, let kc = h.keychain, h.idleSeconds >= timeout, kc.hasPasscode,
                    [ProtectionClass.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly]
                        .contains(where: kc.isAvailable)
                {
                    kc.lock()
                    h.snapshot = Held.state(h.path, h.device, kc, idle: h.idleSeconds)
                    log("locked \(h.path) after \(Int(timeout)) s without use")
                }
                h.state.unlock()
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

extension Condition {
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock(); defer { unlock() }
        return try body()
    }
}
