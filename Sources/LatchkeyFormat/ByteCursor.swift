/// Appends a byte layout: big-endian integers of any width, byte strings and zero padding.
///
/// The one writer of every layout in the package (keychain file, index, backup, agent wire),
/// modelled on swift-nio's `ByteBuffer`: a field's width is its integer type, so
/// `writeInteger(length, as: UInt32.self)` says at the call site what the specification says.
public struct ByteWriter: Sendable {
    @usableFromInline var storage: [UInt8]

    public init(capacity: Int = 64) {
        storage = []
        storage.reserveCapacity(capacity)
    }

    /// Everything written so far.
    public var bytes: [UInt8] { storage }
    /// How many bytes were written.
    public var count: Int { storage.count }

    /// Appends `value` big-endian, in `MemoryLayout<T>.size` bytes.
    @inlinable
    public mutating func writeInteger<T: FixedWidthInteger>(_ value: T, as: T.Type = T.self) {
        withUnsafeBytes(of: value.bigEndian) { storage.append(contentsOf: $0) }
    }

    /// Appends the bytes as they are (no length prefix: the layout says where a string ends).
    @inlinable
    public mutating func writeBytes<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        storage.append(contentsOf: bytes)
    }

    /// Appends `count` zero bytes: reserved fields and padding.
    @inlinable
    public mutating func writeZeros(_ count: Int) {
        storage.append(contentsOf: repeatElement(0, count: count))
    }
}

/// Reads a byte layout: a cursor that consumes fields in order, and random access at offsets.
///
/// Every access checks its bounds first. A `read…` past the end throws
/// `FormatError.truncated(field:)` (naming the field, never its bytes); a `get…` out of range
/// returns nil. Malformed input therefore never traps. Integers are big-endian and of any
/// `FixedWidthInteger` type; once a range is checked, the load is one unaligned read of the
/// buffer, with no allocation and no per-byte loop (index lookups decode entries this way on
/// every find).
public struct ByteReader: Sendable {
    /// The bytes read; `offset`s count from their start.
    public let bytes: ArraySlice<UInt8>
    /// Index into `bytes` of the next byte a `read…` consumes.
    @usableFromInline var readerIndex: Int

    public init(_ bytes: [UInt8]) { self.init(bytes[...]) }
    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.readerIndex = bytes.startIndex
    }

    /// Bytes not yet read.
    @inlinable public var remaining: Int { bytes.endIndex - readerIndex }
    /// Offset of the cursor from the start of the buffer.
    @inlinable public var offset: Int { readerIndex - bytes.startIndex }

    // MARK: Random access

    /// The integer stored big-endian at `offset` (from the start of the buffer), or nil when
    /// its bytes are not all inside the buffer.
    @inlinable
    public func getInteger<T: FixedWidthInteger>(at offset: Int, as: T.Type = T.self) -> T? {
        guard offset >= 0, offset <= bytes.count - MemoryLayout<T>.size else { return nil }
        return bytes.withUnsafeBytes { T(bigEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }

    /// The `count` bytes at `offset` (from the start of the buffer), without copying, or nil
    /// when they are not all inside the buffer.
    @inlinable
    public func getSlice(at offset: Int, count: Int) -> ArraySlice<UInt8>? {
        guard offset >= 0, count >= 0, offset <= bytes.count - count else { return nil }
        let start = bytes.startIndex + offset
        return bytes[start..<start + count]
    }

    // MARK: Reading in order

    /// Consumes a big-endian integer of `T`'s width.
    @inlinable
    public mutating func readInteger<T: FixedWidthInteger>(as: T.Type = T.self, _ field: String) throws -> T {
        guard let value = getInteger(at: offset, as: T.self) else { throw FormatError.truncated(field: field) }
        readerIndex += MemoryLayout<T>.size
        return value
    }

    /// Consumes `count` bytes, without copying.
    @inlinable
    public mutating func readSlice(count: Int, _ field: String) throws -> ArraySlice<UInt8> {
        guard let slice = getSlice(at: offset, count: count) else { throw FormatError.truncated(field: field) }
        readerIndex += count
        return slice
    }

    /// Consumes `count` bytes into an array of their own.
    @inlinable
    public mutating func readBytes(count: Int, _ field: String) throws -> [UInt8] {
        Array(try readSlice(count: count, field))
    }

    /// Consumes `count` bytes that the format reserves and requires to be zero.
    public mutating func readReserved(count: Int, _ field: String) throws {
        guard try readSlice(count: count, field).allSatisfy({ $0 == 0 }) else {
            throw FormatError.invalidField(field: field, reason: "reserved bytes must be zero")
        }
    }

    /// Consumes the preamble of a file or entry: its 8-byte magic, then its u16 major and minor
    /// versions (the fields "`field` magic", "`field` major version" and "`field` minor version").
    /// - Parameters:
    ///   - file: what the magic names ("Latchkey " + `file` in the error);
    ///   - family: what the version names, when not `file`.
    /// - Returns: the minor version.
    /// - Throws: `FormatError.badMagic` for another magic, `unsupportedVersion` for a major
    ///   version other than `major`: a foreign or newer file is refused before anything else is read.
    package mutating func readPreamble(
        magic: [UInt8], major expected: UInt16, field: String, file: String, family: String? = nil
    ) throws -> UInt16 {
        guard try readSlice(count: 8, "\(field) magic").elementsEqual(magic) else {
            throw FormatError.badMagic(what: "Latchkey \(file)")
        }
        let major = try readInteger(as: UInt16.self, "\(field) major version")
        let minor = try readInteger(as: UInt16.self, "\(field) minor version")
        guard major == expected else {
            throw FormatError.unsupportedVersion(what: family ?? file, major: major, minor: minor)
        }
        return minor
    }

    /// Fails unless every byte was consumed.
    public func expectEnd(_ what: String) throws {
        guard remaining == 0 else {
            throw FormatError.invalidField(field: what, reason: "\(remaining) unexpected trailing bytes")
        }
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
