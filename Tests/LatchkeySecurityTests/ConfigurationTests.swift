import Foundation
import Testing
import Latchkey
import LatchkeySecurity

@Suite("LatchkeySecurityConfiguration")
struct ConfigurationTests {
    @Test func environment_givesPathsCallerAndPasscode() throws {
        let config = LatchkeySecurityConfiguration(environment: [
            "LATCHKEY_KEYCHAIN": "/k/login.keychain", "LATCHKEY_DEVICE": "/k/device.secret",
            "LATCHKEY_APP_ID": "TEAM.com.example.app", "LATCHKEY_PASSCODE": "1234", "HOME": "/home/u"
        ])
        #expect(config.keychainPath == "/k/login.keychain")
        #expect(config.devicePath == "/k/device.secret")
        #expect(config.caller == CallerIdentity(applicationIdentifier: "TEAM.com.example.app"))
        guard case .passcode(let p) = config.passcodeSource else {
            Issue.record("LATCHKEY_PASSCODE gives the passcode")
            return
        }
        #expect(p == Array("1234".utf8))
    }

    @Test func environment_defaultsFollowXDGAndTheCLI() {
        let xdg = LatchkeySecurityConfiguration(environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"])
        #expect(xdg.keychainPath == "/data/latchkey/login.keychain")
        #expect(xdg.devicePath == "/data/latchkey/device.secret")
        #expect(xdg.caller?.applicationIdentifier == "latchkey.cli")
        if case .none = xdg.passcodeSource {} else { Issue.record("no passcode without LATCHKEY_PASSCODE") }
        let home = LatchkeySecurityConfiguration(environment: ["XDG_DATA_HOME": "relative/ignored", "HOME": "/home/u"])
        #expect(home.keychainPath == "/home/u/.local/share/latchkey/login.keychain")
        #expect(home.devicePath == "/home/u/.local/share/latchkey/device.secret")
    }

    @Test func environment_entitlementsPlistGivesTheGroups() throws {
        let kc = try SecTestKeychain()
        for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
            let plist: [String: Any] = [
                "application-identifier": "GFDZH8PDDD.com.yourcompany.KeyChainApp",
                "keychain-access-groups": ["GFDZH8PDDD.private", "GFDZH8PDDD.share"]
            ]
            let path = kc.directory + "/Entitlements-\(format.rawValue).plist"
            try PropertyListSerialization.data(fromPropertyList: plist, format: format, options: 0).write(
                to: URL(fileURLWithPath: path))
            let config = LatchkeySecurityConfiguration(environment: [
                "LATCHKEY_KEYCHAIN": kc.keychainPath, "LATCHKEY_DEVICE": kc.devicePath,
                "LATCHKEY_ENTITLEMENTS": path, "LATCHKEY_PASSCODE": testPasscode
            ])
            #expect(
                config.caller?.accessGroups == [
                    "GFDZH8PDDD.private", "GFDZH8PDDD.share", "GFDZH8PDDD.com.yourcompany.KeyChainApp"
                ])
            config.use {
                #expect(add(genpItem("a-\(format.rawValue)")) == errSecSuccess)
                #expect(attributes(genp("a-\(format.rawValue)"))?["agrp"] as? String == "GFDZH8PDDD.private")
            }
        }
    }

    @Test func environment_unreadableEntitlements_failEveryCallWithTheirStatus() throws {
        let kc = try SecTestKeychain()
        let config = LatchkeySecurityConfiguration(environment: [
            "LATCHKEY_KEYCHAIN": kc.keychainPath, "LATCHKEY_DEVICE": kc.devicePath,
            "LATCHKEY_ENTITLEMENTS": kc.directory + "/missing.plist", "LATCHKEY_PASSCODE": testPasscode
        ])
        #expect(config.caller == nil)
        #expect(config.callerError?.status == .io)
        config.use {
            #expect(add(genpItem("a")) == errSecIO)
            #expect(copy(genp("a")).0 == errSecIO)
        }
        config.caller = CallerIdentity(applicationIdentifier: appID)
        config.use { #expect(add(genpItem("a")) == errSecSuccess) }
    }

    @Test func absentKeychain_withoutPasscode_returnsNotAvailableAndCreatesNothing() throws {
        let kc = try SecTestKeychain(unlocked: false, create: false)
        kc.run {
            #expect(add(genpItem("a")) == errSecNotAvailable)
            #expect(kc.config.lastError?.message.contains("latchkey init") == true)
        }
        #expect(!FileManager.default.fileExists(atPath: kc.keychainPath))
    }

    @Test func absentKeychain_withPasscode_isCreatedOnFirstUse() throws {
        let kc = try SecTestKeychain(create: false)
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let keychain = try kc.config.keychain()
            #expect(keychain.hasPasscode)
        }
        let reopened = try Keychain.open(path: kc.keychainPath, devicePath: kc.devicePath)
        #expect(reopened.hasPasscode)
    }

    @Test func absentKeychain_noPasscodeSetting_isCreatedWithoutPasscode() throws {
        let kc = try SecTestKeychain(passcode: nil, create: false)
        try kc.run {
            #expect(add(genpItem("a")) == errSecSuccess)
            let keychain = try kc.config.keychain()
            #expect(!keychain.hasPasscode)
            #expect(
                add(genpItem("b", [kSecAttrAccessible as String: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly]))
                    == errSecNotAvailable)
        }
    }

    @Test func absentKeychain_withCreationTurnedOff_returnsNotAvailable() throws {
        let kc = try SecTestKeychain(create: false)
        kc.config.createsKeychainIfAbsent = false
        kc.run { #expect(add(genpItem("a")) == errSecNotAvailable) }
        #expect(!FileManager.default.fileExists(atPath: kc.keychainPath))
    }

    @Test func wrongPasscode_returnsAuthFailed() throws {
        let kc = try SecTestKeychain()
        kc.config.passcodeSource = .passcode(Array("wrong".utf8))
        kc.run {
            #expect(add(genpItem("a")) == errSecAuthFailed)
            #expect(kc.config.lastError?.status == .authFailed)
        }
        kc.config.passcodeSource = .provider { Array(testPasscode.utf8) }
        kc.run { #expect(add(genpItem("a")) == errSecSuccess) }
    }

    @Test func damagedKeychain_returnsDecode() throws {
        let kc = try SecTestKeychain()
        var bytes = try Data(contentsOf: URL(fileURLWithPath: kc.keychainPath))
        for i in 8..<min(64, bytes.count) { bytes[i] ^= 0xFF }
        try bytes.write(to: URL(fileURLWithPath: kc.keychainPath))
        kc.run { #expect(copy(genp("a")).0 == errSecDecode) }
    }

    @Test func changingTheKeychainPath_switchesKeychains() throws {
        let first = try SecTestKeychain()
        let second = try SecTestKeychain()
        first.run { #expect(add(genpItem("only-in-first")) == errSecSuccess) }
        first.config.keychainPath = second.keychainPath
        first.config.devicePath = second.devicePath
        first.run { #expect(count(genp("only-in-first")) == 0) }
        first.config.keychainPath = first.keychainPath
        first.config.devicePath = first.devicePath
        first.run { #expect(count(genp("only-in-first")) == 1) }
    }

    @Test func use_scopesTheConfigurationToItsClosure() throws {
        let kc = try SecTestKeychain()
        #expect(LatchkeySecurityConfiguration.current === LatchkeySecurityConfiguration.shared)
        kc.run { #expect(LatchkeySecurityConfiguration.current === kc.config) }
        #expect(LatchkeySecurityConfiguration.current === LatchkeySecurityConfiguration.shared)
    }

    @Test func concurrentCalls_fromManyThreads_allSucceed() throws {
        let kc = try SecTestKeychain()
        let config = kc.config
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            config.use {
                #expect(add(genpItem("item-\(i)", data: "\(i)")) == errSecSuccess)
                #expect(secret(genp("item-\(i)")) == "\(i)")
            }
        }
        kc.run { #expect(count(genp()) == 16) }
    }

    @Test func typedAPI_seesTheSameItems() throws {
        let kc = try SecTestKeychain()
        try kc.run {
            #expect(add(genpItem("alice", service: "mail", data: "pw")) == errSecSuccess)
            let keychain = try kc.config.keychain()
            let items = try keychain.find(Query(.genericPassword, ["acct": .string("alice")]))
            #expect(items.count == 1)
            #expect(items.first?.data == Array("pw".utf8))
            try keychain.add(.genericPassword, attributes: ["acct": .string("bob")], data: Array("typed".utf8))
            #expect(secret(genp("bob")) == "typed")
        }
    }
}
