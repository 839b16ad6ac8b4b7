/// The one seam through which the store touches files: open, read, write, fsync, rename,
/// lock. `PosixFileSystem` is the real one; `MemoryFileSystem` injects faults and power cuts.
package protocol FileSystem: AnyObject, Sendable {
    /// Opens for reading and writing. `create` with `exclusive` fails when the file exists.
    func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32
    func openReadOnly(_ path: String) throws -> Int32
    func close(_ fd: Int32)
    func size(_ fd: Int32) throws -> UInt64
    /// Size, hard-link count and change stamp of an open file in one call; nil when the file
    /// system cannot say (then callers compare paths every time).
    func status(_ fd: Int32) throws -> FileStatus?
    func identity(_ fd: Int32) throws -> FileIdentity
    /// nil when nothing exists at `path`.
    func identity(path: String) throws -> FileIdentity?
    /// Reads up to `count` bytes at `offset` (fewer only at the end of the file).
    func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8]
    /// Writes all of `bytes` at `offset`.
    func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws
    func sync(_ fd: Int32) throws
    func truncate(_ fd: Int32, to size: UInt64) throws
    func rename(_ from: String, _ to: String) throws
    /// Renames `from` to `to` only when nothing is at `to` (EEXIST otherwise), never leaving
    /// the file under both names (Linux: renameat2 RENAME_NOREPLACE; else `moveByLinking`).
    func renameNoReplace(_ from: String, _ to: String) throws
    /// A second name for a file (link(2)): EEXIST when `to` exists.
    func link(_ from: String, _ to: String) throws
    func syncDirectory(_ path: String) throws
    /// Exclusive advisory lock across processes (flock); blocks until granted.
    func lock(_ fd: Int32) throws
    func unlock(_ fd: Int32)
    /// `lock` without waiting (LOCK_NB): false when another descriptor holds the lock.
    func tryLock(_ fd: Int32) throws -> Bool
    func remove(_ path: String) throws
    /// Removes an empty directory (rmdir); nothing when it is absent.
    func removeDirectory(_ path: String) throws
    /// Permission bits (mode & 0o7777), nil when absent.
    func permissions(_ path: String) throws -> UInt32?
    /// Creates one directory (its parent must exist). - Returns: false when something already
    /// exists at `path` (nothing was created). `makeDirectory` builds on it.
    func createDirectory(_ path: String, mode: UInt32) throws -> Bool
    /// The names in a directory (not "." or ".."); none when it cannot be read.
    func list(_ directory: String) -> [String]

    // Files an attacker could plant (device secret, device state): spec/SECURITY.md, "another
    // local user". These never follow a symlink at the last component of the path.

    /// Opens without following a symlink at the last component (O_NOFOLLOW: a symlink fails
    /// with ELOOP). With `create` the file is made (O_CREAT | O_EXCL, `mode`) and the call fails
    /// with EEXIST when anything exists at `path`, a dangling symlink included.
    func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32
    /// Kind, owner and permissions of `path` itself (lstat: a symlink is reported as one);
    /// nil when nothing is there.
    func ownership(path: String) throws -> FileOwnership?
    /// Kind, owner and permissions of an open file (fstat).
    func ownership(_ fd: Int32) throws -> FileOwnership
    /// `path` with every symlink, `.` and `..` resolved (realpath); the path must exist.
    func resolvedPath(_ path: String) throws -> String
    /// The effective uid of this process: the owner that private files must have.
    var userID: UInt32 { get }
}

/// What `lstat`/`fstat` say about who may change a file.
package struct FileOwnership: Equatable, Sendable {
    package enum Kind: Equatable, Sendable {
        case regular, directory, symlink, other
    }
    package var kind: Kind
    package var owner: UInt32
    /// Permission bits (mode & 0o7777), sticky bit included.
    package var mode: UInt32

    package init(kind: Kind, owner: UInt32, mode: UInt32) {
        self.kind = kind
        self.owner = owner
        self.mode = mode
    }

    /// Writable by the group or by everyone.
    package var writableByOthers: Bool { mode & 0o022 != 0 }
    package var sticky: Bool { mode & 0o1000 != 0 }
}

extension FileSystem {
    package func status(_ fd: Int32) throws -> FileStatus? { nil }
    /// A file system with one process only: no lock is ever held by another.
    package func tryLock(_ fd: Int32) throws -> Bool { try lock(fd); return true }
}

