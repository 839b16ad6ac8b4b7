import Foundation
import Testing
import AppleStyleWrapper
import LatchkeySecurity  // the two imports a wrapper's own tests have

// `import LatchkeySecurity` must bring only Apple's names (issue 18 §1, item 1): before, it
// re-exported Latchkey's typed API, and every use below of `Keychain`, `KeychainError`,
// `ItemClass`, `KeychainAccess` or `Query` was "ambiguous for type lookup" — this file did not
// compile. Nothing here imports Latchkey: the keychain is configured as an app would, through
// the environment variables LatchkeySecurityConfiguration reads.

@Suite("import LatchkeySecurity leaves the client's own type names alone")
struct NameClashTests {
    @Test func wrapperTypesNamedLikeLatchkeysAreUsable() throws {
        let dir = FileManager.default.temporaryDirectory.path + "/latchkey-nameclash-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = LatchkeySecurityConfiguration(environment: [
            "LATCHKEY_KEYCHAIN": dir + "/app.keychain", "LATCHKEY_DEVICE": dir + "/device.secret",
            "LATCHKEY_PASSCODE": "1234", "LATCHKEY_APP_ID": "TEAM.com.example.wrapper"
        ])
        config.kdfLogN = 10
        try config.use {
            let keychain: Keychain = Keychain(service: "com.example.api", itemClass: ItemClass.genericPassword)
            try keychain.set("s3cret", key: "token")
            #expect(try keychain.get("token") == "s3cret")

            let access: KeychainAccess = KeychainAccess(service: "com.example.api")
            #expect(access["token"] == "s3cret")
            access["token"] = nil
            #expect(throws: KeychainError.itemNotFound) { try keychain.get("token") }

            let query: Query = Query(itemClass: .internetPassword, service: "example.com", account: "alice")
            #expect(query.account == "alice")
        }
    }
}
