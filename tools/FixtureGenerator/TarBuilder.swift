/// A second, independent writer of the tar container (POSIX ustar headers): the fixtures need
/// entries no honest writer makes (links, devices, paths outside the archive, sizes that lie,
/// extension headers, a broken end-of-archive marker), and bytes that do not depend on
/// libarchive's version.
struct TarBuilder {
    /// The type flag (header byte 156).
    enum Kind: UInt8 {
        case regular = 0x30  // '0'
        case symlink = 0x32  // '2'
        case characterDevice = 0x33  // '3'
        case directory = 0x35  // '5'
        case contiguous = 0x37  // '7'
        case paxExtended = 0x78  // 'x'
        case paxGlobal = 0x67  // 'g'
        case gnuLongName = 0x4C  // 'L'
        case gnuLongLink = 0x4B  // 'K'

        /// Entries whose data follows their header.
        var hasData: Bool { ![.symlink, .characterDevice, .directory].contains(self) }
    }

    /// Ways a header may depart from the subset of spec/BACKUP.md §2.1, one per fixture.
    struct Quirks {
        /// Puts this in the ustar prefix field (bytes 345–499).
        var prefix = ""
        /// Writes the size in GNU base-256 form instead of octal digits.
        var base256Size = false
        /// Writes the GNU magic `"ustar  \0"` instead of POSIX `"ustar\0"` `"00"`.
        var gnuMagic = false
        /// Fills the padding after the data with this byte instead of zeros.
        var paddingByte: UInt8 = 0
        /// Another mode than 0600 (a value no backup header holds, spec/BACKUP.md §2.1 rule 6).
        var mode: UInt64?
        /// Another modification time than the builder's.
        var mtime: UInt64?
        /// Bytes put after the NUL that ends the name, inside the name field.
        var afterName: [UInt8] = []
        /// Puts this in the user name field (bytes 265–296).
        var userName = ""
    }

    private(set) var bytes: [UInt8] = []
    /// Modification time of every entry (Unix seconds).
    let mtime: UInt64

    init(mtime: UInt64) { self.mtime = mtime }

    /// Offset of the next header.
    var count: Int { bytes.count }

    /// Appends an entry. `declaredSize` makes the header claim another size than `data` has.
    mutating func add(
        _ name: String, _ data: [UInt8], kind: Kind = .regular, linkTarget: String = "", declaredSize: UInt64? = nil,
        quirks: Quirks = Quirks()
    ) {
        var h = [UInt8](repeating: 0, count: 512)
        func put(_ offset: Int, _ text: String) {
            let b = Array(text.utf8)
            precondition(b.count <= 155)
            h.replaceSubrange(offset..<offset + b.count, with: b)
        }
        func octal(_ offset: Int, _ width: Int, _ value: UInt64) {
            let digits = String(value, radix: 8)
            put(offset, String(repeating: "0", count: width - 1 - digits.count) + digits)  // NUL-terminated
        }
        precondition(name.utf8.count + (quirks.afterName.isEmpty ? 0 : 1 + quirks.afterName.count) <= 100)
        put(0, name)
        h.replaceSubrange(name.utf8.count + 1..<name.utf8.count + 1 + quirks.afterName.count, with: quirks.afterName)
        octal(100, 8, quirks.mode ?? (kind == .directory ? 0o700 : 0o600))
        octal(108, 8, 0)
        octal(116, 8, 0)
        let size = declaredSize ?? UInt64(kind.hasData ? data.count : 0)
        if quirks.base256Size {
            h[124] = 0x80
            for i in 0..<8 { h[135 - i] = UInt8(truncatingIfNeeded: size >> (8 * UInt64(i))) }
        } else {
            octal(124, 12, size)
        }
        octal(136, 12, quirks.mtime ?? mtime)
        h[156] = kind.rawValue
        put(157, linkTarget)
        if quirks.gnuMagic {
            put(257, "ustar  ")
        } else {
            put(257, "ustar")
            put(263, "00")
        }
        if kind == .characterDevice {
            octal(329, 8, 1)  // /dev/null: major 1, minor 3
            octal(337, 8, 3)
        }
        if !quirks.userName.isEmpty { put(265, quirks.userName) }
        if !quirks.prefix.isEmpty { put(345, quirks.prefix) }
        // Checksum: the header's bytes summed with the checksum field taken as spaces.
        for i in 148..<156 { h[i] = 0x20 }
        let sum = h.reduce(0) { $0 + UInt64($1) }
        let digits = String(sum, radix: 8)
        put(148, String(repeating: "0", count: 6 - digits.count) + digits)
        h[154] = 0
        h[155] = 0x20
        bytes += h
        if kind.hasData {
            bytes += data
            bytes += [UInt8](repeating: quirks.paddingByte, count: (512 - data.count % 512) % 512)
        }
    }

    /// The end-of-archive marker: two zero blocks (or as many as a fixture wants).
    mutating func end(zeroBlocks: Int = 2) { bytes += [UInt8](repeating: 0, count: 512 * zeroBlocks) }

    /// Bytes after everything else.
    mutating func append(_ raw: [UInt8]) { bytes += raw }

    /// The records of a pax extended header (`x` or `g`): "<length> <key>=<value>\n" each,
    /// the length counting the whole record (POSIX.1-2001, pax).
    static func paxRecords(_ pairs: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (key, value) in pairs {
            let body = " \(key)=\(value)\n"
            var length = body.utf8.count + 1
            while String(length).utf8.count + body.utf8.count != length { length += 1 }
            out += Array("\(length)\(body)".utf8)
        }
        return out
    }
}
