import LatchkeyFormat

/// The tar subset of a backup (spec/BACKUP.md §2.1), checked on the decompressed bytes in the
/// order libarchive's tar reader reads them. libarchive is lenient where the subset is strict:
/// it applies pax `x`/`g` and GNU `L`/`K` headers to the next entry (so a pax `path=` renames
/// it), joins the ustar prefix to the name, reads base-256 sizes, GNU and pre-POSIX headers,
/// maps contiguous files (`7`) to regular ones, and stops at the first zero block whatever
/// follows. This checker walks the same blocks itself and refuses all of that, so that the
/// answer never depends on the tar library (and `ArchiveReader` compares the entries the two
/// find).
struct TarSubset {
    /// Why the bytes are not a backup's tar stream.
    enum Problem: Error {
        /// The stream does not begin with a POSIX ustar header: not a Latchkey backup at all.
        case notUstar(String)
        /// A ustar archive that breaks the subset, or is damaged or cut short.
        case damaged(String)
    }

    /// An entry as its header states it.
    struct Entry: Equatable {
        var name: String
        var size: Int64
        /// The modification time field's value, which must be the backup's creation time:
        /// checked once the keybag entry has given it (§2.1 rule 6).
        var mtime: Int64
        /// Offset of its header in the decompressed stream.
        var offset: Int64
    }

    static let block = 512

    private(set) var entries: [Entry] = []
    /// Bytes of the decompressed stream checked so far.
    private(set) var position: Int64 = 0

    private enum State {
        /// Collecting a 512-byte header block (or the first zero block of the end marker).
        case header
        /// Inside an entry's data.
        case data(remaining: Int64)
        /// The zero padding after an entry's data, up to the next 512-byte boundary.
        case padding(remaining: Int)
        /// After the first zero block: only zero bytes may follow.
        case end
    }

    private var state = State.header
    private var pending: [UInt8] = []
    /// Zero bytes from the start of the end-of-archive marker.
    private var zeroBytes: Int64 = 0

    /// How many bytes of the stream may be handed on before the next structural boundary (the
    /// end of a header block, of an entry's data or of its padding): the tar reader is given no
    /// more, so that a block is checked only when it is about to be read, and a defect is
    /// reported in the order the entries come.
    var bytesToBoundary: Int {
        switch state {
        case .header: return TarSubset.block - pending.count
        case .data(let remaining): return Int(min(remaining, Int64(Int.max)))
        case .padding(let remaining): return remaining
        case .end: return Int.max
        }
    }

