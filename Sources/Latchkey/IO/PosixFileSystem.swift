#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import LatchkeyCrypto

/// The real file system, through POSIX calls. EINTR is retried; short writes are continued.
///
/// Every file is opened with O_NONBLOCK: anyone who can create a file in a keychain's directory
/// could plant a FIFO at a path the store opens (the index, the keychain itself), and a plain
/// open(2) of a FIFO blocks until a writer comes, for ever. O_NONBLOCK changes nothing for a
/// regular file; callers check on the descriptor (`ownership(_:)`) that they opened one.
package final class PosixFileSystem: FileSystem, @unchecked Sendable {
    package static let shared = PosixFileSystem()
    package init() {}

    package func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
        var flags = O_RDWR | O_CLOEXEC | O_NONBLOCK
        if create { flags |= O_CREAT }
        if exclusive { flags |= O_EXCL }
        let fd = retrying { Glibc.open(path, flags, mode_t(mode)) }
        guard fd >= 0 else { throw IOFailure("open", path, errno) }
        return fd
    }

    package func openReadOnly(_ path: String) throws -> Int32 {
        let fd = retrying { Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { throw IOFailure("open", path, errno) }
        return fd
    }

    package func close(_ fd: Int32) { _ = Glibc.close(fd) }

    package func size(_ fd: Int32) throws -> UInt64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw IOFailure("fstat", "fd \(fd)", errno) }
        return UInt64(st.st_size)
    }

    package func status(_ fd: Int32) throws -> FileStatus? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw IOFailure("fstat", "fd \(fd)", errno) }
        let ctime =
            UInt64(truncatingIfNeeded: st.st_ctim.tv_sec) &* 1_000_000_000
            &+ UInt64(truncatingIfNeeded: st.st_ctim.tv_nsec)
        return FileStatus(size: UInt64(st.st_size), links: Int(st.st_nlink), changeStamp: ctime)
    }

    package func identity(_ fd: Int32) throws -> FileIdentity {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw IOFailure("fstat", "fd \(fd)", errno) }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    package func identity(path: String) throws -> FileIdentity? {
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw IOFailure("stat", path, errno)
        }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    package func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        if count == 0 { return [] }
        // Made uninitialized: only the bytes read become the array's.
        return try [UInt8](unsafeUninitializedCapacity: count) { buf, initialized in
            var done = 0
            while done < count {
                let n = retrying { pread(fd, buf.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
                if n < 0 { throw IOFailure("read", "fd \(fd)", errno) }
                if n == 0 { break }
                done += n
            }
            initialized = done
        }
    }

    package func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws {
        var done = 0
        try bytes.withUnsafeBytes { buf in
            while done < bytes.count {
                let n = retrying {
                    pwrite(fd, buf.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
                }
                if n < 0 { throw IOFailure("write", "fd \(fd)", errno) }
                done += n
            }
        }
    }

    package func sync(_ fd: Int32) throws {
        guard retrying({ fsync(fd) }) == 0 else { throw IOFailure("fsync", "fd \(fd)", errno) }
    }

    package func truncate(_ fd: Int32, to size: UInt64) throws {
        guard retrying({ ftruncate(fd, off_t(size)) }) == 0 else { throw IOFailure("ftruncate", "fd \(fd)", errno) }
    }

    package func rename(_ from: String, _ to: String) throws {
        guard Glibc.rename(from, to) == 0 else { throw IOFailure("rename", from, errno) }
    }

    package func renameNoReplace(_ from: String, _ to: String) throws {
        // Through the raw system call: the statically linked release has no dynamic symbol
        // table to find renameat2 in, and the link-then-unlink fallback leaves the file under
        // two names if the process dies between the two calls.
        let e = SystemCalls.renameNoReplace(from, to)
        if e == 0 { return }
        // EINVAL: this file system cannot refuse a replacing rename; ENOSYS: nor can the kernel.
        guard e == EINVAL || e == ENOSYS || e == ENOTSUP else { throw IOFailure("rename", from, e) }
        try moveByLinking(from, to)
    }

    package func link(_ from: String, _ to: String) throws {
        guard Glibc.link(from, to) == 0 else { throw IOFailure("link", from, errno) }
    }

    package func syncDirectory(_ path: String) throws {
        let fd = retrying { Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw IOFailure("open", path, errno) }
        defer { _ = Glibc.close(fd) }
        guard retrying({ fsync(fd) }) == 0 else { throw IOFailure("fsync", path, errno) }
    }

    package func lock(_ fd: Int32) throws {
        guard retrying({ flock(fd, LOCK_EX) }) == 0 else { throw IOFailure("flock", "fd \(fd)", errno) }
    }

    package func unlock(_ fd: Int32) { _ = flock(fd, LOCK_UN) }

    package func tryLock(_ fd: Int32) throws -> Bool {
        if retrying({ flock(fd, LOCK_EX | LOCK_NB) }) == 0 { return true }
        if errno == EWOULDBLOCK { return false }
        throw IOFailure("flock", "fd \(fd)", errno)
    }

    package func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw IOFailure("unlink", path, errno) }
    }

    package func removeDirectory(_ path: String) throws {
        guard rmdir(path) == 0 || errno == ENOENT else { throw IOFailure("rmdir", path, errno) }
    }

    package func permissions(_ path: String) throws -> UInt32? {
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT { return nil }
            throw IOFailure("stat", path, errno)
        }
        return UInt32(st.st_mode) & 0o7777
    }

    package func createDirectory(_ path: String, mode: UInt32) throws -> Bool {
        if mkdir(path, mode_t(mode)) == 0 { return true }
        if errno == EEXIST { return false }
        throw IOFailure("mkdir", path, errno)
    }

    package func list(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    // MARK: Private files (never through a symlink)

    package func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        var flags = (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
        if create { flags |= O_CREAT | O_EXCL }
        let fd = retrying { Glibc.open(path, flags, mode_t(mode)) }
        guard fd >= 0 else { throw IOFailure("open", path, errno) }
        return fd
    }

    package func ownership(path: String) throws -> FileOwnership? {
        var st = stat()
        if lstat(path, &st) != 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw IOFailure("lstat", path, errno)
        }
        return PosixFileSystem.ownership(st)
    }

    package func ownership(_ fd: Int32) throws -> FileOwnership {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw IOFailure("fstat", "fd \(fd)", errno) }
        return PosixFileSystem.ownership(st)
    }

    static func ownership(_ st: stat) -> FileOwnership {
        let kind: FileOwnership.Kind
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symlink
        default: kind = .other
        }
        return FileOwnership(kind: kind, owner: UInt32(st.st_uid), mode: UInt32(st.st_mode) & 0o7777)
    }

    package func resolvedPath(_ path: String) throws -> String {
        guard let r = realpath(path, nil) else { throw IOFailure("realpath", path, errno) }
        defer { free(r) }
        return String(cString: r)
    }

    package var userID: UInt32 { UInt32(geteuid()) }

    private func retrying<T: BinaryInteger>(_ call: () -> T) -> T {
        while true {
            let r = call()
            if r < 0, errno == EINTR { continue }
            return r
        }
    }
}
