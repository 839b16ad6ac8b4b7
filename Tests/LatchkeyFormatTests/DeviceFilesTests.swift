import LatchkeyCrypto
import LatchkeyFormat
import Testing

/// The device secret file (spec §2) and the device state file (spec §9).
@Suite struct DeviceSecretFileTests {
    static let secret = DeviceSecret(uuid: Sample.deviceUUID, secret: SecretKey(copying: (0..<32).map { UInt8($0) }))

    /// Replaces the SHA-256 checksum so that only the field under test is wrong.
    func resummed(_ bytes: [UInt8]) -> [UInt8] { Array(bytes.prefix(64)) + Crypto.sha256(Array(bytes.prefix(64))) }

    @Test func deviceSecretFile_roundTrips() throws {
        let bytes = Self.secret.encodeFile()
        #expect(bytes.count == 96)
        #expect(Array(bytes.prefix(8)) == Array("LKDEVICE".utf8))
        #expect(ByteReader(bytes).getInteger(at: 8, as: UInt16.self)! == 1)
        #expect(Array(bytes[16..<32]) == Sample.deviceUUID)
        #expect(Array(bytes[32..<64]) == (0..<32).map { UInt8($0) })
        #expect(Array(bytes[64...]) == Crypto.sha256(Array(bytes.prefix(64))))
        let decoded = try DeviceSecret.decodeFile(bytes)
        #expect(decoded.uuid == Sample.deviceUUID)
        #expect(decoded.secret.copyBytes() == Self.secret.secret.copyBytes())
    }

    @Test func generate_makesVersion4UUIDAndFreshSecret() throws {
        let a = try DeviceSecret.generate(), b = try DeviceSecret.generate()
        #expect(a.uuid[6] >> 4 == 4)
        #expect(a.uuid[8] & 0xC0 == 0x80)
        #expect(a.uuid != b.uuid)
        #expect(a.secret.copyBytes() != b.secret.copyBytes())
        #expect(try DeviceSecret.decodeFile(a.encodeFile()).uuid == a.uuid)
    }

    @Test func badMagic_isRejected() {
        let bytes = Self.secret.encodeFile()
        for offset in 0..<8 {
            expectRejection(.badMagic, "byte \(offset)") {
                try DeviceSecret.decodeFile(resummed(bytes.flipping(offset)))
            }
        }
        expectRejection(.badMagic, "a keychain file is not a device secret") {
            try DeviceSecret.decodeFile(FormatConstants.fileMagic + Array(bytes.dropFirst(8)))
        }
    }

    @Test(arguments: [0, 2, 0xFFFF] as [UInt16])
    func unknownMajor_isUnsupportedVersion(major: UInt16) {
        let bytes = resummed(Self.secret.encodeFile().setting(major, at: 8))
        expectRejection(.unsupportedVersion) { try DeviceSecret.decodeFile(bytes) }
    }

    @Test func newerMinor_isRead() throws {
        let bytes = resummed(Self.secret.encodeFile().setting(UInt16(9), at: 10))
        #expect(try DeviceSecret.decodeFile(bytes).uuid == Sample.deviceUUID)
    }

    @Test func wrongSize_isRejected() {
        let bytes = Self.secret.encodeFile()
        // Shorter than the 8-byte magic: not a Latchkey file, even a prefix of the magic (spec §2.3).
        for length in 0..<8 {
            expectRejection(.badMagic, "length \(length)") { try DeviceSecret.decodeFile(Array(bytes.prefix(length))) }
        }
        for length in 8..<96 {
            expectRejection(.truncated, "length \(length)") { try DeviceSecret.decodeFile(Array(bytes.prefix(length))) }
        }
        expectRejection(.anyFormatError, "97 bytes") { try DeviceSecret.decodeFile(bytes + [0]) }
    }

    @Test func reservedBytesNonZero_areRejected() {
        for offset in 12..<16 {
            expectRejection(.invalidField, "byte \(offset)") {
                try DeviceSecret.decodeFile(resummed(Self.secret.encodeFile().flipping(offset)))
            }
        }
    }

    @Test func checksumMismatch_isRejected() {
        let bytes = Self.secret.encodeFile()
        for offset in 16..<96 {
            expectRejection(.checksumMismatch, "byte \(offset)") { try DeviceSecret.decodeFile(bytes.flipping(offset)) }
        }
    }
}

@Suite struct DeviceStateTests {
    static let macKey = try! DeviceState.macKey(device: DeviceSecretFileTests.secret)
    static let state = DeviceState(
        fileUUID: Sample.fileUUID, newestSequence: 0x0102_0304_0506_0708, failedAttempts: 3,
        lastFailureAt: -1_700_000_000)

