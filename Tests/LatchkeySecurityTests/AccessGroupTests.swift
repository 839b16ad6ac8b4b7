import Foundation
import Testing
import Latchkey
import LatchkeySecurity

// Access groups as the seeds describe them (seed 000 §3.5–§3.8, seed 003) and as Latchkey decides:
// foreign group in new values → errSecNoAccessForItem (−25243); in a query → not found
// (−25300); a caller without any identity → errSecMissingEntitlement (−34018).

@Suite("Access groups: seed 000 §3.8")
struct Seed000AccessGroupTests {
    static let prefix = "GFDZH8PDDD"
    static let app = "GFDZH8PDDD.com.yourcompany.KeyChainApp"
    static let forbidden = [
        "GFDZH8PDDD.", "GFDZH8PDDD.com.yourcompany.OtherApp", "XJ7GS56DBA.com.apple.MailApp", "GFDZH8PDDD.other"
    ]

    /// Items of other apps in the groups this app may not use, added by a caller that may.
    static func seedForeignItems(_ kc: SecTestKeychain) {
        for group in forbidden {
            kc.app(CallerIdentity(applicationIdentifier: group)).use {
                #expect(add(genpItem("foreign", [kSecAttrAccessGroup as String: group])) == errSecSuccess)
            }
        }
    }

    @Test func case1_withoutEntitlements_defaultAndOnlyGroupIsTheApplicationIdentifier() throws {
        let kc = try SecTestKeychain(caller: CallerIdentity(applicationIdentifier: Self.app))
        Self.seedForeignItems(kc)
        kc.run {
            // [1]-1 default group
            #expect(add(genpItem("mine")) == errSecSuccess)
            #expect(attributes(genp("mine"))?["agrp"] as? String == Self.app)
            // [1]-2 groups it may name
            #expect(add(genpItem("explicit", [kSecAttrAccessGroup as String: Self.app])) == errSecSuccess)
            // [1]-4 groups it may not use: adding is −25243, finding finds nothing
            for group in Self.forbidden {
                #expect(add(genpItem("x", [kSecAttrAccessGroup as String: group])) == errSecNoAccessForItem, "\(group)")
                #expect(
                    copy(genp(nil, service: nil, [kSecAttrAccessGroup as String: group])).0 == errSecItemNotFound,
                    "\(group)")
            }
            // [1]-3 it sees only its own group
            #expect(count(genp(nil, service: nil, [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])) == 2)
            #expect(count(genp("foreign")) == 0)
        }
    }

    @Test func case2_withEntitlements_defaultIsTheFirstKeychainAccessGroup() throws {
        let groups = ["GFDZH8PDDD.private", "GFDZH8PDDD.com.yourcompany.share"]
        let kc = try SecTestKeychain(
            caller: CallerIdentity(applicationIdentifier: Self.app, keychainAccessGroups: groups))
        Self.seedForeignItems(kc)
        kc.run {
            // [2]-1 default group: the first keychain-access-groups entry
            #expect(add(genpItem("default")) == errSecSuccess)
            #expect(attributes(genp("default"))?["agrp"] as? String == "GFDZH8PDDD.private")
            // [2]-2 it may name both groups and its application-identifier
            for group in groups + [Self.app] {
                #expect(
                    add(genpItem("in " + group, [kSecAttrAccessGroup as String: group])) == errSecSuccess, "\(group)")
            }
            // [2]-3 it reads all three groups
            for group in groups + [Self.app] {
                #expect(count(genp(nil, service: nil, [kSecAttrAccessGroup as String: group])) >= 1, "\(group)")
            }
            #expect(count(genp()) == 4)
            // [2]-4 and none of the others
            for group in Self.forbidden {
                #expect(add(genpItem("x", [kSecAttrAccessGroup as String: group])) == errSecNoAccessForItem, "\(group)")
                #expect(
                    copy(genp(nil, service: nil, [kSecAttrAccessGroup as String: group])).0 == errSecItemNotFound,
                    "\(group)")
            }
        }
    }

    @Test func update_toForeignGroup_returnsNoAccessForItemAndChangesNothing() throws {
        let kc = try SecTestKeychain(
            caller: CallerIdentity(applicationIdentifier: Self.app, keychainAccessGroups: ["GFDZH8PDDD.share"]))
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(
                update(genp("a"), [kSecAttrAccessGroup as String: "XJ7GS56DBA.com.apple.MailApp"])
                    == errSecNoAccessForItem)
            #expect(attributes(genp("a"))?["agrp"] as? String == "GFDZH8PDDD.share")
            #expect(
                update(genp("a"), [kSecAttrAccessGroup as String: Self.app]) == errSecSuccess,
                "moving between its own groups is allowed")
            #expect(attributes(genp("a"))?["agrp"] as? String == Self.app)
        }
    }

    @Test func updateQueryAndDelete_naming_aForeignGroup_findNothing() throws {
        let kc = try SecTestKeychain(caller: CallerIdentity(applicationIdentifier: Self.app))
        Self.seedForeignItems(kc)
        kc.run {
            let foreign = genp("foreign", service: nil, [kSecAttrAccessGroup as String: "GFDZH8PDDD.other"])
            #expect(update(foreign, [kSecAttrLabel as String: "mine now"]) == errSecItemNotFound)
            #expect(delete(foreign) == errSecItemNotFound)
            #expect(delete(genp("foreign")) == errSecItemNotFound)
        }
        kc.app(CallerIdentity(applicationIdentifier: "GFDZH8PDDD.other")).use {
            #expect(count(genp("foreign")) == 1, "the owner still has it")
            #expect(attributes(genp("foreign"))?["labl"] == nil)
        }
    }
}

