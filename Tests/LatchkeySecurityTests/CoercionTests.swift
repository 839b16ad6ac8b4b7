import Foundation
import Testing
import Latchkey
import LatchkeySecurity

// Value coercion (reference §1.2), unique keys and collisions (§2), dates (§5.12).

@Suite("§1.2 value coercion")
struct CoercionTests {
    @Test func accountAsDataAndAsString_areTheSameKey() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add(genp(nil, service: "s", [kSecAttrAccount as String: "abc", kSecValueData as String: Data()]))
                    == errSecSuccess)
            #expect(
                add(
                    genp(
                        nil, service: "s",
                        [kSecAttrAccount as String: Data("abc".utf8), kSecValueData as String: Data()]))
                    == errSecDuplicateItem)
            #expect(
                count(genp(nil, service: "s", [kSecAttrAccount as String: Data("abc".utf8)])) == 1,
                "data finds the string")
        }
    }

    @Test func valueDataGivenAsString_storesItsUTF8Bytes() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genp("a", service: nil, [kSecValueData as String: "pässword"])) == errSecSuccess)
            let (_, result) = copy(genp("a", service: nil, [kSecReturnData as String: true]))
            #expect(result as? Data == Data("pässword".utf8))
        }
    }

    @Test func blobAttribute_keepsTheTypeGiven() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genp("s", service: nil, [kSecAttrGeneric as String: "text"])) == errSecSuccess)
            #expect(add(genp("d", service: nil, [kSecAttrGeneric as String: Data([0xFF, 0x00])])) == errSecSuccess)
            let s = try #require(attributes(genp("s")))
            let d = try #require(attributes(genp("d")))
            #expect(s["gena"] is String)
            #expect(d["gena"] as? Data == Data([0xFF, 0x00]))
        }
    }

    @Test func numberAttribute_acceptsIntegersOfEveryWidthBooleansAndDecimalStrings() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let inet: Dict = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com"]
            #expect(
                add(inet.merging([kSecAttrAccount as String: "a", kSecAttrPort as String: Int32(443)]) { $1 })
                    == errSecSuccess)
            #expect(
                add(inet.merging([kSecAttrAccount as String: "b", kSecAttrPort as String: UInt16(8080)]) { $1 })
                    == errSecSuccess)
            #expect(
                add(inet.merging([kSecAttrAccount as String: "c", kSecAttrPort as String: "25"]) { $1 })
                    == errSecSuccess)
            #expect(
                add(
                    inet.merging([
                        kSecAttrAccount as String: "d", kSecAttrPort as String: NSNumber(value: Int64(993)),
                        kSecAttrIsInvisible as String: true
                    ]) { $1 }) == errSecSuccess)
            #expect(
                add(inet.merging([kSecAttrAccount as String: "e", kSecAttrPort as String: 22.0]) { $1 })
                    == errSecSuccess)
            #expect(count(inet.merging([kSecAttrPort as String: 443]) { $1 }) == 1)
            #expect(count(inet.merging([kSecAttrPort as String: Int64(8080)]) { $1 }) == 1)
            #expect(count(inet.merging([kSecAttrPort as String: 25]) { $1 }) == 1, "a decimal string is a number")
            #expect(
                count(inet.merging([kSecAttrIsInvisible as String: 1]) { $1 }) == 1, "booleans are stored as numbers")
            #expect(count(inet.merging([kSecAttrPort as String: "22"]) { $1 }) == 1)
            #expect(
                add(inet.merging([kSecAttrAccount as String: "f", kSecAttrPort as String: 2.5]) { $1 }) == errSecParam)
        }
    }

    @Test func protocolConstant_isKeptAsString() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            let item: Dict = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
                kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
                kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
                kSecAttrAccount as String: "a", kSecValueData as String: Data("pw".utf8)
            ]
            #expect(add(item) == errSecSuccess)
            let a = try #require(
                attributes([
                    kSecClass as String: kSecClassInternetPassword, kSecAttrProtocol as String: kSecAttrProtocolHTTPS
                ]))
            #expect(a["ptcl"] as? String == "htps")
            #expect(a["atyp"] as? String == "form")
            #expect((a["port"] as? NSNumber)?.intValue == 0, "unique-key default")
            #expect(
                count([kSecClass as String: kSecClassInternetPassword, kSecAttrProtocol as String: kSecAttrProtocolHTTP]
                ) == 0)
        }
    }

    @Test func dataAttribute_takesStringsAsUTF8() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(
                add([
                    kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: "label-bytes",
                    kSecValueData as String: Data(repeating: 7, count: 32)
                ]) == errSecSuccess)
            let a = try #require(
                attributes([
                    kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: Data("label-bytes".utf8)
                ]))
            #expect(a["klbl"] as? Data == Data("label-bytes".utf8))
        }
    }

    @Test func stringAttribute_decodesUTF8DataAndRefusesInvalidUTF8() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecAttrAccessGroup as String: Data(appID.utf8)])) == errSecSuccess)
            #expect(add(genpItem("b", [kSecAttrAccessGroup as String: Data([0xFF, 0xFE])])) == errSecParam)
            #expect(add(genpItem("c", [kSecAttrAccessGroup as String: 5])) == errSecParam)
        }
    }

    @Test func dateAttribute_takesDatesOnly() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let key: Dict = [
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: "t",
                kSecValueData as String: Data([1])
            ]
            #expect(add(key.merging([kSecAttrStartDate as String: "2020-01-01"]) { $1 }) == errSecParam)
            #expect(
                add(key.merging([kSecAttrStartDate as String: Date(timeIntervalSinceReferenceDate: 100)]) { $1 })
                    == errSecSuccess)
            #expect(
                count([
                    kSecClass as String: kSecClassKey,
                    kSecAttrStartDate as String: NSDate(timeIntervalSinceReferenceDate: 100)
                ]) == 1)
            #expect(add(genpItem("a", [kSecAttrCreationDate as String: 5])) == errSecParam)
        }
    }

    @Test func valuesNoAttributeTakes_returnParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecAttrLabel as String: ["x"]])) == errSecParam)
            #expect(add(genpItem("a", [kSecAttrLabel as String: ["k": "v"]])) == errSecParam)
            #expect(add(genpItem("a", [kSecAttrLabel as String: NSNull()])) == errSecParam)
            #expect(copy(genp(nil, service: nil, [kSecAttrLabel as String: [1]])).0 == errSecParam)
            #expect(count(genp()) == 0)
        }
    }

    @Test func accessible_takesOnlyTheAccessibilityCodes() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", [kSecAttrAccessible as String: "WhenUnlocked"])) == errSecParam)
            #expect(add(genpItem("a", [kSecAttrAccessible as String: "f"])) == errSecParam)
            #expect(add(genpItem("a", [kSecAttrAccessible as String: 6])) == errSecParam)
            #expect(
                add(genpItem("a", [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])) == errSecSuccess)
            #expect(attributes(genp("a"))?["pdmn"] as? String == "ck")
        }
    }

    @Test func nonStringKey_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let dict = NSMutableDictionary()
            dict[NSString(string: "class")] = kSecClassGenericPassword
            dict[NSNumber(value: 1)] = NSString(string: "x")
            #expect(SecItemAdd(dict, nil) == errSecParam)
        }
    }
}

