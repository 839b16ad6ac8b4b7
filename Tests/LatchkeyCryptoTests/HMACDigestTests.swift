import LatchkeyCrypto
import Testing

/// `Crypto.hmac(_:key:data:)`, the HMAC of one-time codes (SHA-1, SHA-256, SHA-512), against
/// the published vectors: RFC 2202 §3 for HMAC-SHA-1 and RFC 4231 §4.2–4.3 for SHA-256 and
/// SHA-512 (test cases 1 and 2, the results copied verbatim from the RFCs).
@Suite struct HMACDigestTests {
    static let hiThere = (key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8))
    static let jefe = (key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))

    @Test(arguments: [
        (Crypto.HMACDigest.sha1, 1, "b617318655057264e28bc0b6fb378c8ef146be00"),
        (.sha1, 2, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
        (.sha256, 1, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (.sha256, 2, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (
            .sha512, 1,
            "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
                + "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"
        ),
        (
            .sha512, 2,
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
                + "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        )
    ])
    func hmac_matchesThePublishedVector(_ digest: Crypto.HMACDigest, _ testCase: Int, _ expected: String) {
        let v = testCase == 1 ? Self.hiThere : Self.jefe
        let mac = Crypto.hmac(digest, key: v.key, data: v.data)
        #expect(mac.count == digest.size)
        #expect(mac.hex == expected)
    }

    @Test func sha256_agreesWithTheKeychainsHMAC_andAKeyBitChangesEverything() {
        let key = Array("a key of some length".utf8), data = Array("a message".utf8)
        #expect(Crypto.hmac(.sha256, key: key, data: data) == Crypto.hmacSHA256(key: key, data))
        var flipped = key
        flipped[0] ^= 1
        for digest in Crypto.HMACDigest.allCases {
            #expect(Crypto.hmac(digest, key: key, data: data) != Crypto.hmac(digest, key: flipped, data: data))
        }
        // An empty key and empty data are valid HMAC inputs.
        #expect(Crypto.hmac(.sha1, key: [], data: []).count == 20)
    }
}