    /// Recomputes the MAC so that only the field under test is wrong.
    func remaced(_ bytes: [UInt8]) -> [UInt8] {
        Array(bytes.prefix(56)) + Crypto.hmacSHA256(key: Self.macKey, parts: [Array(bytes.prefix(56))])
    }

    @Test func deviceState_roundTrips() throws {
        let bytes = Self.state.encode(macKey: Self.macKey)
        #expect(bytes.count == 88)
        #expect(Array(bytes.prefix(8)) == [0x4C, 0x4B, 0x53, 0x54, 0x41, 0x54, 0x45, 0x00])
        #expect(Array(bytes[16..<32]) == Sample.fileUUID)
        #expect(ByteReader(bytes).getInteger(at: 32, as: UInt64.self)! == 0x0102_0304_0506_0708)
        #expect(ByteReader(bytes).getInteger(at: 40, as: UInt32.self)! == 3)
        #expect(Int64(bitPattern: ByteReader(bytes).getInteger(at: 48, as: UInt64.self)!) == -1_700_000_000)
        #expect(try DeviceState.decode(bytes, macKey: Self.macKey) == Self.state)
        let fresh = DeviceState(fileUUID: Sample.fileUUID, newestSequence: 0)
        #expect(try DeviceState.decode(fresh.encode(macKey: Self.macKey), macKey: Self.macKey) == fresh)
    }

    @Test func macKey_dependsOnTheDevice() throws {
        let other = DeviceSecret(uuid: Sample.deviceUUID, secret: SecretKey(copying: [UInt8](repeating: 9, count: 32)))
        let bytes = Self.state.encode(macKey: Self.macKey)
        expectRejection(.checksumMismatch) {
            try DeviceState.decode(bytes, macKey: try DeviceState.macKey(device: other))
        }
    }

    @Test func badMagic_isRejected() {
        for offset in 0..<8 {
            expectRejection(.badMagic, "byte \(offset)") {
                try DeviceState.decode(
                    remaced(Self.state.encode(macKey: Self.macKey).flipping(offset)), macKey: Self.macKey)
            }
        }
    }

    @Test(arguments: [0, 2, 0xFFFF] as [UInt16])
    func unknownMajor_isUnsupportedVersion(major: UInt16) {
        let bytes = remaced(Self.state.encode(macKey: Self.macKey).setting(major, at: 8))
        expectRejection(.unsupportedVersion) { try DeviceState.decode(bytes, macKey: Self.macKey) }
    }

    @Test func wrongSize_isRejected() {
        let bytes = Self.state.encode(macKey: Self.macKey)
        for length in 0..<88 {
            expectRejection(.truncated, "length \(length)") {
                try DeviceState.decode(Array(bytes.prefix(length)), macKey: Self.macKey)
            }
        }
        expectRejection(.anyFormatError, "89 bytes") { try DeviceState.decode(bytes + [0], macKey: Self.macKey) }
    }

    @Test func reservedBytesNonZero_areRejected() {
        for offset in Array(13..<16) + Array(44..<48) {
            expectRejection(.invalidField, "byte \(offset)") {
                try DeviceState.decode(
                    remaced(Self.state.encode(macKey: Self.macKey).flipping(offset)), macKey: Self.macKey)
            }
        }
        // Byte 12 holds the flags (1.1): bit 0 is "passcode set", bits 1-7 are reserved.
        for mask in [UInt8](arrayLiteral: 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80) {
            expectRejection(.invalidField, "byte 12 mask \(mask)") {
                try DeviceState.decode(
                    remaced(Self.state.encode(macKey: Self.macKey).flipping(12, mask)), macKey: Self.macKey)
            }
        }
    }

    /// The passcode-set flag (spec §9.2): byte 12 bit 0 and minor version 1; a state without
    /// it is byte for byte a 1.0 state.
    @Test func passcodeSetFlag_roundTrips_andAStateWithoutItIsVersion10() throws {
        var flagged = Self.state
        flagged.passcodeSet = true
        let bytes = flagged.encode(macKey: Self.macKey)
        #expect(bytes[12] == 1 && bytes[10] == 0 && bytes[11] == 1)
        #expect(try DeviceState.decode(bytes, macKey: Self.macKey) == flagged)
        let plain = Self.state.encode(macKey: Self.macKey)
        #expect(plain[10..<16].allSatisfy { $0 == 0 })
        #expect(try DeviceState.decode(plain, macKey: Self.macKey).passcodeSet == false)
    }

    @Test func macMismatch_isRejected() {
        let bytes = Self.state.encode(macKey: Self.macKey)
        for offset in Array(16..<44) + Array(48..<88) {
            expectRejection(.checksumMismatch, "byte \(offset)") {
                try DeviceState.decode(bytes.flipping(offset), macKey: Self.macKey)
            }
        }
    }
}
