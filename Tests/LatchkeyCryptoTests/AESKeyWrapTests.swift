import LatchkeyCrypto
import Testing

/// AES key wrap against RFC 3394 Section 4 (fixtures/vectors/rfc3394.txt).
@Suite struct AESKeyWrapTests {
    static let ids = ["4.1", "4.2", "4.3", "4.4", "4.5", "4.6"]

    private func vector(_ id: String) throws -> (kek: [UInt8], keyData: [UInt8], ciphertext: [UInt8]) {
        let v = try VectorFile.load("rfc3394.txt").vector(id)
        return (try v.bytes("KEK"), try v.bytes("Key Data"), try v.bytes("Ciphertext"))
    }

    @Test func rfc3394File_holdsExactlySections4_1Through4_6() throws {
        #expect(try VectorFile.load("rfc3394.txt").vectors.map(\.id) == Self.ids)
    }

    @Test(arguments: ids)
    func aesKeyWrap_rfc3394Vector_producesPublishedCiphertext(id: String) throws {
        let v = try vector(id)
        #expect(try Crypto.aesKeyWrap(kek: v.kek, key: v.keyData).hex == v.ciphertext.hex)
    }

    @Test(arguments: ids)
    func aesKeyUnwrap_rfc3394Vector_recoversKeyData(id: String) throws {
        let v = try vector(id)
        #expect(try Crypto.aesKeyUnwrap(kek: v.kek, wrapped: v.ciphertext).hex == v.keyData.hex)
    }

    @Test func wrapAndUnwrap_secretKeyAPI_matchRFC3394Section4_6() throws {
        let v = try vector("4.6")
        let kek = SecretKey(copying: v.kek)
        let wrapped = try Crypto.wrap(SecretKey(copying: v.keyData), with: kek)
        #expect(wrapped.hex == v.ciphertext.hex)
        #expect(try Crypto.unwrap(wrapped, with: kek).copyBytes() == v.keyData)
    }

    /// Every single-bit change anywhere in the wrapped key must fail the RFC 3394 integrity
    /// check (the 64-bit IV A6A6...A6 recovered by unwrap no longer matches).
    @Test(arguments: ids)
    func aesKeyUnwrap_withFlippedBit_throwsIntegrityFailure(id: String) throws {
        let v = try vector(id)
        for bit in 0..<(v.ciphertext.count * 8) {
            let error = #expect(throws: CryptoError.self, "bit \(bit)") {
                try Crypto.aesKeyUnwrap(kek: v.kek, wrapped: v.ciphertext.flippingBit(bit))
            }
            #expect(error?.isIntegrityCheckFailed == true, "bit \(bit): \(String(describing: error))")
        }
    }

    @Test(arguments: ids)
    func aesKeyUnwrap_withFlippedKEKBit_throwsIntegrityFailure(id: String) throws {
        let v = try vector(id)
        for bit in v.kek.sampleBitPositions {
            let error = #expect(throws: CryptoError.self) {
                try Crypto.aesKeyUnwrap(kek: v.kek.flippingBit(bit), wrapped: v.ciphertext)
            }
            #expect(error?.isIntegrityCheckFailed == true)
        }
    }

    @Test func aesKeyUnwrap_withWrongSecretKEK_throwsIntegrityFailure() throws {
        let v = try vector("4.1")
        let error = #expect(throws: CryptoError.self) {
            try Crypto.unwrap(v.ciphertext, with: SecretKey.random(count: 16))
        }
        #expect(error?.isIntegrityCheckFailed == true)
    }

    @Test(arguments: [0, 8, 15])
    func aesKeyWrap_inputShorterThan16Bytes_throwsInvalidArgument(length: Int) throws {
        let kek = try vector("4.1").kek
        let error = #expect(throws: CryptoError.self) {
            try Crypto.aesKeyWrap(kek: kek, key: [UInt8](repeating: 0x11, count: length))
        }
        #expect(error?.isInvalidArgument == true)
    }

    @Test func aesKeyWrap_inputNotMultipleOf8Bytes_throwsInvalidArgument() throws {
        let kek = try vector("4.1").kek
        let error = #expect(throws: CryptoError.self) {
            try Crypto.aesKeyWrap(kek: kek, key: [UInt8](repeating: 0x11, count: 20))
        }
        #expect(error?.isInvalidArgument == true)
    }

    @Test(arguments: [0, 8, 16, 23])
    func aesKeyUnwrap_inputShorterThan24Bytes_throwsInvalidArgument(length: Int) throws {
        let kek = try vector("4.1").kek
        let error = #expect(throws: CryptoError.self) {
            try Crypto.aesKeyUnwrap(kek: kek, wrapped: [UInt8](repeating: 0x11, count: length))
        }
        #expect(error?.isInvalidArgument == true)
    }

    @Test(arguments: [0, 8, 20, 33])
    func aesKeyWrap_kekNot128192Or256Bits_throwsInvalidArgument(kekLength: Int) throws {
        let keyData = try vector("4.1").keyData
        let error = #expect(throws: CryptoError.self) {
            try Crypto.aesKeyWrap(kek: [UInt8](repeating: 0x22, count: kekLength), key: keyData)
        }
        #expect(error?.isInvalidArgument == true)
    }

    /// The implementation over AES-ECB (lk_crypto.c) gives OpenSSL's AES-*-WRAP bytes for every
    /// KEK size and key data of 16 to 64 bytes, unwraps them, and refuses what OpenSSL refuses.
    @Test func wrapAndUnwrap_matchOpenSSLsWrapCipher_onRandomInputs() throws {
        for kekSize in [16, 24, 32] {
            for dataSize in stride(from: 16, through: 64, by: 8) {
                for _ in 0..<8 {
                    let kek = try Crypto.randomBytes(kekSize), data = try Crypto.randomBytes(dataSize)
                    let wrapped = try Crypto.aesKeyWrap(kek: kek, key: data)
                    #expect(
                        wrapped == Crypto.openSSLKeyWrapReference(kek: kek, input: data, unwrap: false),
                        "KEK \(kekSize), data \(dataSize)")
                    #expect(try Crypto.aesKeyUnwrap(kek: kek, wrapped: wrapped) == data)
                    #expect(Crypto.openSSLKeyWrapReference(kek: kek, input: wrapped, unwrap: true) == data)
                    // One flipped bit anywhere: both refuse.
                    var damaged = wrapped
                    let bit =
                        Int(try Crypto.randomBytes(2).withUnsafeBytes { $0.load(as: UInt16.self) })
                        % (damaged.count * 8)
                    damaged[bit / 8] ^= UInt8(1 << (bit % 8))
                    #expect(throws: CryptoError.self) { try Crypto.aesKeyUnwrap(kek: kek, wrapped: damaged) }
                    #expect(Crypto.openSSLKeyWrapReference(kek: kek, input: damaged, unwrap: true) == nil)
                }
            }
        }
    }
}
