import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// Record framing: the 20-byte frame header with its CRC, and the record tag (spec §6).
@Suite struct RecordFrameTests {
    /// A frame header with any field values, its CRC computed over them.
    func rawFrameHeader(length: UInt32, type: UInt8 = 1, flags: UInt8 = 0, reserved: UInt16 = 0, sequence: UInt64 = 1)
        -> [UInt8]
    {
        var w = ByteWriter()
        w.writeInteger(length, as: UInt32.self)
        w.writeInteger(type, as: UInt8.self)
        w.writeInteger(flags, as: UInt8.self)
        w.writeInteger(reserved, as: UInt16.self)
        w.writeInteger(sequence, as: UInt64.self)
        w.writeInteger(CRC32C.checksum(w.bytes), as: UInt32.self)
        return w.bytes
    }

    @Test func crc32c_matchesTheCastagnoliCheckValue() {
        // The standard check value of CRC-32C: the CRC of "123456789".
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
    }

    @Test(arguments: [0, 1, 0x80, 0xFF] as [UInt8])
    func frameHeader_roundTrips(type: UInt8) throws {
        for flags in [0, FrameHeader.continuesFlag] {
            let header = FrameHeader(payloadLength: 1234, type: type, flags: flags, sequence: 0xFEDC_BA98_7654_3210)
            let bytes = header.encode()
            #expect(bytes.count == FormatConstants.frameHeaderSize)
            #expect(bytes == rawFrameHeader(length: 1234, type: type, flags: flags, sequence: 0xFEDC_BA98_7654_3210))
            let decoded = try FrameHeader.decode(bytes[...])
            #expect(decoded == header)
            #expect(decoded.continues == (flags != 0))
            #expect(decoded.recordSize == 36 + 1234)
        }
    }

    @Test func frameHeader_decodesFromASliceInsideALargerBuffer() throws {
        let buffer = [UInt8](repeating: 0xAA, count: 7) + rawFrameHeader(length: 5, sequence: 9) + [1, 2, 3]
        let decoded = try FrameHeader.decode(buffer[7..<27])
        #expect(decoded.payloadLength == 5 && decoded.sequence == 9)
    }

    @Test func everyFlippedBit_failsTheCRC() {
        let bytes = rawFrameHeader(length: 100, type: 2, flags: 1, sequence: 42)
        for offset in 0..<20 {
            for bit in 0..<8 {
                expectRejection(.checksumMismatch, "byte \(offset) bit \(bit)") {
                    try FrameHeader.decode(bytes.flipping(offset, UInt8(1 << bit))[...])
                }
            }
        }
    }

    @Test func truncatedFrameHeader_atEveryLength_isTruncated() {
        let bytes = rawFrameHeader(length: 100)
        for length in 0..<20 {
            expectRejection(.truncated, "length \(length)") { try FrameHeader.decode(bytes.prefix(length)) }
        }
    }

    @Test(arguments: [0x02, 0x04, 0x80, 0xFE, 0xFF] as [UInt8])
    func reservedFlagBits_areRejectedEvenWithAValidCRC(flags: UInt8) {
        expectRejection(.invalidField) { try FrameHeader.decode(rawFrameHeader(length: 10, flags: flags)[...]) }
    }

    @Test(arguments: [1, 0x100, 0x8000, 0xFFFF] as [UInt16])
    func reservedBytes_areRejectedEvenWithAValidCRC(reserved: UInt16) {
        expectRejection(.invalidField) { try FrameHeader.decode(rawFrameHeader(length: 10, reserved: reserved)[...]) }
    }

    @Test func payloadLength_above16MiB_isRejected_16MiBIsAccepted() throws {
        let limit = FormatConstants.maxPayloadSize
        #expect(limit == 16_777_216)
        #expect(try FrameHeader.decode(rawFrameHeader(length: limit)[...]).payloadLength == limit)
        expectRejection(.invalidField) { try FrameHeader.decode(rawFrameHeader(length: limit + 1)[...]) }
        expectRejection(.invalidField) { try FrameHeader.decode(rawFrameHeader(length: UInt32.max)[...]) }
    }

    @Test func recordTag_bindsKeyOffsetHeaderAndPayload() {
        let payload: [UInt8] = Array("payload bytes".utf8)
        let record = RecordFrame.encode(
            type: 1, flags: 0, sequence: 5, payload: payload, offset: 392, macKey: Sample.macKey)
        #expect(record.count == 36 + payload.count)
        #expect(Array(record[20..<20 + payload.count]) == payload)
        #expect(RecordFrame.verify(record: record[...], offset: 392, macKey: Sample.macKey))
        #expect(!RecordFrame.verify(record: record[...], offset: 393, macKey: Sample.macKey), "moved to another offset")
        #expect(!RecordFrame.verify(record: record[...], offset: 392, macKey: Sample.otherMacKey), "another file's key")
        for offset in record.indices {
            #expect(
                !RecordFrame.verify(record: record.flipping(offset)[...], offset: 392, macKey: Sample.macKey),
                "byte \(offset)")
        }
        // tag = first 16 bytes of HMAC(key, u64(offset) ‖ header ‖ payload) (spec §6.2).
        var o = ByteWriter()
        o.writeInteger(392, as: UInt64.self)
        let expected = Array(
            Crypto.hmacSHA256(key: Sample.macKey, parts: [o.bytes, Array(record.dropLast(16))]).prefix(16))
        #expect(Array(record.suffix(16)) == expected)
    }
}
