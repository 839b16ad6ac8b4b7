import Foundation
import Latchkey
import LatchkeyFormat
import LatchkeyCrypto
import Testing

/// spec/FORMAT.md §7.5 "Public-key hash": `pkhh` (certificates) and `klbl` (keys) are the SHA-1
/// of the subjectPublicKey BIT STRING **without** its unused-bits octet. This suite computes that
/// from the DER of fixtures/certs/ with a DER walker of its own, following the spec's words, and
/// checks that the engine stores exactly it, that the spec's test values are it, and that it is
/// not the hash with the unused-bits octet (the reading the words once allowed).
@Suite struct PublicKeyHashTests {
    static let certs = packageRoot.appendingPathComponent("fixtures/certs")

    /// The values spec/FORMAT.md §7.5 quotes (and fixtures/certs/expected.sh prints).
    static let specValues = [
        "rsa2048": "29b6d4d61a76c7f08afd861f9b520b2a2d8c88c7",
        "ec-p256": "80740ab898bb61e408b34d51407c54ca8bdf6f44"
    ]

    func load(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: Self.certs.appendingPathComponent(name)))
    }

    func keychain() throws -> (Keychain, URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-pkhh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let kc = try Keychain.create(
            path: dir.appendingPathComponent("keychain").path,
            devicePath: dir.appendingPathComponent("device.secret").path, passcode: nil, kdfLogN: 10)
        return (kc, dir)
    }

    @Test(arguments: [("rsa2048-cert.der", "rsa2048"), ("ec-p256-cert.der", "ec-p256"), ("other-leaf-cert.der", nil)])
    func certificate_pkhhIsTheHashOfTheKeyBitsAlone(_ file: String, _ spec: String?) throws {
        let der = try load(file)
        let bits = try DER.subjectPublicKeyBits(certificate: der)
        #expect(bits.unusedBits == 0)
        let want = Crypto.sha1(bits.key)
        #expect(want != Crypto.sha1([bits.unusedBits] + bits.key))
        if let spec { #expect(hexString(want) == Self.specValues[spec]) }

        let (kc, dir) = try keychain()
        defer { try? FileManager.default.removeItem(at: dir) }
        let added = try kc.add(.certificate, attributes: [:], data: der)
        #expect(added.attributes["pkhh"] == .data(want), "\(file)")
    }

    @Test(arguments: [
        ("rsa2048-key.der", "rsa2048"), ("ec-p256-key.der", "ec-p256"), ("ec-p256-key.pkcs8.der", "ec-p256"),
        ("other-key.der", nil)
    ])
    func privateKey_klblIsTheHashOfItsPublicKeyBits(_ file: String, _ spec: String?) throws {
        let der = try load(file)
        let key = try DER.publicKeyBits(privateKey: der)
        let want = Crypto.sha1(key)
        if let spec { #expect(hexString(want) == Self.specValues[spec]) }

        let (kc, dir) = try keychain()
        defer { try? FileManager.default.removeItem(at: dir) }
        let added = try kc.add(.key, attributes: [:], data: der)
        #expect(added.attributes["klbl"] == .data(want), "\(file)")
    }

    /// A key and its certificate share the hash: the identity join of §7.5.
    @Test func keyAndCertificate_shareTheHash() throws {
        let cert = try DER.subjectPublicKeyBits(certificate: try load("other-leaf-cert.der"))
        #expect(cert.key == (try DER.publicKeyBits(privateKey: try load("other-key.der"))))
    }
}

/// Just enough DER (X.690) to find the subjectPublicKey bits, written from the standards and
/// independent of the engine's OpenSSL code.
enum DER {
    struct Problem: Error {}

    /// One element: its tag, its whole encoding and its contents.
    struct Element {
        var tag: UInt8
        var encoding: ArraySlice<UInt8>
        var contents: ArraySlice<UInt8>
    }

    /// The elements of `bytes`, in order.
    static func elements(_ bytes: ArraySlice<UInt8>) throws -> [Element] {
        var out: [Element] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            guard i + 1 < bytes.endIndex else { throw Problem() }
            let tag = bytes[i]
            var length = Int(bytes[i + 1])
            var start = i + 2
            if length & 0x80 != 0 {
                let n = length & 0x7f
                guard n >= 1, n <= 3, start + n <= bytes.endIndex else { throw Problem() }
                length = bytes[start..<start + n].reduce(0) { $0 << 8 | Int($1) }
                start += n
            }
            guard start + length <= bytes.endIndex else { throw Problem() }
            out.append(Element(tag: tag, encoding: bytes[i..<start + length], contents: bytes[start..<start + length]))
            i = start + length
        }
        return out
    }

    static func only(_ bytes: ArraySlice<UInt8>, _ tag: UInt8) throws -> Element {
        let e = try elements(bytes)
        guard e.count == 1, e[0].tag == tag else { throw Problem() }
        return e[0]
    }

    /// A BIT STRING's contents split into the unused-bits count and the bits.
    static func bitString(_ e: Element) throws -> (unusedBits: UInt8, key: [UInt8]) {
        guard e.tag == 0x03, let u = e.contents.first else { throw Problem() }
        return (u, Array(e.contents.dropFirst()))
    }

    /// Certificate → tbsCertificate → subjectPublicKeyInfo (RFC 5280 §4.1) → subjectPublicKey.
    static func subjectPublicKeyBits(certificate: [UInt8]) throws -> (unusedBits: UInt8, key: [UInt8]) {
        let cert = try only(certificate[...], 0x30)
        var tbs = try elements(try elements(cert.contents)[0].contents)
        if tbs.first?.tag == 0xA0 { tbs.removeFirst() }  // [0] version
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
        let spki = try elements(tbs[5].contents)
        return try bitString(spki[1])
    }

    /// The public key's bits of a private key: PKCS#1 RSAPrivateKey (RFC 8017 A.1.2: the
    /// RSAPublicKey is SEQUENCE { n, e }), SEC 1 ECPrivateKey (its [1] publicKey BIT STRING), or
    /// either inside a PKCS#8 PrivateKeyInfo.
    static func publicKeyBits(privateKey: [UInt8]) throws -> [UInt8] {
        let fields = try elements(try only(privateKey[...], 0x30).contents)
        if fields.count == 3 || fields.count == 4, fields[1].tag == 0x30, fields[2].tag == 0x04 {
            return try publicKeyBits(privateKey: Array(fields[2].contents))  // PKCS#8
        }
        if let point = fields.first(where: { $0.tag == 0xA1 }) {
            let bits = try bitString(try only(point.contents, 0x03))
            guard bits.unusedBits == 0 else { throw Problem() }
            return bits.key
        }
        guard fields.count >= 3, fields[1].tag == 0x02, fields[2].tag == 0x02 else { throw Problem() }
        let body = Array(fields[1].encoding) + Array(fields[2].encoding)
        return [0x30] + length(body.count) + body
    }

    static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        if n < 0x100 { return [0x81, UInt8(n)] }
        return [0x82, UInt8(n >> 8), UInt8(n & 0xff)]
    }
}
