@testable import Latchkey
import LatchkeyTestSupport

/// Wraps a `MemoryFileSystem` and records, for each mutating operation, what it was and which
/// file it touched, indexed like the memory file system's `mutations` counter (and so like its
/// fault `plan`). Tests use it to tell where an injected fault landed: in the keychain's own
/// write path, or in the best-effort device-state update that follows a durable commit.
final class TracingFileSystem: FileSystem, @unchecked Sendable {
    struct Operation: CustomStringConvertible {
        var name: String
        var path: String
        var description: String { "\(name) \(path)" }
    }

    let disk: MemoryFileSystem
    /// Mutating operations by the index of `disk.mutations` at which they ran.
    private(set) var operations: [Int: Operation] = [:]
    private var paths: [Int32: String] = [:]

    init(_ disk: MemoryFileSystem) { self.disk = disk }

    /// The operation that ran as mutation number `index` (absolute, as `disk.mutations` counts).
    func operation(at index: Int) -> Operation? { operations[index] }

    private func traced<T>(_ name: String, _ path: String, _ body: () throws -> T) rethrows -> T {
        let before = disk.mutations
        defer { if disk.mutations > before { operations[before] = Operation(name: name, path: path) } }
        return try body()
    }

    private func path(_ fd: Int32) -> String { paths[fd] ?? "fd \(fd)" }

    func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
        let fd = try traced("create", path) { try disk.open(path, create: create, exclusive: exclusive, mode: mode) }
        paths[fd] = path
        return fd
    }

    func openReadOnly(_ path: String) throws -> Int32 {
        let fd = try disk.openReadOnly(path)
        paths[fd] = path
        return fd
    }

    func close(_ fd: Int32) {
        disk.close(fd)
        paths[fd] = nil
    }

    func size(_ fd: Int32) throws -> UInt64 { try disk.size(fd) }
    func status(_ fd: Int32) throws -> FileStatus? { try disk.status(fd) }
    func identity(_ fd: Int32) throws -> FileIdentity { try disk.identity(fd) }
    func identity(path: String) throws -> FileIdentity? { try disk.identity(path: path) }
    func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        try disk.read(fd, offset: offset, count: count)
    }

    func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws {
        try traced("write", path(fd)) { try disk.write(fd, offset: offset, bytes) }
    }

    func sync(_ fd: Int32) throws { try traced("fsync", path(fd)) { try disk.sync(fd) } }

    func truncate(_ fd: Int32, to size: UInt64) throws {
        try traced("ftruncate", path(fd)) { try disk.truncate(fd, to: size) }
    }

    func rename(_ from: String, _ to: String) throws { try traced("rename", from) { try disk.rename(from, to) } }
    func renameNoReplace(_ from: String, _ to: String) throws { try moveByLinking(from, to) }
    func link(_ from: String, _ to: String) throws { try traced("link", to) { try disk.link(from, to) } }
    func removeDirectory(_ path: String) throws { try traced("rmdir", path) { try disk.removeDirectory(path) } }
    func syncDirectory(_ path: String) throws { try traced("fsync directory", path) { try disk.syncDirectory(path) } }
    func lock(_ fd: Int32) throws { try disk.lock(fd) }
    func unlock(_ fd: Int32) { disk.unlock(fd) }
    func remove(_ path: String) throws { try traced("unlink", path) { try disk.remove(path) } }
    func permissions(_ path: String) throws -> UInt32? { try disk.permissions(path) }
    func createDirectory(_ path: String, mode: UInt32) throws -> Bool {
        try traced("mkdir", path) { try disk.createDirectory(path, mode: mode) }
    }
    func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        let fd = try traced("create", path) {
            try disk.openNoFollow(path, writable: writable, create: create, mode: mode)
        }
        paths[fd] = path
        return fd
    }
    func ownership(path: String) throws -> FileOwnership? { try disk.ownership(path: path) }
    func ownership(_ fd: Int32) throws -> FileOwnership { try disk.ownership(fd) }
    func resolvedPath(_ path: String) throws -> String { try disk.resolvedPath(path) }
    var userID: UInt32 { disk.userID }
}
