import Foundation
import Testing
import Latchkey
import LatchkeySecurity

// One test per cell of reference §5.2 ("Which keys each call accepts"), with the decisions of
// the deliberate differences the LatchkeySecurity documentation lists ("Porting code from iOS"). Each failing call is also checked to change nothing.

@Suite("§5.2 kSecClass")
struct ClassKeyTests {
    @Test func add_withoutClass_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add([kSecAttrAccount as String: "a", kSecValueData as String: Data("x".utf8)]) == errSecParam)
            #expect(kc.config.lastError?.status == .param)
            #expect(kc.config.lastError?.message.contains("kSecClass") == true)
            #expect(count(genp()) == 0)
        }
    }

    @Test func everyCall_withUnknownClass_returnsNoSuchClass() throws {
        let kc = try SecTestKeychain()
        kc.run {
            for cls in ["nope", "apls"] {
                let q: Dict = [kSecClass as String: cls, kSecAttrAccount as String: "a"]
                #expect(add(q) == errSecNoSuchClass)
                #expect(copy(q).0 == errSecNoSuchClass)
                #expect(update(q, [kSecAttrLabel as String: "l"]) == errSecNoSuchClass)
                #expect(delete(q) == errSecNoSuchClass)
            }
        }
    }

    @Test func add_withClassThatIsNotAString_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add([kSecClass as String: 42, kSecAttrAccount as String: "a"]) == errSecParam)
        }
    }

    @Test func copyMatching_withoutClass_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(copy([kSecAttrAccount as String: "a"]).0 == errSecParam)
        }
    }

    @Test func copyMatching_withPersistentRefAndNoClass_findsTheItem() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a", data: "pw-a")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            let (status, result) = copy([kSecValuePersistentRef as String: ref, kSecReturnData as String: true])
            #expect(status == errSecSuccess)
            #expect(result as? Data == Data("pw-a".utf8))
        }
    }

    @Test func update_withoutClassInQuery_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "old")) == errSecSuccess)
            #expect(
                update([kSecAttrAccount as String: "a"], [kSecValueData as String: Data("new".utf8)]) == errSecParam)
            #expect(secret(genp("a")) == "old")
        }
    }

    @Test func update_withPersistentRefAndNoClass_updatesTheItem() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a", data: "old")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(
                update([kSecValuePersistentRef as String: ref], [kSecValueData as String: Data("new".utf8)])
                    == errSecSuccess)
            #expect(secret(genp("a")) == "new")
        }
    }

    @Test func update_withClassInAttributes_returnsNoSuchAttr() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "old")) == errSecSuccess)
            let status = update(
                genp("a"), [kSecClass as String: kSecClassGenericPassword, kSecValueData as String: Data("new".utf8)])
            #expect(status == errSecNoSuchAttr)
            #expect(secret(genp("a")) == "old")
        }
    }

    @Test func delete_withoutClass_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(delete([kSecAttrAccount as String: "a"]) == errSecParam)
            #expect(count(genp()) == 1)
        }
    }

    @Test func delete_withPersistentRefAndNoClass_deletesTheItem() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(add(genpItem("b")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(delete([kSecValuePersistentRef as String: ref]) == errSecSuccess)
            #expect(count(genp()) == 1)
            #expect(count(genp("b")) == 1)
        }
    }
}

