import LatchkeyCrypto
import Testing

/// The batched and context-reusing primitives `verify` uses give exactly what the one-at-a-time
/// ones give: key unwrap of many keys under one KEK, and AES-GCM through a reused context.
@Suite struct BatchedCryptoTests {
    /// Every batch size up to the limit, every KEK size, keys of 16 to 40 bytes, and tampered
    /// or foreign wrapped keys among good ones: each key's result and bytes equal a single unwrap.
    @Test func unwrapMany_equalsUnwrapOneByOne() throws {
        var seed: UInt8 = 1
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in seed = seed &* 29 &+ 71; return seed } }
        for kekSize in [16, 24, 32] {
            let kek = bytes(kekSize)
            let other = bytes(kekSize)
            for keySize in [16, 24, 32, 40] {
                for count in [1, 2, 3, 7, 8, 9, 16, Crypto.keyUnwrapBatch] {
                    var wrapped: [[UInt8]] = []
                    for k in 0..<count {
                        var w = try Crypto.aesKeyWrap(kek: k % 5 == 3 ? other : kek, key: bytes(keySize))
                        if k % 7 == 2 { w[k % w.count] ^= 0x10 }
                        wrapped.append(w)
                    }
                    let each = keySize + 8
                    var out = [UInt8](repeating: 0xEE, count: count * keySize)
                    var ok = [UInt8](repeating: 9, count: count)
                    let flat = wrapped.flatMap { $0 }
                    let done = flat.withUnsafeBytes { w in
                        out.withUnsafeMutableBytes { o in
                            ok.withUnsafeMutableBufferPointer { f in
                                Crypto.aesKeyUnwrap(kek: SecretKey(copying: kek), many: w, each: each, count: count, into: o, ok: f)
                            }
                        }
                    }
                    #expect(done)
                    for k in 0..<count {
                        let single = try? Crypto.aesKeyUnwrap(kek: kek, wrapped: wrapped[k])
                        #expect(ok[k] == (single == nil ? 0 : 1), "KEK \(kekSize), key \(keySize), \(k) of \(count)")
                        #expect(Array(out[k * keySize..<(k + 1) * keySize]) == (single ?? [UInt8](repeating: 0, count: keySize)))
                    }
                }
            }
        }
    }

    /// Every batch size up to the limit, every KEK size, keys of 16 to 40 bytes: each wrapped key
    /// equals a single wrap, and unwraps to its key.
    @Test func wrapMany_equalsWrapOneByOne() throws {
        var seed: UInt8 = 3
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in seed = seed &* 29 &+ 71; return seed } }
        for kekSize in [16, 24, 32] {
            let kek = bytes(kekSize)
            for keySize in [16, 24, 32, 40] {
                for count in [0, 1, 2, 3, 7, 8, 9, 16, Crypto.keyUnwrapBatch] {
                    let keys = (0..<count).map { _ in bytes(keySize) }
                    let each = keySize + 8
                    var out = [UInt8](repeating: 0xEE, count: count * each)
                    let done = keys.flatMap { $0 }.withUnsafeBytes { k in
                        out.withUnsafeMutableBytes { o in Crypto.aesKeyWrap(kek: SecretKey(copying: kek), many: k, each: keySize, count: count, into: o) }
                    }
                    #expect(done)
                    for k in 0..<count {
                        let wrapped = Array(out[k * each..<(k + 1) * each])
                        #expect(wrapped == (try Crypto.aesKeyWrap(kek: kek, key: keys[k])), "KEK \(kekSize), key \(keySize), \(k) of \(count)")
                        #expect((try? Crypto.aesKeyUnwrap(kek: kek, wrapped: wrapped)) == keys[k])
                    }
                }
            }
        }
        // More keys than the limit, or buffers too short, are refused.
        let kek = SecretKey(copying: bytes(32))
        let keys = [UInt8](repeating: 1, count: 32 * (Crypto.keyUnwrapBatch + 1))
        var out = [UInt8](repeating: 0, count: 40 * (Crypto.keyUnwrapBatch + 1))
        keys.withUnsafeBytes { k in
            out.withUnsafeMutableBytes { o in
                #expect(!Crypto.aesKeyWrap(kek: kek, many: k, each: 32, count: Crypto.keyUnwrapBatch + 1, into: o))
                #expect(!Crypto.aesKeyWrap(kek: kek, many: k, each: 32, count: 2, into: UnsafeMutableRawBufferPointer(rebasing: o[0..<79])))
                #expect(!Crypto.aesKeyWrap(kek: kek, many: k, each: 12, count: 2, into: o))
            }
        }
    }

    @Test func unwrapMany_refusesMoreThanItsLimitAndShortBuffers() {
        let kek = SecretKey(copying: [UInt8](repeating: 7, count: 32))
        let n = Crypto.keyUnwrapBatch + 1
        let wrapped = [UInt8](repeating: 0, count: n * 40)
        var out = [UInt8](repeating: 0, count: n * 32)
        var ok = [UInt8](repeating: 0, count: n)
        wrapped.withUnsafeBytes { w in
            out.withUnsafeMutableBytes { o in
                ok.withUnsafeMutableBufferPointer { f in
                    #expect(!Crypto.aesKeyUnwrap(kek: kek, many: w, each: 40, count: n, into: o, ok: f))
                    #expect(!Crypto.aesKeyUnwrap(kek: kek, many: w, each: 40, count: 2, into: UnsafeMutableRawBufferPointer(rebasing: o[0..<63]), ok: f))
                }
            }
        }
    }

    /// One context opens messages under keys of every size in turn, and refuses tampered ones
    /// without spoiling the next, as the one-shot open does.
    @Test func gcmThroughOneContext_equalsOneShotOpen() throws {
        let context = GCMContext()
        let nonce = [UInt8](repeating: 0, count: 12)
        for round in 0..<40 {
            let key = (0..<[16, 24, 32][round % 3]).map { UInt8(truncatingIfNeeded: $0 * 13 + round) }
            let plaintext = (0..<(round * 7 % 90)).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ round) }
            let aad = (0..<(round % 5 * 16)).map { UInt8(truncatingIfNeeded: $0 + round) }
            var (ciphertext, tag) = try Crypto.aesGCMSeal(key: key, nonce: nonce, aad: aad, plaintext: plaintext)
            if round % 4 == 1 { tag[round % 16] ^= 1 }
            if round % 4 == 3, !ciphertext.isEmpty { ciphertext[round % ciphertext.count] ^= 0x80 }
            let oneShot = try? Crypto.aesGCMOpen(key: key, nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag)
            var out = [UInt8](repeating: 0xEE, count: ciphertext.count)
            let opened = key.withUnsafeBytes { k in
                nonce.withUnsafeBytes { n in
                    aad.withUnsafeBytes { a in
                        ciphertext.withUnsafeBytes { c in
                            tag.withUnsafeBytes { t in
                                out.withUnsafeMutableBytes { Crypto.aesGCMOpen(context: context, key: k, nonce: n, aad: a, ciphertext: c, tag: t, into: $0) }
                            }
                        }
                    }
                }
            }
            #expect(opened == (oneShot != nil), "round \(round)")
            if let oneShot { #expect(out == oneShot) } else { #expect(out.allSatisfy { $0 == 0 }) }
        }
    }
}