@Suite("§2 unique keys and collisions")
struct UniqueKeyTests {
    @Test func add_sameKeyTwice_returnsDuplicateItem() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", service: "s", data: "1")) == errSecSuccess)
            #expect(add(genpItem("a", service: "s", data: "2")) == errSecDuplicateItem)
            #expect(secret(genp("a")) == "1")
        }
    }

    @Test func add_genericAndLabelAreNotPartOfTheKey() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add(genpItem("a", service: "s", [kSecAttrGeneric as String: "g1", kSecAttrLabel as String: "l1"]))
                    == errSecSuccess)
            #expect(
                add(genpItem("a", service: "s", [kSecAttrGeneric as String: "g2", kSecAttrLabel as String: "l2"]))
                    == errSecDuplicateItem)
            #expect(add(genpItem("a", service: "t")) == errSecSuccess, "another service is another key")
        }
    }

    @Test func add_noAccountAndEmptyAccount_areTheSameKey() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genp(nil, service: "s", [kSecValueData as String: Data()])) == errSecSuccess)
            #expect(add(genp("", service: "s", [kSecValueData as String: Data()])) == errSecDuplicateItem)
        }
    }

    @Test func update_thatWouldCollide_returnsDuplicateAndChangesNothing() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", service: "s", data: "A")) == errSecSuccess)
            #expect(add(genpItem("b", service: "s", data: "B")) == errSecSuccess)
            #expect(
                update(genp("b"), [kSecAttrAccount as String: "a", kSecValueData as String: Data("B2".utf8)])
                    == errSecDuplicateItem)
            #expect(secret(genp("a")) == "A")
            #expect(secret(genp("b")) == "B")
        }
    }

    @Test func update_ofSeveralItemsToOneKey_collidesAndChangesNothing() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", service: "s")) == errSecSuccess)
            #expect(add(genpItem("b", service: "s")) == errSecSuccess)
            #expect(update(genp(service: "s"), [kSecAttrAccount as String: "same"]) == errSecDuplicateItem)
            #expect(count(genp("same")) == 0)
            #expect(count(genp(service: "s")) == 2)
        }
    }
}

@Suite("§5.12 dates")
struct DateTests {
    @Test func add_replacesDatesGivenByTheCaller() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            let past = Date(timeIntervalSince1970: 0)
            let before = Date()
            #expect(
                add(genpItem("a", [kSecAttrCreationDate as String: past, kSecAttrModificationDate as String: past]))
                    == errSecSuccess)
            let a = try #require(attributes(genp("a")))
            let cdat = try #require(a["cdat"] as? Date)
            #expect(cdat >= before.addingTimeInterval(-1))
            #expect(a["mdat"] as? Date == cdat)
        }
    }

    @Test func update_movesModificationDateAndKeepsCreationDate() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let before = try #require(attributes(genp("a")))
            Thread.sleep(forTimeInterval: 0.01)
            #expect(
                update(
                    genp("a"),
                    [
                        kSecAttrLabel as String: "x", kSecAttrCreationDate as String: Date(timeIntervalSince1970: 0),
                        kSecAttrModificationDate as String: Date(timeIntervalSince1970: 0)
                    ]) == errSecSuccess)
            let after = try #require(attributes(genp("a")))
            #expect(after["cdat"] as? Date == before["cdat"] as? Date)
            #expect(try #require(after["mdat"] as? Date) > (try #require(before["mdat"] as? Date)))
        }
    }
}
