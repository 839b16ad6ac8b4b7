import Foundation
import Testing
import Latchkey
import LatchkeyAgent
import LatchkeySecurity

/// SecItem calls go through `latchkey agent` when one answers, and open the file again after it
/// stopped (issue 7). The agent runs in this process on a socket of the test's own, chosen with
/// a task-local override so that no other test meets it.
@Suite(.serialized) struct AgentSecItemTests {
    @Test func secItem_usesTheAgent_andFallsBackAfterItStops() throws {
        let dir = "/tmp/lk-secagent-" + String(UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/login.keychain", device = dir + "/device.secret", socket = dir + "/run/agent.sock"
        let caller = CallerIdentity(applicationIdentifier: appID)
        let kc = try Keychain.create(path: path, devicePath: device, passcode: Array(testPasscode.utf8), kdfLogN: 10)
        kc.caller = caller
        try kc.add(
            .genericPassword, attributes: ["acct": .string("a"), "svce": .string("s")], data: Array("secret".utf8))

        let server = AgentServer(configuration: AgentServer.Configuration(socketPath: socket, strictDirectory: true))
        try server.start()
        defer { server.stop() }
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a",
            kSecAttrService as String: "s", kSecReturnData as String: true
        ]
        func copy(_ config: LatchkeySecurityConfiguration) -> (OSStatus, Data?) {
            config.use {
                var result: CFTypeRef?
                let status = SecItemCopyMatching(query as CFDictionary, &result)
                return (status, result as? Data)
            }
        }
        try AgentClient.$socketOverride.withValue(socket) {
            let config = LatchkeySecurityConfiguration(keychainPath: path, devicePath: device, caller: caller)
            #expect(copy(config).0 == errSecInteractionNotAllowed, "a fresh agent holds the keychain locked")
            #expect(try config.keychain().isServedByAgent)
            try config.unlock(passcode: Array(testPasscode.utf8))
            #expect(copy(config).1 == Data("secret".utf8))
            // Another configuration (another process) finds it unlocked without a passcode.
            let other = LatchkeySecurityConfiguration(keychainPath: path, devicePath: device, caller: caller)
            #expect(copy(other).1 == Data("secret".utf8))
            config.lock()
            #expect(copy(other).0 == errSecInteractionNotAllowed)

            server.stop()
            #expect(copy(config).0 == errSecNotAvailable, "the agent stopped under an open keychain")
            #expect(config.lastError?.message.contains("stopped") == true)
            // Then the keychain is opened again, directly: locked, as after a reboot.
            #expect(copy(config).0 == errSecInteractionNotAllowed)
            #expect(try config.keychain().isServedByAgent == false)
        }
    }

    /// The caller's application groups reach the agent, which checks access groups itself
    /// (issue 18 §1, item 2): an item added through the agent to an app group is read by
    /// another app of that group, and by no other app.
    @Test func applicationGroups_reachTheAgent() throws {
        let dir = "/tmp/lk-secagent-" + String(UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/login.keychain", device = dir + "/device.secret", socket = dir + "/run/agent.sock"
        _ = try Keychain.create(path: path, devicePath: device, passcode: Array(testPasscode.utf8), kdfLogN: 10)
        func caller(_ app: String, groups: [String]) throws -> CallerIdentity {
            let plist: [String: Any] = ["application-identifier": app, "com.apple.security.application-groups": groups]
            return try CallerIdentity(
                entitlementsPlist: PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0))
        }
        let server = AgentServer(configuration: AgentServer.Configuration(socketPath: socket, strictDirectory: true))
        try server.start()
        defer { server.stop() }
        try AgentClient.$socketOverride.withValue(socket) {
            func app(_ c: CallerIdentity) -> LatchkeySecurityConfiguration {
                let config = LatchkeySecurityConfiguration(
                    keychainPath: path, devicePath: device, caller: c,
                    passcodeSource: .passcode(Array(testPasscode.utf8)))
                config.explainsFirstFailure = false
                return config
            }
            let a = app(try caller("TEAM.a", groups: ["group.example.shared"]))
            let b = app(try caller("TEAM.b", groups: ["group.example.shared"]))
            let c = app(try caller("TEAM.c", groups: ["group.example.other"]))
            a.use {
                #expect(
                    add(genpItem("shared", data: "s", [kSecAttrAccessGroup as String: "group.example.shared"]))
                        == errSecSuccess)
            }
            #expect(try a.keychain().isServedByAgent)
            b.use { #expect(secret(genp("shared")) == "s") }
            c.use { #expect(copy(genp("shared")).0 == errSecItemNotFound) }
            b.use { #expect(delete(genp("shared")) == errSecSuccess) }
        }
    }
}
