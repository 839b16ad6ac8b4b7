import Testing
@testable import Latchkey
import LatchkeyTestSupport

/// Identities: a certificate and its private key joined by pkhh == klbl; adding or deleting an
/// identity acts on both items, in one transaction (reference §1.1, §9.7–9.8).
@Suite struct IdentityTests {
    func keychain(_ caller: CallerIdentity? = CallerIdentity(applicationIdentifier: "TEAM.app.one")) throws -> (
        MemoryFileSystem, Keychain
    ) {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.caller = caller
        return (disk, kc)
    }

    /// Both fixture identities (RSA and EC) in a fresh keychain.
    func keychainWithTwoIdentities() throws -> (MemoryFileSystem, Keychain, rsa: Identity, ec: Identity) {
        let (disk, kc) = try keychain()
        let rsa = try kc.addIdentity(certificate: PKIFixture.rsaCert, privateKey: PKIFixture.rsaKey)
        let ec = try kc.addIdentity(
            certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKey,
            attributes: ["atag": .string("com.example.ec")])
        return (disk, kc, rsa, ec)
    }

    @Test func addIdentity_addsCertificateAndKey_inOneTransaction() throws {
        let (disk, kc) = try keychain()
        // The cost of one transaction: a single item added alone.
        let m0 = disk.mutations
        try kc.add(.genericPassword, attributes: ["acct": .string("probe")], data: [1])
        let oneTransaction = disk.mutations - m0

        let m1 = disk.mutations
        let id = try kc.addIdentity(
            certificate: PKIFixture.rsaCert, privateKey: PKIFixture.rsaKey,
            attributes: ["labl": .string("Signing")])
        #expect(disk.mutations - m1 == oneTransaction, "certificate and key are written by one commit")

        #expect(id.certificate.itemClass == .certificate)
        #expect(id.certificate.data == PKIFixture.rsaCert)
        #expect(id.certificate.attributes["pkhh"] == .data(PKIFixture.rsaHash))
        #expect(id.certificate.protection == .always)
        #expect(id.privateKey.itemClass == .key)
        #expect(id.privateKey.data == PKIFixture.rsaKey)
        #expect(id.privateKey.attributes["klbl"] == .data(PKIFixture.rsaHash))
        #expect(id.privateKey.attributes["kcls"] == .integer(1))
        #expect(id.privateKey.attributes["type"] == .integer(42))
        #expect(id.privateKey.protection == .whenUnlocked)
        // Attributes of both schemas go to both items.
        #expect(id.certificate.attributes["labl"] == .string("Signing"))
        #expect(id.privateKey.attributes["labl"] == .string("Signing"))
        #expect(id.certificate.attributes["agrp"] == .string("TEAM.app.one"))
        #expect(id.privateKey.attributes["agrp"] == .string("TEAM.app.one"))

        #expect(try kc.find(Query(.certificate)) == [id.certificate])
        #expect(try kc.find(Query(.key)) == [id.privateKey])
        #expect(try kc.identities() == [id])
    }

    @Test func addIdentity_protectionAppliesToBoth() throws {
        let (_, kc) = try keychain()
        let id = try kc.addIdentity(
            certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKeyPKCS8,
            protection: .afterFirstUnlockThisDeviceOnly)
        #expect(id.certificate.protection == .afterFirstUnlockThisDeviceOnly)
        #expect(id.privateKey.protection == .afterFirstUnlockThisDeviceOnly)
        #expect(try kc.identities(matching: IdentityQuery(protection: .afterFirstUnlockThisDeviceOnly)) == [id])
        #expect(try kc.identities(matching: IdentityQuery(["pdmn": .string("cku")])) == [id])
        #expect(try kc.identities(matching: IdentityQuery(protection: .always)).isEmpty)
    }

