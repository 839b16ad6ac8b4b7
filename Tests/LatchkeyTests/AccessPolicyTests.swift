import Foundation
import Testing
@testable import Latchkey
import LatchkeyFormat

/// Access groups are compared byte for byte on every path (issue 13 §4): an app whose group
/// differs from another's only in case or in Unicode normalization, or that holds a persistent
/// reference, reaches nothing of the other's — through the library and through the agent.
enum Attackers {
    static let victim = CallerIdentity(applicationIdentifier: "com.victim.bank")
    /// A crafted identity: the victim's group in capitals.
    static let shouting = CallerIdentity(applicationIdentifier: "COM.VICTIM.BANK")
    /// One group name, spelled precomposed (NFC) and decomposed (NFD): two groups.
    static let nfc = "caf\u{E9}.shared"
    static let nfd = "cafe\u{301}.shared"
    static let nfcApp = CallerIdentity(applicationIdentifier: "app.nfc", keychainAccessGroups: [nfc])
    static let nfdApp = CallerIdentity(applicationIdentifier: "app.nfd", keychainAccessGroups: [nfd])

    static func genp(_ account: String, _ extra: [String: AttributeValue] = [:]) -> [String: AttributeValue] {
        ["acct": .string(account), "svce": .string("bank")].merging(extra) { $1 }
    }

    /// The attacks of a caller with a case-folded copy of the victim's group, on any keychain
    /// (opened directly or through the agent). `kc.caller` is changed.
    static func caseFoldingAttack(_ kc: Keychain) throws {
        kc.caller = victim
        try kc.add(.genericPassword, attributes: genp("alice"), data: Array("victim secret".utf8))
        kc.caller = shouting
        try kc.add(.genericPassword, attributes: genp("mallory"), data: Array("own".utf8))

        // Naming its own group, in capitals, with case-insensitive matching on.
        let named = Query(
            .genericPassword, ["agrp": .string("COM.VICTIM.BANK"), "acct": .string("ALICE")], caseInsensitive: true)
        let unnamed = Query(.genericPassword, ["acct": .string("ALICE")], caseInsensitive: true)
        for q in [named, unnamed] {
            #expect(try kc.find(q).isEmpty)
            expectKeychainError(.itemNotFound) {
                try kc.update(q, attributes: ["labl": .string("owned")], data: Array("stolen".utf8))
            }
            expectKeychainError(.itemNotFound) { try kc.delete(q) }
        }
        // Case folding still applies to the attributes it matches, in its own group.
        let own = try kc.find(
            Query(
                .genericPassword, ["agrp": .string("COM.VICTIM.BANK"), "acct": .string("MALLORY")],
                caseInsensitive: true))
        #expect(own.map(\.data) == [Array("own".utf8)])

        kc.caller = victim
        let kept = try kc.find(Query(.genericPassword, ["acct": .string("alice")]))
        #expect(kept.map(\.data) == [Array("victim secret".utf8)])
        #expect(kept.first?.attributes["labl"] == nil)
    }

    /// NFC and NFD callers on any keychain: queries by index and by unique key, persistent
    /// reference, update, delete, and the groups of new values.
    static func normalizationAttack(_ kc: Keychain) throws {
        kc.caller = nfdApp
        let theirs = try kc.add(.genericPassword, attributes: genp("alice"), data: Array("nfd secret".utf8))
        kc.caller = nfcApp
        let byService = Query(.genericPassword, ["svce": .string("bank")])
        let byUniqueKey = Query(.genericPassword, genp("alice"))
        let byRef = Query(.genericPassword, persistentRef: theirs.persistentRef)
        for q in [byService, byUniqueKey, byRef] {
            #expect(try kc.find(q).isEmpty)
            expectKeychainError(.itemNotFound) { try kc.update(q, attributes: ["labl": .string("owned")]) }
            expectKeychainError(.itemNotFound) { try kc.delete(q) }
        }
        // It may not write into the other spelling either.
        expectKeychainError(.noAccessForItem) {
            try kc.add(.genericPassword, attributes: genp("x", ["agrp": .string(nfd)]), data: [])
        }
        try kc.add(.genericPassword, attributes: genp("mine"), data: [])
        expectKeychainError(.noAccessForItem) {
            try kc.update(Query(.genericPassword, genp("mine")), attributes: ["agrp": .string(nfd)])
        }

        kc.caller = nfdApp
        let kept = try kc.find(byService)
        #expect(kept.map(\.data) == [Array("nfd secret".utf8)])
        #expect(kept.first?.attributes["agrp"].map { Array($0.keyBytes) } == Array(nfd.utf8))
    }

