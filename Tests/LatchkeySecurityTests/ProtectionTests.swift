import Foundation
import Testing
import Latchkey
import LatchkeySecurity

// Protection classes and lock state (reference §3), access control with user presence.

/// A value the authentication handler can write from any thread.
final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    var get: T { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ v: T) { lock.lock(); value = v; lock.unlock() }
}

@Suite("§3 protection classes and lock state")
struct ProtectionClassTests {
    @Test func add_withoutAccessible_usesWhenUnlocked_certificatesAlways() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(attributes(genp("a"))?["pdmn"] as? String == "ak")
            let der = try fixtureCertificate()
            #expect(add([kSecClass as String: kSecClassCertificate, kSecValueData as String: der]) == errSecSuccess)
            #expect(attributes([kSecClass as String: kSecClassCertificate])?["pdmn"] as? String == "dk")
            #expect(
                add([
                    kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: "k",
                    kSecValueData as String: Data([1])
                ]) == errSecSuccess)
            #expect(attributes([kSecClass as String: kSecClassKey])?["pdmn"] as? String == "ak")
        }
    }

    @Test func everyAccessibleValue_isStoredAndFilterable() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let all: [CFString] = [
                kSecAttrAccessibleWhenUnlocked, kSecAttrAccessibleAfterFirstUnlock, kSecAttrAccessibleAlways,
                kSecAttrAccessibleWhenUnlockedThisDeviceOnly, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
                kSecAttrAccessibleAlwaysThisDeviceOnly, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
            ]
            for p in all {
                #expect(add(genpItem(p as String, [kSecAttrAccessible as String: p])) == errSecSuccess)
            }
            for p in all {
                #expect(count(genp(nil, service: nil, [kSecAttrAccessible as String: p])) == 1)
                #expect(attributes(genp(p as String))?["pdmn"] as? String == p as String)
            }
        }
    }

    @Test func add_whileLocked_failsForWhenUnlockedClassesOnly() throws {
        let kc = try SecTestKeychain(unlocked: false)
        kc.run {
            for p in [
                kSecAttrAccessibleWhenUnlocked, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
                kSecAttrAccessibleAfterFirstUnlock, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            ] {
                #expect(
                    add(genpItem(p as String, [kSecAttrAccessible as String: p])) == errSecInteractionNotAllowed, "\(p)"
                )
            }
            #expect(add(genpItem("dk", [kSecAttrAccessible as String: kSecAttrAccessibleAlways])) == errSecSuccess)
            #expect(
                add(genpItem("dku", [kSecAttrAccessible as String: kSecAttrAccessibleAlwaysThisDeviceOnly]))
                    == errSecSuccess)
            #expect(count(genp(nil, service: nil, [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])) == 2)
        }
    }

    @Test func copyMatching_whenACandidateIsLocked_failsTheWholeCall() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("locked")) == errSecSuccess)
            #expect(add(genpItem("open", [kSecAttrAccessible as String: kSecAttrAccessibleAlways])) == errSecSuccess)
            kc.config.lock()
            #expect(
                copy(
                    genp(
                        nil, service: nil,
                        [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true])
                ).0 == errSecInteractionNotAllowed)
            #expect(update(genp(service: "svc"), [kSecAttrLabel as String: "x"]) == errSecInteractionNotAllowed)
            #expect(delete(genp(service: "svc")) == errSecInteractionNotAllowed)
            #expect(kc.config.lastError?.status == .interactionNotAllowed)
            #expect(
                secret(genp(nil, service: nil, [kSecAttrAccessible as String: kSecAttrAccessibleAlways])) == "secret",
                "a filter on a usable class works")
        }
    }

    @Test func afterFirstUnlock_staysUsableAfterLock() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add(genpItem("ck", [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])) == errSecSuccess
            )
            #expect(add(genpItem("ak")) == errSecSuccess)
            kc.config.lock()
            #expect(
                secret(genp("ck", service: nil, [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]))
                    == "secret")
            #expect(
                copy(genp("ak", service: nil, [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked])).0
                    == errSecInteractionNotAllowed)
        }
    }

    @Test func lockedKeychain_unlockedFromSwift_becomesUsable() throws {
        let kc = try SecTestKeychain(unlocked: false)
        try kc.run {
            #expect(add(genpItem("a")) == errSecInteractionNotAllowed)
            try kc.config.unlock(passcode: Array(testPasscode.utf8))
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(throws: KeychainError.self) { try kc.config.unlock(passcode: Array("wrong".utf8)) }
        }
    }

    @Test func whenPasscodeSet_onKeychainWithoutPasscode_returnsNotAvailable() throws {
        let kc = try SecTestKeychain(passcode: nil)
        kc.run {
            #expect(
                add(genpItem("a", [kSecAttrAccessible as String: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly]))
                    == errSecNotAvailable)
            #expect(add(genpItem("b")) == errSecSuccess, "every other class works without a passcode")
            #expect(count(genp()) == 1)
        }
    }

    @Test func update_changingAccessible_reencryptsUnderTheNewClass() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a", data: "pw")) == errSecSuccess)
            #expect(update(genp("a"), [kSecAttrAccessible as String: kSecAttrAccessibleAlways]) == errSecSuccess)
            kc.config.lock()
            #expect(secret(genp("a")) == "pw", "readable while locked: now dk")
            #expect(attributes(genp("a"))?["pdmn"] as? String == "dk")
            #expect(
                update(genp("a"), [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked])
                    == errSecInteractionNotAllowed)
            #expect(update(genp("a"), [kSecAttrAccessible as String: "zz"]) == errSecParam)
        }
    }
}