@Suite("Access groups: seed 003, two apps sharing a group")
struct Seed003SharingTests {
    static let share = "GFDZH8PXXX.share"
    static let app1 = CallerIdentity(
        applicationIdentifier: "GFDZH8PXXX.com.yourcompany.KeyChainApp-1",
        keychainAccessGroups: ["GFDZH8PXXX.com.yourcompany.KeyChainApp-1", share])
    static let app2 = CallerIdentity(
        applicationIdentifier: "GFDZH8PXXX.com.yourcompany.KeyChainApp-2",
        keychainAccessGroups: ["GFDZH8PXXX.com.yourcompany.KeyChainApp-2", share])
    static let app3 = CallerIdentity(applicationIdentifier: "XJ7GS56DBA.com.othercompany.App-3")

    /// The dump of KeyChainApp-2's `dumpItems`: class genp, attributes and data, all items.
    static func dump() -> (OSStatus, [[String: Any]]) {
        let query: Dict = [
            kSecClass as String: kSecClassGenericPassword, kSecReturnAttributes as String: kCFBooleanTrue!,
            kSecReturnData as String: kCFBooleanTrue!, kSecMatchLimit as String: kSecMatchLimitAll
        ]
        let (status, result) = copy(query)
        return (status, result as? [[String: Any]] ?? [])
    }

    @Test func twoAppsOfOneGroup_seeAndUpdateEachOthersSharedItems_aThirdSeesNothing() throws {
        let kc = try SecTestKeychain(caller: Self.app1)
        let app1 = kc.config, app2 = kc.app(Self.app2), app3 = kc.app(Self.app3)

        // KeyChainApp-1: addNewItem into the shared group, plus one private item.
        app1.use {
            #expect(
                add([
                    kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "hashiguchi",
                    kSecValueData as String: Data("pass00".utf8), kSecAttrAccessGroup as String: Self.share
                ]) == errSecSuccess)
            #expect(add(genpItem("app1-only")) == errSecSuccess)
        }
        app2.use { #expect(add(genpItem("app2-only")) == errSecSuccess) }

        // KeyChainApp-2: dumpItems shows the shared item, as in the seed's output.
        app2.use {
            let (status, items) = Self.dump()
            #expect(status == errSecSuccess)
            let shared = items.first { $0["acct"] as? String == "hashiguchi" }
            #expect(shared?["agrp"] as? String == Self.share)
            #expect(shared?["pdmn"] as? String == "ak")
            #expect(shared?["svce"] as? String == "")
            #expect(shared?["v_Data"] as? Data == Data("pass00".utf8))
            #expect(
                Set(items.compactMap { $0["acct"] as? String }) == ["hashiguchi", "app2-only"],
                "not app 1's private item")
        }

