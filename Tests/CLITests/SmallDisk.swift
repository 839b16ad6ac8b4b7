import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A real, small file system for one test: a tmpfs mounted on a new directory, unmounted and
/// removed by `unmount()`. Mounting needs root (CAP_SYS_ADMIN); `unavailable` says why it
/// cannot be done on this machine, and the tests that need it are skipped with that reason.
final class SmallDisk {
    let mountPoint: String
    private var mounted = false

    /// Why no tmpfs can be mounted here (nil: it can).
    static let unavailable: String? = {
        guard getuid() == 0 else {
            return
                "mounting a tmpfs needs root, and the tests run as uid \(getuid()); run them as root (e.g. in a container) to include the real disk-full and read-only tests"
        }
        do {
            let probe = try SmallDisk(size: "16k")
            probe.unmount()
            return nil
        } catch {
            return "mount -t tmpfs failed (\(error)); the container may lack CAP_SYS_ADMIN"
        }
    }()

    static var available: Bool { unavailable == nil }

    /// Mounts a tmpfs of `size` (mount(8) syntax: 64k) on a new directory under /tmp.
    init(size: String) throws {
        mountPoint = "/tmp/latchkey-disk-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        do {
            try SmallDisk.mount(["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", mountPoint])
            mounted = true
        } catch {
            try? FileManager.default.removeItem(atPath: mountPoint)
            throw error
        }
    }

    deinit { unmount() }

    func path(_ name: String) -> String { mountPoint + "/" + name }

    /// Remounts read-only, or back read-write.
    func remount(readOnly: Bool) throws {
        try SmallDisk.mount(["-o", readOnly ? "remount,ro" : "remount,rw", mountPoint])
    }

    func unmount() {
        if mounted {
            _ = try? SmallDisk.run("/usr/bin/umount", ["-l", mountPoint])
            mounted = false
        }
        try? FileManager.default.removeItem(atPath: mountPoint)
    }

    /// Fills the file system with `name` until a write fails with ENOSPC, to the last byte.
    /// Returns the bytes written.
    @discardableResult
    func fill(_ name: String = "filler") throws -> Int {
        let fd = open(path(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLITestError("cannot create \(path(name)): errno \(errno)") }
        defer { close(fd) }
        var total = 0
        for chunk in [4096, 1] {
            let bytes = [UInt8](repeating: 0xEE, count: chunk)
            while true {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, chunk) }
                if n > 0 { total += n; continue }
                guard n < 0, errno == ENOSPC else { throw CLITestError("filling \(mountPoint): errno \(errno)") }
                break
            }
        }
        return total
    }

    /// Frees what `fill` took.
    func free(_ name: String = "filler") throws {
        try FileManager.default.removeItem(atPath: path(name))
    }

    /// The names in the file system's root.
    func list() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: mountPoint)) ?? []).sorted() }

    private static func mount(_ args: [String]) throws { try run("/usr/bin/mount", args) }

    private static func run(_ tool: String, _ args: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = args
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw CLITestError("\(tool) \(args.joined(separator: " ")): exit \(process.terminationStatus): \(text)")
        }
    }
}