    @Test func addIdentity_keyOfAnotherCertificate_isParam_andWritesNothing() throws {
        let (disk, kc) = try keychain()
        let before = disk.keychainBytes
        let mismatch = expectKeychainError(.param) {
            try kc.addIdentity(certificate: PKIFixture.rsaCert, privateKey: PKIFixture.ecKey)
        }
        #expect(mismatch?.message.contains("does not belong to the certificate") == true)
        expectKeychainError(.param, "the leaf is for other-key, not the EC key") {
            try kc.addIdentity(certificate: PKIFixture.leafCert, privateKey: PKIFixture.ecKey)
        }
        expectKeychainError(.param, "a public key is not enough") {
            try kc.addIdentity(certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecSPKI)
        }
        expectKeychainError(.param, "not a key") {
            try kc.addIdentity(certificate: PKIFixture.ecCert, privateKey: Array("secret".utf8))
        }
        expectKeychainError(.param, "not a certificate") {
            try kc.addIdentity(certificate: Array(PKIFixture.ecCert.dropLast()), privateKey: PKIFixture.ecKey)
        }
        expectKeychainError(.noSuchAttr) {
            try kc.addIdentity(
                certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKey, attributes: ["acct": .string("x")])
        }
        #expect(disk.keychainBytes == before)
        // The leaf does pair with its own key.
        let leaf = try kc.addIdentity(certificate: PKIFixture.leafCert, privateKey: PKIFixture.otherKey)
        #expect(leaf.privateKey.attributes["klbl"] == .data(PKIFixture.otherHash))
    }

    @Test func addIdentity_existingKey_isDuplicate_andTheCertificateIsNotAddedEither() throws {
        let (disk, kc) = try keychain()
        try kc.add(.key, attributes: [:], data: PKIFixture.ecKey)
        let before = disk.keychainBytes
        expectKeychainError(.duplicateItem) {
            try kc.addIdentity(certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKey)
        }
        #expect(disk.keychainBytes == before)
        #expect(try kc.find(Query(.certificate)).isEmpty)
    }

    @Test func addIdentity_existingCertificate_addsOnlyTheKey_sameIdentityTwiceIsDuplicate() throws {
        let (_, kc) = try keychain()
        let cert = try kc.add(.certificate, attributes: [:], data: PKIFixture.rsaCert)
        let id = try kc.addIdentity(certificate: PKIFixture.rsaCert, privateKey: PKIFixture.rsaKey)
        #expect(id.certificate == cert)
        #expect(try kc.find(Query(.certificate)).count == 1)
        expectKeychainError(.duplicateItem) {
            try kc.addIdentity(certificate: PKIFixture.rsaCert, privateKey: PKIFixture.rsaKey)
        }
        #expect(try kc.identities() == [id])
    }

    @Test func identities_needBothHalves() throws {
        let (_, kc) = try keychain()
        try kc.add(.certificate, attributes: [:], data: PKIFixture.rsaCert)  // no key
        try kc.add(.key, attributes: [:], data: PKIFixture.ecKey)  // no certificate
        try kc.add(.key, attributes: [:], data: PKIFixture.ecSPKI)  // public half only
        try kc.add(.certificate, attributes: [:], data: PKIFixture.leafCert)
        #expect(try kc.identities().isEmpty)
        // Adding the RSA key completes one identity.
        try kc.add(.key, attributes: [:], data: PKIFixture.rsaKey)
        let found = try kc.identities()
        #expect(found.count == 1)
        #expect(found.first?.certificate.attributes["labl"] == .string("Latchkey RSA Test"))
        // Only the private key joins, not the EC public key beside the EC private key.
        try kc.add(.certificate, attributes: [:], data: PKIFixture.ecCert)
        let both = try kc.identities()
        #expect(both.count == 2)
        #expect(both.allSatisfy { $0.privateKey.attributes["kcls"] == .integer(1) })
        #expect(both.allSatisfy { $0.certificate.attributes["pkhh"] == $0.privateKey.attributes["klbl"] })
    }

