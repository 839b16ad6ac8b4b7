import Foundation
import Testing
import Latchkey
import LatchkeySecurity

/// fixtures/certs (see its README): DER certificates and keys made once with the openssl CLI.
private enum CertFiles {
    static func load(_ name: String) -> Data {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
            dir = dir.deletingLastPathComponent()
        }
        return try! Data(contentsOf: dir.appendingPathComponent("fixtures/certs/\(name)"))
    }

    static let rsaCert = load("rsa2048-cert.der")
    static let rsaKey = load("rsa2048-key.der")
    static let ecCert = load("ec-p256-cert.der")
    static let ecKey = load("ec-p256-key.der")
    static let otherKey = load("other-key.der")
    static let leafCert = load("other-leaf-cert.der")
    /// SHA-1 of the EC public key (pkhh / klbl), from fixtures/certs/expected.sh.
    static let ecHash = Data([
        0x80, 0x74, 0x0a, 0xb8, 0x98, 0xbb, 0x61, 0xe4, 0x08, 0xb3,
        0x4d, 0x51, 0x40, 0x7c, 0x54, 0xca, 0x8b, 0xdf, 0x6f, 0x44
    ])

    static func identity(_ cert: Data, _ key: Data) -> SecIdentity {
        let c = SecCertificateCreateWithData(nil, cert as CFData)!
        let k = SecKeyCreateWithData(key as CFData, [:] as CFDictionary, nil)!
        return SecIdentityCreate(nil, c, k)!
    }
}

/// SecCertificate, SecKey and SecIdentity, and the SecItem calls that take and return them
/// (kSecValueRef, kSecReturnRef, kSecClassIdentity; reference §1.1, §5.4, §9.7–9.8).
@Suite struct SecIdentityTests {
    // MARK: objects

