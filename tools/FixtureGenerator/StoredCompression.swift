/// gzip (RFC 1952) and zstd (RFC 8878) streams that store their input uncompressed: deflate
/// stored blocks, zstd raw blocks. Any decoder reads them, and their bytes depend on no
/// compression library, so the compressed backup fixtures stay the same on every machine.
enum StoredCompression {
    /// One gzip member: header (no name, mtime 0, OS unknown), stored deflate blocks of at most
    /// 65 535 bytes, CRC-32 and size.
    static func gzip(_ input: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF]
        var at = 0
        repeat {
            let n = min(65_535, input.count - at)
            let final = at + n == input.count
            out.append(final ? 0x01 : 0x00)  // BFINAL, BTYPE 00 (stored), then to the byte boundary
            out += le16(UInt16(n)) + le16(~UInt16(n))
            out += input[at..<at + n]
            at += n
        } while at < input.count
        out += le32(crc32(input)) + le32(UInt32(truncatingIfNeeded: input.count))
        return out
    }

    /// One zstd frame: no content size, no checksum, a 128 KiB window (descriptor 0x38), raw
    /// blocks of at most 128 KiB.
    static func zstd(_ input: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38]
        var at = 0
        repeat {
            let n = min(128 << 10, input.count - at)
            let last: UInt32 = at + n == input.count ? 1 : 0
            let header = UInt32(n) << 3 | last  // Block_Type 0 (raw) in bits 1–2
            out += [UInt8(header & 0xFF), UInt8(header >> 8 & 0xFF), UInt8(header >> 16 & 0xFF)]
            out += input[at..<at + n]
            at += n
        } while at < input.count
        return out
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }

    /// CRC-32 of ISO 3309 / ITU-T V.42, as gzip uses it (reflected polynomial 0xEDB88320).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
