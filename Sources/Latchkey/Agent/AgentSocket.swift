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
#elseif canImport(Darwin)
    import Darwin
#endif

/// The agent's Unix socket: where it is, the checks on its directory and file, framing with
/// deadlines, and the peer's credentials (spec/AGENT.md §2).
public enum AgentSocket {
    /// The largest request the agent reads: longer frames are refused before any allocation.
    public static let maxRequestBytes = 64 << 20
    /// The largest answer a client accepts.
    public static let maxResponseBytes = 1 << 30

    /// `LATCHKEY_AGENT_SOCK`, else `$XDG_RUNTIME_DIR/latchkey/agent.sock`, else
    /// `/tmp/latchkey-<uid>/agent.sock` (XDG_RUNTIME_DIR must be absolute to count).
    /// LATCHKEY_AGENT_SOCK=none means the default location here (see `isDisabled`).
    public static func defaultPath(environment env: [String: String]) -> String {
        defaultPath { env[$0] }
    }

    /// `defaultPath(environment:)` of this process's environment.
    public static func defaultPath() -> String {
        defaultPath(lookup: variable)
    }

    /// LATCHKEY_AGENT_SOCK names the socket: the user asked for that agent (a client that cannot
    /// use it says so; the default location is given up silently).
    public static func isExplicit(environment env: [String: String]) -> Bool {
        isExplicit { env[$0] }
    }

    /// `isExplicit(environment:)` of this process's environment.
    public static func isExplicit() -> Bool {
        isExplicit(lookup: variable)
    }

    /// LATCHKEY_AGENT_SOCK=none: clients do not look for an agent (they open files themselves).
    public static func isDisabled(environment env: [String: String]) -> Bool {
        env["LATCHKEY_AGENT_SOCK"] == "none"
    }

    /// `isDisabled(environment:)` of this process's environment.
    public static func isDisabled() -> Bool {
        variable("LATCHKEY_AGENT_SOCK") == "none"
    }

    /// One variable of this process's environment. getenv, not `ProcessInfo`: its
    /// `environment` copies every variable into a dictionary, which costs a command that only
    /// talks to the agent more than the request itself.
    static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    private static func defaultPath(lookup: (String) -> String?) -> String {
        if let p = lookup("LATCHKEY_AGENT_SOCK"), !p.isEmpty, p != "none" { return absolute(p) }
        if let run = lookup("XDG_RUNTIME_DIR"), run.hasPrefix("/") { return run + "/latchkey/agent.sock" }
        return "/tmp/latchkey-\(geteuid())/agent.sock"
    }

    private static func isExplicit(lookup: (String) -> String?) -> Bool {
        guard let p = lookup("LATCHKEY_AGENT_SOCK") else { return false }
        return !p.isEmpty && p != "none"
    }

    /// `path` made absolute against the current directory, with `.`/`..` and symlinks of its
    /// existing part resolved (so every client names a keychain the same way).
    public static func absolute(_ path: String) -> String {
        var p = path
        if !p.hasPrefix("/") { p = FileManager.default.currentDirectoryPath + "/" + p }
        if let r = realpath(p, nil) {
            defer { free(r) }
            return String(cString: r)
        }
        // Not there yet: resolve the directory, keep the name.
        let url = URL(fileURLWithPath: p).standardizedFileURL
        let dir = url.deletingLastPathComponent().path
        if let r = realpath(dir, nil) {
            defer { free(r) }
            let d = String(cString: r)
            return (d == "/" ? "" : d) + "/" + url.lastPathComponent
        }
        return url.path
    }

    package static func fail(_ message: String, errno code: Int32? = nil) -> KeychainError {
        KeychainError(.io, message, underlying: code.map { String(cString: strerror($0)) })
    }

    // MARK: Directory and file checks

