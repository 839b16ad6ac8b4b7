#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import LatchkeyCrypto
import Testing

/// scrypt against RFC 7914 Section 12 (fixtures/vectors/rfc7914.txt).
@Suite struct ScryptTests {
    /// Generous for vectors 1-3 (the largest, vector 3, needs about 16 MiB).
    static let maxMemory: UInt64 = 64 << 20

    /// Vector 4 (N = 2^20, r = 8) allocates 128 * r * N = 1 GiB and takes seconds; it only
    /// runs when LATCHKEY_SLOW_TESTS=1 so the default suite stays fast and fits small CI runners.
    static let slowTestsEnabled: Bool = getenv("LATCHKEY_SLOW_TESTS").map { String(cString: $0) } == "1"

    private struct Vector {
        let password, salt, dk: [UInt8]
        let n: UInt64
        let r, p: UInt32
        let length: Int
    }

    private func vector(_ id: String) throws -> Vector {
        let v = try VectorFile.load("rfc7914.txt").vector(id)
        return Vector(
            password: try v.bytes("P"), salt: try v.bytes("S"), dk: try v.bytes("DK"),
            n: try v.int("N", as: UInt64.self), r: try v.int("r", as: UInt32.self),
            p: try v.int("p", as: UInt32.self), length: try v.int("dkLen"))
    }

    private func derive(
        _ v: Vector, password: [UInt8]? = nil, salt: [UInt8]? = nil,
        maxMemory: UInt64 = maxMemory
    ) throws -> [UInt8] {
        try Crypto.scrypt(
            password: password ?? v.password, salt: salt ?? v.salt, n: v.n, r: v.r, p: v.p,
            maxMemory: maxMemory, count: v.length)
    }

    /// Memory OpenSSL needs for (N, r, p): the ROMix array V of 128 * r * N bytes plus
    /// scratch (OpenSSL counts 128 * r * (N + 2) + 128 * r * p).
    private func romixBytes(_ v: Vector) -> UInt64 { 128 * UInt64(v.r) * v.n }

    @Test func rfc7914File_holdsAllFourSection12Vectors() throws {
        #expect(try VectorFile.load("rfc7914.txt").vectors.map(\.id) == ["1", "2", "3", "4"])
    }

    @Test(arguments: ["1", "2", "3"])
    func scrypt_rfc7914Vector_producesPublishedDK(id: String) throws {
        let v = try vector(id)
        #expect(v.dk.count == v.length)
        #expect(try derive(v).hex == v.dk.hex)
    }

    @Test(.enabled(if: slowTestsEnabled, "needs 1 GiB; set LATCHKEY_SLOW_TESTS=1"))
    func scrypt_rfc7914Vector4_withOneGiBWorkingSet_producesPublishedDK() throws {
        let v = try vector("4")
        #expect(try derive(v, maxMemory: 2 << 30).hex == v.dk.hex)
    }

    /// RFC 7914 vector 1 is the empty-input case: empty password and empty salt.
    @Test func scrypt_emptyPasswordAndSalt_givesRFC7914Vector1() throws {
        let v = try vector("1")
        #expect(v.password.isEmpty && v.salt.isEmpty)
        #expect(
            try Crypto.scrypt(password: [], salt: [], n: 16, r: 1, p: 1, maxMemory: Self.maxMemory, count: 64).hex
                == v.dk.hex)
    }

    /// maxMemory is passed to OpenSSL as maxmem and honoured: a ceiling below what (N, r, p)
    /// need fails instead of allocating, and the same call with room succeeds.
    @Test(arguments: ["1", "3"])
    func scrypt_maxMemoryBelowRequirement_throws(id: String) throws {
        let v = try vector(id)
        let error = #expect(throws: CryptoError.self) { try derive(v, maxMemory: romixBytes(v)) }
        #expect(error?.isFailed == true, "\(String(describing: error))")
        #expect(try derive(v, maxMemory: 2 * romixBytes(v)).hex == v.dk.hex)
    }

    @Test func scrypt_withFlippedInputBit_changesOutput() throws {
        let v = try vector("3")
        for bit in v.password.sampleBitPositions {
            #expect(try derive(v, password: v.password.flippingBit(bit)) != v.dk, "password bit \(bit)")
        }
        for bit in [0, v.salt.count * 8 - 1] {
            #expect(try derive(v, salt: v.salt.flippingBit(bit)) != v.dk, "salt bit \(bit)")
        }
    }

    @Test(arguments: [0, 1, 3, 1000] as [UInt64])
    func scrypt_nNotAPowerOfTwoAboveOne_throwsInvalidArgument(n: UInt64) {
        let error = #expect(throws: CryptoError.self) {
            try Crypto.scrypt(password: [1], salt: [2], n: n, r: 1, p: 1, maxMemory: Self.maxMemory, count: 32)
        }
        #expect(error?.isInvalidArgument == true)
    }
}
