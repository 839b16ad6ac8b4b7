#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Latchkey
import LatchkeyCrypto

/// The bytes of a file or pipe, one at a time, read with read(2) in chunks: for the readers of
/// other password managers' exports (`CSVReader`, `XMLReader`), which must not hold the whole
/// file. It counts lines (LF) for messages. The chunk is zeroed when the stream is done with
/// it, as an export holds every password in clear.
final class ByteStream {
    private let fd: Int32
    private let ownsDescriptor: Bool
    /// How messages name the input ("KeePassXC export kp.csv").
    let named: String
    private var buffer: [UInt8]
    private var at = 0
    private var end = 0
    private var atEOF = false
    /// The line of the next byte (1-based).
    private(set) var line = 1
    static let chunkSize = 1 << 16

    /// Reads `path`, or stdin for `-`.
    /// - Throws: errSecIO naming the file, the reason and what to check.
    init(path: String, what: String) throws {
        (fd, ownsDescriptor, named) = try InputFile.opened(path, what: what)
        buffer = [UInt8](repeating: 0, count: ByteStream.chunkSize)
    }

    /// A stream over bytes already in memory (tests).
    init(bytes: [UInt8], what: String) {
        named = what
        fd = -1
        ownsDescriptor = false
        buffer = bytes
        end = bytes.count
        atEOF = true
    }

    deinit {
        Crypto.cleanse(&buffer)
        if ownsDescriptor { close(fd) }
    }

    /// The next byte without taking it; nil at the end.
    @inline(__always)
    func peek() throws -> UInt8? {
        if at < end { return buffer[at] }
        return try fill() ? buffer[at] : nil
    }

    /// The next byte; nil at the end.
    @inline(__always)
    func next() throws -> UInt8? {
        if at >= end, !(try fill()) { return nil }
        let b = buffer[at]
        at += 1
        if b == 0x0A { line += 1 }
        return b
    }

    /// Reads the next chunk; false at the end of the input.
    private func fill() throws -> Bool {
        while true {
            if atEOF { return false }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw KeychainError(
                    .io, "cannot read the \(named): \(reason); check that it is a readable file or pipe")
            }
            // The bytes already taken are overwritten by this read, so they leave memory too.
            at = 0
            end = n
            if n == 0 {
                atEOF = true
                return false
            }
            return true
        }
    }
}