@Suite("§5.2 item attributes")
struct AttributeKeyTests {
    @Test func add_storesAttributes() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(
                add(
                    genpItem(
                        "alice", service: "mail",
                        [
                            kSecAttrLabel as String: "Mail", kSecAttrComment as String: "c",
                            kSecAttrGeneric as String: Data([1, 2]), kSecAttrType as String: 7
                        ])) == errSecSuccess)
            let a = try #require(attributes(genp("alice", service: "mail")))
            #expect(a["acct"] as? String == "alice")
            #expect(a["svce"] as? String == "mail")
            #expect(a["labl"] as? String == "Mail")
            #expect(a["icmt"] as? String == "c")
            #expect(a["gena"] as? Data == Data([1, 2]))
            #expect((a["type"] as? NSNumber)?.intValue == 7)
        }
    }

    @Test func copyMatching_filtersByExactAttributeValue() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", service: "s1", [kSecAttrLabel as String: "one"])) == errSecSuccess)
            #expect(add(genpItem("b", service: "s1", [kSecAttrLabel as String: "two"])) == errSecSuccess)
            #expect(add(genpItem("c", service: "s2", [kSecAttrLabel as String: "one"])) == errSecSuccess)
            #expect(count(genp(service: "s1")) == 2)
            #expect(count(genp(nil, service: "s1", [kSecAttrLabel as String: "one"])) == 1)
            #expect(count(genp(nil, service: nil, [kSecAttrLabel as String: "on"])) == 0, "no prefix matching")
            #expect(copy(genp("zzz")).0 == errSecItemNotFound)
        }
    }

    @Test func update_queryAttributesFilterTheItemsChanged() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", service: "s1", data: "1")) == errSecSuccess)
            #expect(add(genpItem("b", service: "s1", data: "2")) == errSecSuccess)
            #expect(add(genpItem("c", service: "s2", data: "3")) == errSecSuccess)
            #expect(update(genp(service: "s1"), [kSecAttrLabel as String: "changed"]) == errSecSuccess)
            #expect(count(genp(nil, service: nil, [kSecAttrLabel as String: "changed"])) == 2)
            #expect(attributes(genp("c"))?["labl"] == nil)
        }
    }

    @Test func update_newAttributeValuesAreStored() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", service: "s", data: "1")) == errSecSuccess)
            #expect(update(genp("a"), [kSecAttrService as String: "t", kSecAttrLabel as String: "L"]) == errSecSuccess)
            #expect(count(genp("a", service: "s")) == 0)
            #expect(attributes(genp("a", service: "t"))?["labl"] as? String == "L")
            #expect(secret(genp("a")) == "1", "data is kept when kSecValueData is not updated")
        }
    }

    @Test func update_whenNothingMatches_returnsItemNotFound() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(update(genp("ghost"), [kSecAttrLabel as String: "x"]) == errSecItemNotFound)
        }
    }

    @Test func delete_removesEveryMatchAndOnlyMatches() throws {
        let kc = try SecTestKeychain()
        kc.run {
            for a in ["a", "b", "c"] { #expect(add(genpItem(a, service: "s1")) == errSecSuccess) }
            #expect(add(genpItem("d", service: "s2")) == errSecSuccess)
            #expect(delete(genp(service: "s1")) == errSecSuccess)
            #expect(count(genp()) == 1)
            #expect(delete(genp(service: "s1")) == errSecItemNotFound)
        }
    }

    @Test func everyCall_withAttributeTheClassLacks_returnsNoSuchAttr() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let bad = genp("a", service: "svc", [kSecAttrApplicationTag as String: "tag"])
            #expect(add(genpItem("b", [kSecAttrApplicationTag as String: "tag"])) == errSecNoSuchAttr)
            #expect(copy(bad).0 == errSecNoSuchAttr)
            #expect(update(bad, [kSecAttrLabel as String: "x"]) == errSecNoSuchAttr)
            #expect(update(genp("a"), [kSecAttrApplicationTag as String: "tag"]) == errSecNoSuchAttr)
            #expect(delete(bad) == errSecNoSuchAttr)
            #expect(count(genp()) == 1)
            // A certificate has no application tag either (reference si-05-add case 7).
            #expect(
                add([
                    kSecClass as String: kSecClassCertificate, kSecAttrApplicationTag as String: "t",
                    kSecValueData as String: Data([0x30])
                ]) == errSecNoSuchAttr)
            // A 4-character key no class has.
            #expect(add(genpItem("c", ["zzzz": "x"])) == errSecNoSuchAttr)
        }
    }

    @Test func anyCall_withKeyOfNoKnownForm_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", ["accountName": "x"])) == errSecParam)
            #expect(copy(genp("a", service: nil, ["x_Whatever": true])).0 == errSecParam)
            #expect(copy(genp("a", service: nil, ["r_Everything": true])).0 == errSecParam)
            #expect(copy(genp("a", service: nil, ["u_Nope": true])).0 == errSecParam)
            #expect(copy(genp("a", service: nil, ["m_Nope": true])).0 == errSecParam)
            #expect(delete(genp("a", service: nil, ["v_Nope": true])) == errSecParam)
        }
    }

    @Test func dataProtectionKeychainKey_isAcceptedAndIgnored() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecUseDataProtectionKeychain as String: true])) == errSecSuccess)
            #expect(count(genp("a", service: nil, [kSecUseDataProtectionKeychain as String: true])) == 1)
            #expect(
                update(genp("a"), [kSecUseDataProtectionKeychain as String: true, kSecAttrLabel as String: "l"])
                    == errSecSuccess)
            #expect(delete(genp("a", service: nil, [kSecUseDataProtectionKeychain as String: true])) == errSecSuccess)
        }
    }
}

