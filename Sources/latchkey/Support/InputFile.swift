#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Latchkey
import LatchkeyCrypto

/// Files the user names (--data-file, import FILE, --passcode-file, --entitlements, …), read
/// whole as a stream: read(2) until the end, never by size, mmap or seek, so a pipe works as
/// well as a file (`--passcode-file <(pass show x)`, `/dev/stdin`, a FIFO).
enum InputFile {
    /// All bytes of `path`.
    /// - Parameter source: where the path came from, for the message (`LATCHKEY_ENTITLEMENTS`).
    /// - Throws: errSecIO naming the file, the reason and what to check.
    static func contents(_ path: String, what: String, source: String? = nil) throws -> [UInt8] {
        try readWhole(path, what: what, source: source, zeroing: false)
    }

    /// All bytes of a file that holds a secret (a passcode, a backup password): as `contents`,
    /// and every buffer the bytes passed through on the way is zeroed.
    static func secret(_ path: String, what: String, source: String? = nil) throws -> [UInt8] {
        try readWhole(path, what: what, source: source, zeroing: true)
    }

    /// All bytes of an open descriptor (the pipe from a `--passcode-command`), zeroed as for
    /// `secret`. - Parameter what: how messages name the stream.
    static func secret(descriptor fd: Int32, what: String) throws -> [UInt8] {
        try readAll(fd, named: what, zeroing: true)
    }

    /// All bytes of stdin, to its end; `zeroing` as for `secret`.
    static func standardInput(what: String, zeroing: Bool) throws -> [UInt8] {
        try readAll(STDIN_FILENO, named: "\(what) from stdin", zeroing: zeroing)
    }

    /// `path` opened for reading, or stdin for `-` (then `owned` is false: not to be closed), and
    /// how messages name it ("KeePassXC export kp.csv", "… (stdin)").
    /// - Throws: errSecIO naming the file, the reason and what to check.
    static func opened(_ path: String, what: String) throws -> (fd: Int32, owned: Bool, named: String) {
        if path == "-" { return (STDIN_FILENO, false, "\(what) (stdin)") }
        return (try openFile(path, named: "\(what) \(path)"), true, "\(what) \(path)")
    }

    private static func openFile(_ path: String, named: String) throws -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw KeychainError(.io, "cannot read the \(named): \(reason); check the path and its permissions")
        }
        return fd
    }

    private static func readWhole(_ path: String, what: String, source: String?, zeroing: Bool) throws -> [UInt8] {
        let named = "\(what) \(path)" + (source.map { " (\($0))" } ?? "")
        let fd = try openFile(path, named: named)
        defer { close(fd) }
        return try readAll(fd, named: named, zeroing: zeroing)
    }

    private static func readAll(_ fd: Int32, named: String, zeroing: Bool) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: zeroing ? 4096 : 1 << 16)
        defer { if zeroing { Crypto.cleanse(&buffer) } }
        out.reserveCapacity(zeroing ? 4096 : 0)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 {
                let reason = String(cString: strerror(errno))
                if zeroing { Crypto.cleanse(&out) }
                throw KeychainError(
                    .io, "cannot read the \(named): \(reason); check that it is a readable file or pipe")
            }
            if n == 0 { return out }
            if zeroing, out.count + n > out.capacity {
                // Grow by hand, so that the old storage is zeroed rather than freed as it is.
                var larger: [UInt8] = []
                larger.reserveCapacity(2 * (out.count + n))
                larger.append(contentsOf: out)
                Crypto.cleanse(&out)
                out = larger
            }
            out.append(contentsOf: buffer[0..<n])
        }
    }
}
