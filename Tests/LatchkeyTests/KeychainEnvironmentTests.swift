import Foundation
import Testing
@testable import Latchkey

/// One resolution of paths and caller from the environment, for the CLI and LatchkeySecurity
/// alike (issue 15 §4).
@Suite struct KeychainEnvironmentTests {
    @Test func defaultsFollowXDG_andARelativeXDGIsIgnored() {
        let xdg = KeychainEnvironment(["XDG_DATA_HOME": "/data", "HOME": "/home/u"])
        #expect(xdg.keychainPath == "/data/latchkey/login.keychain")
        #expect(xdg.devicePath == "/data/latchkey/device.secret")
        let relative = KeychainEnvironment(["XDG_DATA_HOME": "data", "HOME": "/home/u"])
        #expect(relative.keychainPath == "/home/u/.local/share/latchkey/login.keychain")
        #expect(relative.applicationIdentifier == "latchkey.cli")
        #expect(relative.entitlementsPath == nil)
    }

    @Test func variablesAndThenGivenValuesTakePrecedence_emptyCountsAsUnset() throws {
        let env = ["LATCHKEY_KEYCHAIN": "/k", "LATCHKEY_DEVICE": "", "HOME": "/h", "LATCHKEY_APP_ID": "app.x"]
        let fromVariables = KeychainEnvironment(env)
        #expect(fromVariables.keychainPath == "/k")
        #expect(fromVariables.devicePath == "/h/.local/share/latchkey/device.secret")
        #expect(fromVariables.applicationIdentifier == "app.x")
        let given = KeychainEnvironment(lookup: { env[$0] }, keychainPath: "/given", applicationIdentifier: "app.given")
        #expect(given.keychainPath == "/given")
        #expect(try given.caller() == CallerIdentity(applicationIdentifier: "app.given"))
    }

    @Test func entitlementsGiveTheGroups_andTheAppIDIsTheFallback() throws {
        let plist: [String: Any] = ["keychain-access-groups": ["TEAM.shared"]]
        let bytes = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        let env = KeychainEnvironment(lookup: {
            ["LATCHKEY_ENTITLEMENTS": "/e.plist", "LATCHKEY_APP_ID": "TEAM.app"][$0]
        })
        let caller = try env.caller(read: { path in
            #expect(path == "/e.plist")
            return [UInt8](bytes)
        })
        #expect(caller.accessGroups == ["TEAM.shared", "TEAM.app"])
        #expect(
            try CallerIdentity.fromEnvironment(["LATCHKEY_APP_ID": "a.b"])
                == CallerIdentity(applicationIdentifier: "a.b"))
    }
}