@Suite("§5.2 kSecValueData")
struct ValueDataKeyTests {
    @Test func add_storesTheData() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "my_password!!")) == errSecSuccess)
            #expect(secret(genp("a")) == "my_password!!")
        }
    }

    @Test func copyMatching_ignoresValueDataAsFilter() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "right")) == errSecSuccess)
            #expect(secret(genp("a", service: nil, [kSecValueData as String: Data("wrong".utf8)])) == "right")
        }
    }

    @Test func update_ignoresValueDataInQuery() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "right")) == errSecSuccess)
            let q = genp("a", service: nil, [kSecValueData as String: Data("wrong".utf8)])
            #expect(update(q, [kSecAttrLabel as String: "found"]) == errSecSuccess)
            #expect(attributes(genp("a"))?["labl"] as? String == "found")
        }
    }

    @Test func update_valueDataInAttributesReplacesTheData() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "old")) == errSecSuccess)
            #expect(update(genp("a"), [kSecValueData as String: Data("new".utf8)]) == errSecSuccess)
            #expect(secret(genp("a")) == "new")
        }
    }

    @Test func delete_ignoresValueData() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "right")) == errSecSuccess)
            #expect(delete(genp("a", service: nil, [kSecValueData as String: Data("wrong".utf8)])) == errSecSuccess)
            #expect(count(genp()) == 0)
        }
    }

    @Test func add_withValueDataOfWrongType_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genp("a", service: nil, [kSecValueData as String: Date()])) == errSecParam)
            #expect(add(genp("a", service: nil, [kSecValueData as String: [1, 2]])) == errSecParam)
            #expect(update(genp("a"), [kSecValueData as String: Date()]) == errSecParam)
        }
    }
}

