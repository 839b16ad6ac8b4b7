import LatchkeyCrypto
import Testing

/// HKDF-SHA256 against RFC 5869 Appendix A.1-A.3 (fixtures/vectors/rfc5869.txt).
/// A.4-A.7 are SHA-1 cases and are not used.
@Suite struct HKDFTests {
    static let ids = ["A.1", "A.2", "A.3"]

    private struct Vector {
        let ikm, salt, info, prk, okm: [UInt8]
        let length: Int
    }

    private func vector(_ id: String) throws -> Vector {
        let v = try VectorFile.load("rfc5869.txt").vector(id)
        #expect(try v.value("Hash") == "SHA-256")
        return Vector(
            ikm: try v.bytes("IKM"), salt: try v.bytes("salt"), info: try v.bytes("info"),
            prk: try v.bytes("PRK"), okm: try v.bytes("OKM"), length: try v.int("L"))
    }

    /// HKDF computed straight from RFC 5869 Section 2 with HMAC-SHA256 (itself checked
    /// against RFC 4231), as an independent reference for inputs the RFC has no vector for.
    private func hkdfByDefinition(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        let prk = Crypto.hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, ikm)
        var okm: [UInt8] = []
        var t: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < length {
            t = Crypto.hmacSHA256(key: prk, t, info, [counter])
            okm += t
            counter += 1
        }
        return Array(okm.prefix(length))
    }

    @Test func rfc5869File_holdsExactlyTheSHA256CasesA1ThroughA3() throws {
        #expect(try VectorFile.load("rfc5869.txt").vectors.map(\.id) == Self.ids)
    }

    @Test(arguments: ids)
    func hkdfSHA256_rfc5869Vector_producesPublishedOKM(id: String) throws {
        let v = try vector(id)
        #expect(v.okm.count == v.length)
        #expect(try Crypto.hkdfSHA256(ikm: v.ikm, salt: v.salt, info: v.info, count: v.length).hex == v.okm.hex)
    }

    /// The extract step, PRK = HMAC-Hash(salt, IKM), with the RFC's zero-filled default salt.
    @Test(arguments: ids)
    func hkdfExtract_rfc5869Vector_matchesPublishedPRK(id: String) throws {
        let v = try vector(id)
        let salt = v.salt.isEmpty ? [UInt8](repeating: 0, count: 32) : v.salt
        #expect(Crypto.hmacSHA256(key: salt, v.ikm).hex == v.prk.hex)
    }

    @Test func hkdfSHA256_secretKeyAPI_matchesRFC5869A1() throws {
        let v = try vector("A.1")
        let key = try Crypto.hkdfSHA256(ikm: SecretKey(copying: v.ikm), salt: v.salt, info: v.info, count: v.length)
        #expect(key.count == v.length)
        #expect(key.copyBytes().hex == v.okm.hex)
    }

    /// A.3: empty salt and empty info. Crypto.hkdfSHA256 passes an empty salt to OpenSSL as
    /// "no salt"; RFC 5869 Section 2.2 says that means HashLen zero bytes, and both must give
    /// the published OKM.
    @Test func hkdfSHA256_emptySaltAndInfo_equalsZeroFilledSaltAndGivesA3OKM() throws {
        let v = try vector("A.3")
        #expect(v.salt.isEmpty && v.info.isEmpty)
        let noSalt = try Crypto.hkdfSHA256(ikm: v.ikm, salt: [], info: [], count: v.length)
        let zeroSalt = try Crypto.hkdfSHA256(
            ikm: v.ikm, salt: [UInt8](repeating: 0, count: 32), info: [], count: v.length)
        #expect(noSalt.hex == v.okm.hex)
        #expect(zeroSalt.hex == v.okm.hex)
    }

    @Test func hkdfSHA256_emptyIKM_matchesRFC5869Definition() throws {
        let salt = Array("salt".utf8), info = Array("info".utf8)
        let out = try Crypto.hkdfSHA256(ikm: [], salt: salt, info: info, count: 42)
        #expect(out.hex == hkdfByDefinition(ikm: [], salt: salt, info: info, length: 42).hex)
    }

    @Test func hkdfByDefinition_agreesWithAllRFC5869Vectors() throws {
        for id in Self.ids {
            let v = try vector(id)
            #expect(
                hkdfByDefinition(ikm: v.ikm, salt: v.salt, info: v.info, length: v.length).hex == v.okm.hex, "\(id)")
        }
    }

    @Test func hkdfSHA256_withFlippedInputBit_changesOutput() throws {
        let v = try vector("A.1")
        func derive(_ ikm: [UInt8], _ salt: [UInt8], _ info: [UInt8]) throws -> [UInt8] {
            try Crypto.hkdfSHA256(ikm: ikm, salt: salt, info: info, count: v.length)
        }
        for bit in v.ikm.sampleBitPositions {
            #expect(try derive(v.ikm.flippingBit(bit), v.salt, v.info) != v.okm, "IKM bit \(bit)")
        }
        for bit in v.salt.sampleBitPositions {
            #expect(try derive(v.ikm, v.salt.flippingBit(bit), v.info) != v.okm, "salt bit \(bit)")
        }
        for bit in v.info.sampleBitPositions {
            #expect(try derive(v.ikm, v.salt, v.info.flippingBit(bit)) != v.okm, "info bit \(bit)")
        }
    }

    @Test func hkdfSHA256_zeroOutputLength_throws() {
        #expect(throws: CryptoError.self) { try Crypto.hkdfSHA256(ikm: [1], salt: [], info: [], count: 0) }
    }

    /// RFC 5869 Section 2.3: L <= 255 * HashLen.
    @Test func hkdfSHA256_outputLongerThan255Blocks_throws() throws {
        #expect(try Crypto.hkdfSHA256(ikm: [1], salt: [], info: [], count: 255 * 32).count == 255 * 32)
        #expect(throws: CryptoError.self) { try Crypto.hkdfSHA256(ikm: [1], salt: [], info: [], count: 255 * 32 + 1) }
    }
}
