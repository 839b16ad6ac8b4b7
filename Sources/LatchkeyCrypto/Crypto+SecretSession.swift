import CLatchkeyCrypto

/// The Secret Service's encrypted session, `dh-ietf1024-sha256-aes128-cbc-pkcs7` (freedesktop.org
/// Secret Service API 0.2, "Transfer of Secrets"): Diffie-Hellman in the 1024-bit MODP group of
/// RFC 2409 with generator 2, HKDF-SHA256 of the shared value (padded to 128 bytes) with no
/// salt and no info giving a 16-byte key, and AES-128-CBC with PKCS#7 padding for each secret.
package final class SecretSessionKey: @unchecked Sendable {
    /// This side's public value, 128 bytes big-endian: what OpenSession returns.
    package let publicValue: [UInt8]
    private let aesKey: SecretKey

    /// A fresh key pair, and the session key agreed with `peerPublic` (the client's value,
    /// big-endian, 1 to 128 bytes).
    /// - Throws: `CryptoError.invalidArgument` when the peer's value is not in 2…p−2.
    package init(peerPublic: [UInt8]) throws {
        var priv = [UInt8](repeating: 0, count: 128)
        var pub = [UInt8](repeating: 0, count: 128)
        defer { Crypto.cleanse(&priv) }
        guard lk_dh1024_keypair(&priv, &pub) == 1 else { throw Crypto.failure("Diffie-Hellman key generation") }
        var shared = [UInt8](repeating: 0, count: 128)
        defer { Crypto.cleanse(&shared) }
        let ok = peerPublic.withUnsafeBufferPointer { lk_dh1024_shared(priv, $0.baseAddress, $0.count, &shared) }
        guard ok == 1 else {
            throw CryptoError.invalidArgument(
                operation: "Diffie-Hellman", reason: "the peer's public value is not in the group (2 to p-2)")
        }
        var key = try Crypto.hkdfSHA256(ikm: shared, salt: [], info: [], count: 16)
        aesKey = SecretKey(consuming: &key)
        publicValue = pub
    }

    /// A secret encrypted for the peer: a fresh 16-byte IV and the ciphertext.
    package func seal(_ plaintext: [UInt8]) throws -> (iv: [UInt8], ciphertext: [UInt8]) {
        let iv = try Crypto.randomBytes(16)
        return (iv, try cbc(encrypt: true, iv: iv, plaintext))
    }

    /// The secret the peer encrypted. - Throws: `CryptoError.integrityCheckFailed` for a wrong
    /// IV length, a length that is not whole blocks or a bad padding.
    package func open(iv: [UInt8], _ ciphertext: [UInt8]) throws -> [UInt8] {
        guard iv.count == 16 else { throw CryptoError.integrityCheckFailed(operation: "AES-128-CBC (IV length)") }
        return try cbc(encrypt: false, iv: iv, ciphertext)
    }

    private func cbc(encrypt: Bool, iv: [UInt8], _ input: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var n = 0
        let ok = aesKey.withUnsafeBytes { key in
            input.withUnsafeBufferPointer { i in
                lk_aes128_cbc(
                    encrypt ? 1 : 0, key.baseAddress!.assumingMemoryBound(to: UInt8.self), iv, i.baseAddress, i.count,
                    &out, &n)
            }
        }
        guard ok == 1 else {
            Crypto.cleanse(&out)
            throw CryptoError.integrityCheckFailed(operation: "AES-128-CBC")
        }
        let result = Array(out[0..<n])
        Crypto.cleanse(&out)
        return result
    }
}
