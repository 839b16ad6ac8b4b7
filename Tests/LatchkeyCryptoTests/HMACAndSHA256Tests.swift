import LatchkeyCrypto
import Testing

/// HMAC-SHA256 against RFC 4231 Section 4 (fixtures/vectors/rfc4231.txt).
@Suite struct HMACSHA256Tests {
    static let fullLengthIDs = ["1", "2", "3", "4", "6", "7"]

    private func vector(_ id: String) throws -> (key: [UInt8], data: [UInt8], mac: [UInt8]) {
        let v = try VectorFile.load("rfc4231.txt").vector(id)
        return (try v.bytes("Key"), try v.bytes("Data"), try v.bytes("HMAC-SHA-256"))
    }

    /// HMAC from its definition (RFC 2104): H((K0 ^ opad) || H((K0 ^ ipad) || m)), with K0 the
    /// key zero-padded to the 64-byte block (keys longer than a block are hashed first).
    private func hmacByDefinition(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var k0 = key.count > 64 ? Crypto.sha256(key) : key
        k0 += [UInt8](repeating: 0, count: 64 - k0.count)
        let inner = Crypto.sha256(k0.map { $0 ^ 0x36 } + message)
        return Crypto.sha256(k0.map { $0 ^ 0x5c } + inner)
    }

    @Test func rfc4231File_holdsTestCases1Through7() throws {
        #expect(try VectorFile.load("rfc4231.txt").vectors.map(\.id) == ["1", "2", "3", "4", "5", "6", "7"])
    }

    @Test(arguments: fullLengthIDs)
    func hmacSHA256_rfc4231TestCase_producesPublishedMAC(id: String) throws {
        let v = try vector(id)
        #expect(Crypto.hmacSHA256(key: v.key, v.data).hex == v.mac.hex)
        #expect(Crypto.hmacSHA256(key: SecretKey(copying: v.key), parts: [v.data]).hex == v.mac.hex)
        #expect(hmacByDefinition(key: v.key, message: v.data).hex == v.mac.hex)
    }

    /// RFC 4231 publishes only the leftmost 128 bits for test case 5.
    @Test func hmacSHA256_rfc4231TestCase5_truncatedTo128BitsMatchesPublishedMAC() throws {
        let v = try vector("5")
        #expect(v.mac.count == 16)
        #expect(Array(Crypto.hmacSHA256(key: v.key, v.data).prefix(16)).hex == v.mac.hex)
    }

    /// The parts are MACed as one concatenated message, empty parts included.
    @Test func hmacSHA256_splitIntoParts_equalsMACOfConcatenation() throws {
        let v = try vector("2")  // "what do ya want for nothing?"
        let parts = [
            [], Array(v.data.prefix(5)), [], Array(v.data.dropFirst(5).prefix(11)), Array(v.data.dropFirst(16)), []
        ]
        #expect(Crypto.hmacSHA256(key: v.key, parts: parts).hex == v.mac.hex)
        #expect(Crypto.hmacSHA256(key: v.key, Array(v.data.prefix(1)), Array(v.data.dropFirst())).hex == v.mac.hex)
    }

    /// The pre-keyed context of a SecretKey (SHA-256 states after K ^ ipad and K ^ opad, copied
    /// onto the stack for each MAC) gives the RFC 2104 MAC for every key length around the
    /// 64-byte block, where a long key is hashed first, and for messages split in two.
    @Test func hmacSHA256_secretKeyContext_matchesDefinitionForEveryKeyLength() {
        for keyLength in [0, 1, 31, 32, 33, 63, 64, 65, 100, 131] {
            let key = (0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let secret = SecretKey(copying: key)
            for messageLength in [0, 1, 55, 56, 64, 119, 400] {
                let message = (0..<messageLength).map { UInt8(truncatingIfNeeded: $0 &* 101 &+ keyLength) }
                let expected = hmacByDefinition(key: key, message: message)
                #expect(
                    Crypto.hmacSHA256(key: secret, parts: [message]) == expected,
                    "key \(keyLength), message \(messageLength)")
                let cut = messageLength / 3
                let twoParts = Array(message[..<cut]).withUnsafeBytes { a in
                    Array(message[cut...]).withUnsafeBytes { b in Crypto.hmacSHA256(key: secret, a, b) }
                }
                #expect(twoParts == expected, "in two parts: key \(keyLength), message \(messageLength)")
            }
        }
    }

