import Foundation
import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// The certificates and keys of fixtures/certs/ (see its README) with the values
/// fixtures/certs/expected.sh prints for them (computed with the openssl CLI).
enum PKIFixture {
    static let root: URL = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while dir.path != "/" {
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) { return dir }
            dir = dir.deletingLastPathComponent()
        }
        fatalError("no Package.swift above \(#filePath)")
    }()

    static func load(_ name: String) -> [UInt8] {
        [UInt8](try! Data(contentsOf: root.appendingPathComponent("fixtures/certs/\(name)")))
    }

    static let rsaCert = load("rsa2048-cert.der")
    static let rsaKey = load("rsa2048-key.der")
    static let ecCert = load("ec-p256-cert.der")
    static let ecKey = load("ec-p256-key.der")
    static let ecKeyPKCS8 = load("ec-p256-key.pkcs8.der")
    static let otherKey = load("other-key.der")
    static let leafCert = load("other-leaf-cert.der")

    static let rsaHash = unhex("29b6d4d61a76c7f08afd861f9b520b2a2d8c88c7")
    static let ecHash = unhex("80740ab898bb61e408b34d51407c54ca8bdf6f44")
    static let otherHash = unhex("aa2af002dfb1609ca5166b6799180952f24ea7f3")
    /// DER of "CN=Latchkey RSA Test,O=Latchkey Fixtures,C=JP": subject and issuer of the RSA
    /// certificate, issuer of the leaf.
    static let rsaName = unhex(
        "3045310b3009060355040613024a50311a3018060355040a0c114c617463686b6579204669787475726573311a301806035504030c114c617463686b6579205253412054657374"
    )
    static let leafName = unhex(
        "3049311a3018060355040a0c114c617463686b6579204669787475726573310d300b060355040b0c044c656166311c301a06035504030c134c617463686b6579204f74686572204c656166"
    )
    static let ecSPKI = unhex(
        "3059301306072a8648ce3d020106082a8648ce3d03010703420004e668548e173dac292006f8a0b586206ecfb9ba31a3a908a75a9cd7910cdb4e4bcc6703a809bd23606cf3a2aa6deb3ecb3d0424f786efea36c692968e2d06d98c"
    )

    static func unhex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
        return out
    }
}