    @Test func certificate_createCopyDataSummary() throws {
        let cert = try #require(SecCertificateCreateWithData(nil, CertFiles.rsaCert as CFData))
        #expect(SecCertificateCopyData(cert) as Data == CertFiles.rsaCert)
        #expect(SecCertificateCopySubjectSummary(cert) as String? == "Latchkey RSA Test")
        var cn: CFString?
        #expect(SecCertificateCopyCommonName(cert, &cn) == errSecSuccess)
        #expect(cn as String? == "Latchkey RSA Test")
        #expect(
            SecCertificateCopySerialNumberData(cert, nil) as Data?
                == Data([0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]))
        #expect(SecCertificateCopyNormalizedIssuerSequence(cert) == SecCertificateCopyNormalizedSubjectSequence(cert))
        #expect(cert == SecCertificateCreateWithData(nil, CertFiles.rsaCert as CFData)!)
        #expect(cert != SecCertificateCreateWithData(nil, CertFiles.ecCert as CFData)!)
        #expect(SecCertificateCreateWithData(nil, Data("not a certificate".utf8) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, (CertFiles.rsaCert + [0]) as CFData) == nil)
        let pub = try #require(SecCertificateCopyKey(cert))
        #expect(SecKeyGetBlockSize(pub) == 256)
    }

    @Test func key_createWithData_externalRepresentation() throws {
        var error: Unmanaged<CFError>?
        let key = try #require(
            SecKeyCreateWithData(
                CertFiles.ecKey as CFData,
                [
                    kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                    kSecAttrKeyClass: kSecAttrKeyClassPrivate
                ] as CFDictionary, &error))
        let external = try #require(SecKeyCopyExternalRepresentation(key, &error) as Data?)
        #expect(external.count == 97, "04 || X || Y || K")
        // Apple's raw form reads back as the same key.
        let again = try #require(
            SecKeyCreateWithData(
                external as CFData,
                [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, &error)
        )
        #expect(again == key)
        let pub = try #require(SecKeyCopyPublicKey(key))
        #expect(SecKeyCopyExternalRepresentation(pub, nil) as Data? == external.prefix(65))
        let attrs = try #require(SecKeyCopyAttributes(key) as? [String: Any])
        #expect(attrs[kSecAttrKeyType as String] as? String == "73")
        #expect(attrs[kSecAttrKeyClass as String] as? String == "1")
        #expect(attrs[kSecAttrApplicationLabel as String] as? Data == CertFiles.ecHash)

        // The type or class contradicting the data: nil and errSecParam.
        error = nil
        #expect(
            SecKeyCreateWithData(
                CertFiles.ecKey as CFData, [kSecAttrKeyType: kSecAttrKeyTypeRSA] as CFDictionary, &error) == nil)
        #expect((error?.takeRetainedValue()).map { $0.code } == Int(errSecParam))
        #expect(
            SecKeyCreateWithData(
                CertFiles.ecKey as CFData, [kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, nil) == nil)
        #expect(SecKeyCreateWithData(Data("junk".utf8) as CFData, [:] as CFDictionary, nil) == nil)

        let rsa = try #require(
            SecKeyCreateWithData(CertFiles.rsaKey as CFData, [kSecAttrKeyType: kSecAttrKeyTypeRSA] as CFDictionary, nil)
        )
        #expect(SecKeyCopyExternalRepresentation(rsa, nil) as Data? == CertFiles.rsaKey, "PKCS#1 is Apple's RSA form")
    }

    @Test func identity_createOnlyForTheMatchingKey() throws {
        let cert = try #require(SecCertificateCreateWithData(nil, CertFiles.ecCert as CFData))
        let key = try #require(SecKeyCreateWithData(CertFiles.ecKey as CFData, [:] as CFDictionary, nil))
        let other = try #require(SecKeyCreateWithData(CertFiles.otherKey as CFData, [:] as CFDictionary, nil))
        #expect(SecIdentityCreate(nil, cert, other) == nil)
        #expect(SecIdentityCreate(nil, cert, SecKeyCopyPublicKey(key)!) == nil, "needs the private key")
        let identity = try #require(SecIdentityCreate(nil, cert, key))
        var c: SecCertificate?
        var k: SecKey?
        #expect(SecIdentityCopyCertificate(identity, &c) == errSecSuccess)
        #expect(SecIdentityCopyPrivateKey(identity, &k) == errSecSuccess)
        #expect(c == cert)
        #expect(k == key)
    }

    // MARK: certificates and keys through SecItem

    @Test func certificate_addByData_andByRef_returnRef() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(
                add([kSecClass as String: kSecClassCertificate, kSecValueData as String: CertFiles.rsaCert])
                    == errSecSuccess)
            #expect(
                add([kSecClass as String: kSecClassCertificate, kSecValueData as String: Data("junk".utf8)])
                    == errSecParam)
            // By reference, without kSecClass (the object says which class).
            let ec = try #require(SecCertificateCreateWithData(nil, CertFiles.ecCert as CFData))
            #expect(add([kSecValueRef as String: ec, kSecAttrLabel as String: "EC"]) == errSecSuccess)
            #expect(add([kSecClass as String: kSecClassCertificate, kSecValueRef as String: ec]) == errSecDuplicateItem)

            let (status, result) = copy([
                kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "EC",
                kSecReturnRef as String: true
            ])
            #expect(status == errSecSuccess)
            let found = try #require(result as? SecCertificate)
            #expect(found == ec)

            let (s2, attrs) = copy([
                kSecClass as String: kSecClassCertificate, kSecValueRef as String: ec,
                kSecReturnAttributes as String: true
            ])
            #expect(s2 == errSecSuccess)
            let a = try #require(attrs as? [String: Any])
            #expect(a[kSecAttrLabel as String] as? String == "EC")
            #expect(a[kSecAttrPublicKeyHash as String] as? Data == CertFiles.ecHash)
            #expect(a[kSecAttrCertificateType as String] as? Int == 3)
            #expect(a[kSecAttrAccessible as String] as? String == "dk")

            let (s3, all) = copy([
                kSecClass as String: kSecClassCertificate, kSecMatchLimit as String: kSecMatchLimitAll,
                kSecReturnRef as String: true, kSecReturnAttributes as String: true
            ])
            #expect(s3 == errSecSuccess)
            let rows = try #require(all as? [[String: Any]])
            #expect(rows.count == 2)
            #expect(rows.allSatisfy { $0[kSecValueRef as String] is SecCertificate })
            #expect(
                rows.contains { $0[kSecAttrLabel as String] as? String == "Latchkey RSA Test" },
                "label from the subject")

            #expect(delete([kSecClass as String: kSecClassCertificate, kSecValueRef as String: ec]) == errSecSuccess)
            #expect(
                copy([kSecClass as String: kSecClassCertificate, kSecValueRef as String: ec]).0 == errSecItemNotFound)
        }
    }

    @Test func key_addByRef_returnRef() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            let key = try #require(SecKeyCreateWithData(CertFiles.ecKey as CFData, [:] as CFDictionary, nil))
            #expect(
                add([
                    kSecClass as String: kSecClassKey, kSecValueRef as String: key,
                    kSecAttrApplicationTag as String: Data("com.example.ec".utf8)
                ]) == errSecSuccess)
            #expect(
                add([kSecClass as String: kSecClassCertificate, kSecValueRef as String: key]) == errSecParam,
                "a key is not a certificate")
            let (status, result) = copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("com.example.ec".utf8),
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecReturnRef as String: true
            ])
            #expect(status == errSecSuccess)
            #expect(result as? SecKey == key)
            let (_, attrs) = copy([
                kSecClass as String: kSecClassKey, kSecValueRef as String: key, kSecReturnAttributes as String: true
            ])
            let a = try #require(attrs as? [String: Any])
            #expect(a[kSecAttrKeyClass as String] as? Int == 1)
            #expect(a[kSecAttrKeySizeInBits as String] as? Int == 256)
            #expect(a[kSecAttrApplicationLabel as String] as? Data == CertFiles.ecHash)
            // Passwords still have no reference objects.
            #expect(
                add([kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a"]) == errSecSuccess)
            let (s, r) = copy([kSecClass as String: kSecClassGenericPassword, kSecReturnRef as String: true])
            #expect(s == errSecSuccess)
            #expect(r == nil)
        }
    }

    // MARK: identities through SecItem

    @Test func identity_addByRef_addsCertificateAndKey_copyReturnsSecIdentity() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            let identity = CertFiles.identity(CertFiles.ecCert, CertFiles.ecKey)
            #expect(add([kSecValueRef as String: identity, kSecAttrLabel as String: "My Identity"]) == errSecSuccess)
            #expect(add([kSecValueRef as String: identity]) == errSecDuplicateItem)
            #expect(
                copy([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "My Identity"]).0
                    == errSecSuccess)
            #expect(
                copy([kSecClass as String: kSecClassKey, kSecAttrLabel as String: "My Identity"]).0 == errSecSuccess)

            let (status, result) = copy([
                kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: "My Identity",
                kSecReturnRef as String: true
            ])
            #expect(status == errSecSuccess)
            let found = try #require(result as? SecIdentity)
            #expect(found == identity)
            var cert: SecCertificate?
            #expect(SecIdentityCopyCertificate(found, &cert) == errSecSuccess)
            #expect(SecCertificateCopySubjectSummary(cert!) as String? == "Latchkey EC Test")
        }
    }

    @Test func identity_resultShapes() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(
                add([kSecValueRef as String: CertFiles.identity(CertFiles.ecCert, CertFiles.ecKey)]) == errSecSuccess)
            #expect(
                add([kSecValueRef as String: CertFiles.identity(CertFiles.rsaCert, CertFiles.rsaKey)]) == errSecSuccess)
            let idnt: Dict = [kSecClass as String: kSecClassIdentity]

            let (s0, r0) = copy(idnt)
            #expect(s0 == errSecSuccess)
            #expect(r0 == nil, "nothing asked for, nothing returned")
            let (_, all) = copy(
                idnt.merging([kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true]) { $1 })
            #expect((all as? [SecIdentity])?.count == 2)

            let (_, attrs) = copy(
                idnt.merging([kSecAttrKeyType as String: kSecAttrKeyTypeEC, kSecReturnAttributes as String: true]) {
                    $1
                })
            let a = try #require(attrs as? [String: Any])
            #expect(a[kSecAttrKeyClass as String] as? Int == 1, "the key's attributes")
            #expect(a[kSecAttrApplicationLabel as String] as? Data == CertFiles.ecHash)
            #expect(a[kSecAttrPublicKeyHash as String] as? Data == CertFiles.ecHash, "plus the certificate's own")
            #expect(a[kSecAttrCertificateType as String] as? Int == 3)

            let (_, data) = copy(
                idnt.merging([kSecAttrKeyType as String: kSecAttrKeyTypeEC, kSecReturnData as String: true]) { $1 })
            #expect((data as? Data)?.count == 97, "the private key's data (its external representation)")

            let (_, ref) = copy(
                idnt.merging([kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecReturnPersistentRef as String: true]) {
                    $1
                })
            let persistent = try #require(ref as? Data)
            #expect(persistent.prefix(4) == Data("keys".utf8))
            let (s, byRef) = copy([
                kSecClass as String: kSecClassIdentity, kSecValuePersistentRef as String: persistent,
                kSecReturnRef as String: true
            ])
            #expect(s == errSecSuccess)
            #expect(byRef as? SecIdentity == CertFiles.identity(CertFiles.rsaCert, CertFiles.rsaKey))

            let (_, combined) = copy(
                idnt.merging([
                    kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecReturnRef as String: true,
                    kSecReturnAttributes as String: true, kSecReturnPersistentRef as String: true
                ]) { $1 })
            let c = try #require(combined as? [String: Any])
            #expect(c[kSecValueRef as String] is SecIdentity)
            #expect(c[kSecValuePersistentRef as String] as? Data == persistent)
            #expect(c[kSecAttrKeySizeInBits as String] as? Int == 2048)
        }
    }

    @Test func identity_queryByCertificateAndKeyAttributes() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add([kSecValueRef as String: CertFiles.identity(CertFiles.ecCert, CertFiles.ecKey)]) == errSecSuccess)
            #expect(
                add([
                    kSecValueRef as String: CertFiles.identity(CertFiles.rsaCert, CertFiles.rsaKey),
                    kSecAttrApplicationTag as String: "rsa-tag"
                ]) == errSecSuccess)
            func count(_ extra: Dict) -> Int {
                let (status, result) = copy(
                    [
                        kSecClass as String: kSecClassIdentity, kSecMatchLimit as String: kSecMatchLimitAll,
                        kSecReturnAttributes as String: true
                    ].merging(extra) { $1 })
                return status == errSecSuccess ? (result as? [Any])?.count ?? -1 : 0
            }
            #expect(count([:]) == 2)
            #expect(count([kSecAttrLabel as String: "Latchkey RSA Test"]) == 1)
            #expect(count([kSecAttrPublicKeyHash as String: CertFiles.ecHash]) == 1)
            #expect(count([kSecAttrApplicationTag as String: "rsa-tag"]) == 1)
            #expect(count([kSecAttrKeySizeInBits as String: 256]) == 1)
            #expect(
                count([kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrLabel as String: "Latchkey EC Test"]) == 0
            )
            #expect(
                copy([kSecClass as String: kSecClassIdentity, kSecAttrAccount as String: "x"]).0 == errSecNoSuchAttr)
            #expect(
                copy([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: "nobody"]).0
                    == errSecItemNotFound)
        }
    }

    @Test func identity_updateAndDelete_actOnBothItems() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let ec = CertFiles.identity(CertFiles.ecCert, CertFiles.ecKey)
            #expect(add([kSecValueRef as String: ec]) == errSecSuccess)
            #expect(
                add([kSecValueRef as String: CertFiles.identity(CertFiles.rsaCert, CertFiles.rsaKey)]) == errSecSuccess)

            #expect(
                update(
                    [kSecClass as String: kSecClassIdentity, kSecAttrKeyType as String: kSecAttrKeyTypeEC],
                    [kSecAttrLabel as String: "renamed"]) == errSecSuccess)
            #expect(
                copy([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "renamed"]).0 == errSecSuccess
            )
            #expect(copy([kSecClass as String: kSecClassKey, kSecAttrLabel as String: "renamed"]).0 == errSecSuccess)
            #expect(
                update([kSecClass as String: kSecClassIdentity], [kSecAttrPublicKeyHash as String: Data([1])])
                    == errSecParam)
            #expect(
                update([kSecClass as String: kSecClassIdentity], [kSecValueData as String: Data([1])]) == errSecParam)

            #expect(delete([kSecClass as String: kSecClassIdentity, kSecValueRef as String: ec]) == errSecSuccess)
            #expect(
                copy([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "renamed"]).0
                    == errSecItemNotFound)
            #expect(
                copy([kSecClass as String: kSecClassKey, kSecAttrLabel as String: "renamed"]).0 == errSecItemNotFound)
            #expect(delete([kSecValueRef as String: ec]) == errSecItemNotFound)
            #expect(
                delete([kSecClass as String: kSecClassIdentity, kSecMatchLimit as String: kSecMatchLimitOne])
                    == errSecParam)
            // kSecMatchLimitAll: "every match", what SecItemDelete does anyway (as macOS accepts it).
            #expect(
                delete([kSecClass as String: kSecClassIdentity, kSecMatchLimit as String: kSecMatchLimitAll])
                    == errSecSuccess)
            #expect(delete([kSecClass as String: kSecClassIdentity]) == errSecItemNotFound)
            #expect(copy([kSecClass as String: kSecClassKey]).0 == errSecItemNotFound)
            #expect(copy([kSecClass as String: kSecClassCertificate]).0 == errSecItemNotFound)
        }
    }

    @Test func identity_addWithoutRef_isParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add([kSecClass as String: kSecClassIdentity]) == errSecParam)
            #expect(
                add([kSecClass as String: kSecClassIdentity, kSecValueData as String: CertFiles.ecCert]) == errSecParam)
            #expect(
                add([
                    kSecValueRef as String: CertFiles.identity(CertFiles.ecCert, CertFiles.ecKey),
                    kSecMatchLimit as String: kSecMatchLimitOne
                ]) == errSecParam)
        }
    }
}
