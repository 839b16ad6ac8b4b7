#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Latchkey

/// The lines of a file or pipe, one at a time, read with read(2) in chunks of `chunkSize`
/// bytes: memory holds one chunk and the line being assembled, never the whole input, so
/// `import` of a million lines costs what one line does. A final line without a newline is
/// still a line; `\r` before a newline is left to the caller (JSON ignores it).
final class LineReader {
    private let fd: Int32
    private let ownsDescriptor: Bool
    private let named: String
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var atEOF = false
    /// The number of the line `next()` returned last (1-based).
    private(set) var lineNumber = 0
    static let chunkSize = 1 << 20

    /// Reads `path`, or stdin for `-`.
    /// - Throws: errSecIO naming the file, the reason and what to check.
    init(path: String, what: String) throws {
        (fd, ownsDescriptor, named) = try InputFile.opened(path, what: what)
        buffer = [UInt8](repeating: 0, count: LineReader.chunkSize)
    }

    deinit {
        // The lines may hold secrets (import's v_Data): leave none behind in freed memory.
        for i in buffer.indices { buffer[i] = 0 }
        if ownsDescriptor { close(fd) }
    }

    /// The next line without its newline, or nil at the end of the input.
    /// - Throws: errSecIO when reading fails.
    func next() throws -> [UInt8]? {
        var scanFrom = start
        while true {
            if let nl = buffer[scanFrom..<end].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<nl])
                start = nl + 1
                lineNumber += 1
                return line
            }
            if atEOF {
                guard start < end else { return nil }
                let line = Array(buffer[start..<end])
                start = end
                lineNumber += 1
                return line
            }
            // Keep the partial line at the front; grow only for a line longer than a chunk.
            let partial = end - start
            if start > 0 {
                buffer.withUnsafeMutableBytes { raw in
                    _ = memmove(raw.baseAddress!, raw.baseAddress! + start, partial)
                }
                start = 0
                end = partial
            }
            if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
            scanFrom = end
            let n = buffer.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress! + end, raw.count - end) }
            if n < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw KeychainError(
                    .io, "cannot read the \(named): \(reason); check that it is a readable file or pipe")
            }
            if n == 0 { atEOF = true } else { end += n }
        }
    }
}
