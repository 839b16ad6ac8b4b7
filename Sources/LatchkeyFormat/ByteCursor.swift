/// Appends big-endian integers and byte strings to a growing buffer.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func raw<C: Collection>(_ v: C) where C.Element == UInt8 { bytes.append(contentsOf: v) }
    public mutating func zeros(_ n: Int) { bytes.append(contentsOf: repeatElement(0, count: n)) }
}

/// Reads big-endian integers from a byte buffer, failing with `FormatError.truncated(field:)`.
public struct ByteReader: Sendable {
    public let bytes: ArraySlice<UInt8>
    public private(set) var position: Int

    public init(_ bytes: [UInt8]) { self.init(bytes[...]) }
    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    /// Bytes not yet read.
    public var remaining: Int { bytes.endIndex - position }
    /// Offset of the cursor from the start of the buffer.
    public var offset: Int { position - bytes.startIndex }

    public mutating func take(_ n: Int, _ field: String) throws -> ArraySlice<UInt8> {
        guard n >= 0, remaining >= n else { throw FormatError.truncated(field: field) }
        defer { position += n }
        return bytes[position..<position + n]
    }

    public mutating func bytes(_ n: Int, _ field: String) throws -> [UInt8] { Array(try take(n, field)) }

    public mutating func u8(_ field: String) throws -> UInt8 { try take(1, field).first! }

    public mutating func u16(_ field: String) throws -> UInt16 {
        let s = try take(2, field)
        return UInt16(s[s.startIndex]) << 8 | UInt16(s[s.startIndex + 1])
    }

    public mutating func u32(_ field: String) throws -> UInt32 {
        try take(4, field).reduce(0) { $0 << 8 | UInt32($1) }
    }

    public mutating func u64(_ field: String) throws -> UInt64 {
        try take(8, field).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Reads `n` bytes that the format reserves and requires to be zero.
    public mutating func reserved(_ n: Int, _ field: String) throws {
        guard try take(n, field).allSatisfy({ $0 == 0 }) else {
            throw FormatError.invalidField(field: field, reason: "reserved bytes must be zero")
        }
    }

    /// Fails unless every byte was consumed.
    public func expectEnd(_ what: String) throws {
        guard remaining == 0 else {
            throw FormatError.invalidField(field: what, reason: "\(remaining) unexpected trailing bytes")
        }
    }
}

extension Array where Element == UInt8 {
    /// Big-endian decoding of a fixed-width integer at `offset` (the caller checked the length).
    @inlinable public func readBE<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var v: T = 0
        for i in 0..<MemoryLayout<T>.size { v = v << 8 | T(self[offset + i]) }
        return v
    }
}

/// Lower-case hexadecimal, for UUIDs and hex dumps.
public func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
    return String(decoding: out, as: UTF8.self)
}

/// Parses hexadecimal (white space ignored); nil on any other character or an odd count.
public func bytesFromHex(_ text: String) -> [UInt8]? {
    var out = [UInt8]()
    var high: UInt8? = nil
    for c in text.utf8 {
        let v: UInt8
        switch c {
        case 48...57: v = c - 48
        case 97...102: v = c - 87
        case 65...70: v = c - 55
        case 32, 9, 10, 13: continue
        default: return nil
        }
        if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
    }
    return high == nil ? out : nil
}
