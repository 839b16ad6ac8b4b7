import Foundation
import Latchkey

/// An in-memory file system that models durability and injects faults, for crash tests.
///
/// Each file keeps the bytes a reader sees now and the bytes that would survive a power cut
/// (those present at its last `sync`), and the byte ranges written or truncated since then.
/// Names (create, rename, link, remove, mkdir, rmdir) survive a power cut only after
/// `syncDirectory` of their directory, so a new directory survives only after an fsync of its
/// parent, and a name survives only when every directory above it does. One record of those
/// name changes serves both `rebooted` (none of the pending changes kept) and `crashStates`
/// (each prefix of them kept). Files and directories have an owner and permissions (no
/// symlinks: paths are taken as they are).
///
/// Three ways to break it:
/// - `plan` makes the N-th mutating operation fail with an errno (ENOSPC, EIO) or cut the
///   power; after a cut every call throws until `rebooted()` returns the file system as it
///   would be found at the next boot (or `crashStates` returns every way it could be found).
/// - `callPlan` fails the N-th call of any kind that can fail (open, stat, read, write, fsync,
///   rename, lock …) with an errno, or lets a write land in part before it fails (a short
///   write), as a POSIX file system can. `calls` counts those calls and, with `recordCalls`,
///   `callLog` says what each was.
/// - `readOnlyMedium` makes it behave like a file system mounted read-only (EROFS).
package final class MemoryFileSystem: FileSystem, @unchecked Sendable {
    package enum Fault: Equatable, Sendable {
        case error(Int32)
        case powerCut
    }

    /// A fault for one call of `callPlan`.
    package enum CallFault: Equatable, Sendable, CustomStringConvertible {
        /// The call fails with this errno and changes nothing.
        case error(Int32)
        /// For a write: its first `kept` bytes (nil: half of them; at least one, never all)
        /// land, then it fails with `errno`: what a pwrite loop sees when the disk fills
        /// (ENOSPC) or the device fails (EIO) between two pieces of one write. Any other call
        /// fails with `errno`.
        case shortWrite(errno: Int32, kept: Int? = nil)

        package var description: String {
            switch self {
            case .error(let e): return Self.name(e)
            case .shortWrite(let e, let kept):
                return "a short write (\(kept.map { "\($0) bytes" } ?? "half")), then \(Self.name(e))"
            }
        }

        private static func name(_ e: Int32) -> String {
            switch e {
            case EIO: return "EIO"
            case ENOSPC: return "ENOSPC"
            case EROFS: return "EROFS"
            default: return "errno \(e)"
            }
        }
    }

    /// One call through the seam, as `callLog` records it.
    package struct Call: Sendable, CustomStringConvertible {
        /// The system call it stands for: open, stat, lstat, fstat, realpath, read, write,
        /// fsync, ftruncate, rename, link, unlink, flock, mkdir, rmdir.
        package var name: String
        /// The path, or the path the descriptor was opened with.
        package var path: String
        /// The call may allocate space (ENOSPC is a possible answer): an open that creates,
        /// a write, an fsync, a truncate, a rename, a link, a directory fsync, a mkdir.
        package var allocates: Bool
        /// Bytes written (writes only).
        package var bytes: Int

        package var description: String { "\(name) \(path)" + (name == "write" ? " (\(bytes) bytes)" : "") }
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
        /// Byte ranges written or truncated since the last sync (in the file's coordinates).
        var dirty: [Range<Int>] = []
        var mode: UInt32
        var owner: UInt32
        let inode: UInt64
        init(mode: UInt32, owner: UInt32, inode: UInt64) { self.mode = mode; self.owner = owner; self.inode = inode }
    }

    /// A directory: its owner and permissions (shared by the name that holds it now and the
    /// durable or pending records of that name, as a file's `Node` is).
    private final class Directory {
        var mode: UInt32
        var owner: UInt32
        init(mode: UInt32, owner: UInt32) { self.mode = mode; self.owner = owner }
        func copy() -> Directory { Directory(mode: mode, owner: owner) }
    }

    private let mutex = NSLock()
    private var names: [String: Node] = [:]
    private var durableNames: [String: Node] = [:]
    /// One name in a change of `pendingNames`: what the name holds after the change (nil:
    /// the name is removed).
    private struct NameChange {
        enum Entry {
            case file(Node?)
            case directory(Directory?)
        }
        var name: String
        var entry: Entry
    }
    /// Name changes not yet made durable by a directory fsync, oldest first; each is one
    /// atomic change of one or more names (a rename changes two).
    private var pendingNames: [[NameChange]] = []
    private var directories: [String: Directory] = MemoryFileSystem.roots()
    /// Directories whose name in their parent survives a power cut ("/" and "." always).
    private var durableDirectories: [String: Directory] = [:]
    private var descriptors: [Int32: Node] = [:]
    private var descriptorPaths: [Int32: String] = [:]
    private var nextFD: Int32 = 3
    private var nextInode: UInt64 = 1
    private var crashed = false

    /// The uid of "this process": owner of what it creates, and the owner private files must have.
    package var userID: UInt32 = UInt32(geteuid())

    /// Counts mutating operations (write, sync, truncate, rename, link, syncDirectory, create,
    /// mkdir, rmdir, remove).
    package private(set) var mutations = 0
    /// (index of the mutating operation, fault). Index 0 is the first mutation after the plan is set.
    package var plan: (at: Int, fault: Fault)? {
        didSet { planBase = mutations }
    }
    private var planBase = 0

    /// Counts every call that can fail (all but close, unlock and list).
    package private(set) var calls = 0
    /// (index of the call, fault). Index 0 is the first call after the plan is set.
    package var callPlan: (at: Int, fault: CallFault)? {
        didSet { callBase = calls }
    }
    private var callBase = 0
    /// When true, `callLog` records every counted call; setting it empties the log.
    package var recordCalls = false {
        didSet { if recordCalls { callLog = [] } }
    }
    /// The calls counted since `recordCalls` was set, in order.
    package private(set) var callLog: [Call] = []

    /// A read-only mount: opening for writing, and every change, fails with EROFS.
    package var readOnlyMedium = false

    package init() {
        durableDirectories = directories
    }

    private static func roots() -> [String: Directory] {
        ["/": Directory(mode: 0o755, owner: 0), ".": Directory(mode: 0o700, owner: UInt32(geteuid()))]
    }

    private func mutate(_ op: String, _ path: String) throws {
        if crashed { throw PowerCut() }
        if readOnlyMedium { throw IOFailure(op, path, EROFS) }
        defer { mutations += 1 }
        guard let p = plan, mutations - planBase == p.at else { return }
        switch p.fault {
        case .error(let e): throw IOFailure(op, path, e)
        case .powerCut:
            crashed = true
            throw PowerCut()
        }
    }

    /// Counts one call and applies `callPlan`. Returns the fault a write must apply itself
    /// (a short write); throws every other.
    @discardableResult
    private func enter(_ name: String, _ path: String, allocates: Bool = false, bytes: Int = 0) throws -> CallFault? {
        if crashed { throw PowerCut() }
        defer { calls += 1 }
        if recordCalls { callLog.append(Call(name: name, path: path, allocates: allocates, bytes: bytes)) }
        guard let p = callPlan, calls - callBase == p.at else { return nil }
        switch p.fault {
        case .error(let e): throw IOFailure(name, path, e)
        case .shortWrite(let e, _):
            guard name == "write", bytes >= 2 else { throw IOFailure(name, path, e) }
            return p.fault
        }
    }

    private func live() throws {
        if crashed { throw PowerCut() }
    }

    private func pathOf(_ fd: Int32) -> String { descriptorPaths[fd] ?? "fd \(fd)" }

    /// The file system found at the next boot after a power cut (or now, if there was none):
    /// the durable names (no pending name change kept, as the first of `crashStates`), each
    /// file's bytes as `mode` says.
    package func rebooted(_ mode: CrashMode = .loseUnsynced) -> MemoryFileSystem {
        mutex.lock(); defer { mutex.unlock() }
        let fs = MemoryFileSystem()
        fs.userID = userID
        let (files, dirs) = Self.surviving(durableNames, durableDirectories)
        var copies: [ObjectIdentifier: Node] = [:]
        for (name, node) in files {
            let copy =
                copies[ObjectIdentifier(node)]
                ?? {
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
        fs.directories = dirs.mapValues { $0.copy() }
        fs.durableDirectories = fs.directories
        fs.nextInode = nextInode
        return fs
    }

    /// The names a boot finds when `files` and `directories` are the names on disk: those
    /// whose every directory above them is there too.
    private static func surviving(_ files: [String: Node], _ directories: [String: Directory])
        -> (files: [String: Node], directories: [String: Directory])
    {
        func reachable(_ dir: String) -> Bool {
            var d = dir
            while d != "/" && d != "." && !d.isEmpty {
                if directories[d] == nil { return false }
                d = directoryOf(d)
            }
            return true
        }
        return (files.filter { reachable(directoryOf($0.key)) }, directories.filter { reachable($0.key) })
    }

    /// Bytes a reader sees now (for tests).
    package func contents(_ path: String) -> [UInt8]? {
        mutex.lock(); defer { mutex.unlock() }
        return names[path]?.current
    }

    /// Replaces a file's bytes, durably (for tests that damage files).
    package func setContents(_ path: String, _ bytes: [UInt8]) {
        mutex.lock(); defer { mutex.unlock() }
        let node =
            names[path]
            ?? Node(
                mode: 0o600, owner: userID,
                inode: {
                    nextInode += 1; return nextInode
                }())
        node.current = bytes
        node.durable = bytes
        node.dirty = []
        names[path] = node
        durableNames[path] = node
    }

    /// Whether `path` and its bytes, as a reader sees them now, would survive a power cut.
    package func isDurable(_ path: String) -> Bool {
        mutex.lock(); defer { mutex.unlock() }
        var parent = directoryOf(path)
        while parent != "/" && parent != "." {
            guard durableDirectories[parent] != nil else { return false }
            parent = directoryOf(parent)
        }
        guard let node = names[path] else { return durableNames[path] == nil }
        return durableNames[path] === node && node.durable == node.current
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
        try enter("open", path, allocates: create && names[path] == nil)
        if readOnlyMedium { throw IOFailure("open", path, names[path] == nil && !create ? ENOENT : EROFS) }
        if let node = names[path] {
            if exclusive { throw IOFailure("open", path, EEXIST) }
            return allocate(node, path)
        }
        guard create else { throw IOFailure("open", path, ENOENT) }
        guard directories[directoryOf(path)] != nil else { throw IOFailure("open", path, ENOENT) }
        guard directories[path] == nil else { throw IOFailure("open", path, create && exclusive ? EEXIST : EISDIR) }
        try mutate("create", path)
        nextInode += 1
        let node = Node(mode: mode, owner: userID, inode: nextInode)
        names[path] = node
        pendingNames.append([NameChange(name: path, entry: .file(node))])
        return allocate(node, path)
    }

    private func allocate(_ node: Node, _ path: String) -> Int32 {
        let fd = nextFD
        nextFD += 1
        descriptors[fd] = node
        descriptorPaths[fd] = path
        return fd
    }

    package func openReadOnly(_ path: String) throws -> Int32 {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("open", path)
        guard let node = names[path] else { throw IOFailure("open", path, ENOENT) }
        return allocate(node, path)
    }

    /// The paths of the descriptors open now, one entry per descriptor.
    package var openPaths: [String] {
        mutex.lock(); defer { mutex.unlock() }
        return Array(descriptorPaths.values)
    }

    package func close(_ fd: Int32) {
        mutex.lock(); defer { mutex.unlock() }
        descriptors[fd] = nil
        descriptorPaths[fd] = nil
    }

    private func node(_ fd: Int32) throws -> Node {
        try live()
        guard let n = descriptors[fd] else { throw IOFailure("fd", "\(fd)", EBADF) }
        return n
    }

    package func size(_ fd: Int32) throws -> UInt64 {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try enter("fstat", pathOf(fd))
        return UInt64(n.current.count)
    }

    /// The stamp is the count of every mutation of this file system: coarser than a ctime
    /// (any change anywhere moves it), never finer.
    package func status(_ fd: Int32) throws -> FileStatus? {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try enter("fstat", pathOf(fd))
        return FileStatus(
            size: UInt64(n.current.count), links: names.values.reduce(0) { $0 + ($1 === n ? 1 : 0) },
            changeStamp: UInt64(mutations))
    }

    package func identity(_ fd: Int32) throws -> FileIdentity {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try enter("fstat", pathOf(fd))
        return FileIdentity(device: 1, inode: n.inode)
    }

    package func identity(path: String) throws -> FileIdentity? {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("stat", path)
        if let n = names[path] { return FileIdentity(device: 1, inode: n.inode) }
        if directories[path] != nil { return FileIdentity(device: 1, inode: 0) }
        return nil
    }

    package func read(_ fd: Int32, offset: UInt64, count: Int) throws -> [UInt8] {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try enter("read", pathOf(fd))
        let start = min(Int(offset), n.current.count)
        return Array(n.current[start..<min(start + count, n.current.count)])
    }

    package func write(_ fd: Int32, offset: UInt64, _ bytes: [UInt8]) throws {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        let fault = try enter("write", pathOf(fd), allocates: true, bytes: bytes.count)
        try mutate("write", "fd \(fd)")
        if case .shortWrite(let e, let kept)? = fault {
            place(n, offset: Int(offset), bytes[0..<min(max(kept ?? bytes.count / 2, 1), bytes.count - 1)])
            throw IOFailure("write", pathOf(fd), e)
        }
        place(n, offset: Int(offset), bytes[...])
    }

    private func place(_ n: Node, offset o: Int, _ bytes: ArraySlice<UInt8>) {
        n.dirty.append(min(o, n.current.count)..<o + bytes.count)
        if n.current.count < o { n.current.append(contentsOf: repeatElement(0, count: o - n.current.count)) }
        let overlap = min(bytes.count, n.current.count - o)
        if overlap > 0 { n.current.replaceSubrange(o..<o + overlap, with: bytes.prefix(overlap)) }
        n.current.append(contentsOf: bytes.dropFirst(overlap))
    }

    package func sync(_ fd: Int32) throws {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try enter("fsync", pathOf(fd), allocates: true)
        try mutate("fsync", "fd \(fd)")
        n.durable = n.current
        n.dirty = []
    }

    package func truncate(_ fd: Int32, to size: UInt64) throws {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try enter("ftruncate", pathOf(fd), allocates: true)
        try mutate("ftruncate", "fd \(fd)")
        let old = n.current.count
        if n.current.count > Int(size) {
            n.current.removeSubrange(Int(size)...)
        } else {
            n.current.append(contentsOf: repeatElement(0, count: Int(size) - n.current.count))
        }
        if old != Int(size) { n.dirty.append(min(old, Int(size))..<max(old, Int(size))) }
    }

    package func rename(_ from: String, _ to: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("rename", from, allocates: true)
        guard let n = names[from] else { throw IOFailure("rename", from, ENOENT) }
        try mutate("rename", from)
        names[from] = nil
        names[to] = n
        pendingNames.append([NameChange(name: from, entry: .file(nil)), NameChange(name: to, entry: .file(n))])
    }

    /// As a file system without RENAME_NOREPLACE: link, then unlink (`moveByLinking`), each a
    /// call of its own for `callPlan` and `plan`.
    package func renameNoReplace(_ from: String, _ to: String) throws {
        try moveByLinking(from, to)
    }

    package func link(_ from: String, _ to: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("link", to, allocates: true)
        guard let n = names[from] else { throw IOFailure("link", from, ENOENT) }
        guard names[to] == nil, directories[to] == nil else { throw IOFailure("link", from, EEXIST) }
        guard directories[directoryOf(to)] != nil else { throw IOFailure("link", from, ENOENT) }
        try mutate("link", to)
        names[to] = n
        pendingNames.append([NameChange(name: to, entry: .file(n))])
    }

    package func syncDirectory(_ path: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("fsync", path, allocates: true)
        try mutate("fsync", path)
        // Every pending change of a name in this directory becomes durable, in order.
        var remaining: [[NameChange]] = []
        for change in pendingNames {
            var rest: [NameChange] = []
            for entry in change {
                guard directoryOf(entry.name) == path else { rest.append(entry); continue }
                switch entry.entry {
                case .file(let node): durableNames[entry.name] = node
                case .directory(let dir): durableDirectories[entry.name] = dir
                }
            }
            if !rest.isEmpty { remaining.append(rest) }
        }
        pendingNames = remaining
    }

    package func lock(_ fd: Int32) throws {
        mutex.lock(); defer { mutex.unlock() }
        _ = try node(fd)
        try enter("flock", pathOf(fd))
    }
    package func unlock(_ fd: Int32) {}

    package func remove(_ path: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("unlink", path)
        guard names[path] != nil else { return }
        try mutate("unlink", path)
        names[path] = nil
        pendingNames.append([NameChange(name: path, entry: .file(nil))])
    }

    package func removeDirectory(_ path: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("rmdir", path)
        guard directories[path] != nil else { return }
        let prefix = path + "/"
        guard !names.keys.contains(where: { $0.hasPrefix(prefix) }),
            !directories.keys.contains(where: { $0.hasPrefix(prefix) })
        else {
            throw IOFailure("rmdir", path, ENOTEMPTY)
        }
        try mutate("rmdir", path)
        directories[path] = nil
        pendingNames.append([NameChange(name: path, entry: .directory(nil))])
    }

    package func permissions(_ path: String) throws -> UInt32? {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("stat", path)
        if let n = names[path] { return n.mode }
        return directories[path]?.mode
    }

    package func createDirectory(_ path: String, mode: UInt32) throws -> Bool {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        let exists = names[path] != nil || directories[path] != nil
        try enter("mkdir", path, allocates: !exists)
        if exists { return false }
        guard directories[directoryOf(path)] != nil else { throw IOFailure("mkdir", path, ENOENT) }
        try mutate("mkdir", path)
        let dir = Directory(mode: mode, owner: userID)
        directories[path] = dir
        pendingNames.append([NameChange(name: path, entry: .directory(dir))])
        return true
    }

    package func openNoFollow(_ path: String, writable: Bool, create: Bool, mode: UInt32) throws -> Int32 {
        if create || writable { return try open(path, create: create, exclusive: create, mode: mode) }
        return try openReadOnly(path)
    }

    package func ownership(path: String) throws -> FileOwnership? {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("lstat", path)
        if let n = names[path] { return FileOwnership(kind: .regular, owner: n.owner, mode: n.mode) }
        if let d = directories[path] { return FileOwnership(kind: .directory, owner: d.owner, mode: d.mode) }
        return nil
    }

    package func ownership(_ fd: Int32) throws -> FileOwnership {
        mutex.lock(); defer { mutex.unlock() }
        let n = try node(fd)
        try enter("fstat", pathOf(fd))
        return FileOwnership(kind: .regular, owner: n.owner, mode: n.mode)
    }

    package func resolvedPath(_ path: String) throws -> String {
        mutex.lock(); defer { mutex.unlock() }
        try live()
        try enter("realpath", path)
        guard names[path] != nil || directories[path] != nil else { throw IOFailure("realpath", path, ENOENT) }
        return path
    }
}

// MARK: - Power-loss states

extension MemoryFileSystem {
    /// What a power cut may keep, for `crashStates`.
    ///
    /// The model: every byte that was fsync'd is kept. Of each file's blocks (`blockSize`
    /// bytes, aligned) written or truncated since its last fsync, any subset is kept and the
    /// others hold what they held at that fsync — zeros past the old end, so a later block
    /// can be kept while an earlier one is a hole. A file's size is its size at its last
    /// fsync, or the end of any block written since (clipped to its size now), or its size
    /// now: file systems that write metadata back in its own time (ext4 without
    /// data=ordered, XFS) can keep the larger size without the data. A file truncated
    /// shorter since its last fsync has its old size or its new one. Name changes (create,
    /// rename, link, unlink, mkdir, rmdir) not yet made durable by an fsync of their directory
    /// are kept as a prefix, in the order they were made: file systems journal metadata in
    /// order. A name whose directory (or any directory above it) is not kept is gone. The
    /// first state, no pending name change and no unsynced byte kept, is `rebooted()`.
    package struct CrashModel: Sendable {
        package var blockSize: Int
        /// At most this many states; all of them when there are no more.
        package var limit: Int
        /// Seeds the sample taken when there are more.
        package var seed: UInt64

        package init(blockSize: Int, limit: Int, seed: UInt64 = 0x4C4B_4331) {
            self.blockSize = blockSize
            self.limit = limit
            self.seed = seed
        }
    }

    /// Every file system a power cut now could leave at the next boot, as `model` describes,
    /// or a sample of `model.limit` of them (fixed seed): the extremes (everything since the
    /// last fsync lost, everything kept), then each prefix of the blocks written (a torn
    /// tail), each set of them missing one block (a hole), and random subsets. No two states
    /// returned are the same.
    package func crashStates(_ model: CrashModel) -> [MemoryFileSystem] {
        mutex.lock(); defer { mutex.unlock() }
        var rng = SplitMix(seed: model.seed)
        // Each prefix of the pending name changes: the directories and the files it leaves
        // (a file whose directory is not there is gone).
        var nameStates: [[String: Node]] = []
        var directoryStates: [[String: Directory]] = []
        var named = durableNames
        var dirs = durableDirectories
        func record() {
            let kept = Self.surviving(named, dirs)
            nameStates.append(kept.files)
            directoryStates.append(kept.directories)
        }
        record()
        for change in pendingNames {
            for entry in change {
                switch entry.entry {
                case .file(let node): named[entry.name] = node
                case .directory(let dir): dirs[entry.name] = dir
                }
            }
            record()
        }
        var seen = Set<ObjectIdentifier>()
        var nodes: [Node] = []
        for state in nameStates {
            for node in state.values.sorted(by: { $0.inode < $1.inode })
            where seen.insert(ObjectIdentifier(node)).inserted {
                nodes.append(node)
            }
        }
        let variants = nodes.map { Self.variants(of: $0, blockSize: model.blockSize, limit: model.limit, rng: &rng) }
        let radices = [nameStates.count] + variants.map(\.count)
        var total = 1
        for r in radices { total = total.multipliedReportingOverflow(by: r).overflow ? Int.max : total * r }

        var choices: [[Int]] = []
        if total <= model.limit {
            var c = [Int](repeating: 0, count: radices.count)
            for _ in 0..<total {
                choices.append(c)
                for i in c.indices {
                    c[i] += 1
                    if c[i] < radices[i] { break }
                    c[i] = 0
                }
            }
        } else {
            var picked = Set<[Int]>()
            for i in 0..<(radices.max() ?? 1) {
                let c = radices.map { min(i, $0 - 1) }
                if picked.insert(c).inserted { choices.append(c) }
            }
            var misses = 0
            while choices.count < model.limit && misses < 8 * model.limit {
                let c = radices.map { Int(rng.next() % UInt64($0)) }
                if picked.insert(c).inserted { choices.append(c) } else { misses += 1 }
            }
        }

        var out: [MemoryFileSystem] = []
        var fingerprints = Set<Int>()
        let index = Dictionary(
            uniqueKeysWithValues: nodes.enumerated().map { (ObjectIdentifier($0.element), $0.offset) })
        for c in choices {
            if out.count >= model.limit { break }
            let fs = MemoryFileSystem()
            fs.userID = userID
            var copies: [ObjectIdentifier: Node] = [:]
            var hasher = Hasher()
            for (name, node) in nameStates[c[0]].sorted(by: { $0.key < $1.key }) {
                let id = ObjectIdentifier(node)
                let copy =
                    copies[id]
                    ?? {
                        let i = index[id]!
                        let n = Node(mode: node.mode, owner: node.owner, inode: node.inode)
                        let bytes = Self.materialize(node, variants[i][c[i + 1]], blockSize: model.blockSize)
                        n.current = bytes
                        n.durable = bytes
                        return n
                    }()
                copies[id] = copy
                hasher.combine(name)
                hasher.combine(copy.inode)
                hasher.combine(copy.current)
                fs.names[name] = copy
                fs.durableNames[name] = copy
            }
            hasher.combine(directoryStates[c[0]].keys.sorted())
            guard fingerprints.insert(hasher.finalize()).inserted else { continue }
            fs.directories = directoryStates[c[0]].mapValues { $0.copy() }
            fs.durableDirectories = fs.directories
            fs.nextInode = nextInode
            out.append(fs)
        }
        return out
    }

    /// Which blocks written since the last fsync survive, and the size the file has.
    private struct Variant {
        var kept: [Int]
        var size: Int
    }

    private static func variants(of node: Node, blockSize b: Int, limit: Int, rng: inout SplitMix) -> [Variant] {
        let d = node.durable.count, c = node.current.count
        var blocks = Set<Int>()
        for r in node.dirty where !r.isEmpty {
            for i in (r.lowerBound / b)...((r.upperBound - 1) / b) where i * b < max(c, d) { blocks.insert(i) }
        }
        let dirty = blocks.sorted()
        guard !dirty.isEmpty else { return [Variant(kept: [], size: d)] }
        var sizes: [Int] = [d]
        if c >= d {
            for i in dirty where min(c, (i + 1) * b) > d && min(c, (i + 1) * b) != sizes.last {
                sizes.append(min(c, (i + 1) * b))
            }
        } else {
            sizes.append(c)
        }
        if dirty.count <= 12, (1 << dirty.count) * sizes.count <= limit {
            var out: [Variant] = []
            for mask in 0..<(1 << dirty.count) {
                let kept = dirty.enumerated().filter { mask >> $0.offset & 1 == 1 }.map(\.element)
                for s in sizes { out.append(Variant(kept: kept, size: s)) }
            }
            return out
        }
        func end(_ i: Int) -> Int { c >= d ? min(c, (i + 1) * b) : c }
        var out = [Variant(kept: [], size: d), Variant(kept: dirty, size: c), Variant(kept: [dirty.last!], size: c)]
        // Torn tails and holes at evenly spaced positions, then random subsets.
        let positions = min(dirty.count, max(1, limit / 4))
        for k in 0..<positions {
            let j = positions == 1 ? dirty.count - 1 : k * (dirty.count - 1) / (positions - 1)
            out.append(Variant(kept: Array(dirty[...j]), size: end(dirty[j])))
            var holed = dirty
            holed.remove(at: j)
            out.append(Variant(kept: holed, size: c))
        }
        while out.count < limit {
            let kept = dirty.filter { _ in rng.next() & 1 == 1 }
            out.append(Variant(kept: kept, size: sizes[Int(rng.next() % UInt64(sizes.count))]))
        }
        return out
    }

    private static func materialize(_ node: Node, _ v: Variant, blockSize b: Int) -> [UInt8] {
        let d = node.durable.count, c = node.current.count
        var out = [UInt8](repeating: 0, count: v.size)
        let old = min(d, v.size)
        if old > 0 { out.replaceSubrange(0..<old, with: node.durable[0..<old]) }
        for i in v.kept {
            let lo = i * b, hi = min((i + 1) * b, v.size)
            guard lo < hi else { continue }
            let fromCurrent = min(hi, c)
            if lo < fromCurrent { out.replaceSubrange(lo..<fromCurrent, with: node.current[lo..<fromCurrent]) }
            // Past the end of the file now: the page was zeroed when the file was cut shorter.
            if max(lo, c) < hi { out.replaceSubrange(max(lo, c)..<hi, with: repeatElement(0, count: hi - max(lo, c))) }
        }
        return out
    }
}

/// A small seeded generator (SplitMix64): a test's random steps, and this file's sample of
/// power-loss states, are the same every run, so a failure repeats.
public struct SplitMix: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
