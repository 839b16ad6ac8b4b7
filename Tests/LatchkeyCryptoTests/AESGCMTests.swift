import LatchkeyCrypto
import Testing

/// AES-GCM against the test cases of the GCM specification (McGrew & Viega, "The
/// Galois/Counter Mode of Operation", AES test vectors; fixtures/vectors/gcm-nist.txt).
@Suite struct AESGCMTests {
    static let aes128 = ["1", "2", "3", "4", "5", "6"]
    static let aes192 = ["7", "8", "9", "10", "11", "12"]
    static let aes256 = ["13", "14", "15", "16", "17", "18"]
    static let ids = aes128 + aes192 + aes256

    struct Vector {
        let key, plaintext, aad, iv, ciphertext, tag: [UInt8]
    }

    private func vector(_ id: String) throws -> Vector {
        let v = try VectorFile.load("gcm-nist.txt").vector(id)
        return Vector(
            key: try v.bytes("K"), plaintext: try v.bytes("P"), aad: try v.bytes("A"),
            iv: try v.bytes("IV"), ciphertext: try v.bytes("C"), tag: try v.bytes("T"))
    }

    private func open(
        _ v: Vector, key: [UInt8]? = nil, iv: [UInt8]? = nil, aad: [UInt8]? = nil,
        ciphertext: [UInt8]? = nil, tag: [UInt8]? = nil
    ) throws -> [UInt8] {
        try Crypto.aesGCMOpen(
            key: key ?? v.key, nonce: iv ?? v.iv, aad: aad ?? v.aad,
            ciphertext: ciphertext ?? v.ciphertext, tag: tag ?? v.tag)
    }

