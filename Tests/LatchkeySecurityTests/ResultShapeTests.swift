import Foundation
import Testing
import Latchkey
import LatchkeySecurity

// kSecMatchLimit (reference §5.3) and the result shapes of reference §5.4.

@Suite("§5.3 kSecMatchLimit")
struct MatchLimitTests {
    /// Three items of one service.
    static func three() throws -> SecTestKeychain {
        let kc = try SecTestKeychain()
        kc.run {
            for a in ["a", "b", "c"] { #expect(add(genpItem(a, service: "s", data: "pw-\(a)")) == errSecSuccess) }
        }
        return kc
    }

    @Test func copyMatching_withoutLimit_returnsOneObject() throws {
        let kc = try Self.three()
        kc.run {
            let (status, result) = copy(genp(service: "s", [kSecReturnData as String: true]))
            #expect(status == errSecSuccess)
            #expect(result is Data)
        }
    }

    @Test func copyMatching_withLimitOne_returnsOneObject() throws {
        let kc = try Self.three()
        kc.run {
            let (status, result) = copy(
                genp(service: "s", [kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitOne]))
            #expect(status == errSecSuccess)
            #expect(result is Data)
        }
    }

    @Test func copyMatching_withLimitAll_returnsArrayOfEveryMatch() throws {
        let kc = try Self.three()
        kc.run {
            let (status, result) = copy(
                genp(service: "s", [kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll]))
            #expect(status == errSecSuccess)
            let all = (result as? [Data])?.map { String(decoding: $0, as: UTF8.self) }.sorted()
            #expect(all == ["pw-a", "pw-b", "pw-c"])
        }
    }

    @Test func copyMatching_withLimitAll_returnsArrayEvenForOneMatch() throws {
        let kc = try Self.three()
        kc.run {
            let (status, result) = copy(
                genp("a", service: "s", [kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll]))
            #expect(status == errSecSuccess)
            #expect((result as? [Data])?.count == 1)
        }
    }

    @Test func copyMatching_withLimitNumber_returnsArrayOfAtMostN() throws {
        let kc = try Self.three()
        kc.run {
            let (status, result) = copy(
                genp(service: "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: 2]))
            #expect(status == errSecSuccess)
            #expect((result as? [[String: Any]])?.count == 2)
            let (_, big) = copy(
                genp(service: "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: Int64(10)]))
            #expect((big as? [Any])?.count == 3)
        }
    }

    @Test func copyMatching_withLimitNumberOne_returnsOneObject() throws {
        let kc = try Self.three()
        kc.run {
            let (status, result) = copy(
                genp(service: "s", [kSecReturnData as String: true, kSecMatchLimit as String: 1]))
            #expect(status == errSecSuccess)
            #expect(result is Data)
        }
    }

    @Test func copyMatching_withLimitZero_returnsItemNotFound() throws {
        let kc = try Self.three()
        kc.run {
            #expect(
                copy(genp(service: "s", [kSecReturnData as String: true, kSecMatchLimit as String: 0])).0
                    == errSecItemNotFound)
        }
    }

    @Test func copyMatching_withLimitMinusOne_returnsEveryMatch() throws {
        let kc = try Self.three()
        kc.run {
            let (_, result) = copy(genp(service: "s", [kSecReturnData as String: true, kSecMatchLimit as String: -1]))
            #expect((result as? [Data])?.count == 3)
        }
    }

    @Test func copyMatching_withUnknownLimit_returnsParam() throws {
        let kc = try Self.three()
        kc.run {
            #expect(copy(genp(service: "s", [kSecMatchLimit as String: "m_LimitSome"])).0 == errSecParam)
            #expect(copy(genp(service: "s", [kSecMatchLimit as String: true])).0 == errSecParam)
            #expect(copy(genp(service: "s", [kSecMatchLimit as String: Data()])).0 == errSecParam)
        }
    }
}

@Suite("§5.4 result shapes")
struct ResultShapeTests {
    static func one(data: String? = "pw") throws -> SecTestKeychain {
        let kc = try SecTestKeychain()
        kc.run {
            var item = genp("alice", service: "mail", [kSecAttrLabel as String: "Mail"])
            if let data { item[kSecValueData as String] = Data(data.utf8) }
            #expect(add(item) == errSecSuccess)
        }
        return kc
    }

    @Test func noReturnKey_givesNilResultAndSuccess() throws {
        let kc = try Self.one()
        kc.run {
            let (status, result) = copy(genp("alice"))
            #expect(status == errSecSuccess)
            #expect(result == nil)
            #expect(SecItemCopyMatching(genp("alice") as CFDictionary, nil) == errSecSuccess)
            #expect(copy(genp("bob")).0 == errSecItemNotFound)
        }
    }

    @Test func returnDataOnly_givesData() throws {
        let kc = try Self.one()
        kc.run {
            let (status, result) = copy(genp("alice", service: nil, [kSecReturnData as String: kCFBooleanTrue!]))
            #expect(status == errSecSuccess)
            #expect(result is NSData)
            #expect(result as? Data == Data("pw".utf8))
        }
    }

    @Test func returnDataOnly_forItemWithoutData_givesEmptyData() throws {
        let kc = try Self.one(data: nil)
        kc.run {
            let (status, result) = copy(genp("alice", service: nil, [kSecReturnData as String: true]))
            #expect(status == errSecSuccess)
            #expect(result as? Data == Data())
        }
    }

    @Test func returnAttributesOnly_givesDictionaryOfFourCharacterKeys() throws {
        let kc = try Self.one()
        try kc.run {
            let (status, result) = copy(genp("alice", service: nil, [kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let a = try #require(result as? [String: Any])
            #expect(a["acct"] as? String == "alice")
            #expect(a["svce"] as? String == "mail")
            #expect(a["labl"] as? String == "Mail")
            #expect(a["agrp"] as? String == appID)
            #expect(a["pdmn"] as? String == "ak")
            #expect((a["sync"] as? NSNumber)?.intValue == 0)
            #expect(a["cdat"] is Date)
            #expect(a["mdat"] is Date)
            #expect((a["accc"] as? SecAccessControl)?.protection == .whenUnlocked)
            #expect(a["v_Data"] == nil)
            #expect(a["UUID"] == nil)
            #expect(a["persistref"] == nil)
            #expect(a["class"] == nil, "the daemon adds no class key (reference §5.4)")
            #expect(a.keys.allSatisfy { $0.count == 4 })
        }
    }

    @Test func returnAttributes_reportsUniqueKeyDefaults() throws {
        // Seed 003's dump shows `svce = ""` for an item added without a service.
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(
                add([
                    kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "hashiguchi",
                    kSecValueData as String: Data("pass00".utf8)
                ]) == errSecSuccess)
            let a = try #require(attributes(genp("hashiguchi")))
            #expect(a["svce"] as? String == "")
        }
    }

    @Test func returnPersistentRefOnly_givesTwentyBytesOfClassAndUUID() throws {
        let kc = try Self.one()
        kc.run {
            let (status, result) = copy(genp("alice", service: nil, [kSecReturnPersistentRef as String: true]))
            #expect(status == errSecSuccess)
            let ref = result as? Data
            #expect(ref?.count == 20)
            #expect(ref?.prefix(4) == Data("genp".utf8))
        }
    }

    @Test func returnRefOnly_forPassword_givesNoObject() throws {
        let kc = try Self.one()
        kc.run {
            let (status, result) = copy(genp("alice", service: nil, [kSecReturnRef as String: true]))
            #expect(status == errSecSuccess)
            #expect(result == nil)
        }
    }

    @Test func returnDataAndAttributes_givesDictionaryWithValueData() throws {
        let kc = try Self.one()
        try kc.run {
            let (status, result) = copy(
                genp("alice", service: nil, [kSecReturnData as String: true, kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let a = try #require(result as? [String: Any])
            #expect(a["v_Data"] as? Data == Data("pw".utf8))
            #expect(a["acct"] as? String == "alice")
            #expect(a["v_PersistentRef"] == nil)
        }
    }

    @Test func returnAll_givesAttributesDataPersistentRefAndNoRefForPasswords() throws {
        let kc = try Self.one()
        try kc.run {
            let (status, result) = copy(
                genp(
                    "alice", service: nil,
                    [
                        kSecReturnData as String: true, kSecReturnAttributes as String: true,
                        kSecReturnPersistentRef as String: true, kSecReturnRef as String: true
                    ]))
            #expect(status == errSecSuccess)
            let a = try #require(result as? [String: Any])
            #expect(a["v_Data"] as? Data == Data("pw".utf8))
            #expect((a["v_PersistentRef"] as? Data)?.count == 20)
            #expect(a["v_Ref"] == nil)
            #expect(a["acct"] as? String == "alice")
        }
    }

    @Test func returnDataAndPersistentRef_withoutAttributes_givesOnlyTheValueKeys() throws {
        let kc = try Self.one()
        try kc.run {
            let (_, result) = copy(
                genp("alice", service: nil, [kSecReturnData as String: true, kSecReturnPersistentRef as String: true]))
            let a = try #require(result as? [String: Any])
            #expect(Set(a.keys) == ["v_Data", "v_PersistentRef"])
        }
    }

    @Test func combinedResult_forItemWithoutData_hasNoValueData() throws {
        let kc = try Self.one(data: nil)
        try kc.run {
            let (_, result) = copy(
                genp("alice", service: nil, [kSecReturnData as String: true, kSecReturnAttributes as String: true]))
            let a = try #require(result as? [String: Any])
            #expect(a["v_Data"] == nil)
            #expect(a["acct"] as? String == "alice")
        }
    }

    @Test func returnDataWithLimitAll_isAllowedAndGivesArrayOfDictionaries() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a", data: "1")) == errSecSuccess)
            #expect(add(genpItem("b", data: "2")) == errSecSuccess)
            let (status, result) = copy(
                genp(
                    nil, service: nil,
                    [
                        kSecReturnData as String: true, kSecReturnAttributes as String: true,
                        kSecMatchLimit as String: kSecMatchLimitAll
                    ]))
            #expect(status == errSecSuccess)
            let items = try #require(result as? [[String: Any]])
            #expect(Set(items.compactMap { $0["v_Data"] as? Data }) == [Data("1".utf8), Data("2".utf8)])
        }
    }

    @Test func add_returnsTheShapeAskedFor() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let (s1, data) = addReturning(genpItem("a", data: "pw", [kSecReturnData as String: true]))
            #expect(s1 == errSecSuccess)
            #expect(data as? Data == Data("pw".utf8))
            let (s2, ref) = addReturning(genpItem("b", [kSecReturnPersistentRef as String: true]))
            #expect(s2 == errSecSuccess)
            #expect((ref as? Data)?.count == 20)
            #expect(secret([kSecValuePersistentRef as String: ref as! Data]) == "secret")
            let (s3, none) = addReturning(genpItem("c"))
            #expect(s3 == errSecSuccess)
            #expect(none == nil)
            let (s4, both) = addReturning(
                genpItem("d", data: "pw", [kSecReturnData as String: true, kSecReturnAttributes as String: true]))
            #expect(s4 == errSecSuccess)
            let dict = both as? [String: Any]
            #expect(dict?["v_Data"] as? Data == Data("pw".utf8))
            #expect(dict?["acct"] as? String == "d")
        }
    }

    @Test func failedCall_leavesResultNil() throws {
        let kc = try Self.one()
        kc.run {
            var result: AnyObject? = NSString(string: "stale")
            let status = withUnsafeMutablePointer(to: &result) {
                SecItemCopyMatching(
                    genp("bob", service: nil, [kSecReturnData as String: true]) as CFDictionary,
                    UnsafeMutablePointer($0))
            }
            #expect(status == errSecItemNotFound)
            #expect(result == nil)
        }
    }
}

@Suite("kSecMatchCaseInsensitive")
struct CaseInsensitiveTests {
    @Test func copyMatching_caseInsensitive_matchesStringsIgnoringCase() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("Alice", service: "Mail")) == errSecSuccess)
            #expect(count(genp("alice", service: "MAIL")) == 0, "case-sensitive by default")
            #expect(count(genp("alice", service: "MAIL", [kSecMatchCaseInsensitive as String: true])) == 1)
            #expect(count(genp("alice", service: "MAIL", [kSecMatchCaseInsensitive as String: false])) == 0)
        }
    }

    @Test func caseInsensitive_foldsUnicodeCase() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("ÄRGER", service: "ΣΟΦΊΑ")) == errSecSuccess)
            #expect(count(genp("ärger", service: "σοφία", [kSecMatchCaseInsensitive as String: true])) == 1)
        }
    }

    @Test func caseInsensitive_comparesDataByteForByte() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add(
                    genp(
                        nil, service: nil,
                        [kSecAttrAccount as String: Data("Alice".utf8), kSecValueData as String: Data()]))
                    == errSecSuccess)
            #expect(
                count(
                    genp(
                        nil, service: nil,
                        [kSecAttrAccount as String: Data("alice".utf8), kSecMatchCaseInsensitive as String: true])) == 0
            )
            #expect(
                count(
                    genp(
                        nil, service: nil,
                        [kSecAttrAccount as String: Data("Alice".utf8), kSecMatchCaseInsensitive as String: true])) == 1
            )
        }
    }

    @Test func noUnicodeNormalization_NFCAndNFDDiffer() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
            #expect(add(genpItem(nfc)) == errSecSuccess)
            #expect(add(genpItem(nfd)) == errSecSuccess, "different bytes are a different key")
            #expect(count(genp(nfc)) == 1)
            #expect(count(genp(nfd, service: nil, [kSecMatchCaseInsensitive as String: true])) == 1)
        }
    }
}