@Suite("§5.2 kSecValuePersistentRef")
struct PersistentRefKeyTests {
    @Test func add_withPersistentRef_returnsParam() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(add(genpItem("b", [kSecValuePersistentRef as String: ref])) == errSecParam)
            #expect(count(genp()) == 1)
        }
    }

    @Test func copyMatching_withPersistentRefAlone_findsExactlyThatItem() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a", data: "A")) == errSecSuccess)
            #expect(add(genpItem("b", data: "B")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("b")))
            #expect(ref.count == 20)
            #expect(
                secret([kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: ref]) == "B")
        }
    }

    @Test func copyMatching_withPersistentRef_findsSynchronizableItemsToo() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a", data: "A", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a", service: nil, [kSecAttrSynchronizable as String: true])))
            #expect(
                secret([kSecValuePersistentRef as String: ref]) == "A",
                "a persistent ref disables the implicit sync = 0 (§5.8)")
        }
    }

    @Test func copyMatching_withPersistentRefAndAttributeFilter_returnsParam() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(copy(genp("a", service: nil, [kSecValuePersistentRef as String: ref])).0 == errSecParam)
        }
    }

    @Test func copyMatching_withMalformedPersistentRef_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                copy([
                    kSecClass as String: kSecClassGenericPassword,
                    kSecValuePersistentRef as String: Data("genp1234".utf8)
                ]).0 == errSecParam)
            #expect(
                copy([
                    kSecClass as String: kSecClassGenericPassword,
                    kSecValuePersistentRef as String: "genp0123456789abcdef"
                ]).0 == errSecParam)
            #expect(copy([kSecValuePersistentRef as String: Data(repeating: 0x41, count: 20)]).0 == errSecParam)
        }
    }

    @Test func copyMatching_withPersistentRefOfDeletedItem_returnsItemNotFound() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(delete(genp("a")) == errSecSuccess)
            #expect(copy([kSecValuePersistentRef as String: ref]).0 == errSecItemNotFound)
        }
    }

    @Test func update_withPersistentRefAlone_changesOnlyThatItem() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a", service: "s", data: "A")) == errSecSuccess)
            #expect(add(genpItem("b", service: "s", data: "B")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(
                update(
                    [kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: ref],
                    [kSecValueData as String: Data("A2".utf8)]) == errSecSuccess)
            #expect(secret(genp("a")) == "A2")
            #expect(secret(genp("b")) == "B")
        }
    }

    @Test func update_withPersistentRefInAttributes_returnsNoSuchAttr() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(update(genp("a"), [kSecValuePersistentRef as String: ref]) == errSecNoSuchAttr)
        }
    }

    @Test func delete_withPersistentRefAlone_deletesOnlyThatItem() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(add(genpItem("b")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("b")))
            #expect(
                delete([kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: ref])
                    == errSecSuccess)
            #expect(count(genp("a")) == 1)
            #expect(count(genp("b")) == 0)
        }
    }

    @Test func delete_withPersistentRefAndAttributeFilter_returnsParam() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let ref = try #require(persistentRef(genp("a")))
            #expect(delete(genp("a", service: nil, [kSecValuePersistentRef as String: ref])) == errSecParam)
            #expect(count(genp()) == 1)
        }
    }
}

@Suite("§5.2 kSecMatch…")
struct MatchKeyTests {
    @Test func add_withMatchLimit_returnsParamAndAddsNothing() throws {
        // Deliberate fix: iOS returns success without adding anything (reference §5.2 ‡).
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecMatchLimit as String: kSecMatchLimitOne])) == errSecParam)
            #expect(add(genpItem("a", [kSecMatchCaseInsensitive as String: true])) == errSecParam)
            #expect(count(genp()) == 0)
        }
    }

    @Test func copyMatching_acceptsMatchKeys() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(
                copy(
                    genp(
                        "a", service: nil,
                        [
                            kSecMatchLimit as String: kSecMatchLimitAll,
                            kSecMatchCaseInsensitive as String: false,
                            kSecMatchItemList as String: NSArray()
                        ])
                ).0 == errSecSuccess)
        }
    }

    /// macOS accepts kSecMatchLimitAll in SecItemUpdate's query (iOS: errSecParam); it asks for
    /// what the call does anyway. A finite limit stays errSecParam: macOS would update every
    /// match, more than asked (issue 18 §1, item 5).
    @Test func update_withMatchLimitAllInQuery_updatesEveryMatch_aFiniteLimitIsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "old")) == errSecSuccess)
            #expect(add(genpItem("b", data: "old")) == errSecSuccess)
            let new = [kSecValueData as String: Data("new".utf8)]
            #expect(
                update(genp(nil, service: "svc", [kSecMatchLimit as String: kSecMatchLimitOne]), new) == errSecParam)
            #expect(update(genp(nil, service: "svc", [kSecMatchLimit as String: 1]), new) == errSecParam)
            #expect(update(genp(nil, service: "svc", [kSecMatchCaseInsensitive as String: true]), new) == errSecParam)
            #expect(secret(genp("a")) == "old" && secret(genp("b")) == "old", "a refused update changes nothing")
            #expect(
                update(genp(nil, service: "svc", [kSecMatchLimit as String: kSecMatchLimitAll]), new) == errSecSuccess)
            #expect(secret(genp("a")) == "new")
            #expect(secret(genp("b")) == "new")
            #expect(
                update(genp("zz", service: nil, [kSecMatchLimit as String: kSecMatchLimitAll]), new)
                    == errSecItemNotFound)
        }
    }

    @Test func update_withMatchLimitInAttributes_returnsNoSuchAttr() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(update(genp("a"), [kSecMatchLimit as String: kSecMatchLimitAll]) == errSecNoSuchAttr)
        }
    }

    /// "Delete every match" written for macOS: kSecMatchLimitAll is accepted (iOS:
    /// errSecParam); a finite limit is errSecParam, since macOS would delete every match
    /// (issue 18 §1, item 5).
    @Test func delete_withMatchLimitAll_deletesEveryMatch_aFiniteLimitIsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(add(genpItem("b")) == errSecSuccess)
            #expect(delete(genp(nil, service: "svc", [kSecMatchLimit as String: kSecMatchLimitOne])) == errSecParam)
            #expect(delete(genp(nil, service: "svc", [kSecMatchLimit as String: 5])) == errSecParam)
            #expect(delete(genp(nil, service: "svc", [kSecMatchLimit as String: "m_LimitSome"])) == errSecParam)
            #expect(delete(genp(nil, service: "svc", [kSecMatchCaseInsensitive as String: true])) == errSecParam)
            #expect(count(genp()) == 2, "a refused delete deletes nothing")
            #expect(delete(genp(nil, service: "svc", [kSecMatchLimit as String: kSecMatchLimitAll])) == errSecSuccess)
            #expect(count(genp()) == 0)
            #expect(
                delete(genp(nil, service: "svc", [kSecMatchLimit as String: kSecMatchLimitAll])) == errSecItemNotFound)
        }
    }

    @Test func copyMatching_withPolicyOrIssuers_returnsUnimplemented() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(copy(genp(nil, service: nil, [kSecMatchPolicy as String: "policy"])).0 == errSecUnimplemented)
            #expect(copy(genp(nil, service: nil, [kSecMatchIssuers as String: NSArray()])).0 == errSecUnimplemented)
        }
    }
}