        // KeyChainApp-2: updateItem rewrites the password (the seed's "pass11").
        app2.use {
            let query: Dict = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "hashiguchi"]
            #expect(SecItemCopyMatching(query as CFDictionary, nil) == noErr)
            #expect(update(query, [kSecValueData as String: Data("pass11".utf8)]) == noErr)
        }
        app1.use {
            #expect(secret(genp("hashiguchi")) == "pass11")
            #expect(count(genp("app2-only")) == 0)
        }

        // A third app, of another team: nothing of theirs, by any call.
        app3.use {
            #expect(Self.dump().0 == errSecItemNotFound)
            #expect(
                copy(genp("hashiguchi", service: nil, [kSecAttrAccessGroup as String: Self.share])).0
                    == errSecItemNotFound)
            #expect(update(genp("hashiguchi"), [kSecValueData as String: Data("stolen".utf8)]) == errSecItemNotFound)
            #expect(delete(genp("hashiguchi")) == errSecItemNotFound)
            #expect(
                add([
                    kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "hashiguchi",
                    kSecAttrAccessGroup as String: Self.share
                ]) == errSecNoAccessForItem)
            #expect(add(genpItem("hashiguchi")) == errSecSuccess, "its own group is separate: no collision")
        }
        app1.use {
            #expect(secret(genp("hashiguchi", service: nil, [kSecAttrAccessGroup as String: Self.share])) == "pass11")
        }
    }

    @Test func simulatorIdentity_usesGroupTestAndAllSimulatorAppsShareIt() throws {
        let kc = try SecTestKeychain(caller: .simulator)
        let otherSimulatorApp = kc.app(.simulator)
        kc.run {
            #expect(add(genpItem("hashiguchi", data: "pass")) == errSecSuccess)
            #expect(attributes(genp("hashiguchi"))?["agrp"] as? String == "test")
            // Seed 003 §補足: setting an access group on the simulator fails with −25243.
            #expect(add(genpItem("x", [kSecAttrAccessGroup as String: "GFDZH8PXXX.share"])) == errSecNoAccessForItem)
        }
        otherSimulatorApp.use {
            #expect(secret(genp("hashiguchi")) == "pass")
        }
    }
}

@Suite("errSecMissingEntitlement")
struct MissingEntitlementTests {
    @Test func callerWithoutIdentity_everyCall_returnsMissingEntitlement() throws {
        let kc = try SecTestKeychain(caller: nil)
        kc.run {
            #expect(add(genpItem("a")) == errSecMissingEntitlement)
            #expect(copy(genp("a")).0 == errSecMissingEntitlement)
            #expect(update(genp("a"), [kSecAttrLabel as String: "x"]) == errSecMissingEntitlement)
            #expect(delete(genp("a")) == errSecMissingEntitlement)
            #expect(kc.config.lastError?.status == .missingEntitlement)
        }
    }
}

/// Access groups compare bytes, always (issue 13 §4): an app with a crafted identity — the
/// victim's group in capitals, or in another Unicode normalization — or with the persistent
/// reference of an item (class and UUID, readable in the file) reaches nothing outside its
/// own groups.
@Suite("Access groups: byte-exact on every path")
struct ByteExactAccessGroupTests {
    static let victim = CallerIdentity(applicationIdentifier: "com.victim.bank")
    static let shouting = CallerIdentity(applicationIdentifier: "COM.VICTIM.BANK")
    static let nfc = "caf\u{E9}.shared"
    static let nfd = "cafe\u{301}.shared"

