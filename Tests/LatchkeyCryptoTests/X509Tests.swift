import Foundation
import LatchkeyCrypto
import Testing

/// Certificate and key parsing against fixtures/certs/ (generated once with the openssl CLI;
/// the expected values below are the output of fixtures/certs/expected.sh, i.e. of
/// `openssl x509 -serial -subject -ext subjectKeyIdentifier`, `openssl asn1parse` and
/// `openssl pkey -pubout | openssl asn1parse` + `openssl dgst -sha1`).
@Suite struct X509Tests {
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = Fixtures.packageRoot.appendingPathComponent("fixtures/certs/\(name)")
        return [UInt8](try Data(contentsOf: url))
    }

    static func hex(_ s: String) -> [UInt8] { [UInt8](hex: s)! }

    // Names (DER) from `openssl asn1parse` of each certificate.
    static let rsaName = hex(
        "3045310b3009060355040613024a50311a3018060355040a0c114c617463686b6579204669787475726573311a301806035504030c114c617463686b6579205253412054657374"
    )
    static let ecName = hex(
        "3037311a3018060355040a0c114c617463686b65792046697874757265733119301706035504030c104c617463686b65792045432054657374"
    )
    static let leafName = hex(
        "3049311a3018060355040a0c114c617463686b6579204669787475726573310d300b060355040b0c044c656166311c301a06035504030c134c617463686b6579204f74686572204c656166"
    )
    // SHA-1 of the subjectPublicKey bits.
    static let rsaHash = "29b6d4d61a76c7f08afd861f9b520b2a2d8c88c7"
    static let ecHash = "80740ab898bb61e408b34d51407c54ca8bdf6f44"
    static let otherHash = "aa2af002dfb1609ca5166b6799180952f24ea7f3"
    static let ecPublic =
        "04e668548e173dac292006f8a0b586206ecfb9ba31a3a908a75a9cd7910cdb4e4bcc6703a809bd23606cf3a2aa6deb3ecb3d0424f786efea36c692968e2d06d98c"
    static let ecSPKI =
        "3059301306072a8648ce3d020106082a8648ce3d03010703420004e668548e173dac292006f8a0b586206ecfb9ba31a3a908a75a9cd7910cdb4e4bcc6703a809bd23606cf3a2aa6deb3ecb3d0424f786efea36c692968e2d06d98c"
    static let ecPrivateScalar = "a0fc3b3dccb05a263e23db36698f087a2597625869a2118c45f52a80e32e3321"

    // MARK: SHA-1

    @Test func sha1_fips180Examples() {
        #expect(Crypto.sha1(Array("abc".utf8)).hex == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Crypto.sha1([]).hex == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(
            Crypto.sha1(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)).hex
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }

    // MARK: certificates

    @Test func rsaSelfSigned_derivesOpenSSLValues() throws {
        let der = try Self.fixture("rsa2048-cert.der")
        let c = try CertificateInfo(der: der)
        #expect(c.der == der)
        #expect(c.version == 3)
        #expect(c.subject == Self.rsaName)  // CN=Latchkey RSA Test,O=Latchkey Fixtures,C=JP
        #expect(c.issuer == Self.rsaName)  // self-signed
        #expect(c.serialNumber.hex == "0123456789abcdef")  // serial=0123456789ABCDEF
        #expect(c.subjectKeyID?.hex == "29b6d4d61a76c7f08afd861f9b520b2a2d8c88c7")
        #expect(c.publicKeyHash.hex == Self.rsaHash)
        #expect(Crypto.sha1(c.publicKey) == c.publicKeyHash)
        #expect(c.publicKey.count == 270)  // RSAPublicKey DER inside the BIT STRING
        #expect(Array(c.publicKey.prefix(4)) == [0x30, 0x82, 0x01, 0x0a])
        #expect(c.subjectSummary == "Latchkey RSA Test")
        #expect(c.keyAlgorithm == .rsa)
        #expect(c.keySizeInBits == 2048)
    }

    @Test func ecSelfSigned_derivesOpenSSLValues_withExplicitSKID() throws {
        let c = try CertificateInfo(der: try Self.fixture("ec-p256-cert.der"))
        #expect(c.version == 3)
        #expect(c.subject == Self.ecName)
        #expect(c.issuer == Self.ecName)
        #expect(c.serialNumber == [0x01])
        #expect(c.subjectKeyID == [0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f], "the extension's value, not the key hash")
        #expect(c.publicKeyHash.hex == Self.ecHash)
        #expect(c.publicKey.hex == Self.ecPublic)
        #expect(c.subjectPublicKeyInfo.hex == Self.ecSPKI)
        #expect(c.subjectSummary == "Latchkey EC Test")
        #expect(c.keyAlgorithm == .ec)
        #expect(c.keySizeInBits == 256)
    }

    @Test func v1LeafIssuedByRSA_hasVersion1_noSKID_andSerialWithSignByte() throws {
        let c = try CertificateInfo(der: try Self.fixture("other-leaf-cert.der"))
        #expect(c.version == 1)
        #expect(c.subjectKeyID == nil)  // "No extensions in certificate"
        #expect(c.subject == Self.leafName)  // CN=Latchkey Other Leaf,OU=Leaf,O=Latchkey Fixtures
        #expect(c.issuer == Self.rsaName, "the issuer's DER equals the RSA certificate's subject DER")
        // openssl prints serial=F1E2D3C4B5A6978800; the INTEGER's content octets keep the 0x00.
        #expect(c.serialNumber.hex == "00f1e2d3c4b5a6978800")
        #expect(c.publicKeyHash.hex == Self.otherHash)
        #expect(c.subjectSummary == "Latchkey Other Leaf")
        #expect(c.commonName == "Latchkey Other Leaf")
    }

    @Test func invalidCertificates_throwWithAReason() throws {
        let der = try Self.fixture("rsa2048-cert.der")
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("not DER", Array("-----BEGIN CERTIFICATE-----".utf8)),
            ("truncated", Array(der.dropLast(10))),
            ("trailing garbage", der + [0x00]),
            ("a key, not a certificate", try Self.fixture("ec-p256-key.der"))
        ]
        for (what, bytes) in cases {
            do {
                _ = try CertificateInfo(der: bytes)
                Issue.record("\(what): accepted")
            } catch let CryptoError.invalidArgument(operation, reason) {
                #expect(operation == "X.509 certificate")
                #expect(!reason.isEmpty, "\(what): no reason")
            } catch {
                Issue.record("\(what): unexpected error \(error)")
            }
        }
        do {
            _ = try CertificateInfo(der: der + [0x00])
        } catch let CryptoError.invalidArgument(_, reason) {
            #expect(reason.contains("1 bytes follow"), "\(reason)")
        }
    }

    // MARK: keys

    @Test func rsaPrivateKey_derivesTypeSizeAndTheCertificatesHash() throws {
        let der = try Self.fixture("rsa2048-key.der")
        let k = try KeyInfo(data: der)
        #expect(k.form == .privateKeyDER)
        #expect(k.isPrivate)
        #expect(k.algorithm == .rsa)
        #expect(k.sizeInBits == 2048)
        #expect(k.publicKeyHash.hex == Self.rsaHash)
        #expect(k.publicKeyHash == (try CertificateInfo(der: try Self.fixture("rsa2048-cert.der"))).publicKeyHash)
        #expect(k.externalRepresentation == der, "Apple's external form of an RSA private key is PKCS#1")
    }

    @Test func ecPrivateKey_sec1AndPKCS8_giveTheSameKey() throws {
        let sec1 = try KeyInfo(data: try Self.fixture("ec-p256-key.der"))
        let pkcs8 = try KeyInfo(data: try Self.fixture("ec-p256-key.pkcs8.der"))
        for k in [sec1, pkcs8] {
            #expect(k.isPrivate)
            #expect(k.algorithm == .ec)
            #expect(k.sizeInBits == 256)
            #expect(k.publicKeyHash.hex == Self.ecHash)
            #expect(k.publicKey.hex == Self.ecPublic)
            #expect(k.subjectPublicKeyInfo.hex == Self.ecSPKI)
            #expect(k.externalRepresentation.hex == Self.ecPublic + Self.ecPrivateScalar)
        }
        #expect(try KeyInfo(data: try Self.fixture("other-key.der")).publicKeyHash.hex == Self.otherHash)
    }

    @Test func publicKeys_spkiPKCS1AndRawEC_areParsedAsPublic() throws {
        let spki = try KeyInfo(data: Self.hex(Self.ecSPKI))
        #expect(spki.form == .subjectPublicKeyInfo)
        #expect(!spki.isPrivate)
        #expect(spki.publicKeyHash.hex == Self.ecHash)
        #expect(spki.externalRepresentation.hex == Self.ecPublic)

        let raw = try KeyInfo(data: Self.hex(Self.ecPublic))
        #expect(raw.form == .ecRawPublic)
        #expect(!raw.isPrivate)
        #expect(raw.sizeInBits == 256)
        #expect(raw.publicKeyHash.hex == Self.ecHash)

        let rsaCert = try CertificateInfo(der: try Self.fixture("rsa2048-cert.der"))
        let pkcs1 = try KeyInfo(data: rsaCert.publicKey)
        #expect(pkcs1.form == .rsaPublicKeyPKCS1)
        #expect(pkcs1.algorithm == .rsa)
        #expect(pkcs1.sizeInBits == 2048)
        #expect(pkcs1.publicKeyHash.hex == Self.rsaHash)
        let rsaSPKI = try KeyInfo(data: rsaCert.subjectPublicKeyInfo)
        #expect(rsaSPKI.form == .subjectPublicKeyInfo)
        #expect(rsaSPKI.publicKeyHash.hex == Self.rsaHash)
    }

    @Test func rawECPrivate_roundTripsThroughItsExternalRepresentation() throws {
        let k = try KeyInfo(data: Self.hex(Self.ecPublic + Self.ecPrivateScalar))
        #expect(k.form == .ecRawPrivate)
        #expect(k.isPrivate)
        #expect(k.publicKeyHash.hex == Self.ecHash)
        #expect(k.externalRepresentation.hex == Self.ecPublic + Self.ecPrivateScalar)
        // A scalar that does not belong to the point is refused (pairwise check).
        var wrong = Self.hex(Self.ecPublic + Self.ecPrivateScalar)
        wrong[wrong.count - 1] ^= 1
        #expect(throws: CryptoError.self) { try KeyInfo(data: wrong) }
    }

    @Test func invalidKeys_throw() throws {
        let der = try Self.fixture("ec-p256-key.der")
        for bytes: [UInt8] in [
            [], Array("symmetric secret".utf8), der + [0], Array(der.dropLast()),
            [0x04] + [UInt8](repeating: 0x11, count: 64)
        ] {
            #expect(throws: CryptoError.self) { try KeyInfo(data: bytes) }
        }
        #expect(throws: CryptoError.self, "a certificate is not a key") {
            try KeyInfo(data: try Self.fixture("rsa2048-cert.der"))
        }
    }
}