@Suite("§5.2 kSecReturn…")
struct ReturnKeyTests {
    @Test func add_withReturnAttributes_returnsTheNewItem() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            let (status, result) = addReturning(genpItem("a", [kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let a = try #require(result as? [String: Any])
            #expect(a["acct"] as? String == "a")
            #expect(a["agrp"] as? String == appID)
            #expect(a["v_Data"] == nil)
        }
    }

    /// macOS ignores kSecReturn… keys in SecItemUpdate's query (iOS: errSecParam), so a
    /// CopyMatching query can be passed on as it is (issue 18 §1, item 5).
    @Test func update_ignoresReturnKeysInQuery_asMacOSDoes() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "old")) == errSecSuccess)
            #expect(
                update(
                    genp("a", service: nil, [kSecReturnData as String: true]),
                    [kSecValueData as String: Data("one".utf8)]) == errSecSuccess)
            #expect(secret(genp("a")) == "one")
            #expect(
                update(
                    genp(
                        "a", service: nil,
                        [kSecReturnAttributes as String: false, kSecReturnPersistentRef as String: "yes"]),
                    [kSecValueData as String: Data("two".utf8)]) == errSecSuccess)
            #expect(secret(genp("a")) == "two")
        }
    }

    @Test func update_withReturnKeyInAttributes_returnsNoSuchAttr() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(update(genp("a"), [kSecReturnData as String: true]) == errSecNoSuchAttr)
            #expect(update(genp("a"), [kSecUseOperationPrompt as String: "why"]) == errSecNoSuchAttr)
            #expect(update(genp("a"), ["bogus-key": 1]) == errSecNoSuchAttr)
        }
    }

    @Test func delete_ignoresReturnKeys() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(
                delete(genp("a", service: nil, [kSecReturnData as String: true, kSecReturnAttributes as String: "yes"]))
                    == errSecSuccess)
            #expect(count(genp()) == 0)
        }
    }

    @Test func returnKey_givenAsOptionalBooleanConstant_isUnderstood() throws {
        // `kSecReturnData as String: kCFBooleanTrue` in a `[String: Any]` literal stores the
        // implicitly unwrapped optional itself; Apple's bridging unwraps it, and so does Latchkey.
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "pw")) == errSecSuccess)
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a",
                kSecReturnData as String: kCFBooleanTrue as Any
            ]
            let (status, result) = copy(query)
            #expect(status == errSecSuccess)
            #expect(result as? Data == Data("pw".utf8))
        }
    }

    @Test func returnKey_withNonBooleanValue_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecReturnData as String: "yes"])) == errSecParam)
            #expect(count(genp()) == 0)
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(copy(genp("a", service: nil, [kSecReturnData as String: 1])).0 == errSecParam)
            #expect(copy(genp("a", service: nil, [kSecReturnAttributes as String: "true"])).0 == errSecParam)
            #expect(copy(genp("a", service: nil, [kSecMatchCaseInsensitive as String: "no"])).0 == errSecParam)
        }
    }
}

