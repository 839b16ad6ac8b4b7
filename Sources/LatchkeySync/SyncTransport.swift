#if canImport(Glibc)
    import Glibc
#endif
import Latchkey

/// Where the circle's files are shared (spec/SYNC.md §2): a directory tree in which each
/// machine writes only under `devices/<its id>/`. `fetch` brings the remote's files into
/// `directory`; `publish` adds files and makes them the remote's, failing with `.behind`
/// when another machine published first (then fetch, merge and publish again).
package protocol SyncTransport: AnyObject {
    /// The local copy of the remote's files, as of the last `fetch`.
    var directory: String { get }
    /// Brings the remote's current files; false when the remote holds nothing yet.
    @discardableResult func fetch() throws -> Bool
    /// Writes `files` (paths relative to `directory`) and publishes them.
    func publish(_ files: [(path: String, bytes: [UInt8])], removing: [String], message: String) throws
}

/// Why a sync transport failed.
package enum TransportError: Error, CustomStringConvertible {
    /// Another machine published since the last fetch.
    case behind
    case failed(String)

    package var description: String {
        switch self {
        case .behind: return "the remote moved on since it was fetched"
        case .failed(let s): return s
        }
    }
}

/// The git transport: a clone in `directory`, one commit per publish, pushed to the branch
/// `latchkey` of `url`. Any URL git accepts (ssh, https, file), with git's own credentials.
/// The clone is only a cache: every fetch resets it to the remote's branch, so a crash at any
/// step leaves nothing a later run has to repair (what this machine has not yet pushed is in
/// the sync state's outbox, not only in the clone).
package final class GitTransport: SyncTransport {
    package let url: String
    package let directory: String
    package static let branch = "latchkey"
    /// Extra environment for git (tests point GIT_CONFIG_GLOBAL at an empty file).
    package var environment: [String: String] = [:]

    package init(url: String, directory: String) {
        self.url = url
        self.directory = directory
    }

    /// The path of the git executable, or a clear error.
    package static func gitPath() throws -> String {
        let path = Subprocess.currentEnvironment()["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let p = "\(dir)/git"
            if access(p, X_OK) == 0 { return p }
        }
        throw KeychainError(
            .notAvailable,
            "sync needs git, and no git is on PATH; install it (Debian: sudo apt install git) and try again")
    }

    /// Runs git; returns (status, stdout, stderr).
    @discardableResult
    func git(_ args: [String], in dir: String? = nil, allowFailure: Bool = false) throws -> (Int32, String, String) {
        // No hooks, no symlinks checked out, no signing, no prompts for a terminal a daemon lacks.
        let arguments =
            [
                "-c", "core.hooksPath=/dev/null", "-c", "user.name=latchkey", "-c", "user.email=latchkey@localhost",
                "-c", "commit.gpgSign=false", "-c", "core.symlinks=false", "-c", "init.defaultBranch=\(Self.branch)"
            ] + (dir.map { ["-C", $0] } ?? []) + args
        var env = Subprocess.currentEnvironment()
        env["GIT_TERMINAL_PROMPT"] = env["GIT_TERMINAL_PROMPT"] ?? "0"
        env["LC_ALL"] = "C"
        for (k, v) in environment { env[k] = v }
        let r = try Subprocess.run(try Self.gitPath(), arguments, environment: env)
        let result = (r.status, String(decoding: r.stdout, as: UTF8.self), String(decoding: r.stderr, as: UTF8.self))
        if result.0 != 0, !allowFailure {
            let detail = result.2.split(separator: "\n").suffix(3).joined(separator: "; ")
            throw TransportError.failed(
                redacted(url, in: "git \(args.first ?? "") failed (exit \(result.0)): \(detail)"))
        }
        return result
    }

    package func fetch() throws -> Bool {
        if access(directory + "/.git", F_OK) != 0 {
            TreeFiles.removeTree(directory)
            try git(["init", "-q", directory])
            try git(["remote", "add", "origin", url], in: directory)
        }
        // A kill during an earlier git command can leave its lock behind; the sync lock
        // (held by the caller) says no other git runs here.
        for lock in ["index.lock", "HEAD.lock", "refs/heads/\(Self.branch).lock", "shallow.lock"] {
            unlink(directory + "/.git/" + lock)
        }
        let (status, _, err) = try git(
            ["fetch", "-q", "--no-tags", "origin", "+refs/heads/\(Self.branch):refs/remotes/origin/\(Self.branch)"],
            in: directory, allowFailure: true)
        if status != 0 {
            if err.contains("couldn't find remote ref") { return false }
            let detail = err.split(separator: "\n").suffix(3).joined(separator: "; ")
            throw TransportError.failed(redacted(url, in: "git fetch from \(url) failed: \(detail)"))
        }
        try git(["checkout", "-q", "-f", "-B", Self.branch, "refs/remotes/origin/\(Self.branch)"], in: directory)
        try git(["reset", "-q", "--hard", "refs/remotes/origin/\(Self.branch)"], in: directory)
        try git(["clean", "-q", "-fdx"], in: directory)
        return true
    }

    package func publish(_ files: [(path: String, bytes: [UInt8])], removing: [String], message: String) throws {
        for f in files { try TreeFiles.write(root: directory, relative: f.path, f.bytes) }
        for path in removing { unlink(directory + "/" + path) }
        try git(["add", "-A", "--"] + files.map(\.path) + removing, in: directory)
        try git(["commit", "-q", "--allow-empty", "-m", message], in: directory)
        let (status, _, err) = try git(
            ["push", "-q", "origin", "HEAD:refs/heads/\(Self.branch)"], in: directory, allowFailure: true)
        if status != 0 {
            if err.contains("rejected") || err.contains("fetch first") || err.contains("non-fast-forward") {
                throw TransportError.behind
            }
            let detail = err.split(separator: "\n").suffix(3).joined(separator: "; ")
            throw TransportError.failed(redacted(url, in: "git push to \(url) failed: \(detail)"))
        }
        try git(["update-ref", "refs/remotes/origin/\(Self.branch)", "HEAD"], in: directory)
    }
}