    @Test func identities_byCertificateAttribute() throws {
        let (_, kc, rsa, ec) = try keychainWithTwoIdentities()
        #expect(try kc.identities(matching: IdentityQuery(["labl": .string("Latchkey RSA Test")])) == [rsa])
        #expect(
            try kc.identities(matching: IdentityQuery(["labl": .string("latchkey ec test")], caseInsensitive: true))
                == [ec])
        #expect(try kc.identities(matching: IdentityQuery(["issr": .data(PKIFixture.rsaName)])) == [rsa])
        #expect(
            try kc.identities(matching: IdentityQuery(["skid": .data([0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f])])) == [ec])
        #expect(try kc.identities(matching: IdentityQuery(["pkhh": .data(PKIFixture.ecHash)])) == [ec])
        #expect(try kc.identities(matching: IdentityQuery(["labl": .string("nobody")])).isEmpty)
        #expect(try kc.identities().count == 2)
        #expect(try kc.identities(limit: 1).count == 1)
    }

    @Test func identities_byKeyAttribute() throws {
        let (_, kc, rsa, ec) = try keychainWithTwoIdentities()
        #expect(try kc.identities(matching: IdentityQuery(["type": .integer(73)])) == [ec])
        #expect(try kc.identities(matching: IdentityQuery(["bsiz": .integer(2048)])) == [rsa])
        #expect(try kc.identities(matching: IdentityQuery(["atag": .string("com.example.ec")])) == [ec])
        #expect(try kc.identities(matching: IdentityQuery(["klbl": .data(PKIFixture.rsaHash)])) == [rsa])
        #expect(try kc.identities(matching: IdentityQuery(["kcls": .integer(1)])).count == 2)
        #expect(try kc.identities(matching: IdentityQuery(["kcls": .integer(0)])).isEmpty)
        // A certificate attribute and a key attribute together.
        #expect(
            try kc.identities(matching: IdentityQuery(["labl": .string("Latchkey RSA Test"), "type": .integer(73)]))
                .isEmpty)
        #expect(
            try kc.identities(matching: IdentityQuery(["labl": .string("Latchkey EC Test"), "type": .integer(73)])) == [
                ec
            ])
        expectKeychainError(.noSuchAttr) { _ = try kc.identities(matching: IdentityQuery(["svce": .string("x")])) }
    }

    @Test func identities_withoutData_areEmptyData() throws {
        let (_, kc, _, _) = try keychainWithTwoIdentities()
        let found = try kc.identities(includeData: false)
        #expect(found.count == 2)
        #expect(found.allSatisfy { $0.certificate.data.isEmpty && $0.privateKey.data.isEmpty })
    }

    @Test func deleteIdentities_deletesBothItems_inOneTransaction() throws {
        let (disk, kc, rsa, ec) = try keychainWithTwoIdentities()
        // The cost of one transaction: deleting a single item.
        try kc.add(.genericPassword, attributes: ["acct": .string("probe")], data: [1])
        let m0 = disk.mutations
        try kc.delete(Query(.genericPassword))
        let oneTransaction = disk.mutations - m0

        let m1 = disk.mutations
        #expect(try kc.deleteIdentities(matching: IdentityQuery(["labl": .string("Latchkey RSA Test")])) == 1)
        #expect(disk.mutations - m1 == oneTransaction, "certificate and key are deleted by one commit")
        #expect(try kc.find(Query(.certificate)) == [ec.certificate])
        #expect(try kc.find(Query(.key)) == [ec.privateKey])
        #expect(try kc.identities() == [ec])
        #expect(try kc.find(Query(.key, persistentRef: rsa.privateKey.persistentRef)).isEmpty)

        let before = disk.keychainBytes
        expectKeychainError(.itemNotFound) {
            try kc.deleteIdentities(matching: IdentityQuery(["labl": .string("Latchkey RSA Test")]))
        }
        #expect(disk.keychainBytes == before)

        // By a key attribute.
        #expect(try kc.deleteIdentities(matching: IdentityQuery(["type": .integer(73)])) == 1)
        #expect(try kc.find(Query(.certificate)).isEmpty)
        #expect(try kc.find(Query(.key)).isEmpty)
    }

    @Test func deleteIdentities_leavesUnpairedItems() throws {
        let (_, kc, _, ec) = try keychainWithTwoIdentities()
        let lone = try kc.add(.certificate, attributes: [:], data: PKIFixture.leafCert)
        let pub = try kc.add(.key, attributes: [:], data: PKIFixture.ecSPKI)
        #expect(try kc.deleteIdentities() == 2)
        #expect(try kc.find(Query(.certificate)) == [lone])
        #expect(try kc.find(Query(.key)) == [pub])
        _ = ec
    }

    @Test func identities_respectTheCallersGroups() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.caller = CallerIdentity(applicationIdentifier: "TEAM.app.one", keychainAccessGroups: ["TEAM.shared"])
        let shared = try kc.addIdentity(certificate: PKIFixture.rsaCert, privateKey: PKIFixture.rsaKey)
        #expect(shared.certificate.attributes["agrp"] == .string("TEAM.shared"))
        #expect(shared.privateKey.attributes["agrp"] == .string("TEAM.shared"))
        let own = try kc.addIdentity(
            certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKey,
            attributes: ["agrp": .string("TEAM.app.one")])
        #expect(own.privateKey.attributes["agrp"] == .string("TEAM.app.one"))
        expectKeychainError(.noAccessForItem) {
            try kc.addIdentity(
                certificate: PKIFixture.leafCert, privateKey: PKIFixture.otherKey,
                attributes: ["agrp": .string("TEAM.foreign")])
        }

        // A second app sharing TEAM.shared sees only that identity; a third sees none.
        kc.caller = CallerIdentity(applicationIdentifier: "TEAM.app.two", keychainAccessGroups: ["TEAM.shared"])
        #expect(try kc.identities() == [shared])
        #expect(try kc.identities(matching: IdentityQuery(["agrp": .string("TEAM.app.one")])).isEmpty)
        expectKeychainError(.itemNotFound) { try kc.deleteIdentities(matching: IdentityQuery(["type": .integer(73)])) }
        kc.caller = CallerIdentity(applicationIdentifier: "TEAM.app.three")
        #expect(try kc.identities().isEmpty)
        kc.caller = CallerIdentity(applicationIdentifier: nil)
        expectKeychainError(.missingEntitlement) { _ = try kc.identities() }

        kc.caller = CallerIdentity(applicationIdentifier: "TEAM.app.one", keychainAccessGroups: ["TEAM.shared"])
        #expect(try kc.identities(matching: IdentityQuery(["agrp": .string("TEAM.app.one")])) == [own])
        #expect(try kc.identities().count == 2)
    }

    @Test func identities_syncFilterAppliesToBothHalves() throws {
        let (_, kc) = try keychain()
        let synced = try kc.addIdentity(
            certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKey, attributes: ["sync": .integer(1)])
        #expect(synced.certificate.attributes["sync"] == .integer(1))
        #expect(synced.privateKey.attributes["sync"] == .integer(1))
        #expect(try kc.identities().isEmpty)
        #expect(try kc.identities(matching: IdentityQuery(synchronizable: .any)) == [synced])
        #expect(try kc.identities(matching: IdentityQuery(synchronizable: .synchronizable)) == [synced])
    }

    @Test func updateIdentities_changesBothItems_inOneTransaction() throws {
        let (disk, kc, rsa, ec) = try keychainWithTwoIdentities()
        try kc.add(.genericPassword, attributes: ["acct": .string("probe")], data: [1])
        let m0 = disk.mutations
        try kc.update(Query(.genericPassword), attributes: ["labl": .string("x")])
        let oneTransaction = disk.mutations - m0

        let m1 = disk.mutations
        #expect(
            try kc.updateIdentities(
                matching: IdentityQuery(["type": .integer(73)]),
                attributes: ["labl": .string("renamed"), "atag": .string("new-tag")]) == 1)
        #expect(disk.mutations - m1 == oneTransaction)
        let found = try #require(try kc.identities(matching: IdentityQuery(["labl": .string("renamed")])).first)
        #expect(found.certificate.persistentRef == ec.certificate.persistentRef)
        #expect(found.privateKey.attributes["labl"] == .string("renamed"))
        #expect(found.privateKey.attributes["atag"] == .string("new-tag"))
        #expect(found.certificate.attributes["atag"] == nil)
        #expect(try kc.identities(matching: IdentityQuery(["labl": .string("Latchkey RSA Test")])) == [rsa])

        // Protection moves both items.
        try kc.updateIdentities(
            matching: IdentityQuery(["labl": .string("renamed")]), attributes: [:], protection: .alwaysThisDeviceOnly)
        let moved = try #require(try kc.identities(matching: IdentityQuery(["labl": .string("renamed")])).first)
        #expect(moved.certificate.protection == .alwaysThisDeviceOnly)
        #expect(moved.privateKey.protection == .alwaysThisDeviceOnly)

        let before = disk.keychainBytes
        for forbidden: [String: AttributeValue] in [
            ["pkhh": .data([1])], ["subj": .data([1])], ["klbl": .data([1])], ["kcls": .integer(0)]
        ] {
            expectKeychainError(.param) { try kc.updateIdentities(matching: IdentityQuery(), attributes: forbidden) }
        }
        expectKeychainError(.noSuchAttr) {
            try kc.updateIdentities(matching: IdentityQuery(), attributes: ["acct": .string("x")])
        }
        expectKeychainError(.itemNotFound) {
            try kc.updateIdentities(
                matching: IdentityQuery(["labl": .string("none")]), attributes: ["labl": .string("y")])
        }
        #expect(disk.keychainBytes == before)
    }

    @Test func updateIdentities_collision_changesNothing() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk, passcode: nil)
        kc.caller = CallerIdentity(applicationIdentifier: "TEAM.app.one", keychainAccessGroups: ["TEAM.a", "TEAM.b"])
        try kc.addIdentity(
            certificate: PKIFixture.rsaCert, privateKey: PKIFixture.rsaKey, attributes: ["agrp": .string("TEAM.a")])
        try kc.add(.certificate, attributes: ["agrp": .string("TEAM.b")], data: PKIFixture.rsaCert)
        // The copy in TEAM.b joins the key in TEAM.a: two identities share the key.
        #expect(try kc.identities().count == 2)
        let before = disk.keychainBytes
        expectKeychainError(.duplicateItem) {
            try kc.updateIdentities(
                matching: IdentityQuery(["agrp": .string("TEAM.b")]), attributes: ["agrp": .string("TEAM.a")])
        }
        #expect(disk.keychainBytes == before)
        #expect(try kc.find(Query(.key)).first?.attributes["agrp"] == .string("TEAM.a"))
    }

    @Test func identities_byPersistentReference_ofEitherItem() throws {
        let (_, kc, rsa, ec) = try keychainWithTwoIdentities()
        #expect(try kc.identities(matching: IdentityQuery(persistentRef: ec.privateKey.persistentRef)) == [ec])
        #expect(try kc.identities(matching: IdentityQuery(persistentRef: rsa.certificate.persistentRef)) == [rsa])
        #expect(try kc.identities(matching: IdentityQuery(persistentRef: Array(repeating: 0, count: 20))).isEmpty)
        #expect(try kc.deleteIdentities(matching: IdentityQuery(persistentRef: rsa.privateKey.persistentRef)) == 1)
        #expect(try kc.identities() == [ec])
    }

    @Test func addIdentity_withUserPresence_protectsTheKeyOnly() throws {
        let disk = try makeDisk()
        let kc = try createKeychain(on: disk)
        try kc.unlock(passcode: TestEnv.passcode)
        kc.caller = CallerIdentity(applicationIdentifier: "TEAM.app.one")
        let id = try kc.addIdentity(
            certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKey, requiresUserPresence: true)
        #expect(id.privateKey.requiresUserPresence)
        #expect(!id.certificate.requiresUserPresence)
        // Without a handler, reading the key's data is refused; without data it is not asked for.
        expectKeychainError(.interactionNotAllowed) { _ = try kc.identities() }
        #expect(try kc.identities(includeData: false).count == 1)
        nonisolated(unsafe) var asked = 0
        kc.authenticationHandler = { _ in
            asked += 1; return TestEnv.passcode
        }
        #expect(try kc.identities().first?.privateKey.data == PKIFixture.ecKey)
        #expect(asked == 1)
    }
}