@Suite("§5.2 kSecUseItemList and kSecUse…")
struct UseKeyTests {
    @Test func useItemList_isRefusedByEveryCall() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let list: Dict = [kSecUseItemList as String: NSArray()]
            #expect(add(genpItem("a", list)) == errSecParam)
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(copy(genp("a", service: nil, list)).0 == errSecParam)
            #expect(update(genp("a", service: nil, list), [kSecAttrLabel as String: "x"]) == errSecParam)
            #expect(update(genp("a"), list) == errSecNoSuchAttr)
            #expect(delete(genp("a", service: nil, list)) == errSecParam)
            #expect(count(genp()) == 1)
        }
    }

    @Test func authenticationUISkip_outsideCopyMatching_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip])) == errSecParam)
            #expect(add(genpItem("a", [kSecUseAuthenticationUI as String: "sometimes"])) == errSecParam)
            #expect(add(genpItem("a", [kSecUseOperationPrompt as String: 3])) == errSecParam)
        }
    }
}

@Suite("§5.2 kSecAttrSynchronizable")
struct SynchronizableTests {
    @Test func add_withSynchronizableAny_storesANotSynchronizableItem() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])) == errSecSuccess)
            #expect(count(genp("a")) == 1, "found by the default sync = 0 filter")
            #expect((attributes(genp("a"))?["sync"] as? NSNumber)?.intValue == 0)
        }
    }

    @Test func copyMatching_filtersSynchronizableAsIOS() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("local")) == errSecSuccess)
            #expect(add(genpItem("synced", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            #expect(count(genp()) == 1, "default: sync = 0 only")
            #expect(count(genp(nil, service: nil, [kSecAttrSynchronizable as String: false])) == 1)
            #expect(count(genp(nil, service: nil, [kSecAttrSynchronizable as String: kCFBooleanTrue!])) == 1)
            #expect(count(genp(nil, service: nil, [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])) == 2)
        }
    }

    @Test func add_synchronizableAndNot_areDifferentKeys() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: true])) == errSecDuplicateItem)
        }
    }

    @Test func update_queryWithSynchronizableAny_updatesBoth() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            #expect(
                update(
                    genp("a", service: nil, [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]),
                    [kSecAttrLabel as String: "both"]) == errSecSuccess)
            #expect(
                count(
                    genp(
                        nil, service: nil,
                        [kSecAttrLabel as String: "both", kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]))
                    == 2)
        }
    }

    @Test func update_attributesWithSynchronizableAny_isIgnored() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(
                update(
                    genp("a"),
                    [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny, kSecAttrLabel as String: "l"])
                    == errSecSuccess)
            #expect((attributes(genp("a"))?["sync"] as? NSNumber)?.intValue == 0)
        }
    }

    @Test func delete_withSynchronizableAny_deletesBoth() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            #expect(
                delete(genp("a", service: nil, [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]))
                    == errSecSuccess)
            #expect(count(genp(nil, service: nil, [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])) == 0)
        }
    }

    @Test func delete_withoutSynchronizable_leavesSynchronizableItems() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            #expect(delete(genp("a")) == errSecItemNotFound)
        }
    }

    @Test func synchronizable_withOtherValue_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: "sometimes"])) == errSecParam)
            #expect(add(genpItem("a", [kSecAttrSynchronizable as String: 2])) == errSecParam)
        }
    }
}
