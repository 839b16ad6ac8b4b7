import Foundation
import XCTest
import LatchkeySecurity  // was: import Security
import Latchkey  // CallerIdentity, for the test case's own set-up below (not the article's code)

// The Swift samples of seed 002 ("KeyChain とは"), kept as written: only the import line
// changed. The article shows its save-or-update and read code as fragments and calls them
// from its XCTest as `KeychainAccess.saveKeyChain(key:vaule:)` / `getKeyChain(key:)`
// (the author's helper type, not shown); here they are static functions of a `KeychainAccess`
// type declared below, as the author's is, each holding the article's fragment. The name is
// free: `import LatchkeySecurity` brings only Apple's names (issue 18).

enum KeychainAccess {
    /// "Keychain 登録/更新" — the article's fragment, inside the helper it calls it from.
    static func saveKeyChain(key: String, vaule: String) {
        let data = vaule.data(using: .utf8)!
        let dic: [String: Any] =
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrGeneric as String: key,  // 自由項目(グループ)
                kSecAttrAccount as String: "account",  // アカウント(ログインIDなど)
                kSecValueData as String: data
            ]  // 保存情報

        // 保存データが存在するかの確認
        let matchingStatus = SecItemCopyMatching(dic as CFDictionary, nil)
        switch matchingStatus {
        // 保存
        case errSecItemNotFound:
            SecItemAdd(dic as CFDictionary, nil)
        // 更新
        case errSecSuccess:
            SecItemUpdate(
                dic as CFDictionary,
                [kSecValueData as String: data] as CFDictionary)
        default:
            debugPrint("キーチェーン保存失敗(\(matchingStatus)")
        }
    }

    /// "Keychain 取得" — the article's fragment. CHANGED: its `dic` is the save fragment's,
    /// which has the data to store and no kSecReturnData; reading needs kSecReturnData, so this
    /// `dic` has it instead of kSecValueData.
    static func getKeyChain(key: String) -> String? {
        let dic: [String: Any] =
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrGeneric as String: key,
                kSecAttrAccount as String: "account",
                kSecReturnData as String: true
            ]

        var dataTypeRef: AnyObject? = nil
        let matchingStatus = withUnsafeMutablePointer(to: &dataTypeRef) {
            SecItemCopyMatching(dic as CFDictionary, UnsafeMutablePointer($0))
        }
        if matchingStatus == errSecSuccess,
            let getData = dataTypeRef as? Data
        {
            // キーチェーン取得結果
            return String(data: getData, encoding: .utf8)
        }
        return nil
    }
}

/// The article's XCTest, as written, in an XCTestCase whose keychain is a temporary one set on
/// `LatchkeySecurityConfiguration.shared` (the settable-from-Swift path, as an app would do it).
final class Seed002KeychainTests: XCTestCase {
    private var keychain: SeedKeychain!
    private var saved: (String, String, CallerIdentity?, LatchkeySecurityConfiguration.PasscodeSource)!

    override func setUpWithError() throws {
        keychain = try SeedKeychain()
        let shared = LatchkeySecurityConfiguration.shared
        saved = (shared.keychainPath, shared.devicePath, shared.caller, shared.passcodeSource)
        shared.keychainPath = keychain.config.keychainPath
        shared.devicePath = keychain.config.devicePath
        shared.caller = keychain.config.caller
        shared.passcodeSource = keychain.config.passcodeSource
    }

    override func tearDown() {
        let shared = LatchkeySecurityConfiguration.shared
        (shared.keychainPath, shared.devicePath, shared.caller, shared.passcodeSource) = saved
        keychain = nil
    }

    func testKeychainIfSaveKeychainThenEqualToGetKeychainResult() throws {
        guard let data = "testtest".data(using: .utf8) else {
            XCTFail()
            return
        }
        let key = "encryptedkey"
        let value = SHA256.hash(data: data).hexStr
        KeychainAccess.saveKeyChain(key: key, vaule: value)
        let result = KeychainAccess.getKeyChain(key: key)
        XCTAssertTrue(value == result)
    }

    /// The save fragment a second time takes its update branch.
    func testSaveKeychainTwice_updatesTheValue() {
        KeychainAccess.saveKeyChain(key: "encryptedkey", vaule: "first")
        KeychainAccess.saveKeyChain(key: "encryptedkey", vaule: "second")
        XCTAssertEqual(KeychainAccess.getKeyChain(key: "encryptedkey"), "second")
    }

    /// The digest stand-in is SHA-256 (FIPS 180-4 example "abc").
    func testSHA256StandIn_matchesTheStandardVector() {
        XCTAssertEqual(
            SHA256.hash(data: Data("abc".utf8)).hexStr,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