@Suite("kSecAttrAccessControl and user presence")
struct AccessControlTests {
    static func userPresence(_ protection: CFString = kSecAttrAccessibleWhenUnlocked) -> SecAccessControl {
        var error: Unmanaged<CFError>?
        return SecAccessControlCreateWithFlags(kCFAllocatorDefault, protection, .userPresence, &error)!
    }

    @Test func createWithFlags_withBadProtection_returnsNilAndParamError() {
        var error: Unmanaged<CFError>?
        let ac = SecAccessControlCreateWithFlags(kCFAllocatorDefault, "sometimes" as CFString, .userPresence, &error)
        #expect(ac == nil)
        let e = error?.takeRetainedValue()
        #expect(e?.code == Int(errSecParam))
        #expect(e?.domain == NSOSStatusErrorDomain)
        #expect(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleAlways, [], nil)?.protection == .always)
    }

    @Test func accessControl_givesItsProtectionToTheItem() throws {
        let kc = try SecTestKeychain()
        kc.run {
            let ac = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleAfterFirstUnlock, [], nil)!
            #expect(add(genpItem("a", [kSecAttrAccessControl as String: ac])) == errSecSuccess)
            #expect(attributes(genp("a"))?["pdmn"] as? String == "ck")
            #expect(
                add(
                    genpItem(
                        "b",
                        [
                            kSecAttrAccessControl as String: ac,
                            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock
                        ])) == errSecSuccess)
        }
    }

    @Test func accessibleAndAccessControlThatDiffer_returnParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add(
                    genpItem(
                        "a",
                        [
                            kSecAttrAccessControl as String: Self.userPresence(kSecAttrAccessibleWhenUnlocked),
                            kSecAttrAccessible as String: kSecAttrAccessibleAlways
                        ])) == errSecParam)
            #expect(add(genpItem("a", [kSecAttrAccessControl as String: "userPresence"])) == errSecParam)
            #expect(count(genp()) == 0)
        }
    }

    @Test func userPresence_withSynchronizable_returnsParam() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add(
                    genpItem(
                        "a",
                        [kSecAttrAccessControl as String: Self.userPresence(), kSecAttrSynchronizable as String: true]))
                    == errSecParam)
        }
    }

    @Test func userPresence_onKeychainWithoutPasscode_returnsNotAvailable() throws {
        let kc = try SecTestKeychain(passcode: nil)
        kc.run {
            #expect(add(genpItem("a", [kSecAttrAccessControl as String: Self.userPresence()])) == errSecNotAvailable)
        }
    }

    @Test func userPresence_readAsksTheHandlerWithTheOperationPrompt() throws {
        let kc = try SecTestKeychain()
        let prompts = Box<[String?]>([])
        kc.config.authenticationHandler = { prompt in
            prompts.set(prompts.get + [prompt])
            return Array(testPasscode.utf8)
        }
        try kc.run {
            #expect(
                add(genpItem("a", data: "guarded", [kSecAttrAccessControl as String: Self.userPresence()]))
                    == errSecSuccess)
            #expect(prompts.get.isEmpty, "adding does not ask")
            let a = try #require(attributes(genp("a")))
            #expect(prompts.get.isEmpty, "attributes alone do not ask")
            #expect((a["accc"] as? SecAccessControl)?.requiresUserPresence == true)
            let (status, result) = copy(
                genp(
                    "a", service: nil,
                    [kSecReturnData as String: true, kSecUseOperationPrompt as String: "Unlock the token"]))
            #expect(status == errSecSuccess)
            #expect(result as? Data == Data("guarded".utf8))
            #expect(prompts.get == ["Unlock the token"])
        }
    }

    @Test func userPresence_defaultHandler_answersFromThePasscodeSource() throws {
        let kc = try SecTestKeychain()
        kc.run {
            #expect(
                add(genpItem("a", data: "guarded", [kSecAttrAccessControl as String: Self.userPresence()]))
                    == errSecSuccess)
            #expect(secret(genp("a")) == "guarded")
        }
    }

    @Test func userPresence_cancelled_returnsUserCanceled() throws {
        let kc = try SecTestKeychain()
        kc.config.authenticationHandler = { _ in nil }
        kc.run {
            #expect(add(genpItem("a", [kSecAttrAccessControl as String: Self.userPresence()])) == errSecSuccess)
            #expect(copy(genp("a", service: nil, [kSecReturnData as String: true])).0 == errSecUserCanceled)
        }
    }

    @Test func userPresence_wrongPasscode_returnsAuthFailed() throws {
        let kc = try SecTestKeychain()
        kc.config.authenticationHandler = { _ in Array("not it".utf8) }
        kc.run {
            #expect(add(genpItem("a", [kSecAttrAccessControl as String: Self.userPresence()])) == errSecSuccess)
            #expect(copy(genp("a", service: nil, [kSecReturnData as String: true])).0 == errSecAuthFailed)
        }
    }

    @Test func userPresence_withoutAnyHandler_returnsInteractionNotAllowed() throws {
        let kc = try SecTestKeychain(unlocked: false)
        try kc.run {
            try kc.config.unlock(passcode: Array(testPasscode.utf8))
            #expect(add(genpItem("a", [kSecAttrAccessControl as String: Self.userPresence()])) == errSecSuccess)
            #expect(copy(genp("a", service: nil, [kSecReturnData as String: true])).0 == errSecInteractionNotAllowed)
        }
    }

    @Test func authenticationUIFail_returnsInteractionNotAllowedWithoutAsking() throws {
        let kc = try SecTestKeychain()
        let asked = Box(false)
        kc.config.authenticationHandler = { _ in
            asked.set(true); return Array(testPasscode.utf8)
        }
        kc.run {
            #expect(add(genpItem("a", [kSecAttrAccessControl as String: Self.userPresence()])) == errSecSuccess)
            #expect(
                copy(
                    genp(
                        "a", service: nil,
                        [kSecReturnData as String: true, kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail]
                    )
                ).0 == errSecInteractionNotAllowed)
            #expect(
                copy(
                    genp("a", service: nil, [kSecReturnData as String: true, kSecUseNoAuthenticationUI as String: true])
                ).0 == errSecInteractionNotAllowed)
            #expect(!asked.get)
        }
    }

    @Test func authenticationUISkip_leavesOutItemsThatWouldAsk() throws {
        let kc = try SecTestKeychain()
        let asked = Box(false)
        kc.config.authenticationHandler = { _ in
            asked.set(true); return Array(testPasscode.utf8)
        }
        try kc.run {
            #expect(add(genpItem("guarded", [kSecAttrAccessControl as String: Self.userPresence()])) == errSecSuccess)
            #expect(add(genpItem("plain", data: "p")) == errSecSuccess)
            let (status, result) = copy(
                genp(
                    nil, service: nil,
                    [
                        kSecReturnData as String: true, kSecReturnAttributes as String: true,
                        kSecMatchLimit as String: kSecMatchLimitAll,
                        kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip
                    ]))
            #expect(status == errSecSuccess)
            let items = try #require(result as? [[String: Any]])
            #expect(items.map { $0["acct"] as? String } == ["plain"])
            #expect(
                copy(
                    genp(
                        "guarded", service: nil,
                        [
                            kSecReturnData as String: true,
                            kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip
                        ])
                ).0 == errSecItemNotFound)
            #expect(!asked.get)
        }
    }

    @Test func update_withAccessControlConstraints_returnsUnimplemented() throws {
        // Deviation: SecItemUpdate cannot add constraints to stored items yet.
        let kc = try SecTestKeychain()
        kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            #expect(update(genp("a"), [kSecAttrAccessControl as String: Self.userPresence()]) == errSecUnimplemented)
            let ck = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleAfterFirstUnlock, [], nil)!
            #expect(update(genp("a"), [kSecAttrAccessControl as String: ck]) == errSecSuccess)
            #expect(attributes(genp("a"))?["pdmn"] as? String == "ck")
        }
    }
}
