#if canImport(Glibc)
    import Glibc
#endif
import Latchkey
import LatchkeyTestSupport

/// Forwards every call to another file system (the real one, or a MemoryFileSystem), except
/// that `remove`, `syncDirectory` and `write` first ask a hook, which may throw the failure to
/// inject (`write`'s may be called from a worker thread: it must not share unguarded state).
/// `renameNoReplace` runs the link-then-unlink fallback through this object, so that an
/// injected `remove` failure lands inside it, as on a file system without RENAME_NOREPLACE.
final class FaultyFileSystem: FileSystem, @unchecked Sendable {
    let inner: FileSystem
    var beforeRemove: (String) throws -> Void = { _ in }
    var beforeSyncDirectory: (String) throws -> Void = { _ in }
    var beforeWrite: (Int32, UInt64, Int) throws -> Void = { _, _, _ in }
    private(set) var renamed: [(String, String)] = []

    init(_ inner: FileSystem) { self.inner = inner }

    func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
        try inner.open(path, create: create, exclusive: exclusive, mode: mode)
    }
    func openReadOnly(_ path: String) throws -> Int32 { try inner.openReadOnly(path) }
    func close(_ fd: Int32) { inner.close(fd) }
    func size(_ fd: Int32) throws -> UInt64 { try inner.size(fd) }
    func status(_ fd: Int32) throws -> FileStatus? { try inner.status(fd) }
    func identity(_ fd: Int32) throws -> FileIdentity { try inner.identity(fd) }
    func identity(path: String) throws -> FileIdentity? { try inner.identity(path: path) }
    func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        try inner.read(fd, offset: offset, count: count)
    }
    func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws {
        try beforeWrite(fd, offset, bytes.count)
        try inner.write(fd, offset: offset, bytes)
    }
    func sync(_ fd: Int32) throws { try inner.sync(fd) }
    func truncate(_ fd: Int32, to size: UInt64) throws { try inner.truncate(fd, to: size) }
    func rename(_ from: String, _ to: String) throws {
        try inner.rename(from, to)
        renamed.append((from, to))
    }
    func renameNoReplace(_ from: String, _ to: String) throws {
        try moveByLinking(from, to)
        renamed.append((from, to))
    }
    func link(_ from: String, _ to: String) throws { try inner.link(from, to) }
    func syncDirectory(_ path: String) throws {
        try beforeSyncDirectory(path)
        try inner.syncDirectory(path)
    }
    func lock(_ fd: Int32) throws { try inner.lock(fd) }
    func unlock(_ fd: Int32) { inner.unlock(fd) }
    func remove(_ path: String) throws {
        try beforeRemove(path)
        try inner.remove(path)
    }
    func removeDirectory(_ path: String) throws { try inner.removeDirectory(path) }
    func permissions(_ path: String) throws -> UInt32? { try inner.permissions(path) }
    func createDirectory(_ path: String, mode: UInt32) throws -> Bool { try inner.createDirectory(path, mode: mode) }
    func list(_ directory: String) -> [String] { inner.list(directory) }
    func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        try inner.openNoFollow(path, writable: writable, create: create, mode: mode)
    }
    func ownership(path: String) throws -> FileOwnership? { try inner.ownership(path: path) }
    func ownership(_ fd: Int32) throws -> FileOwnership { try inner.ownership(fd) }
    func resolvedPath(_ path: String) throws -> String { try inner.resolvedPath(path) }
    var userID: UInt32 { inner.userID }
}