    private func expectIntegrityFailure(
        _ what: String, _ body: () throws -> [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: CryptoError.self, "\(what)", sourceLocation: sourceLocation) { try body() }
        #expect(
            error?.isIntegrityCheckFailed == true, "\(what): \(String(describing: error))",
            sourceLocation: sourceLocation)
    }

    @Test func gcmFile_holdsTestCases1Through18WithTheirKeySizes() throws {
        let file = try VectorFile.load("gcm-nist.txt")
        #expect(file.vectors.map(\.id) == Self.ids)
        for (ids, keyLength) in [(Self.aes128, 16), (Self.aes192, 24), (Self.aes256, 32)] {
            for id in ids { #expect(try vector(id).key.count == keyLength, "case \(id)") }
        }
        // Cases 17 and 18 exercise non-96-bit IVs (GHASH-derived J0).
        #expect(try vector("17").iv.count == 8)
        #expect(try vector("18").iv.count == 60)
    }

    @Test(arguments: ids)
    func aesGCMSeal_nistTestCase_producesPublishedCiphertextAndTag(id: String) throws {
        let v = try vector(id)
        let sealed = try Crypto.aesGCMSeal(key: v.key, nonce: v.iv, aad: v.aad, plaintext: v.plaintext)
        #expect(sealed.ciphertext.hex == v.ciphertext.hex)
        #expect(sealed.tag.hex == v.tag.hex)
    }

    @Test(arguments: ids)
    func aesGCMOpen_nistTestCase_returnsPlaintext(id: String) throws {
        let v = try vector(id)
        #expect(try open(v).hex == v.plaintext.hex)
    }

    /// Test case 13: zero 256-bit key, empty plaintext, empty AAD. Sealing nothing still
    /// authenticates: the result is the published tag, and opening returns zero bytes.
    @Test func aesGCM_emptyPlaintextAndAAD_roundTripsWithNISTCase13Tag() throws {
        let v = try vector("13")
        #expect(v.plaintext.isEmpty && v.aad.isEmpty && v.key == [UInt8](repeating: 0, count: 32))
        let sealed = try Crypto.aesGCMSeal(key: v.key, nonce: v.iv, aad: [], plaintext: [])
        #expect(sealed.ciphertext.isEmpty)
        #expect(sealed.tag.hex == "530f8afbc74536b9a963b4f1c4cb738b")
        #expect(sealed.tag == v.tag)
        #expect(try Crypto.aesGCMOpen(key: v.key, nonce: v.iv, aad: [], ciphertext: [], tag: sealed.tag) == [])
    }

    @Test func aesGCM_emptyPlaintextWithAAD_roundTripsAndAuthenticatesAAD() throws {
        let key = try Crypto.randomBytes(32), iv = try Crypto.randomBytes(12), aad = Array("header".utf8)
        let sealed = try Crypto.aesGCMSeal(key: key, nonce: iv, aad: aad, plaintext: [])
        #expect(sealed.ciphertext.isEmpty)
        #expect(try Crypto.aesGCMOpen(key: key, nonce: iv, aad: aad, ciphertext: [], tag: sealed.tag) == [])
        let error = #expect(throws: CryptoError.self) {
            try Crypto.aesGCMOpen(key: key, nonce: iv, aad: aad.flippingBit(9), ciphertext: [], tag: sealed.tag)
        }
        #expect(error?.isIntegrityCheckFailed == true)
    }

    @Test(arguments: ids)
    func aesGCMOpen_withFlippedCiphertextBit_throwsIntegrityFailure(id: String) throws {
        let v = try vector(id)
        for bit in v.ciphertext.sampleBitPositions {
            expectIntegrityFailure("ciphertext bit \(bit)") { try open(v, ciphertext: v.ciphertext.flippingBit(bit)) }
        }
    }

    /// Every bit of the tag matters, including for the empty-plaintext cases.
    @Test(arguments: ids)
    func aesGCMOpen_withFlippedTagBit_throwsIntegrityFailure(id: String) throws {
        let v = try vector(id)
        for bit in 0..<(v.tag.count * 8) {
            expectIntegrityFailure("tag bit \(bit)") { try open(v, tag: v.tag.flippingBit(bit)) }
        }
    }

    @Test(arguments: ["4", "10", "16", "17", "18"])
    func aesGCMOpen_withFlippedAADBit_throwsIntegrityFailure(id: String) throws {
        let v = try vector(id)
        #expect(!v.aad.isEmpty)
        for bit in v.aad.sampleBitPositions {
            expectIntegrityFailure("AAD bit \(bit)") { try open(v, aad: v.aad.flippingBit(bit)) }
        }
        expectIntegrityFailure("AAD dropped") { try open(v, aad: []) }
    }

    @Test(arguments: ids)
    func aesGCMOpen_withFlippedIVOrKeyBit_throwsIntegrityFailure(id: String) throws {
        let v = try vector(id)
        for bit in v.iv.sampleBitPositions {
            expectIntegrityFailure("IV bit \(bit)") { try open(v, iv: v.iv.flippingBit(bit)) }
        }
        for bit in v.key.sampleBitPositions {
            expectIntegrityFailure("key bit \(bit)") { try open(v, key: v.key.flippingBit(bit)) }
        }
    }

    @Test func aesGCMOpen_truncatedCiphertext_throwsIntegrityFailure() throws {
        let v = try vector("16")
        expectIntegrityFailure("last byte dropped") { try open(v, ciphertext: Array(v.ciphertext.dropLast())) }
    }

    @Test(arguments: [0, 11, 17])
    func aesGCMOpen_tagLengthOutside12To16_throwsInvalidArgument(tagLength: Int) throws {
        let v = try vector("16")
        let tag = Array((v.tag + v.tag).prefix(tagLength))
        let error = #expect(throws: CryptoError.self) { try open(v, tag: tag) }
        #expect(error?.isInvalidArgument == true)
    }

    @Test func aesGCMSeal_emptyNonceOrBadKeyLength_throwsInvalidArgument() throws {
        let v = try vector("16")
        for (key, iv) in [(v.key, [UInt8]()), (Array(v.key.prefix(20)), v.iv), ([UInt8](), v.iv)] {
            let error = #expect(throws: CryptoError.self) {
                try Crypto.aesGCMSeal(key: key, nonce: iv, aad: v.aad, plaintext: v.plaintext)
            }
            #expect(error?.isInvalidArgument == true, "key \(key.count) bytes, IV \(iv.count) bytes")
        }
    }
}
