import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// The keychain file header (spec §3, §12.2).
@Suite struct FileHeaderTests {
    @Test(arguments: [false, true])
    func header_roundTrips(passcode: Bool) throws {
        let header = Sample.header(passcode: passcode, baseSequence: 77)
        let bytes = header.encode(macKey: Sample.macKey)
        // Spec §3.3: H = 392 without a passcode (6 entries), 434 with one (7 entries).
        #expect(bytes.count == (passcode ? 434 : 392))
        #expect(try FileHeader.peekLength(bytes) == bytes.count)
        #expect(Array(bytes.prefix(8)) == FormatConstants.fileMagic)

        let (decoded, authenticated, mac) = try FileHeader.decode(bytes)
        #expect(decoded == header)
        #expect(Array(authenticated) == Array(bytes.dropLast(32)))
        #expect(mac == Array(bytes.suffix(32)))
        #expect(FileHeader.verifyMAC(authenticated: authenticated, mac: mac, macKey: Sample.macKey))
        #expect(!FileHeader.verifyMAC(authenticated: authenticated, mac: mac, macKey: Sample.otherMacKey))
    }

    @Test func header_fieldsAreAtTheirSpecOffsets() throws {
        let bytes = Sample.header(passcode: false, baseSequence: 0x0102_0304_0506_0708).encode(macKey: Sample.macKey)
        #expect(ByteReader(bytes).getInteger(at: 8, as: UInt16.self)! == 1)
        #expect(ByteReader(bytes).getInteger(at: 10, as: UInt16.self)! == 0)
        #expect(ByteReader(bytes).getInteger(at: 12, as: UInt32.self)! == UInt32(bytes.count))
        #expect(Array(bytes[16..<32]) == Sample.fileUUID)
        #expect(Array(bytes[32..<48]) == Sample.deviceUUID)
        #expect(bytes[48..<56].allSatisfy { $0 == 0 })
        #expect(ByteReader(bytes).getInteger(at: 56, as: UInt64.self)! == 0x0102_0304_0506_0708)
        #expect(ByteReader(bytes).getInteger(at: 64, as: UInt64.self)! == 1_700_000_000)
        #expect(
            Int(ByteReader(bytes).getInteger(at: 72, as: UInt16.self)!) == Sample.keybag(passcode: false).encode().count
        )
    }

    @Test func everyAuthenticatedByte_isCoveredByTheMAC() throws {
        let bytes = Sample.header(passcode: true).encode(macKey: Sample.macKey)
        for offset in bytes.indices {
            let damaged = bytes.flipping(offset)
            guard let (_, authenticated, mac) = try? FileHeader.decode(damaged) else { continue }
            #expect(
                !FileHeader.verifyMAC(authenticated: authenticated, mac: mac, macKey: Sample.macKey), "byte \(offset)")
        }
    }

    @Test func badMagic_isRejectedAsNotALatchkeyFile() {
        let bytes = Sample.header(passcode: false).encode(macKey: Sample.macKey)
        for offset in 0..<8 {
            expectRejection(.badMagic, "magic byte \(offset)") { try FileHeader.decode(bytes.flipping(offset)) }
            expectRejection(.badMagic, "peek, magic byte \(offset)") {
                try FileHeader.peekLength(bytes.flipping(offset))
            }
        }
        // A text-mode copy (CR LF → LF) breaks the magic first.
        var textMode = bytes
        textMode.remove(at: 4)
        expectRejection(.badMagic) { try FileHeader.decode(textMode) }
    }

    @Test(arguments: [0, 2, 0x0101, 0xFFFF] as [UInt16])
    func unknownMajor_isRejectedBeforeAnythingElse(major: UInt16) {
        let bytes = Sample.header(passcode: false).encode(macKey: Sample.macKey).setting(major, at: 8)
        expectRejection(.unsupportedVersion) { try FileHeader.decode(bytes) }
        // Nothing after the major version is read: not even a garbage length or a short file.
        expectRejection(.unsupportedVersion, "12 bytes only") { try FileHeader.peekLength(Array(bytes.prefix(12))) }
        expectRejection(.unsupportedVersion, "garbage length") {
            try FileHeader.peekLength(bytes.setting(UInt32.max, at: 12))
        }
    }

    @Test(arguments: [0, 139, 65_537, UInt32.max] as [UInt32])
    func headerLengthOutOfRange_isRejected(length: UInt32) {
        let bytes = Sample.header(passcode: false).encode(macKey: Sample.macKey).setting(length, at: 12)
        expectRejection(.invalidField) { try FileHeader.peekLength(bytes) }
        expectRejection(.invalidField) { try FileHeader.decode(bytes) }
    }

    @Test func headerLength_boundsAreInclusive() throws {
        let bytes = Sample.header(passcode: false).encode(macKey: Sample.macKey)
        #expect(try FileHeader.peekLength(bytes.setting(UInt32(140), at: 12)) == 140)
        #expect(try FileHeader.peekLength(bytes.setting(UInt32(65_536), at: 12)) == 65_536)
    }

    @Test(arguments: [false, true])
    func truncatedHeader_atEveryLength_isTruncated(passcode: Bool) {
        let bytes = Sample.header(passcode: passcode).encode(macKey: Sample.macKey)
        for length in 0..<bytes.count {
            expectRejection(.truncated, "length \(length)") { try FileHeader.decode(Array(bytes.prefix(length))) }
        }
        for length in 0..<16 {
            expectRejection(.truncated, "peek, length \(length)") {
                try FileHeader.peekLength(Array(bytes.prefix(length)))
            }
        }
    }

    @Test func knownMinor_rejectsFlagsReservedAndExtensionBytes() {
        let bytes = Sample.header(passcode: false).encode(macKey: Sample.macKey)
        for offset in 48..<52 {
            expectRejection(.invalidField, "flags byte \(offset)") { try FileHeader.decode(bytes.flipping(offset)) }
        }
        for offset in 52..<56 {
            expectRejection(.invalidField, "reserved byte \(offset)") { try FileHeader.decode(bytes.flipping(offset)) }
        }
        var withExtension = Sample.header(passcode: false)
        withExtension.extensionBytes = [1, 2, 3]
        expectRejection(.invalidField, "extension bytes in a 1.0 header") {
            try FileHeader.decode(withExtension.encode(macKey: Sample.macKey))
        }
    }

    @Test func newerMinor_skipsFlagsReservedAndExtensionBytes_whichTheMACStillCovers() throws {
        var header = Sample.header(passcode: true)
        header.minor = 3
        header.extensionBytes = [0xDE, 0xAD, 0xBE, 0xEF]
        let encoded = header.encode(macKey: Sample.macKey)
        // Flags and reserved bytes written by the newer writer (re-MAC'd).
        var body = Array(encoded.dropLast(32)).setting(UInt32(0x8000_0001), at: 48).setting(UInt32(7), at: 52)
        body += Crypto.hmacSHA256(key: Sample.macKey, parts: [body])
        let (decoded, authenticated, mac) = try FileHeader.decode(body)
        #expect(decoded.minor == 3)
        #expect(decoded.extensionBytes == [0xDE, 0xAD, 0xBE, 0xEF])
        #expect(decoded.keybag == header.keybag)
        #expect(FileHeader.verifyMAC(authenticated: authenticated, mac: mac, macKey: Sample.macKey))
        let tampered = body.flipping(body.count - 33)
        let (_, a2, m2) = try FileHeader.decode(tampered)
        #expect(
            !FileHeader.verifyMAC(authenticated: a2, mac: m2, macKey: Sample.macKey),
            "extension bytes are authenticated")
    }

    @Test func keybagLengthThatDoesNotFit_isRejected() {
        let bytes = Sample.header(passcode: false).encode(macKey: Sample.macKey)
        let k = Int(ByteReader(bytes).getInteger(at: 72, as: UInt16.self)!)
        for wrong in [0, 1, k - 1, k + 1, k + 42, 0xFFFF] {
            expectRejection(.anyFormatError, "keybag length \(wrong)") {
                try FileHeader.decode(bytes.setting(UInt16(wrong), at: 72))
            }
        }
    }

    @Test func invalidKeybag_makesTheHeaderInvalid() {
        let bytes = Sample.header(passcode: false).encode(macKey: Sample.macKey)
        expectRejection(.invalidField, "KDF id 2") { try FileHeader.decode(bytes.setting(UInt8(2), at: 74)) }
        expectRejection(.invalidField, "keybag reserved byte") { try FileHeader.decode(bytes.flipping(74 + 33)) }
    }
}
