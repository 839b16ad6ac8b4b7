import LatchkeyCrypto
import Testing

/// Ed25519 against RFC 8032 §7.1 (tests 1 and 2) and X25519 against RFC 7748 §6.1.
@Suite struct Curve25519Tests {
    private func hex(_ s: String) -> [UInt8] {
        let c = Array(s.utf8)
        return stride(from: 0, to: c.count, by: 2).map {
            UInt8(String(decoding: c[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }

    @Test func ed25519RFC8032Vectors() throws {
        let cases: [(seed: String, pub: String, msg: String, sig: String)] = [
            (
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
            ),
            (
                "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
                "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
            )
        ]
        for c in cases {
            let seed = SecretKey(copying: hex(c.seed))
            #expect(try Crypto.ed25519PublicKey(seed) == hex(c.pub))
            #expect(try Crypto.ed25519Sign(seed, hex(c.msg)) == hex(c.sig))
            #expect(Crypto.ed25519Verify(publicKey: hex(c.pub), message: hex(c.msg), signature: hex(c.sig)))
            var bad = hex(c.sig)
            bad[10] ^= 1
            #expect(!Crypto.ed25519Verify(publicKey: hex(c.pub), message: hex(c.msg), signature: bad))
            #expect(!Crypto.ed25519Verify(publicKey: hex(c.pub), message: hex(c.msg) + [0], signature: hex(c.sig)))
            #expect(
                !Crypto.ed25519Verify(
                    publicKey: hex(c.pub), message: hex(c.msg), signature: Array(hex(c.sig).prefix(63))))
        }
    }

    @Test func x25519RFC7748Vectors() throws {
        let a = SecretKey(copying: hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let b = SecretKey(copying: hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        let aPub = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        let bPub = hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let k = hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        #expect(try Crypto.x25519PublicKey(a) == aPub)
        #expect(try Crypto.x25519PublicKey(b) == bPub)
        #expect(try Crypto.x25519(a, peerPublic: bPub).withUnsafeBytes { Array($0) } == k)
        #expect(try Crypto.x25519(b, peerPublic: aPub).withUnsafeBytes { Array($0) } == k)
        // A low-order point (here 0) gives an all-zero secret: refused.
        #expect(throws: CryptoError.self) { try Crypto.x25519(a, peerPublic: [UInt8](repeating: 0, count: 32)) }
    }
}