/// What `fstat` says about an open file that matters to a reader following it: an append
/// changes the size, and any write or change of the file's links (a compaction renaming its
/// file over the path unlinks ours) changes the stamp (the inode's ctime).
package struct FileStatus: Equatable, Sendable {
    package var size: UInt64
    package var links: Int
    package var changeStamp: UInt64
    package init(size: UInt64, links: Int, changeStamp: UInt64) {
        self.size = size
        self.links = links
        self.changeStamp = changeStamp
    }
}

/// Device and inode: tells whether a path still names the file a descriptor has open.
package struct FileIdentity: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// A failed system call: the operation, the path and errno.
package struct IOFailure: Error, Equatable, CustomStringConvertible {
    package var operation: String
    package var path: String
    package var errno: Int32

    package init(_ operation: String, _ path: String, _ errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    package var description: String { "\(operation) \(path): \(errnoText(errno))" }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func errnoText(_ e: Int32) -> String {
    if let s = strerror(e) { return String(cString: s) }
    return "errno \(e)"
}

extension FileSystem {
    /// Takes the exclusive lock on `fd`, opened from `path`, and says whether `path` still
    /// names that file: another process may have renamed a new file over it, or removed it,
    /// between the open and the lock. When it does not, the lock is let go again; the caller
    /// closes `fd` and opens the path anew.
    package func lock(_ fd: Int32, stillAt path: String) throws -> Bool {
        try lock(fd)
        do {
            if try identity(path: path) == identity(fd) { return true }
        } catch {
            unlock(fd)
            throw error
        }
        unlock(fd)
        return false
    }

    /// A file system that cannot list directories lists nothing (clean-ups then do nothing).
    package func list(_ directory: String) -> [String] { [] }

    /// Reads a whole (small) file, or nil when it does not exist.
    package func readFile(_ path: String) throws -> [UInt8]? {
        guard try identity(path: path) != nil else { return nil }
        let fd = try openReadOnly(path)
        defer { close(fd) }
        return try read(fd, offset: 0, count: Int(try size(fd)))
    }

    /// Creates `path` and the missing directories above it (each new one but the last 0700, the
    /// last `mode`), and fsyncs the parent of each directory it creates, so that the new names
    /// survive a power cut (what the files inside them need before their own fsyncs count).
    /// When that fsync fails the new directory is removed again (best effort): a later call
    /// that found it would not sync its parent, and what it then made inside would be lost.
    package func makeDirectory(_ path: String, mode: UInt32) throws {
        var missing: [String] = []
        var p = path
        while !p.isEmpty, p != "/", p != ".", try identity(path: p) == nil {
            missing.append(p)
            p = directoryOf(p)
        }
        for (i, dir) in missing.reversed().enumerated() {
            if try createDirectory(dir, mode: i == missing.count - 1 ? mode : 0o700) {
                do {
                    try syncDirectory(directoryOf(dir))
                } catch {
                    try? removeDirectory(dir)
                    throw error
                }
            }
        }
    }

    /// `renameNoReplace` where the file system cannot refuse a replacing rename: link(2), which
    /// refuses an existing `to`, then removal of `from`. If `from` cannot be removed the link is
    /// undone, so the file never keeps two names (a second name would be an old copy left
    /// behind after the next compaction); the error says which name is left, and where.
    package func moveByLinking(_ from: String, _ to: String) throws {
        try link(from, to)
        do {
            try remove(from)
        } catch let first as IOFailure {
            do {
                try remove(to)
            } catch {
                throw IOFailure(
                    "unlink (after linking to \(to), which now names the same file; remove \(from) by hand)", from,
                    first.errno)
            }
            throw IOFailure("unlink (the link to \(to) was undone)", from, first.errno)
        }
    }

    /// Writes a small file atomically and durably: temp file, fsync, rename, fsync directory.
    /// The temporary file is `<path>.tmp-<8 hex digits>`, locked while it is written
    /// (`createLockedTemporaryFile`); those that a killed writer left are removed first.
    package func writeFileAtomically(_ path: String, _ bytes: [UInt8], mode: UInt32) throws {
        removeAbandonedTemporaryFiles(prefix: path + ".tmp-")
        let (temp, fd, registered) = try createLockedTemporaryFile(prefix: path + ".tmp-", mode: mode)
        defer { InterruptCleanup.unregister(registered) }
        defer { close(fd) }
        do {
            try write(fd, offset: 0, bytes)
            try sync(fd)
            try rename(temp, path)
        } catch {
            try? remove(temp)
            throw error
        }
        try syncDirectory(directoryOf(path))
    }
}

/// The directory part of a path ("." when there is none).
package func directoryOf(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    if slash == path.startIndex { return "/" }
    return String(path[..<slash])
}