    /// Persistent references to an item without a group (added by a caller without identity)
    /// and to an item whose group is stored as data: no right of their own.
    static func persistentReferenceAttack(_ kc: Keychain) throws {
        kc.caller = nil
        let orphan = try kc.add(.genericPassword, attributes: genp("orphan"), data: Array("no group".utf8))
        #expect(orphan.attributes["agrp"] == nil)
        let dataGroup = try kc.add(
            .genericPassword, attributes: genp("data", ["agrp": .data(Array("com.victim.bank".utf8))]),
            data: Array("data group".utf8))
        kc.caller = victim
        let victims = try kc.add(.genericPassword, attributes: genp("alice"), data: Array("victim secret".utf8))

        kc.caller = shouting
        for item in [orphan, dataGroup, victims] {
            let q = Query(.genericPassword, persistentRef: item.persistentRef)
            #expect(try kc.find(q).isEmpty, "\(item)")
            expectKeychainError(.itemNotFound) {
                try kc.update(q, attributes: ["labl": .string("owned")], data: Array("stolen".utf8))
            }
            expectKeychainError(.itemNotFound) { try kc.delete(q) }
        }
        // The owner of the group reaches both of its items (a data value with the group's bytes
        // is that group, as in the unique key); no caller with an identity reaches the orphan.
        kc.caller = victim
        #expect(
            try kc.find(Query(.genericPassword, persistentRef: dataGroup.persistentRef)).map(\.data) == [
                Array("data group".utf8)
            ])
        #expect(
            try kc.find(Query(.genericPassword, persistentRef: victims.persistentRef)).map(\.data) == [
                Array("victim secret".utf8)
            ])
        #expect(try kc.find(Query(.genericPassword, persistentRef: orphan.persistentRef)).isEmpty)
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("orphan")])).isEmpty)
        // A caller without identity (a trusted tool) still reaches it, unchanged.
        kc.caller = nil
        #expect(
            try kc.find(Query(.genericPassword, persistentRef: orphan.persistentRef)).map(\.data) == [
                Array("no group".utf8)
            ])
    }
}

@Suite struct AccessPolicyTests {
    func keychain() throws -> Keychain {
        let kc = try createKeychain(on: try makeDisk())
        try kc.unlock(passcode: TestEnv.passcode)
        return kc
    }

    @Test func caseInsensitiveQuery_neverReachesAGroupThatDiffersOnlyInCase() throws {
        try Attackers.caseFoldingAttack(try keychain())
    }

