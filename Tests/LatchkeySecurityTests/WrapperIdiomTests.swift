import Foundation
import Testing
import Latchkey
import LatchkeySecurity

/// What popular keychain wrappers (KeychainAccess, SimpleKeychain, keychain-swift,
/// SwiftKeychainWrapper) do with the Security API that Apple platforms allow and Latchkey did
/// not (issue 18 §1, items 3, 4 and 6).
@Suite("Idioms of code written for Apple platforms")
struct WrapperIdiomTests {
    // MARK: 3. SecAccessControl is Equatable and Hashable, as every CF type

    @Test func accessControl_isEqualByProtectionAndConstraints_andHashable() throws {
        func make(_ protection: CFString, _ flags: SecAccessControlCreateFlags) throws -> SecAccessControl {
            try #require(SecAccessControlCreateWithFlags(kCFAllocatorDefault, protection, flags, nil))
        }
        let a = try make(kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .userPresence)
        let same = try make(kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .userPresence)
        #expect(a == same)
        #expect(a.hashValue == same.hashValue)
        #expect(a != (try make(kSecAttrAccessibleWhenUnlocked, .userPresence)), "another protection")
        #expect(a != (try make(kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .biometryAny)), "other constraints")
        #expect(a != (try make(kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, [])))
        #expect(Set([a, same]).count == 1)
        // Kept in a `[String: AnyHashable]` query, as SimpleKeychain keeps it, and compared there.
        let query: [String: AnyHashable] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccessControl as String: a
        ]
        #expect(query[kSecAttrAccessControl as String] == AnyHashable(same))
    }

    @Test func accessControl_inAHashableQuery_addsAndFinds() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            let access = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleAfterFirstUnlock, [], nil))
            var query: [String: AnyHashable] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "h",
                kSecAttrAccessControl as String: access, kSecValueData as String: Data("v".utf8)
            ]
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecSuccess)
            query[kSecValueData as String] = nil
            query[kSecAttrAccessControl as String] = nil
            query[kSecReturnAttributes as String] = true
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrAccessControl as String] as? SecAccessControl == access)
        }
    }

    // MARK: 4. SecRandomCopyBytes and the CFError accessors

    @Test func secRandomCopyBytes_fillsTheBufferFromTheCSPRNG() {
        var a = [UInt8](repeating: 0, count: 64)
        var b = [UInt8](repeating: 0, count: 64)
        #expect(SecRandomCopyBytes(kSecRandomDefault, a.count, &a) == errSecSuccess)
        #expect(SecRandomCopyBytes(kSecRandomDefault, b.count, &b) == errSecSuccess)
        #expect(a != b, "two draws of 512 bits differ")
        #expect(a != [UInt8](repeating: 0, count: 64))
        // Only the bytes asked for are written (KeychainAccess's test writes into NSMutableData).
        var fenced = [UInt8](repeating: 0xAA, count: 48)
        let status = fenced.withUnsafeMutableBytes { SecRandomCopyBytes(kSecRandomDefault, 16, $0.baseAddress! + 16) }
        #expect(status == errSecSuccess)
        #expect(fenced[..<16].allSatisfy { $0 == 0xAA } && fenced[32...].allSatisfy { $0 == 0xAA })
        var none = [UInt8](repeating: 7, count: 1)
        #expect(SecRandomCopyBytes(kSecRandomDefault, 0, &none) == errSecSuccess)
        #expect(none == [7])
        #expect(SecRandomCopyBytes(kSecRandomDefault, -1, &none) == errSecParam)
    }

    @Test func cfErrorAccessors_readTheErrorOfSecAccessControlCreateWithFlags() throws {
        var error: Unmanaged<CFError>?
        #expect(
            SecAccessControlCreateWithFlags(kCFAllocatorDefault, "not-a-protection" as CFString, .userPresence, &error)
                == nil)
        let e = try #require(error?.takeRetainedValue())
        #expect(CFErrorGetDomain(e) as String == NSOSStatusErrorDomain)
        #expect(CFErrorGetDomain(e) as String == kCFErrorDomainOSStatus as String)
        #expect(CFErrorGetCode(e) == Int(errSecParam))
        let info = try #require(CFErrorCopyUserInfo(e) as? [String: Any])
        #expect((info[NSLocalizedDescriptionKey] as? String)?.contains("kSecAttrAccessible") == true)
        #expect((CFErrorCopyDescription(e) as String).contains("kSecAttrAccessible"))
        // KeychainAccess turns one into an NSError this way (`extension CFError { var error: NSError }`).
        let domain: CFErrorDomain = CFErrorGetDomain(e)
        let copy = NSError(
            domain: domain as String, code: CFErrorGetCode(e), userInfo: (CFErrorCopyUserInfo(e) as! [String: Any]))
        #expect(copy.code == -50 && copy.domain == NSOSStatusErrorDomain)
    }

    // MARK: 6. kSec… constants as keys of an [AnyHashable: Any] result

    @Test func constants_findTheirEntriesInAnAnyHashableResult() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("alice", service: "mail")) == errSecSuccess)
            var result: CFTypeRef?
            let query: [AnyHashable: Any] = [
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice",
                kSecReturnAttributes: kCFBooleanTrue!, kSecReturnData: kCFBooleanTrue!
            ]
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [AnyHashable: Any])
            #expect(attributes[kSecAttrAccount] as? String == "alice")
            #expect(attributes[kSecAttrService] as? String == "mail")
            #expect(attributes[kSecValueData] as? Data == Data("secret".utf8))
            #expect(attributes["acct"] as? String == "alice", "the String key finds the same entry")
            #expect(AnyHashable(kSecAttrAccount) == AnyHashable("acct"))
            // An NSDictionary looked up by the constant, and a [CFString: Any] made from it.
            let dictionary = try #require(result as? NSDictionary)
            #expect(dictionary[kSecAttrAccount] as? String == "alice")
        }
    }
}