/// Certificates and keys through the typed API: attributes derived from the data, labels,
/// invalid data, unique keys (spec/FORMAT.md §7.5).
@Suite struct CertificateTests {
    func keychain(_ caller: CallerIdentity? = CallerIdentity(applicationIdentifier: "TEAM.app.one")) throws -> (
        MemoryFileSystem, Keychain
    ) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.caller = caller
        return (disk, kc)
    }

    // MARK: certificates

    @Test func addCertificate_derivesEveryReadOnlyAttributeFromTheDER() throws {
        let (disk, kc) = try keychain()
        let added = try kc.add(.certificate, attributes: [:], data: PKIFixture.rsaCert)
        let a = added.attributes
        #expect(a["ctyp"] == .integer(3))
        #expect(a["cenc"] == .integer(3))
        #expect(a["subj"] == .data(PKIFixture.rsaName))
        #expect(a["issr"] == .data(PKIFixture.rsaName))
        #expect(a["slnr"] == .data(PKIFixture.unhex("0123456789abcdef")))
        #expect(a["skid"] == .data(PKIFixture.rsaHash), "OpenSSL's default SKID is the key hash")
        #expect(a["pkhh"] == .data(PKIFixture.rsaHash))
        #expect(a["labl"] == .string("Latchkey RSA Test"), "label from the subject's common name")
        #expect(a["agrp"] == .string("TEAM.app.one"))
        #expect(added.protection == .always, "certificates default to dk")
        #expect(a["pdmn"] == .string("dk"))
        #expect(added.data == PKIFixture.rsaCert)

        // Found by its unique key (index path), by a non-unique derived attribute (scan) and
        // from a new process.
        let byKey = try kc.find(
            Query(
                .certificate,
                [
                    "ctyp": .integer(3), "issr": .data(PKIFixture.rsaName),
                    "slnr": .data(PKIFixture.unhex("0123456789abcdef"))
                ]))
        #expect(byKey == [added])
        #expect(try kc.find(Query(.certificate, ["pkhh": .data(PKIFixture.rsaHash)])) == [added])
        #expect(try kc.find(Query(.certificate, ["subj": .data(PKIFixture.rsaName)])) == [added])
        let reopened = try openKeychain(on: disk)
        reopened.caller = kc.caller
        #expect(try reopened.find(Query(.certificate)) == [added])
    }

    @Test func addCertificate_ecWithExplicitSKID_andV1Leaf() throws {
        let (_, kc) = try keychain()
        let ec = try kc.add(.certificate, attributes: [:], data: PKIFixture.ecCert)
        #expect(ec.attributes["skid"] == .data([0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f]))
        #expect(ec.attributes["pkhh"] == .data(PKIFixture.ecHash))
        #expect(ec.attributes["labl"] == .string("Latchkey EC Test"))

        let leaf = try kc.add(.certificate, attributes: [:], data: PKIFixture.leafCert)
        #expect(leaf.attributes["ctyp"] == .integer(1), "kSecAttrCertificateType is the X.509 version")
        #expect(leaf.attributes["skid"] == nil, "a v1 certificate has no SKID")
        #expect(leaf.attributes["subj"] == .data(PKIFixture.leafName))
        #expect(leaf.attributes["issr"] == .data(PKIFixture.rsaName))
        #expect(leaf.attributes["slnr"] == .data(PKIFixture.unhex("00f1e2d3c4b5a6978800")))
        #expect(leaf.attributes["pkhh"] == .data(PKIFixture.otherHash))
        // Certificates issued by the RSA certificate, found by issuer.
        #expect(try kc.find(Query(.certificate, ["issr": .data(PKIFixture.rsaName)])) == [leaf])
    }

    @Test func addCertificate_replacesCallerValuesOfDerivedAttributes_keepsAGivenLabel() throws {
        let (_, kc) = try keychain()
        let added = try kc.add(
            .certificate,
            attributes: [
                "ctyp": .integer(9), "cenc": .integer(1), "subj": .data([1]), "issr": .string("forged"),
                "slnr": .data([2]), "skid": .data([3]), "pkhh": .data([4]), "labl": .string("My cert"),
                "alis": .string("me@example.com")
            ], data: PKIFixture.leafCert)
        #expect(added.attributes["ctyp"] == .integer(1))
        #expect(added.attributes["cenc"] == .integer(3))
        #expect(added.attributes["subj"] == .data(PKIFixture.leafName))
        #expect(added.attributes["issr"] == .data(PKIFixture.rsaName))
        #expect(added.attributes["slnr"] == .data(PKIFixture.unhex("00f1e2d3c4b5a6978800")))
        #expect(added.attributes["skid"] == nil, "a caller's skid is dropped when the certificate has none")
        #expect(added.attributes["pkhh"] == .data(PKIFixture.otherHash))
        #expect(added.attributes["labl"] == .string("My cert"))
        #expect(added.attributes["alis"] == .string("me@example.com"))
        #expect(try kc.find(Query(.certificate, ["pkhh": .data([4])])).isEmpty)
    }

    @Test func addCertificate_invalidData_isParamError_andChangesNothing() throws {
        let (disk, kc) = try keychain()
        let before = disk.keychainBytes
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("PEM text", Array("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8)),
            ("truncated", Array(PKIFixture.rsaCert.dropLast(1))),
            ("trailing garbage", PKIFixture.rsaCert + [0]),
            ("a private key", PKIFixture.rsaKey)
        ]
        for (what, data) in cases {
            let e = expectKeychainError(.param, "\(what)") {
                try kc.add(.certificate, attributes: [:], data: data)
            }
            #expect(e?.message.contains("DER-encoded X.509 certificate") == true, "\(what): \(e.map { "\($0)" } ?? "")")
        }
        // In a batch, the valid item is not added either.
        expectKeychainError(.param) {
            try kc.add(contentsOf: [
                NewItem(.certificate, attributes: [:], data: PKIFixture.ecCert),
                NewItem(.certificate, attributes: [:], data: [0x30, 0x00])
            ])
        }
        #expect(disk.keychainBytes == before)
        #expect(try kc.find(Query(.certificate)).isEmpty)
    }

    @Test func addCertificate_unknownAttribute_isNoSuchAttr() throws {
        let (_, kc) = try keychain()
        expectKeychainError(.noSuchAttr) {
            try kc.add(.certificate, attributes: ["atag": .string("x")], data: PKIFixture.rsaCert)
        }
    }

    @Test func certificateUniqueKey_isTypeIssuerSerialGroupAndSync() throws {
        let (_, kc) = try keychain(
            CallerIdentity(applicationIdentifier: "TEAM.app.one", keychainAccessGroups: ["TEAM.shared"]))
        try kc.add(.certificate, attributes: [:], data: PKIFixture.rsaCert)
        // Same certificate, same group and sync: duplicate, whatever the label.
        expectKeychainError(.duplicateItem) {
            try kc.add(.certificate, attributes: ["labl": .string("again")], data: PKIFixture.rsaCert)
        }
        // The same issuer with another serial (the leaf) is another key.
        try kc.add(.certificate, attributes: [:], data: PKIFixture.leafCert)
        // The same certificate in another of the caller's groups, or synchronizable, is another key.
        try kc.add(.certificate, attributes: ["agrp": .string("TEAM.app.one")], data: PKIFixture.rsaCert)
        try kc.add(.certificate, attributes: ["sync": .integer(1)], data: PKIFixture.rsaCert)
        expectKeychainError(.duplicateItem) {
            try kc.add(.certificate, attributes: ["sync": .integer(1), "labl": .string("x")], data: PKIFixture.rsaCert)
        }
        #expect(try kc.find(Query(.certificate, ["pkhh": .data(PKIFixture.rsaHash)], synchronizable: .any)).count == 3)
        #expect(try kc.find(Query(.certificate, ["pkhh": .data(PKIFixture.rsaHash)])).count == 2)
    }

    @Test func certificate_callerGroupsApply() throws {
        let (_, kc) = try keychain()
        expectKeychainError(.noAccessForItem) {
            try kc.add(.certificate, attributes: ["agrp": .string("TEAM.other")], data: PKIFixture.rsaCert)
        }
        try kc.add(.certificate, attributes: [:], data: PKIFixture.rsaCert)
        kc.caller = CallerIdentity(applicationIdentifier: "TEAM.app.two")
        #expect(try kc.find(Query(.certificate)).isEmpty)
    }

    @Test func updateCertificate_derivedAttributesFollowTheData() throws {
        let (disk, kc) = try keychain()
        let added = try kc.add(.certificate, attributes: ["labl": .string("mine")], data: PKIFixture.rsaCert)
        // New values for read-only attributes do not stick; other attributes do.
        try kc.update(
            Query(.certificate),
            attributes: ["pkhh": .data(PKIFixture.ecHash), "subj": .data([1]), "alis": .string("a")])
        var now = try #require(try kc.find(Query(.certificate)).first)
        #expect(now.attributes["pkhh"] == .data(PKIFixture.rsaHash))
        #expect(now.attributes["subj"] == .data(PKIFixture.rsaName))
        #expect(now.attributes["alis"] == .string("a"))
        // New data: the derived attributes (and so the unique key) follow it; the label stays.
        try kc.update(Query(.certificate), attributes: [:], data: PKIFixture.leafCert)
        now = try #require(try kc.find(Query(.certificate)).first)
        #expect(now.persistentRef == added.persistentRef)
        #expect(now.attributes["ctyp"] == .integer(1))
        #expect(now.attributes["slnr"] == .data(PKIFixture.unhex("00f1e2d3c4b5a6978800")))
        #expect(now.attributes["skid"] == nil)
        #expect(now.attributes["pkhh"] == .data(PKIFixture.otherHash))
        #expect(now.attributes["labl"] == .string("mine"))
        #expect(
            try kc.find(
                Query(
                    .certificate,
                    [
                        "ctyp": .integer(1), "issr": .data(PKIFixture.rsaName),
                        "slnr": .data(PKIFixture.unhex("00f1e2d3c4b5a6978800"))
                    ])
            ).count == 1)
        // Data that is not a certificate changes nothing.
        let before = disk.keychainBytes
        expectKeychainError(.param) { try kc.update(Query(.certificate), attributes: [:], data: [0x30, 0x00]) }
        #expect(disk.keychainBytes == before)
    }

    // MARK: keys

    @Test func addPrivateKey_derivesClassTypeSizesAndApplicationLabel() throws {
        let (_, kc) = try keychain()
        let rsa = try kc.add(.key, attributes: ["atag": .string("com.example.rsa")], data: PKIFixture.rsaKey)
        #expect(rsa.attributes["kcls"] == .integer(1))
        #expect(rsa.attributes["type"] == .integer(42))
        #expect(rsa.attributes["bsiz"] == .integer(2048))
        #expect(rsa.attributes["esiz"] == .integer(2048))
        #expect(rsa.attributes["klbl"] == .data(PKIFixture.rsaHash), "klbl equals the certificate's pkhh")
        #expect(rsa.protection == .whenUnlocked, "keys default to ak")
        #expect(rsa.data == PKIFixture.rsaKey)

        let ec = try kc.add(.key, attributes: [:], data: PKIFixture.ecKeyPKCS8)
        #expect(ec.attributes["kcls"] == .integer(1))
        #expect(ec.attributes["type"] == .integer(73))
        #expect(ec.attributes["bsiz"] == .integer(256))
        #expect(ec.attributes["klbl"] == .data(PKIFixture.ecHash))

        #expect(try kc.find(Query(.key, ["klbl": .data(PKIFixture.ecHash)])) == [ec])
        #expect(try kc.find(Query(.key, ["type": .integer(42)])) == [rsa])
    }

    @Test func addPublicKey_isClass0_symmetricData_isClass2() throws {
        let (_, kc) = try keychain()
        let pub = try kc.add(.key, attributes: [:], data: PKIFixture.ecSPKI)
        #expect(pub.attributes["kcls"] == .integer(0))
        #expect(pub.attributes["type"] == .integer(73))
        #expect(pub.attributes["klbl"] == .data(PKIFixture.ecHash))
        // Private and public halves of one key differ in kcls: no collision.
        try kc.add(.key, attributes: [:], data: PKIFixture.ecKey)

        let sym = try kc.add(.key, attributes: ["atag": .string("aes")], data: [UInt8](repeating: 7, count: 32))
        #expect(sym.attributes["kcls"] == .integer(2))
        #expect(sym.attributes["type"] == nil)
        #expect(sym.attributes["klbl"] == nil)
        let empty = try kc.add(.key, attributes: ["atag": .string("empty")], data: [])
        #expect(empty.attributes["kcls"] == .integer(2))
    }

    @Test func addKey_callerValuesWin() throws {
        let (_, kc) = try keychain()
        let labelled = try kc.add(
            .key, attributes: ["klbl": .string("my-label"), "bsiz": .integer(1)], data: PKIFixture.ecKey)
        #expect(labelled.attributes["klbl"] == .string("my-label"))
        #expect(labelled.attributes["bsiz"] == .integer(1))
        #expect(labelled.attributes["kcls"] == .integer(1))
        #expect(labelled.attributes["type"] == .integer(73))
        // A caller that says symmetric (kSecAttrKeyClassSymmetric is the string "2") is believed.
        let sym = try kc.add(.key, attributes: ["kcls": .string("2")], data: PKIFixture.otherKey)
        #expect(sym.attributes["klbl"] == nil)
        #expect(sym.attributes["type"] == nil)
    }

    @Test func keyUniqueKey_sameKeyTwice_isDuplicate_anotherTagIsNot() throws {
        let (disk, kc) = try keychain()
        try kc.add(.key, attributes: [:], data: PKIFixture.ecKey)
        let before = disk.keychainBytes
        expectKeychainError(.duplicateItem, "PKCS#8 and SEC1 of one key derive the same unique key") {
            try kc.add(.key, attributes: ["labl": .string("again")], data: PKIFixture.ecKeyPKCS8)
        }
        #expect(disk.keychainBytes == before)
        try kc.add(.key, attributes: ["atag": .string("second")], data: PKIFixture.ecKey)
        try kc.add(.key, attributes: [:], data: PKIFixture.otherKey)
        #expect(try kc.find(Query(.key, ["kcls": .integer(1)])).count == 3)
    }
}
