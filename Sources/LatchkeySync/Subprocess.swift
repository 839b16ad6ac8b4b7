#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// Runs a program with arguments (no shell), stdin from /dev/null, and collects its stdout
/// and stderr through pipes read together (poll), so a chatty program never blocks on a full
/// pipe. For git (the sync transport): Foundation's Process is not linked by the CLI.
enum Subprocess {
    struct Result {
        var status: Int32
        var stdout: [UInt8]
        var stderr: [UInt8]
        var exitedNormally: Bool
    }

    static func run(_ path: String, _ arguments: [String], environment: [String: String]) throws -> Result {
        var out: [Int32] = [-1, -1]
        var err: [Int32] = [-1, -1]
        guard pipe(&out) == 0 else { throw spawnError(path, errno) }
        guard pipe(&err) == 0 else {
            close(out[0])
            close(out[1])
            throw spawnError(path, errno)
        }
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in envp { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, &argv, &envp)
        close(out[1])
        close(err[1])
        defer {
            close(out[0])
            close(err[0])
        }
        guard spawned == 0 else { throw spawnError(path, spawned) }
        var result = Result(status: 0, stdout: [], stderr: [], exitedNormally: false)
        var fds = [
            pollfd(fd: out[0], events: Int16(POLLIN), revents: 0), pollfd(fd: err[0], events: Int16(POLLIN), revents: 0)
        ]
        var open = 2
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while open > 0 {
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    if i == 0 { result.stdout += buffer[0..<n] } else { result.stderr += buffer[0..<n] }
                } else if n == 0 || errno != EINTR {
                    fds[i].fd = -1
                    open -= 1
                }
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        result.exitedNormally = status & 0x7f == 0
        result.status = result.exitedNormally ? (status >> 8) & 0xff : -(status & 0x7f)
        return result
    }

    static func spawnError(_ path: String, _ code: Int32) -> KeychainError {
        KeychainError(.io, "cannot run \(path): \(String(cString: strerror(code)))")
    }

    /// The environment of this process.
    static func currentEnvironment() -> [String: String] {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") { out[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
            p += 1
        }
        return out
    }
}

/// Files in a directory tree, written and listed with POSIX calls only.
enum TreeFiles {
    /// Creates the directories of `path` below `root` (each 0700), refusing a symlink on the way.
    static func makeParents(root: String, relative: String) throws {
        var dir = root
        for part in relative.split(separator: "/").dropLast() {
            dir += "/" + part
            var st = stat()
            if lstat(dir, &st) == 0 {
                guard (st.st_mode & S_IFMT) == S_IFDIR else {
                    throw KeychainError(.io, "\(dir) is not a directory; the sync clone was tampered with")
                }
                continue
            }
            guard mkdir(dir, 0o700) == 0 || errno == EEXIST else {
                throw KeychainError(.io, "cannot create \(dir): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Writes `bytes` to `root/relative`, replacing a regular file, never following a symlink.
    static func write(root: String, relative: String, _ bytes: [UInt8]) throws {
        try makeParents(root: root, relative: relative)
        let path = root + "/" + relative
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeychainError(.io, "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try bytes.withUnsafeBytes { b in
            var done = 0
            while done < b.count {
                let n = Glibc.write(fd, b.baseAddress! + done, b.count - done)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else {
                    throw KeychainError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
                }
                done += n
            }
        }
    }

    /// The names in a directory (not through a symlink), without . and ..
    static func list(_ path: String) -> [String] {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, let d = opendir(path) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafePointer(to: e.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { out.append(name) }
        }
        return out
    }

    /// Removes a directory tree (the sync clone), not following symlinks.
    static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            for name in list(path) { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    /// `n` in decimal, zero-padded to `width` digits.
    static func padded(_ n: UInt64, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