    @Test func caseInsensitiveCopyMatching_findsNothingOfAGroupThatDiffersOnlyInCase() throws {
        let kc = try SecTestKeychain(caller: Self.victim)
        kc.run { #expect(add(genpItem("alice", service: "bank", data: "victim secret")) == errSecSuccess) }
        kc.app(Self.shouting).use {
            #expect(add(genpItem("mallory", service: "bank", data: "own")) == errSecSuccess)
            let folded: Dict = [
                kSecMatchCaseInsensitive as String: true, kSecAttrAccessGroup as String: "COM.VICTIM.BANK"
            ]
            #expect(
                copy(genp("ALICE", service: "BANK", folded.merging([kSecReturnData as String: true]) { $1 })).0
                    == errSecItemNotFound)
            #expect(persistentRef(genp("ALICE", service: nil, folded)) == nil)
            #expect(
                copy(genp("ALICE", service: nil, [kSecMatchCaseInsensitive as String: true])).0 == errSecItemNotFound)
            // Case folding still matches its own items' attributes.
            #expect(secret(genp("MALLORY", service: "BANK", folded)) == "own")
        }
        kc.run { #expect(secret(genp("alice")) == "victim secret") }
    }

    @Test func caseInsensitiveCopyMatching_comparesAnExplicitAccessGroupByteForByte() throws {
        let kc = try SecTestKeychain(
            caller: CallerIdentity(applicationIdentifier: "app", keychainAccessGroups: ["team.shared", "TEAM.SHARED"]))
        kc.run {
            #expect(add(genpItem("a", data: "lower", [kSecAttrAccessGroup as String: "team.shared"])) == errSecSuccess)
            #expect(add(genpItem("a", data: "upper", [kSecAttrAccessGroup as String: "TEAM.SHARED"])) == errSecSuccess)
            let query = genp(
                "A", service: nil,
                [kSecMatchCaseInsensitive as String: true, kSecAttrAccessGroup as String: "TEAM.SHARED"])
            #expect(count(query) == 1)
            #expect(secret(query) == "upper")
        }
    }

