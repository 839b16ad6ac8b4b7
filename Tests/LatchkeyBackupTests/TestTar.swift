import LatchkeyBackup

/// Builds tar streams for tests that forge or cut archives: POSIX ustar headers with the fixed
/// field values of spec/BACKUP.md §2.1 rule 6, in the form Latchkey's writer (libarchive)
/// gives them, then the end-of-archive marker.
enum TestTar {
    static func archive(_ entries: [(name: String, bytes: [UInt8])], mtime: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        for e in entries { out += entry(e.name, e.bytes, mtime: mtime) }
        return out + [UInt8](repeating: 0, count: 1024)
    }

    /// One header block, the data and its zero padding.
    static func entry(_ name: String, _ data: [UInt8], mtime: UInt64) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: 512)
        func put(_ offset: Int, _ bytes: [UInt8]) { h.replaceSubrange(offset..<offset + bytes.count, with: bytes) }
        func octal(_ offset: Int, _ digits: Int, _ value: UInt64, _ terminator: [UInt8]) {
            let text = String(value, radix: 8)
            put(offset, Array((String(repeating: "0", count: digits - text.count) + text).utf8) + terminator)
        }
        put(0, Array(name.utf8))
        octal(100, 6, 0o600, [0x20, 0])
        octal(108, 6, 0, [0x20, 0])
        octal(116, 6, 0, [0x20, 0])
        octal(124, 11, UInt64(data.count), [0x20])
        octal(136, 11, mtime, [0x20])
        h[156] = 0x30
        put(257, Array("ustar".utf8) + [0] + Array("00".utf8))
        octal(329, 6, 0, [0x20, 0])
        octal(337, 6, 0, [0x20, 0])
        put(148, [UInt8](repeating: 0x20, count: 8))
        octal(148, 6, UInt64(h.reduce(0) { $0 + Int($1) }), [0, 0x20])
        return h + data + [UInt8](repeating: 0, count: (512 - data.count % 512) % 512)
    }
}