    /// Checks the next bytes of the stream.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws {
        var i = 0
        while i < bytes.count {
            switch state {
            case .header:
                let take = min(TarSubset.block - pending.count, bytes.count - i)
                pending.append(contentsOf: bytes[i..<i + take])
                i += take
                position += Int64(take)
                if pending.count == TarSubset.block {
                    let start = position - Int64(TarSubset.block)
                    if pending.allSatisfy({ $0 == 0 }) {
                        if entries.isEmpty { throw Problem.notUstar("its first block is zero: it holds no entry") }
                        state = .end
                        zeroBytes = Int64(TarSubset.block)
                    } else {
                        let entry = try TarSubset.header(pending, at: start, index: entries.count)
                        entries.append(entry)
                        state = entry.size > 0 ? .data(remaining: entry.size) : .header
                    }
                    pending.removeAll(keepingCapacity: true)
                }
            case .data(let remaining):
                let take = Int(min(remaining, Int64(bytes.count - i)))
                i += take
                position += Int64(take)
                if Int64(take) == remaining {
                    let pad = (TarSubset.block - Int(entries.last!.size % Int64(TarSubset.block))) % TarSubset.block
                    state = pad > 0 ? .padding(remaining: pad) : .header
                } else {
                    state = .data(remaining: remaining - Int64(take))
                }
            case .padding(let remaining):
                let take = min(remaining, bytes.count - i)
                if let bad = bytes[i..<i + take].firstIndex(where: { $0 != 0 }) {
                    throw Problem.damaged(
                        "the padding after the data of \(entries.last!.name) holds a byte that is not zero (at byte \(position + Int64(bad - i)) of the tar stream); bytes outside every entry are refused"
                    )
                }
                i += take
                position += Int64(take)
                state = take == remaining ? .header : .padding(remaining: remaining - take)
            case .end:
                if let bad = bytes[i...].firstIndex(where: { $0 != 0 }) {
                    throw Problem.damaged(
                        "bytes that are not zero follow the end-of-archive marker (at byte \(position + Int64(bad - i)) of the tar stream)"
                    )
                }
                zeroBytes += Int64(bytes.count - i)
                position += Int64(bytes.count - i)
                i = bytes.count
            }
        }
    }

    /// Called at the end of the decompressed stream: it must end after the end-of-archive
    /// marker (at least two zero blocks) on a block boundary.
    func finish() throws {
        switch state {
        case .end:
            guard zeroBytes >= 2 * Int64(TarSubset.block) else {
                throw Problem.damaged(
                    "the tar stream ends after one zero block: the end-of-archive marker is two (the archive is truncated)"
                )
            }
            guard zeroBytes % Int64(TarSubset.block) == 0 else {
                throw Problem.damaged(
                    "the tar stream ends \(zeroBytes % Int64(TarSubset.block)) bytes into a block (it is not a whole number of 512-byte blocks)"
                )
            }
        case .header where pending.isEmpty:
            if position == 0 { throw Problem.notUstar("it is empty") }
            throw Problem.damaged(
                "the tar stream ends without its end-of-archive marker (two zero blocks): it is truncated")
        case .header:
            throw Problem.damaged("the tar stream ends inside a header block (truncated)")
        case .data, .padding:
            throw Problem.damaged("the tar stream ends inside \(entries.last!.name) (truncated)")
        }
    }

    // MARK: One header

    /// Checks one header block against §2.1 and returns the entry it describes.
    static func header(_ h: [UInt8], at offset: Int64, index: Int) throws -> Entry {
        let which = index == 0 ? "the first tar header" : "the tar header at byte \(offset)"
        guard Array(h[257..<263]) == ustarMagic, Array(h[263..<265]) == ustarVersion else {
            let kind = Array(h[257..<265]) == gnuMagic ? "a GNU tar header" : "not a POSIX ustar header"
            if index == 0 { throw Problem.notUstar("its first block is \(kind)") }
            throw Problem.damaged("\(which) is \(kind); a backup holds ustar headers only")
        }
        guard let stored = octal(h[148..<156]) else {
            throw Problem.damaged("\(which) has a checksum field that is not octal (damaged)")
        }
        var sum: Int64 = 0
        for (i, b) in h.enumerated() { sum += (148..<156).contains(i) ? 0x20 : Int64(b) }
        guard stored == sum else { throw Problem.damaged("\(which) fails its checksum (damaged)") }

        let type = h[156]
        guard type == 0x30 || type == 0 else {
            throw Problem.damaged(
                "\(which) has type \(typeName(type)); a backup holds only regular files (type 0), without extension headers"
            )
        }
        let nameField = h[0..<100]
        let nameBytes = Array(nameField.prefix { $0 != 0 })
        guard !nameBytes.isEmpty, nameBytes.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            throw Problem.damaged("\(which) has an empty name or one that is not printable ASCII")
        }
        guard h[345..<500].allSatisfy({ $0 == 0 }) else {
            throw Problem.damaged("\(which) uses the ustar prefix field; a backup's names fit the name field alone")
        }
        guard h[124] & 0x80 == 0, let size = octal(h[124..<136]) else {
            throw Problem.damaged("\(which) has a size that is not octal digits (base-256 or damaged)")
        }
        // A first header that names another entry is a foreign file (§2.1 (b)), whatever its
        // other fields hold: the backup reader says so rather than calling it damaged.
        if index > 0 || nameBytes.elementsEqual(BackupConstants.keybagName.utf8) { try fixedFields(h, which: which) }
        guard let mtime = octal(h[136..<148]) else {
            throw Problem.damaged(
                "\(which) has a modification time that is not octal digits; a backup's tar headers hold fixed values (spec/BACKUP.md §2.1 rule 6)"
            )
        }
        return Entry(name: String(decoding: nameBytes, as: UTF8.self), size: size, mtime: mtime, offset: offset)
    }

    /// §2.1 rule 6: every field no reader needs holds the one value a writer writes, so that no
    /// byte outside the manifest's hashes carries anything (a mode with set-user-ID bits, an
    /// owner, a link target, text hidden after a name's NUL). The octal fields may be spelled
    /// as rule 4 allows; their values are fixed.
    static func fixedFields(_ h: [UInt8], which: String) throws {
        func refuse(_ what: String) -> Problem {
            .damaged(
                "\(which) has \(what); a backup's tar headers hold fixed values (spec/BACKUP.md §2.1 rule 6), so it was altered after it was written"
            )
        }
        let nameEnd = h[0..<100].firstIndex(of: 0) ?? 100
        guard h[nameEnd..<100].allSatisfy({ $0 == 0 }) else {
            throw refuse("bytes that are not NUL after the NUL that ends its name")
        }
        guard octal(h[100..<108]) == 0o600 else { throw refuse("a mode other than 0600") }
        guard octal(h[108..<116]) == 0, octal(h[116..<124]) == 0 else { throw refuse("an owner or group other than 0") }
        guard h[157..<257].allSatisfy({ $0 == 0 }) else { throw refuse("a link name") }
        guard h[265..<329].allSatisfy({ $0 == 0 }) else { throw refuse("a user or group name") }
        for field in [h[329..<337], h[337..<345]] where !field.allSatisfy({ $0 == 0 }) && octal(field) != 0 {
            throw refuse("a device number other than 0")
        }
        guard h[500..<512].allSatisfy({ $0 == 0 }) else {
            throw refuse("bytes that are not zero after its prefix field (500-511)")
        }
    }

    static let ustarMagic: [UInt8] = Array("ustar".utf8) + [0]
    static let ustarVersion: [UInt8] = Array("00".utf8)
    static let gnuMagic: [UInt8] = Array("ustar  ".utf8) + [0]

    /// An octal field: optional leading spaces, at least one digit 0–7, then only NULs and
    /// spaces to the end of the field.
    static func octal(_ field: ArraySlice<UInt8>) -> Int64? {
        var i = field.startIndex
        while i < field.endIndex, field[i] == 0x20 { i += 1 }
        var value: Int64 = 0
        var digits = 0
        while i < field.endIndex, (0x30...0x37).contains(field[i]) {
            guard value < Int64.max >> 3 else { return nil }
            value = value << 3 | Int64(field[i] - 0x30)
            digits += 1
            i += 1
        }
        guard digits > 0, field[i...].allSatisfy({ $0 == 0 || $0 == 0x20 }) else { return nil }
        return value
    }

    static func typeName(_ t: UInt8) -> String {
        switch t {
        case UInt8(ascii: "x"): return "x (a pax extended header)"
        case UInt8(ascii: "g"): return "g (a pax global header)"
        case UInt8(ascii: "L"): return "L (a GNU long-name header)"
        case UInt8(ascii: "K"): return "K (a GNU long-link header)"
        case UInt8(ascii: "1"): return "1 (a hard link)"
        case UInt8(ascii: "2"): return "2 (a symbolic link)"
        case UInt8(ascii: "3"): return "3 (a character device)"
        case UInt8(ascii: "4"): return "4 (a block device)"
        case UInt8(ascii: "5"): return "5 (a directory)"
        case UInt8(ascii: "6"): return "6 (a FIFO)"
        case UInt8(ascii: "7"): return "7 (a contiguous file)"
        case 0x21...0x7e: return "\(Character(UnicodeScalar(t)))"
        default: return "0x" + String(t, radix: 16)
        }
    }
}
