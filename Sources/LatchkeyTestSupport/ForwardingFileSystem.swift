import Latchkey

/// A `FileSystem` that passes every call to `inner`: a test double conforms, and declares only
/// the calls it changes (its own declaration is the one used).
package protocol ForwardingFileSystem: FileSystem {
    var inner: FileSystem { get }
}

extension ForwardingFileSystem {
    package func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
        try inner.open(path, create: create, exclusive: exclusive, mode: mode)
    }
    package func openReadOnly(_ path: String) throws -> Int32 { try inner.openReadOnly(path) }
    package func close(_ fd: Int32) { inner.close(fd) }
    package func size(_ fd: Int32) throws -> UInt64 { try inner.size(fd) }
    package func status(_ fd: Int32) throws -> FileStatus? { try inner.status(fd) }
    package func identity(_ fd: Int32) throws -> FileIdentity { try inner.identity(fd) }
    package func identity(path: String) throws -> FileIdentity? { try inner.identity(path: path) }
    package func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        try inner.read(fd, offset: offset, count: count)
    }
    package func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws {
        try inner.write(fd, offset: offset, bytes)
    }
    package func sync(_ fd: Int32) throws { try inner.sync(fd) }
    package func truncate(_ fd: Int32, to size: UInt64) throws { try inner.truncate(fd, to: size) }
    package func rename(_ from: String, _ to: String) throws { try inner.rename(from, to) }
    package func renameNoReplace(_ from: String, _ to: String) throws { try inner.renameNoReplace(from, to) }
    package func link(_ from: String, _ to: String) throws { try inner.link(from, to) }
    package func syncDirectory(_ path: String) throws { try inner.syncDirectory(path) }
    package func lock(_ fd: Int32) throws { try inner.lock(fd) }
    package func unlock(_ fd: Int32) { inner.unlock(fd) }
    package func tryLock(_ fd: Int32) throws -> Bool { try inner.tryLock(fd) }
    package func remove(_ path: String) throws { try inner.remove(path) }
    package func removeDirectory(_ path: String) throws { try inner.removeDirectory(path) }
    package func permissions(_ path: String) throws -> UInt32? { try inner.permissions(path) }
    package func createDirectory(_ path: String, mode: UInt32) throws -> Bool {
        try inner.createDirectory(path, mode: mode)
    }
    package func list(_ directory: String) -> [String] { inner.list(directory) }
    package func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        try inner.openNoFollow(path, writable: writable, create: create, mode: mode)
    }
    package func ownership(path: String) throws -> FileOwnership? { try inner.ownership(path: path) }
    package func ownership(_ fd: Int32) throws -> FileOwnership { try inner.ownership(fd) }
    package func resolvedPath(_ path: String) throws -> String { try inner.resolvedPath(path) }
    package var userID: UInt32 { inner.userID }
}
