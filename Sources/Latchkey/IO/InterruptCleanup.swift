#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LatchkeyCrypto

/// Files that a command must not leave behind when a signal (Ctrl-C, SIGTERM) ends it: the
/// temporary files of `backup` and `restore`. The library registers them while they exist;
/// the CLI's signal handler calls `removeAll()`.
///
/// `removeAll()` runs inside a signal handler, so it only reads memory that is never freed nor
/// rewritten once published, and calls unlink(2) and rmdir(2), which are async-signal-safe.
/// What it shares with the threads that register (the count of slots used, each slot's live
/// mark) is atomic: a slot's path is written before the count that publishes it.
/// Each registration takes a slot of its own for the life of the process (a path is never
/// replaced under a running handler); past `capacity` registrations, files are simply not
/// registered (a long-lived library user then keeps today's behaviour: nothing is removed).
package enum InterruptCleanup {
    package struct Token: Sendable {
        let slot: Int
    }

    static let capacity = 64
    /// The registered paths (C strings, never freed), their kind and whether they are live.
    nonisolated(unsafe) private static let paths = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(
        capacity: capacity)
    nonisolated(unsafe) private static let isDirectory = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
    private static let live = SignalSafeInt32(count: capacity)
    private static let used = SignalSafeInt32()
    private static let lock = Lock()

    /// Initializes the slots; call before installing a handler that uses `removeAll`, so that
    /// the handler never runs a lazy initializer.
    package static func prepare() {
        lock.lock(); defer { lock.unlock() }
        _ = initialized
    }

    private static let initialized: Bool = {
        paths.initialize(repeating: nil, count: capacity)
        isDirectory.initialize(repeating: 0, count: capacity)
        _ = live
        _ = used
        return true
    }()

    /// Removes `path` (an empty directory with `directory`) if a signal ends the process
    /// before `unregister`.
    @discardableResult
    package static func register(_ path: String, directory: Bool = false) -> Token? {
        lock.lock(); defer { lock.unlock() }
        _ = initialized
        let slot = Int(used.load())
        guard slot < capacity, let copy = strdup(path) else { return nil }
        paths[slot] = copy
        isDirectory[slot] = directory ? 1 : 0
        live.store(1, at: slot)
        used.store(Int32(slot + 1))  // publishes the slot (sequentially consistent)
        return Token(slot: slot)
    }

    /// `register`, for a path of `fs`: only the real file system's paths are registered (a
    /// MemoryFileSystem's names are not files a handler should unlink).
    @discardableResult
    package static func register(_ path: String, directory: Bool = false, on fs: FileSystem) -> Token? {
        guard fs is PosixFileSystem else { return nil }
        return register(path, directory: directory)
    }

    /// The file is no longer temporary (renamed into place) or already removed.
    package static func unregister(_ token: Token?) {
        guard let token else { return }
        lock.lock(); defer { lock.unlock() }
        live.store(0, at: token.slot)
    }

    /// Removes every registered path, the latest first (files before the directory that holds
    /// them). Async-signal-safe.
    package static func removeAll() {
        guard initialized else { return }
        var slot = min(Int(used.load()), capacity) - 1
        while slot >= 0 {
            if live.load(slot) != 0, let p = paths[slot] {
                if isDirectory[slot] != 0 { _ = rmdir(p) } else { _ = unlink(p) }
            }
            slot -= 1
        }
    }
}