    /// The directory part of a path, as NSString's `deletingLastPathComponent` gives it
    /// ("/a/b/s" → "/a/b", "/a/b/" → "/a", "/s" → "/", "s" → "").
    package static func directory(of path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        var head = p[..<slash]
        while head.hasSuffix("/") { head = head.dropLast() }
        return head.isEmpty ? "/" : String(head)
    }

    /// Makes sure the socket's directory is fit for it, creating it (0700) when absent.
    /// The default directory (…/latchkey) must be a directory (not a symlink) owned by this
    /// user with no group or world permissions; a directory named by LATCHKEY_AGENT_SOCK must
    /// be owned by this user or root and not writable by others unless sticky (like /tmp).
    package static func prepareDirectory(for socketPath: String, strict: Bool) throws {
        let dir = directory(of: socketPath)
        var st = stat()
        if lstat(dir, &st) != 0 {
            guard errno == ENOENT else { throw fail("cannot check the agent's directory \(dir)", errno: errno) }
            if mkdir(dir, 0o700) != 0 && errno != EEXIST {
                throw fail("cannot create the agent's directory \(dir); check its parent", errno: errno)
            }
            guard lstat(dir, &st) == 0 else { throw fail("cannot check the agent's directory \(dir)", errno: errno) }
        }
        try checkDirectory(dir, st, strict: strict)
    }

