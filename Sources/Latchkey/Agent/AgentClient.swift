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

/// A connection to `latchkey agent` (spec/AGENT.md). One per socket path and process, shared
/// by every keychain opened through it; requests are sent one at a time.
public final class AgentClient: @unchecked Sendable {
    public let socketPath: String
    private let mutex = Lock()
    private var fd: Int32
    /// Set when the agent was found gone (stopped) while sending a request.
    var stopped: Bool {
        mutex.lock(); defer { mutex.unlock() }
        return stoppedFlag
    }
    private var stoppedFlag = false
    /// The protocol version requests go out in on this connection: the newest, until an older
    /// agent refuses it (spec/AGENT.md §3); set again for each new connection.
    private var version = AgentMessage.version

    /// How long a client waits for an answer (the agent may be waiting for another process's
    /// write lock, or running the passcode KDF).
    static let answerTimeout: Double = 300

    private init(socketPath: String, fd: Int32) {
        self.socketPath = socketPath
        self.fd = fd
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The socket that `connect()` without a path uses inside `$socketOverride.withValue(…)`,
    /// instead of the environment's: lets one task (a test) use its own agent while others in
    /// the process keep theirs.
    @TaskLocal public static var socketOverride: String?

    private static let cacheLock = Lock()
    nonisolated(unsafe) private static var cache: [String: AgentClient] = [:]

    /// The agent at `socketPath` (default: LATCHKEY_AGENT_SOCK, else the per-user runtime
    /// directory), or nil when nobody answers there (no socket, or a stale one).
    /// - Throws: errSecIO when the socket exists but is not this user's (its file, or the
    ///   process behind it, checked with SO_PEERCRED), or cannot be reached for another reason.
    /// With no `socketPath` and LATCHKEY_AGENT_SOCK=none: nil.
    /// The socket's directory is checked first, as the agent checks it (spec/AGENT.md §2): a
    /// directory that another user made first, or a symlink, is refused (errSecIO, saying what
    /// to fix) and never used to reach an agent.
    public static func connect(socketPath: String? = nil) throws -> AgentClient? {
        let given = socketPath ?? socketOverride
        if given == nil && AgentSocket.isDisabled() { return nil }
        let path = given.map(AgentSocket.absolute) ?? AgentSocket.defaultPath()
        cacheLock.lock(); defer { cacheLock.unlock() }
        if let c = cache[path], c.isAlive() { return c }
        let strict = given == nil && !AgentSocket.isExplicit()
        guard try AgentSocket.checkDirectoryForClient(of: path, strict: strict), let fd = try openConnection(path)
        else {
            cache[path] = nil
            return nil
        }
        let c = AgentClient(socketPath: path, fd: fd)
        cache[path] = c
        return c
    }

    /// Forgets the cached connections (tests: after an agent was stopped and another started).
    public static func closeCachedConnections() {
        cacheLock.lock(); defer { cacheLock.unlock() }
        cache = [:]
    }

    static func openConnection(_ path: String) throws -> Int32? {
        guard try AgentSocket.checkSocketFile(path) else { return nil }
        switch try AgentSocket.connect(path) {
        case .nobody: return nil
        case .connected(let fd):
            guard let peer = AgentSocket.peerCredentials(fd), AgentSocket.peerAllowed(peerUID: peer.uid) else {
                close(fd)
                throw KeychainError(
                    .io,
                    "the process answering at the agent socket \(path) does not run as you (uid \(geteuid())); refusing to talk to it"
                )
            }
            return fd
        }
    }

    private func isAlive() -> Bool {
        mutex.lock(); defer { mutex.unlock() }
        return fd >= 0 && !peerClosed()
    }

    /// Between requests nothing may be readable: readable means the agent closed the connection.
    private func peerClosed() -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) != 0
    }

    /// Sends one request and returns the answer; an error answer is thrown. Reconnects once
    /// when the agent had closed the connection before the request was sent, or closed it
    /// while it was being sent (an agent at its connection limit closes the connection idle
    /// longest): a request not sent whole was not acted on. The encoded request and the
    /// answer's bytes are zeroed once used.
    ///
    /// An agent of an older protocol version refuses the request's version with an
    /// errSecParam answer in its own version, having done nothing: the request is sent again
    /// in that version, which the connection then keeps (spec/AGENT.md §3).
    func call(_ request: AgentMessage.Request) throws -> AgentMessage.Response {
        var frame = request.encode()
        defer { Crypto.cleanse(&frame) }
        guard frame.count - AgentMessage.lengthBytes <= AgentSocket.maxRequestBytes else {
            throw KeychainError(
                .param,
                "the request is \(frame.count - AgentMessage.lengthBytes) bytes, more than the agent accepts (\(AgentSocket.maxRequestBytes >> 20) MiB); send fewer items at a time, or stop the agent to work on the file directly"
            )
        }
        mutex.lock(); defer { mutex.unlock() }
        if fd >= 0 && peerClosed() {
            close(fd)
            fd = -1
        }
        var (response, answerVersion): (AgentMessage.Response, UInt8)
        do {
            try connectIfNeeded()
            // The version byte: a request's fields are the same in every version.
            frame[AgentMessage.lengthBytes] = version
            (response, answerVersion) = try exchange(frame)
        } catch let notSent as NotSent {
            _ = notSent
            try connectIfNeeded()
            frame[AgentMessage.lengthBytes] = version
            do {
                (response, answerVersion) = try exchange(frame)
            } catch let again as NotSent {
                throw again.error
            }
        }
        if case .error(let e) = response, e.status == .param, answerVersion < version {
            version = answerVersion
            frame[AgentMessage.lengthBytes] = version
            do {
                response = try exchange(frame).response
            } catch let notSent as NotSent {
                throw notSent.error
            }
        }
        if case .error(let e) = response { throw e }
        return response
    }

    /// Call with `mutex` held.
    private func connectIfNeeded() throws {
        guard fd < 0 else { return }
        guard let newFD = try AgentClient.openConnection(socketPath) else {
            stoppedFlag = true
            throw KeychainError(
                .notAvailable,
                "the agent at \(socketPath) stopped; run the command again to use the keychain file directly, or start the agent with 'latchkey agent --daemon'"
            )
        }
        fd = newFD
        version = AgentMessage.version
    }

    /// A request frame could not be sent whole: the agent acts only on whole frames, so
    /// nothing was done and it may be sent again on a new connection.
    struct NotSent: Error {
        var error: KeychainError
    }

    /// Writes one request frame and reads its answer, with the version the answer is in.
    /// Call with `mutex` held and the connection open.
    /// - Throws: `NotSent` when the frame could not be written whole.
    private func exchange(_ frame: [UInt8]) throws -> (response: AgentMessage.Response, version: UInt8) {
        do {
            try AgentSocket.write(fd, frame, deadline: .now() + AgentClient.answerTimeout)
        } catch {
            disconnect()
            let e = KeychainError(
                .io, "cannot send the request to the agent at \(socketPath); nothing was done", underlying: "\(error)")
            // Closed by the agent: worth a new connection; a stalled agent is not.
            if case AgentSocket.FrameError.io(let n) = error, n == EPIPE || n == ECONNRESET { throw NotSent(error: e) }
            throw e
        }
        var answer: [UInt8]
        do {
            answer = try AgentSocket.readFrame(
                fd, limit: AgentSocket.maxResponseBytes,
                idleDeadline: .now() + AgentClient.answerTimeout, frameTimeout: AgentClient.answerTimeout)
        } catch {
            disconnect()
            throw KeychainError(
                .io,
                "the agent at \(socketPath) did not answer (it may have stopped); the operation may or may not have been done",
                underlying: "\(error)")
        }
        defer { Crypto.cleanse(&answer) }
        let response: AgentMessage.Response
        do {
            response = try AgentMessage.Response.decode(answer[...])
        } catch AgentMessage.DecodeError.protocol1 {
            disconnect()
            throw AgentClient.speaksProtocol1(socketPath)
        } catch {
            disconnect()
            throw KeychainError(
                .decode,
                "the agent at \(socketPath) answered with a message this Latchkey cannot read; restart the agent with this Latchkey ('latchkey agent --stop', then 'latchkey agent --daemon')",
                underlying: "\(error)")
        }
        return (response, answer[0])
    }

    /// Call with `mutex` held.
    private func disconnect() {
        close(fd)
        fd = -1
    }

    static func speaksProtocol1(_ socketPath: String) -> KeychainError {
        KeychainError(
            .notAvailable,
            "the agent at \(socketPath) speaks agent protocol 1 (an older Latchkey); stop it ('latchkey agent --stop') and start 'latchkey agent --daemon' of this Latchkey"
        )
    }

    /// The error for an answer of another kind than the request's.
    static func unexpected(_ answer: AgentMessage.Response, to request: String) -> KeychainError {
        KeychainError(
            .decode,
            "the agent answered a '\(request)' request with an answer of another kind (type 0x\(hexString([answer.type]))); restart the agent with this Latchkey"
        )
    }

    // MARK: Agent-wide requests

    /// What the agent holds: every keychain it has open and which class keys are unlocked.
    public func status() throws -> AgentStatus {
        let r = try call(.status)
        guard case .agentStatus(let s) = r else { throw AgentClient.unexpected(r, to: "status") }
        return s
    }

    /// Asks the agent to exit: every key it holds is dropped (the "reboot"). An agent of
    /// protocol 1 (an older Latchkey) is asked in its own protocol, so that upgrading needs no
    /// other tool.
    public func stop() throws {
        do {
            _ = try call(.stop)
        } catch let e as KeychainError where e == AgentClient.speaksProtocol1(socketPath) {
            try stopProtocol1()
        }
    }

    /// `{"v":1,"op":"stop"}` in protocol 1's framing; its answer starts `{"v":1,"ok":true`.
    private func stopProtocol1() throws {
        mutex.lock(); defer { mutex.unlock() }
        guard let fd = try AgentClient.openConnection(socketPath) else { return }
        defer { close(fd) }
        do {
            try AgentSocket.writeFrame(
                fd, Array(#"{"v":1,"op":"stop"}"#.utf8), deadline: .now() + AgentClient.answerTimeout)
            let answer = try AgentSocket.readFrame(
                fd, limit: 1 << 16, idleDeadline: .now() + AgentClient.answerTimeout,
                frameTimeout: AgentClient.answerTimeout)
            guard String(decoding: answer.filter { $0 != UInt8(ascii: " ") }, as: UTF8.self).contains(#""ok":true"#)
            else {
                throw KeychainError(.io, "the protocol 1 agent at \(socketPath) refused to stop; end its process")
            }
        } catch let e as KeychainError {
            throw e
        } catch {
            throw KeychainError(
                .io, "cannot stop the protocol 1 agent at \(socketPath); end its process", underlying: "\(error)")
        }
    }

    /// Locks one keychain in the agent (ak, aku, akpu keys dropped; ck, cku kept), opening it
    /// there first if the agent did not hold it. - Throws: the errors of `Keychain.open`.
    public func lock(keychainPath: String, devicePath: String) throws {
        _ = try call(
            .lock(
                AgentMessage.Target(
                    keychain: AgentSocket.absolute(keychainPath),
                    device: AgentSocket.absolute(devicePath), caller: nil)))
    }

    /// Locks every keychain the agent holds (ak, aku, akpu keys dropped; ck, cku kept).
    public func lockAll() throws {
        _ = try call(.lockAll)
    }

    /// The keychain at `path` (with the device secret at `devicePath`) as the agent holds it;
    /// the agent opens it if it has not yet.
    /// - Throws: the errors of `Keychain.open`, from the agent.
    public func keychain(path: String, devicePath: String) throws -> Keychain {
        try keychain(path: path, devicePath: devicePath, asking: true)
    }

    /// `keychain(path:devicePath:)`; with `asking` false, nothing is sent until the keychain's
    /// first operation. That request opens the keychain in the agent just as `open` would, and
    /// fails with the errors `open` would have thrown, so a command that makes one request
    /// (the CLI's `find`) makes one round trip, not two. `hasPasscode` is asked when first read.
    package func keychain(path: String, devicePath: String, asking: Bool) throws -> Keychain {
        let backend = AgentBackend(
            client: self, path: AgentSocket.absolute(path), device: AgentSocket.absolute(devicePath))
        if asking {
            let state = try backend.open()
            backend.hasPasscode = state.hasPasscode
        }
        return Keychain(backend: backend)
    }
}