    @Test func nfcAndNFDSpellingsOfAGroup_areTwoGroups() throws {
        let kc = try SecTestKeychain(
            caller: CallerIdentity(applicationIdentifier: "app.nfd", keychainAccessGroups: [Self.nfd]))
        var ref: Data?
        kc.run {
            #expect(add(genpItem("alice", service: "bank", data: "nfd secret")) == errSecSuccess)
            ref = persistentRef(genp("alice"))
        }
        let theirs = try #require(ref)
        kc.app(CallerIdentity(applicationIdentifier: "app.nfc", keychainAccessGroups: [Self.nfc])).use {
            #expect(count(genp(nil, service: "bank")) == 0)
            #expect(
                copy(
                    genp(
                        nil, service: nil, [kSecAttrAccessGroup as String: Self.nfc, kSecAttrService as String: "bank"])
                ).0 == errSecItemNotFound)
            #expect(
                copy([kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: theirs]).0
                    == errSecItemNotFound)
            #expect(
                update(genp(nil, service: "bank"), [kSecValueData as String: Data("stolen".utf8)]) == errSecItemNotFound
            )
            #expect(
                update(
                    [kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: theirs],
                    [kSecValueData as String: Data("stolen".utf8)]) == errSecItemNotFound)
            #expect(delete(genp(nil, service: "bank")) == errSecItemNotFound)
            #expect(
                delete([kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: theirs])
                    == errSecItemNotFound)
            #expect(add(genpItem("x", [kSecAttrAccessGroup as String: Self.nfd])) == errSecNoAccessForItem)
            #expect(add(genpItem("mine")) == errSecSuccess)
            #expect(update(genp("mine"), [kSecAttrAccessGroup as String: Self.nfd]) == errSecNoAccessForItem)
        }
        kc.run {
            #expect(secret(genp("alice")) == "nfd secret")
            #expect(count(genp()) == 1)
        }
    }

    @Test func persistentReference_toAnItemWithoutGroup_orOfAnotherGroup_findsNothing() throws {
        let kc = try SecTestKeychain(caller: Self.victim)
        // A library caller without identity adds one item without agrp, and one whose group is
        // the victim's as data.
        let library = try Keychain.open(
            path: kc.keychainPath, devicePath: kc.devicePath, unlockingWith: Array(testPasscode.utf8))
        let orphan = try library.add(
            .genericPassword, attributes: ["acct": .string("orphan")], data: Array("no group".utf8))
        let dataGroup = try library.add(
            .genericPassword, attributes: ["acct": .string("data"), "agrp": .data(Array("com.victim.bank".utf8))],
            data: Array("data group".utf8))
        var ref: Data?
        kc.run {
            #expect(add(genpItem("alice", data: "victim secret")) == errSecSuccess)
            ref = persistentRef(genp("alice"))
        }
        let refs = [Data(orphan.persistentRef), Data(dataGroup.persistentRef), try #require(ref)]
        kc.app(Self.shouting).use {
            for r in refs {
                let byRef: Dict = [kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: r]
                #expect(copy(byRef.merging([kSecReturnData as String: true]) { $1 }).0 == errSecItemNotFound)
                #expect(update(byRef, [kSecValueData as String: Data("stolen".utf8)]) == errSecItemNotFound)
                #expect(delete(byRef) == errSecItemNotFound)
            }
        }
        kc.run {
            #expect(
                copy([kSecValuePersistentRef as String: refs[0]]).0 == errSecItemNotFound,
                "no identity reaches an item without a group")
            #expect(
                secret([kSecValuePersistentRef as String: refs[1]]) == "data group",
                "the group's bytes, as data: the same group")
            #expect(secret([kSecValuePersistentRef as String: refs[2]]) == "victim secret")
        }
        #expect(
            try library.find(Query(.genericPassword, persistentRef: orphan.persistentRef)).map(\.data) == [
                Array("no group".utf8)
            ])
    }

    @Test func identities_caseInsensitiveOrNFDGroups_doNotCrossGroups() throws {
        let kc = try SecTestKeychain(caller: Self.victim)
        func identity(_ cert: String, _ key: String) throws -> SecIdentity {
            let c = try #require(SecCertificateCreateWithData(nil, try fixtureCertificate(cert) as CFData))
            let k = try #require(SecKeyCreateWithData(try fixtureCertificate(key) as CFData, [:] as CFDictionary, nil))
            return try #require(SecIdentityCreate(nil, c, k))
        }
        let victims = try identity("ec-p256-cert.der", "ec-p256-key.der")
        let nfds = try identity("rsa2048-cert.der", "rsa2048-key.der")
        kc.run { #expect(add([kSecValueRef as String: victims]) == errSecSuccess) }
        kc.app(CallerIdentity(applicationIdentifier: "app.nfd", keychainAccessGroups: [Self.nfd])).use {
            #expect(add([kSecValueRef as String: nfds]) == errSecSuccess)
        }
        let idnt: Dict = [
            kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true,
            kSecMatchLimit as String: kSecMatchLimitAll
        ]
        kc.app(Self.shouting).use {
            let folded = idnt.merging([
                kSecMatchCaseInsensitive as String: true, kSecAttrAccessGroup as String: "COM.VICTIM.BANK"
            ]) { $1 }
            #expect(copy(folded).0 == errSecItemNotFound)
            #expect(
                copy([
                    kSecClass as String: kSecClassCertificate, kSecMatchCaseInsensitive as String: true,
                    kSecAttrAccessGroup as String: "COM.VICTIM.BANK"
                ]).0 == errSecItemNotFound)
        }
        kc.app(CallerIdentity(applicationIdentifier: "app.nfc", keychainAccessGroups: [Self.nfc])).use {
            #expect(copy(idnt).0 == errSecItemNotFound)
            #expect(delete([kSecClass as String: kSecClassIdentity]) == errSecItemNotFound)
        }
        kc.run { #expect(copy(idnt).1 as? [SecIdentity] == [victims]) }
        kc.app(CallerIdentity(applicationIdentifier: "app.nfd", keychainAccessGroups: [Self.nfd])).use {
            #expect(copy(idnt).1 as? [SecIdentity] == [nfds])
        }
    }
}

