import Foundation
import Testing
import Latchkey
import LatchkeySecurity

@Suite("LatchkeyKeychainAccess, the LUKeychainAccess-style API")
struct LatchkeyKeychainAccessTests {
    @Test func subscript_storesAndReadsStrings() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let access = LatchkeyKeychainAccess(service: "com.example.api", accessibility: .afterFirstUnlock)
            #expect(access["token"] == nil)
            #expect(access.lastStatus == errSecItemNotFound)
            access["token"] = "s3cret"
            #expect(access.lastStatus == errSecSuccess)
            #expect(access["token"] == "s3cret")
            #expect(access.string(forKey: "token") == "s3cret")
            access["token"] = "rotated"
            #expect(access.string(forKey: "token") == "rotated")
            access["token"] = nil
            #expect(access.string(forKey: "token") == nil)
        }
    }

    @Test func typedValues_roundTrip() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let access = LatchkeyKeychainAccess(service: "svc")
            access.set(true, forKey: "authorized")
            access.set(42, forKey: "count")
            access.set(Data([0, 1, 2]), forKey: "blob")
            #expect(access.bool(forKey: "authorized"))
            #expect(!access.bool(forKey: "missing"))
            #expect(access.integer(forKey: "count") == 42)
            #expect(access.data(forKey: "blob") == Data([0, 1, 2]))
            #expect(access[data: "blob"] == Data([0, 1, 2]))
            #expect(access.contains(key: "blob"))
            #expect(access.removeObject(forKey: "blob") == errSecSuccess)
            #expect(!access.contains(key: "blob"))
            #expect(access.removeObject(forKey: "blob") == errSecSuccess, "removing an absent key is fine")
        }
    }

    @Test func items_areGenericPasswordsOfTheServiceWithTheAccessibility() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            let access = LatchkeyKeychainAccess(service: "Twitter", accessibility: .afterFirstUnlock)
            access["user"] = "alice"
            let a = try #require(attributes(genp("user", service: "Twitter")))
            #expect(a["pdmn"] as? String == "ck")
            access.accessibility = .alwaysThisDeviceOnly
            access["user"] = "alice"
            #expect(attributes(genp("user", service: "Twitter"))?["pdmn"] as? String == "dku")
        }
    }

    @Test func services_separateTheSameKey() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let twitter = LatchkeyKeychainAccess(service: "Twitter")
            let facebook = LatchkeyKeychainAccess(service: "Facebook")
            twitter["authorized"] = "1"
            facebook["authorized"] = "0"
            #expect(twitter.bool(forKey: "authorized"))
            #expect(!facebook.bool(forKey: "authorized"))
            facebook.service = "Twitter"
            #expect(facebook.bool(forKey: "authorized"))
            #expect(twitter.removeAll() == errSecSuccess)
            #expect(twitter["authorized"] == nil)
        }
    }

    @Test func accessGroup_sharesWithAnotherApp() throws {
        let share = "GFDZH8PXXX.share"
        let kc = try SecTestKeychain(
            caller: CallerIdentity(
                applicationIdentifier: "GFDZH8PXXX.app1", keychainAccessGroups: ["GFDZH8PXXX.app1", share]))
        kc.run {
            let access = LatchkeyKeychainAccess(service: "accounts", accessGroup: share)
            access["google"] = "token"
            #expect(access.lastStatus == errSecSuccess)
        }
        kc.app(CallerIdentity(applicationIdentifier: "GFDZH8PXXX.app2", keychainAccessGroups: [share])).use {
            #expect(LatchkeyKeychainAccess(service: "accounts")["google"] == "token")
        }
        kc.app(CallerIdentity(applicationIdentifier: "OTHER.app3")).use {
            let access = LatchkeyKeychainAccess(service: "accounts", accessGroup: share)
            #expect(access["google"] == nil)
            access["google"] = "mine"
            #expect(access.lastStatus == errSecNoAccessForItem)
        }
    }
}
