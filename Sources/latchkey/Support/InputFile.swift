#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Latchkey

/// Files the user names (--data-file, import FILE), read whole, with the reason when they cannot be.
enum InputFile {
    /// All bytes of `path`. - Throws: errSecIO naming the file, the reason and what to check.
    static func contents(_ path: String, what: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw KeychainError(.io, "cannot read the \(what) \(path) (\(reason)); check the path and its permissions")
        }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 {
                let reason = String(cString: strerror(errno))
                throw KeychainError(.io, "cannot read the \(what) \(path) (\(reason)); check that it is a readable file")
            }
            if n == 0 { return out }
            out.append(contentsOf: buffer[0..<n])
        }
    }
}