    /// One key used from several threads at once: each MAC works on its own copy of the keyed
    /// states, so every MAC is still the right one.
    @Test func hmacSHA256_secretKeyContext_isRightFromManyThreadsAtOnce() async {
        let secret = SecretKey(copying: Array(repeating: 0x42, count: 32))
        let expected = (0..<64).map { i in
            hmacByDefinition(key: Array(repeating: 0x42, count: 32), message: Array(repeating: UInt8(i), count: i * 7))
        }
        let wrong = await withTaskGroup(of: Int.self) { group in
            for t in 0..<8 {
                group.addTask {
                    var bad = 0
                    for round in 0..<200 {
                        let i = (round + t) % 64
                        if Crypto.hmacSHA256(key: secret, parts: [Array(repeating: UInt8(i), count: i * 7)])
                            != expected[i]
                        {
                            bad += 1
                        }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
    }

    @Test(arguments: fullLengthIDs)
    func hmacSHA256_withFlippedKeyOrMessageBit_changesMAC(id: String) throws {
        let v = try vector(id)
        for bit in v.key.sampleBitPositions {
            #expect(Crypto.hmacSHA256(key: v.key.flippingBit(bit), v.data) != v.mac, "key bit \(bit)")
        }
        for bit in v.data.sampleBitPositions {
            #expect(Crypto.hmacSHA256(key: v.key, v.data.flippingBit(bit)) != v.mac, "data bit \(bit)")
        }
    }

    /// Empty key and empty message: checked against the RFC 2104 definition and the known
    /// value (cross-checked with Python's hmac module), whether the message is one empty part,
    /// no parts at all, or the key is a SecretKey.
    @Test func hmacSHA256_emptyKeyAndMessage_matchesDefinition() {
        let expected = "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"
        #expect(hmacByDefinition(key: [], message: []).hex == expected)
        #expect(Crypto.hmacSHA256(key: [], []).hex == expected)
        #expect(Crypto.hmacSHA256(key: [], parts: []).hex == expected)
        #expect(Crypto.hmacSHA256(key: SecretKey(copying: []), parts: []).hex == expected)
        // RFC 2104: an empty key is the 64-byte zero block.
        #expect(Crypto.hmacSHA256(key: [UInt8](repeating: 0, count: 64), []).hex == expected)
    }

    @Test func hmacSHA256_emptyKeyOrEmptyMessage_matchesDefinition() throws {
        let v = try vector("1")
        #expect(Crypto.hmacSHA256(key: [], v.data) == hmacByDefinition(key: [], message: v.data))
        #expect(Crypto.hmacSHA256(key: v.key, []) == hmacByDefinition(key: v.key, message: []))
    }
}

/// SHA-256 against FIPS 180-2 Appendix B and the CAVP zero-length message
/// (fixtures/vectors/fips180.txt).
@Suite struct SHA256Tests {
    private func vector(_ id: String) throws -> (message: [UInt8], digest: [UInt8]) {
        let v = try VectorFile.load("fips180.txt").vector(id)
        return (try v.bytes("Message"), try v.bytes("Digest"))
    }

    @Test(arguments: ["B.1", "B.2", "empty"])
    func sha256_publishedMessage_producesPublishedDigest(id: String) throws {
        let v = try vector(id)
        #expect(Crypto.sha256(v.message).hex == v.digest.hex)
    }

    @Test func sha256_abc_givesFIPS180Digest() throws {
        let v = try vector("B.1")
        #expect(v.message == Array("abc".utf8))
        #expect(
            Crypto.sha256(Array("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sha256_emptyInput_givesPublishedDigest() throws {
        let v = try vector("empty")
        #expect(v.message.isEmpty)
        #expect(Crypto.sha256([]).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Crypto.sha256([]) == v.digest)
    }

    @Test(arguments: ["B.1", "B.2"])
    func sha256_withFlippedInputBit_changesDigest(id: String) throws {
        let v = try vector(id)
        for bit in 0..<(v.message.count * 8) {
            #expect(Crypto.sha256(v.message.flippingBit(bit)) != v.digest, "bit \(bit)")
        }
    }
}
