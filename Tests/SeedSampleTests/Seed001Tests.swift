import Foundation
import Testing
import LatchkeySecurity  // was: import Security

// The Swift samples of seed 001 (Stack Overflow Documentation, "iOS Keychain"), kept as
// written: only the import line changed, each sample wrapped in a test function, with
// expectations added after it. Where a sample is not valid Swift on its own, the smallest
// change that compiles is made and marked "CHANGED".

/// "キーチェーンへのパスワードの追加" — the add sample, as written.
@discardableResult
func seed001AddPassword() -> (OSStatus, Dictionary<String, AnyObject>) {
    var dict = [String: AnyObject]()

    dict[kSecClass as String] = kSecClassGenericPassword

    // The password will only be accessible when the device is unlocked
    dict[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlocked
    // Label may help you find it later
    dict[kSecAttrLabel as String] = "com.me.myapp.myaccountpassword" as CFString
    // Username
    dict[kSecAttrAccount as String] = "My Name" as CFString
    // Service name
    dict[kSecAttrService as String] = "MyService" as CFString

    dict[kSecValueData as String] = "my_password!!".data(using: .utf8) as! CFData

    dict[kSecReturnAttributes as String] = kCFBooleanTrue

    var result: AnyObject?
    let status = withUnsafeMutablePointer(to: &result) {
        SecItemAdd(dict as CFDictionary, UnsafeMutablePointer($0))
    }
    let newAttributes = result as! Dictionary<String, AnyObject>
    return (status, newAttributes)
}

@Suite("Seed 001 samples")
struct Seed001Tests {
    @Test func addPassword_returnsTheNewAttributes() throws {
        let keychain = try SeedKeychain()
        keychain.run {
            let (status, newAttributes) = seed001AddPassword()
            #expect(status == errSecSuccess)
            #expect(newAttributes["acct"] as? String == "My Name")
            #expect(newAttributes["svce"] as? String == "MyService")
            #expect(newAttributes["labl"] as? String == "com.me.myapp.myaccountpassword")
            #expect(newAttributes["pdmn"] as? String == "ak")
            #expect(newAttributes["v_Data"] == nil)
        }
    }

    @Test func findPassword_returnsTheData() throws {
        let keychain = try SeedKeychain()
        keychain.run {
            seed001AddPassword()

            // "キーチェーンでのパスワードの検索", as written:
            var dict = [String: AnyObject]()
            dict[kSecClass as String] = kSecClassGenericPassword

            // Label
            dict[kSecAttrLabel as String] = "com.me.myapp.myaccountpassword" as CFString
            // Username
            dict[kSecAttrAccount as String] = "My Name" as CFString
            // Service name
            dict[kSecAttrService as String] = "MyService" as CFString

            dict[kSecReturnData as String] = kCFBooleanTrue

            var queryResult: AnyObject?
            let status = withUnsafeMutablePointer(to: &queryResult) {
                SecItemCopyMatching(dict as CFDictionary, UnsafeMutablePointer($0))
            }
            // Don't keep this in memory for long!!
            let password = String(data: queryResult as! Data, encoding: .utf8)!

            #expect(status == errSecSuccess)
            #expect(password == "my_password!!")
        }
    }

    @Test func updatePassword_withClassInTheNewValues_returnsNoSuchAttr() throws {
        let keychain = try SeedKeychain()
        keychain.run {
            seed001AddPassword()

            // "キーチェーンでのパスワードの更新", as written:
            var dict = [String: AnyObject]()
            dict[kSecClass as String] = kSecClassGenericPassword
            // Label
            dict[kSecAttrLabel as String] = "com.me.myapp.myaccountpassword" as CFString
            // Username
            dict[kSecAttrAccount as String] = "My Name" as CFString

            dict[kSecValueData as String] = "my_password!!".data(using: .utf8) as! CFData

            var newDict = [String: AnyObject]()
            newDict[kSecClass as String] = kSecClassGenericPassword
            // Label
            newDict[kSecAttrLabel as String] = "com.me.myapp.myaccountpassword" as CFString
            // Username
            newDict[kSecAttrAccount as String] = "My Name" as CFString
            // New password
            newDict[kSecValueData as String] = "new_password!!".data(using: .utf8) as! CFData

            let status = SecItemUpdate(dict as CFDictionary, newDict as CFDictionary)

            // The sample puts kSecClass into the attributes to update. iOS answers that with
            // errSecNoSuchAttr (reference §5.11: Apple's own tests leave kSecClass out), and so
            // does Latchkey; the password is unchanged.
            #expect(status == errSecNoSuchAttr)
            #expect(secretOfSeedItem() == "my_password!!")

            // Without kSecClass in newDict the same update succeeds (kSecValueData in the query
            // is not a filter).
            newDict[kSecClass as String] = nil
            #expect(SecItemUpdate(dict as CFDictionary, newDict as CFDictionary) == errSecSuccess)
            #expect(secretOfSeedItem() == "new_password!!")
        }
    }

    @Test func deletePassword_deletesTheItem() throws {
        let keychain = try SeedKeychain()
        keychain.run {
            seed001AddPassword()

            // "キーチェーンからのパスワードの削除", as written:
            var dict = [String: AnyObject]()
            dict[kSecClass as String] = kSecClassGenericPassword
            // Label
            dict[kSecAttrLabel as String] = "com.me.myapp.myaccountpassword" as CFString
            // Username
            dict[kSecAttrAccount as String] = "My Name" as CFString

            let status = SecItemDelete(dict as CFDictionary)

            #expect(status == errSecSuccess)
            #expect(secretOfSeedItem() == nil)
        }
    }

    @Test func accessControl_userPresence_asksWithThePrompt() throws {
        let keychain = try SeedKeychain()
        let prompts = PromptLog()
        keychain.config.authenticationHandler = { prompt in
            prompts.append(prompt)
            return Array(SeedKeychain.passcode.utf8)  // the user authenticates
        }
        keychain.run {
            // "キーチェーンのアクセス制御", as written except where marked.
            var error: Unmanaged<CFError>?  // CHANGED: `let` → `var`; the sample passes it as `&error`.

            guard
                let accessControl = SecAccessControlCreateWithFlags(
                    kCFAllocatorDefault, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .userPresence, &error)
            else {
                fatalError("Something went wrong")
            }

            var dictionary = [String: Any]()

            dictionary[kSecClass as String] = kSecClassGenericPassword
            dictionary[kSecAttrLabel as String] = "com.me.myapp.myaccountpassword" as CFString
            dictionary[kSecAttrAccount as String] = "My Name" as CFString
            dictionary[kSecValueData as String] = "new_password!!".data(using: .utf8) as! CFData
            dictionary[kSecAttrAccessControl as String] = accessControl

            // CHANGED: the sample passes `query`, which is not declared yet; the dictionary it
            // built is `dictionary`.
            let lastResultCode = SecItemAdd(dictionary as CFDictionary, nil)

            var query = [String: Any]()

            query[kSecClass as String] = kSecClassGenericPassword
            query[kSecReturnData as String] = kCFBooleanTrue
            query[kSecAttrAccount as String] = "My Name" as CFString
            query[kSecAttrLabel as String] = "com.me.myapp.myaccountpassword" as CFString
            query[kSecUseOperationPrompt as String] = "Please put your fingers on that button" as CFString

            var queryResult: AnyObject?
            let status = withUnsafeMutablePointer(to: &queryResult) {
                SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
            }

            if status == noErr {
                let password = String(data: queryResult as! Data, encoding: .utf8)!
                print("Password: \(password)")
            } else {
                print("Authorization not passed")
            }

            #expect(lastResultCode == errSecSuccess)
            #expect(error == nil)
            #expect(status == noErr)
            #expect(String(data: queryResult as! Data, encoding: .utf8) == "new_password!!")
            #expect(prompts.all == ["Please put your fingers on that button"])
        }
    }

    @Test func accessControl_userRefuses_givesAnError() throws {
        let keychain = try SeedKeychain()
        keychain.config.authenticationHandler = { _ in nil }  // the user cancels
        keychain.run {
            let accessControl = SecAccessControlCreateWithFlags(
                kCFAllocatorDefault, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .userPresence, nil)!
            let dictionary: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "My Name",
                kSecValueData as String: Data("new_password!!".utf8), kSecAttrAccessControl as String: accessControl
            ]
            #expect(SecItemAdd(dictionary as CFDictionary, nil) == errSecSuccess)
            var queryResult: AnyObject?
            let status = withUnsafeMutablePointer(to: &queryResult) {
                SecItemCopyMatching(
                    [
                        kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: kCFBooleanTrue!,
                        kSecAttrAccount as String: "My Name"
                    ] as CFDictionary, UnsafeMutablePointer($0))
            }
            #expect(status == errSecUserCanceled)
            #expect(queryResult == nil)
        }
    }
}

/// The secret of the seed's item, or nil when it is gone.
func secretOfSeedItem() -> String? {
    var result: AnyObject?
    let status = withUnsafeMutablePointer(to: &result) {
        SecItemCopyMatching(
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "My Name",
                kSecReturnData as String: true
            ] as CFDictionary, UnsafeMutablePointer($0))
    }
    guard status == errSecSuccess, let data = result as? Data else { return nil }
    return String(data: data, encoding: .utf8)
}

final class PromptLog: @unchecked Sendable {
    private let lock = NSLock()
    private var prompts: [String?] = []
    func append(_ p: String?) { lock.lock(); prompts.append(p); lock.unlock() }
    var all: [String?] { lock.lock(); defer { lock.unlock() }; return prompts }
}
