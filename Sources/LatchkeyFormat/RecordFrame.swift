import LatchkeyCrypto

/// The 20-byte header of every record (spec/FORMAT.md §6.1).
public struct FrameHeader: Equatable, Sendable {
    /// Flag bit 0: more records of the same transaction follow.
    public static let continuesFlag: UInt8 = 0x01

    public var payloadLength: UInt32
    public var type: UInt8
    public var flags: UInt8
    public var sequence: UInt64

    public init(payloadLength: UInt32, type: UInt8, flags: UInt8, sequence: UInt64) {
        self.payloadLength = payloadLength
        self.type = type
        self.flags = flags
        self.sequence = sequence
    }

    public var continues: Bool { flags & FrameHeader.continuesFlag != 0 }
    /// Header, payload and tag.
    public var recordSize: Int { FormatConstants.frameHeaderSize + Int(payloadLength) + FormatConstants.frameTagSize }

    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: FormatConstants.frameHeaderSize)
        w.writeInteger(payloadLength, as: UInt32.self)
        w.writeInteger(type, as: UInt8.self)
        w.writeInteger(flags, as: UInt8.self)
        w.writeZeros(2)
        w.writeInteger(sequence, as: UInt64.self)
        w.writeInteger(CRC32C.checksum(w.bytes), as: UInt32.self)
        return w.bytes
    }

    /// Decodes a frame header. A CRC mismatch is damage (never a torn tail: the caller only
    /// calls this with 20 bytes present). Reserved bits and sizes are checked after the CRC.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws -> FrameHeader {
        guard bytes.count >= FormatConstants.frameHeaderSize else {
            throw FormatError.truncated(field: "record header")
        }
        var r = ByteReader(bytes.prefix(FormatConstants.frameHeaderSize))
        let length = try r.readInteger(as: UInt32.self, "record length")
        let type = try r.readInteger(as: UInt8.self, "record type")
        let flags = try r.readInteger(as: UInt8.self, "record flags")
        let reserved = try r.readInteger(as: UInt16.self, "record reserved")
        let sequence = try r.readInteger(as: UInt64.self, "record sequence")
        let crc = try r.readInteger(as: UInt32.self, "record header CRC")
        let start = bytes.startIndex
        guard CRC32C.checksum(bytes[start..<start + 16]) == crc else {
            throw FormatError.checksumMismatch(what: "record header")
        }
        guard reserved == 0, flags & ~FrameHeader.continuesFlag == 0 else {
            throw FormatError.invalidField(field: "record header", reason: "reserved bits are set")
        }
        guard length <= FormatConstants.maxPayloadSize else {
            throw FormatError.invalidField(field: "record length", reason: "\(length) exceeds the 16 MiB limit")
        }
        return FrameHeader(payloadLength: length, type: type, flags: flags, sequence: sequence)
    }
}

/// Whole records: header, payload and the 16-byte tag (spec §6.2).
public enum RecordFrame {
    /// Encodes a record that will start at file offset `offset`.
    public static func encode(
        type: UInt8, flags: UInt8, sequence: UInt64, payload: [UInt8],
        offset: UInt64, macKey: SecretKey
    ) -> [UInt8] {
        let header = FrameHeader(payloadLength: UInt32(payload.count), type: type, flags: flags, sequence: sequence)
        var out = header.encode()
        out.reserveCapacity(header.recordSize)
        out.append(contentsOf: payload)
        out.append(contentsOf: tag(macKey: macKey, offset: offset, headerAndPayload: out[...]))
        return out
    }

    /// The record tag: the first 16 bytes of HMAC-SHA256(record MAC key, offset ‖ header ‖ payload).
    public static func tag(macKey: SecretKey, offset: UInt64, headerAndPayload: ArraySlice<UInt8>) -> [UInt8] {
        withMAC(macKey: macKey, offset: offset, headerAndPayload: headerAndPayload) {
            Array($0[0..<FormatConstants.frameTagSize])
        }
    }

    /// Checks the tag of a complete record (`record` holds header, payload and tag) in constant
    /// time, without copying the record.
    public static func verify(record: ArraySlice<UInt8>, offset: UInt64, macKey: SecretKey) -> Bool {
        guard record.count >= FormatConstants.frameTagSize else { return false }
        let bodyCount = record.count - FormatConstants.frameTagSize
        return withMAC(macKey: macKey, offset: offset, headerAndPayload: record.prefix(bodyCount)) { mac in
            record.withUnsafeBytes { r in
                Crypto.constantTimeEqual(
                    UnsafeRawBufferPointer(rebasing: mac[0..<FormatConstants.frameTagSize]),
                    UnsafeRawBufferPointer(rebasing: r[bodyCount...]))
            }
        }
    }

    /// Calls `body` with the full HMAC (32 bytes, on the stack) of offset ‖ header ‖ payload.
    private static func withMAC<R>(
        macKey: SecretKey, offset: UInt64, headerAndPayload: ArraySlice<UInt8>,
        _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        var o = offset.bigEndian
        return withUnsafeBytes(of: &o) { ob in
            headerAndPayload.withUnsafeBytes { hp in
                withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { mac in
                    Crypto.hmacSHA256(key: macKey, ob, hp, into: mac)
                    return body(UnsafeRawBufferPointer(mac))
                }
            }
        }
    }
}
