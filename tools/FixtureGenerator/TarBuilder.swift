/// A second, independent writer of the tar container (POSIX ustar headers, which every pax
/// reader reads): the fixtures need entries no honest writer makes (links, devices, paths
/// outside the archive, sizes that lie), and bytes that do not depend on libarchive's version.
struct TarBuilder {
    enum Kind: UInt8 {
        case regular = 0x30      // '0'
        case symlink = 0x32      // '2'
        case characterDevice = 0x33  // '3'
        case directory = 0x35    // '5'
    }

    private(set) var bytes: [UInt8] = []
    /// Modification time of every entry (Unix seconds).
    let mtime: UInt64

    init(mtime: UInt64) { self.mtime = mtime }

    /// Appends an entry. `declaredSize` makes the header claim another size than `data` has.
    mutating func add(_ name: String, _ data: [UInt8], kind: Kind = .regular, linkTarget: String = "", declaredSize: UInt64? = nil) {
        var h = [UInt8](repeating: 0, count: 512)
        func put(_ offset: Int, _ text: String) {
            let b = Array(text.utf8)
            precondition(b.count <= 155)
            h.replaceSubrange(offset..<offset + b.count, with: b)
        }
        func octal(_ offset: Int, _ width: Int, _ value: UInt64) {
            let digits = String(value, radix: 8)
            put(offset, String(repeating: "0", count: width - 1 - digits.count) + digits)   // NUL-terminated
        }
        precondition(name.utf8.count <= 100)
        put(0, name)
        octal(100, 8, kind == .directory ? 0o700 : 0o600)
        octal(108, 8, 0)
        octal(116, 8, 0)
        octal(124, 12, declaredSize ?? UInt64(kind == .regular ? data.count : 0))
        octal(136, 12, mtime)
        h[156] = kind.rawValue
        put(157, linkTarget)
        put(257, "ustar")
        put(263, "00")
        if kind == .characterDevice {
            octal(329, 8, 1)   // /dev/null: major 1, minor 3
            octal(337, 8, 3)
        }
        // Checksum: the header's bytes summed with the checksum field taken as spaces.
        for i in 148..<156 { h[i] = 0x20 }
        let sum = h.reduce(0) { $0 + UInt64($1) }
        let digits = String(sum, radix: 8)
        put(148, String(repeating: "0", count: 6 - digits.count) + digits)
        h[154] = 0
        h[155] = 0x20
        bytes += h
        if kind == .regular {
            bytes += data
            bytes += [UInt8](repeating: 0, count: (512 - data.count % 512) % 512)
        }
    }

    /// The two zero blocks that end an archive.
    mutating func end() { bytes += [UInt8](repeating: 0, count: 1024) }
}