    @Test func caseInsensitiveQuery_matchesAnExplicitGroupByteForByte() throws {
        let kc = try keychain()
        kc.caller = CallerIdentity(applicationIdentifier: "app", keychainAccessGroups: ["team.shared", "TEAM.SHARED"])
        try kc.add(.genericPassword, attributes: Attackers.genp("a", ["agrp": .string("team.shared")]), data: [1])
        try kc.add(.genericPassword, attributes: Attackers.genp("a", ["agrp": .string("TEAM.SHARED")]), data: [2])
        let found = try kc.find(
            Query(.genericPassword, ["agrp": .string("TEAM.SHARED"), "acct": .string("A")], caseInsensitive: true))
        #expect(found.map(\.data) == [[2]])
        #expect(
            try kc.delete(
                Query(.genericPassword, ["agrp": .string("team.shared"), "acct": .string("A")], caseInsensitive: true))
                == 1)
        #expect(try kc.find(Query(.genericPassword, ["acct": .string("a")])).map(\.data) == [[2]])
    }

    @Test func nfcAndNFDSpellingsOfAGroup_areTwoGroups_onEveryPath() throws {
        try Attackers.normalizationAttack(try keychain())
    }

    @Test func persistentReference_givesNoRightToAnItemOutsideTheCallersGroups() throws {
        try Attackers.persistentReferenceAttack(try keychain())
    }

    @Test func identities_caseInsensitiveOrNFD_doNotCrossGroups() throws {
        let kc = try keychain()
        kc.caller = Attackers.victim
        try kc.addIdentity(certificate: PKIFixture.rsaCert, privateKey: PKIFixture.rsaKey)
        kc.caller = Attackers.nfdApp
        try kc.addIdentity(certificate: PKIFixture.ecCert, privateKey: PKIFixture.ecKey)

        kc.caller = Attackers.shouting
        let folded = IdentityQuery(["agrp": .string("COM.VICTIM.BANK")], caseInsensitive: true)
        #expect(try kc.identities(matching: folded).isEmpty)
        expectKeychainError(.itemNotFound) {
            try kc.updateIdentities(matching: folded, attributes: ["labl": .string("owned")])
        }
        expectKeychainError(.itemNotFound) { try kc.deleteIdentities(matching: folded) }
        kc.caller = Attackers.nfcApp
        #expect(try kc.identities(matching: IdentityQuery()).isEmpty)
        expectKeychainError(.itemNotFound) { try kc.deleteIdentities(matching: IdentityQuery()) }

        kc.caller = Attackers.victim
        #expect(try kc.identities(matching: IdentityQuery()).map(\.privateKey.data) == [PKIFixture.rsaKey])
        kc.caller = Attackers.nfdApp
        #expect(try kc.identities(matching: IdentityQuery()).map(\.privateKey.data) == [PKIFixture.ecKey])
    }

    @Test func callerIdentity_keepsGroupsThatDifferOnlyInNormalization() {
        let both = CallerIdentity(applicationIdentifier: Attackers.nfc, keychainAccessGroups: [Attackers.nfd])
        #expect(both.accessGroups.map { Array($0.utf8) } == [Array(Attackers.nfd.utf8), Array(Attackers.nfc.utf8)])
        #expect(
            CallerIdentity(applicationIdentifier: Attackers.nfc) != CallerIdentity(applicationIdentifier: Attackers.nfd)
        )
        #expect(
            Attackers.nfcApp == CallerIdentity(applicationIdentifier: "app.nfc", keychainAccessGroups: [Attackers.nfc]))
    }
}

/// The same attacks through `latchkey agent`: each request carries its caller, and the agent
/// applies the same policy.
@Suite struct AgentAccessPolicyTests {
    func remote() throws -> (AgentSandbox, Keychain) {
        let box = try AgentSandbox()
        try box.startAgent()
        let kc = try box.remote()
        #expect(kc.isServedByAgent)
        try kc.unlock(passcode: TestEnv.passcode)
        return (box, kc)
    }

    @Test func caseInsensitiveQuery_throughTheAgent() throws {
        let (box, kc) = try remote()
        try Attackers.caseFoldingAttack(kc)
        withExtendedLifetime(box) {}
    }

    @Test func nfcAndNFDGroups_throughTheAgent() throws {
        let (box, kc) = try remote()
        try Attackers.normalizationAttack(kc)
        withExtendedLifetime(box) {}
    }

    @Test func persistentReference_throughTheAgent() throws {
        let (box, kc) = try remote()
        try Attackers.persistentReferenceAttack(kc)
        withExtendedLifetime(box) {}
    }
}