    /// A client's check of the socket's directory, before it looks for a socket there: the
    /// agent's rules (`prepareDirectory`), so that a directory the agent would refuse (made
    /// by another user first, a symlink) is never used to reach one.
    /// - Returns: false when the directory does not exist (then no agent runs there).
    static func checkDirectoryForClient(of socketPath: String, strict: Bool) throws -> Bool {
        let dir = directory(of: socketPath)
        var st = stat()
        guard lstat(dir, &st) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return false }
            throw fail("cannot check the agent's directory \(dir)", errno: errno)
        }
        try checkDirectory(dir, st, strict: strict)
        return true
    }

    /// How to get out of a default directory that cannot be used.
    static func elsewhere(_ dir: String) -> String {
        "set XDG_RUNTIME_DIR to a directory of your own (such as /run/user/\(geteuid())), or LATCHKEY_AGENT_SOCK to a socket path in one"
    }

    static func checkDirectory(_ dir: String, _ st: stat, strict: Bool) throws {
        let me = geteuid()
        guard st.st_mode & S_IFMT == S_IFDIR else {
            let what = st.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : "not a directory"
            guard strict else {
                throw KeychainError(
                    .io,
                    "the agent's directory \(dir) is \(what) (not a directory); refusing it. Choose a directory of your own for LATCHKEY_AGENT_SOCK"
                )
            }
            let owner =
                st.st_uid == me
                ? "remove it ('rm \(dir)'), or "
                : "it belongs to uid \(st.st_uid), not to you (uid \(me)), so have root remove it, or "
            throw KeychainError(
                .io, "the agent's directory \(dir) is \(what) (not a directory); refusing it: \(owner)\(elsewhere(dir))"
            )
        }
        if strict {
            guard st.st_uid == me else {
                throw KeychainError(
                    .io,
                    "the agent's directory \(dir) belongs to uid \(st.st_uid), not to you (uid \(me)): another user made it first, and it cannot be used. Have root remove it, or \(elsewhere(dir))"
                )
            }
            guard st.st_mode & 0o077 == 0 else {
                throw KeychainError(
                    .io,
                    "the agent's directory \(dir) has group or world permissions (mode \(String(st.st_mode & 0o777, radix: 8))); run 'chmod 700 \(dir)'"
                )
            }
        } else {
            guard st.st_uid == me || st.st_uid == 0 else {
                throw KeychainError(
                    .io,
                    "the agent's directory \(dir) belongs to uid \(st.st_uid); refusing it. Choose a directory of your own for LATCHKEY_AGENT_SOCK"
                )
            }
            guard st.st_mode & 0o022 == 0 || st.st_mode & S_ISVTX != 0 else {
                throw KeychainError(
                    .io,
                    "the agent's directory \(dir) is writable by others and not sticky; refusing it. Choose a directory of your own for LATCHKEY_AGENT_SOCK"
                )
            }
        }
    }

    /// Checks that `path` (when it exists) is a socket of this user.
    /// - Returns: false when nothing is there.
    package static func checkSocketFile(_ path: String) throws -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return false }
            throw fail("cannot check the agent socket \(path)", errno: errno)
        }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw KeychainError(
                .io, "\(path) is not a socket; refusing to use or replace it. Remove it or set LATCHKEY_AGENT_SOCK")
        }
        guard st.st_uid == geteuid() else {
            throw KeychainError(
                .io, "the agent socket \(path) belongs to uid \(st.st_uid), not to you (uid \(geteuid())); refusing it")
        }
        return true
    }

    // MARK: Sockets

    static func address(_ path: String) throws -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else {
            throw KeychainError(
                .param,
                "the agent socket path \(path) is longer than \(capacity - 1) bytes; choose a shorter LATCHKEY_AGENT_SOCK"
            )
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return addr
    }

    static func newSocket() throws -> Int32 {
        #if canImport(Glibc)
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
            let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw fail("cannot create a Unix socket", errno: errno) }
        return fd
    }

    package enum ConnectResult {
        case connected(Int32)
        /// Nobody answers: no file, or a file nobody listens on (stale).
        case nobody
    }

    /// Connects to `path`. - Throws: for any failure other than "nobody answers".
    package static func connect(_ path: String) throws -> ConnectResult {
        var addr = try address(path)
        let fd = try newSocket()
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if r == 0 { return .connected(fd) }
        let e = errno
        close(fd)
        if e == ENOENT || e == ECONNREFUSED || e == ENOTDIR { return .nobody }
        throw fail("cannot connect to the agent socket \(path)", errno: e)
    }

    /// Binds and listens at `path` with mode 0600.
    package static func listen(_ path: String) throws -> Int32 {
        var addr = try address(path)
        let fd = try newSocket()
        let old = umask(0o177)
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        let e = errno
        umask(old)
        guard r == 0 else {
            close(fd)
            throw fail("cannot bind the agent socket \(path)", errno: e)
        }
        chmod(path, 0o600)
        guard Glibc.listen(fd, 64) == 0 else {
            let e = errno
            close(fd)
            unlink(path)
            throw fail("cannot listen on the agent socket \(path)", errno: e)
        }
        return fd
    }

    /// The uid and pid of the process at the other end of a connected Unix socket.
    public static func peerCredentials(_ fd: Int32) -> (uid: uid_t, pid: pid_t)? {
        #if os(Linux)
            // struct ucred { pid_t pid; uid_t uid; gid_t gid; }
            var cred: (Int32, UInt32, UInt32) = (0, 0, 0)
            var len = socklen_t(MemoryLayout.size(ofValue: cred))
            guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 else { return nil }
            return (cred.1, cred.0)
        #else
            var uid = uid_t(0), gid = gid_t(0)
            guard getpeereid(fd, &uid, &gid) == 0 else { return nil }
            return (uid, 0)
        #endif
    }

    /// The agent's rule: only its own user is served (root gets no exception).
    public static func peerAllowed(peerUID: uid_t, agentUID: uid_t = geteuid()) -> Bool {
        peerUID == agentUID
    }

    // MARK: Frames

    package enum FrameError: Error {
        /// The other end closed the connection before the first byte of a frame.
        case closed
        /// The deadline passed.
        case timedOut
        /// Closed in the middle of a frame.
        case truncated
        case tooLarge(Int)
        case io(Int32)
    }

    /// Waits until `fd` is readable (or writable) or the deadline passes. nil deadline: forever.
    package static func wait(_ fd: Int32, for events: Int16, until deadline: DispatchTime?) throws {
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let now = DispatchTime.now().uptimeNanoseconds
                guard deadline.uptimeNanoseconds > now else { throw FrameError.timedOut }
                timeout = Int32(min((deadline.uptimeNanoseconds - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let r = poll(&p, 1, timeout)
            if r > 0 { return }
            if r == 0 { throw FrameError.timedOut }
            if errno != EINTR { throw FrameError.io(errno) }
        }
    }

    /// Reads exactly `count` bytes into `buffer` from `offset` on (the caller made it large
    /// enough), straight from the socket. `firstDeadline` applies until the first byte arrives,
    /// `deadline` to the whole read after it.
    package static func read(
        _ fd: Int32, into buffer: inout [UInt8], at offset: Int, count: Int,
        firstDeadline: DispatchTime?, deadline: DispatchTime?
    ) throws {
        var got = 0
        while got < count {
            try wait(fd, for: Int16(POLLIN), until: got == 0 ? firstDeadline : deadline)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset + got, count - got, 0) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw FrameError.io(errno)
            }
            if n == 0 { throw got == 0 ? FrameError.closed : FrameError.truncated }
            got += n
        }
    }

    /// Reads one frame: a u32 big-endian length, then that many payload bytes (returned).
    ///
    /// The payload buffer grows as bytes arrive (up to 1 MiB at first, then doubling), so a
    /// peer cannot make the reader allocate what it does not send; each buffer that is
    /// outgrown is zeroed before it is freed, so no copy of a secret is left behind.
    package static func readFrame(_ fd: Int32, limit: Int, idleDeadline: DispatchTime?, frameTimeout: Double?) throws
        -> [UInt8]
    {
        var header = [UInt8](repeating: 0, count: 4)
        // The frame's deadline starts with its first byte.
        var deadline: DispatchTime? = nil
        try wait(fd, for: Int16(POLLIN), until: idleDeadline)
        if let frameTimeout { deadline = .now() + frameTimeout }
        try read(fd, into: &header, at: 0, count: 4, firstDeadline: deadline, deadline: deadline)
        let length = Int(ByteReader(header).getInteger(at: 0, as: UInt32.self) ?? 0)  // 4 bytes were read
        guard length <= limit else { throw FrameError.tooLarge(length) }
        var payload = [UInt8](repeating: 0, count: min(length, 1 << 20))
        var got = 0
        do {
            while got < length {
                if got == payload.count {
                    var bigger = [UInt8](repeating: 0, count: min(length, payload.count * 2))
                    bigger.withUnsafeMutableBytes { to in payload.withUnsafeBytes { to.copyMemory(from: $0) } }
                    Crypto.cleanse(&payload)
                    payload = bigger
                }
                let chunk = payload.count - got
                try read(fd, into: &payload, at: got, count: chunk, firstDeadline: deadline, deadline: deadline)
                got += chunk
            }
        } catch FrameError.closed {
            Crypto.cleanse(&payload)
            throw FrameError.truncated
        } catch {
            Crypto.cleanse(&payload)
            throw error
        }
        return payload
    }

    /// Writes one frame of `payload` (the length prefix is added), all of it, before the
    /// deadline. The copy it makes is zeroed.
    package static func writeFrame(_ fd: Int32, _ payload: [UInt8], deadline: DispatchTime?) throws {
        var w = ByteWriter(capacity: 4 + payload.count)
        w.writeInteger(UInt32(payload.count), as: UInt32.self)
        w.writeBytes(payload)
        var frame = w.bytes
        defer { Crypto.cleanse(&frame) }
        try write(fd, frame, deadline: deadline)
    }

    /// Writes `bytes` (a whole frame, as `AgentMessage` encodes it), all of it, before the
    /// deadline.
    package static func write(_ fd: Int32, _ bytes: [UInt8], deadline: DispatchTime?) throws {
        var sent = 0
        while sent < bytes.count {
            try wait(fd, for: Int16(POLLOUT), until: deadline)
            let r = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if r < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw FrameError.io(errno)
            }
            sent += r
        }
    }
}