/// A shared folder as the remote (spec/SYNC.md §2.5): a directory that a file-sync tool
/// (Syncthing, NFS, a USB stick) carries between machines, named `dir:/path`. Each machine
/// writes only files of its own directory, each once, by rename, so no two machines ever write
/// the same file and the folder's tool never sees a conflict. `fetch` reads it in place.
package final class FolderTransport: SyncTransport {
    package let directory: String

    package init(directory: String) { self.directory = directory }

    package func fetch() throws -> Bool {
        var st = stat()
        guard lstat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw TransportError.failed("the shared folder \(directory) is not there (not mounted, or not synced yet?)")
        }
        return access(directory + "/LATCHKEY-SYNC", F_OK) == 0 || !TreeFiles.list(directory + "/devices").isEmpty
    }

    package func publish(_ files: [(path: String, bytes: [UInt8])], removing: [String], message: String) throws {
        for f in files {
            // Beside it first, then renamed: a tool carrying the folder never sees half a file.
            let temp = f.path + ".partial"
            try TreeFiles.write(root: directory, relative: temp, f.bytes)
            let fd = open(directory + "/" + temp, O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                fsync(fd)
                close(fd)
            }
            guard rename(directory + "/" + temp, directory + "/" + f.path) == 0 else {
                throw TransportError.failed(
                    "cannot write \(f.path) in \(directory): \(String(cString: strerror(errno)))")
            }
        }
        // Removed after the new files are in place (a base before the segments it replaces).
        for path in removing where unlink(directory + "/" + path) != 0 && errno != ENOENT {
            throw TransportError.failed("cannot remove \(path) in \(directory): \(String(cString: strerror(errno)))")
        }
        // The new names (and the directories made for them) survive a power cut only once the
        // directories that hold them are synced: each one on a file's path, up to the folder.
        var directories = Set<String>()
        for path in files.map(\.path) + removing {
            var d = path
            while let slash = d.lastIndex(of: "/") {
                d = String(d[..<slash])
                directories.insert(directory + "/" + d)
            }
            directories.insert(directory)
        }
        for d in directories.sorted(by: { $0.count > $1.count }) {
            let fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            let ok = fsync(fd) == 0
            close(fd)
            guard ok else {
                throw TransportError.failed("cannot sync \(d) to disk: \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// A remote URL as messages show it: a password in it (`https://user:token@host/…`) becomes
/// `***`, here and wherever git's own messages repeat it, so that no credential reaches error
/// text, the status file or a log.
package func redacted(_ url: String) -> String { redacted(url, in: url) }

/// `text` with the password of `url`, if it has one, replaced by `***`.
package func redacted(_ url: String, in text: String) -> String {
    guard let scheme = url.firstRange(of: "://") else { return text }
    let rest = url[scheme.upperBound...]
    guard let at = rest.firstIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") else { return text }
    let password = String(rest[rest.index(after: colon)..<at])
    return password.isEmpty ? text : text.replacing(password, with: "***")
}
