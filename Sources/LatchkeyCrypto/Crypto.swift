import CLatchkeyCrypto

/// The crypto core: every primitive Latchkey uses, backed by OpenSSL 3 libcrypto.
///
/// This module (with its C target) is the only place that calls OpenSSL. Inputs are byte
/// collections; outputs are `[UInt8]` or `SecretKey`. Failures throw `CryptoError`.
public enum Crypto {
    /// Bytes from OpenSSL's CSPRNG, which is seeded from the operating system.
    public static func randomBytes(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { lk_random($0.baseAddress, count) }
        guard ok == 1 else { throw failure("RAND_bytes") }
        return out
    }

    /// Fills `buffer` from OpenSSL's CSPRNG in place (for SecRandomCopyBytes: no copy of the
    /// bytes is left behind). Large buffers are filled in chunks RAND_bytes accepts.
    /// - Returns: false when the generator failed.
    package static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard var p = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
        var left = buffer.count
        while left > 0 {
            let n = min(left, 1 << 30)
            guard lk_random(p, n) == 1 else { return false }
            p += n
            left -= n
        }
        return true
    }

    /// SHA-256.
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        digest(data, size: 32, "SHA-256", lk_sha256)
    }

    /// The `size`-byte digest of `data` by one of the C hash functions (`lk_sha1`, `lk_sha256`),
    /// which fail only when OpenSSL itself is broken.
    @inline(__always)
    static func digest(
        _ data: [UInt8], size: Int, _ name: String,
        _ hash: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?) -> Int32
    ) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        let ok = data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { hash(d.baseAddress, d.count, $0.baseAddress) }
        }
        precondition(ok == 1, "\(name) failed inside OpenSSL")
        return out
    }

    /// HMAC-SHA256 of the concatenation of `parts` under `key`.
    public static func hmacSHA256(key: [UInt8], _ parts: [UInt8]...) -> [UInt8] {
        hmacSHA256(key: key, parts: parts)
    }

    /// HMAC-SHA256 of the concatenation of `parts` under `key`.
    public static func hmacSHA256(key: [UInt8], parts: [[UInt8]]) -> [UInt8] {
        key.withUnsafeBufferPointer { k in hmac(k, parts: parts) }
    }

    /// HMAC-SHA256 under a `SecretKey`, through its cached keyed context.
    public static func hmacSHA256(key: SecretKey, parts: [[UInt8]]) -> [UInt8] {
        let ctx = key.hmacContext
        var out = [UInt8](repeating: 0, count: 32)
        let ok = withPinned(parts) { ptrs, lens in
            out.withUnsafeMutableBufferPointer {
                lk_hmac_sha256_keyed(ctx.handle, ptrs, lens, parts.count, $0.baseAddress)
            }
        }
        precondition(ok == 1, "HMAC-SHA256 failed inside OpenSSL")
        return out
    }

    /// HMAC-SHA256 of `a ‖ b` under a `SecretKey`, read in place (no part is copied).
    public static func hmacSHA256(key: SecretKey, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { buf, n in
            hmacSHA256(key: key, a, b, into: UnsafeMutableRawBufferPointer(buf))
            n = 32
        }
    }

    /// HMAC-SHA256 of `a ‖ b` under a `SecretKey` into `out` (at least 32 bytes), allocating
    /// nothing: for the per-record paths (record tags, attribute hashes) that run a million
    /// times in a `verify`.
    package static func hmacSHA256(
        key: SecretKey, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) {
        hmacSHA256(context: key.hmacContext, a, b, into: out)
    }

    /// The same through a key's context fetched once (`SecretKey.hmacContext` takes a lock).
    package static func hmacSHA256(
        context ctx: HMACContext, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) {
        precondition(out.count >= 32, "an HMAC-SHA256 needs 32 bytes of output")
        let ok = lk_hmac_sha256_keyed2(
            ctx.handle, a.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count,
            b.baseAddress?.assumingMemoryBound(to: UInt8.self), b.count,
            out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        precondition(ok == 1, "HMAC-SHA256 failed inside OpenSSL")
    }

    /// The hash functions `hmac(_:key:data:)` takes: those one-time codes name (RFC 6238 §1.2,
    /// the `algorithm` of an otpauth URI).
    public enum HMACDigest: String, Sendable, CaseIterable {
        case sha1 = "SHA1", sha256 = "SHA256", sha512 = "SHA512"

        /// The size of its output in bytes.
        public var size: Int {
            switch self {
            case .sha1: return 20
            case .sha256: return 32
            case .sha512: return 64
            }
        }

        var code: Int32 {
            switch self {
            case .sha1: return 1
            case .sha256: return 256
            case .sha512: return 512
            }
        }
    }

    /// HMAC (RFC 2104) of `data` under `key` with `digest`. SHA-1 here serves HOTP and TOTP
    /// (RFC 4226, RFC 6238), where HMAC-SHA-1 is still sound; the keychain itself uses SHA-256.
    public static func hmac(_ digest: HMACDigest, key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        var n = 0
        let ok = key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer {
                    lk_hmac(digest.code, k.baseAddress, k.count, d.baseAddress, d.count, $0.baseAddress, &n)
                }
            }
        }
        precondition(ok == 1 && n == digest.size, "HMAC-\(digest.rawValue) failed inside OpenSSL")
        out.removeSubrange(n...)
        return out
    }

    /// Constant-time equality of two buffers (CRYPTO_memcmp). Lengths are not secret.
    package static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return lk_memcmp_ct(a.baseAddress, b.baseAddress, a.count) == 0
    }

    /// Calls `body` with C arrays of pointers to and lengths of every part, all pinned.
    private static func withPinned<R>(
        _ parts: [[UInt8]], _ body: (UnsafePointer<UnsafePointer<UInt8>?>?, UnsafePointer<Int>?) -> R
    ) -> R {
        var ptrs: [UnsafePointer<UInt8>?] = []
        var lens: [Int] = []
        ptrs.reserveCapacity(parts.count)
        lens.reserveCapacity(parts.count)
        func go(_ i: Int) -> R {
            if i == parts.count {
                return ptrs.withUnsafeBufferPointer { p in
                    lens.withUnsafeBufferPointer { l in body(p.baseAddress, l.baseAddress) }
                }
            }
            return parts[i].withUnsafeBufferPointer { b in
                ptrs.append(b.baseAddress)
                lens.append(b.count)
                return go(i + 1)
            }
        }
        return go(0)
    }

    private static func hmac(_ key: UnsafeBufferPointer<UInt8>, parts: [[UInt8]]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        // Pin every part for the duration of the call.
        func go(_ i: Int, _ ptrs: inout [UnsafePointer<UInt8>?], _ lens: inout [Int]) -> Int32 {
            if i == parts.count {
                return ptrs.withUnsafeBufferPointer { p in
                    lens.withUnsafeBufferPointer { l in
                        out.withUnsafeMutableBufferPointer {
                            lk_hmac_sha256(
                                key.baseAddress, key.count, p.baseAddress, l.baseAddress,
                                parts.count, $0.baseAddress)
                        }
                    }
                }
            }
            return parts[i].withUnsafeBufferPointer { b in
                ptrs.append(b.baseAddress)
                lens.append(b.count)
                return go(i + 1, &ptrs, &lens)
            }
        }
        var ptrs: [UnsafePointer<UInt8>?] = []
        var lens: [Int] = []
        ptrs.reserveCapacity(parts.count)
        lens.reserveCapacity(parts.count)
        let ok = go(0, &ptrs, &lens)
        precondition(ok == 1, "HMAC-SHA256 failed inside OpenSSL")
        return out
    }

    /// HKDF-SHA256 (RFC 5869) producing `count` bytes.
    public static func hkdfSHA256(ikm: [UInt8], salt: [UInt8], info: [UInt8], count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = ikm.withUnsafeBufferPointer { i in
            salt.withUnsafeBufferPointer { s in
                info.withUnsafeBufferPointer { f in
                    out.withUnsafeMutableBufferPointer {
                        lk_hkdf_sha256(
                            i.baseAddress, i.count, s.baseAddress, s.count,
                            f.baseAddress, f.count, $0.baseAddress, count)
                    }
                }
            }
        }
        guard ok == 1 else { throw failure("HKDF-SHA256") }
        return out
    }

    /// HKDF-SHA256 with a `SecretKey` as input keying material, returning a `SecretKey`.
    public static func hkdfSHA256(ikm: SecretKey, salt: [UInt8], info: [UInt8], count: Int = 32) throws -> SecretKey {
        var material = ikm.copyBytes()
        defer { cleanse(&material) }
        var out = try hkdfSHA256(ikm: material, salt: salt, info: info, count: count)
        return SecretKey(consuming: &out)
    }

    /// scrypt (RFC 7914). `maxMemory` is the explicit ceiling passed to OpenSSL as `maxmem`.
    public static func scrypt(
        password: [UInt8], salt: [UInt8], n: UInt64, r: UInt32, p: UInt32,
        maxMemory: UInt64, count: Int
    ) throws -> [UInt8] {
        guard n > 1, n & (n - 1) == 0 else {
            throw CryptoError.invalidArgument(operation: "scrypt", reason: "N must be a power of two greater than 1")
        }
        var out = [UInt8](repeating: 0, count: count)
        let ok = password.withUnsafeBufferPointer { pw in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer {
                    lk_scrypt(
                        pw.baseAddress, pw.count, s.baseAddress, s.count, n, r, p, maxMemory,
                        $0.baseAddress, count)
                }
            }
        }
        guard ok == 1 else { throw failure("scrypt") }
        return out
    }

    /// AES key wrap (RFC 3394) of `key` under `kek`.
    public static func aesKeyWrap(kek: [UInt8], key: [UInt8]) throws -> [UInt8] {
        guard [16, 24, 32].contains(kek.count), key.count >= 16, key.count % 8 == 0 else {
            throw CryptoError.invalidArgument(operation: "AES key wrap", reason: "bad key or KEK length")
        }
        var out = [UInt8](repeating: 0, count: key.count + 8)
        let ok = kek.withUnsafeBufferPointer { k in
            key.withUnsafeBufferPointer { i in
                out.withUnsafeMutableBufferPointer {
                    lk_aes_kw_wrap(k.baseAddress, k.count, i.baseAddress, i.count, $0.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw failure("AES key wrap") }
        return out
    }

    /// AES key unwrap (RFC 3394); throws `.integrityCheckFailed` for a wrong KEK or tampered input.
    public static func aesKeyUnwrap(kek: [UInt8], wrapped: [UInt8]) throws -> [UInt8] {
        guard [16, 24, 32].contains(kek.count), wrapped.count >= 24, wrapped.count % 8 == 0 else {
            throw CryptoError.invalidArgument(operation: "AES key unwrap", reason: "bad key or input length")
        }
        var out = [UInt8](repeating: 0, count: wrapped.count - 8)
        let ok = kek.withUnsafeBufferPointer { k in
            wrapped.withUnsafeBufferPointer { i in
                out.withUnsafeMutableBufferPointer {
                    lk_aes_kw_unwrap(k.baseAddress, k.count, i.baseAddress, i.count, $0.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw CryptoError.integrityCheckFailed(operation: "AES key unwrap") }
        return out
    }

    /// OpenSSL's own AES key wrap (its AES-*-WRAP ciphers), the reference that tests compare
    /// `aesKeyWrap` and `aesKeyUnwrap` with; nil for bad lengths or a failed integrity check.
    package static func openSSLKeyWrapReference(kek: [UInt8], input: [UInt8], unwrap: Bool) -> [UInt8]? {
        guard [16, 24, 32].contains(kek.count), input.count % 8 == 0, input.count >= (unwrap ? 24 : 16) else {
            return nil
        }
        var out = [UInt8](repeating: 0, count: unwrap ? input.count - 8 : input.count + 8)
        let ok = kek.withUnsafeBufferPointer { k in
            input.withUnsafeBufferPointer { i in
                out.withUnsafeMutableBufferPointer {
                    unwrap
                        ? lk_aes_kw_unwrap_openssl(k.baseAddress, k.count, i.baseAddress, i.count, $0.baseAddress)
                        : lk_aes_kw_wrap_openssl(k.baseAddress, k.count, i.baseAddress, i.count, $0.baseAddress)
                }
            }
        }
        return ok == 1 ? out : nil
    }

    /// AES key wrap (RFC 3394) under a `SecretKey`, read in place: no copy of the KEK is made.
    public static func aesKeyWrap(kek: SecretKey, key: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard key.count >= 16, key.count % 8 == 0 else {
            throw CryptoError.invalidArgument(operation: "AES key wrap", reason: "bad key length")
        }
        var out = [UInt8](repeating: 0, count: key.count + 8)
        let ok = try kek.withUnsafeBytes { k -> Int32 in
            guard [16, 24, 32].contains(k.count) else {
                throw CryptoError.invalidArgument(operation: "AES key wrap", reason: "bad KEK length")
            }
            return out.withUnsafeMutableBufferPointer {
                lk_aes_kw_wrap(
                    k.bindMemory(to: UInt8.self).baseAddress, k.count, key.bindMemory(to: UInt8.self).baseAddress,
                    key.count, $0.baseAddress)
            }
        }
        guard ok == 1 else { throw failure("AES key wrap") }
        return out
    }

    /// `aesKeyWrap(kek:key:)` of an array.
    public static func aesKeyWrap(kek: SecretKey, key: [UInt8]) throws -> [UInt8] {
        try key.withUnsafeBytes { try aesKeyWrap(kek: kek, key: $0) }
    }

    /// AES key unwrap (RFC 3394) under a `SecretKey`, read in place: no copy of the KEK is made.
    /// Throws `.integrityCheckFailed` for a wrong KEK or tampered input.
    public static func aesKeyUnwrap(kek: SecretKey, wrapped: [UInt8]) throws -> [UInt8] {
        guard wrapped.count >= 24, wrapped.count % 8 == 0 else {
            throw CryptoError.invalidArgument(operation: "AES key unwrap", reason: "bad input length")
        }
        var out = [UInt8](repeating: 0, count: wrapped.count - 8)
        let ok = try kek.withUnsafeBytes { k -> Int32 in
            guard [16, 24, 32].contains(k.count) else {
                throw CryptoError.invalidArgument(operation: "AES key unwrap", reason: "bad KEK length")
            }
            return wrapped.withUnsafeBufferPointer { i in
                out.withUnsafeMutableBufferPointer {
                    lk_aes_kw_unwrap(
                        k.bindMemory(to: UInt8.self).baseAddress, k.count, i.baseAddress, i.count, $0.baseAddress)
                }
            }
        }
        guard ok == 1 else {
            cleanse(&out)
            throw CryptoError.integrityCheckFailed(operation: "AES key unwrap")
        }
        return out
    }

    /// AES key unwrap (RFC 3394) of `wrapped` into `out` (`wrapped.count` − 8 bytes) through
    /// the KEK's cached key schedule (`SecretKey.unwrapContext`), allocating nothing: for
    /// reading one item, where expanding the class key again was a third of the unwrap.
    /// - Returns: false for a wrong KEK, tampered input or a bad length (`out` is then zeroed).
    package static func aesKeyUnwrap(
        kek: SecretKey, wrapped: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard let context = kek.unwrapContext else { return false }
        return context.unwrap(wrapped, into: out)
    }

    /// Wraps `key` under the key-encryption key `kek`; neither key is copied out.
    public static func wrap(_ key: SecretKey, with kek: SecretKey) throws -> [UInt8] {
        try key.withUnsafeBytes { try aesKeyWrap(kek: kek, key: $0) }
    }

    /// Unwraps a key wrapped by `wrap(_:with:)`.
    public static func unwrap(_ wrapped: [UInt8], with kek: SecretKey) throws -> SecretKey {
        var out = try aesKeyUnwrap(kek: kek, wrapped: wrapped)
        return SecretKey(consuming: &out)
    }

    /// AES-GCM encryption; returns the ciphertext and a 16-byte tag.
    public static func aesGCMSeal(key: [UInt8], nonce: [UInt8], aad: [UInt8], plaintext: [UInt8]) throws -> (
        ciphertext: [UInt8], tag: [UInt8]
    ) {
        guard [16, 24, 32].contains(key.count), !nonce.isEmpty else {
            throw CryptoError.invalidArgument(operation: "AES-GCM seal", reason: "bad key or nonce length")
        }
        var ct = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: 16)
        let ok = key.withUnsafeBufferPointer { k in
            nonce.withUnsafeBufferPointer { n in
                aad.withUnsafeBufferPointer { a in
                    plaintext.withUnsafeBufferPointer { p in
                        ct.withUnsafeMutableBufferPointer { c in
                            tag.withUnsafeMutableBufferPointer { t in
                                lk_aes_gcm_seal(
                                    k.baseAddress, k.count, n.baseAddress, n.count, a.baseAddress, a.count,
                                    p.baseAddress, p.count, c.baseAddress, t.baseAddress, 16)
                            }
                        }
                    }
                }
            }
        }
        guard ok == 1 else { throw failure("AES-GCM seal") }
        return (ct, tag)
    }

    /// AES-GCM decryption; throws `.integrityCheckFailed` when the tag does not verify.
    public static func aesGCMOpen(key: [UInt8], nonce: [UInt8], aad: [UInt8], ciphertext: [UInt8], tag: [UInt8]) throws
        -> [UInt8]
    {
        guard [16, 24, 32].contains(key.count), !nonce.isEmpty, (12...16).contains(tag.count) else {
            throw CryptoError.invalidArgument(operation: "AES-GCM open", reason: "bad key, nonce or tag length")
        }
        var pt = [UInt8](repeating: 0, count: ciphertext.count)
        let ok = key.withUnsafeBufferPointer { k in
            nonce.withUnsafeBufferPointer { n in
                aad.withUnsafeBufferPointer { a in
                    ciphertext.withUnsafeBufferPointer { c in
                        tag.withUnsafeBufferPointer { t in
                            pt.withUnsafeMutableBufferPointer { p in
                                lk_aes_gcm_open(
                                    k.baseAddress, k.count, n.baseAddress, n.count, a.baseAddress, a.count,
                                    c.baseAddress, c.count, t.baseAddress, t.count, p.baseAddress)
                            }
                        }
                    }
                }
            }
        }
        guard ok == 1 else { throw CryptoError.integrityCheckFailed(operation: "AES-GCM open") }
        return pt
    }

    /// The most keys `aesKeyUnwrap(kek:many:each:count:into:ok:)` takes at once.
    package static let keyUnwrapBatch = Int(LK_KW_MANY_MAX)

    /// AES key unwrap (RFC 3394) of `count` keys (at most `keyUnwrapBatch`) wrapped under one
    /// KEK, `each` bytes apiece one after another in `wrapped`, into `out` (`each` − 8 bytes
    /// apiece); `ok[k]` is 1 when key k passed its integrity check (else its bytes are zero).
    /// AES runs over a block of every key at each step, which AES-NI pipelines: a million item
    /// keys unwrapped one at a time wait for each of their 24 blocks in turn.
    /// - Returns: false for bad lengths or an OpenSSL failure (`out` is then zeroed).
    package static func aesKeyUnwrap(
        kek: SecretKey, many wrapped: UnsafeRawBufferPointer, each: Int, count: Int,
        into out: UnsafeMutableRawBufferPointer, ok: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        guard count <= keyUnwrapBatch, each >= 24, each % 8 == 0, wrapped.count >= each * count,
            out.count >= (each - 8) * count, ok.count >= count
        else { return false }
        return kek.withUnsafeBytes { k in
            [16, 24, 32].contains(k.count)
                && lk_aes_kw_unwrap_many(
                    k.baseAddress?.assumingMemoryBound(to: UInt8.self), k.count,
                    wrapped.baseAddress?.assumingMemoryBound(to: UInt8.self), each, count,
                    out.baseAddress?.assumingMemoryBound(to: UInt8.self), ok.baseAddress) == 1
        }
    }

    /// AES key wrap (RFC 3394) of `count` keys (at most `keyUnwrapBatch`) under one KEK, `each`
    /// bytes apiece one after another in `keys`, into `out` (`each` + 8 bytes apiece): the
    /// bytes `aesKeyWrap(kek:key:)` gives for each, with AES run over a block of every key at
    /// each step (a bulk import wraps a fresh item key per item).
    /// - Returns: false for bad lengths or an OpenSSL failure (`out` is then zeroed).
    package static func aesKeyWrap(
        kek: SecretKey, many keys: UnsafeRawBufferPointer, each: Int, count: Int,
        into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard count <= keyUnwrapBatch, each >= 16, each % 8 == 0, keys.count >= each * count,
            out.count >= (each + 8) * count
        else { return false }
        return kek.withUnsafeBytes { k in
            [16, 24, 32].contains(k.count)
                && lk_aes_kw_wrap_many(
                    k.baseAddress?.assumingMemoryBound(to: UInt8.self), k.count,
                    keys.baseAddress?.assumingMemoryBound(to: UInt8.self), each, count,
                    out.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
        }
    }

    /// AES-GCM decryption (12-byte nonce) through a context reused by one thread: nothing is
    /// allocated per message. - Returns: false when the tag does not verify or a length is
    /// wrong (`out`, which holds `ciphertext.count` bytes, must then be discarded).
    package static func aesGCMOpen(
        context: GCMContext, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
        aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard [16, 24, 32].contains(key.count), nonce.count == 12, (12...16).contains(tag.count),
            out.count >= ciphertext.count
        else { return false }
        func u8(_ p: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
            p.baseAddress?.assumingMemoryBound(to: UInt8.self)
        }
        return lk_aes_gcm_open_ctx(
            context.handle, u8(key), key.count, u8(nonce), nonce.count, u8(aad), aad.count,
            u8(ciphertext), ciphertext.count, u8(tag), tag.count,
            out.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
    }

    /// Constant-time equality (CRYPTO_memcmp). Lengths are not secret.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in lk_memcmp_ct(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }

    /// Frees OpenSSL's per-thread state (OPENSSL_thread_stop). A thread of ours that used
    /// OpenSSL calls it last, so that nothing of it is left for OpenSSL's exit-time cleanup.
    public static func releaseThreadState() {
        lk_thread_stop()
    }

    /// Zeroes the bytes of `buffer` (OPENSSL_cleanse).
    package static func cleanse(_ buffer: UnsafeMutableRawBufferPointer) {
        lk_cleanse(buffer.baseAddress, buffer.count)
    }

    /// Zeroes `buffer` in place (OPENSSL_cleanse), so the compiler cannot drop the write.
    public static func cleanse(_ buffer: inout [UInt8]) {
        buffer.withUnsafeMutableBytes { lk_cleanse($0.baseAddress, $0.count) }
    }

    static func failure(_ op: String) -> CryptoError {
        var buf = [CChar](repeating: 0, count: 256)
        let n = buf.withUnsafeMutableBufferPointer { lk_last_error($0.baseAddress, 256) }
        let detail =
            n > 0
            ? String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "OpenSSL reported no error"
        return .failed(operation: op, detail: detail)
    }
}
