import LatchkeyCrypto
import Testing

@Suite struct ConstantTimeEqualTests {
    @Test func constantTimeEqual_equalBytes_isTrue() {
        let a: [UInt8] = Array(0..<32)
        #expect(Crypto.constantTimeEqual(a, a))
        #expect(Crypto.constantTimeEqual(a, Array(0..<32)))
    }

    @Test func constantTimeEqual_anySingleBitDifference_isFalse() {
        let a: [UInt8] = Array(0..<32)
        for bit in 0..<(a.count * 8) {
            #expect(!Crypto.constantTimeEqual(a, a.flippingBit(bit)), "bit \(bit)")
        }
    }

    @Test func constantTimeEqual_differentLengths_isFalse() {
        let a: [UInt8] = Array(0..<32)
        #expect(!Crypto.constantTimeEqual(a, Array(a.prefix(31))))
        #expect(!Crypto.constantTimeEqual(Array(a.prefix(31)), a))
        #expect(!Crypto.constantTimeEqual(a, a + [0]))
    }

    @Test func constantTimeEqual_empty_isTrueOnlyAgainstEmpty() {
        #expect(Crypto.constantTimeEqual([], []))
        #expect(!Crypto.constantTimeEqual([], [0]))
        #expect(!Crypto.constantTimeEqual([0], []))
    }
}

@Suite struct SecretMemoryTests {
    @Test func cleanse_zeroesEveryByteAndKeepsLength() throws {
        var buffer = [UInt8](repeating: 0xA5, count: 100)
        Crypto.cleanse(&buffer)
        #expect(buffer.count == 100)
        #expect(buffer.allSatisfy { $0 == 0 })
        var empty: [UInt8] = []
        Crypto.cleanse(&empty)
        #expect(empty.isEmpty)
    }

    @Test func secretKeyConsuming_zeroesTheSourceArray() {
        var bytes: [UInt8] = Array(1...32)
        let key = SecretKey(consuming: &bytes)
        #expect(bytes == [UInt8](repeating: 0, count: 32))
        #expect(key.copyBytes() == Array(1...32))
        #expect(key.count == 32)
    }

    @Test func secretKeyDescription_neverContainsTheKeyBytesInHex() throws {
        for key in [SecretKey(copying: [UInt8](repeating: 0xAB, count: 32)), try SecretKey.random(count: 32)] {
            let bytes = key.copyBytes()
            let renderings = [key.description, "\(key)", String(describing: key), String(reflecting: key)]
            for text in renderings {
                let lower = text.lowercased()
                #expect(!lower.contains(bytes.hex), "\(text)")
                // No 4-byte window of the key either.
                for i in 0...(bytes.count - 4) {
                    #expect(!lower.contains(Array(bytes[i..<(i + 4)]).hex), "\(text) leaks bytes \(i)..<\(i + 4)")
                }
            }
            #expect(key.description.contains("redacted"))
        }
    }

    @Test func secretKeyRandom_givesDistinctKeysOfTheRequestedLength() throws {
        let keys = try (0..<8).map { _ in try SecretKey.random() }
        #expect(keys.allSatisfy { $0.count == 32 })
        #expect(Set(keys.map { $0.copyBytes() }).count == keys.count)
        #expect(try SecretKey.random(count: 16).count == 16)
    }

    @Test func secretKey_emptyKey_hasZeroCount() {
        let key = SecretKey(copying: [])
        #expect(key.count == 0)
        #expect(key.copyBytes() == [])
    }

    @Test func randomBytes_zeroCount_isEmpty() throws {
        #expect(try Crypto.randomBytes(0) == [])
    }

    @Test func randomBytes_givesRequestedLengthAndDistinctOutputs() throws {
        let a = try Crypto.randomBytes(32), b = try Crypto.randomBytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
    }
}
