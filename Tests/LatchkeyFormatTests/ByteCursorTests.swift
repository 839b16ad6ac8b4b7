import LatchkeyFormat
import Testing

/// The one reader and writer every layout goes through: big-endian at every width, bounds
/// checked on every access (a short buffer is an error or nil, never a trap).
@Suite struct ByteCursorTests {
    @Test func writer_writesEachWidthBigEndian() {
        var w = ByteWriter()
        w.writeInteger(0x01, as: UInt8.self)
        w.writeInteger(0x0203, as: UInt16.self)
        w.writeInteger(0x0405_0607, as: UInt32.self)
        w.writeInteger(0x0809_0A0B_0C0D_0E0F, as: UInt64.self)
        w.writeInteger(-2, as: Int16.self)
        w.writeBytes([0xAA, 0xBB])
        w.writeZeros(3)
        #expect(w.bytes == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0xFF, 0xFE, 0xAA, 0xBB, 0, 0, 0])
        #expect(w.count == 22)
    }

    @Test func reader_roundTripsEachWidth() throws {
        var w = ByteWriter()
        w.writeInteger(UInt8.max, as: UInt8.self)
        w.writeInteger(0xBEEF, as: UInt16.self)
        w.writeInteger(0xDEAD_BEEF, as: UInt32.self)
        w.writeInteger(UInt64.max - 1, as: UInt64.self)
        w.writeInteger(Int32.min, as: Int32.self)
        w.writeInteger(-1, as: Int64.self)
        var r = ByteReader(w.bytes)
        #expect(try r.readInteger(as: UInt8.self, "a") == .max)
        #expect(try r.readInteger(as: UInt16.self, "b") == 0xBEEF)
        #expect(try r.readInteger(as: UInt32.self, "c") == 0xDEAD_BEEF)
        #expect(try r.readInteger(as: UInt64.self, "d") == .max - 1)
        #expect(try r.readInteger(as: Int32.self, "e") == .min)
        #expect(try r.readInteger(as: Int64.self, "f") == -1)
        #expect(r.remaining == 0 && r.offset == w.count)
        try r.expectEnd("all")
    }

    @Test func read_pastTheEnd_throwsTruncatedAndDoesNotMove() throws {
        var r = ByteReader([1, 2, 3])
        #expect(throws: FormatError.truncated(field: "word")) { try r.readInteger(as: UInt32.self, "word") }
        #expect(r.offset == 0, "a failed read consumes nothing")
        #expect(try r.readInteger(as: UInt16.self, "half") == 0x0102)
        #expect(throws: FormatError.truncated(field: "tail")) { try r.readBytes(count: 2, "tail") }
        #expect(throws: FormatError.truncated(field: "negative")) { try r.readSlice(count: -1, "negative") }
        #expect(try r.readBytes(count: 1, "last") == [3])
        #expect(throws: FormatError.truncated(field: "byte")) { try r.readInteger(as: UInt8.self, "byte") }
    }

    @Test func getInteger_isNilOutOfRange() {
        let r = ByteReader([0, 0, 0, 0, 0, 0, 0, 7])
        #expect(r.getInteger(at: 0, as: UInt64.self) == 7)
        #expect(r.getInteger(at: 4, as: UInt32.self) == 7)
        #expect(r.getInteger(at: 5, as: UInt32.self) == nil)
        #expect(r.getInteger(at: -1, as: UInt8.self) == nil)
        #expect(r.getInteger(at: 8, as: UInt8.self) == nil)
        #expect(r.getInteger(at: Int.max, as: UInt16.self) == nil)
        #expect(ByteReader([]).getInteger(at: 0, as: UInt8.self) == nil)
        #expect(r.getSlice(at: 6, count: 2).map(Array.init) == [0, 7])
        #expect(r.getSlice(at: 7, count: 2) == nil)
        #expect(r.getSlice(at: 0, count: -1) == nil)
    }

    /// Offsets count from the start of the slice given, not from the array it is part of.
    @Test func slice_offsetsAreRelative() throws {
        let bytes: [UInt8] = [9, 9, 0, 1, 0, 2]
        var r = ByteReader(bytes[2...])
        #expect(r.getInteger(at: 0, as: UInt16.self) == 1)
        #expect(r.getInteger(at: 2, as: UInt16.self) == 2)
        #expect(r.getInteger(at: 3, as: UInt16.self) == nil)
        #expect(try r.readInteger(as: UInt16.self, "first") == 1)
        #expect(r.offset == 2)
    }

    @Test func reserved_mustBeZero() throws {
        var r = ByteReader([0, 0, 1])
        try r.readReserved(count: 2, "pad")
        expectRejection(.invalidField) { try r.readReserved(count: 1, "pad") }
        let rest = ByteReader([1])
        expectRejection(.invalidField) { try rest.expectEnd("entry") }
    }
}
