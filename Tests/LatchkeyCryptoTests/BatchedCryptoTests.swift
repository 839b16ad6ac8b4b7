import LatchkeyCrypto
import Testing

/// The batched and context-reusing primitives `verify` uses give exactly what the one-at-a-time
/// ones give: key unwrap of many keys under one KEK, and AES-GCM through a reused context.
@Suite struct BatchedCryptoTests {
    /// Every batch size up to the limit, every KEK size, keys of 16 to 40 bytes, and tampered
    /// or foreign wrapped keys among good ones: each key's result and bytes equal a single unwrap.
    @Test func unwrapMany_equalsUnwrapOneByOne() throws {
        var seed: UInt8 = 1
        func bytes(_ n: Int) -> [UInt8] {
            (0..<n).map { _ in
                seed = seed &* 29 &+ 71; return seed
            }
        }
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
                                Crypto.aesKeyUnwrap(
                                    kek: SecretKey(copying: kek), many: w, each: each, count: count, into: o, ok: f)
                            }
                        }
                    }
                    #expect(done)
                    for k in 0..<count {
                        let single = try? Crypto.aesKeyUnwrap(kek: kek, wrapped: wrapped[k])
                        #expect(ok[k] == (single == nil ? 0 : 1), "KEK \(kekSize), key \(keySize), \(k) of \(count)")
                        #expect(
                            Array(out[k * keySize..<(k + 1) * keySize])
                                == (single ?? [UInt8](repeating: 0, count: keySize)))
                    }
                }
            }
        }
    }

    /// Unwrapping through the KEK's cached key schedule gives what a one-shot unwrap gives, for
    /// every KEK size and key sizes of 16 to 40 bytes, again and again through one schedule;
    /// a tampered or foreign key fails with the output zeroed; a bad length or a KEK that is
    /// not an AES key fails.
    @Test func unwrapThroughCachedSchedule_equalsOneShotUnwrap() throws {
        var seed: UInt8 = 3
        func bytes(_ n: Int) -> [UInt8] {
            (0..<n).map { _ in
                seed = seed &* 29 &+ 71; return seed
            }
        }
        for kekSize in [16, 24, 32] {
            let kekBytes = bytes(kekSize)
            let kek = SecretKey(copying: kekBytes)
            for keySize in [16, 24, 32, 40] {
                for round in 0..<6 {
                    var wrapped = try Crypto.aesKeyWrap(
                        kek: round == 4 ? bytes(kekSize) : kekBytes, key: bytes(keySize))
                    if round == 3 { wrapped[round % wrapped.count] ^= 0x04 }
                    let single = try? Crypto.aesKeyUnwrap(kek: kekBytes, wrapped: wrapped)
                    var out = [UInt8](repeating: 0xEE, count: keySize)
                    let ok = wrapped.withUnsafeBytes { w in
                        out.withUnsafeMutableBytes { Crypto.aesKeyUnwrap(kek: kek, wrapped: w, into: $0) }
                    }
                    #expect(ok == (single != nil), "KEK \(kekSize), key \(keySize), round \(round)")
                    #expect(out == (single ?? [UInt8](repeating: 0, count: keySize)))
                }
            }
            for length in [0, 8, 16, 20, 33] {
                var out = [UInt8](repeating: 0, count: 64)
                let ok = bytes(length).withUnsafeBytes { w in
                    out.withUnsafeMutableBytes { Crypto.aesKeyUnwrap(kek: kek, wrapped: w, into: $0) }
                }
                #expect(!ok, "\(length) wrapped bytes")
            }
            let wrapped = try Crypto.aesKeyWrap(kek: kekBytes, key: bytes(32))
            var short = [UInt8](repeating: 0, count: 31)
            #expect(
                !wrapped.withUnsafeBytes { w in
                    short.withUnsafeMutableBytes { Crypto.aesKeyUnwrap(kek: kek, wrapped: w, into: $0) }
                })
        }
        let notAES = SecretKey(copying: bytes(20))
        let wrapped = try Crypto.aesKeyWrap(kek: bytes(16), key: bytes(16))
        var out = [UInt8](repeating: 0, count: 16)
        #expect(
            !wrapped.withUnsafeBytes { w in
                out.withUnsafeMutableBytes { Crypto.aesKeyUnwrap(kek: notAES, wrapped: w, into: $0) }
            })
    }

    /// Threads sharing one class key share its schedule: each still gets its own key right.
    @Test func unwrapThroughCachedSchedule_fromManyThreadsAtOnce() async throws {
        let kekBytes = [UInt8](repeating: 0x5A, count: 32)
        let kek = SecretKey(copying: kekBytes)
        let keys = (0..<8).map { t in (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ t &* 13) } }
        let wrapped = try keys.map { try Crypto.aesKeyWrap(kek: kekBytes, key: $0) }
        let failures = await withTaskGroup(of: Int.self) { group in
            for t in 0..<8 {
                group.addTask {
                    var bad = 0
                    for _ in 0..<500 {
                        var out = [UInt8](repeating: 0, count: 32)
                        let ok = wrapped[t].withUnsafeBytes { w in
                            out.withUnsafeMutableBytes { Crypto.aesKeyUnwrap(kek: kek, wrapped: w, into: $0) }
                        }
                        if !ok || out != keys[t] { bad += 1 }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
    }

    /// Every batch size up to the limit, every KEK size, keys of 16 to 40 bytes: each wrapped key
    /// equals a single wrap, and unwraps to its key.
    @Test func wrapMany_equalsWrapOneByOne() throws {
        var seed: UInt8 = 3
        func bytes(_ n: Int) -> [UInt8] {
            (0..<n).map { _ in
                seed = seed &* 29 &+ 71; return seed
            }
        }
        for kekSize in [16, 24, 32] {
            let kek = bytes(kekSize)
            for keySize in [16, 24, 32, 40] {
                for count in [0, 1, 2, 3, 7, 8, 9, 16, Crypto.keyUnwrapBatch] {
                    let keys = (0..<count).map { _ in bytes(keySize) }
                    let each = keySize + 8
                    var out = [UInt8](repeating: 0xEE, count: count * each)
                    let done = keys.flatMap { $0 }.withUnsafeBytes { k in
                        out.withUnsafeMutableBytes { o in
                            Crypto.aesKeyWrap(
                                kek: SecretKey(copying: kek), many: k, each: keySize, count: count, into: o)
                        }
                    }
                    #expect(done)
                    for k in 0..<count {
                        let wrapped = Array(out[k * each..<(k + 1) * each])
                        #expect(
                            wrapped == (try Crypto.aesKeyWrap(kek: kek, key: keys[k])),
                            "KEK \(kekSize), key \(keySize), \(k) of \(count)")
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
                #expect(
                    !Crypto.aesKeyWrap(
                        kek: kek, many: k, each: 32, count: 2, into: UnsafeMutableRawBufferPointer(rebasing: o[0..<79]))
                )
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
                    #expect(
                        !Crypto.aesKeyUnwrap(
                            kek: kek, many: w, each: 40, count: 2,
                            into: UnsafeMutableRawBufferPointer(rebasing: o[0..<63]), ok: f))
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
                                out.withUnsafeMutableBytes {
                                    Crypto.aesGCMOpen(
                                        context: context, key: k, nonce: n, aad: a, ciphertext: c, tag: t, into: $0)
                                }
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