/// `com.apple.security.application-groups`: iOS appends the app groups to the caller's access
/// groups after keychain-access-groups and the application-identifier (reference §6.1, row 4),
/// so an item in `group.example.shared` is added, read, changed and deleted by every app of the
/// group (issue 18 §1, item 2). The callers come from Entitlements.plist files, as an app's do.
@Suite("Access groups: com.apple.security.application-groups")
struct ApplicationGroupTests {
    static let shared = "group.example.shared"

    /// A configuration whose caller is read from an Entitlements.plist (LATCHKEY_ENTITLEMENTS).
    static func app(_ kc: SecTestKeychain, _ name: String, _ entitlements: [String: Any]) throws
        -> LatchkeySecurityConfiguration
    {
        let path = kc.directory + "/\(name).entitlements"
        try PropertyListSerialization.data(fromPropertyList: entitlements, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: path))
        let config = LatchkeySecurityConfiguration(environment: [
            "LATCHKEY_KEYCHAIN": kc.keychainPath, "LATCHKEY_DEVICE": kc.devicePath,
            "LATCHKEY_ENTITLEMENTS": path, "LATCHKEY_PASSCODE": testPasscode
        ])
        config.explainsFirstFailure = false
        return config
    }

    @Test func entitlements_appendApplicationGroupsAfterTheAppID() throws {
        let kc = try SecTestKeychain()
        let a = try Self.app(
            kc, "a",
            [
                "application-identifier": "TEAM.com.example.a",
                "keychain-access-groups": ["TEAM.a.private"],
                "com.apple.security.application-groups": [Self.shared, "group.example.other"],
                "com.apple.security.app-sandbox": true
            ])
        #expect(a.caller?.accessGroups == ["TEAM.a.private", "TEAM.com.example.a", Self.shared, "group.example.other"])
        #expect(a.caller?.defaultAccessGroup == "TEAM.a.private", "an app group is never the default")
        let bad = try Self.app(
            kc, "bad", ["application-identifier": "TEAM.x", "com.apple.security.application-groups": Self.shared])
        #expect(bad.callerError?.status == .param, "application-groups must be an array of strings")
    }

    @Test func itemInAnAppGroup_isSharedByEveryAppOfTheGroup_andNoOther() throws {
        let kc = try SecTestKeychain()
        let a = try Self.app(
            kc, "a",
            [
                "application-identifier": "TEAM.com.example.a",
                "com.apple.security.application-groups": [Self.shared]
            ])
        let b = try Self.app(
            kc, "b",
            [
                "application-identifier": "TEAM.com.example.b",
                "keychain-access-groups": ["TEAM.b.private"],
                "com.apple.security.application-groups": [Self.shared]
            ])
        let outsider = try Self.app(kc, "c", ["application-identifier": "TEAM.com.example.c"])
        let group = [kSecAttrAccessGroup as String: Self.shared]
        a.use {
            #expect(add(genpItem("shared", data: "one", group)) == errSecSuccess)
            #expect(add(genpItem("own", data: "mine")) == errSecSuccess)
            #expect(attributes(genp("own"))?["agrp"] as? String == "TEAM.com.example.a")
        }
        b.use {
            #expect(secret(genp("shared")) == "one")
            #expect(secret(genp("shared", service: nil, group)) == "one")
            #expect(update(genp("shared"), [kSecValueData as String: Data("two".utf8)]) == errSecSuccess)
            #expect(count(genp("own")) == 0, "a's own group stays a's")
        }
        outsider.use {
            #expect(copy(genp("shared")).0 == errSecItemNotFound)
            #expect(add(genpItem("intruder", group)) == errSecNoAccessForItem)
            #expect(delete(genp("shared")) == errSecItemNotFound)
        }
        a.use { #expect(secret(genp("shared")) == "two") }
        b.use { #expect(delete(genp("shared", service: nil, group)) == errSecSuccess) }
        a.use { #expect(copy(genp("shared")).0 == errSecItemNotFound) }
    }
}
