import Foundation

/// An in-memory file system that models durability and injects faults, for crash tests.
///
/// Each file keeps the bytes a reader sees now and the bytes that would survive a power cut
/// (those present at its last `sync`). Names (create, rename, remove) survive a power cut only
/// after `syncDirectory` of their directory, and a new directory only after `syncDirectory` of
/// its parent. Files and directories have an owner and permissions (no symlinks: paths are
/// taken as they are). `plan` makes the N-th mutating operation fail with
/// an errno (ENOSPC, EIO) or cut the power; after a cut every call throws until `rebooted()`
/// returns the file system as it would be found at the next boot.
package final class MemoryFileSystem: FileSystem, @unchecked Sendable {
    package enum Fault: Equatable, Sendable {
        case error(Int32)
        case powerCut
    }

    /// What happens to bytes written but not fsync'd when the power is cut.
    package enum CrashMode: Sendable {
        /// Every unsynced write is lost.
        case loseUnsynced
        /// Every unsynced write made it to disk.
        case keepUnsynced
        /// Half of the bytes appended since the last sync made it (a torn write).
        case tearUnsynced
    }

    package struct PowerCut: Error {}

    private final class Node {
        var current: [UInt8] = []
        var durable: [UInt8] = []
        var mode: UInt32
        var owner: UInt32
        let inode: UInt64
        init(mode: UInt32, owner: UInt32, inode: UInt64) { self.mode = mode; self.owner = owner; self.inode = inode }
    }

    private struct Directory {
        var mode: UInt32
        var owner: UInt32
    }

    private let mutex = NSLock()
    private var names: [String: Node] = [:]
    private var durableNames: [String: Node] = [:]
    private var directories: [String: Directory] = ["/": Directory(mode: 0o755, owner: 0),
                                                    ".": Directory(mode: 0o700, owner: UInt32(geteuid()))]
    /// Directories whose name in their parent survives a power cut.
    private var durableDirectories: Set<String> = ["/", "."]
    private var descriptors: [Int32: Node] = [:]
    private var nextFD: Int32 = 3
    private var nextInode: UInt64 = 1
    private var crashed = false

    /// The uid of "this process": owner of what it creates, and the owner private files must have.
    package var userID: UInt32 = UInt32(geteuid())

    /// Counts mutating operations (write, sync, truncate, rename, syncDirectory, create, mkdir,
    /// remove).
    package private(set) var mutations = 0
    /// (index of the mutating operation, fault). Index 0 is the first mutation after the plan is set.
    package var plan: (at: Int, fault: Fault)? {
        didSet { planBase = mutations }
    }
    private var planBase = 0

    package init() {}

    private func mutate(_ op: String, _ path: String) throws {
        if crashed { throw PowerCut() }
        defer { mutations += 1 }
        guard let p = plan, mutations - planBase == p.at else { return }
        switch p.fault {
        case .error(let e): throw IOFailure(op, path, e)
        case .powerCut:
            crashed = true
            throw PowerCut()
        }
    }

    private func live() throws {
        if crashed { throw PowerCut() }
    }

    /// The file system found at the next boot after a power cut (or now, if there was none).
    package func rebooted(_ mode: CrashMode = .loseUnsynced) -> MemoryFileSystem {
        mutex.lock(); defer { mutex.unlock() }
        let fs = MemoryFileSystem()
        fs.userID = userID
        // A name survives only when every directory above it does.
        func survives(_ dir: String) -> Bool {
            if dir == "/" || dir == "." { return true }
            return durableDirectories.contains(dir) && directories[dir] != nil && survives(directoryOf(dir))
        }
        var copies: [ObjectIdentifier: Node] = [:]
        for (name, node) in durableNames where survives(directoryOf(name)) {
            let copy = copies[ObjectIdentifier(node)] ?? {
                let n = Node(mode: node.mode, owner: node.owner, inode: node.inode)
                var bytes = node.durable
                switch mode {
                case .loseUnsynced: break
                case .keepUnsynced: bytes = node.current
                case .tearUnsynced:
                    if node.current.count > bytes.count, node.current.starts(with: bytes) {
                        let extra = node.current.count - bytes.count
                        bytes = Array(node.current.prefix(bytes.count + extra / 2))
                    }
                }
                n.current = bytes
                n.durable = bytes
                return n
            }()
            copies[ObjectIdentifier(node)] = copy
            fs.names[name] = copy
            fs.durableNames[name] = copy
        }
        fs.directories = directories.filter { survives($0.key) }
        fs.durableDirectories = Set(fs.directories.keys)
        fs.nextInode = nextInode
        return fs
    }

    /// Bytes a reader sees now (for tests).
    package func contents(_ path: String) -> [UInt8]? {
        mutex.lock(); defer { mutex.unlock() }
        return names[path]?.current
    }

    /// Replaces a file's bytes, durably (for tests that damage files).
    package func setContents(_ path: String, _ bytes: [UInt8]) {
        mutex.lock(); defer { mutex.unlock() }
        let node = names[path] ?? Node(mode: 0o600, owner: userID, inode: { nextInode += 1; return nextInode }())
        node.current = bytes
        node.durable = bytes
        names[path] = node
        durableNames[path] = node
    }

    /// Sets the permission bits of a file or a directory (for tests).
    package func setPermissions(_ path: String, _ mode: UInt32) {
        mutex.lock(); defer { mutex.unlock() }
        names[path]?.mode = mode
        directories[path]?.mode = mode
    }

    /// Gives a file or a directory to another uid (for tests of "another local user").
    package func setOwner(_ path: String, _ uid: UInt32) {
        mutex.lock(); defer { mutex.unlock() }
        names[path]?.owner = uid
        directories[path]?.owner = uid
    }

    package func listFiles() -> [String] {
        mutex.lock(); defer { mutex.unlock() }
        return names.keys.sorted()
    }

    package func list(_ directory: String) -> [String] {
        mutex.lock(); defer { mutex.unlock() }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        let files = names.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        let dirs = directories.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        return (files + dirs).filter { !$0.isEmpty && !$0.contains("/") }.sorted()
    }

    // MARK: FileSystem

    package func open(_ path: String, create: Bool, exclusive: Bool, mode: UInt32) throws -> Int32 {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        if let node = names[path] {
            if exclusive { throw IOFailure("open", path, EEXIST) }
            return allocate(node)
        }
        guard create else { throw IOFailure("open", path, ENOENT) }
        guard directories[directoryOf(path)] != nil else { throw IOFailure("open", path, ENOENT) }
        guard directories[path] == nil else { throw IOFailure("open", path, create && exclusive ? EEXIST : EISDIR) }
        try mutate("create", path)
        nextInode += 1
        let node = Node(mode: mode, owner: userID, inode: nextInode)
        names[path] = node
        return allocate(node)
    }

    private func allocate(_ node: Node) -> Int32 {
        let fd = nextFD
        nextFD += 1
        descriptors[fd] = node
        return fd
    }

    package func openReadOnly(_ path: String) throws -> Int32 {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        guard let node = names[path] else { throw IOFailure("open", path, ENOENT) }
        return allocate(node)
    }

    package func close(_ fd: Int32) {
        mutex.lock(); defer { mutex.unlock() }
        descriptors[fd] = nil
    }

    private func node(_ fd: Int32) throws -> Node {
        try live()
        guard let n = descriptors[fd] else { throw IOFailure("fd", "\(fd)", EBADF) }
        return n
    }

    package func size(_ fd: Int32) throws -> UInt64 {
        mutex.lock(); defer { mutex.unlock() }
        return UInt64(try node(fd).current.count)
    }

    /// The stamp is the count of every mutation of this file system: coarser than a ctime
    /// (any change anywhere moves it), never finer.
    package func status(_ fd: Int32) throws -> FileStatus? {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        return FileStatus(size: UInt64(n.current.count), links: names.values.reduce(0) { $0 + ($1 === n ? 1 : 0) },
                          changeStamp: UInt64(mutations))
    }

    package func identity(_ fd: Int32) throws -> FileIdentity {
        mutex.lock(); defer { mutex.unlock() }
        return FileIdentity(device: 1, inode: try node(fd).inode)
    }

    package func identity(path: String) throws -> FileIdentity? {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        if let n = names[path] { return FileIdentity(device: 1, inode: n.inode) }
        if directories[path] != nil { return FileIdentity(device: 1, inode: 0) }
        return nil
    }

    package func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        let start = min(Int(offset), n.current.count)
        return Array(n.current[start..<min(start + count, n.current.count)])
    }

    package func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try mutate("write", "fd \(fd)")
        let o = Int(offset)
        if n.current.count < o { n.current.append(contentsOf: repeatElement(0, count: o - n.current.count)) }
        let overlap = min(bytes.count, n.current.count - o)
        if overlap > 0 { n.current.replaceSubrange(o..<o + overlap, with: bytes[0..<overlap]) }
        n.current.append(contentsOf: bytes[overlap...])
    }

    package func sync(_ fd: Int32) throws {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try mutate("fsync", "fd \(fd)")
        n.durable = n.current
    }

    package func truncate(_ fd: Int32, to size: UInt64) throws {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try mutate("ftruncate", "fd \(fd)")
        if n.current.count > Int(size) { n.current.removeSubrange(Int(size)...) } else {
            n.current.append(contentsOf: repeatElement(0, count: Int(size) - n.current.count))
        }
    }

    package func rename(_ from: String, _ to: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        guard let n = names[from] else { throw IOFailure("rename", from, ENOENT) }
        try mutate("rename", from)
        names[from] = nil
        names[to] = n
    }

    /// As a file system without RENAME_NOREPLACE: link, then unlink (`moveByLinking`).
    package func renameNoReplace(_ from: String, _ to: String) throws {
        try moveByLinking(from, to)
    }

    package func link(_ from: String, _ to: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        guard let n = names[from] else { throw IOFailure("link", from, ENOENT) }
        guard names[to] == nil, directories[to] == nil else { throw IOFailure("link", from, EEXIST) }
        guard directories[directoryOf(to)] != nil else { throw IOFailure("link", from, ENOENT) }
        try mutate("link", to)
        names[to] = n
    }

    package func syncDirectory(_ path: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try mutate("fsync", path)
        for (name, _) in durableNames where directoryOf(name) == path && names[name] == nil { durableNames[name] = nil }
        for (name, node) in names where directoryOf(name) == path { durableNames[name] = node }
        for dir in directories.keys where directoryOf(dir) == path { durableDirectories.insert(dir) }
    }

    package func lock(_ fd: Int32) throws {
        mutex.lock(); defer { mutex.unlock() }
        _ = try node(fd)
    }
    package func unlock(_ fd: Int32) {}

    package func remove(_ path: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        guard names[path] != nil else { return }
        try mutate("unlink", path)
        names[path] = nil
    }

    package func removeDirectory(_ path: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        guard directories[path] != nil else { return }
        let prefix = path + "/"
        guard !names.keys.contains(where: { $0.hasPrefix(prefix) }), !directories.keys.contains(where: { $0.hasPrefix(prefix) }) else {
            throw IOFailure("rmdir", path, ENOTEMPTY)
        }
        try mutate("rmdir", path)
        directories[path] = nil
        durableDirectories.remove(path)
    }

    package func permissions(_ path: String) throws -> UInt32? {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        if let n = names[path] { return n.mode }
        return directories[path]?.mode
    }

    package func createDirectory(_ path: String, mode: UInt32) throws -> Bool {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        if names[path] != nil || directories[path] != nil { return false }
        guard directories[directoryOf(path)] != nil else { throw IOFailure("mkdir", path, ENOENT) }
        try mutate("mkdir", path)
        directories[path] = Directory(mode: mode, owner: userID)
        return true
    }

    package func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        if create || writable { return try open(path, create: create, exclusive: create, mode: mode) }
        return try openReadOnly(path)
    }

    package func ownership(path: String) throws -> FileOwnership? {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        if let n = names[path] { return FileOwnership(kind: .regular, owner: n.owner, mode: n.mode) }
        if let d = directories[path] { return FileOwnership(kind: .directory, owner: d.owner, mode: d.mode) }
        return nil
    }

    package func ownership(_ fd: Int32) throws -> FileOwnership {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        return FileOwnership(kind: .regular, owner: n.owner, mode: n.mode)
    }

    package func resolvedPath(_ path: String) throws -> String {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        guard names[path] != nil || directories[path] != nil else { throw IOFailure("realpath", path, ENOENT) }
        return path
    }
}
