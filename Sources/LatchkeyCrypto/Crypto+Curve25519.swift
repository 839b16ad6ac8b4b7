import CLatchkeyCrypto

/// Ed25519 and X25519 with raw 32-byte keys (the sync identities of spec/SYNC.md §3). Private
/// keys are `SecretKey`s; public keys and signatures are plain bytes.
extension Crypto {
    /// The Ed25519 public key of a private seed.
    public static func ed25519PublicKey(_ seed: SecretKey) throws -> [UInt8] {
        try derivePublic(seed, "Ed25519 public key", lk_ed25519_public)
    }

    /// The X25519 public key of a private key.
    public static func x25519PublicKey(_ privateKey: SecretKey) throws -> [UInt8] {
        try derivePublic(privateKey, "X25519 public key", lk_x25519_public)
    }

    /// A 64-byte Ed25519 signature of `message`.
    public static func ed25519Sign(_ seed: SecretKey, _ message: [UInt8]) throws -> [UInt8] {
        guard seed.count == 32 else {
            throw CryptoError.invalidArgument(operation: "Ed25519 sign", reason: "seed is not 32 bytes")
        }
        var sig = [UInt8](repeating: 0, count: 64)
        let ok = seed.withUnsafeBytes { s in
            message.withUnsafeBufferPointer { m in
                sig.withUnsafeMutableBufferPointer {
                    lk_ed25519_sign(
                        s.baseAddress!.assumingMemoryBound(to: UInt8.self), m.baseAddress, m.count, $0.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw failure("Ed25519 sign") }
        return sig
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` under `publicKey`. Wrong
    /// sizes are simply not valid.
    public static func ed25519Verify(publicKey: [UInt8], message: [UInt8], signature: [UInt8]) -> Bool {
        guard publicKey.count == 32, signature.count == 64 else { return false }
        return publicKey.withUnsafeBufferPointer { p in
            message.withUnsafeBufferPointer { m in
                signature.withUnsafeBufferPointer {
                    lk_ed25519_verify(p.baseAddress, m.baseAddress, m.count, $0.baseAddress)
                }
            }
        } == 1
    }

    /// The X25519 shared secret with `peerPublic`.
    /// - Throws: `integrityCheckFailed` for a low-order peer key (an all-zero secret) or a
    ///   peer key of the wrong size.
    public static func x25519(_ privateKey: SecretKey, peerPublic: [UInt8]) throws -> SecretKey {
        guard privateKey.count == 32, peerPublic.count == 32 else {
            throw CryptoError.integrityCheckFailed(operation: "X25519")
        }
        var shared = [UInt8](repeating: 0, count: 32)
        let ok = privateKey.withUnsafeBytes { k in
            peerPublic.withUnsafeBufferPointer { p in
                shared.withUnsafeMutableBufferPointer {
                    lk_x25519(k.baseAddress!.assumingMemoryBound(to: UInt8.self), p.baseAddress, $0.baseAddress)
                }
            }
        }
        guard ok == 1 else {
            cleanse(&shared)
            throw CryptoError.integrityCheckFailed(operation: "X25519")
        }
        return SecretKey(consuming: &shared)
    }

    private static func derivePublic(
        _ key: SecretKey, _ op: String,
        _ f: (UnsafePointer<UInt8>?, UnsafeMutablePointer<UInt8>?) -> Int32
    ) throws -> [UInt8] {
        guard key.count == 32 else { throw CryptoError.invalidArgument(operation: op, reason: "key is not 32 bytes") }
        var out = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBytes { k in
            out.withUnsafeMutableBufferPointer { f(k.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.baseAddress) }
        }
        guard ok == 1 else { throw failure(op) }
        return out
    }
}
